#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Regenerate the .pte test fixtures in models/fixtures/.

Development-only: needs torch and executorch (see models/README.md). The C++ and
Python tests of pteron only read the files this script writes; they never import torch.

Usage:
    /opt/pteron-dev/bin/python models/export.py [--only NAME ...] [--no-verify]

Every fixture is exported and written by models/fixture_writer.py (the one writer
the optimized-kernel tests and the benchmarks use too):
    fixtures/<name>.pte
    fixtures/<name>.<method>.input_<i>.npy      (inputs fed to the method)
    fixtures/<name>.<method>.expected_<i>.npy   (eager PyTorch outputs, eval + no_grad)
    fixtures/<name>.<method>.case<k>.*.npy      (further dynamic sizes, where given)
and finally fixtures/manifest.json describing all of them.

Unless --no-verify is given, each program is also run with the upstream ExecuTorch
runtime (executorch.runtime.Runtime) and compared with the eager outputs.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn
from torch.export import Dim

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "fixtures"
sys.path.insert(0, str(HERE))

import fixture_writer as fw  # noqa: E402
from fixture_writer import MethodSpec  # noqa: E402

# Operators the pteron portable kernel library implements.  Every fixture except
# `unsupported_op` (and the delegated `mlp_xnnpack`, whose non-delegated part must
# also stay inside this set) must only use these.
SUPPORTED_OPS = {
    "aten::add", "aten::sub", "aten::mul", "aten::div", "aten::addmm", "aten::mm",
    "aten::bmm", "aten::permute_copy", "aten::view_copy", "aten::expand_copy",
    "aten::squeeze_copy", "aten::unsqueeze_copy", "aten::select_copy",
    "aten::slice_copy", "aten::split_with_sizes_copy", "aten::cat", "aten::clone",
    "dim_order_ops::_to_dim_order_copy", "dim_order_ops::_clone_dim_order",
    "aten::relu", "aten::clamp", "aten::hardtanh", "aten::sigmoid", "aten::tanh",
    "aten::gelu", "aten::hardswish", "aten::_softmax", "aten::_log_softmax",
    "aten::mean", "aten::sum", "aten::amax", "aten::max", "aten::argmax",
    "aten::cumsum", "aten::index_select", "aten::embedding", "aten::where",
    "aten::eq", "aten::ne", "aten::gt", "aten::lt", "aten::ge", "aten::le",
    "aten::logical_not", "aten::any", "aten::full_like", "aten::zeros_like",
    "aten::convolution", "aten::max_pool2d_with_indices", "aten::avg_pool2d",
    "aten::_native_batch_norm_legit_no_training", "aten::native_layer_norm",
    # Provided by the runtime itself (runtime/core/prim_ops.cpp), not a kernel library.
    "aten::sym_size", "aten::sym_numel", "aten::_local_scalar_dense",
    "executorch_prim::et_view", "executorch_prim::et_copy_index",
    "executorch_prim::add", "executorch_prim::sub", "executorch_prim::mul",
    "executorch_prim::floordiv", "executorch_prim::truediv", "executorch_prim::mod",
    "executorch_prim::neg", "executorch_prim::eq", "executorch_prim::gt",
    "executorch_prim::lt", "executorch_prim::ge", "executorch_prim::le",
    "executorch_prim::ceil", "executorch_prim::round", "executorch_prim::trunc",
    "executorch_prim::sym_float", "executorch_prim::sym_int", "executorch_prim::sym_max",
    "executorch_prim::sym_min", "executorch_prim::sym_not", "executorch_prim::sym_ite",
}

RTOL, ATOL = 1e-4, 1e-5


# --------------------------------------------------------------------------- models


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv1(x))))
        x = self.gap(self.conv2(x))
        x = torch.flatten(x, 1)
        return torch.log_softmax(self.fc(x), dim=1)


class DWSep(nn.Module):
    def __init__(self, c: int = 8, hidden: int = 8) -> None:
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.pw = nn.Conv2d(c, hidden, 1)
        self.bn = nn.BatchNorm2d(hidden)
        self.act = nn.Hardswish()

    def forward(self, x):
        return x + self.act(self.bn(self.pw(self.dw(x))))


class CNNBlocks(nn.Module):
    """The CNN blocks kernels_optimized's graph passes rewrite (tests/test_graph_opt.py): a
    strided stem (conv, batch norm, ReLU, max pool in ceil mode), a residual block (add, then
    ReLU), a grouped conv with a ShuffleNet channel shuffle and split, a squeeze-and-excitation
    gate (mean, SiLU, sigmoid, multiply), a DenseNet concatenation with a pre-activation batch
    norm and an average pool, a hardtanh, and a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.c1 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.grouped = nn.Conv2d(16, 16, 1, groups=2)
        self.se1 = nn.Conv2d(8, 4, 1)
        self.se2 = nn.Conv2d(4, 8, 1)
        self.pre = nn.BatchNorm2d(8)
        self.dense = nn.Conv2d(8, 8, 3, padding=1)
        self.avg = nn.AvgPool2d(2)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn0(self.stem(x))))
        x = torch.relu(self.bn2(self.c2(torch.relu(self.bn1(self.c1(x))))) + x)
        x = self.grouped(x)
        n, c, h, w = x.shape
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        a, b = x.split(c // 2, dim=1)
        gate = torch.sigmoid(self.se2(nn.functional.silu(self.se1(b.mean((2, 3), keepdim=True)))))
        b = b * gate
        x = torch.cat([a, self.dense(torch.relu(self.pre(b)))], dim=1)
        x = nn.functional.hardtanh(self.avg(x), -1.0, 1.0)
        return self.head(x.mean((2, 3)))


class CNNEdges(nn.Module):
    """Windows past what the NHWC row drivers take (65 rows: the graph passes leave those
    instructions to their kernels) and a max pool window of padding only (-inf, ATen's)."""

    def __init__(self) -> None:
        super().__init__()
        self.c = nn.Conv2d(2, 2, 1)
        self.dw = nn.Conv2d(2, 2, (65, 1), padding=(32, 0), groups=2)

    def forward(self, x):
        y = self.c(x)
        return (nn.functional.max_pool2d(y, (65, 1)), nn.functional.avg_pool2d(y, (65, 1)),
                self.dw(y),
                nn.functional.max_pool2d(y[:, :, :1], 2, stride=1, padding=1, dilation=2))


class Encoder(nn.Module):
    """One pre-norm encoder block with hand-written multi-head attention."""

    def __init__(self, vocab: int = 50, d: int = 32, heads: int = 4, ff: int = 64) -> None:
        super().__init__()
        self.heads, self.d = heads, d
        self.emb = nn.Embedding(vocab, d)
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.act = nn.GELU()

    def forward(self, tokens):
        b, s = tokens.shape
        h, dh = self.heads, self.d // self.heads
        pad = tokens == 0  # [b, s] True where padding
        x = self.emb(tokens)
        y = self.ln1(x)
        qkv = self.qkv(y).reshape(b, s, 3, h, dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [b, h, s, dh]
        q = q.reshape(b * h, s, dh) * (1.0 / dh ** 0.5)
        k = k.reshape(b * h, s, dh)
        v = v.reshape(b * h, s, dh)
        scores = torch.bmm(q, k.transpose(1, 2)).reshape(b, h, s, s)
        mask = pad[:, None, None, :].expand(b, h, s, s)
        scores = torch.where(mask, torch.full_like(scores, -1e9), scores)
        attn = torch.softmax(scores, dim=-1).reshape(b * h, s, s)
        ctx = torch.bmm(attn, v).reshape(b, h, s, dh).permute(0, 2, 1, 3).reshape(b, s, self.d)
        x = x + self.proj(ctx)
        x = x + self.ff2(self.act(self.ff1(self.ln2(x))))
        # Mean over the whole sequence, plus the validity mask and a "has padding" flag
        # (logical_not and any) as extra outputs.
        keep = torch.logical_not(pad)
        has_pad = torch.any(pad, dim=1)
        return x.mean(dim=1), keep, has_pad


class MultiOut(nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0, torch.argmax(x, dim=1), x.sum(dim=1), x > 0.0


class DynamicBatch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(12, 6)

    def forward(self, x):
        return torch.softmax(torch.relu(self.fc(x)), dim=-1)


class TwoMethodsBase(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(8, 4)
        self.dec = nn.Linear(4, 8)

    def encode(self, x):
        return torch.tanh(self.enc(x))

    def forward(self, x):
        return torch.sigmoid(self.dec(self.encode(x)))


class MethodAdapter(nn.Module):
    """Exposes one method of a module as forward (shares the same parameters)."""

    def __init__(self, base: nn.Module, method: str) -> None:
        super().__init__()
        self.base = base
        self.method = method

    def forward(self, *args):
        return getattr(self.base, self.method)(*args)


class Unsupported(nn.Module):
    def forward(self, x, y):
        return torch.atan2(x, y) + torch.erf(x)


class OpsElementwiseReduction(nn.Module):
    """Element-wise, comparison, reduction and shape operators."""

    def forward(self, x, y, idx):
        a = x - y
        b = x / (y * y + 1.0)
        c = a / 3.0
        d = torch.clamp(b, -0.5, 0.75)
        e = nn.functional.hardtanh(c, -0.25, 0.25)
        f = torch.sigmoid(d) + torch.tanh(e)
        g = torch.cat([f, x], dim=1)  # [4, 12]
        h = g[:, 2:9]  # slice_copy
        i = g[1]  # select_copy -> [12]
        j = i.unsqueeze(0).expand(3, 12)
        k = h.unsqueeze(1).squeeze(1)
        l = torch.cumsum(k, dim=1)
        m = torch.amax(l, dim=1, keepdim=True)
        mv, mi = torch.max(l, dim=0)
        n = l.sum(dim=1)
        o = torch.index_select(x, 0, idx)
        # Boolean logic spelled with where (a & b == where(a, b, a); a | b == where(a, a, b))
        # so that no bitwise_and/bitwise_or kernel is needed.
        c1 = torch.where(x != y, x > 0.0, x != y)
        c2 = torch.where(x < y, x < y, x >= 0.5)
        c3 = torch.where(c2, c2, y <= -0.5)
        c4 = torch.where(x == y, x == y, x > y)
        c5 = torch.where(x <= y, x >= y, x != 0.25)
        c6 = torch.where(c4, c4, torch.where(c5, c5, x < -1.0))
        z = torch.zeros_like(x)
        return j, m, mv, mi, n, o, torch.where(c1, x, z), c3, c6


class OpsPoolMatmul(nn.Module):
    """Pooling, matrix products, a reshape kept as view_copy, gelu(tanh)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 5))

    def forward(self, img, a, b):
        p = nn.functional.avg_pool2d(img, 2)
        q = torch.mm(a, self.w)
        r = torch.bmm(b, b.transpose(1, 2))
        t = nn.functional.gelu(r, approximate="tanh")
        return p.reshape(2, 9), q, r, t


class OpsPreserved(nn.Module):
    """hardswish and zeros_like, which the exporter keeps only when told to preserve them."""

    def forward(self, x):
        return nn.functional.hardswish(x) + torch.zeros_like(x)


class ConcatChain(nn.Module):
    """A concatenation of 7 channel groups, which the exporter writes as a chain of XNNPACK
    Concatenate nodes (at most 5 inputs each), as DenseNet's dense blocks are; its result is
    also read by a second concatenation, which must stay a node of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Conv2d(28, 5, 1)

    def forward(self, x):
        y = self.conv(x)
        z = torch.cat([y, y * 2.0, torch.relu(y), y + 1.0, -y, y * 0.5, torch.abs(y)], 1)
        return self.head(z), torch.cat([z, y], 1)


class PreAct(nn.Module):
    """DenseNet's pre-activation: batch norms after concatenations (the exporter writes each as a
    1x1 depthwise convolution), with and without a ReLU, before 1x1 convolutions (which
    XnnpackBackend fuses with them) and before a 3x3 and a 1x1 convolution whose input is also a
    graph output (which it must not). Each concatenation has convolution outputs among its
    inputs, which their convolutions write in place; the last one (a SqueezeNet fire module's)
    only those. 20 input channels, not a multiple of 16; batch 2 of 9 x 7 pixels."""

    def __init__(self) -> None:
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(20), nn.Conv2d(20, 12, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(32), nn.Conv2d(32, 8, 1)
        self.bn3, self.conv3 = nn.BatchNorm2d(40), nn.Conv2d(40, 6, 3, padding=1)
        self.conv4 = nn.Conv2d(40, 5, 1)
        for bn in (self.bn1, self.bn2, self.bn3):
            _randomize_bn(bn)

    def forward(self, x):
        y = torch.cat([x, self.conv1(torch.relu(self.bn1(x)))], 1)
        z = torch.cat([y, self.conv2(self.bn2(y))], 1)
        t = torch.relu(self.bn3(z))
        return torch.cat([self.conv3(t), self.conv4(t)], 1), t


class Residual(nn.Module):
    """Skip connections after convolutions, as ResNet and MobileNetV2 blocks end: a 3x3
    convolution + batch norm added to the block's input with a ReLU after the sum, and a 1x1
    convolution + batch norm added to its input (XnnpackBackend fuses each Add into the
    convolution's GEMM), and a last 1x1 convolution added to its input before the transpose back
    to NCHW. Two Adds it must keep: one whose other operand is computed after the convolution,
    and one after a convolution without a bias. 16 channels, batch 2 of 12 x 10 pixels."""

    def __init__(self) -> None:
        super().__init__()
        c = 16
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.pw, self.b3 = nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)
        self.late = nn.Conv2d(c, c, 1)
        self.nobias = nn.Conv2d(c, c, 1, bias=False)
        self.last = nn.Conv2d(c, c, 1)
        for bn in (self.b1, self.b2, self.b3):
            _randomize_bn(bn)

    def forward(self, x):
        y = torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))
        z = y + self.b3(self.pw(y))
        u = self.late(z) + torch.sigmoid(z)
        v = self.nobias(u) + u
        return self.last(v) + v


class Inverted(nn.Module):
    """MobileNetV2 / V3 inverted residual blocks (1x1 expansion, depthwise convolution, 1x1
    projection) at a size where the expanded tensor passes 1 MiB: XnnpackBackend computes such an
    expansion row by row inside the depthwise convolution that reads it (fuse_expand_depthwise).
    One block with ReLU6 and a 3x3 window and a residual, one with Hardswish after the expansion
    and after a 5x5 window of stride 2 (MobileNetV3's), and one smaller block whose expansion
    stays a node. Batch 3 of 49 x 49 pixels, 8 channels expanded to 72: 49 and 3 x 49 x 49 are
    one more than a multiple of every ISA level's GEMM row block (3, 6, 8), the cases where the
    row-by-row expansion must keep the unfused GEMM's one-row microkernel to its last pixel."""

    def __init__(self) -> None:
        super().__init__()

        def cbn(cin, cout, k, stride=1, groups=1, act=None):
            bn = nn.BatchNorm2d(cout)
            _randomize_bn(bn)
            layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), bn]
            return nn.Sequential(*layers, *([act] if act is not None else []))

        c, e = 8, 72
        self.b1 = nn.Sequential(cbn(c, e, 1, act=nn.ReLU6()),
                                cbn(e, e, 3, groups=e, act=nn.ReLU6()), cbn(e, c, 1))
        self.b2 = nn.Sequential(cbn(c, e, 1, act=nn.Hardswish()),
                                cbn(e, e, 5, 2, groups=e, act=nn.Hardswish()), cbn(e, 16, 1))
        self.b3 = nn.Sequential(cbn(16, 32, 1, act=nn.ReLU6()),
                                cbn(32, 32, 3, groups=32, act=nn.ReLU6()), cbn(32, 16, 1))

    def forward(self, x):
        x = x + self.b1(x)
        y = self.b2(x)
        return y + self.b3(y)


class XnnOps(nn.Module):
    """Node types of the XNNPACK delegate not in the other lowered fixtures:
    constant pad, average pool, bilinear resize, PReLU, leaky ReLU, clamp
    (hardtanh), concatenate (2 and 3 inputs), slice, min/max, abs, negate,
    floor, ceiling, sqrt, square, sigmoid, tanh, div, exp, log, sin, cos,
    rsqrt, GELU."""

    def __init__(self) -> None:
        super().__init__()
        self.prelu = nn.PReLU(4)

    def forward(self, img, a, b):
        x = nn.functional.pad(img, (1, 1, 2, 0), value=0.5)
        x = nn.functional.avg_pool2d(x, 2)
        x = nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        x = nn.functional.hardtanh(nn.functional.leaky_relu(self.prelu(x), 0.1), -1.5, 1.5)
        y = torch.cat([a, b, a * b], dim=1)[:, 1:7]
        y2 = torch.cat([a, b], dim=1)
        z = torch.maximum(a, b) + torch.minimum(a, b) - torch.abs(a) * torch.neg(b)
        z = torch.floor(z) + torch.ceil(z) + torch.sqrt(torch.abs(z) + 1.0) + torch.square(z)
        z = torch.sigmoid(z) / (torch.tanh(z) + 2.0)
        w = (torch.exp(-torch.abs(a)) + torch.log(torch.abs(b) + 1.0) + torch.sin(a)
             + torch.cos(b) + torch.rsqrt(torch.abs(a) + 1.0))
        return x, y, y2, z, w, nn.functional.gelu(a)


class SymSizeView(nn.Module):
    """Reshapes by its dynamic sizes: aten::sym_size, executorch_prim::mul.Scalar
    and executorch_prim::et_view (the reshaped tensor shares its input's storage)."""

    def forward(self, x):  # [b, c, 4]
        b, c = x.shape[0], x.shape[1]
        y = (x * 2.0).reshape(b * c, 4)
        z = x.reshape(b, c * 4)
        return y + 1.0, z.sum(dim=1)


class SymSizeScalarOps(nn.Module):
    """Scalar arithmetic and comparisons on a dynamic size, each broadcast into
    one column of the output (full_like takes the Int, Double or Bool)."""

    def forward(self, x):  # [b, 6]
        b = x.shape[0]
        r = x[:, :1]
        vals = [b + 3, b - 1, b * 2, b // 3, (-b) // 3, b / 4, b % 3, (-b) % 3, -b,
                math.ceil(b / 3), round(b / 4), math.trunc(b / 3), (b / 2) * 1.5,
                (b / 2) + 0.25, b == 4, b > 4, b < 4, b >= 4, b <= 4]
        return torch.cat([torch.full_like(r, v) for v in vals], dim=1)


class SymScalarTwin(nn.Module):
    """Exported, then rewritten (see sym_scalar_rewritten): add -> sym_max,
    sub -> sym_min, floordiv.Scalar -> floordiv.int, mod.Scalar -> mod.int,
    neg -> sym_float, truediv -> gt, ceil -> sym_not."""

    def forward(self, x):  # [b, 6]
        b = x.shape[0]
        r = x[:, :1]
        vals = [b + 5, b - 5, b // 3, b % 3, -b, math.ceil(b / 4)]
        return torch.cat([torch.full_like(r, v) for v in vals], dim=1)


class SymScalarRewritten(nn.Module):
    """What the rewritten SymScalarTwin program computes, in eager PyTorch."""

    def forward(self, x):
        b = x.shape[0]
        r = x[:, :1]
        vals = [max(b, 5), min(b, 5), b // 3, b % 3, float(b), not b > 4]
        return torch.cat([torch.full_like(r, v) for v in vals], dim=1)


class SymNumelTwin(nn.Module):
    """Exported, then aten::sym_size.int(x, 0) rewritten to aten::sym_numel(x)."""

    def forward(self, x):  # [b, 3]
        return torch.full_like(x, x.shape[0]) + x


class SymNumelRewritten(nn.Module):
    def forward(self, x):
        return torch.full_like(x, x.numel()) + x


class ItemScalar(nn.Module):
    """Tensor.item() (aten::_local_scalar_dense) of an int64 and a float32 0-dim
    input, used as a slice end and as a fill value: the output's first dim
    depends on the data."""

    def forward(self, x, n, s):  # [8, 4], int64 [], float32 []
        k = n.item()
        torch._check(k >= 1)
        torch._check(k <= x.shape[0])
        y = x[:k]
        return y * torch.full_like(y, s.item())


def _map_row(row, bias):
    return torch.relu(row * 2.0 + bias)


class MapRows(nn.Module):
    """torch's map over the rows of a dynamic-length input: a loop of jumps,
    aten::sym_size, select_copy, executorch_prim::add/eq/sub.Scalar, and
    executorch_prim::et_copy_index stacking one output row per iteration."""

    def forward(self, x, bias):  # [b, 4], [4]
        from torch._higher_order_ops.map import map as hmap
        return hmap(_map_row, x, bias)


class CondBranches(nn.Module):
    """torch.cond on a value computed from the input: the emitter writes the true branch,
    a jump over the false branch, then the false branch, and the jump that ends the true
    branch points at the chain's end (destination == instruction count)."""

    def forward(self, x, w):  # [4, 6], [6, 3]
        def taken(x, w):
            return torch.relu(x @ w) + 1.0

        def other(x, w):
            return torch.sigmoid(x @ w) * 2.0 - (x.sum(dim=1, keepdim=True))

        return torch.cond(x.sum() > 0, taken, other, (x, w))


class CondOnSize(nn.Module):
    """torch.cond on a dynamic size: the exporter declares the predicate an Int value, which
    executorch_prim::gt.Scalar of aten::sym_size overwrites with a Bool before the jump."""

    def forward(self, x):  # [b, 3], b in [1, 8]
        return torch.cond(x.shape[0] > 4, lambda x: x.sum(dim=0, keepdim=True) + x,
                          lambda x: x * 3.0, (x,))


# --------------------------------------------------------------------------- fixtures


@dataclass
class Fixture:
    name: str
    methods: Dict[str, MethodSpec]
    proves: str
    xnnpack: bool = False
    expect_supported: bool = True
    notes: List[str] = field(default_factory=list)
    tolerance: Tuple[float, float] = (RTOL, ATOL)
    # Extra keyword arguments for ExecutorchBackendConfig (to_executorch).
    backend_config: Dict[str, object] = field(default_factory=dict)
    # Operators kept whole by EdgeCompileConfig(preserve_ops=...) instead of decomposed.
    preserve_ops: List[object] = field(default_factory=list)
    # False when upstream's runtime lacks a kernel the program needs (load must fail there).
    upstream_runs: bool = True
    # Operators renamed after export (fixture_writer.rewrite_operators), for operators
    # upstream's runtime provides but its exporter never emits.
    rewrite: List[Tuple[str, str, Tuple[int, ...]]] = field(default_factory=list)
    # The manifest's "dynamic" entry: the dynamic dims of each method's inputs.
    dynamic: Optional[Dict[str, object]] = None
    # Set when upstream's runtime runs the program but is known to compute some output
    # differently from eager PyTorch (the expected outputs stay eager's): the reason.
    upstream_differs: Optional[str] = None


def _seeded(seed: int, fn: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(seed)
    m = fn()
    m.eval()
    return m


def _randomize_bn(bn: nn.BatchNorm2d) -> None:
    """Give a BatchNorm non-trivial running statistics and affine parameters."""
    n = bn.num_features
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(n) * 0.5)
        bn.running_var.copy_(torch.rand(n) * 1.5 + 0.25)
        bn.weight.copy_(torch.rand(n) + 0.5)
        bn.bias.copy_(torch.randn(n) * 0.2)


DYNAMIC_BATCH = {"forward": {"inputs": [{"dim": 0, "name": "batch", "min": 1, "max": 8,
                                         "static": {"1": 12}}],
                             "upper_bound_input_shapes": [[8, 12]]}}


def build_fixtures() -> List[Fixture]:
    fx: List[Fixture] = []

    # 1. mlp
    mlp = _seeded(1, MLP)
    torch.manual_seed(101)
    mlp_in = (torch.randn(4, 16),)
    fx.append(Fixture("mlp", {"forward": MethodSpec(mlp, mlp_in)},
                      "Linear-ReLU-Linear on the portable path: addmm, permute_copy, relu."))

    # 2. cnn
    def make_cnn():
        m = CNN()
        _randomize_bn(m.bn)
        return m
    cnn = _seeded(2, make_cnn)
    torch.manual_seed(102)
    fx.append(Fixture("cnn", {"forward": MethodSpec(cnn, (torch.randn(2, 3, 16, 16),))},
                      "Conv + BatchNorm (running stats) + ReLU + MaxPool + strided conv + "
                      "global average pool + Linear + log_softmax."))

    # 3. dwsep
    def make_dw():
        m = DWSep()
        _randomize_bn(m.bn)
        return m
    dw = _seeded(3, make_dw)
    torch.manual_seed(103)
    fx.append(Fixture("dwsep", {"forward": MethodSpec(dw, (torch.randn(1, 8, 12, 12),))},
                      "Depthwise (groups=C) and pointwise convolution, BatchNorm, Hardswish, "
                      "residual add."))

    # 4. transformer
    enc = _seeded(4, Encoder)
    torch.manual_seed(104)
    tokens = torch.randint(1, 50, (2, 10), dtype=torch.int64)
    tokens[0, 7:] = 0  # trailing padding in row 0
    tokens[1, 2] = 0   # one padded position in row 1
    fx.append(Fixture("transformer", {"forward": MethodSpec(enc, (tokens,))},
                      "int64 token input, embedding, layer norm, multi-head attention with a "
                      "key-padding mask built from tokens==0 (eq/where/logical_not/any), "
                      "softmax, GELU MLP, mean over the sequence; bool outputs.",
                      notes=["token 0 is padding; row 0 has 3 padded positions, row 1 has one; "
                             "no row is fully masked"]))

    # 5. multi_out
    mo = _seeded(5, MultiOut)
    torch.manual_seed(105)
    fx.append(Fixture("multi_out", {"forward": MethodSpec(mo, (torch.randn(3, 5),))},
                      "Several outputs of different dtypes: float32, int64 (argmax), "
                      "float32 reduction and bool (comparison)."))

    # 6. dynamic_batch
    dyn = _seeded(6, DynamicBatch)
    torch.manual_seed(106)
    batch = Dim("batch", min=1, max=8)
    fx.append(Fixture("dynamic_batch",
                      {"forward": MethodSpec(dyn, (torch.randn(3, 12),),
                                             dynamic_shapes={"x": {0: batch}})},
                      "Dynamic batch dimension (1..8): inputs of batch 3 must resize the "
                      "planned upper-bound tensors.",
                      notes=["input 0 shape [batch, 12] with batch in [1, 8]; planned upper "
                             "bound [8, 12]; committed input has batch 3",
                             "output 0 shape [batch, 6]"],
                      dynamic=DYNAMIC_BATCH))

    # 7. two_methods
    tm = _seeded(7, TwoMethodsBase)
    torch.manual_seed(107)
    tm_fwd_in = (torch.randn(2, 8),)
    tm_enc_in = (torch.randn(3, 8),)
    fx.append(Fixture("two_methods",
                      {"forward": MethodSpec(MethodAdapter(tm, "forward").eval(), tm_fwd_in),
                       "encode": MethodSpec(MethodAdapter(tm, "encode").eval(), tm_enc_in)},
                      "A program with two methods (forward, encode) sharing weights."))

    # 8. mlp_xnnpack (same weights as mlp)
    fx.append(Fixture("mlp_xnnpack", {"forward": MethodSpec(mlp, mlp_in)},
                      "The mlp program lowered to the XNNPACK delegate (XnnpackBackend); "
                      "without that backend registered, loading must fail with a missing-"
                      "delegate error.",
                      xnnpack=True))

    # 9. unsupported_op
    un = _seeded(9, Unsupported)
    torch.manual_seed(109)
    fx.append(Fixture("unsupported_op",
                      {"forward": MethodSpec(un, (torch.randn(4, 4), torch.randn(4, 4)))},
                      "Calls two operators that no kernel library provides "
                      "(pteron_test::absent_binary.out and pteron_test::absent_unary.out: "
                      "atan2 and erf renamed after export, since every upstream operator is "
                      "one pteron registers): loading must fail and name every missing "
                      "operator.",
                      expect_supported=False, upstream_runs=False,
                      rewrite=[("aten::atan2.out", "pteron_test::absent_binary.out", ()),
                               ("aten::erf.out", "pteron_test::absent_unary.out", ())]))

    # 10. ops_elementwise_reduction / ops_pool_matmul
    oa = _seeded(10, OpsElementwiseReduction)
    torch.manual_seed(110)
    oa_in = (torch.randn(4, 6), torch.randn(4, 6), torch.tensor([3, 0, 2], dtype=torch.int64))
    fx.append(Fixture("ops_elementwise_reduction", {"forward": MethodSpec(oa, oa_in)},
                      "Element-wise, comparison, reduction and shape operators not covered by "
                      "the other fixtures."))
    ob = _seeded(11, OpsPoolMatmul)
    torch.manual_seed(111)
    ob_in = (torch.randn(1, 2, 6, 6), torch.randn(3, 6), torch.randn(2, 3, 4))
    fx.append(Fixture("ops_pool_matmul", {"forward": MethodSpec(ob, ob_in)},
                      "avg_pool2d, mm, bmm, view_copy and gelu with approximate='tanh'.",
                      notes=["exported with ExecutorchBackendConfig(remove_view_copy=False) so "
                             "the reshape stays an aten::view_copy kernel call instead of being "
                             "elided by memory planning"],
                      backend_config={"remove_view_copy": False}))
    # 13. XNNPACK-lowered versions of the other models (XnnpackPartitioner,
    # default configuration; same weights and inputs as their portable twins).
    xnn_note = "lowered with XnnpackPartitioner() (default configuration)"
    fx.append(Fixture("cnn_xnnpack", {"forward": MethodSpec(cnn, fx[1].methods["forward"].inputs)},
                      "The cnn program lowered to XnnpackBackend: NCHW<->NHWC static transposes, "
                      "conv with fused ReLU, max pool, strided conv, global average pool, "
                      "linear; log_softmax stays outside the delegate.",
                      xnnpack=True, notes=[xnn_note]))
    fx.append(Fixture("dwsep_xnnpack", {"forward": MethodSpec(dw, fx[2].methods["forward"].inputs)},
                      "The dwsep block lowered to XnnpackBackend: depthwise + pointwise conv, "
                      "hardswish, residual add, static transposes.",
                      xnnpack=True, notes=[xnn_note]))
    fx.append(Fixture("transformer_xnnpack",
                      {"forward": MethodSpec(enc, fx[3].methods["forward"].inputs)},
                      "The transformer block lowered to XnnpackBackend (four delegate calls): "
                      "linear, 5-D reshape/transpose, batch matmul, softmax, GELU; embedding, "
                      "layer norm, masking and mean stay outside.",
                      xnnpack=True, notes=[xnn_note] + fx[3].notes))
    fx.append(Fixture("dynamic_batch_xnnpack",
                      {"forward": MethodSpec(dyn, fx[5].methods["forward"].inputs,
                                             dynamic_shapes={"x": {0: batch}})},
                      "The dynamic_batch model lowered to XnnpackBackend: the blob declares the "
                      "upper bound [8, 12]; batch 3 (and any batch in 1..8) must run.",
                      xnnpack=True, notes=[xnn_note] + fx[5].notes, dynamic=DYNAMIC_BATCH))

    def make_xnn_ops():
        m = XnnOps()
        with torch.no_grad():
            m.prelu.weight.copy_(torch.tensor([0.1, 0.2, -0.3, 0.5]))
        return m
    xo = _seeded(14, make_xnn_ops)
    torch.manual_seed(114)
    fx.append(Fixture("ops_xnnpack",
                      {"forward": MethodSpec(xo, (torch.randn(1, 4, 6, 6), torch.randn(3, 4),
                                                  torch.randn(3, 4)))},
                      "Delegate node types the other lowered fixtures lack (pad, avg pool, "
                      "bilinear resize, PReLU, leaky ReLU, clamp, concatenate 2/3, slice, "
                      "min/max, abs, negate, floor, ceiling, sqrt, square, sigmoid, div, tanh, "
                      "exp, log, sin, cos, rsqrt, GELU), all inside XnnpackBackend.",
                      xnnpack=True, notes=[xnn_note]))

    cc = _seeded(18, ConcatChain)
    torch.manual_seed(118)
    fx.append(Fixture("concat_chain_xnnpack",
                      {"forward": MethodSpec(cc, (torch.randn(1, 3, 6, 5),))},
                      "A 7-way channel concatenation, exported as a chain of XNNPACK "
                      "Concatenate nodes: XnnpackBackend copies it once (the chain "
                      "flattened at load); the concatenated tensor also feeds a second "
                      "concatenation and a convolution.",
                      xnnpack=True, notes=[xnn_note]))

    pa = _seeded(19, PreAct)
    torch.manual_seed(119)
    fx.append(Fixture("preact_xnnpack",
                      {"forward": MethodSpec(pa, (torch.randn(2, 20, 9, 7),))},
                      "Batch norm (+ ReLU) before 1x1 convolutions, as DenseNet's dense "
                      "layers: XnnpackBackend maps each input tile inside the convolution's "
                      "GEMM (the 1x1 DepthwiseConv2d fused at load); a batch norm whose output "
                      "is a graph output stays a node. Convolutions write their channels into "
                      "the concatenations' outputs in place.",
                      xnnpack=True, notes=[xnn_note]))

    rs = _seeded(21, Residual)
    torch.manual_seed(121)
    fx.append(Fixture("residual_xnnpack",
                      {"forward": MethodSpec(rs, (torch.randn(2, 16, 12, 10),))},
                      "Skip connections: XnnpackBackend adds the residual inside the GEMM of a "
                      "3x3 (with the ReLU after the sum) and two 1x1 convolutions (the Add fused "
                      "at load); two Adds stay nodes (the other operand computed after the "
                      "convolution, a convolution without bias).",
                      xnnpack=True, notes=[xnn_note]))

    iv = _seeded(22, Inverted)
    torch.manual_seed(122)
    fx.append(Fixture("inverted_xnnpack",
                      {"forward": MethodSpec(iv, (torch.randn(3, 8, 49, 49),))},
                      "Inverted residual blocks: XnnpackBackend computes two 1x1 expansions row "
                      "by row inside the depthwise convolution after each (a 3x3 with ReLU6, a "
                      "5x5 of stride 2 with Hardswish); a smaller block's expansion stays a node.",
                      xnnpack=True, notes=[xnn_note]))

    op = _seeded(12, OpsPreserved)
    torch.manual_seed(112)
    fx.append(Fixture("ops_preserved",
                      {"forward": MethodSpec(op, (torch.randn(3, 7) * 4.0,))},
                      "hardswish.out and zeros_like.out kernels (checked against eager only).",
                      notes=["exported with EdgeCompileConfig(preserve_ops=[aten.hardswish, "
                             "aten.zeros_like]); by default the exporter decomposes hardswish "
                             "into add/clamp/mul/div and zeros_like into full_like",
                             "upstream executorch 1.5.1's Python runtime registers neither "
                             "kernel, so this program cannot be cross-checked there; expected "
                             "outputs come from eager PyTorch as for every fixture"],
                      preserve_ops=[torch.ops.aten.hardswish.default,
                                    torch.ops.aten.zeros_like.default],
                      upstream_runs=False))
    fx.extend(_prim_fixtures())
    # cnn_blocks (appended last: the fixtures above are referred to by index)
    def make_blocks():
        m = CNNBlocks()
        for bn in (m.bn0, m.bn1, m.bn2, m.pre):
            _randomize_bn(bn)
        return m
    blocks = _seeded(31, make_blocks)
    torch.manual_seed(131)
    fx.append(Fixture("cnn_blocks", {"forward": MethodSpec(blocks, (torch.randn(2, 3, 30, 30),))},
                      "The blocks kernels_optimized's graph passes rewrite into NHWC regions: "
                      "stem with max pool in ceil mode, residual add + ReLU, grouped conv, "
                      "channel shuffle and split, squeeze-and-excitation (SiLU, sigmoid gate), "
                      "pre-activation batch norm, concatenation, average pool, hardtanh, "
                      "Linear head."))
    edges = _seeded(32, CNNEdges)
    torch.manual_seed(132)
    fx.append(Fixture("cnn_edges", {"forward": MethodSpec(edges, (torch.randn(1, 2, 66, 3),))},
                      "Max and average pools and a depthwise convolution 65 rows tall (past the "
                      "NHWC row drivers' 64: the graph passes keep their kernels), and a max "
                      "pool window of padding only (-inf).",
                      upstream_differs="upstream's max_pool2d gives 0 for a window of padding "
                                       "only, eager PyTorch -inf"))
    return fx


def _prim_fixtures() -> List[Fixture]:
    """The fixtures of the prim operators, which the runtime itself provides
    (runtime/core/prim_ops.cpp): dynamic sizes, .item() and a map loop."""
    fx: List[Fixture] = []
    prim_note = ("the operators outside kernels_portable are prim operators, which the "
                 "runtime itself provides (runtime/core/prim_ops.cpp)")
    torch.manual_seed(115)
    bc = {"x": {0: Dim("b", min=1, max=8), 1: Dim("c", min=2, max=5)}}
    fx.append(Fixture("sym_size_view",
                      {"forward": MethodSpec(SymSizeView().eval(), (torch.randn(3, 2, 4),),
                                             dynamic_shapes=bc,
                                             cases=[(torch.randn(8, 5, 4),),
                                                    (torch.randn(1, 2, 4),),
                                                    (torch.randn(5, 3, 4),)])},
                      "Reshape by dynamic sizes: aten::sym_size.int, executorch_prim::"
                      "mul.Scalar and executorch_prim::et_view.default (a view sharing its "
                      "input's storage), at several sizes.",
                      notes=["input 0 shape [b, c, 4], b in [1, 8], c in [2, 5]; committed "
                             "input [3, 2, 4]; cases [8, 5, 4], [1, 2, 4], [5, 3, 4]", prim_note],
                      dynamic={"forward": {"inputs": [{"dim": 0, "name": "b", "min": 1, "max": 8},
                                                      {"dim": 1, "name": "c", "min": 2,
                                                       "max": 5}],
                                           "upper_bound_input_shapes": [[8, 5, 4]]}}))
    b6 = {"x": {0: Dim("b", min=1, max=8)}}
    dyn_b6 = {"forward": {"inputs": [{"dim": 0, "name": "b", "min": 1, "max": 8}],
                          "upper_bound_input_shapes": [[8, 6]]}}
    fx.append(Fixture("sym_size_scalar_ops",
                      {"forward": MethodSpec(SymSizeScalarOps().eval(), (torch.randn(3, 6),),
                                             dynamic_shapes=b6,
                                             cases=[(torch.randn(b, 6),) for b in (1, 2, 4, 6, 8)])},
                      "Scalar arithmetic and comparisons on a dynamic size: executorch_prim::"
                      "add, sub, mul, floordiv, truediv, mod, neg, ceil, round, trunc, eq, gt, "
                      "lt, ge, le (.Scalar), on Int and Double operands, with Python's rounding "
                      "of floordiv/mod of negative values and round-half-to-even.",
                      notes=["input 0 shape [b, 6], b in [1, 8]; committed b = 3; cases b = 1, "
                             "2, 4, 6, 8", "output column j is the j-th scalar of the model's "
                             "list, broadcast by full_like", prim_note,
                             "upstream executorch 1.5.1's runtime computes column 7, (-b) % 3, "
                             "with C's remainder (-1 for b = 1) where eager PyTorch and pteron "
                             "give Python's (2); the other columns match"],
                      dynamic=dyn_b6,
                      upstream_differs="executorch_prim::mod.Scalar of a negative Int: C's "
                                       "remainder instead of Python's"))
    fx.append(Fixture("sym_scalar_rewritten",
                      {"forward": MethodSpec(SymScalarTwin().eval(), (torch.randn(3, 6),),
                                             dynamic_shapes=b6,
                                             cases=[(torch.randn(b, 6),) for b in (1, 5, 8)],
                                             eager=SymScalarRewritten().eval())},
                      "The prim operators upstream's runtime provides but its exporter does not "
                      "emit on its own here: executorch_prim::sym_max, sym_min, sym_float, "
                      "sym_not (.Scalar), floordiv.int and mod.int.",
                      notes=["exported from SymScalarTwin, then operators renamed with "
                             "fixture_writer.rewrite_operators: add.Scalar -> sym_max.Scalar, "
                             "sub.Scalar -> sym_min.Scalar, floordiv.Scalar -> floordiv.int, "
                             "mod.Scalar -> mod.int, neg.Scalar -> sym_float.Scalar, "
                             "truediv.Scalar -> gt.Scalar, ceil.Scalar -> sym_not.Scalar; "
                             "expected outputs come from SymScalarRewritten in eager PyTorch, "
                             "and upstream's runtime runs the rewritten program to the same "
                             "outputs", prim_note],
                      rewrite=[("executorch_prim::add.Scalar", "executorch_prim::sym_max.Scalar", ()),
                               ("executorch_prim::sub.Scalar", "executorch_prim::sym_min.Scalar", ()),
                               ("executorch_prim::floordiv.Scalar", "executorch_prim::floordiv.int",
                                ()),
                               ("executorch_prim::mod.Scalar", "executorch_prim::mod.int", ()),
                               ("executorch_prim::neg.Scalar", "executorch_prim::sym_float.Scalar",
                                ()),
                               ("executorch_prim::truediv.Scalar", "executorch_prim::gt.Scalar", ()),
                               ("executorch_prim::ceil.Scalar", "executorch_prim::sym_not.Scalar",
                                ())],
                      dynamic=dyn_b6))
    fx.append(Fixture("sym_numel_rewritten",
                      {"forward": MethodSpec(SymNumelTwin().eval(), (torch.randn(3, 3),),
                                             dynamic_shapes={"x": {0: Dim("b", min=1, max=8)}},
                                             cases=[(torch.randn(b, 3),) for b in (1, 8)],
                                             eager=SymNumelRewritten().eval())},
                      "aten::sym_numel, which the exporter folds into products of sym_size: "
                      "the element count of a dynamic tensor.",
                      notes=["exported from SymNumelTwin, then aten::sym_size.int(x, 0) rewritten "
                             "to aten::sym_numel(x) (its dim argument dropped); expected outputs "
                             "come from SymNumelRewritten in eager PyTorch, and upstream's runtime "
                             "runs the rewritten program to the same outputs", prim_note],
                      rewrite=[("aten::sym_size.int", "aten::sym_numel", (1,))],
                      dynamic={"forward": {"inputs": [{"dim": 0, "name": "b", "min": 1, "max": 8}],
                                           "upper_bound_input_shapes": [[8, 3]]}}))
    torch.manual_seed(116)
    item_x = torch.randn(8, 4)
    fx.append(Fixture("item_scalar",
                      {"forward": MethodSpec(ItemScalar().eval(),
                                             (item_x, torch.tensor(3), torch.tensor(1.5)),
                                             cases=[(item_x, torch.tensor(8), torch.tensor(-0.5)),
                                                    (item_x, torch.tensor(1), torch.tensor(2.0))])},
                      "Tensor.item() as aten::_local_scalar_dense: an int64 element becomes an "
                      "Int (a slice end), a float32 element a Double (a fill value); the output "
                      "has as many rows as the data says.",
                      notes=["inputs: x [8, 4], n int64 [] in [1, 8], s float32 []; committed "
                             "n = 3, s = 1.5; cases (8, -0.5), (1, 2.0)", prim_note]))
    torch.manual_seed(117)
    fx.append(Fixture("map_rows",
                      {"forward": MethodSpec(MapRows().eval(), (torch.randn(8, 4), torch.randn(4)),
                                             dynamic_shapes={"x": {0: Dim("b", min=1, max=8)},
                                                             "bias": None},
                                             cases=[(torch.randn(3, 4), torch.randn(4)),
                                                    (torch.randn(1, 4), torch.randn(4))])},
                      "torch's map over rows: a loop of JumpFalse instructions with "
                      "aten::sym_size.int, executorch_prim::add/eq/sub.Scalar, and "
                      "executorch_prim::et_copy_index.tensor stacking one row per iteration.",
                      notes=["input 0 shape [b, 4], b in [1, 8]; the exporter plans the map's "
                             "tensors for the example's size, so the committed input has b = 8 "
                             "(the bound); cases b = 3 and 1", prim_note],
                      dynamic={"forward": {"inputs": [{"dim": 0, "name": "b", "min": 1, "max": 8}],
                                           "upper_bound_input_shapes": [[8, 4], [4]]}}))
    torch.manual_seed(118)
    cw = torch.randn(6, 3)
    cx = torch.randn(4, 6).abs() + 0.1  # x.sum() > 0: the first branch
    fx.append(Fixture("cond_branches",
                      {"forward": MethodSpec(CondBranches().eval(), (cx, cw),
                                             cases=[(-cx, cw), (cx * 0.5, cw)])},
                      "torch.cond: JumpFalse on a one-element bool tensor, both branches, and "
                      "a jump whose destination is the end of the chain (upstream's emitter "
                      "ends the first branch that way).",
                      notes=["inputs x [4, 6], w [6, 3]; the committed x has a positive sum "
                             "(first branch), case 1 a negative one (second branch)"]))
    torch.manual_seed(119)
    fx.append(Fixture("cond_on_size",
                      {"forward": MethodSpec(CondOnSize().eval(), (torch.randn(8, 3),),
                                             dynamic_shapes={"x": {0: Dim("b", min=1, max=8)}},
                                             cases=[(torch.randn(2, 3),), (torch.randn(5, 3),)])},
                      "torch.cond on a dynamic size (x.shape[0] > 4): the jump reads a value "
                      "declared Int, which executorch_prim::gt.Scalar overwrites with a Bool.",
                      notes=["input 0 shape [b, 3], b in [1, 8]; committed b = 8 (first branch), "
                             "cases b = 2 (second) and 5 (first)", prim_note],
                      dynamic={"forward": {"inputs": [{"dim": 0, "name": "b", "min": 1, "max": 8}],
                                           "upper_bound_input_shapes": [[8, 3]]}}))
    return fx


# --------------------------------------------------------------------------- helpers


def _export_program(f: Fixture) -> bytes:
    pte = fw.export_program(f.methods, xnnpack=f.xnnpack, preserve_ops=f.preserve_ops,
                            backend_config=f.backend_config)
    return fw.rewrite_operators(pte, f.rewrite) if f.rewrite else pte


def _verify(f: Fixture, path: Path, expected: Dict[str, List[List[torch.Tensor]]]) -> bool:
    """Runs every method with upstream's runtime, on its inputs and on every
    case, and compares with the eager outputs."""
    from executorch.runtime import Runtime

    rt = Runtime.get()
    program = rt.load_program(path)
    ok = True
    matches = True
    rtol, atol = f.tolerance
    for mname, spec in f.methods.items():
        for k, inputs in enumerate([spec.inputs] + list(spec.cases)):
            what = f"{f.name}.{mname}" + (f" case {k}" if k else "")
            exp = expected[mname][k]
            try:
                method = program.load_method(mname)
                got = fw.flatten_outputs(method.execute(list(inputs)))
            except Exception as e:  # noqa: BLE001
                if not f.upstream_runs:
                    print(f"  [{what}] upstream runtime cannot load it, as expected "
                          f"(missing kernels): {e}")
                    continue
                print(f"  [{what}] upstream runtime: FAILED to run: {e}")
                return False
            if not f.upstream_runs:
                print(f"  [{what}] upstream runtime now runs it: set upstream_runs")
                ok = False
            if len(got) != len(exp):
                print(f"  [{what}] output count {len(got)} != {len(exp)}")
                ok = False
                continue
            for i, (g, e) in enumerate(zip(got, exp)):
                same = (g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape))
                if same:
                    if e.dtype.is_floating_point:
                        same = torch.allclose(g, e, rtol=rtol, atol=atol)
                        err = (g - e).abs().max().item() if e.numel() else 0.0
                    else:
                        same = torch.equal(g, e)
                        err = 0.0 if same else float("nan")
                else:
                    err = float("nan")
                status = "OK" if same else "MISMATCH"
                print(f"  [{what}] output {i} {fw.dtype_name(e)}{list(e.shape)}: "
                      f"{status} (max abs err {err:.3g}, rtol {rtol:g}, atol {atol:g})")
                matches &= same
    if f.upstream_differs:
        if matches:
            print(f"  [{f.name}] upstream runtime now matches eager: clear upstream_differs")
            return False
        print(f"  [{f.name}] the mismatch is the known difference: {f.upstream_differs}")
        return ok
    return ok and matches


# Malformed programs for tests/test_prim_ops.py: a prim operator meets a wrong-typed
# or missing argument at execute and must fail naming itself and the argument.
# (name, source fixture whose inputs it takes, operator, argument position, value type put
#  there or None to drop it, what the error message must contain)
PRIM_ERRORS = [
    ("sym_size_dim_is_tensor", "sym_size_view", "aten::sym_size.int", 1, "Tensor",
     ["aten::sym_size.int", "argument 1 ('dim') is Tensor"]),
    ("sym_size_missing_argument", "sym_size_view", "aten::sym_size.int", 1, None,
     ["aten::sym_size.int", "takes 3 arguments, the program passes 2"]),
    ("mul_scalar_a_is_tensor", "sym_size_view", "executorch_prim::mul.Scalar", 0, "Tensor",
     ["executorch_prim::mul.Scalar", "argument 0 ('a') is Tensor"]),
    ("mul_scalar_out_is_tensor", "sym_size_view", "executorch_prim::mul.Scalar", 2, "Tensor",
     ["executorch_prim::mul.Scalar", "argument 2 ('out') is Tensor"]),
    ("et_view_size_is_int", "sym_size_view", "executorch_prim::et_view.default", 1, "Int",
     ["executorch_prim::et_view.default", "argument 1 ('size') is Int"]),
    ("local_scalar_dense_self_is_int", "item_scalar", "aten::_local_scalar_dense", 0, "Int",
     ["aten::_local_scalar_dense", "argument 0 ('self') is Int"]),
    # A Bool value may be a jump condition: a prim operator never changes its type.
    ("add_scalar_out_is_bool", "map_rows", "executorch_prim::add.Scalar", 2, "Bool",
     ["executorch_prim::add.Scalar", "argument 2 ('out') is a Bool, the result is an Int"]),
    ("et_copy_index_index_is_tensor", "map_rows", "executorch_prim::et_copy_index.tensor", 2,
     "Tensor", ["executorch_prim::et_copy_index.tensor", "argument 2 ('index') is Tensor"]),
]


def export_prim_errors(out: Path) -> None:
    """Writes PRIM_ERRORS into OUT/prim_errors/ (programs and a manifest)."""
    d = out / "prim_errors"
    d.mkdir(parents=True, exist_ok=True)
    sources = {f.name: f for f in build_fixtures()}
    entries = []
    for name, source, op, pos, kind, contains in PRIM_ERRORS:
        pte = fw.rewrite_argument(_export_program(sources[source]), op, pos, kind)
        (d / f"{name}.pte").write_bytes(pte)
        entries.append({"name": name, "file": f"{name}.pte", "size_bytes": len(pte),
                        "inputs_of": source, "operator": op,
                        "argument": pos, "replaced_by": kind,
                        "error": {"code": 2, "code_name": "invalid_program",
                                  "contains": contains}})
        print(f"  prim_errors/{name}.pte: {len(pte)} bytes ({op} argument {pos} -> {kind})")
    fw.write_manifest(d, "models/export.py (PRIM_ERRORS)", entries)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="export only these fixtures (manifest is "
                    "updated in place for them)")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip running the programs with upstream's runtime")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)

    warnings.filterwarnings("ignore")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    entries: Dict[str, dict] = {}
    if args.only:
        old = fw.read_manifest(out)
        if old:
            entries = fw.reusable_entries(out)
            if not entries:
                print(f"{out / 'manifest.json'} was written by torch {old.get('torch')} / "
                      f"executorch {old.get('executorch')}, not {fw.exporter_versions()}: "
                      "export every fixture (no --only)")
                return 1

    fixtures = build_fixtures()
    failures = []
    for f in fixtures:
        if args.only and f.name not in args.only:
            continue
        print(f"== {f.name}")
        expected = fw.eager_reference(f.methods)
        pte = _export_program(f)
        entry = fw.write_fixture(out, f.name, pte, f.methods, expected)
        ops, delegates = entry["operators"], entry["delegates"]
        entry.update({
            "uses_only_supported_operators": all(o.split(".")[0] in SUPPORTED_OPS
                                                 for o in ops),
            "upstream_runtime_runs": f.upstream_runs,
            "rtol": f.tolerance[0],
            "atol": f.tolerance[1],
            "proves": f.proves,
            "notes": f.notes,
        })
        if f.dynamic:
            entry["dynamic"] = f.dynamic
        entries[f.name] = entry
        outside = [o for o in ops if o.split(".")[0] not in SUPPORTED_OPS]
        print(f"  {len(pte)} bytes; delegates {delegates}; operators: {', '.join(ops)}")
        if outside:
            print(f"  operators outside the pteron portable set: {', '.join(outside)}")
        if f.expect_supported and outside:
            failures.append(f"{f.name}: unexpected operators {outside}")
        if not f.expect_supported and not outside:
            failures.append(f"{f.name}: expected operators outside the set, found none")
        if not args.no_verify:
            if not _verify(f, out / entry["file"], expected):
                failures.append(f"{f.name}: upstream runtime does not match eager")

    if not args.only or "prim_errors" in args.only:
        print("== prim_errors")
        export_prim_errors(out)

    order = [f.name for f in fixtures]
    manifest_path = fw.write_manifest(
        out, "models/export.py",
        sorted(entries.values(), key=lambda e: order.index(e["name"]) if e["name"] in order
               else len(order)))
    print(f"wrote {manifest_path}")
    if failures:
        print("FAILURES:\n  " + "\n  ".join(failures))
        return 1
    print("all fixtures exported" + ("" if args.no_verify else " and verified"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
