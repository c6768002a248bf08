# SPDX-License-Identifier: BSD-3-Clause
"""Cases of the element-wise unary operators (runtime/kernels/portable/unary_math.cpp):
for each operator float32 and float64, the integer and bool inputs PyTorch
allows (integers and bool of a float function give float32, as in torch),
zero-size, a channels-last 4-D input, NaN / inf / -0 edge values, and the
scalar or dim arguments of logit, elu, leaky_relu and glu."""
import math

import torch
import torch.nn.functional as F

from fixture_writer import MethodSpec
from opcase import Fn, OpProgram, case, channels_last

NAN, INF = math.nan, math.inf
# every edge a float function meets: NaN, both infinities, both zeros, +-1
EDGES = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-30]


def programs():
    g = torch.Generator().manual_seed(12)

    def u(*shape, lo=-3.0, hi=3.0, dtype=torch.float32):
        """Uniform in [lo, hi), made in float64 then cast."""
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)

    def t(values, dtype):
        return torch.tensor(values, dtype=dtype)

    def edges(dtype=torch.float32):
        return torch.tensor(EDGES, dtype=dtype)

    progs = []

    # ---- float functions: integers and bool compute in float32 ----------------------
    # (name, torch function, domain of the random inputs, integer dtype, its values)
    float_ops = [
        ("acos", torch.acos, (-0.95, 0.95), torch.int8, [-1, 0, 1, 0]),
        ("acosh", torch.acosh, (1.05, 4.0), torch.int32, [1, 2, 3, 70]),
        ("asin", torch.asin, (-0.95, 0.95), torch.int16, [-1, 0, 1, 1]),
        ("asinh", torch.asinh, (-4.0, 4.0), torch.int64, [-300, -1, 0, 2, 9]),
        ("atan", torch.atan, (-4.0, 4.0), torch.uint8, [0, 1, 2, 200]),
        ("atanh", torch.atanh, (-0.95, 0.95), torch.bool, [True, False, False]),
        ("cos", torch.cos, (-4.0, 4.0), torch.int32, [-7, 0, 3, 100]),
        ("cosh", torch.cosh, (-4.0, 4.0), torch.int64, [-5, 0, 1, 6]),
        ("erf", torch.erf, (-2.5, 2.5), torch.int32, [-3, -1, 0, 1, 2]),
        ("exp", torch.exp, (-4.0, 4.0), torch.bool, [True, False, True]),
        ("expm1", torch.expm1, (-4.0, 4.0), torch.int8, [-5, -1, 0, 1, 7]),
        ("log", torch.log, (0.05, 6.0), torch.int64, [0, 1, 2, 1000]),
        ("log10", torch.log10, (0.05, 6.0), torch.int32, [1, 10, 7, 100000]),
        ("log1p", torch.log1p, (-0.9, 6.0), torch.uint8, [0, 1, 9, 255]),
        ("log2", torch.log2, (0.05, 6.0), torch.int16, [1, 2, 3, 1024]),
        ("reciprocal", torch.reciprocal, (0.3, 4.0), torch.int32, [-4, -1, 1, 2, 8]),
        ("rsqrt", torch.rsqrt, (0.1, 6.0), torch.int64, [1, 4, 9, 2]),
        ("sin", torch.sin, (-4.0, 4.0), torch.int64, [-7, 0, 3, 100]),
        ("sinh", torch.sinh, (-4.0, 4.0), torch.int32, [-5, 0, 1, 6]),
        ("sqrt", torch.sqrt, (0.0, 6.0), torch.uint8, [0, 1, 4, 250]),
        ("tan", torch.tan, (-1.3, 1.3), torch.int32, [-1, 0, 1, 3]),
    ]
    for name, fn, (lo, hi), idt, ivals in float_ops:
        cases = {
            "f32": case(fn, u(3, 5, lo=lo, hi=hi)),
            "f64": case(fn, u(2, 3, 4, lo=lo, hi=hi, dtype=torch.float64)),
            f"{str(idt)[6:]}_to_f32": case(fn, t(ivals, idt)),
            "f32_zero_size": case(fn, u(0, 3, lo=lo, hi=hi)),
            "f32_channels_last": case(fn, channels_last(u(2, 3, 2, 4, lo=lo, hi=hi))),
            "f32_edges": case(fn, edges()),
            "f64_edges": case(fn, edges(torch.float64)),
            "f32_scalar": case(fn, u(lo=lo, hi=hi)),
        }
        if name == "reciprocal":
            cases["f32_negative"] = case(fn, -u(3, 4, lo=lo, hi=hi))
        progs.append(OpProgram(
            f"{name}_out", f"aten::{name}.out", cases,
            notes=f"{name}: float32, float64, {idt} -> float32, zero-size, channels-last, "
                  "NaN/inf/-0 edges, 0-dim"))

    # ---- dtype-keeping functions: integers stay integers; bool refused ----------------
    rounding = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -3.7, 0.49999997, -0.0, NAN, INF, -INF]
    keep_ops = [
        ("abs", torch.abs), ("neg", torch.neg), ("ceil", torch.ceil), ("floor", torch.floor),
        ("round", torch.round), ("trunc", torch.trunc), ("sign", torch.sign),
    ]
    for name, fn in keep_ops:
        cases = {
            "f32": case(fn, u(3, 5, lo=-4.0, hi=4.0)),
            "f64": case(fn, u(2, 3, 4, lo=-4.0, hi=4.0, dtype=torch.float64)),
            "f32_halves_edges": case(fn, t(rounding, torch.float32)),
            "f64_halves_edges": case(fn, t(rounding, torch.float64)),
            "i64": case(fn, t([-(2**63), -7, 0, 5, 2**63 - 1], torch.int64)),
            "i32": case(fn, t([[-(2**31), -3], [0, 2**31 - 1]], torch.int32)),
            "i16": case(fn, t([-(2**15), -1, 0, 300], torch.int16)),
            "i8": case(fn, t([-128, -1, 0, 127], torch.int8)),
            "u8": case(fn, t([0, 1, 128, 255], torch.uint8)),
            "f32_zero_size": case(fn, u(0, 3)),
            "f32_channels_last": case(fn, channels_last(u(2, 3, 2, 4))),
            "i32_channels_last": case(fn, channels_last(t(list(range(-12, 12)), torch.int32)
                                                        .reshape(1, 4, 2, 3))),
            "f32_scalar": case(fn, u()),
        }
        if name == "sign":
            cases["bool"] = case(fn, t([True, False, True], torch.bool))
        progs.append(OpProgram(
            f"{name}_out", f"aten::{name}.out", cases,
            notes=f"{name}: float32, float64 (halves, NaN, inf, -0), every integer dtype at its "
                  "limits (wrapping as torch does), zero-size, channels-last, 0-dim"
                  + (", bool" if name == "sign" else "")))

    # ---- bitwise_not: integers and bool --------------------------------------------
    progs.append(OpProgram("bitwise_not_out", "aten::bitwise_not.out", {
        "bool": case(torch.bitwise_not, t([True, False, False, True], torch.bool)),
        "u8": case(torch.bitwise_not, t([0, 1, 128, 255], torch.uint8)),
        "i8": case(torch.bitwise_not, t([-128, -1, 0, 127], torch.int8)),
        "i16": case(torch.bitwise_not, t([-(2**15), 5, 2**15 - 1], torch.int16)),
        "i32": case(torch.bitwise_not, t([[-(2**31), -3], [0, 2**31 - 1]], torch.int32)),
        "i64": case(torch.bitwise_not, t([-(2**63), -7, 0, 2**63 - 1], torch.int64)),
        "i64_zero_size": case(torch.bitwise_not, torch.zeros(2, 0, dtype=torch.int64)),
        "i32_channels_last": case(torch.bitwise_not, channels_last(
            t(list(range(-12, 12)), torch.int32).reshape(1, 4, 2, 3))),
        "bool_channels_last": case(torch.bitwise_not, channels_last(
            (t(list(range(24)), torch.int32) % 3 == 0).reshape(2, 3, 2, 2))),
    }, notes="bool (logical not), every integer dtype at its limits, zero-size, channels-last"))

    # ---- isinf / isnan: every dtype, bool result -----------------------------------
    for name, fn in [("isinf", torch.isinf), ("isnan", torch.isnan)]:
        progs.append(OpProgram(f"{name}_out", f"aten::{name}.out", {
            "f32_edges": case(fn, edges()),
            "f64_edges": case(fn, edges(torch.float64)),
            "f32": case(fn, u(3, 4)),
            "i64": case(fn, t([-(2**63), 0, 2**63 - 1], torch.int64)),
            "u8": case(fn, t([0, 255], torch.uint8)),
            "bool": case(fn, t([True, False], torch.bool)),
            "f32_zero_size": case(fn, u(0, 2)),
            "f32_channels_last": case(fn, channels_last(
                torch.tensor(EDGES * 2, dtype=torch.float32).reshape(2, 3, 2, 2))),
        }, notes=f"{name}: NaN/inf edges in float32 and float64, integers and bool (all "
                 "false), zero-size, channels-last"))

    # ---- _conj_physical: a copy of a real tensor, every dtype --------------------------
    # The exporter drops conj_physical of a real tensor (it is the identity) and
    # never emits _conj_physical: the programs call sign.out (same schema: self,
    # out; same dtypes) renamed to _conj_physical.out, and eager
    # aten._conj_physical gives the expected outputs.
    def cp(x):
        return MethodSpec(Fn(torch.sign), (x,), eager=Fn(torch.ops.aten._conj_physical.default))

    progs.append(OpProgram("conj_physical_out", "aten::_conj_physical.out", {
        "f32": cp(u(3, 4)),
        "f64_edges": cp(edges(torch.float64)),
        "i64": cp(t([-(2**63), 0, 2**63 - 1], torch.int64)),
        "u8": cp(t([0, 7, 255], torch.uint8)),
        "bool": cp(t([True, False, True], torch.bool)),
        "f32_zero_size": cp(u(0, 3)),
        "f32_channels_last": cp(channels_last(u(2, 3, 2, 2))),
    }, rewrites=[("aten::sign.out", "aten::_conj_physical.out", ())],
        notes="a copy for real tensors: float32, float64 (NaN/inf), int64, uint8, bool, "
              "zero-size, channels-last"))

    # ---- logit(self, eps=None) --------------------------------------------------------
    logit = torch.ops.aten.logit.default
    unit = [0.0, 1.0, 0.05, 0.5, 0.95, -0.1, 1.1, NAN, INF, -INF]
    progs.append(OpProgram("logit_out", "aten::logit.out", {
        "f32": case(lambda x: logit(x), u(3, 4, lo=0.02, hi=0.98)),
        "f64": case(lambda x: logit(x), u(2, 5, lo=0.02, hi=0.98, dtype=torch.float64)),
        "f32_edges_no_eps": case(lambda x: logit(x), t(unit, torch.float32)),
        "f32_edges_eps": case(lambda x: logit(x, 0.1), t(unit, torch.float32)),
        "f64_edges_eps": case(lambda x: logit(x, 1e-6), t(unit, torch.float64)),
        "f32_negative_eps": case(lambda x: logit(x, -0.5), t(unit, torch.float32)),
        "i64_to_f32_eps": case(lambda x: logit(x, 0.25), t([0, 1, 2, -3], torch.int64)),
        "bool_to_f32": case(lambda x: logit(x), t([True, False], torch.bool)),
        "f32_zero_size": case(lambda x: logit(x, 0.1), u(0, 4)),
        "f32_channels_last": case(lambda x: logit(x, 0.01),
                                  channels_last(u(2, 3, 2, 2, lo=0.0, hi=1.0))),
    }, preserve_ops=[torch.ops.aten.logit.default],
        notes="eps None, positive (clamps), negative (no clamp); NaN/inf and out-of-range "
              "values; int64 and bool -> float32; zero-size; channels-last"))

    # ---- elu(self, alpha=1, scale=1, input_scale=1) -----------------------------------
    elu = torch.ops.aten.elu.default
    progs.append(OpProgram("elu_out", "aten::elu.out", {
        "f32_defaults": case(lambda x: elu(x), u(3, 5)),
        "f32_alpha": case(lambda x: F.elu(x, alpha=0.5), u(3, 5)),
        "f32_all_scalars": case(lambda x: elu(x, 0.7, 1.5, 2.0), u(4, 3)),
        "f64_int_scalars": case(lambda x: elu(x, 2, 3, 1), u(2, 3, 4, dtype=torch.float64)),
        "f32_edges": case(lambda x: elu(x, 1.2, 0.8, 1.1), edges()),
        "f32_zero_size": case(lambda x: elu(x), u(0, 2)),
        "f32_channels_last": case(lambda x: elu(x, 0.3), channels_last(u(2, 3, 2, 2))),
    }, preserve_ops=[torch.ops.aten.elu.default],
        notes="default, float and int alpha/scale/input_scale, NaN/inf edges, float64, "
              "zero-size, channels-last"))

    # ---- leaky_relu(self, negative_slope=0.01) --------------------------------------------
    lrelu = torch.ops.aten.leaky_relu.default
    progs.append(OpProgram("leaky_relu_out", "aten::leaky_relu.out", {
        "f32_default": case(lambda x: lrelu(x), u(3, 5)),
        "f32_slope": case(lambda x: F.leaky_relu(x, 0.2), u(3, 5)),
        "f32_negative_slope": case(lambda x: lrelu(x, -0.5), u(4, 3)),
        "f64_int_slope": case(lambda x: lrelu(x, 2), u(2, 3, 4, dtype=torch.float64)),
        "f32_edges": case(lambda x: lrelu(x, 0.1), edges()),
        "f32_zero_size": case(lambda x: lrelu(x), u(0, 2)),
        "f32_channels_last": case(lambda x: lrelu(x, 0.3), channels_last(u(2, 3, 2, 2))),
    }, preserve_ops=[torch.ops.aten.leaky_relu.default],
        notes="default, float, negative and int slopes, NaN/inf edges, float64, zero-size, "
              "channels-last"))

    # ---- glu(self, dim=-1) --------------------------------------------------------------
    glu = torch.ops.aten.glu.default
    progs.append(OpProgram("glu_out", "aten::glu.out", {
        "f32_last_dim": case(lambda x: glu(x), u(3, 6)),
        "f32_dim0": case(lambda x: glu(x, 0), u(4, 3)),
        "f32_neg_dim": case(lambda x: glu(x, -3), u(2, 4, 3, 2)),
        "f64_dim1": case(lambda x: glu(x, 1), u(2, 8, 3, dtype=torch.float64)),
        "f32_channels_last_dim1": case(lambda x: glu(x, 1), channels_last(u(2, 4, 3, 2))),
        "f32_channels_last_last_dim": case(lambda x: glu(x, -1), channels_last(u(1, 3, 2, 4))),
        "f32_zero_size": case(lambda x: glu(x, -1), u(0, 4)),
        "f32_edges": case(lambda x: glu(x, 0), edges().reshape(2, 6)),
        "f32_1d": case(lambda x: glu(x), u(2)),
    }, preserve_ops=[torch.ops.aten.glu.default],
        notes="last, first, negative and middle dims, float64, channels-last, zero-size, "
              "NaN/inf edges, 1-D"))
    return progs
