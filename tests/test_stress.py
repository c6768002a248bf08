# SPDX-License-Identifier: BSD-3-Clause
"""The runtime under load: pteron-stress (tests/native/stress.cpp).

Eight threads each load and run their own methods of one shared program,
two more call one shared method instance at once, and one resizes the
thread pool while they run; every output must equal the reference run's.

- Here, in the test command's ASan+UBSan build (build-asan/), for a few
  seconds per program: memory errors and torn state under concurrency.
- Under ThreadSanitizer for a minute: scripts/slow.sh builds build-tsan/
  (GCC -fsanitize=thread, the std::thread pool, the XNNPACK delegate with no
  XNNPACK library: uninstrumented system libraries would give false
  reports) and sets PTERON_TSAN_BUILD_DIR, which enables the TSan cases.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES
from test_malformed import SANITIZER_MARKERS, _asan_dir

# Programs with portable operators and XNNPACK delegates (several per method
# in the transformer), each with its committed input.
PROGRAMS = {
    "transformer_xnnpack": ["transformer_xnnpack.forward.input_0.npy"],
    "cnn": ["cnn.forward.input_0.npy"],
}
ASAN_SECONDS = 4
TSAN_SECONDS = float(os.environ.get("PTERON_TSAN_SECONDS", "60"))
TSAN_MARKERS = ("WARNING: ThreadSanitizer", "ThreadSanitizer: ")


def _run(exe: Path, name: str, seconds: float, env: dict[str, str]) -> str:
    if not exe.exists():
        pytest.fail(f"{exe} is missing: the test command's build-asan/ builds it "
                    "(PTERON_BUILD_TESTS=ON with the threadpool component)")
    args = [str(exe), str(seconds), "8", str(FIXTURES / f"{name}.pte"),
            *[str(FIXTURES / f) for f in PROGRAMS[name]]]
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=seconds + 300)
    out = p.stdout + p.stderr
    print(p.stdout.strip())  # the summary line (pytest -s shows it)
    assert p.returncode == 0, out[-6000:]
    assert "0 failures" in p.stdout, out[-6000:]
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_threads_share_a_program_under_asan(name):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    out = _run(_asan_dir() / "pteron-stress", name, ASAN_SECONDS, env)
    for marker in SANITIZER_MARKERS:
        assert marker not in out, out[-6000:]
    # The shared method really was called, and the pool really resized.
    assert " 0 executions" not in out and "(0 on the shared method)" not in out, out
    assert " 0 pool resizes" not in out, out


@pytest.mark.skipif(not os.environ.get("PTERON_TSAN_BUILD_DIR"),
                    reason="scripts/slow.sh sets PTERON_TSAN_BUILD_DIR (the ThreadSanitizer build)")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_threads_share_a_program_under_tsan(name):
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1")
    out = _run(Path(os.environ["PTERON_TSAN_BUILD_DIR"]) / "pteron-stress", name,
               TSAN_SECONDS, env)
    for marker in TSAN_MARKERS:
        assert marker not in out, out[-8000:]
