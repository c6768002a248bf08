# SPDX-License-Identifier: BSD-3-Clause
"""Malformed programs give an error, never a crash, an abort or a hang.

Each fixture goes through pteron-fuzz (tests/native/fuzz_driver.cpp), built
with AddressSanitizer + UndefinedBehaviorSanitizer, in one process per
fixture: truncations (0, 8, size/2, size-1 bytes), a wrong identifier, a
zeroed root offset, value indices out of range, segment offsets past the end
of the file, 1,000 seeded random byte changes and 500 seeded changes of
single schema fields (sizes, dtypes, placements, operands). Every variant must end
with success or an error status within 10 s and without a sanitizer report;
the structural variants must all end in an error.

When build-asan has backend_xnnpack (scripts/test.sh builds it so),
pteron-fuzz registers XnnpackBackend: delegated fixtures load and execute
through the delegate, and a quarter of the byte flips land inside the
delegate blob (class flip_blob). Without it they end in missing_delegate.

A few checks on the Release build, through the C API binding tests/capi.py,
make sure the errors say what is wrong (the identifier, the truncation).

The ASan build is the one the test command makes (with no XNNPACK library:
the delegate runs on pteron's own kernels, the code that most needs ASan):
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPTERON_SANITIZE=address,undefined -DPTERON_BUILD_TESTS=ON -DPTERON_BUILD_TOOLS=OFF \
        -DPTERON_WITH_OPTIMIZED=OFF -DPTERON_XNNPACK_LIBRARY=OFF
  ninja -C build-asan pteron-fuzz
(PTERON_ASAN_BUILD_DIR overrides its location; PTERON_BUILD_DIR the Release one,
as tests/conftest.py reads it.)
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import capi
from conftest import FIXTURES, REPO, manifest

FLIPS = 1000
# Schema-field mutations (through the generated mutable API): unlike byte
# flips, these pass the flatbuffer verifier and reach method load and execute.
FIELDS = 500
SEED = 1
VARIANT_TIMEOUT_S = 10
PROCESS_TIMEOUT_S = 600

BUILD_HINT = (
    "run the test command (scripts/test.sh), which builds it, or build it with: "
    "cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "
    "-DPTERON_SANITIZE=address,undefined -DPTERON_BUILD_TESTS=ON -DPTERON_BUILD_TOOLS=OFF "
    "-DPTERON_WITH_OPTIMIZED=OFF -DPTERON_XNNPACK_LIBRARY=OFF && ninja -C build-asan pteron-fuzz"
)

# allocator_may_return_null: a corrupt planned-buffer size must become an
# out-of-memory error status, not an ASan abort. max_allocation_size_mb caps
# what ASan will hand out (the fixtures need a few MiB): without it, sizes of
# a few GiB are "allocated" and ASan writes their shadow memory, which makes a
# run take seconds and gigabytes for nothing.
ASAN_OPTIONS = ("detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:"
                "max_allocation_size_mb=256")
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")

# Variant classes the driver builds from the format's structure; each must
# end in an error for every fixture.
STRUCTURAL = ("truncation", "identifier", "root_offset", "value_index", "segment_offset")
# Classes that must already fail at program load (a truncated program, a
# wrong identifier or a broken root must never load).
FAIL_AT_PROGRAM_LOAD = ("truncation", "identifier", "root_offset")


FIXTURE_LIST = manifest()["fixtures"]
FIXTURE_IDS = [f["name"] for f in FIXTURE_LIST]


def _asan_dir() -> Path:
    return Path(os.environ.get("PTERON_ASAN_BUILD_DIR", REPO / "build-asan"))


def _fuzz_exe() -> Path:
    name = "pteron-fuzz.exe" if sys.platform == "win32" else "pteron-fuzz"
    return _asan_dir() / name


@pytest.fixture(scope="session")
def fuzz_exe() -> Path:
    exe = _fuzz_exe()
    if not exe.exists():
        pytest.fail(f"{exe} is missing (ASan+UBSan build of pteron-fuzz): {BUILD_HINT}")
    return exe


def _env():
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ASAN_OPTIONS
    env["UBSAN_OPTIONS"] = UBSAN_OPTIONS
    return env


_backends: dict[str, set[str]] = {}


def _fuzz_backends(exe: Path) -> set[str]:
    """The delegates pteron-fuzz registers (those its build has)."""
    if str(exe) not in _backends:
        p = subprocess.run([str(exe), "--backends"], capture_output=True, text=True,
                           env=_env(), timeout=60)
        assert p.returncode == 0 and p.stdout.startswith("backends="), (p.stdout, p.stderr)
        names = p.stdout.strip().split("=", 1)[1]
        _backends[str(exe)] = set(filter(None, names.split(",")))
    return _backends[str(exe)]


def _runs_delegates(exe: Path, fx) -> bool:
    return set(fx.get("delegates") or ()) <= _fuzz_backends(exe)


def _fixture_args(fx, exe: Path, folder: Path = FIXTURES) -> list[str]:
    args = [str(folder / fx["file"])]
    for method, spec in fx["methods"].items():
        args += ["--method", method]
        for inp in spec["inputs"]:
            args += ["--input", str(folder / inp)]
    if not _runs_delegates(exe, fx):
        # A delegate pteron-fuzz does not register: every method fails at
        # load (missing delegate), so there is nothing to execute. The
        # program is still fuzzed: loading must fail cleanly.
        args.append("--no-execute")
    return args


class FuzzRun:
    def __init__(self, proc: subprocess.CompletedProcess, cmd: list[str]):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.cmd = cmd
        self.classes: dict[str, dict[str, int]] = {}
        self.total: dict[str, float] = {}
        for line in self.stdout.splitlines():
            fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            if line.startswith("class="):
                name = fields.pop("class")
                self.classes[name] = {k: int(v) for k, v in fields.items()}
            elif line.startswith("variants="):
                self.total = {k: float(v) for k, v in fields.items()}

    def describe(self) -> str:
        err = self.stderr
        hits = [err.find(m) for m in SANITIZER_MARKERS + ("TIMEOUT", "BADSTATUS") if m in err]
        start = max(0, min(hits) - 300) if hits else max(0, len(err) - 6000)
        excerpt = err[start:start + 6000]
        who = re.findall(r"^.*(?:while running variant|TIMEOUT variant|BADSTATUS variant).*$",
                         err, re.M)
        return (f"command: {' '.join(self.cmd)}\nexit status: {self.rc}\n"
                f"{chr(10).join(who)}\n--- stdout ---\n{self.stdout[-3000:]}\n"
                f"--- stderr ---\n{excerpt}")


_runs: dict[tuple, FuzzRun] = {}


def _run_fuzz(exe: Path, fx, flips: int = FLIPS, folder: Path = FIXTURES,
              env_extra: dict | None = None) -> FuzzRun:
    name = fx["name"]
    key = (name, flips, tuple(sorted((env_extra or {}).items())))
    if key not in _runs:
        cmd = [str(exe)] + _fixture_args(fx, exe, folder) + [
            "--flips", str(flips), "--fields", str(FIELDS if flips else 0), "--seed", str(SEED),
            "--timeout-s", str(VARIANT_TIMEOUT_S)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                                  env=dict(_env(), **(env_extra or {})),
                                  timeout=PROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"pteron-fuzz on {name} did not finish in {PROCESS_TIMEOUT_S} s "
                        f"(the per-variant watchdog should have ended it): {e}")
        _runs[key] = FuzzRun(proc, cmd)
    return _runs[key]


@pytest.mark.parametrize("fx", FIXTURE_LIST, ids=FIXTURE_IDS)
def test_every_variant_ends_in_success_or_error(fuzz_exe, fx):
    run = _run_fuzz(fuzz_exe, fx)
    for marker in SANITIZER_MARKERS:
        if marker in run.stderr:
            pytest.fail(f"sanitizer report ({marker}) on {fx['name']}:\n{run.describe()}",
                        pytrace=False)
    if "TIMEOUT variant" in run.stderr:
        pytest.fail(f"a variant of {fx['name']} hung:\n{run.describe()}", pytrace=False)
    if "BADSTATUS" in run.stderr:
        pytest.fail(f"a malformed error status:\n{run.describe()}", pytrace=False)
    assert run.rc == 0, f"pteron-fuzz failed:\n{run.describe()}"
    assert run.total, f"no summary line:\n{run.describe()}"
    assert run.total["errors"] + run.total["ok"] == run.total["variants"], run.describe()


@pytest.mark.parametrize("fx", FIXTURE_LIST, ids=FIXTURE_IDS)
def test_structural_variants_all_fail(fuzz_exe, fx):
    # Structural variants only (no flips), so a crash among the flips does
    # not hide these results.
    run = _run_fuzz(fuzz_exe, fx, flips=0)
    for marker in SANITIZER_MARKERS:
        if marker in run.stderr:
            pytest.fail(f"sanitizer report ({marker}) on {fx['name']}:\n{run.describe()}",
                        pytrace=False)
    assert run.rc == 0, f"pteron-fuzz failed:\n{run.describe()}"
    has_segments = (FIXTURES / fx["file"]).read_bytes()[8:12] == b"eh00"
    for cls in STRUCTURAL:
        if cls == "segment_offset" and not has_segments:
            # A program without constants has no extended header and no
            # segments: there is no segment offset to corrupt.
            assert cls not in run.classes, run.describe()
            continue
        assert cls in run.classes, f"no {cls} variants were built:\n{run.describe()}"
        c = run.classes[cls]
        assert c["variants"] >= 1, run.describe()
        assert c["errors"] == c["variants"] and c["ok"] == 0, (
            f"{c['ok']} {cls} variant(s) of {fx['name']} loaded and ran:\n{run.describe()}")
    for cls in FAIL_AT_PROGRAM_LOAD:
        c = run.classes[cls]
        assert c["load_errors"] == c["variants"], (
            f"a {cls} variant of {fx['name']} got past program load:\n{run.describe()}")
    # An out-of-range index or segment is refused at load (program or
    # method), never discovered during execute.
    for cls in ("value_index", "segment_offset"):
        c = run.classes.get(cls, {"exec_errors": 0})
        assert c["exec_errors"] == 0, (
            f"a {cls} variant of {fx['name']} was only caught at execute:\n{run.describe()}")
    assert run.classes["truncation"]["variants"] == 4, run.describe()
    # Instruction argument (two), plan input, plan output at least.
    assert run.classes["value_index"]["variants"] >= 4, run.describe()


def test_delegated_fixture_fails_cleanly_without_a_backend(fuzz_exe):
    missing = [fx for fx in FIXTURE_LIST
               if fx.get("delegates") and not _runs_delegates(fuzz_exe, fx)]
    if not missing:
        pytest.skip(f"pteron-fuzz registers {sorted(_fuzz_backends(fuzz_exe))}: every delegated "
                    "fixture runs through its delegate (test_delegated_fixtures_are_fuzzed_"
                    "through_the_delegate)")
    for fx in missing:
        run = _run_fuzz(fuzz_exe, fx)
        assert run.rc == 0, run.describe()
        assert run.total["ok"] == 0, (
            f"{fx['name']} needs {fx['delegates']}, which pteron-fuzz does not register, "
            f"yet a variant loaded:\n{run.describe()}")
        assert run.classes["original"]["method_errors"] == 1, run.describe()


XNN_FIXTURES = [fx for fx in FIXTURE_LIST if "XnnpackBackend" in (fx.get("delegates") or ())]


# pteron's own kernels alone: what CI's build-asan runs (it links no XNNPACK
# library, -DPTERON_XNNPACK_LIBRARY=OFF); PTERON_XNNPACK_USE_LIBRARY=none
# makes a build with a library do the same.
LIBRARY_FREE = {"PTERON_XNNPACK_USE_LIBRARY": "none"}
XNN_DIR = REPO / "tests" / "xnnpack"
NO_OWN_KERNEL = "pteron has no kernel for it"


def _library_free_env():
    """{} where build-asan links no XNNPACK library (CI), else LIBRARY_FREE
    (one fuzz run per fixture either way: the key of _runs is the env)."""
    cfg = _asan_dir() / "backends" / "xnnpack" / "generated" / "xnn_config.h"
    linked = not cfg.exists() or "#define PTERON_XNN_LINKED 0" not in cfg.read_text()
    return LIBRARY_FREE if linked else None


def _skip_without_own_kernels(fx, folder=FIXTURES):
    """Skips, naming the node, while a node type of `fx` has no pteron kernel
    (the Release pteron-run, on pteron's kernels alone, says which)."""
    from conftest import build_dir
    exe = build_dir() / "pteron-run"
    if not exe.exists():
        return
    cmd = [str(exe), str(folder / fx["file"]), "--iterations", "1"]
    for inp in fx["methods"]["forward"]["inputs"]:
        cmd += ["--input", str(folder / inp)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **LIBRARY_FREE))
    if r.returncode != 0 and NO_OWN_KERNEL in r.stderr:
        pytest.skip(next(l for l in r.stderr.splitlines() if NO_OWN_KERNEL in l))


@pytest.mark.parametrize("fx", XNN_FIXTURES, ids=[fx["name"] for fx in XNN_FIXTURES])
def test_delegated_fixtures_are_fuzzed_through_the_delegate(fuzz_exe, fx):
    """CI's build-asan has backend_xnnpack: the unmodified program executes
    through XnnpackBackend, and byte flips inside its blob reach the
    delegate's checks (some fail at method load, where the blob is parsed).
    The build has no XNNPACK library (or PTERON_XNNPACK_USE_LIBRARY=none is
    set): pteron's own kernels run every node."""
    if not _runs_delegates(fuzz_exe, fx):
        pytest.fail(f"{_fuzz_exe()} does not register XnnpackBackend, so the XNNPACK delegate "
                    f"is never fuzzed: {BUILD_HINT} -DPTERON_WITH_XNNPACK=ON", pytrace=False)
    _skip_without_own_kernels(fx)
    run = _run_fuzz(fuzz_exe, fx, env_extra=_library_free_env())
    assert run.rc == 0, run.describe()
    assert run.classes["original"]["ok"] == 1, run.describe()
    blob = run.classes.get("flip_blob")
    assert blob and blob["variants"] == FLIPS // 4, run.describe()
    assert blob["method_errors"] > 0, run.describe()


def test_layout_program_is_fuzzed_on_pterons_own_kernels(fuzz_exe):
    """tests/xnnpack/layout_xnnpack (every layout node type, the transpose
    round trip removed at load, the shared arena) under ASan+UBSan: the
    original runs, flips in the blob end in errors or results, never a
    sanitizer report."""
    import json
    fx = json.loads((XNN_DIR / "manifest.json").read_text())["fixtures"][0]
    if not _runs_delegates(fuzz_exe, fx):
        pytest.fail(f"{_fuzz_exe()} does not register XnnpackBackend: {BUILD_HINT}", pytrace=False)
    run = _run_fuzz(fuzz_exe, fx, folder=XNN_DIR, env_extra=_library_free_env())
    assert run.rc == 0, run.describe()
    assert run.classes["original"]["ok"] == 1, run.describe()
    blob = run.classes.get("flip_blob")
    assert blob and blob["variants"] == FLIPS // 4, run.describe()
    assert blob["method_errors"] > 0, run.describe()


# ---- negative controls: the driver and this test can see a failure -------

def test_flips_really_ran(fuzz_exe):
    fx = FIXTURE_LIST[0]
    run = _run_fuzz(fuzz_exe, fx)
    assert run.rc == 0, run.describe()
    structural = sum(run.classes[c]["variants"] for c in STRUCTURAL)
    flips = sum(v["variants"] for k, v in run.classes.items() if k.startswith("flip_"))
    assert flips == FLIPS, run.describe()
    assert run.classes["field"]["variants"] == FIELDS, run.describe()
    assert run.total["variants"] >= FLIPS + FIELDS + structural, run.describe()
    # Byte flips in the flatbuffer must reach the loader's checks.
    assert run.classes["flip_program"]["load_errors"] > 0, run.describe()


def _self_test(exe: Path, what: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), "--self-test", what, "--timeout-s", "0.5"],
                          capture_output=True, text=True, errors="replace", env=_env(),
                          timeout=60)


def test_watchdog_catches_a_hang(fuzz_exe):
    p = _self_test(fuzz_exe, "hang")
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "TIMEOUT variant self_test_hang" in p.stderr


@pytest.mark.parametrize("kind,marker", [("asan", "ERROR: AddressSanitizer"),
                                         ("ubsan", "runtime error:")])
def test_build_is_sanitized(fuzz_exe, kind, marker):
    # If this fails, build-asan was not built with
    # -DPTERON_SANITIZE=address,undefined and the fuzz tests prove nothing.
    p = _self_test(fuzz_exe, kind)
    assert p.returncode != 0, p.stderr
    assert marker in p.stderr, p.stderr
    assert f"variant self_test_{kind}" in p.stderr, p.stderr


def test_seeds_are_reproducible(fuzz_exe):
    fx = FIXTURE_LIST[0]
    cmd = [str(fuzz_exe)] + _fixture_args(fx, fuzz_exe) + ["--flips", "200", "--seed", "7"]
    outs = []
    for _ in range(2):
        p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
        assert p.returncode == 0, p.stderr[-4000:]
        outs.append(re.sub(r" seconds=\S+", "", p.stdout))
    assert outs[0] == outs[1]


# ---- error messages, through the C API of the Release build --------------

def _load(runtime: capi.Runtime, data: bytes):
    """(code, message) of pteron_program_load_memory; (0, '') on success. A
    failed load must reset the out handle to NULL."""
    out = ctypes.c_void_p(0xDEAD)
    st = runtime.lib.pteron_program_load_memory(data, len(data), ctypes.byref(out))
    if not st:
        runtime.lib.pteron_program_release(out)
        return 0, ""
    try:
        runtime.check(st)
    except capi.PteronError as e:
        assert not out.value, "a failed load left a program handle"
        return e.code, e.message
    raise AssertionError("pteron_program_load_memory returned a status that check() accepted")


def _bytes(name: str = "mlp") -> bytes:
    fx = next(f for f in FIXTURE_LIST if f["name"] == name)
    return (FIXTURES / fx["file"]).read_bytes()


def test_release_loads_the_unmodified_fixture(runtime):
    assert _load(runtime, _bytes()) == (0, "")


def test_empty_buffer_is_invalid_program(runtime):
    code, msg = _load(runtime, b"")
    assert code == capi.INVALID_PROGRAM, msg
    assert "truncated" in msg and "0 bytes" in msg, msg


def test_wrong_identifier_is_named(runtime):
    data = bytearray(_bytes())
    data[4:8] = b"XT13"
    code, msg = _load(runtime, bytes(data))
    assert code == capi.INVALID_PROGRAM, msg
    assert "ET12" in msg and "XT13" in msg, msg


@pytest.mark.parametrize("fx", FIXTURE_LIST, ids=FIXTURE_IDS)
def test_truncated_program_says_truncated(runtime, fx):
    data = (FIXTURES / fx["file"]).read_bytes()
    for n in (8, len(data) // 2, len(data) - 1):
        code, msg = _load(runtime, data[:n])
        assert code == capi.INVALID_PROGRAM, (n, msg)
        assert "truncated" in msg, (n, msg)


def test_zeroed_root_offset_is_invalid_program(runtime):
    data = bytearray(_bytes())
    data[0:4] = b"\0\0\0\0"
    code, msg = _load(runtime, bytes(data))
    assert code == capi.INVALID_PROGRAM, msg
    assert msg


def test_segment_base_past_the_end_is_named(runtime):
    data = bytearray(_bytes())
    assert data[8:12] == b"eh00"
    data[24:32] = (len(data) + 4096).to_bytes(8, "little")
    code, msg = _load(runtime, bytes(data))
    assert code == capi.INVALID_PROGRAM, msg
    assert "segment" in msg and "outside the file" in msg, msg


def test_jump_past_the_end_of_its_chain_is_named(runtime):
    """cond_branches' first branch ends with a jump to its chain's end (destination == the
    instruction count: it ends the chain, as upstream's emitter writes it, and the method
    loads and runs both branches: the fixture tests). One past that is out of range: each
    little-endian int32 equal to the count is patched to count + 1 in turn, and for one of
    them (the jump's destination) the method load is refused, naming it."""
    data = _bytes("cond_branches")
    runtime.load_bytes(data).load_method("forward")
    count = 14  # instructions in the chain (the message names the loaded program's own count)
    needle = count.to_bytes(4, "little")
    messages = []
    at = data.find(needle)
    while at >= 0:
        patched = bytearray(data)
        patched[at:at + 4] = (count + 1).to_bytes(4, "little")
        try:
            runtime.load_bytes(bytes(patched)).load_method("forward")
        except capi.PteronError as e:
            messages.append((e.code, e.message))
        at = data.find(needle, at + 1)
    named = [(c, m) for c, m in messages
             if f"jump destination {count + 1} out of range ({count} instructions)" in m]
    assert named and all(c == capi.INVALID_PROGRAM for c, _ in named), messages
