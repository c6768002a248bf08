# SPDX-License-Identifier: BSD-3-Clause
"""The fuzz targets' kept corpus, replayed under AddressSanitizer + UBSan.

scripts/fuzz.sh runs coverage-guided campaigns (libFuzzer, clang) of the five
targets in tests/fuzz/ and keeps each failing input, minimized, in
tests/corpus/<target>/, beside a coverage-minimized corpus (tests/fuzz/README.md).
Here the same target sources, linked with tests/fuzz/replay_main.cpp into
pteron-replay-<target> by the test command's ASan+UBSan build (build-asan/, GCC),
run every kept input once: each must end without a sanitizer report or a
broken contract, so a class of failures fixed once stays fixed.

The replay mirrors the campaign's memory limit: a single request over 2 GiB
is a failure (libFuzzer's -malloc_limit_mb=2048 there; here ASan's
max_allocation_size_mb=2048 with allocator_may_return_null=0, which reports
it), so an input that makes the runtime ask for a huge block (the class the
program target's memory budget closed) fails here again.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from test_malformed import SANITIZER_MARKERS, _asan_dir

TARGETS = ("program", "xnnpack_blob", "cuda_blob", "npy", "python")
# The python target's inputs are programs: here the program replayer runs them under ASan +
# UBSan, and tests/test_python.py replays them through the Python module.
REPLAYER = {"python": "program"}
CORPUS = REPO / "tests" / "corpus"
REPLAY_TIMEOUT_S = 900
ASAN_OPTIONS = ("detect_leaks=1:abort_on_error=0:allocator_may_return_null=0:"
                "max_allocation_size_mb=2048")
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"
BUILD_HINT = ("run the test command (scripts/test.sh), whose build-asan/ has "
              "PTERON_BUILD_TESTS=ON, or: ninja -C build-asan pteron-replay-<target>")


def _replay_exe(target: str) -> Path:
    name = REPLAYER.get(target, target)
    return _asan_dir() / (f"pteron-replay-{name}" + (".exe" if sys.platform == "win32" else ""))


def _env(verbose: bool = False) -> dict[str, str]:
    env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS, UBSAN_OPTIONS=UBSAN_OPTIONS,
               PTERON_NUM_THREADS="2")
    env.pop("PTERON_FUZZ_PROGRAM_DIRS", None)  # the compiled-in fixture folders
    if verbose:
        env["PTERON_FUZZ_VERBOSE"] = "1"
    else:
        env.pop("PTERON_FUZZ_VERBOSE", None)
    return env


def _replay(target: str, paths: list[Path], verbose: bool = False) -> subprocess.CompletedProcess:
    exe = _replay_exe(target)
    if not exe.exists():
        pytest.fail(f"{exe} is missing: {BUILD_HINT}")
    return subprocess.run([str(exe), *map(str, paths)], capture_output=True, text=True,
                          env=_env(verbose), timeout=REPLAY_TIMEOUT_S)


def _assert_clean(p: subprocess.CompletedProcess, what: str) -> None:
    out = p.stdout + p.stderr
    for marker in SANITIZER_MARKERS + ("contract broken", "without a message"):
        assert marker not in out, f"{what}: {marker}\n{out[-6000:]}"
    assert p.returncode == 0, f"{what}: exit {p.returncode}\n{out[-6000:]}"


@pytest.mark.parametrize("target", TARGETS)
def test_kept_corpus_replays_clean(target):
    """Every kept input of the target (failures found by campaigns and the
    coverage corpus) runs to an end with no sanitizer report."""
    folder = CORPUS / target
    files = sorted(f for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else []
    assert files, f"{folder} holds no inputs: scripts/fuzz.sh {target} SECONDS keeps them there"
    p = _replay(target, [folder])
    _assert_clean(p, f"replay of {folder}")
    assert f"replayed {len(files)} inputs" in p.stdout, p.stdout[-2000:]


def _whole_and_cut(target: str, path: Path, tmp_path: Path, size: int):
    """The replays (verbose, each clean) of `path` and of its first `size` bytes."""
    cut = tmp_path / ("cut" + path.suffix)
    cut.write_bytes(path.read_bytes()[:size])
    whole = _replay(target, [path], verbose=True)
    _assert_clean(whole, f"{target}: {path.name}")
    short = _replay(target, [cut], verbose=True)
    _assert_clean(short, f"{target}: {path.name} cut to {size} bytes")
    return whole, short


def _codes(stdout: str, prefix: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in stdout.splitlines() if line.startswith(prefix)]


def test_blob_target_reaches_the_xnnpack_reader(tmp_path):
    """The xnnpack_blob target hands a seed blob, cut out of a fixture by
    tests/fuzz/seeds.py, to XnnpackBackend's init with the fixtures' named
    data: the whole blob initialises (code 0), and the same blob cut short is
    refused with a message, so the target really runs the reader."""
    seeds = tmp_path / "seeds"
    subprocess.run([sys.executable, str(REPO / "tests" / "fuzz" / "seeds.py"), "xnnpack_blob",
                    str(seeds)], check=True, timeout=120, capture_output=True)
    blob = seeds / "mlp_xnnpack.0.0.bin"
    assert blob.is_file(), sorted(x.name for x in seeds.iterdir())[:20]
    whole, short = _whole_and_cut("xnnpack_blob", blob, tmp_path, blob.stat().st_size // 2)
    assert _codes(whole.stdout, "init XnnpackBackend") == ["0 "], whole.stdout
    [result] = _codes(short.stdout, "init XnnpackBackend")
    code, _, message = result.partition(" ")
    assert code != "0" and message.strip(), result


def test_program_target_executes_a_fixture():
    """The program target loads a fixture, loads its method and executes it
    with inputs made from the method's metadata: every step ends in code 0."""
    p = _replay("program", [REPO / "models" / "fixtures" / "mlp_xnnpack.pte"], verbose=True)
    _assert_clean(p, "program target on mlp_xnnpack.pte")
    assert "program_load: 0" in p.stdout and "method_load forward: 0" in p.stdout, p.stdout
    assert "execute forward: 0" in p.stdout, p.stdout


def test_npy_target_parses_and_refuses(tmp_path):
    """The npy target accepts a committed .npy and refuses it cut short."""
    good = REPO / "models" / "fixtures" / "mlp.forward.input_0.npy"
    p, short = _whole_and_cut("npy", good, tmp_path, good.stat().st_size - 3)
    assert _codes(p.stdout, "npy") == ["ok"], p.stdout
    [message] = _codes(short.stdout, "npy")
    assert "holds" in message and "data bytes" in message, message


def _sandbox(tmp_path):
    """A copy of what scripts/fuzz.sh reads (scripts/, tests/fuzz/, the npy corpus, the fixtures
    linked), so that a run of it can never change this checkout's kept corpus."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "scripts", root / "scripts")
    shutil.copytree(REPO / "tests" / "fuzz", root / "tests" / "fuzz")
    shutil.copytree(CORPUS / "npy", root / "tests" / "corpus" / "npy")
    (root / "models").mkdir()
    (root / "models" / "fixtures").symlink_to(REPO / "models" / "fixtures")
    return root


def test_fuzz_sh_refuses_bad_arguments(tmp_path):
    """Usage errors exit 2 with the usage line before anything is installed or built: no
    arguments, an unknown target, SECONDS that is not a whole number or is over a week; SECONDS=0
    without an earlier campaign exits 1 naming the missing log."""
    root = _sandbox(tmp_path)
    script = root / "scripts" / "fuzz.sh"
    env = dict(os.environ, PTERON_FUZZ_NO_BUILD="1", PTERON_FUZZ_BUILD_DIR=str(tmp_path / "b"))
    for args in ([], ["npy"], ["jpeg", "5"], ["npy", "5s"], ["npy", "-5"],
                 ["npy", "99999999999999999999"], ["npy", "604801"]):
        r = subprocess.run(["bash", str(script), *args], capture_output=True, text=True,
                           timeout=60, env=env)
        assert r.returncode == 2 and "usage: scripts/fuzz.sh TARGET SECONDS" in r.stderr, \
            (args, r.returncode, r.stderr)
    stub = tmp_path / "b" / "pteron-fuzz-npy"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    r = subprocess.run(["bash", str(script), "npy", "0"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 1 and "npy.log does not exist" in r.stderr, (r.returncode, r.stderr)


def test_fuzz_sh_leaves_the_corpus_when_the_campaign_never_fuzzes(tmp_path):
    """A harness that never starts fuzzing (here a stub that exits at once, as the python
    target did without atheris) makes scripts/fuzz.sh exit 1 and keep every kept input: it once
    emptied the coverage corpus and exited 0."""
    root = _sandbox(tmp_path)
    kept = root / "tests" / "corpus" / "npy"
    before = sorted(p.name for p in kept.iterdir())
    assert any(n.startswith("cov-") for n in before)
    stub = tmp_path / "b" / "pteron-fuzz-npy"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\necho 'the harness failed to start' >&2\nexit 1\n")
    stub.chmod(0o755)
    env = dict(os.environ, PTERON_FUZZ_NO_BUILD="1", PTERON_FUZZ_BUILD_DIR=str(tmp_path / "b"))
    r = subprocess.run(["bash", str(root / "scripts" / "fuzz.sh"), "npy", "3"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 1 and "never reached fuzzing" in r.stderr \
        and "the harness failed to start" in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert sorted(p.name for p in kept.iterdir()) == before
