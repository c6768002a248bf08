# SPDX-License-Identifier: BSD-3-Clause
"""kernels_quantized (runtime/kernels/quantized/) against eager PyTorch's quantized_decomposed
reference, operator by operator: generated cases (seeded) for every quantize, dequantize,
choose_qparams and embedding overload the component registers, each run through the runtime's
test-only entry point pteron_testing_call_kernel (include/pteron/testing.h) and compared with
the reference that tests/quantized/reference.py computes under upstream's exporter
environment (PTERON_EXPORT_PYTHON; skipped without it). Integer outputs must be equal; float
outputs too (the kernels compute in the reference's dtypes, step by step).

Also: the cases that broke upstream (int32 zero points read as int32 in dequantize_per_channel,
upstream issue 21773; a channels-last input of per-channel dequantize, upstream issue 16429),
layouts (channels-last, transposed views), and clear errors for a wrong dtype, range, axis or
index.
"""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, build_dir

MAX_DIM = 16
DT = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
      "float64": 7, "bfloat16": 15, "uint16": 27}
NP = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
      "int64": np.int64, "float16": np.float16, "float32": np.float32, "float64": np.float64,
      "bfloat16": np.uint16, "uint16": np.uint16}
NONE, INT, BOOL, DOUBLE, TENSOR = 0, 1, 2, 3, 4
RANGES = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767),
          "uint16": (0, 65535), "int32": (-2**31, 2**31 - 1)}


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("dim", ctypes.c_int32),
                ("dynamism", ctypes.c_int32), ("reserved0", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * MAX_DIM), ("strides", ctypes.c_int64 * MAX_DIM),
                ("bound", ctypes.c_int64 * MAX_DIM), ("dim_order", ctypes.c_uint8 * MAX_DIM),
                ("data", ctypes.c_void_p), ("capacity_bytes", ctypes.c_int64)]


class _U(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("d", ctypes.c_double),
                ("tensor", ctypes.POINTER(Tensor)), ("pad", ctypes.c_char * 16)]


class Value(ctypes.Structure):
    _fields_ = [("tag", ctypes.c_int32), ("reserved0", ctypes.c_int32), ("u", _U)]


def make_caller(d):
    """call(op, overload, args) -> (code, message) over the build in folder d (its runtime and
    kernels_quantized). args are numpy arrays wrapped as ("in", array, dtype name) or
    ("out", array, dtype name) (an out tensor whose sizes may change up to its capacity),
    Python ints, floats, None, or ("dtype", name)."""
    lib = d / "libpteron.so"
    q = d / "libpteron_kernels_quantized.so"
    if not lib.exists() or not q.exists():
        pytest.fail(f"no pteron build with kernels_quantized in {d}: run scripts/test.sh",
                    pytrace=False)
    rt = ctypes.CDLL(str(lib))
    ctypes.CDLL(str(q))  # registers its kernels
    fn = rt.pteron_testing_call_kernel
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                   ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                   ctypes.POINTER(ctypes.c_int32)]

    def tensor(arr, dtype_name, resizable):
        t = Tensor()
        t.dtype = DT[dtype_name]
        t.dim = arr.ndim
        t.dynamism = 1 if resizable else 0
        for i, (s, st) in enumerate(zip(arr.shape, arr.strides)):
            t.sizes[i] = s
            t.strides[i] = st // arr.itemsize
            t.bound[i] = s
        order = sorted(range(arr.ndim), key=lambda i: -t.strides[i])
        for i, o in enumerate(order):
            t.dim_order[i] = o
        t.data = arr.ctypes.data
        t.capacity_bytes = arr.size * arr.itemsize
        return t

    def run(op, overload, args):
        keep, vals = [], []
        for a in args:
            v = Value()
            if a is None:
                v.tag = NONE
            elif isinstance(a, tuple) and a[0] == "dtype":
                v.tag, v.u.i = INT, DT[a[1]]
            elif isinstance(a, tuple) and a[0] in ("out", "in"):
                arr, name = a[1], a[2]
                t = tensor(arr, name, a[0] == "out")
                keep.append((arr, t))
                v.tag, v.u.tensor = TENSOR, ctypes.pointer(t)
            elif isinstance(a, bool):
                v.tag, v.u.i = BOOL, int(a)
            elif isinstance(a, int):
                v.tag, v.u.i = INT, a
            elif isinstance(a, float):
                v.tag, v.u.d = DOUBLE, a
            else:
                raise TypeError(a)
            vals.append(v)
        ptrs = (ctypes.POINTER(Value) * len(vals))(*[ctypes.pointer(v) for v in vals])
        msg = ctypes.create_string_buffer(512)
        rc = fn(f"quantized_decomposed::{op}".encode(), overload.encode(), None,
                ctypes.cast(ptrs, ctypes.c_void_p), len(vals), msg, len(msg), None)
        return rc, msg.value.decode()
    return run


@pytest.fixture(scope="module")
def call():
    return make_caller(build_dir())


def name_of(arr):
    for k, v in NP.items():
        if arr.dtype == v and k != "bfloat16":  # inputs are never bfloat16 here
            return k
    raise TypeError(arr.dtype)


# ---- the generated cases -------------------------------------------------------------------

def make_cases(rng):
    """[(case dict for reference.py, arrays, our call's args builder)]."""
    cases, arrays = [], {}

    def arr(name, a):
        arrays[name] = a
        return {"array": name}

    def add(name, op, overload, args, kwargs=None, ours=None, outs=None, composed=False,
            rtol=0.0):
        cases.append(dict(name=name, op=op, overload=overload, args=args, kwargs=kwargs or {},
                          ours=ours, outs=outs, composed=composed, rtol=rtol))

    x = (rng.standard_normal((3, 5, 7)) * 3).astype(np.float32)
    x.flat[:6] = [0.5, 1.5, 2.5, -0.5, -1.5, 1e9]  # halves (to even) and a clamped value
    for qd in ("uint8", "int8", "int16", "uint16", "int32"):
        lo, hi = RANGES[qd]
        zp = {"uint8": 128, "uint16": 30000}.get(qd, 0 if qd != "int8" else 3)
        scale = 0.0371
        # (int32: no value past its range: PyTorch's float -> int32 conversion of 2^31 wraps
        # to INT32_MIN, where the clamp's quant_max is the right result.)
        xq = x if qd != "int32" else np.where(np.abs(x) > 1e6, 1e6, x).astype(np.float32)
        add(f"qpt_{qd}", "quantize_per_tensor", "out",
            [arr(f"x_{qd}", xq), {"float": scale}, {"int": zp}, {"int": lo}, {"int": hi},
             {"dtype": qd}],
            ours=[f"x_{qd}", scale, zp, lo, hi, ("dtype", qd), ("outq", qd, x.shape)])
        q = rng.integers(max(lo, -1000), min(hi, 1000) + 1, size=(4, 6)).astype(NP[qd])
        for od in ("float32", "float64", "float16", "bfloat16"):
            add(f"dqpt_{qd}_{od}", "dequantize_per_tensor", "out",
                [arr(f"q_{qd}", q), {"float": scale}, {"int": zp}, {"int": lo}, {"int": hi},
                 {"dtype": qd}], {"out_dtype": {"dtype": od}},
                ours=[f"q_{qd}", scale, zp, lo, hi, ("dtype", qd), ("dtype", od),
                      ("outf", od, q.shape)])
    # .Tensor overloads: 1-element scale / zero point tensors.
    s1 = np.array([0.05], np.float64)
    z1 = np.array([-4], np.int64)
    add("qpt_tensor", "quantize_per_tensor", "Tensor_out",
        [arr("x_t", x), arr("s1", s1), arr("z1", z1), {"int": -128}, {"int": 127},
         {"dtype": "int8"}],
        ours=["x_t", "s1", "z1", -128, 127, ("dtype", "int8"), ("outq", "int8", x.shape)])
    q8 = rng.integers(-128, 128, size=(2, 3, 4)).astype(np.int8)
    add("dqpt_tensor", "dequantize_per_tensor", "Tensor_out",
        [arr("q8", q8), arr("s1b", s1), arr("z1b", z1), {"int": -128}, {"int": 127},
         {"dtype": "int8"}],
        ours=["q8", "s1b", "z1b", -128, 127, ("dtype", "int8"), None,
              ("outf", "float32", q8.shape)])
    # Per channel: float32 and float64 scales, int64 and int32 zero points, every axis.
    xc = (rng.standard_normal((4, 3, 5, 2)) * 2).astype(np.float32)
    for axis in (0, 1, 3):
        c = xc.shape[axis]
        for sd in ("float32", "float64"):
            sc = (rng.uniform(0.01, 0.1, c)).astype(NP[sd])
            zc = rng.integers(-10, 10, c).astype(np.int64)
            add(f"qpc_{axis}_{sd}", "quantize_per_channel", "out",
                [arr(f"xc_{axis}_{sd}", xc), arr(f"sc_{axis}_{sd}", sc),
                 arr(f"zc_{axis}_{sd}", zc), {"int": axis}, {"int": -128}, {"int": 127},
                 {"dtype": "int8"}],
                ours=[f"xc_{axis}_{sd}", f"sc_{axis}_{sd}", f"zc_{axis}_{sd}", axis, -128, 127,
                      ("dtype", "int8"), ("outq", "int8", xc.shape)])
            qc = rng.integers(-128, 128, size=xc.shape).astype(np.int8)
            add(f"dqpc_{axis}_{sd}", "dequantize_per_channel", "out",
                [arr(f"qc_{axis}_{sd}", qc), arr(f"dsc_{axis}_{sd}", sc),
                 arr(f"dzc_{axis}_{sd}", zc), {"int": axis}, {"int": -128}, {"int": 127},
                 {"dtype": "int8"}],
                ours=[f"qc_{axis}_{sd}", f"dsc_{axis}_{sd}", f"dzc_{axis}_{sd}", axis, -128, 127,
                      ("dtype", "int8"), None, ("outf", "float32", xc.shape)])
    # Per channel without zero points (symmetric weights).
    sc = rng.uniform(0.01, 0.1, 3).astype(np.float32)
    qc = rng.integers(-127, 128, size=(3, 8)).astype(np.int8)
    add("dqpc_nozp", "dequantize_per_channel", "out",
        [arr("qc_nozp", qc), arr("sc_nozp", sc), None, {"int": 0}, {"int": -127}, {"int": 127},
         {"dtype": "int8"}],
        ours=["qc_nozp", "sc_nozp", None, 0, -127, 127, ("dtype", "int8"), None,
              ("outf", "float32", qc.shape)])
    # Per token: parameters from choose_qparams_per_token_asymmetric (float64, int64).
    xt = (rng.standard_normal((2, 3, 16)) * 4).astype(np.float32)
    xt[1, 2] = np.abs(xt[1, 2])  # a token with no negative value
    add("cqpt", "choose_qparams_per_token_asymmetric", "out",
        [arr("xt", xt), {"dtype": "int8"}],
        ours=["xt", ("dtype", "int8"), ("outf", "float64", (2, 3, 1)),
              ("outi", "int64", (2, 3, 1))], outs=2)
    st = rng.uniform(0.01, 0.2, (2, 3, 1)).astype(np.float64)
    zt = rng.integers(-20, 20, (2, 3, 1)).astype(np.int64)
    add("qptok", "quantize_per_token", "out",
        [arr("xt2", xt), arr("st", st), arr("zt", zt), {"int": -128}, {"int": 127},
         {"dtype": "int8"}],
        ours=["xt2", "st", "zt", -128, 127, ("dtype", "int8"), ("outq", "int8", xt.shape)])
    qt = rng.integers(-128, 128, size=xt.shape).astype(np.int8)
    add("dqptok", "dequantize_per_token", "out",
        [arr("qt", qt), arr("st2", st), arr("zt2", zt), {"int": -128}, {"int": 127},
         {"dtype": "int8"}, {"dtype": "float32"}],
        ours=["qt", "st2", "zt2", -128, 127, ("dtype", "int8"), ("dtype", "float32"),
              ("outf", "float32", xt.shape)])
    # choose_qparams (per tensor affine), for uint8 and int8.
    for qd in ("uint8", "int8"):
        lo, hi = RANGES[qd]
        xq = (rng.standard_normal(50) * 3 + 1).astype(np.float32)
        add(f"cqp_{qd}", "choose_qparams", "Tensor_out",
            [arr(f"xq_{qd}", xq), {"int": lo}, {"int": hi}, {"float": 1.1920928955078125e-07},
             {"dtype": qd}],
            ours=[f"xq_{qd}", lo, hi, 1.1920928955078125e-07, ("dtype", qd),
                  ("outf", "float64", (1,)), ("outi", "int64", (1,))], outs=2)
    # Embeddings: byte, 2bit, 4bit; per-row and grouped scales; with and without zero points;
    # uint8 and int8 storage; float32 and float16 scales; .dtype overloads.
    idx = np.array([[0, 3, 5], [5, 1, 2]], np.int64)
    for bits, op, lo, hi in ((8, "embedding_byte", -128, 127), (4, "embedding_4bit", -8, 7),
                             (2, "embedding_2bit", -2, 1)):
        cols = 8 * bits // 8  # packed bytes per row: 8 values (byte), 16 (4bit), 32 (2bit)
        for wd in ("int8", "uint8"):
            w = rng.integers(RANGES[wd][0], RANGES[wd][1] + 1, (6, cols)).astype(NP[wd])
            for groups in (1, 2):
                for sdt in ("float32", "float16"):
                    for with_zp in (False, True):
                        tag = f"{op}_{wd}_{groups}_{sdt}_{int(with_zp)}"
                        shape = (6,) if groups == 1 else (6, groups)
                        s = rng.uniform(0.01, 0.1, shape).astype(NP[sdt])
                        z = rng.integers(-3, 3, shape).astype(NP[sdt]) if with_zp else None
                        width = cols * 8 // bits
                        ref_args = [arr(f"w_{tag}", w), arr(f"s_{tag}", s),
                                    arr(f"z_{tag}", z) if with_zp else None, {"int": lo},
                                    {"int": hi}, arr(f"i_{tag}", idx)]
                        ours = [f"w_{tag}", f"s_{tag}", f"z_{tag}" if with_zp else None, lo, hi,
                                f"i_{tag}"]
                        add(tag, op, "out", ref_args,
                            ours=ours + [("outf", sdt, idx.shape + (width,))])
                        if groups == 2 and with_zp:
                            add(tag + "_dt", op, "dtype_out", ref_args,
                                {"dtype": {"dtype": "float32"}},
                                ours=ours + [("dtype", "float32"),
                                             ("outf", "float32", idx.shape + (width,))])
    # add (uint8 and int8), mixed_mm, mixed_linear (per channel and grouped scales): no eager
    # function; the eager computation they replace (tests/quantized/reference.py, composed).
    for qd in ("uint8", "int8"):
        lo, hi = RANGES[qd]
        qa = rng.integers(lo, hi + 1, (5, 7)).astype(NP[qd])
        qb = rng.integers(lo, hi + 1, (5, 7)).astype(NP[qd])
        p = [0.1, 2, lo, hi, 0.07, -1, lo, hi, 0.13, 3, lo, hi]
        add(f"qadd_{qd}", "add", "out",
            [arr(f"qa_{qd}", qa), {"float": p[0]}, {"int": p[1]}, {"int": p[2]}, {"int": p[3]},
             arr(f"qb_{qd}", qb), {"float": p[4]}, {"int": p[5]}, {"int": p[6]}, {"int": p[7]},
             {"float": p[8]}, {"int": p[9]}, {"int": p[10]}, {"int": p[11]}, {"dtype": qd}],
            ours=[f"qa_{qd}", *p[:4], f"qb_{qd}", *p[4:], ("outq", qd, qa.shape)],
            composed=True)
    xm = rng.standard_normal((6, 32)).astype(np.float32)
    wm = rng.integers(-128, 128, (32, 12)).astype(np.int8)
    sm = rng.uniform(0.001, 0.02, 32).astype(np.float32)
    add("mixed_mm", "mixed_mm", "out", [arr("xm", xm), arr("wm", wm), arr("sm", sm), None],
        ours=["xm", "wm", "sm", None, ("outf", "float32", (6, 12))], composed=True, rtol=1e-5)
    xl = rng.standard_normal((2, 3, 32)).astype(np.float32)
    wl = rng.integers(-128, 128, (10, 32)).astype(np.int8)
    for g in (1, 4):
        sl = rng.uniform(0.001, 0.02, (10,) if g == 1 else (10, g)).astype(np.float32)
        add(f"mixed_linear_{g}", "mixed_linear", "out",
            [arr(f"xl_{g}", xl), arr(f"wl_{g}", wl), arr(f"sl_{g}", sl), None, None],
            ours=[f"xl_{g}", f"wl_{g}", f"sl_{g}", None, None, ("outf", "float32", (2, 3, 10))],
            composed=True, rtol=1e-5)
    return cases, arrays


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    py = os.environ.get("PTERON_EXPORT_PYTHON")
    if not py:
        pytest.skip("PTERON_EXPORT_PYTHON is not set to upstream's exporter (scripts/test.sh "
                    "sets it)")
    cases, arrays = make_cases(np.random.default_rng(20261201))
    d = tmp_path_factory.mktemp("qref")
    (d / "cases.json").write_text(json.dumps(
        [{k: c[k] for k in ("name", "op", "overload", "args", "kwargs", "composed")}
         for c in cases]))
    np.savez(d / "in.npz", **{k: v for k, v in arrays.items() if v is not None})
    r = subprocess.run([py, REPO / "tests" / "quantized" / "reference.py", d / "cases.json",
                        d / "in.npz", d / "out.npz"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return cases, arrays, dict(np.load(d / "out.npz"))


def _run_case(call, c, arrays):
    args, outs = [], []
    for a in c["ours"]:
        if isinstance(a, str):
            x = arrays[a]
            args.append(("in", x, name_of(x) if x.dtype != np.float16 else "float16"))
        elif isinstance(a, tuple) and a[0] in ("outq", "outf", "outi"):
            o = np.zeros(a[2], NP[a[1]])
            outs.append(o)
            args.append(("out", o, a[1]))
        else:
            args.append(a)
    rc, msg = call(c["op"], c["overload"], args)
    return rc, msg, outs


def test_every_generated_case_matches_eager(call, reference):
    cases, arrays, ref = reference
    bad, checked = [], 0
    for c in cases:
        rc, msg, outs = _run_case(call, c, arrays)
        if rc != 0:
            bad.append(f"{c['name']}: error {rc}: {msg}")
            continue
        for i, o in enumerate(outs):
            want = ref[f"{c['name']}.out{i}"]
            got = o.reshape(want.shape) if o.size == want.size else o
            checked += 1
            if c["rtol"]:  # float sums in another order than eager's matmul
                err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
                if got.shape != want.shape or not err <= c["rtol"]:
                    bad.append(f"{c['name']}.out{i}: relative error {err:.3g} over {c['rtol']}")
                continue
            if got.shape != want.shape or not np.array_equal(got.view(want.dtype)
                                                             if got.dtype.itemsize ==
                                                             want.dtype.itemsize else got, want):
                diff = np.flatnonzero(got.reshape(-1).astype(np.float64)
                                      != want.reshape(-1).astype(np.float64))
                bad.append(f"{c['name']}.out{i}: {len(diff)} of {want.size} differ, first at "
                           f"{diff[:3]}: got {got.reshape(-1)[diff[:3]]} want "
                           f"{want.reshape(-1)[diff[:3]]}")
    ops = {(c["op"], c["overload"]) for c in cases}
    print(f"{len(cases)} cases, {checked} outputs, {len(ops)} overloads")
    assert not bad, "\n".join(bad[:20])
    assert len(ops) == 19  # every overload kernels_quantized registers


# ---- cases that broke upstream, layouts, errors --------------------------------------------

ASAN_CHILD = r'''
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import test_quantized_ops as t
t.test_dequantize_per_channel_int32_zero_points_equal_int64(t.make_caller(Path(sys.argv[1])))
t.test_dequantize_per_channel_of_a_channels_last_input_has_no_interleaved_zeros(
    t.make_caller(Path(sys.argv[1])))
print("asan child ok")
'''


def test_upstream_cases_under_asan():
    """The two cases that broke upstream, on the ASan+UBSan build (build-asan/, which
    scripts/test.sh makes; skipped without PTERON_ASAN_BUILD_DIR): this interpreter with the
    ASan runtime preloaded, so a read past the int32 zero points' end would be reported."""
    asan_dir = os.environ.get("PTERON_ASAN_BUILD_DIR")
    if not asan_dir:
        pytest.skip("PTERON_ASAN_BUILD_DIR is not set (scripts/test.sh builds build-asan/)")
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True, timeout=60).stdout.strip()
    libubsan = subprocess.run(["gcc", "-print-file-name=libubsan.so"], capture_output=True,
                              text=True, timeout=60).stdout.strip()
    env = dict(os.environ, LD_PRELOAD=f"{libasan} {libubsan}",
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    r = subprocess.run([sys.executable, "-c", ASAN_CHILD, asan_dir, str(REPO / "tests")],
                       capture_output=True, text=True, timeout=300, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "asan child ok" in r.stdout, out[-4000:]
    assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out[-4000:]


def test_dequantize_per_channel_int32_zero_points_equal_int64(call):
    rng = np.random.default_rng(1)
    q = rng.integers(-128, 128, (5, 7)).astype(np.int8)
    s = rng.uniform(0.01, 0.1, 7).astype(np.float32)
    outs = []
    z64 = rng.integers(-5, 5, 7).astype(np.int64)
    for z in (z64, z64.astype(np.int32)):
        # The zero points at the end of an allocation of exactly their size: a read as int64
        # of an int32 array would run past it (ASan in build-asan; wrong values here).
        o = np.zeros((5, 7), np.float32)
        rc, msg = call("dequantize_per_channel", "out",
                       [("in", q, "int8"), ("in", s, "float32"), ("in", z, name_of(z)), 1,
                        -128, 127, ("dtype", "int8"), None, ("out", o, "float32")])
        assert rc == 0, msg
        outs.append(o)
    np.testing.assert_array_equal(outs[0], outs[1])
    want = (q.astype(np.int64) - z64).astype(np.float32) * s
    np.testing.assert_array_equal(outs[0], want)


def test_dequantize_per_channel_of_a_channels_last_input_has_no_interleaved_zeros(call):
    rng = np.random.default_rng(2)
    nchw = rng.integers(-128, 128, (2, 4, 3, 3)).astype(np.int8)
    nhwc = np.ascontiguousarray(nchw.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # same values
    assert not nhwc.flags.c_contiguous
    s = rng.uniform(0.5, 1.0, 4).astype(np.float32)
    z = rng.integers(-3, 3, 4).astype(np.int64)
    want = ((nchw.astype(np.int64) - z[None, :, None, None]).astype(np.float32)
            * s[None, :, None, None])
    for src in (nchw, nhwc):
        out_cl = np.zeros((2, 3, 3, 4), np.float32).transpose(0, 3, 1, 2)  # channels-last out
        rc, msg = call("dequantize_per_channel", "out",
                       [("in", src, "int8"), ("in", s, "float32"), ("in", z, "int64"), 1, -128,
                        127, ("dtype", "int8"), None, ("out", out_cl, "float32")])
        assert rc == 0, msg
        np.testing.assert_array_equal(out_cl, want)
        assert np.count_nonzero(out_cl == 0) == np.count_nonzero(want == 0)


def test_quantize_per_tensor_rounds_half_to_even_and_clamps(call):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000.0, -1000.0, np.nan], np.float32)
    o = np.zeros(x.shape, np.int8)
    rc, msg = call("quantize_per_tensor", "out",
                   [("in", x, "float32"), 1.0, 0, -128, 127, ("dtype", "int8"),
                    ("out", o, "int8")])
    assert rc == 0, msg
    assert o.tolist() == [0, 2, 2, 0, -2, -2, 127, -128, -128]  # NaN: quant_min


@pytest.mark.parametrize("args,code,words", [
    # wrong quantized dtype of out, range outside the dtype, bad axis, bad index
    (lambda: ("quantize_per_tensor", "out",
              [("in", np.zeros(3, np.float32), "float32"), 0.1, 0, -128, 127,
               ("dtype", "int8"), ("out", np.zeros(3, np.uint8), "uint8")]),
     1, ["out has dtype uint8", "int8"]),
    (lambda: ("quantize_per_tensor", "out",
              [("in", np.zeros(3, np.float32), "float32"), 0.1, 0, -129, 127,
               ("dtype", "int8"), ("out", np.zeros(3, np.int8), "int8")]),
     1, ["quant_min -129", "int8"]),
    (lambda: ("quantize_per_tensor", "out",
              [("in", np.zeros(3, np.int32), "int32"), 0.1, 0, -128, 127,
               ("dtype", "int8"), ("out", np.zeros(3, np.int8), "int8")]),
     6, ["input has dtype int32"]),
    (lambda: ("dequantize_per_channel", "out",
              [("in", np.zeros((2, 3), np.int8), "int8"),
               ("in", np.ones(3, np.float32), "float32"), None, 2, -128, 127,
               ("dtype", "int8"), None, ("out", np.zeros((2, 3), np.float32), "float32")]),
     1, ["axis 2", "rank 2"]),
    (lambda: ("dequantize_per_channel", "out",
              [("in", np.zeros((2, 3), np.int8), "int8"),
               ("in", np.ones(2, np.float32), "float32"), None, 1, -128, 127,
               ("dtype", "int8"), None, ("out", np.zeros((2, 3), np.float32), "float32")]),
     7, ["'scales' has 2 elements, expected 3"]),
    (lambda: ("embedding_byte", "out",
              [("in", np.zeros((4, 8), np.int8), "int8"),
               ("in", np.ones(4, np.float32), "float32"), None, -128, 127,
               ("in", np.array([1, 4], np.int64), "int64"),
               ("out", np.zeros((2, 8), np.float32), "float32")]),
     1, ["index 4", "4 embeddings"]),
    (lambda: ("embedding_4bit", "out",
              [("in", np.zeros((4, 8), np.uint8), "uint8"),
               ("in", np.ones(4, np.float32), "float32"), None, -128, 127,
               ("in", np.array([1], np.int64), "int64"),
               ("out", np.zeros((1, 16), np.float32), "float32")]),
     1, ["-8 and 7"]),
])
def test_bad_arguments_are_clear_errors(call, args, code, words):
    op, overload, a = args()
    rc, msg = call(op, overload, a)
    assert rc == code, (rc, msg)
    for w in words:
        assert w in msg, msg


def test_every_operator_of_upstreams_quantized_yaml_is_registered(call):
    """upstream 1.5.1's kernels/quantized/quantized.yaml, read from the exporter environment:
    each `func:` has a kernel (a call with no arguments is refused for its arity, not as a
    missing operator)."""
    import glob
    import re
    py = os.environ.get("PTERON_EXPORT_PYTHON")
    if not py:
        pytest.skip("PTERON_EXPORT_PYTHON is not set (scripts/test.sh sets it)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(py)))
    found = glob.glob(os.path.join(root, "lib", "python3*", "site-packages", "executorch",
                                   "kernels", "quantized", "quantized.yaml"))
    assert found, f"no executorch/kernels/quantized/quantized.yaml under {root}"
    funcs = re.findall(r"^- func: quantized_decomposed::(\w+)\.(\w+)\(", open(found[0]).read(),
                       re.M)
    assert len(funcs) >= 19, funcs
    missing = []
    for op, overload in funcs:
        rc, msg = call(op, overload, [])
        if rc == 4:  # PTERON_ERROR_MISSING_OPERATOR
            missing.append(f"{op}.{overload}")
    assert not missing, missing


def test_zero_points_must_be_integers_within_int32(call):
    q = np.zeros((2, 3), np.int8)
    s = np.ones(3, np.float32)
    for z, words in ((np.array([0.5, 0, 0], np.float32), "zero points are integers"),
                     (np.array([-2**63, 0, 0], np.int64), "outside the int32 range")):
        rc, msg = call("dequantize_per_channel", "out",
                       [("in", q, "int8"), ("in", s, "float32"), ("in", z, name_of(z)), 1, -128,
                        127, ("dtype", "int8"), None, ("out", np.zeros((2, 3), np.float32),
                                                       "float32")])
        assert rc in (1, 6) and words in msg, (rc, msg)


def test_empty_channel_axis_and_empty_tokens_give_empty_outputs(call):
    x = np.zeros((2, 0, 4), np.float32)
    o = np.zeros((2, 0, 4), np.int8)
    rc, msg = call("quantize_per_channel", "out",
                   [("in", x, "float32"), ("in", np.zeros(0, np.float32), "float32"),
                    ("in", np.zeros(0, np.int64), "int64"), 1, -128, 127, ("dtype", "int8"),
                    ("out", o, "int8")])
    assert rc == 0, msg
    xt = np.zeros((3, 0), np.float32)
    rc, msg = call("quantize_per_token", "out",
                   [("in", xt, "float32"), ("in", np.ones((3, 1), np.float32), "float32"),
                    ("in", np.zeros((3, 1), np.int64), "int64"), -128, 127, ("dtype", "int8"),
                    ("out", np.zeros((3, 0), np.int8), "int8")])
    assert rc == 0, msg


def test_axis_error_names_the_axis_given(call):
    rc, msg = call("dequantize_per_channel", "out",
                   [("in", np.zeros((2, 3, 4), np.int8), "int8"),
                    ("in", np.ones(3, np.float32), "float32"), None, -4, -128, 127,
                    ("dtype", "int8"), None, ("out", np.zeros((2, 3, 4), np.float32), "float32")])
    assert rc == 1 and "axis -4" in msg, (rc, msg)


def test_embedding_whose_out_overlaps_its_indices_fails_cleanly(call):
    """The indices live in out's storage: out's first row overwrites them with floats that
    are no valid index; the kernel checks each index again as it reads it."""
    buf = np.zeros(3 * 8, np.float32)
    idx = buf[:6].view(np.int64)  # 3 int64 indices in out's first 24 bytes
    idx[:] = [0, 5, 2]
    w = np.full((6, 8), 100, np.int8)
    out = buf.reshape(3, 8)
    rc, msg = call("embedding_byte", "out",
                   [("in", w, "int8"), ("in", np.full(6, 1e6, np.float32), "float32"), None,
                    -128, 127, ("in", idx, "int64"), ("in", out, "float32")])
    assert rc in (0, 1), (rc, msg)  # a clean result or a clean error, never a crash
    if rc == 1:
        assert "overlaps indices" in msg, msg
