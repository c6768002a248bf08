# SPDX-License-Identifier: BSD-3-Clause
"""pteron's own kernels for the NHWC window and element-wise XNNPACK node types
(backends/xnnpack/src/kernels/own_elementwise.cpp over runtime/cpu/include/pteron_cpu/nhwc.h):
DepthwiseConv2d, AvgPool2d, MaxPool2d, GlobalAvgPool2d, ResizeBilinear2d,
Softmax, the binary nodes and the unary nodes.

Every program in tests/xnnpack_nodes/nhwc.json (exported by
tests/xnnpack_nodes/export_nhwc.py from upstream's XnnpackPartitioner, with
eager PyTorch's outputs) runs with PTERON_XNNPACK_USE_LIBRARY=none, so every
node runs on pteron's side, and must match eager at each ISA level the CPU
has (baseline, AVX2+FMA, AVX-512) on 1 and 3 threads. The plan
(PTERON_XNNPACK_DEBUG=1) must show no XNNPACK segment and the node types the
program is about. One child process per (ISA, threads) runs every program.

The programs with a "fused" count hold element-wise chains that passes/fusion.cpp's
fuse_elementwise pass fuses at method load (x * sigmoid(x), SiLU, runs as one
Sigmoid node; a Sigmoid, SiLU or Hardswish after a DepthwiseConv2d, Conv2d or
FullyConnected runs inside that node): the plan must count them, and they must match eager both fused
and with the pass switched off (PTERON_XNNPACK_FUSE=0, where a Multiply runs
too), at each ISA level.
"""
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isa_check import missing_for, wide_instructions  # noqa: E402
from conftest import REPO, build_dir

BUILD = build_dir()
NODES = REPO / "tests" / "xnnpack_nodes"
MANIFEST = json.loads((NODES / "nhwc.json").read_text())
PROGRAMS = MANIFEST["programs"]
LIBS = ["kernels_portable", "threadpool", "backend_xnnpack"]
# What the exporter adds around the node types under test.
ADDED = {"StaticTranspose", "StaticReshape", "Copy"}

CHILD = r"""
import json, os, sys
sys.path.insert(0, {tests!r})
import numpy as np
import capi
args = json.loads(sys.argv[1])
rt = capi.Runtime({build!r}, kernel_libs=args["libs"])
res = {{}}
for name, p in args["programs"].items():
    sys.stderr.write("PROGRAM %s\n" % name)
    sys.stderr.flush()
    arrays = np.load(os.path.join(args["dir"], p["arrays"]))
    ins = [arrays["input_%d" % i] for i in range(p["inputs"])]
    try:
        m = rt.load_file(os.path.join(args["dir"], p["file"])).load_method("forward")
        outs = m.run(ins)
        np.savez(os.path.join(args["out"], name + ".npz"), *outs)
        res[name] = {{"outputs": len(outs)}}
    except capi.PteronError as e:
        res[name] = {{"error": [e.code, e.message]}}
    sys.stderr.flush()
print("RESULT " + json.dumps(res))
""".format(tests=str(REPO / "tests"), build=str(BUILD))


def _isa_available(isa):
    return not missing_for(isa)


def _run_all(tmp_path, isa, threads, programs=None, extra_env=None):
    lib = BUILD / "libpteron_backend_xnnpack.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: the Linux build must build backend_xnnpack")
    env = dict(os.environ, PTERON_XNNPACK_USE_LIBRARY="none", PTERON_XNNPACK_DEBUG="1",
               PTERON_ISA=isa, PTERON_NUM_THREADS=str(threads))
    env.update(extra_env or {})
    args = {"libs": LIBS, "programs": programs or PROGRAMS, "dir": str(NODES),
            "out": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                       text=True, timeout=240, env=env)
    assert r.returncode == 0, f"child failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-4000:]}"
    line = next(l for l in r.stdout.splitlines() if l.startswith("RESULT "))
    plans, current = {}, None
    for l in r.stderr.splitlines():
        if l.startswith("PROGRAM "):
            current = l.split(" ", 1)[1]
        elif l.startswith("pteron XnnpackBackend:") and current:
            plans.setdefault(current, []).append(l)
    return json.loads(line[len("RESULT "):]), plans


def _check_program(tmp_path, name, p, res, plans, fuse=True):
    assert "error" not in res[name], f"{name}: {res[name]['error']}"
    # The plan: no XNNPACK segment; the node types under test, and only those
    # plus what the exporter adds.
    assert len(plans.get(name, [])) == 1, f"{name}: plan lines {plans.get(name)}"
    plan = plans[name][0]
    assert " 0 XNNPACK segment(s)" in plan, f"{name}: {plan}"
    own = set(plan.split("pteron runs: ")[1].split(";")[0].split(","))
    want = set(p["nodes_fused"] if fuse and "nodes_fused" in p else p["nodes"])
    assert want <= own, f"{name}: {plan}"
    assert own <= want | ADDED, f"{name}: unexpected node types in {plan}"
    fused = p.get("fused", 0) if fuse else 0
    assert f"fused (PTERON_XNNPACK_FUSE): {fused};" in plan, f"{name}: {plan}"
    got = np.load(tmp_path / f"{name}.npz")
    exp = np.load(NODES / p["arrays"])
    assert res[name]["outputs"] == p["outputs"]
    for i in range(p["outputs"]):
        a, e = got[f"arr_{i}"], exp[f"expected_{i}"]
        assert a.dtype == e.dtype and a.shape == e.shape, f"{name} output {i}: {a.shape}"
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e), err_msg=f"{name}: NaN places")
        np.testing.assert_allclose(a, e, rtol=p["rtol"], atol=p["atol"],
                                   err_msg=f"{name} output {i}")


@pytest.mark.parametrize("isa,threads", [("baseline", 1), ("baseline", 3), ("avx2", 1),
                                         ("avx2", 3), ("avx512", 1), ("avx512", 3)])
def test_every_program_matches_eager_on_pterons_kernels(tmp_path, isa, threads):
    if not _isa_available(isa):
        pytest.skip(f"this CPU has no {isa} (PTERON_ISA can only lower the level): the {isa} "
                    "kernels are compiled but cannot run here")
    res, plans = _run_all(tmp_path, isa, threads)
    failures = []
    for name, p in PROGRAMS.items():
        try:
            _check_program(tmp_path, name, p, res, plans)
        except AssertionError as e:
            failures.append(f"{name}: {str(e)[:600]}")
    assert not failures, f"{len(failures)} of {len(PROGRAMS)} programs failed:\n" + \
        "\n".join(failures)


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_fused_programs_match_eager_fused_and_unfused(tmp_path, isa):
    if not _isa_available(isa):
        pytest.skip(f"this CPU has no {isa}: the {isa} kernels are compiled but cannot run here")
    fused = {n: p for n, p in PROGRAMS.items() if p.get("fused")}
    assert len(fused) >= 3
    for fuse in (True, False):
        out = tmp_path / ("fused" if fuse else "unfused")
        out.mkdir()
        res, plans = _run_all(out, isa, 2, programs=fused,
                              extra_env={"PTERON_XNNPACK_FUSE": "1" if fuse else "0"})
        for name, p in fused.items():
            _check_program(out, name, p, res, plans, fuse=fuse)
        if not fuse:
            for name in fused:  # the pass changes no bit of the result
                a = np.load(tmp_path / "fused" / f"{name}.npz")
                b = np.load(out / f"{name}.npz")
                for k in a.files:
                    np.testing.assert_array_equal(a[k], b[k], err_msg=name)


def test_programs_cover_every_node_type():
    covered = {t for p in PROGRAMS.values() for t in p["nodes"]}
    want = {"DepthwiseConv2d", "AvgPool2d", "MaxPool2d", "GlobalAvgPool2d", "ResizeBilinear2d",
            "Softmax", "Add", "Subtract", "Multiply", "Div", "Minimum", "Maximum", "PReLU",
            "Clamp", "Hardswish", "Sigmoid", "Tanh", "Gelu", "Exp", "Log", "Sin", "Cos", "Abs",
            "Negate", "Floor", "Ceiling", "SquareRoot", "ReciprocalSquareRoot", "Square",
            "LeakyReLU", "ELU"}
    assert want <= covered, sorted(want - covered)
    for name, p in PROGRAMS.items():
        assert (NODES / p["file"]).stat().st_size < 64 * 1024, name


def _patch_pool_flags(pte: bytearray, value):
    """Sets the flags of the first MaxPool2d node (Pooling table, field 12)."""
    from test_xnnpack import _fb_field, _graph, _vector
    _, _, root = _graph(pte)
    nodes_at, n = _vector(pte, _fb_field(pte, root, 1))
    for k in range(n):
        node = nodes_at + 4 * k + struct.unpack_from("<I", pte, nodes_at + 4 * k)[0]
        if pte[_fb_field(pte, node, 0)] == 14:  # MaxPool2d's type id
            params = _fb_field(pte, node, 1)
            params += struct.unpack_from("<I", pte, params)[0]
            at = _fb_field(pte, params, 12)
            assert struct.unpack_from("<I", pte, at)[0] == 0x40  # KEEP_DIMS
            struct.pack_into("<I", pte, at, value)
            return k
    raise AssertionError("no MaxPool2d node")


def test_unsupported_parameter_fails_at_load_naming_node_and_parameter(tmp_path):
    name = "maxpool3x3_s2_p1_c17"
    pte = bytearray((NODES / PROGRAMS[name]["file"]).read_bytes())
    k = _patch_pool_flags(pte, 0x44)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "p.pte").write_bytes(bytes(pte))
    prog = dict(PROGRAMS[name], file="p.pte",
                arrays=str((NODES / PROGRAMS[name]["arrays"]).resolve()))
    lib = BUILD / "libpteron_backend_xnnpack.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing")
    env = dict(os.environ, PTERON_XNNPACK_USE_LIBRARY="none")
    args = {"libs": LIBS, "programs": {name: prog}, "dir": str(tmp_path / "in"),
            "out": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    res = json.loads(next(l for l in r.stdout.splitlines() if l.startswith("RESULT "))[7:])
    code, message = res[name]["error"]
    assert code == 12, message  # PTERON_ERROR_NOT_SUPPORTED
    assert f"node {k} (MaxPool2d): flags 68 are not supported" in message, message


def test_wide_instructions_only_in_the_wide_kernel_objects():
    """Disassembles backend_xnnpack: an AVX (VEX) instruction may appear only
    in a function of an AVX2 or AVX-512 object of pteron_cpu (namespace
    pteron_cpu::isa_<level> or its Eigen, pteron_eigen_<level>), an AVX-512
    one only in the AVX-512 object: the drivers in nhwc.cpp and the
    delegate's code run on any x86-64-v2 CPU."""
    import shutil
    if sys.platform != "linux" or not shutil.which("objdump"):
        pytest.skip("needs Linux binutils (objdump)")
    lib = BUILD / "libpteron_backend_xnnpack.so"
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", str(lib)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    if "nhwc_ops_avx2" not in out:
        pytest.skip("library is stripped or has no x86 ISA objects")
    bad, seen = wide_instructions(out)
    assert not bad, f"wide instructions outside the wide objects: {sorted(bad)[:10]}"
    assert seen["avx512"] > 0 and seen["avx2"] > 0  # the check is not vacuous
