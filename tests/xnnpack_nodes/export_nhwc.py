#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the XNNPACK node programs of tests/test_xnnpack_nhwc.py: small
modules that upstream's XnnpackPartitioner lowers completely, each to one
XnnpackBackend delegate whose nodes are the NHWC window and element-wise node
types (DepthwiseConv2d, AvgPool2d, MaxPool2d, GlobalAvgPool2d,
ResizeBilinear2d, Softmax, the binary and the unary nodes) plus the
StaticTranspose / StaticReshape nodes the exporter adds around them.

Writes tests/xnnpack_nodes/nhwc_<name>.pte, nhwc_<name>.npz (arrays input_<i>
and expected_<i>: the inputs and eager PyTorch's outputs) and nhwc.json (the
manifest: per program its file, tolerances and the node types it must run).

Development-only (needs torch and executorch; /work/exportenv here). CI never
re-exports: the programs are committed, a few KB each.

Usage:
    /work/exportenv/bin/python tests/xnnpack_nodes/export_nhwc.py [NAME ...]
    /work/exportenv/bin/python tests/xnnpack_nodes/export_nhwc.py --bench DIR
        (larger programs, one node type dominating each, for measuring pteron's
        kernels against the XNNPACK library; not committed)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent


def rnd(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).float()


def special(*shape, seed=0):
    """Random values with NaN, +inf, -inf, 0 and -0 planted at fixed places."""
    x = rnd(*shape, seed=seed, scale=2.0).flatten()
    for i, v in enumerate([float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 30.0, -30.0,
                           1e-30, 88.0, -100.0]):
        if i * 7 < x.numel():
            x[i * 7] = v
    return x.reshape(shape)


class Fn(nn.Module):
    def __init__(self, f, *mods):
        super().__init__()
        self.f = f
        self.mods = nn.ModuleList(mods)

    def forward(self, *xs):
        return self.f(self.mods, *xs)


def dw(c, k, s=1, p=0, d=1, m=1, bias=True, seed=1):
    conv = nn.Conv2d(c, c * m, k, stride=s, padding=p, dilation=d, groups=c, bias=bias)
    torch.manual_seed(seed)
    with torch.no_grad():
        conv.weight.copy_(torch.randn_like(conv.weight) * 0.5)
        if bias:
            conv.bias.copy_(torch.randn_like(conv.bias) * 0.5)
    return conv


def conv(ci, co, k, s=1, p=0, g=1, seed=2):
    c = nn.Conv2d(ci, co, k, stride=s, padding=p, groups=g)
    torch.manual_seed(seed)
    with torch.no_grad():
        c.weight.copy_(torch.randn_like(c.weight) * 0.3)
        c.bias.copy_(torch.randn_like(c.bias) * 0.3)
    return c


def lin(i, o, seed=3):
    torch.manual_seed(seed)
    return nn.Linear(i, o)


# name -> (module, inputs, node types the delegate must run, rtol, atol, pairs that
# passes/fusion.cpp's fuse_elementwise fuses: with PTERON_XNNPACK_FUSE=0 each of those runs a
# Multiply too)
def programs():
    P = {}
    R = "DepthwiseConv2d"

    def add(name, mod, inputs, nodes, rtol=1e-4, atol=1e-5, fused=0):
        P[name] = (mod.eval(), tuple(inputs), nodes, rtol, atol, fused)

    # ---- depthwise convolution ------------------------------------------------------
    add("dw3x3_s1_c17", Fn(lambda m, x: m[0](x), dw(17, 3, 1, 1)), [rnd(1, 17, 9, 11)], [R])
    add("dw3x3_s1_relu_c40_b2", Fn(lambda m, x: torch.relu(m[0](x)), dw(40, 3, 1, 1)),
        [rnd(2, 40, 8, 13, seed=2)], [R])
    add("dw3x3_s2_c40", Fn(lambda m, x: m[0](x), dw(40, 3, 2, 1)), [rnd(1, 40, 13, 12, seed=3)],
        [R])
    add("dw3x3_s2_relu6_c3", Fn(lambda m, x: nn.functional.hardtanh(m[0](x), 0.0, 6.0),
                                dw(3, 3, 2, 1)), [rnd(1, 3, 11, 10, seed=4, scale=4.0)], [R])
    add("dw3x3_s1_nopad_c96", Fn(lambda m, x: m[0](x), dw(96, 3, 1, 0, bias=False)),
        [rnd(1, 96, 7, 9, seed=5)], [R])
    add("dw5x5_s1_c24", Fn(lambda m, x: m[0](x), dw(24, 5, 1, 2)), [rnd(1, 24, 10, 9, seed=6)], [R])
    add("dw5x5_s2_c17", Fn(lambda m, x: m[0](x), dw(17, 5, 2, 2)), [rnd(1, 17, 15, 14, seed=7)],
        [R])
    add("dw5x5_s2_c40_small", Fn(lambda m, x: m[0](x), dw(40, 5, 2, 2)),
        [rnd(1, 40, 3, 4, seed=8)], [R])
    add("dw3x3_mult2_c3", Fn(lambda m, x: m[0](x), dw(3, 3, 1, 1, m=2)),
        [rnd(1, 3, 7, 6, seed=9)], [R])
    add("dw3x3_dil2_c17", Fn(lambda m, x: m[0](x), dw(17, 3, 1, 2, d=2)),
        [rnd(1, 17, 9, 10, seed=10)], [R])
    add("dw7x7_c8", Fn(lambda m, x: m[0](x), dw(8, 7, 1, 3)), [rnd(1, 8, 9, 9, seed=11)], [R])
    add("dw3x1_s12_c17", Fn(lambda m, x: m[0](x), dw(17, (3, 1), (1, 2), (1, 0))),
        [rnd(1, 17, 8, 9, seed=12)], [R])
    add("dw3x3_s1_c1_wide", Fn(lambda m, x: m[0](x), dw(1, 3, 1, 1)),
        [rnd(1, 1, 5, 37, seed=13)], [R])
    # 1x1 at stride 1 (a per-channel affine: nhwc_kernels.cpp's dw_row_1x1); 70 channels leave
    # a partial vector at every level.
    add("dw1x1_relu_c70", Fn(lambda m, x: torch.relu(m[0](x)), dw(70, 1)),
        [special(1, 70, 6, 5, seed=14)], [R])
    # 5 channels over 5600 pixels: the NHWC -> NCHW transpose after the node is cut along its
    # pixels too (own_ops.cpp's kBlockB), so it is split over the threads.
    add("dw3x3_c5_many_pixels", Fn(lambda m, x: m[0](x), dw(5, 3, 1, 1)),
        [rnd(1, 5, 80, 70, seed=15)], [R])
    # 14 pixels a row (MobileNetV2's 14 x 14): a group of 8, then 6 pixels run several channel
    # blocks at a time (nhwc_kernels.cpp's dw_row_fixed); 80 channels leave blocks after the
    # multi-block groups at avx2 (8 lanes) and avx512 (16), 3x3 and 5x5 at stride 1 and 2.
    add("dw3x3_s1_c80_w14", Fn(lambda m, x: m[0](x), dw(80, 3, 1, 1)),
        [rnd(1, 80, 5, 14, seed=16)], [R])
    # Dilation 2 at stride 1 (lraspp's MobileNetV3 backbone): dw_row_fixed with D = 2.
    add("dw5x5_dil2_c80_w14", Fn(lambda m, x: m[0](x), dw(80, 5, 1, 4, d=2)),
        [rnd(1, 80, 6, 14, seed=18)], [R])
    add("dw5x5_s2_c80_w14", Fn(lambda m, x: torch.relu(m[0](x)), dw(80, 5, 2, 2)),
        [rnd(1, 80, 6, 27, seed=17)], [R])
    # ---- pooling ----------------------------------------------------------------------
    add("maxpool3x3_s2_p1_c17", Fn(lambda m, x: nn.functional.max_pool2d(x, 3, 2, 1)),
        [rnd(1, 17, 11, 13, seed=20)], ["MaxPool2d"])
    add("maxpool2x2_s2_ceil_c5", Fn(lambda m, x: nn.functional.max_pool2d(x, 2, 2,
                                                                         ceil_mode=True)),
        [special(2, 5, 7, 9, seed=21)], ["MaxPool2d"])
    add("maxpool3x3_s1_dil2_c40", Fn(lambda m, x: nn.functional.max_pool2d(x, 3, 1, 1, 2)),
        [rnd(1, 40, 8, 9, seed=22)], ["MaxPool2d"])
    add("maxpool2x3_s12_p1_c3", Fn(lambda m, x: nn.functional.max_pool2d(x, (2, 3), (1, 2),
                                                                         (1, 1))),
        [rnd(1, 3, 6, 9, seed=23)], ["MaxPool2d"])
    add("avgpool2x2_s2_c17", Fn(lambda m, x: nn.functional.avg_pool2d(x, 2, 2)),
        [rnd(1, 17, 7, 8, seed=24)], ["AvgPool2d"])
    add("avgpool3x3_s1_p1_excl_c40",
        Fn(lambda m, x: nn.functional.avg_pool2d(x, 3, 1, 1, count_include_pad=False)),
        [rnd(2, 40, 6, 7, seed=25)], ["AvgPool2d"])
    add("avgpool3x3_s2_p1_excl_c3",
        Fn(lambda m, x: nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=False)),
        [rnd(1, 3, 9, 8, seed=26)], ["AvgPool2d"])
    add("avgpool3x2_s21_c8", Fn(lambda m, x: nn.functional.avg_pool2d(x, (3, 2), (2, 1))),
        [rnd(1, 8, 9, 7, seed=27)], ["AvgPool2d"])
    add("globalpool_c40_b2", Fn(lambda m, x: x.mean([2, 3], keepdim=True)),
        [rnd(2, 40, 7, 5, seed=28)], ["GlobalAvgPool2d"])
    add("globalpool_c17", Fn(lambda m, x: x.mean([-1, -2], keepdim=True)),
        [rnd(1, 17, 3, 11, seed=29)], ["GlobalAvgPool2d"])
    # ---- binary -----------------------------------------------------------------------
    a, b = special(2, 3, 5, 7, seed=30), rnd(2, 3, 5, 7, seed=31)
    for op, f, node in [("add", torch.add, "Add"), ("sub", torch.sub, "Subtract"),
                        ("mul", torch.mul, "Multiply"), ("div", torch.div, "Div"),
                        ("min", torch.minimum, "Minimum"), ("max", torch.maximum, "Maximum")]:
        add(f"{op}_same", Fn(lambda m, x, y, f=f: f(x, y)), [a, b], [node])
        add(f"{op}_bcast", Fn(lambda m, x, y, f=f: f(x, y)),
            [rnd(4, 1, 6, seed=32), rnd(5, 1, seed=33)], [node])
        add(f"{op}_bcast_left", Fn(lambda m, x, y, f=f: f(x, y)),
            [rnd(3, 1, 1, seed=34), special(2, 3, 4, 17, seed=35)], [node])
    add("add_relu_scalar_rhs", Fn(lambda m, x, y: torch.relu(x + y)),
        [rnd(3, 17, seed=36), rnd(1, seed=37)], ["Add"])
    add("mul_scalar_lhs", Fn(lambda m, x, y: y * x), [rnd(2, 9, 5, seed=38), rnd(1, seed=39)],
        ["Multiply"])
    add("div_const", Fn(lambda m, x: x / 3.0 - 0.25), [rnd(2, 33, seed=40)], ["Div", "Subtract"])
    add("se_block_c40", Fn(lambda m, x: (lambda y: y * torch.sigmoid(y.mean([2, 3],
                                                                             keepdim=True)))(
        m[0](x)), dw(40, 3, 1, 1)), [rnd(1, 40, 7, 7, seed=41)],
        [R, "GlobalAvgPool2d", "Sigmoid", "Multiply"])
    add("add_bcast_channels_c17", Fn(lambda m, x, y: m[0](x) + y, dw(17, 3, 1, 1)),
        [rnd(2, 17, 5, 6, seed=42), rnd(2, 17, 1, 1, seed=43)], [R, "Add"])
    add("prelu_c17", Fn(lambda m, x: m[1](m[0](x)), dw(17, 3, 1, 1), nn.PReLU(17)),
        [rnd(1, 17, 5, 6, seed=44)], [R, "PReLU"])
    # ---- unary ------------------------------------------------------------------------
    x = special(3, 5, 37, seed=50)
    pos = torch.cat([special(3, 5, 37, seed=51).abs().flatten()[:80], rnd(475, seed=52)])
    pos = pos.reshape(3, 5, 37)
    una = [("abs", torch.abs, "Abs", x), ("neg", torch.neg, "Negate", x),
           ("floor", torch.floor, "Floor", x), ("ceil", torch.ceil, "Ceiling", x),
           ("square", lambda v: torch.pow(v, 2), "Square", x),
           ("sqrt", torch.sqrt, "SquareRoot", pos), ("rsqrt", torch.rsqrt,
                                                     "ReciprocalSquareRoot", pos),
           ("exp", torch.exp, "Exp", x), ("log", torch.log, "Log", pos),
           ("sin", torch.sin, "Sin", x), ("cos", torch.cos, "Cos", x),
           ("sigmoid", torch.sigmoid, "Sigmoid", x), ("tanh", torch.tanh, "Tanh", x),
           ("gelu", nn.functional.gelu, "Gelu", x),
           ("hardswish", nn.functional.hardswish, "Hardswish", x),
           ("leaky_relu", lambda v: nn.functional.leaky_relu(v, 0.125), "LeakyReLU", x),
           ("elu", lambda v: nn.functional.elu(v, 0.75), "ELU", x),
           ("relu", torch.relu, "Clamp", x),
           ("clamp", lambda v: torch.clamp(v, -0.5, 0.75), "Clamp", x),
           ("hardtanh", lambda v: nn.functional.hardtanh(v, -2.0, 3.0), "Clamp", x)]
    for op, f, node, inp in una:
        add(f"unary_{op}", Fn(lambda m, v, f=f: f(v)), [inp], [node])
    # ---- fused element-wise chains (fuse_elementwise) ------------------------------------
    # fused=(pairs fused, the node types pteron runs then); `nodes` are those it runs with
    # PTERON_XNNPACK_FUSE=0.
    silu = nn.functional.silu
    hswish = nn.functional.hardswish
    add("silu_special", Fn(lambda m, v: silu(v)), [special(3, 5, 37, seed=53)],
        ["Sigmoid", "Multiply"], fused=(1, ["Sigmoid"]))
    add("silu_written_out", Fn(lambda m, v: v * torch.sigmoid(v)), [rnd(2, 7, 3, seed=54)],
        ["Sigmoid", "Multiply"], fused=(1, ["Sigmoid"]))
    add("dw3x3_silu_c40", Fn(lambda m, x: silu(m[0](x)), dw(40, 3, 1, 1)),
        [rnd(1, 40, 9, 8, seed=55)], [R, "Sigmoid", "Multiply"], fused=(2, [R]))
    add("dw5x5_s2_silu_se_c24", Fn(lambda m, x: (lambda y: y * torch.sigmoid(
        y.mean([2, 3], keepdim=True)))(silu(m[0](x))), dw(24, 5, 2, 2)),
        [rnd(1, 24, 11, 10, seed=56)], [R, "Sigmoid", "GlobalAvgPool2d", "Multiply"],
        fused=(2, [R, "Sigmoid", "GlobalAvgPool2d", "Multiply"]))
    add("dw3x3_s2_hardswish_c17", Fn(lambda m, x: hswish(m[0](x)), dw(17, 3, 2, 1)),
        [rnd(1, 17, 9, 8, seed=58, scale=3.0)], [R, "Hardswish"], fused=(1, [R]))
    add("dw3x3_relu6_sigmoid_c8", Fn(lambda m, x: torch.sigmoid(
        nn.functional.hardtanh(m[0](x), 0.0, 6.0)), dw(8, 3, 1, 1)),
        [rnd(1, 8, 6, 7, seed=59, scale=3.0)], [R, "Sigmoid"], fused=(1, [R]))
    add("dw3x3_mult2_hardswish_c3", Fn(lambda m, x: hswish(m[0](x)), dw(3, 3, 1, 1, m=2)),
        [rnd(1, 3, 7, 6, seed=66, scale=3.0)], [R, "Hardswish"], fused=(1, [R]))
    # The same activations fused into the GEMM of a Conv2d (direct 1x1, indirect 3x3 split in
    # row tasks, grouped) or a FullyConnected (rows split, one row split by columns).
    C, F = "Conv2d", "FullyConnected"
    add("conv1x1_silu_c24", Fn(lambda m, x: silu(m[0](x)), conv(20, 24, 1)),
        [rnd(1, 20, 9, 7, seed=68)], [C, "Sigmoid", "Multiply"], fused=(2, [C]))
    add("conv3x3_hardswish_many_pixels", Fn(lambda m, x: hswish(m[0](x)), conv(8, 19, 3, p=1)),
        [rnd(1, 8, 24, 26, seed=69, scale=2.0)], [C, "Hardswish"], fused=(1, [C]))
    add("conv3x3_s2_groups2_sigmoid", Fn(lambda m, x: torch.sigmoid(m[0](x)),
                                         conv(8, 12, 3, s=2, p=1, g=2)),
        [rnd(1, 8, 11, 9, seed=70, scale=2.0)], [C, "Sigmoid"], fused=(1, [C]))
    add("linear_silu_rows", Fn(lambda m, x: silu(m[0](x)), lin(64, 40)),
        [rnd(50, 64, seed=71)], [F, "Sigmoid", "Multiply"], fused=(2, [F]))
    add("linear_hardswish_one_row", Fn(lambda m, x: hswish(m[0](x)), lin(96, 130)),
        [rnd(1, 96, seed=72, scale=2.0)], [F, "Hardswish"], fused=(1, [F]))
    # The sigmoid read twice, the convolution's output read twice: not fused.
    add("silu_sigmoid_read_twice", Fn(lambda m, v: (lambda s: (v * s, s + 1.0))(
        torch.sigmoid(v))), [rnd(4, 33, seed=57)], ["Sigmoid", "Multiply", "Add"])
    add("dw3x3_hardswish_and_out_c8", Fn(lambda m, x: (lambda y: (hswish(y), y))(m[0](x)),
                                         dw(8, 3, 1, 1)),
        [rnd(1, 8, 5, 6, seed=67)], [R, "Hardswish"])
    # ---- softmax, resize --------------------------------------------------------------
    add("softmax_4x10", Fn(lambda m, v: torch.softmax(v, -1)), [rnd(4, 10, seed=60, scale=3)],
        ["Softmax"])
    add("softmax_2x3x257", Fn(lambda m, v: torch.softmax(v, 2)),
        [rnd(2, 3, 257, seed=61, scale=5)], ["Softmax"])
    add("softmax_nan_row", Fn(lambda m, v: torch.softmax(v, -1)), [special(3, 7, seed=62)],
        ["Softmax"])
    # A transformer's window rows (swin: 49): whole vectors and a partial one at every level,
    # rows that do not start on a vector boundary, NaN / inf / -inf / large values planted.
    add("softmax_6x49_special", Fn(lambda m, v: torch.softmax(v, -1)), [special(6, 49, seed=63)],
        ["Softmax"])
    for ac in (False, True):
        tag = "align" if ac else "halfpixel"
        add(f"resize_x2_{tag}_c17",
            Fn(lambda m, v, ac=ac: nn.functional.interpolate(v, scale_factor=2, mode="bilinear",
                                                            align_corners=ac)),
            [rnd(1, 17, 5, 6, seed=63)], ["ResizeBilinear2d"])
        add(f"resize_odd_{tag}_c3",
            Fn(lambda m, v, ac=ac: nn.functional.interpolate(v, size=(9, 13), mode="bilinear",
                                                            align_corners=ac)),
            [rnd(2, 3, 5, 7, seed=64)], ["ResizeBilinear2d"])
        add(f"resize_down_{tag}_c8",
            Fn(lambda m, v, ac=ac: nn.functional.interpolate(v, size=(4, 3), mode="bilinear",
                                                            align_corners=ac)),
            [rnd(1, 8, 9, 7, seed=65)], ["ResizeBilinear2d"])
    return P


# Larger programs for measuring pteron's kernels against the XNNPACK library
# (`--bench DIR`; not committed): each is dominated by one node type.
def bench_programs():
    P = {}

    def relu6_stack(m, x):
        for layer in m:
            x = nn.functional.hardtanh(layer(x), 0.0, 6.0)
        return x

    def stack(layers, c, k, s):
        mods = [dw(c, k, s if i == 0 else 1, k // 2, seed=i) for i in range(layers)]
        return Fn(relu6_stack, *mods)

    P["dw3x3_stack4_56x56x96"] = (stack(4, 96, 3, 1), (rnd(1, 96, 56, 56),))
    P["dw3x3_s2_112x112x96"] = (stack(1, 96, 3, 2), (rnd(1, 96, 112, 112),))
    P["dw5x5_stack2_28x28x240"] = (stack(2, 240, 5, 1), (rnd(1, 240, 28, 28),))
    P["maxpool3x3_s2_112x112x64"] = (Fn(lambda m, x: nn.functional.max_pool2d(
        torch.relu(x), 3, 2, 1)), (rnd(1, 64, 112, 112),))
    P["avgpool2x2_56x56x96"] = (Fn(lambda m, x: nn.functional.avg_pool2d(torch.relu(x), 2)),
                                (rnd(1, 96, 56, 56),))
    P["se_mul_add_28x28x240"] = (Fn(lambda m, x: (lambda y: y * torch.sigmoid(
        y.mean([2, 3], keepdim=True)) + y)(nn.functional.hardswish(x))),
        (rnd(1, 240, 28, 28),))
    P["add_relu_56x56x96"] = (Fn(lambda m, x, y: torch.relu(x + y) * 0.5),
                              (rnd(1, 96, 56, 56), rnd(1, 96, 56, 56, seed=1)))
    P["softmax_256x1000"] = (Fn(lambda m, x: torch.softmax(x, -1)), (rnd(256, 1000),))
    P["resize_x2_56x56x64"] = (Fn(lambda m, x: nn.functional.interpolate(
        torch.relu(x), scale_factor=2, mode="bilinear", align_corners=False)),
        (rnd(1, 64, 56, 56),))
    P["sigmoid_tanh_1M"] = (Fn(lambda m, x: torch.tanh(torch.sigmoid(x))), (rnd(1024, 1024),))
    return P


def write_bench(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    for name, (mod, inputs) in bench_programs().items():
        mod = mod.eval()
        try:
            pte = export(mod, inputs)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: SKIPPED ({str(e).splitlines()[0][:200]})")
            continue
        (out / f"{name}.pte").write_bytes(pte)
        for i, t in enumerate(inputs):
            np.save(out / f"{name}.input_{i}.npy", t.numpy())
        with torch.no_grad():
            np.save(out / f"{name}.expected_0.npy", mod(*inputs).numpy())
        print(f"{name}: {len(pte)} bytes", flush=True)


def partitioner():
    from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS
    from executorch.backends.xnnpack.partition.config.generic_node_configs import EluConfig
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    # EluConfig is defined upstream but left out of the default list: added
    # here so that an ELU node can be tested.
    return XnnpackPartitioner(configs=list(ALL_PARTITIONER_CONFIGS) + [EluConfig])


def export(mod, inputs) -> bytes:
    from executorch.exir import to_edge_transform_and_lower
    ep = torch.export.export(mod, inputs)
    lowered = to_edge_transform_and_lower(ep, partitioner=[partitioner()])
    gm = lowered.exported_program().graph_module
    left = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"
            and "call_delegate" not in str(n.target) and "getitem" not in str(n.target)]
    if left:
        raise RuntimeError(f"not fully lowered: {left}")
    return lowered.to_executorch().buffer


def main(argv):
    if argv[:1] == ["--bench"]:
        write_bench(Path(argv[1]))
        return 0
    progs = programs()
    names = argv or list(progs)
    man_path = HERE / "nhwc.json"
    manifest = json.loads(man_path.read_text()) if man_path.exists() and argv else {
        "exporter": "tests/xnnpack_nodes/export_nhwc.py", "programs": {}}
    import executorch
    manifest["versions"] = {"torch": torch.__version__,
                            "executorch": getattr(executorch, "__version__", "?")}
    for name in names:
        mod, inputs, nodes, rtol, atol, fused = progs[name]
        try:
            pte = export(mod, inputs)
        except Exception as e:  # noqa: BLE001 - reported and skipped
            print(f"{name}: SKIPPED ({str(e).splitlines()[0][:200]})", flush=True)
            manifest["programs"].pop(name, None)
            continue
        with torch.no_grad():
            out = mod(*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        (HERE / f"nhwc_{name}.pte").write_bytes(pte)
        arrays = {f"input_{i}": t.numpy() for i, t in enumerate(inputs)}
        arrays.update({f"expected_{i}": t.contiguous().numpy() for i, t in enumerate(outs)})
        np.savez_compressed(HERE / f"nhwc_{name}.npz", **arrays)
        manifest["programs"][name] = {"file": f"nhwc_{name}.pte", "arrays": f"nhwc_{name}.npz",
                                      "inputs": len(inputs), "outputs": len(outs),
                                      "nodes": nodes, "rtol": rtol, "atol": atol}
        if fused:
            manifest["programs"][name]["fused"] = fused[0]
            manifest["programs"][name]["nodes_fused"] = fused[1]
        print(f"{name}: {len(pte)} bytes", flush=True)
    manifest["programs"] = dict(sorted(manifest["programs"].items()))
    man_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
