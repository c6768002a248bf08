# SPDX-License-Identifier: BSD-3-Clause
"""pteron's own kernels for the XNNPACK linear node types
(backends/xnnpack/src/kernels/own_linear.cpp on the packed GEMM of
runtime/cpu/include/pteron_cpu/gemm.h): FullyConnected, Conv2d, ConvTranspose2d and BatchMatMul.

Each small program of tests/xnnpack_nodes/linear.json (exported by export_linear.py, inputs and
eager PyTorch outputs in its .npz) runs through pteron-run with PTERON_XNNPACK_USE_LIBRARY=none,
so every node runs on pteron's side (the debug line must show no XNNPACK segment and name the
node type under test), and matches eager at every GEMM microkernel level (PTERON_ISA=baseline,
avx2, avx512; a level the CPU lacks is skipped, saying so) and at 1 and 3 threads (3 on a 2-core
machine also exercises uneven tile splits), and once over two executions (the output of the
second, which reuses the state the first one built). gemm_check.cpp tests the GEMM itself against a
double-precision reference at each level (and that PTERON_ISA chose that level).
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from isa_check import missing_for  # noqa: E402
from conftest import REPO, assert_matches, build_dir

BUILD = build_dir()
NODES = REPO / "tests" / "xnnpack_nodes"
MANIFEST = json.loads((NODES / "linear.json").read_text())
CASES = sorted(MANIFEST["cases"])


def _need_isa(isa):
    missing = missing_for(isa)
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)}: the {isa} microkernels cannot run here")


def _run(case, tmp_path, isa, threads, iterations=1):
    spec = MANIFEST["cases"][case]
    data = np.load(NODES / spec["npz"])
    cmd = [str(BUILD / "pteron-run"), str(NODES / spec["pte"]), "--output-dir", str(tmp_path),
           "--iterations", str(iterations)]
    for i in range(spec["inputs"]):
        p = tmp_path / f"input_{i}.npy"
        np.save(p, data[f"input_{i}"])
        cmd += ["--input", str(p)]
    env = dict(os.environ, PTERON_XNNPACK_USE_LIBRARY="none", PTERON_XNNPACK_DEBUG="1",
               PTERON_ISA=isa, PTERON_NUM_THREADS=str(threads))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    return spec, data, r


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("case", CASES)
def test_linear_node_runs_on_pterons_side_and_matches_eager(tmp_path, case, isa):
    _need_isa(isa)
    # The second execution reuses what the first one built (a convolution's indirection buffer:
    # pointers into the arena, edge copies refreshed from the new input).
    for threads, iterations in ((1, 1), (3, 1), (1, 2)):
        out = tmp_path / f"t{threads}i{iterations}"
        out.mkdir()
        spec, data, r = _run(case, out, isa, threads, iterations)
        what = f"{case} at PTERON_ISA={isa}, {threads} thread(s), {iterations} execution(s)"
        assert r.returncode == 0, f"{what}: {r.stderr}"
        plans = [ln for ln in r.stderr.splitlines() if ln.startswith("pteron XnnpackBackend:")]
        assert plans, f"{what}: no delegate debug line: {r.stderr}"
        for ln in plans:
            assert " 0 XNNPACK segment(s)" in ln, f"{what}: {ln}"
        own = ",".join(ln.split("pteron runs: ")[1].split(";")[0] for ln in plans).split(",")
        for node in spec["nodes"]:
            assert node in own, f"{what}: {node} not run by pteron: {plans}"
        for i in range(spec["outputs"]):
            assert_matches(np.load(out / f"output_{i}.npy"), data[f"expected_{i}"], spec["rtol"],
                           spec["atol"], f"{what}, output {i}")


def test_programs_stay_small():
    for case in CASES:
        spec = MANIFEST["cases"][case]
        for key in ("pte", "npz"):
            size = (NODES / spec[key]).stat().st_size
            assert size < 200_000, f"{spec[key]} is {size} bytes"


@pytest.fixture(scope="module")
def gemm_check(tmp_path_factory):
    """tests/xnnpack_nodes/gemm_check.cpp built against the build's libpteron_cpu.a."""
    lib = BUILD / "runtime" / "cpu" / "libpteron_cpu.a"
    cxx = shutil.which("c++") or shutil.which("g++")
    if not lib.exists() or not cxx:
        pytest.skip(f"needs {lib} and a C++ compiler")
    exe = tmp_path_factory.mktemp("gemm") / "gemm_check"
    r = subprocess.run([cxx, "-std=c++17", "-O1", str(NODES / "gemm_check.cpp"),
                        f"-I{REPO / 'runtime' / 'cpu' / 'include'}", f"-I{REPO / 'include'}",
                        str(lib), f"-L{BUILD}", "-lpteron", f"-Wl,-rpath,{BUILD}", "-o", str(exe)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_packed_gemm_matches_a_reference_at_every_level(gemm_check, isa):
    """Every microkernel level against a double-precision reference: M, N, K around the block
    sizes, both weight layouts, bias or none, row strides, the fused clamp, NaN kept; the
    indirect GEMM (rows as K segments) likewise; the 2-D transpose's register blocks and
    interleaves, exactly."""
    _need_isa(isa)
    r = subprocess.run([str(gemm_check)], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PTERON_ISA=isa))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().startswith(f"{isa}: 1008 cases, 336 indirect, 240 transposes, 0 bad"), r.stdout
