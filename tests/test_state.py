# SPDX-License-Identifier: BSD-3-Clause
"""What real exports carry (issue 12, item 6), on the programs of
tests/state/export.py:

- mutable buffers exported with their initial state (upstream's
  InitializedMutableBufferPass) start from it and keep their state across
  executes; every method load starts again from the initial state (upstream's
  runtime does the same); a broken initial state fails at method load naming
  the value, never reads out of bounds;
- weights in a separate .ptd file load through the C API (file and memory),
  pteron-run --data and the C++ layer; a program loaded without its data file,
  or with the wrong one, fails naming the key; corrupt data files give an
  error, never a crash.
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import capi
from conftest import REPO, build_dir, wine_run, winpath
from test_malformed import fuzz_exe  # noqa: F401  (the ASan+UBSan pteron-fuzz, a fixture)

STATE = REPO / "tests" / "state"


def _manifest():
    return {e["name"]: e for e in json.loads((STATE / "manifest.json").read_text())["programs"]}


def _npz(name):
    return np.load(STATE / f"{name}.npz")


def _run_calls(method, inputs):
    return [method.run([x]) for x in inputs]


def _check_calls(got, ref):
    for k, outs in enumerate(got):
        np.testing.assert_allclose(outs[0], ref["expected_0"][k], rtol=1e-6, atol=1e-6,
                                   err_msg=f"call {k + 1}: acc")
        np.testing.assert_array_equal(outs[1], ref["expected_1"][k], err_msg=f"call {k + 1}: count")


# ---- mutable buffers with an initial state ---------------------------------------------------

def test_initial_state_is_loaded_and_updated_in_place_over_calls(runtime):
    ref = _npz("accumulator")
    assert _manifest()["accumulator"]["calls"] == len(ref["inputs"]) >= 3
    m = runtime.load_file(STATE / "accumulator.pte").load_method()
    got = _run_calls(m, ref["inputs"])
    # The state really starts non-zero: count starts at 7, so the first call gives 8.
    assert got[0][1].tolist() == [8]
    _check_calls(got, ref)


def test_second_method_load_starts_from_the_initial_state(runtime):
    ref = _npz("accumulator")
    p = runtime.load_file(STATE / "accumulator.pte")
    first = p.load_method()
    _run_calls(first, ref["inputs"][:2])
    second = p.load_method()  # a new instance: its own planned memory, initial state again
    _check_calls(_run_calls(second, ref["inputs"]), ref)
    # ... and the first instance kept its own state: its third call is eager's third.
    out = first.run([ref["inputs"][2]])
    np.testing.assert_allclose(out[0], ref["expected_0"][2], rtol=1e-6, atol=1e-6)
    assert out[1].tolist() == ref["expected_1"][2].tolist()


def test_initial_state_is_written_into_caller_supplied_planned_memory(runtime):
    ref = _npz("accumulator")
    p = runtime.load_file(STATE / "accumulator.pte")
    planned = [np.full(max(n, 1), 0xAB, dtype=np.uint8) for n in p.planned_buffer_sizes("forward")]
    m = p.load_method(planned=planned)
    _check_calls(_run_calls(m, ref["inputs"]), ref)


@pytest.mark.parametrize("variant,needle", [
    ("bad_index", "value 1: initial state index 99 out of range"),
    ("short_state", "value 1: initial state 1 holds 8 bytes, the tensor needs 24"),
    ("bad_segments_idx",
     "value 1: initial state 1 is in mutable data segment 3, the program has 1"),
])
def test_broken_initial_state_fails_at_method_load_naming_the_value(runtime, variant, needle):
    p = runtime.load_file(STATE / f"accumulator_{variant}.pte")
    with pytest.raises(capi.PteronError) as e:
        p.load_method()
    assert e.value.code == capi.INVALID_PROGRAM
    assert needle in e.value.message


def _patched_offsets(data: bytes, index: int, value: int) -> bytes:
    """accumulator.pte with entry `index` of its mutable data segment offsets
    set to `value`. The offsets vector is [0, 0, 24] (u32 length 3, then three
    u64): found by its bytes, which occur once in the file."""
    vec = struct.pack("<I3Q", 3, 0, 0, 24)
    assert data.count(vec) == 1
    at = data.index(vec) + 4 + 8 * index
    return data[:at] + struct.pack("<Q", value) + data[at + 8:]


@pytest.mark.parametrize("index,value,needle", [
    (1, 1 << 40, "initial state 1 (offset 1099511627776) lies outside its mutable data segment"),
    (2, 1 << 40, "initial state 1 (offset 0) lies outside its mutable data segment"),
    (2, 8, "initial state 1 holds 8 bytes, the tensor needs 24"),
])
def test_initial_state_offsets_out_of_range_fail_at_method_load(runtime, index, value, needle):
    data = _patched_offsets((STATE / "accumulator.pte").read_bytes(), index, value)
    p = runtime.load_bytes(data)
    with pytest.raises(capi.PteronError) as e:
        p.load_method()
    assert e.value.code == capi.INVALID_PROGRAM
    assert needle in e.value.message


def test_pteron_run_iterations_keep_the_state(pteron_run, tmp_path):
    ref = _npz("accumulator")
    x = tmp_path / "x.npy"
    np.save(x, ref["inputs"][0])
    r = subprocess.run([str(pteron_run), str(STATE / "accumulator.pte"), "--input", str(x),
                        "--iterations", "3", "--output-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # Three calls on the same input: count 7 -> 10, acc += 3 * x * w.
    assert np.load(tmp_path / "output_1.npy").tolist() == [10]
    start = np.arange(6, dtype=np.float32).reshape(2, 3) + 1.0
    w = np.array([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]], dtype=np.float32)
    acc = start
    for _ in range(3):
        acc = acc + ref["inputs"][0] * w
    np.testing.assert_allclose(np.load(tmp_path / "output_0.npy"), acc * 2, rtol=1e-6)


# ---- weights in a separate .ptd file ---------------------------------------------------------

def test_external_weights_load_from_the_data_file(runtime):
    ref = _npz("external")
    p = runtime.load_file_with_data(STATE / "external.pte", STATE / "external.ptd")
    assert p.has_data_file
    out = p.load_method().run([ref["input"]])[0]
    np.testing.assert_allclose(out, ref["expected"], rtol=1e-5, atol=1e-6)


def test_external_weights_load_from_memory(runtime):
    ref = _npz("external")
    p = runtime.load_bytes_with_data((STATE / "external.pte").read_bytes(),
                                     (STATE / "external.ptd").read_bytes())
    out = p.load_method().run([ref["input"]])[0]
    np.testing.assert_allclose(out, ref["expected"], rtol=1e-5, atol=1e-6)


def test_external_weights_and_initial_state_together(runtime):
    ref = _npz("external_state")
    p = runtime.load_file_with_data(STATE / "external_state.pte", STATE / "external_state.ptd")
    _check_calls(_run_calls(p.load_method(), ref["inputs"]), ref)


def test_program_without_its_data_file_fails_naming_the_key(runtime):
    p = runtime.load_file(STATE / "external.pte")
    assert not p.has_data_file
    with pytest.raises(capi.PteronError) as e:
        p.load_method()
    assert e.value.code == capi.NOT_FOUND
    assert "key 'l1.weight'" in e.value.message and "loaded without one" in e.value.message
    # A NULL data path is the plain load.
    p = runtime.load_file_with_data(STATE / "external.pte", None)
    with pytest.raises(capi.PteronError):
        p.load_method()


def test_wrong_data_file_fails_naming_the_missing_key(runtime):
    p = runtime.load_file_with_data(STATE / "external.pte", STATE / "external_state.ptd")
    with pytest.raises(capi.PteronError) as e:
        p.load_method()
    assert e.value.code == capi.NOT_FOUND
    assert "has no entry with key 'l1.weight'" in e.value.message
    assert "external_state.ptd" in e.value.message


def test_data_file_entry_of_another_layout_is_refused(runtime):
    # l1.bias is [8] and l2.bias is [3]: swap their names inside the data file.
    ptd = (STATE / "external.ptd").read_bytes()
    assert ptd.count(b"l1.bias") == 1 and ptd.count(b"l2.bias") == 1
    swapped = ptd.replace(b"l1.bias", b"lX.bias").replace(b"l2.bias", b"l1.bias")
    swapped = swapped.replace(b"lX.bias", b"l2.bias")
    p = runtime.load_bytes_with_data((STATE / "external.pte").read_bytes(), swapped)
    with pytest.raises(capi.PteronError) as e:
        p.load_method()
    assert e.value.code == capi.INVALID_PROGRAM
    assert "entry 'l1.bias' is float32 [3], the program's tensor is float32 [8]" in e.value.message


def _header_patch(ptd: bytes, field: int, value: int) -> bytes:
    """The data file with header u64 field `field` (0 flatbuffer offset,
    1 flatbuffer size, 2 segment base, 3 segment data size) set to `value`."""
    at = 16 + 8 * field
    return ptd[:at] + struct.pack("<Q", value) + ptd[at + 8:]


def _malformed_ptds():
    ptd = (STATE / "external.ptd").read_bytes()
    pte = (STATE / "external.pte").read_bytes()
    n = len(ptd)
    return {
        "empty": (b"", "is truncated: 0 bytes"),
        "truncated_header": (ptd[:20], "is truncated: 20 bytes"),
        "truncated_segments": (ptd[:n - 16], "segment data"),
        "a_program": (pte, "file identifier is 'ET12', expected 'FT01'"),
        "no_header": (ptd[:8] + b"XXXX" + ptd[12:], "has no 'FH01' header"),
        "header_length": (ptd[:12] + struct.pack("<I", 4) + ptd[16:], "header length 4"),
        "flatbuffer_size": (_header_patch(ptd, 1, 1 << 50), "flatbuffer"),
        "segment_base": (_header_patch(ptd, 2, n + 64), "segment data"),
        "segment_size": (_header_patch(ptd, 3, 1 << 62), "segment data"),
        "root_offset": (struct.pack("<I", 0xFFFFFF0) + ptd[4:], "failed verification"),
    }


@pytest.mark.parametrize("variant", sorted(_malformed_ptds()))
def test_malformed_data_file_is_refused_at_program_load(runtime, variant):
    data, needle = _malformed_ptds()[variant]
    with pytest.raises(capi.PteronError) as e:
        runtime.load_bytes_with_data((STATE / "external.pte").read_bytes(), data)
    assert e.value.code == capi.INVALID_PROGRAM, e.value.message
    assert "data file (data buffer)" in e.value.message and needle in e.value.message


def test_missing_data_file_is_an_io_error_naming_it(runtime, tmp_path):
    with pytest.raises(capi.PteronError) as e:
        runtime.load_file_with_data(STATE / "external.pte", tmp_path / "absent.ptd")
    assert e.value.code == 9  # PTERON_ERROR_IO
    assert "cannot open data file" in e.value.message and "absent.ptd" in e.value.message


def test_random_byte_changes_of_a_data_file_never_crash(tmp_path):
    # One child process, so a crash fails this test rather than pytest itself.
    script = textwrap.dedent(f"""
        import random, sys
        sys.path.insert(0, {str(REPO / 'tests')!r})
        import numpy as np, capi
        rt = capi.Runtime({str(build_dir())!r})
        pte = open({str(STATE / 'external.pte')!r}, 'rb').read()
        ptd = bytearray(open({str(STATE / 'external.ptd')!r}, 'rb').read())
        x = np.load({str(STATE / 'external.npz')!r})['input']
        rng = random.Random(7)
        outcomes = {{'program': 0, 'method': 0, 'ran': 0}}
        for k in range(400):
            b = bytearray(ptd)
            for _ in range(rng.randint(1, 4)):
                # mostly the header and the flatbuffer, where the structure is
                at = rng.randrange(0, 520 if rng.random() < 0.8 else len(b))
                b[at] = rng.randrange(256)
            try:
                p = rt.load_bytes_with_data(pte, bytes(b))
            except capi.PteronError:
                outcomes['program'] += 1
                continue
            try:
                m = p.load_method()
            except capi.PteronError:
                outcomes['method'] += 1
                continue
            m.run([x])
            outcomes['ran'] += 1
        print(outcomes)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    outcomes = eval(r.stdout.strip().splitlines()[-1])
    assert outcomes["program"] > 0 and outcomes["method"] + outcomes["ran"] > 0, outcomes


def test_pteron_run_data_option(pteron_run, tmp_path):
    ref = _npz("external")
    x = tmp_path / "x.npy"
    np.save(x, ref["input"])
    cmd = [str(pteron_run), str(STATE / "external.pte"), "--input", str(x),
           "--output-dir", str(tmp_path)]
    r = subprocess.run(cmd + ["--data", str(STATE / "external.ptd")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "output_0.npy"), ref["expected"], rtol=1e-5,
                               atol=1e-6)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "key 'l1.weight'" in r.stderr, r.stderr
    r = subprocess.run(cmd + ["--data", str(STATE / "external.pte")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "expected 'FT01'" in r.stderr, r.stderr
    r = subprocess.run([str(pteron_run), "--data", str(STATE / "external.ptd")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--data needs MODEL.pte" in r.stderr, r.stderr
    r = subprocess.run(cmd + ["--data"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--data needs a value" in r.stderr, r.stderr


def test_hpp_loads_a_program_with_its_data_file(tmp_path):
    src = tmp_path / "ptd_app.cpp"
    src.write_text(textwrap.dedent("""
        #include <cstdio>
        #include <fstream>
        #include <iterator>
        #include <vector>
        #include <pteron/pteron.hpp>
        int main(int argc, char** argv) {
          std::vector<float> x(8);
          std::ifstream raw(argv[3], std::ios::binary);
          raw.read(reinterpret_cast<char*>(x.data()), sizeof(float) * x.size());
          pteron::Program p = pteron::Program::load_file(argv[1], argv[2]);
          pteron::Method m = p.load_method("forward");
          m.set_input<float>(0, {2, 4}, x);
          m.execute();
          std::vector<float> y = m.output<float>(0);
          std::printf("has_data_file: %d\\n", p.has_data_file() ? 1 : 0);
          for (float v : y) std::printf("%.7g\\n", v);
          std::ifstream a(argv[1], std::ios::binary), b(argv[2], std::ios::binary);
          std::vector<char> pa((std::istreambuf_iterator<char>(a)), {});
          std::vector<char> pb((std::istreambuf_iterator<char>(b)), {});
          pteron::Program q =
              pteron::Program::load_memory(pa.data(), pa.size(), pb.data(), pb.size());
          pteron::Method mq = q.load_method("forward");
          mq.set_input<float>(0, {2, 4}, x);
          mq.execute();
          std::printf("memory_same: %d\\n", mq.output<float>(0) == y ? 1 : 0);
          try {
            pteron::Program::load_file(argv[1]).load_method("forward");
          } catch (const pteron::Error& e) {
            std::printf("without: %s: %s\\n", e.code_name(), e.what());
          }
          return 0;
        }
    """))
    exe = tmp_path / "ptd_app"
    r = subprocess.run(
        ["g++", "-std=c++17", "-O1", f"-I{REPO / 'include'}", str(src), f"-L{build_dir()}",
         "-lpteron", "-Wl,--push-state,--no-as-needed", "-lpteron_kernels_portable",
         "-Wl,--pop-state", f"-Wl,-rpath,{build_dir()}", "-o", str(exe)],
        capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    ref = _npz("external")
    raw = tmp_path / "x.f32"
    ref["input"].astype("<f4").tofile(raw)
    r = subprocess.run([str(exe), str(STATE / "external.pte"), str(STATE / "external.ptd"),
                        str(raw)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "has_data_file: 1"
    np.testing.assert_allclose([float(v) for v in lines[1:7]], ref["expected"].ravel(),
                               rtol=1e-5, atol=1e-6)
    assert "memory_same: 1" in lines
    assert any(line.startswith("without: not_found: ") and "l1.weight" in line for line in lines)


def test_xnnpack_delegate_weights_load_from_the_data_file(tmp_path):
    """The delegate's weights are named data in the .ptd (sha256 keys, no
    layout): XnnpackBackend finds them through pteron_named_data_get, which
    looks in the program, then its data file. In a child process, so the
    backend registers nowhere else."""
    lib = build_dir() / "libpteron_backend_xnnpack.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: the Linux build must build backend_xnnpack")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / 'tests')!r})
        import numpy as np, capi
        rt = capi.Runtime({str(build_dir())!r},
                          kernel_libs=["kernels_portable", "threadpool", "backend_xnnpack"])
        ref = np.load({str(STATE / 'external_xnnpack.npz')!r})
        p = rt.load_file_with_data({str(STATE / 'external_xnnpack.pte')!r},
                                   {str(STATE / 'external_xnnpack.ptd')!r})
        out = p.load_method().run([ref["input"]])[0]
        np.testing.assert_allclose(out, ref["expected"], rtol=1e-5, atol=1e-6)
        print("ran")
        try:
            rt.load_file({str(STATE / 'external_xnnpack.pte')!r}).load_method()
            print("loaded without data")
        except capi.PteronError as e:
            print("without:", e.message)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "ran"
    # Without the data file the delegate fails at method load, naming the key it missed.
    assert lines[1].startswith("without: ") and "XnnpackBackend" in lines[1]
    assert "named data '" in lines[1]


@pytest.mark.skipif(not shutil.which("wine"), reason="wine is needed (scripts/test.sh installs it)")
def test_pteron_run_exe_under_wine_keeps_state_and_reads_the_data_file(mingw_package, wine_env,
                                                                     tmp_path):
    exe = mingw_package / "bin" / "pteron-run.exe"
    ref = _npz("accumulator")
    x = tmp_path / "x.npy"
    np.save(x, ref["inputs"][0])
    out = tmp_path / "acc"
    r = wine_run(wine_env, exe, winpath(STATE / "accumulator.pte"), "--input", winpath(x),
                 "--iterations", "3", "--output-dir", winpath(out), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    assert np.load(out / "output_1.npy").tolist() == [10]  # 7, then three calls
    ext = _npz("external")
    xe = tmp_path / "xe.npy"
    np.save(xe, ext["input"])
    out = tmp_path / "ext"
    r = wine_run(wine_env, exe, winpath(STATE / "external.pte"), "--data",
                 winpath(STATE / "external.ptd"), "--input", winpath(xe), "--output-dir",
                 winpath(out), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    np.testing.assert_allclose(np.load(out / "output_0.npy"), ext["expected"], rtol=1e-5,
                               atol=1e-6)
    r = wine_run(wine_env, exe, winpath(STATE / "external.pte"), "--input", winpath(xe),
                 cwd=tmp_path)
    assert r.returncode == 1 and "key 'l1.weight'" in r.stderr, str(r)


# ---- under AddressSanitizer + UndefinedBehaviorSanitizer -------------------------------------

@pytest.mark.parametrize("name,flips,fields", [("accumulator", 1000, 500), ("decoder", 200, 200)])
def test_mutated_stateful_programs_never_crash_under_asan(fuzz_exe, tmp_path, name, flips,
                                                          fields):
    """pteron-fuzz (tests/test_malformed.py) on the programs with initial
    states: byte flips and schema-field changes (data_buffer_idx, placements,
    sizes) reach the initial-state code at method load; every variant must end
    in success or an error status, with no sanitizer report."""
    from test_malformed import SANITIZER_MARKERS, _env

    if name == "accumulator":
        x = _npz("accumulator")["inputs"][0]
        inputs = [np.ascontiguousarray(x)]
    else:
        inputs = [np.array([[1]], np.int64), np.array([0], np.int64)]
    cmd = [str(fuzz_exe), str(STATE / f"{name}.pte"), "--method", "forward"]
    for i, a in enumerate(inputs):
        np.save(tmp_path / f"in{i}.npy", a)
        cmd += ["--input", str(tmp_path / f"in{i}.npy")]
    cmd += ["--flips", str(flips), "--fields", str(fields), "--seed", "3", "--timeout-s", "10"]
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=_env(),
                       timeout=600)
    for marker in SANITIZER_MARKERS + ("TIMEOUT variant", "BADSTATUS"):
        assert marker not in r.stderr, r.stderr[-6000:]
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    total = next(dict(kv.split("=", 1) for kv in line.split())
                 for line in r.stdout.splitlines() if line.startswith("variants="))
    assert float(total["errors"]) + float(total["ok"]) == float(total["variants"]) > flips
    assert float(total["ok"]) > 0 and float(total["errors"]) > 0, total
