# SPDX-License-Identifier: BSD-3-Clause
"""The C++ kernel tests (tests/kernels/): about 2,100 lines of expected values
from eager PyTorch 2.13 and hand-written error, aliasing and random-argument
checks, run against the real runtime and kernels_portable.

The programs call kernels through the runtime's one test-only entry point,
pteron_testing_call_kernel (include/pteron/testing.h). They are built with
-DPTERON_BUILD_TESTS=ON (scripts/test.sh builds them in build-asan/, under
ASan+UBSan). This file finds them in PTERON_ASAN_BUILD_DIR when that is set,
else in PTERON_BUILD_DIR, runs each section of each program as one test case
and prints how many C++ checks passed, so CI's output shows the count.
"""
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import REPO, build_dir, run

EXE = ".exe" if sys.platform == "win32" else ""

# Each program's sections, in the order it runs them (`PROGRAM --list`).
SECTIONS = {
    "pteron-test-arith-matmul-reduce": [
        "registration", "torch_cases", "error_paths", "malformed_tensors", "aliasing",
        "wrapping_cases", "matmul_blocked", "random_arguments", "structured_arguments"],
    "pteron-test-shape-conv-norm": [
        "shape_ops", "index_ops", "conv", "pool", "norm", "malformed", "random_arguments",
        "conv_pool_random"],
}
CASES = [(prog, section) for prog, sections in SECTIONS.items() for section in sections]

ASAN_OPTIONS = "detect_leaks=1:abort_on_error=0"
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")
SUMMARY = re.compile(r"^(\d+) checks, (\d+) failures$", re.M)


def _program(name) -> Path:
    asan = os.environ.get("PTERON_ASAN_BUILD_DIR")
    dirs = [Path(asan)] if asan else []
    dirs.append(build_dir())
    for d in dirs:
        if (d / (name + EXE)).exists():
            return d / (name + EXE)
    pytest.fail(f"{name}{EXE} is in none of {', '.join(map(str, dirs))}: build with "
                "-DPTERON_BUILD_TESTS=ON (scripts/test.sh does, in build-asan/)", pytrace=False)


def _run(exe, *args, timeout=600):
    env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS, UBSAN_OPTIONS=UBSAN_OPTIONS)
    return run([exe, *args], timeout=timeout, env=env, cwd=REPO)


@pytest.mark.parametrize("prog", sorted(SECTIONS))
def test_program_lists_the_sections_this_file_runs(prog):
    r = _run(_program(prog), "--list", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == SECTIONS[prog]


@pytest.mark.parametrize("prog", sorted(SECTIONS))
def test_program_refuses_an_unknown_section(prog):
    r = _run(_program(prog), "no_such_section", timeout=60)
    assert r.returncode == 2
    assert "no_such_section" in r.stderr


@pytest.mark.parametrize("prog,section", CASES, ids=[f"{p[12:]}/{s}" for p, s in CASES])
def test_kernel_checks_pass(prog, section, capsys):
    r = _run(_program(prog), section)
    out = r.stdout + r.stderr
    for marker in SANITIZER_MARKERS:
        assert marker not in out, out[-4000:]
    m = SUMMARY.findall(r.stdout)
    assert m, f"no '<n> checks, <m> failures' line (rc={r.returncode}):\n{out[-4000:]}"
    checks, failures = map(int, m[-1])
    assert failures == 0 and r.returncode == 0, out[-4000:]
    assert checks > 0, f"{prog} {section} ran no check"
    with capsys.disabled():
        print(f"\n  {prog} {section}: {checks} kernel checks passed", end="")


# ---- the test-only entry point itself ------------------------------------------

def _call_kernel_fn():
    import ctypes

    d = build_dir()
    name = "pteron.dll" if sys.platform == "win32" else "libpteron.so"
    if not (d / name).exists():
        pytest.fail(f"no pteron build in {d}: run scripts/test.sh (it builds first)", pytrace=False)
    lib = ctypes.CDLL(str(d / name))
    fn = lib.pteron_testing_call_kernel
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                   ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                   ctypes.POINTER(ctypes.c_int32)]
    return fn


def test_call_kernel_names_an_operator_no_library_registered():
    import ctypes

    fn = _call_kernel_fn()
    msg = ctypes.create_string_buffer(256)
    code = ctypes.c_int32(-1)
    rc = fn(b"aten::no_such_op", b"out", None, None, 0, msg, len(msg), ctypes.byref(code))
    assert rc == 4  # PTERON_ERROR_MISSING_OPERATOR
    assert code.value == 0  # no kernel ran, so none recorded anything
    assert msg.value == b"no kernel registered for aten::no_such_op.out"


def test_call_kernel_refuses_a_null_name_and_truncates_its_message():
    import ctypes

    fn = _call_kernel_fn()
    msg = ctypes.create_string_buffer(8)
    rc = fn(None, b"out", None, None, 0, msg, len(msg), None)
    assert rc == 1  # PTERON_ERROR_INVALID_ARGUMENT
    assert msg.value == b"pteron_"  # 7 bytes and the NUL
