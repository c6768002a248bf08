# SPDX-License-Identifier: BSD-3-Clause
"""Quantized programs exported by upstream's own PT2E flow (models/export_quantized.py; the
committed models/fixtures/quantized/): an MLP (static per-tensor, static per-channel, dynamic
activations with per-channel weights), a CNN (static per-channel) and a transformer block
(its linear layers dynamic-quantized; all of it static per-channel), each as a portable program
and lowered to XNNPACK; and an MLP with torchao's 4-bit groupwise weights, lowered to XNNPACK
(upstream's exporter cannot make its portable program).

Every program runs with pteron-run (the Linux package: kernels_quantized with kernels_portable
and kernels_optimized; XnnpackBackend, whose quantized nodes run on pteron's own kernels), and
the portable and XNNPACK-lowered ones also with pteron-run.exe of the MinGW package under Wine.
Each output matches eager PyTorch's output of the converted model within
max(one quantum of the output's range over 8 bits, 4 x the error of upstream's own runtime on the
same program), the manifest's `quantum` and `upstream_error`. Static programs are exact.

The XNNPACK-lowered ones are also fuzzed under ASan+UBSan (pteron-fuzz, tests/test_malformed.py's
driver): byte flips in the blob reach the quantization parameters.
"""
import json
import os

import numpy as np
import pytest

from conftest import REPO, run, wine_run, winpath
from isa_check import missing_for
from test_malformed import fuzz_exe  # noqa: F401  (the fixture: build-asan's pteron-fuzz)

Q = REPO / "models" / "fixtures" / "quantized"
PROGRAMS = json.loads((Q / "manifest.json").read_text())["programs"]
IDS = [p["name"] for p in PROGRAMS]


def bound(p):
    return max(p["quantum"], 4 * p["upstream_error"])


def check(p, got, where):
    want = np.load(Q / f"{p['name']}.forward.expected_0.npy")
    assert got.shape == want.shape and got.dtype == want.dtype, (where, got.shape, want.shape)
    err = float(np.abs(got - want).max())
    assert err <= bound(p), (f"{p['name']} ({where}): max abs error {err} over the bound "
                             f"{bound(p)} (one quantum {p['quantum']}, upstream's error "
                             f"{p['upstream_error']})")
    if not p["dynamic"]:
        assert err == 0.0, f"{p['name']} ({where}): a static program is exact, error {err}"


def test_the_fixtures_cover_each_configuration():
    names = set(IDS)
    for want in ("qmlp_static_per_tensor", "qmlp_static_per_channel", "qmlp_dynamic",
                 "qcnn_static_per_channel", "qcnn_dynamic", "qblock_dynamic",
                 "qblock_static_per_channel",
                 "qinvres_static_per_channel"):
        assert want in names and want + "_xnnpack" in names, names
    # torchao's 4-bit groupwise weights (QBInt4): XNNPACK-lowered only, as upstream exports them
    assert "qmlp_dynamic_4bit_xnnpack" in names and "qmlp_dynamic_4bit" not in names, names
    ops = {o for p in PROGRAMS if not p["xnnpack"] for o in p["operators"]}
    for op in ("quantize_per_tensor.out", "dequantize_per_channel.out", "choose_qparams.Tensor_out",
               "quantize_per_tensor.Tensor_out", "aten.convolution.out", "aten.bmm.out"):
        assert any(op in o for o in ops), (op, ops)
    for p in PROGRAMS:
        if p["xnnpack"]:
            assert any("executorch_call_delegate" in o for o in p["operators"]), p
            assert not any("quantize" in o for o in p["operators"]), p


@pytest.mark.parametrize("p", PROGRAMS, ids=IDS)
def test_quantized_program_matches_eager(pteron_run, tmp_path, p):
    name = p["name"]
    r = run([pteron_run, Q / p["file"], "--input", Q / f"{name}.forward.input_0.npy",
             "--output-dir", tmp_path], timeout=120,
            env=dict(os.environ, PTERON_XNNPACK_DEBUG="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    check(p, np.load(tmp_path / "output_0.npy"), "Linux")
    if p["xnnpack"]:
        # Nodes on quantized values run on pteron's side, whatever library is linked.
        nodes = [l for l in r.stderr.splitlines() if l.startswith("pteron XnnpackBackend node ")]
        assert nodes and any("quantized values" in l for l in nodes), r.stderr[-2000:]
        assert all(" on pteron" in l for l in nodes if "quantized values" in l), nodes


# The int8 GEMM at every level this CPU has (PTERON_ISA lowers the choice, never raises it):
# the programs with int8 nodes give the same outputs, and the plan names the level that ran.
# So do the int8 codes paths (depthwise convolution, Add, Clamp on 8-bit codes between int8
# nodes): qinvres has each, with channel counts that are not multiples of 16 and a 5x5 filter.
ISA_LEVELS = ["baseline", "avx2", "avx512", "avx512vnni"]
INT8 = [p for p in PROGRAMS if p["xnnpack"]]


@pytest.mark.parametrize("isa", ISA_LEVELS)
def test_int8_gemm_runs_at_each_isa_level(pteron_run, tmp_path, isa):
    missing = missing_for(isa)
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)} for PTERON_ISA={isa}")
    ran, coded = set(), set()
    for p in INT8:
        out = tmp_path / p["name"]
        r = run([pteron_run, Q / p["file"], "--input", Q / f"{p['name']}.forward.input_0.npy",
                 "--output-dir", out], timeout=120,
                env=dict(os.environ, PTERON_XNNPACK_DEBUG="1", PTERON_ISA=isa))
        assert r.returncode == 0, r.stderr[-3000:]
        check(p, np.load(out / "output_0.npy"), f"PTERON_ISA={isa}")
        for line in r.stderr.splitlines():
            if "int8 GEMM (" in line:
                ran.add(line.split("int8 GEMM (", 1)[1].split(")", 1)[0])
            if "int8 codes (" in line:
                ran.add(line.split("int8 codes (", 1)[1].split(")", 1)[0])
                coded.add((p["name"], line.split(": ", 1)[1].split(" on ", 1)[0]))
    # torchao's 4-bit groupwise weights (qmlp_dynamic_4bit) run on the int4 GEMM (q4gemm.h),
    # at the same level
    assert ran == {isa, f"4-bit weights, {isa}"}, f"PTERON_ISA={isa}: the int8 nodes ran at {ran}"
    want = {("qinvres_static_per_channel_xnnpack", op) for op in ("DepthwiseConv2d", "Add", "Clamp")}
    assert want <= coded, f"PTERON_ISA={isa}: int8 codes paths that ran: {sorted(coded)}"


# The int8 codes paths split their rows and elements over the thread pool (qgemm.cpp:
# qdwconv in chunks of about 32 K multiply-adds, so qinvres's 20 x 20 and strided 10 x 10
# depthwise convolutions are split at 2 threads and more). A static program's output is exact
# whatever the split.
@pytest.mark.parametrize("threads", [1, 3, 7])
@pytest.mark.parametrize("name", ["qinvres_static_per_channel_xnnpack",
                                  "qcnn_static_per_channel_xnnpack"])
def test_int8_codes_paths_give_the_same_output_on_any_thread_count(pteron_run, tmp_path, name,
                                                                    threads):
    p = next(q for q in PROGRAMS if q["name"] == name)
    r = run([pteron_run, Q / p["file"], "--input", Q / f"{name}.forward.input_0.npy",
             "--output-dir", tmp_path], timeout=120,
            env=dict(os.environ, PTERON_NUM_THREADS=str(threads)))
    assert r.returncode == 0, r.stderr[-3000:]
    check(p, np.load(tmp_path / "output_0.npy"), f"{threads} threads")


@pytest.fixture(scope="session")
def wine_results(mingw_package, wine_env, tmp_path_factory):
    """pteron-run.exe of the MinGW package on every program, from one batch file (one Wine
    start): {name: (exit code, log, output folder)}."""
    tmp = tmp_path_factory.mktemp("quantized_wine")
    exe = winpath(mingw_package / "bin" / "pteron-run.exe")
    lines = ["@echo off"]
    for p in PROGRAMS:
        out = tmp / p["name"]
        out.mkdir()
        lines.append(f'"{exe}" {winpath(Q / p["file"])} --input '
                     f'{winpath(Q / (p["name"] + ".forward.input_0.npy"))} --output-dir '
                     f'{winpath(out)} > "{winpath(out / "log.txt")}" 2>&1')
        lines.append(f'echo %ERRORLEVEL% > "{winpath(out / "rc.txt")}"')
    (tmp / "run_all.bat").write_text("\r\n".join(lines) + "\r\n")
    r = wine_run(wine_env, "cmd", "/c", winpath(tmp / "run_all.bat"), cwd=tmp, timeout=600)
    res = {}
    for p in PROGRAMS:
        out = tmp / p["name"]
        assert (out / "rc.txt").exists(), f"the batch did not run {p['name']}: {r}"
        log = (out / "log.txt").read_text(errors="replace") if (out / "log.txt").exists() else ""
        res[p["name"]] = (int((out / "rc.txt").read_text().strip()), log, out)
    return res


@pytest.mark.parametrize("p", PROGRAMS, ids=IDS)
def test_quantized_program_matches_eager_under_wine(wine_results, p):
    rc, log, out = wine_results[p["name"]]
    assert rc == 0, f"pteron-run.exe {p['name']} under Wine exited {rc}:\n{log[-3000:]}"
    check(p, np.load(out / "output_0.npy"), "MinGW DLLs, Wine")


def test_int8_codes_program_runs_under_wine_from_a_non_ascii_folder(mingw_package, wine_env,
                                                                    tmp_path):
    """The delegate's int8 codes paths in the MinGW DLLs, the program, its input and its output
    folder under non-ASCII names (Wine names Unix files in UTF-8 under a UTF-8 locale)."""
    import shutil
    name = "qinvres_static_per_channel_xnnpack"
    p = next(q for q in PROGRAMS if q["name"] == name)
    folder = tmp_path / "Modèles quantifiés 模型"
    folder.mkdir()
    prog = folder / f"{name} é.pte"
    x = folder / "entrée_0.npy"
    shutil.copy2(Q / p["file"], prog)
    shutil.copy2(Q / f"{name}.forward.input_0.npy", x)
    out = folder / "sortie résultats"
    r = wine_run(wine_env, mingw_package / "bin" / "pteron-run.exe", winpath(prog), "--input",
                 winpath(x), "--output-dir", winpath(out), cwd=tmp_path,
                 extra_env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PTERON_XNNPACK_DEBUG": "1"})
    assert r.returncode == 0, str(r)
    assert "int8 codes (" in r.stderr, str(r)
    check(p, np.load(out / "output_0.npy"), "MinGW DLLs, Wine, a non-ASCII folder")


FUZZED = ["qcnn_static_per_channel_xnnpack", "qblock_dynamic_xnnpack",
          "qinvres_static_per_channel_xnnpack"]


@pytest.mark.parametrize("name", FUZZED)
def test_xnnpack_quantized_program_is_fuzzed_through_the_delegate(fuzz_exe, name):
    import test_malformed as tm
    fx = {"name": name, "file": f"{name}.pte", "delegates": ["XnnpackBackend"],
          "methods": {"forward": {"inputs": [f"{name}.forward.input_0.npy"]}}}
    if not tm._runs_delegates(fuzz_exe, fx):
        pytest.fail(f"pteron-fuzz does not register XnnpackBackend: {tm.BUILD_HINT}",
                    pytrace=False)
    fuzz = tm._run_fuzz(fuzz_exe, fx, folder=Q, env_extra=tm._library_free_env())
    for marker in tm.SANITIZER_MARKERS + ("TIMEOUT variant", "BADSTATUS"):
        assert marker not in fuzz.stderr, fuzz.describe()
    assert fuzz.rc == 0, fuzz.describe()
    assert fuzz.classes["original"]["ok"] == 1, fuzz.describe()
    blob = fuzz.classes.get("flip_blob")
    assert blob and blob["variants"] == tm.FLIPS // 4 and blob["method_errors"] > 0, \
        fuzz.describe()


# The int8 paths at every ISA level this CPU has, under ASan+UBSan (pteron-fuzz runs the
# unmodified program only): an epilogue's unmasked loads past a per-column array show up here.
@pytest.mark.parametrize("isa", ISA_LEVELS)
@pytest.mark.parametrize("name", ["qcnn_static_per_channel_xnnpack",
                                  "qinvres_static_per_channel_xnnpack"])
def test_int8_paths_are_clean_under_asan_at_each_isa_level(fuzz_exe, name, isa):
    import test_malformed as tm
    missing = missing_for(isa)
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)} for PTERON_ISA={isa}")
    fx = {"name": name, "file": f"{name}.pte", "delegates": ["XnnpackBackend"],
          "methods": {"forward": {"inputs": [f"{name}.forward.input_0.npy"]}}}
    run = tm._run_fuzz(fuzz_exe, fx, flips=0, folder=Q,
                       env_extra=dict(tm._library_free_env() or {}, PTERON_ISA=isa))
    for marker in tm.SANITIZER_MARKERS + ("TIMEOUT variant", "BADSTATUS"):
        assert marker not in run.stderr, run.describe()
    assert run.rc == 0, run.describe()
    assert run.classes["original"]["ok"] == 1, run.describe()
