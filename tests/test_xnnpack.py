# SPDX-License-Identifier: BSD-3-Clause
"""The XNNPACK delegate (backend_xnnpack, delegate id XnnpackBackend).

Each XNNPACK-lowered fixture (upstream XnnpackPartitioner, default
configuration) matches eager PyTorch within rtol 1e-4 / atol 1e-5 through the
C API and through pteron-run; each runs as the expected number of XNNPACK
segments with the expected node types executed by pteron's own code; a dynamic
batch within the bounds runs (and beyond them is refused); malformed blobs
fail cleanly at method load. The C API checks run in a child process, so the
backend registered there never leaks into the session's registry (where
test_errors expects XnnpackBackend to be missing).
"""
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, REPO, assert_matches, build_dir, manifest, xnnpack_library_linked
from isa_check import missing_for

BUILD = build_dir()
LIBS = ["kernels_portable", "threadpool", "backend_xnnpack"]
XNN_FIXTURES = [f["name"] for f in manifest()["fixtures"] if "XnnpackBackend" in f["delegates"]]

# Per fixture, per delegate call: (XNNPACK segments, node types pteron runs
# itself) with Debian 12's XNNPACK (no static transpose or batch matmul).
# A newer XNNPACK with those nodes runs fewer segments (checked loosely).
SEGMENTS_DEBIAN12 = {
    "mlp_xnnpack": [(1, "(none)")],
    "cnn_xnnpack": [(1, "StaticTranspose")],
    "dwsep_xnnpack": [(1, "StaticTranspose")],
    "dynamic_batch_xnnpack": [(1, "(none)")],
    "transformer_xnnpack": [(1, "StaticTranspose"), (1, "StaticTranspose,BatchMatMul"),
                            (2, "BatchMatMul,StaticTranspose"), (2, "Gelu")],
    "ops_xnnpack": [(2, "StaticTranspose,Concatenate3,StaticSlice,Concatenate2,Tanh,Exp,Log,"
                        "Sin,Cos,ReciprocalSquareRoot,Gelu")],
    "concat_chain_xnnpack": [(3, "StaticTranspose,Concatenate5,Concatenate3,Concatenate2")],
    "preact_xnnpack": [(3, "StaticTranspose,Concatenate2")],
    "residual_xnnpack": [(1, "StaticTranspose")],
    "inverted_xnnpack": [(1, "StaticTranspose")],
}


def _fixture(name):
    return next(f for f in manifest()["fixtures"] if f["name"] == name)


def _require_backend():
    lib = BUILD / "libpteron_backend_xnnpack.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: the Linux build must build backend_xnnpack "
                    "(scripts/test.sh installs libxnnpack-dev)")


CHILD = r"""
import json, os, sys
sys.path.insert(0, {tests!r})
import numpy as np
import capi
args = json.loads(sys.argv[1])
rt = capi.Runtime({build!r}, kernel_libs=args["libs"])
out = {{"backends": [b for b in rt.backends()]}}
F = {fixtures!r}
def load(path):
    return rt.load_file(path).load_method(args.get("method", "forward"))
try:
    task = args["task"]
    if task == "run":
        m = load(os.path.join(F, args["file"]))
        outs = m.run([np.load(os.path.join(F, p)) for p in args["inputs"]])
        for i, a in enumerate(outs):
            np.save(os.path.join(args["out"], "output_%d.npy" % i), a)
        out["outputs"] = len(outs)
        out["process_threads"] = len(os.listdir("/proc/self/task"))
    elif task == "pool_change":
        import ctypes
        tp = rt.kernel_libs[args["libs"].index("threadpool")]
        tp.pteron_threadpool_set_num_threads.argtypes = [ctypes.c_size_t]
        tp.pteron_threadpool_num_threads.restype = ctypes.c_size_t
        m = load(os.path.join(F, args["file"]))
        ins = [np.load(os.path.join(F, p)) for p in args["inputs"]]
        first = m.run(ins)[0]
        out["runs"] = []
        for n in args["threads"]:
            assert tp.pteron_threadpool_set_num_threads(n) == 0
            again = m.run(ins)[0]
            out["runs"].append([int(tp.pteron_threadpool_num_threads()),
                                float(np.abs(again - first).max())])
    elif task == "load":
        load(args["path"])
        out["loaded"] = True
    elif task == "batches":
        ref = load(os.path.join(F, "dynamic_batch.pte"))
        xnn = load(os.path.join(F, "dynamic_batch_xnnpack.pte"))
        rng = np.random.default_rng(7)
        out["max_abs"] = []
        for b in args["batches"]:
            x = rng.standard_normal((b, 12)).astype(np.float32)
            r = ref.run([x])[0]
            a = xnn.run([x])[0]
            assert a.shape == (b, 6), a.shape
            np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)
            out["max_abs"].append(float(np.abs(a - r).max()))
        try:
            xnn.run([np.zeros((9, 12), np.float32)])
            out["beyond_bound"] = "ran"
        except capi.PteronError as e:
            out["beyond_bound"] = [e.code, e.message]
    elif task == "zero_batch":
        x = np.zeros((0, 12), np.float32)
        for key, name in (("portable", "dynamic_batch.pte"), ("xnnpack", "dynamic_batch_xnnpack.pte")):
            a = load(os.path.join(F, name)).run([x])[0]
            out[key] = [str(a.dtype), list(a.shape)]
        # A batch of 0 between non-empty ones: the variants stay usable.
        xnn = load(os.path.join(F, "dynamic_batch_xnnpack.pte"))
        ref = load(os.path.join(F, "dynamic_batch.pte"))
        x3 = np.random.default_rng(3).standard_normal((3, 12)).astype(np.float32)
        xnn.run([x3]); xnn.run([x])
        out["after"] = float(np.abs(xnn.run([x3])[0] - ref.run([x3])[0]).max())
    elif task == "run_patched":
        m = load(args["path"])
        ins = [np.load(os.path.join(F, p)) for p in args["inputs"]]
        res = m.run(ins)
        for i, a in enumerate(ins + res):
            np.save(os.path.join(args["out"], "array_%d.npy" % i), a)
        out["ran"] = len(res)
except capi.PteronError as e:
    out["error"] = [e.code, e.message]
print("RESULT " + json.dumps(out))
""".format(tests=str(REPO / "tests"), build=str(BUILD), fixtures=str(FIXTURES))


def run_child(args, env_extra=None, timeout=120):
    _require_backend()
    env = dict(os.environ)
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"child crashed or failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    line = next(l for l in r.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):]), r.stderr


def test_every_xnnpack_fixture_is_lowered_and_listed():
    assert sorted(XNN_FIXTURES) == sorted(SEGMENTS_DEBIAN12)
    for name in XNN_FIXTURES:
        fx = _fixture(name)
        assert (fx["rtol"], fx["atol"]) == (1e-4, 1e-5), name
        assert fx["uses_only_supported_operators"], name


@pytest.mark.parametrize("name", XNN_FIXTURES)
def test_xnnpack_fixture_matches_eager_through_c_api(tmp_path, name):
    fx = _fixture(name)
    spec = fx["methods"]["forward"]
    res, err = run_child({"task": "run", "libs": LIBS, "file": fx["file"],
                          "inputs": spec["inputs"], "out": str(tmp_path)})
    assert "error" not in res, res["error"]
    assert any(b["id"] == "XnnpackBackend" and b["library"] == "backend_xnnpack"
               for b in res["backends"]), res["backends"]
    assert res["outputs"] == len(spec["expected"])
    for i, p in enumerate(spec["expected"]):
        assert_matches(np.load(tmp_path / f"output_{i}.npy"), np.load(FIXTURES / p),
                       fx["rtol"], fx["atol"], f"{name} output {i}")


@pytest.mark.parametrize("side", ["default", "all"])
@pytest.mark.parametrize("name", XNN_FIXTURES)
def test_xnnpack_fixture_matches_eager_through_pteron_run(tmp_path, name, side):
    """By default every node runs on pteron's kernels (no segment); with
    PTERON_XNNPACK_USE_LIBRARY=all the linked library takes what it can
    define, in the segments Debian 12's XNNPACK allows."""
    _require_backend()
    if side == "all" and not xnnpack_library_linked():
        pytest.skip("this build links no XNNPACK library")
    fx = _fixture(name)
    spec = fx["methods"]["forward"]
    cmd = [str(BUILD / "pteron-run"), str(FIXTURES / fx["file"]), "--output-dir", str(tmp_path),
           "--iterations", "3"]
    for p in spec["inputs"]:
        cmd += ["--input", str(FIXTURES / p)]
    env = dict(os.environ, PTERON_XNNPACK_DEBUG="1")
    env.pop("PTERON_XNNPACK_USE_LIBRARY", None)
    if side == "all":
        env["PTERON_XNNPACK_USE_LIBRARY"] = "all"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    for i, p in enumerate(spec["expected"]):
        assert_matches(np.load(tmp_path / f"output_{i}.npy"), np.load(FIXTURES / p),
                       fx["rtol"], fx["atol"], f"pteron-run {name} output {i}")
    # Segments and pteron's own node types, one line per delegate call.
    got = []
    for line in r.stderr.splitlines():
        if line.startswith("pteron XnnpackBackend:"):
            segs = int(line.split(" XNNPACK segment")[0].rsplit(" ", 1)[1])
            own = line.split("pteron runs: ")[1].split(";")[0]
            got.append((segs, own))
    expected = SEGMENTS_DEBIAN12[name]
    assert len(got) == len(expected), r.stderr
    if side == "default":
        assert all(g[0] == 0 for g in got), r.stderr
        assert all(g[1] != "(none)" for g in got), r.stderr
    elif "static transpose" in _xnnpack_description():
        assert got == expected, r.stderr
    else:  # a newer XNNPACK: never more segments than with Debian 12's
        assert all(g[0] <= e[0] for g, e in zip(got, expected)), r.stderr


def _xnnpack_description():
    cfg = BUILD / "backends" / "xnnpack" / "generated" / "xnn_config.h"
    text = cfg.read_text()
    return text.split('PTERON_XNN_DESCRIPTION "')[1].split('"')[0]


def test_new_batch_sizes_within_bounds_run_and_beyond_is_refused():
    res, _ = run_child({"task": "batches", "libs": LIBS, "batches": [1, 3, 8, 5, 3, 1, 8]})
    assert "error" not in res, res.get("error")
    assert len(res["max_abs"]) == 7
    code, message = res["beyond_bound"]
    assert code == 7, message  # PTERON_ERROR_SHAPE_MISMATCH
    assert "9" in message


def test_backend_runs_on_the_threadpool_it_imports(tmp_path):
    """With PTERON_NUM_THREADS=2 the process has the caller plus one worker:
    XNNPACK did not start a pool of its own."""
    fx = _fixture("cnn_xnnpack")
    res, _ = run_child({"task": "run", "libs": LIBS, "file": fx["file"],
                        "inputs": fx["methods"]["forward"]["inputs"], "out": str(tmp_path)},
                       env_extra={"PTERON_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "1",
                                  "OMP_NUM_THREADS": "1"})
    assert "error" not in res, res.get("error")
    assert res["process_threads"] == 2, res
    from elftools.elf.elffile import ELFFile
    with open(BUILD / "libpteron_backend_xnnpack.so", "rb") as f:
        dyn = ELFFile(f).get_section_by_name(".dynamic")
        needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    assert any(n.startswith("libpteron_threadpool.so") for n in needed), needed
    assert any(n.startswith("libpteron.so") for n in needed), needed
    assert not any("pthreadpool" in n for n in needed), needed


def test_replacing_the_thread_pool_between_runs_rebuilds_the_runtimes():
    """pteron_threadpool_set_num_threads() destroys the old pthreadpool; the
    delegate notices and re-creates its XNNPACK runtimes on the new one."""
    fx = _fixture("cnn_xnnpack")
    res, _ = run_child({"task": "pool_change", "libs": LIBS, "file": fx["file"],
                        "inputs": fx["methods"]["forward"]["inputs"], "threads": [1, 2, 3, 1]})
    assert "error" not in res, res.get("error")
    assert [r[0] for r in res["runs"]] == [1, 2, 3, 1]
    assert all(r[1] <= 1e-5 for r in res["runs"]), res["runs"]


# ---- malformed blobs: clean errors at method load ---------------------------

def _blob_span(pte: bytes):
    """(start, size field) of the first XNNPACK blob of a .pte: where the blob
    starts, and where the program records its length (the size of the data
    segment holding it, which upstream 1.5.1 uses for delegate blobs)."""
    start = pte.index(b"XH00") - 4
    assert pte[4:8] == b"ET12" and pte[8:12] == b"eh00"
    base = struct.unpack_from("<Q", pte, 24)[0]  # extended header: segment base offset
    root = struct.unpack_from("<I", pte, 0)[0]
    segs_at, n = _vector(pte, _fb_field(pte, root, 4))  # Program.segments
    for k in range(n):
        seg = segs_at + 4 * k + struct.unpack_from("<I", pte, segs_at + 4 * k)[0]
        off_at, size_at = _fb_field(pte, seg, 0), _fb_field(pte, seg, 1)
        off = struct.unpack_from("<Q", pte, off_at)[0] if off_at else 0
        if base + off == start and size_at:  # (an empty segment may start there too)
            return start, size_at
    raise AssertionError("the XNNPACK blob is not in a data segment")


def _fb_field(buf, table, field):
    """Absolute offset of `field` of the flatbuffer table at `table`, or None."""
    vt = table - struct.unpack_from("<i", buf, table)[0]
    vt_len = struct.unpack_from("<H", buf, vt)[0]
    if 4 + 2 * field >= vt_len:
        return None
    off = struct.unpack_from("<H", buf, vt + 4 + 2 * field)[0]
    return table + off if off else None


def _graph(pte):
    start, _ = _blob_span(pte)
    fb_off, = struct.unpack_from("<I", pte, start + 10)
    fb = start + fb_off
    root = fb + struct.unpack_from("<I", pte, fb)[0]
    return start, fb, root


def _vector(buf, at):
    vec = at + struct.unpack_from("<I", buf, at)[0]
    return vec + 4, struct.unpack_from("<I", buf, vec)[0]


def _load_patched(tmp_path, pte: bytearray):
    path = tmp_path / "patched.pte"
    path.write_bytes(bytes(pte))
    res, _ = run_child({"task": "load", "libs": LIBS, "path": str(path)})
    assert "loaded" not in res, "a malformed blob loaded"
    return res["error"]


def test_truncated_blob_fails_at_load(tmp_path):
    pte = bytearray((FIXTURES / "mlp_xnnpack.pte").read_bytes())
    start, size_at = _blob_span(pte)
    length = struct.unpack_from("<Q", pte, size_at)[0]
    assert length > 600
    struct.pack_into("<Q", pte, size_at, length // 2)  # the blob now ends mid-graph
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message  # PTERON_ERROR_INVALID_PROGRAM
    assert "XnnpackBackend" in message and "truncated blob" in message, message


def test_blob_shorter_than_its_header_fails_at_load(tmp_path):
    pte = bytearray((FIXTURES / "mlp_xnnpack.pte").read_bytes())
    _, size_at = _blob_span(pte)
    struct.pack_into("<Q", pte, size_at, 20)
    code, message = _load_patched(tmp_path, pte)
    assert code == 2 and "truncated blob" in message and "30" in message, message


def test_corrupted_flatbuffer_fails_verification_at_load(tmp_path):
    pte = bytearray((FIXTURES / "mlp_xnnpack.pte").read_bytes())
    _, fb, root = _graph(pte)
    # Point the values vector far outside the graph.
    values = _fb_field(pte, root, 2)
    struct.pack_into("<I", pte, values, 0x7FFFFF00)
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message
    assert "corrupt" in message and "verification" in message, message


def test_out_of_range_value_id_fails_at_load(tmp_path):
    pte = bytearray((FIXTURES / "mlp_xnnpack.pte").read_bytes())
    _, _, root = _graph(pte)
    inputs_at, n = _vector(pte, _fb_field(pte, root, 4))
    assert n == 1
    struct.pack_into("<I", pte, inputs_at, 999)
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message
    assert "value id 999" in message and "out of range" in message, message


def test_out_of_range_node_operand_fails_at_load(tmp_path):
    pte = bytearray((FIXTURES / "mlp_xnnpack.pte").read_bytes())
    _, _, root = _graph(pte)
    nodes_at, n = _vector(pte, _fb_field(pte, root, 1))
    node1 = nodes_at + 4 + struct.unpack_from("<I", pte, nodes_at + 4)[0]
    params = _fb_field(pte, node1, 1)
    params += struct.unpack_from("<I", pte, params)[0]
    weight = _fb_field(pte, params, 1)  # FullyConnected: input, weight, bias, output, flags
    struct.pack_into("<I", pte, weight, 4242)
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message
    assert "node 1 (FullyConnected) reads value id 4242" in message, message


def test_conv_retyped_as_conv_transpose_loads_on_pterons_kernel(tmp_path):
    """A conv retyped as ConvTranspose2d (same parameter table; 3x3 stride 1 pad 1 keeps the
    shape): the linked XNNPACK has no such node, pteron's own kernel (own_linear.cpp) runs it,
    so method load succeeds. (Before pteron had that kernel this load failed naming the type.)"""
    pte = bytearray((FIXTURES / "cnn_xnnpack.pte").read_bytes())
    _, _, root = _graph(pte)
    nodes_at, n = _vector(pte, _fb_field(pte, root, 1))
    node1 = nodes_at + 4 + struct.unpack_from("<I", pte, nodes_at + 4)[0]
    type_at = _fb_field(pte, node1, 0)
    assert pte[type_at] == 7  # Conv2d
    pte[type_at] = 39  # ConvTranspose2d
    path = tmp_path / "patched.pte"
    path.write_bytes(bytes(pte))
    res, _ = run_child({"task": "load", "libs": LIBS, "path": str(path)})
    assert res.get("loaded"), res


def test_wrong_external_count_fails_at_load_not_at_execute(tmp_path):
    pte = bytearray((FIXTURES / "mlp_xnnpack.pte").read_bytes())
    _, _, root = _graph(pte)
    at = _fb_field(pte, root, 3)  # Graph.num_externals
    assert struct.unpack_from("<I", pte, at)[0] == 2
    struct.pack_into("<I", pte, at, 5)
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message
    assert "declares 5 external values but has 1 inputs and 1 outputs" in message, message


# ---- bad or edge-case input: an error naming the thing, never an abort ------

def test_zero_batch_gives_the_empty_output_pytorch_gives():
    """A batch of 0 is within the dynamic bounds: the delegate returns the
    empty [0, 6] result (as the portable program does) without calling
    XNNPACK, which asserts on zero-size tensors."""
    res, _ = run_child({"task": "zero_batch", "libs": LIBS})
    assert "error" not in res, res.get("error")
    assert res["portable"] == ["float32", [0, 6]], res
    assert res["xnnpack"] == res["portable"], res
    assert res["after"] <= 1e-5, res


def test_node_without_parameters_fails_at_load(tmp_path):
    # A node type whose parameter table is absent passes the flatbuffers
    # Verifier (an absent union value is legal); it must be refused by name,
    # not dereferenced.
    pte = bytearray((FIXTURES / "cnn_xnnpack.pte").read_bytes())
    _, _, root = _graph(pte)
    nodes_at, n = _vector(pte, _fb_field(pte, root, 1))
    node1 = nodes_at + 4 + struct.unpack_from("<I", pte, nodes_at + 4)[0]
    vt = node1 - struct.unpack_from("<i", pte, node1)[0]
    assert _fb_field(pte, node1, 1) is not None
    struct.pack_into("<H", pte, vt + 4 + 2 * 1, 0)  # Node.op: absent
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message
    assert "has no parameters" in message, message


def _node_params(pte, k):
    """Absolute offset of node k's parameter table."""
    _, _, root = _graph(pte)
    nodes_at, _ = _vector(pte, _fb_field(pte, root, 1))
    node = nodes_at + 4 * k + struct.unpack_from("<I", pte, nodes_at + 4 * k)[0]
    params = _fb_field(pte, node, 1)
    return params + struct.unpack_from("<I", pte, params)[0]


def _patch_param(pte, k, field, value, expect=None):
    at = _fb_field(pte, _node_params(pte, k), field)
    assert at is not None, f"node {k} field {field} is not stored"
    if expect is not None:
        assert struct.unpack_from("<I", pte, at)[0] == expect
    struct.pack_into("<I", pte, at, value)


def test_dead_intermediate_value_gets_storage(tmp_path):
    """dwsep_xnnpack with the Add reading the depthwise bias instead of the
    Hardswish result: Hardswish's output is read by no one. XNNPACK gives
    such a value no memory and aborts writing it; the delegate gives it a
    buffer, and the program computes x + bias per channel."""
    fx = _fixture("dwsep_xnnpack")
    pte = bytearray((FIXTURES / fx["file"]).read_bytes())
    _patch_param(pte, 4, 1, 4, expect=8)  # node 4 (Add): b = value 8 (Hardswish) -> 4 (bias)
    path = tmp_path / "dead.pte"
    path.write_bytes(bytes(pte))
    res, _ = run_child({"task": "run_patched", "libs": LIBS, "path": str(path),
                        "inputs": fx["methods"]["forward"]["inputs"], "out": str(tmp_path)})
    assert "error" not in res, res.get("error")
    x, y = np.load(tmp_path / "array_0.npy"), np.load(tmp_path / "array_1.npy")
    assert y.shape == x.shape
    delta = y - x  # the bias, per channel (NCHW)
    np.testing.assert_allclose(delta, np.broadcast_to(delta[:, :, :1, :1], delta.shape),
                               atol=1e-5)


@pytest.mark.parametrize("pad", [12386305, 196609, 100000, 1000])
def test_pad_that_changes_a_declared_shape_fails_at_load_naming_it(tmp_path, pad):
    """One corrupt byte of a DepthwiseConv2d's pad_left: absurd values are
    refused naming the parameter; smaller ones make the inferred shape of
    value 3 differ from the shape the blob declares, which is refused naming
    the value, the node and both shapes (before: a 17 GB allocation or a
    segfault, or a silently different result)."""
    pte = bytearray((FIXTURES / "dwsep_xnnpack.pte").read_bytes())
    _patch_param(pte, 1, 3, pad, expect=1)  # node 1 (DepthwiseConv2d): pad_left
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message  # PTERON_ERROR_INVALID_PROGRAM
    assert "node 1 (DepthwiseConv2d)" in message, message
    if pad > 1 << 20:
        assert f"pad_left {pad} is out of range" in message, message
    else:
        assert (f"value id 3, written by node 1 (DepthwiseConv2d), has shape [1, 12, {11 + pad}, 8]"
                " but the graph declares [1, 12, 12, 8]") in message, message


@pytest.mark.parametrize("field,name", [(6, "stride_h"), (4, "kernel_h"), (9, "dilation_w")])
def test_zero_window_parameter_is_named(tmp_path, field, name):
    pte = bytearray((FIXTURES / "dwsep_xnnpack.pte").read_bytes())
    _patch_param(pte, 1, field, 0)
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message
    assert f"node 1 (DepthwiseConv2d): {name} 0" in message, message


def test_declared_intermediate_dim_of_zero_fails_at_load(tmp_path):
    """The blob declares value 3 as [1, 12, 0, 8]; the graph computes
    [1, 12, 12, 8]. Before, the declaration was ignored."""
    pte = bytearray((FIXTURES / "dwsep_xnnpack.pte").read_bytes())
    _, _, root = _graph(pte)
    values_at, n = _vector(pte, _fb_field(pte, root, 2))
    value = values_at + 4 * 3 + struct.unpack_from("<I", pte, values_at + 4 * 3)[0]
    tensor = _fb_field(pte, value, 1)
    tensor += struct.unpack_from("<I", pte, tensor)[0]
    shape_at, rank = _vector(pte, _fb_field(pte, tensor, 2))
    assert rank == 4 and struct.unpack_from("<I", pte, shape_at + 8)[0] == 12
    struct.pack_into("<I", pte, shape_at + 8, 0)
    code, message = _load_patched(tmp_path, pte)
    assert code == 2, message
    assert "has shape [1, 12, 12, 8] but the graph declares [1, 12, 0, 8]" in message, message


def _tensor_dims_at(pte, value_index):
    """Absolute offset and rank of the dims vector of the blob's value at `value_index`."""
    _, _, root = _graph(pte)
    values_at, _ = _vector(pte, _fb_field(pte, root, 2))
    value = values_at + 4 * value_index + struct.unpack_from("<I", pte, values_at + 4 * value_index)[0]
    tensor = _fb_field(pte, value, 1)
    tensor += struct.unpack_from("<I", pte, tensor)[0]
    return _vector(pte, _fb_field(pte, tensor, 2))


@pytest.mark.parametrize("fuse", ["", "0"])
@pytest.mark.parametrize("what", ["filter", "output"])
def test_a_node_a_fusion_removes_is_checked_as_if_it_stayed(tmp_path, fuse, what):
    """preact_xnnpack's node 1 is a 1x1 DepthwiseConv2d (a batch norm) that fuse_channel_affine
    removes into the Conv2d after it. With its filter declared [20, 1, 1, 1] instead of
    [1, 1, 1, 20] (the same count), or its output declared [2, 9, 6, 20] instead of
    [2, 9, 7, 20], the program is malformed: method load fails naming node 1, with the fusion
    as without it (before, the fused program loaded and ran)."""
    pte = bytearray((FIXTURES / "preact_xnnpack.pte").read_bytes())
    params = _node_params(pte, 1)
    field = 16 if what == "filter" else 18  # _XNNNodeConv: filter_id, output_id
    vid = struct.unpack_from("<I", pte, _fb_field(pte, params, field))[0]
    dims_at, rank = _tensor_dims_at(pte, vid)
    dims = list(struct.unpack_from(f"<{rank}I", pte, dims_at))
    if what == "filter":
        assert dims == [1, 1, 1, 20], dims
        new = [20, 1, 1, 1]
    else:
        assert dims == [2, 9, 7, 20], dims
        new = [2, 9, 6, 20]
    struct.pack_into(f"<{rank}I", pte, dims_at, *new)
    path = tmp_path / "patched.pte"
    path.write_bytes(bytes(pte))
    env = {"PTERON_XNNPACK_USE_LIBRARY": "none"}
    if fuse:
        env["PTERON_XNNPACK_FUSE"] = fuse
    res, _ = run_child({"task": "load", "libs": LIBS, "path": str(path)}, env_extra=env)
    assert "loaded" not in res, f"a malformed program loaded (FUSE={fuse!r})"
    code, message = res["error"]
    assert code == 2, message  # PTERON_ERROR_INVALID_PROGRAM
    assert "node 1 (DepthwiseConv2d)" in message, message
    if what == "filter":
        assert "weight shape does not match" in message, message
    else:
        assert "has shape [2, 9, 7, 20] but the graph declares [2, 9, 6, 20]" in message, message


# ---- pteron's own kernels, the side of each node, the plan -------------------

XNN_DIR = REPO / "tests" / "xnnpack"
NO_OWN_KERNEL = "pteron has no kernel for it"


def _xnn_fixture(name):
    """The manifest entry of tests/xnnpack/<name>.pte."""
    fixtures = json.loads((XNN_DIR / "manifest.json").read_text())["fixtures"]
    return next(f for f in fixtures if f["name"] == name)


def _layout():
    return _xnn_fixture("layout_xnnpack")


def _run_matching(tmp_path, entry, use):
    """_run_debug with PTERON_XNNPACK_USE_LIBRARY=use; asserts that it ran, that every output
    matches eager and that one delegate summary was printed."""
    r, nodes, summary = _run_debug(tmp_path, XNN_DIR, entry, {"PTERON_XNNPACK_USE_LIBRARY": use})
    assert r.returncode == 0, r.stderr
    for i, p in enumerate(entry["methods"]["forward"]["expected"]):
        assert_matches(np.load(tmp_path / f"output_{i}.npy"), np.load(XNN_DIR / p),
                       entry["rtol"], entry["atol"], f"{entry['name']} output {i}")
    assert len(summary) == 1, r.stderr
    return r, nodes, summary


def _run_debug(tmp_path, folder, entry, env_extra):
    """pteron-run on one program with PTERON_XNNPACK_DEBUG=1: (completed
    process, node lines, summary lines)."""
    _require_backend()
    cmd = [str(BUILD / "pteron-run"), str(folder / entry["file"]), "--output-dir", str(tmp_path),
           "--iterations", "2"]
    for p in entry["methods"]["forward"]["inputs"]:
        cmd += ["--input", str(folder / p)]
    env = dict(os.environ, PTERON_XNNPACK_DEBUG="1", **env_extra)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    nodes = [l for l in r.stderr.splitlines() if l.startswith("pteron XnnpackBackend node ")]
    summary = [l for l in r.stderr.splitlines() if l.startswith("pteron XnnpackBackend:")]
    return r, nodes, summary


def _run_matching_eager(tmp_path, name, env_extra, label):
    """_run_debug on fixture `name`: it succeeds and every output matches eager. Returns (node
    lines, summary lines)."""
    fx = _fixture(name)
    r, nodes, summary = _run_debug(tmp_path, FIXTURES, fx, env_extra)
    assert r.returncode == 0, r.stderr
    for i, p in enumerate(fx["methods"]["forward"]["expected"]):
        assert_matches(np.load(tmp_path / f"output_{i}.npy"), np.load(FIXTURES / p),
                       fx["rtol"], fx["atol"], f"{label} output {i}")
    return nodes, summary


def _field(summary, name):
    return int(re.match(r"\d+", summary.split(name + ": ")[1]).group(0))


@pytest.mark.parametrize("use", ["none", ""])
def test_layout_program_runs_on_pterons_kernels_and_matches_eager(tmp_path, use):
    """tests/xnnpack/layout_xnnpack: transposes, slices, concatenations, a
    constant pad and reshapes. With PTERON_XNNPACK_USE_LIBRARY=none (and in a
    build with no XNNPACK library) every node runs on pteron's side."""
    r, nodes, summary = _run_matching(tmp_path, _layout(), use)
    assert len(nodes) == int(summary[0].split(": ")[1].split(" nodes")[0]), r.stderr
    if use == "none" or "none linked" in summary[0]:
        assert all(" on pteron" in l for l in nodes), nodes
        assert " 0 XNNPACK segment(s)" in summary[0], summary
        assert "StaticConstantPad" in summary[0].split("pteron runs: ")[1].split(";")[0]


def test_debug_line_per_node_names_index_type_side_and_output_shape(tmp_path):
    entry = _layout()
    r, nodes, summary = _run_debug(tmp_path, XNN_DIR, entry, {"PTERON_XNNPACK_USE_LIBRARY": "none"})
    assert r.returncode == 0, r.stderr
    pat = re.compile(r"^pteron XnnpackBackend node (\d+): (\w+) on (pteron|pteron \(a view\)|"
                     r"XNNPACK library), step (\d+), output \[[\d, ]*\] \((.+)\)$")
    parsed = [pat.match(l) for l in nodes]
    assert all(parsed), [l for l, m in zip(nodes, parsed) if not m]
    # Node 2 concatenates three [2, 6, 5, 7] tensors along dim 1 (NCHW as exported).
    by_index = {int(m.group(1)): m for m in parsed}
    assert by_index[2].group(2) == "Concatenate3"
    assert "output [2, 18, 5, 7]" in nodes[[int(m.group(1)) for m in parsed].index(2)]
    assert all(m.group(5) == "PTERON_XNNPACK_USE_LIBRARY=none" for m in parsed), nodes
    s = summary[0]
    for field in ("XNNPACK segment(s)", "step(s)", "arena: ", "library: ", "library threads: "):
        assert field in s, s


def test_transposes_that_cancel_are_removed_at_load(tmp_path):
    """layout_xnnpack's x.permute(0, 2, 3, 1).permute(0, 3, 1, 2): the
    second transpose becomes a view of x, the first is dropped (no node line
    for node 0), and the result is unchanged (checked against eager above)."""
    r, nodes, summary = _run_debug(tmp_path, XNN_DIR, _layout(), {"PTERON_XNNPACK_USE_LIBRARY": "none"})
    assert r.returncode == 0, r.stderr
    # Folded as a chain of two transposes into a view (both removed), before
    # the round-trip pass (which would count the pair once) sees it.
    assert _field(summary[0], "transposes folded") == 2, summary
    assert _field(summary[0], "transposes cancelled") == 0, summary
    assert not any(l.startswith("pteron XnnpackBackend node 0:") for l in nodes), nodes
    assert any(l.startswith("pteron XnnpackBackend node 1: StaticReshape on pteron (a view)")
               for l in nodes), nodes


@pytest.mark.parametrize("use", ["none", "all"])
def test_transpose_chain_of_a_channel_shuffle_folds_into_one_transpose_and_matches_eager(
        tmp_path, use):
    """tests/xnnpack/shuffle_xnnpack: NHWC->NCHW transpose, reshape to 5-D,
    transpose, reshape, NCHW->NHWC transpose (a channel shuffle as exported):
    the three transposes become one (reshape views around it), the debug
    summary counts what was folded, and the outputs match eager. With the
    library (use=all) the folded transpose runs there."""
    r, nodes, summary = _run_matching(tmp_path, _xnn_fixture("shuffle_xnnpack"), use)
    m = re.search(r"transposes folded: (\d+) \(in (\d+) chain\(s\)\)", summary[0])
    assert m and int(m.group(1)) >= 2 and int(m.group(2)) >= 1, summary
    transposes = [l for l in nodes if ": StaticTranspose on " in l]
    # Exported: 3 transposes in the shuffle, 2 in the round trip (cancelled or folded).
    assert len(transposes) == 1, nodes


@pytest.mark.parametrize("fuse", ["", "0"])
def test_concatenation_chain_is_one_copy_and_matches_eager(tmp_path, fuse):
    """concat_chain_xnnpack: torch.cat of 7 tensors, exported as Concatenate5 -> Concatenate3.
    At load the chain becomes one 7-input concatenation; the second concatenation, which
    reads that result beside a convolution, stays a node. PTERON_XNNPACK_FUSE=0 keeps the
    chain as exported. The outputs match eager either way."""
    env = {"PTERON_XNNPACK_USE_LIBRARY": "none"}
    if fuse:
        env["PTERON_XNNPACK_FUSE"] = fuse
    nodes, summary = _run_matching_eager(tmp_path, "concat_chain_xnnpack", env,
                                         f"concat_chain (FUSE={fuse!r})")
    concats = [l for l in nodes if re.search(r": Concatenate\d on ", l)]
    flat = [l for l in concats if "7 inputs in one copy" in l]
    if fuse == "0":
        assert len(concats) == 3 and not flat, nodes
        assert _field(summary[0], "fused (PTERON_XNNPACK_FUSE)") == 0, summary
    else:
        assert len(concats) == 2 and len(flat) == 1, nodes
        assert "output [1, 6, 5, 28]" in flat[0], flat
        assert _field(summary[0], "fused (PTERON_XNNPACK_FUSE)") == 1, summary


@pytest.mark.parametrize("fuse,fused,warned", [("off", 0, False), ("No", 0, False),
                                               ("yes", 1, False), ("maybe", 1, True)])
def test_switches_are_read_strictly_and_each_odd_setting_is_warned_about_once(
        tmp_path, fuse, fused, warned):
    """PTERON_XNNPACK_FUSE (as _DEBUG and _PROFILE) takes 1/0, true/false, yes/no or on/off in
    any case; anything else keeps the default, with one warning that names it. PTERON_ISA=bogus
    is warned about once per process, though kernels_optimized and backend_xnnpack both read
    it; the outputs still match eager."""
    env = {"PTERON_XNNPACK_USE_LIBRARY": "none", "PTERON_XNNPACK_FUSE": fuse,
           "PTERON_ISA": "bogus"}
    fx = _fixture("concat_chain_xnnpack")
    r, _, summary = _run_debug(tmp_path, FIXTURES, fx, env)
    assert r.returncode == 0, r.stderr
    for i, p in enumerate(fx["methods"]["forward"]["expected"]):
        assert_matches(np.load(tmp_path / f"output_{i}.npy"), np.load(FIXTURES / p),
                       fx["rtol"], fx["atol"], f"FUSE={fuse!r} output {i}")
    assert _field(summary[0], "fused (PTERON_XNNPACK_FUSE)") == fused, summary
    assert r.stderr.count(f"ignoring PTERON_XNNPACK_FUSE='{fuse}'") == (1 if warned else 0), \
        r.stderr
    assert r.stderr.count("ignoring PTERON_ISA='bogus'") == 1, r.stderr


def test_a_warning_quotes_a_value_with_control_bytes_on_one_line(tmp_path):
    """A value with a line break or an escape sequence is quoted escaped (\\xNN), whole."""
    value = "a\nb\x1b[31m" + "z" * 60
    r, _, _ = _run_debug(tmp_path, FIXTURES, _fixture("concat_chain_xnnpack"),
                         {"PTERON_ISA": value, "PTERON_XNNPACK_FUSE": "x\ty"})
    assert r.returncode == 0, r.stderr
    assert "ignoring PTERON_ISA='a\\x0ab\\x1b[31m" + "z" * 60 + "'" in r.stderr, r.stderr
    assert "ignoring PTERON_XNNPACK_FUSE='x\\x09y'" in r.stderr, r.stderr
    assert "\x1b" not in r.stderr


def test_arena_shares_bytes_between_values_whose_lifetimes_do_not_overlap(tmp_path):
    r, _, summary = _run_debug(tmp_path, XNN_DIR, _layout(), {"PTERON_XNNPACK_USE_LIBRARY": "none"})
    assert r.returncode == 0, r.stderr
    planned = _field(summary[0], "arena")
    unshared = int(summary[0].split("bytes (")[1].split(" without sharing")[0])
    assert 0 < planned < unshared, summary[0]
    assert planned % 64 == 0


def test_use_library_names_node_types_and_refuses_unknown_ones(tmp_path):
    entry = _layout()
    r, nodes, _ = _run_debug(tmp_path, XNN_DIR, entry,
                             {"PTERON_XNNPACK_USE_LIBRARY": "StaticConstantPad"})
    assert r.returncode == 0, r.stderr
    pad = next(l for l in nodes if ": StaticConstantPad on " in l)
    if "none linked" in r.stderr:
        assert " on pteron" in pad, pad
    else:
        assert " on XNNPACK library" in pad and "PTERON_XNNPACK_USE_LIBRARY=StaticConstantPad" in pad
    assert all(" on pteron" in l for l in nodes if "StaticConstantPad" not in l
               and "StaticReshape" not in l), nodes
    r, _, _ = _run_debug(tmp_path, XNN_DIR, entry, {"PTERON_XNNPACK_USE_LIBRARY": "Conv2d,Bogus"})
    assert r.returncode != 0
    assert "PTERON_XNNPACK_USE_LIBRARY='Conv2d,Bogus': 'Bogus' is not a node type" in r.stderr


@pytest.mark.parametrize("name", XNN_FIXTURES)
def test_xnnpack_fixture_matches_eager_on_pterons_kernels_alone(tmp_path, name):
    """PTERON_XNNPACK_USE_LIBRARY=none: what a build with no XNNPACK library
    (the MinGW DLL, -DPTERON_XNNPACK_LIBRARY=OFF) runs. Skipped, naming the
    node, while a node type of the fixture has no pteron kernel yet."""
    fx = _fixture(name)
    r, nodes, _ = _run_debug(tmp_path, FIXTURES, fx, {"PTERON_XNNPACK_USE_LIBRARY": "none"})
    if r.returncode != 0 and NO_OWN_KERNEL in r.stderr:
        pytest.skip(next(l for l in r.stderr.splitlines() if NO_OWN_KERNEL in l))
    assert r.returncode == 0, r.stderr
    assert nodes and all(" on pteron" in l for l in nodes), nodes
    for i, p in enumerate(fx["methods"]["forward"]["expected"]):
        assert_matches(np.load(tmp_path / f"output_{i}.npy"), np.load(FIXTURES / p),
                       fx["rtol"], fx["atol"], f"{name} output {i} (pteron's kernels)")


def _run_fusion_case(tmp_path, name, fuse, isa, threads):
    """Fixture `name` on pteron's kernels only, at ISA level `isa` (skipped where the CPU lacks
    it) and `threads` threads, with PTERON_XNNPACK_FUSE=`fuse` (empty: unset), matching eager.
    Returns (node lines, summary lines)."""
    if missing_for(isa):
        pytest.skip(f"this CPU lacks {sorted(missing_for(isa))} for PTERON_ISA={isa}")
    env = {"PTERON_XNNPACK_USE_LIBRARY": "none", "PTERON_ISA": isa, "PTERON_NUM_THREADS": threads}
    if fuse:
        env["PTERON_XNNPACK_FUSE"] = fuse
    return _run_matching_eager(tmp_path, name, env, f"{name} (FUSE={fuse!r}, {isa})")


@pytest.mark.parametrize("fuse", ["", "0"])
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("threads", ["1", "3"])
def test_batch_norm_before_a_1x1_convolution_runs_inside_its_gemm(tmp_path, fuse, isa, threads):
    """preact_xnnpack: three batch norms (1x1 DepthwiseConv2d nodes), two of them read only by a
    1x1 convolution, one with a ReLU and one without. At load each of those two goes, and its
    convolution maps the input tiles itself (passes/fusion_conv.cpp, fuse_channel_affine); the
    third, whose output is a graph output and the input of a 3x3 and a 1x1 convolution, stays.
    The four convolution outputs that only a concatenation reads are written into its output in
    place (write_concatenation_inputs_in_place; the last concatenation copies nothing).
    PTERON_XNNPACK_FUSE=0 keeps every node and every copy. The outputs match eager at every ISA
    level and thread count."""
    nodes, summary = _run_fusion_case(tmp_path, "preact_xnnpack", fuse, isa, threads)
    depthwise = [l for l in nodes if ": DepthwiseConv2d on " in l]
    fused = [l for l in nodes if "fused: the 1x1 DepthwiseConv2d before it" in l]
    in_place = [l for l in nodes if "writes its channels into the concatenation's output" in l]
    partial = [l for l in nodes if "copies only the inputs not written in place" in l]
    if fuse == "0":
        assert len(depthwise) == 3 and not fused and not in_place and not partial, nodes
        assert _field(summary[0], "concatenation inputs written in place") == 0, summary
    else:
        assert len(depthwise) == 1 and "output [2, 9, 7, 40]" in depthwise[0], nodes
        assert len(fused) == 2 and all(": Conv2d on " in l for l in fused), nodes
        assert _field(summary[0], "fused (PTERON_XNNPACK_FUSE)") == 2, summary
        assert len(in_place) == 4 and all(": Conv2d on " in l for l in in_place), nodes
        assert len(partial) == 3 and all(": Concatenate2 on " in l for l in partial), nodes
        assert _field(summary[0], "concatenation inputs written in place") == 4, summary


@pytest.mark.parametrize("fuse", ["", "0"])
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("threads", ["1", "3"])
def test_residual_add_runs_inside_the_convolutions_gemm(tmp_path, fuse, isa, threads):
    """residual_xnnpack: five Adds after convolutions. Three go at load, each added to the
    output tiles of the convolution before it (passes/fusion_conv.cpp, fuse_residual_add): a 3x3
    one (the indirect GEMM, with the ReLU after the sum as the Add's output range) and two 1x1
    ones (the direct GEMM). Two stay: one whose other operand, a Sigmoid, runs after the
    convolution, and one after a convolution without a bias. PTERON_XNNPACK_FUSE=0 keeps all
    five. The output matches eager at every ISA level and thread count."""
    nodes, summary = _run_fusion_case(tmp_path, "residual_xnnpack", fuse, isa, threads)
    adds = [l for l in nodes if ": Add on " in l]
    fused = [l for l in nodes if "fused: the Add after it" in l]
    if fuse == "0":
        assert len(adds) == 5 and not fused, nodes
        assert _field(summary[0], "fused (PTERON_XNNPACK_FUSE)") == 0, summary
    else:
        assert len(adds) == 2 and len(fused) == 3, nodes
        assert all(": Conv2d on " in l for l in fused), nodes
        assert _field(summary[0], "fused (PTERON_XNNPACK_FUSE)") == 3, summary


@pytest.mark.parametrize("fuse", ["", "0"])
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("threads", ["1", "3"])
def test_expansion_runs_row_by_row_inside_the_depthwise_convolution(tmp_path, fuse, isa, threads):
    """inverted_xnnpack: three inverted residual blocks. The two whose expanded tensor passes
    1 MiB ([3, 49, 49, 72]) lose their 1x1 expansion at load: each DepthwiseConv2d (a 3x3 of
    stride 1 with ReLU6, a 5x5 of stride 2 with Hardswish after both convolutions) reads the
    block's input and computes the expanded rows its window needs (passes/fusion_conv.cpp,
    fuse_expand_depthwise). The third block's ([3, 25, 25, 32], 240 KB) stays two nodes. At 3
    threads each thread's rows cross from one image into the next. PTERON_XNNPACK_FUSE=0
    keeps every node. The output matches eager at every ISA level and thread count."""
    nodes, summary = _run_fusion_case(tmp_path, "inverted_xnnpack", fuse, isa, threads)
    depthwise = [l for l in nodes if ": DepthwiseConv2d on " in l]
    convs = [l for l in nodes if ": Conv2d on " in l]
    fused = [l for l in nodes if "fused: the 1x1 Conv2d before it" in l]
    assert len(depthwise) == 3, nodes
    if fuse == "0":
        assert not fused and len(convs) == 6, nodes
    else:
        assert len(fused) == 2 and len(convs) == 4, nodes
        assert "output [3, 49, 49, 72]" in fused[0] and "output [3, 25, 25, 72]" in fused[1], fused
        assert "the Hardswish after it" in fused[1], fused


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("threads", ["1", "3"])
@pytest.mark.parametrize("name", ["preact_xnnpack", "residual_xnnpack", "inverted_xnnpack"])
def test_fusions_give_the_unfused_results_bit_for_bit(tmp_path, name, threads, isa):
    """preact_xnnpack, residual_xnnpack and inverted_xnnpack with their fusions and in-place
    writes (default) and without (PTERON_XNNPACK_FUSE=0): the same bytes, at every ISA level.
    The batch-norm map inside the GEMM is the depthwise kernel's own 1x1 row, a fused residual sum
    is the Add node's own kernel run on each tile, an expansion computed row by row gives each
    pixel the GEMM microkernel the unfused convolution gives it (inverted_xnnpack's rows of 49
    pixels and its 3 x 49 x 49 pixels are one more than a multiple of each level's row block,
    where the one-row microkernel may run only on the last pixel), and an in-place write is the
    same store at another address."""
    missing = missing_for(isa)
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)} for PTERON_ISA={isa}")
    fx = _fixture(name)
    outs = {}
    for fuse in ("", "0"):
        env = {"PTERON_XNNPACK_USE_LIBRARY": "none", "PTERON_NUM_THREADS": threads,
               "PTERON_ISA": isa}
        if fuse:
            env["PTERON_XNNPACK_FUSE"] = fuse
        d = tmp_path / f"fuse{fuse or 'on'}"
        d.mkdir()
        r, _, summary = _run_debug(d, FIXTURES, fx, env)
        assert r.returncode == 0, r.stderr
        outs[fuse] = [np.load(d / f"output_{i}.npy")
                      for i in range(len(fx["methods"]["forward"]["expected"]))]
    assert _field(summary[0], "fused (PTERON_XNNPACK_FUSE)") == 0, summary  # the FUSE=0 run
    for a, b in zip(outs[""], outs["0"]):
        assert a.tobytes() == b.tobytes()
