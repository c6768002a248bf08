#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the small programs tests/test_optimized.py runs on top of the
fixtures in models/fixtures: the shapes and layouts kernels_optimized handles
by special paths (parallel GEMM splits, grouped / dilated / depthwise / 1-D /
3-D / channels-last convolution, element-wise broadcasts, softmax over a
non-last dim, layer norm over two dims, aten::linear.out) and the dtypes it
must leave to kernels_portable (float64) or handle generically (float32 mixed
with int64 / float64 operands).

Development-only (needs torch and executorch, like models/export.py), and
written through the same fixture writer (models/fixture_writer.py). The tests
only read what it writes:
    tests/optimized/<name>.pte
    tests/optimized/<name>.forward.input_<i>.npy
    tests/optimized/<name>.forward.expected_<i>.npy   (eager PyTorch, no_grad)
    tests/optimized/manifest.json

Usage:
    /opt/pteron-dev/bin/python tests/optimized/export.py [--out DIR]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import nn

from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))

import fixture_writer as fw  # noqa: E402


class Gemm(nn.Module):
    """addmm big enough to split over threads, alpha/beta, mm and bmm with
    odd sizes."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(128, 128)
        self.fc2 = nn.Linear(128, 96)
        self.w = nn.Parameter(torch.randn(70, 131) * 0.1)
        self.bias = nn.Parameter(torch.randn(131))

    def forward(self, x, a, b, c):
        h = self.fc2(torch.relu(self.fc1(x)))                 # [64, 96]
        q = torch.addmm(self.bias, a, self.w, beta=0.5, alpha=2.0)  # [33, 131]
        r = torch.mm(a, self.w)                                # [33, 131]
        s = torch.bmm(b, c)                                    # [3, 40, 70]
        return h, q, r, s


class Conv(nn.Module):
    """Convolution shapes of every path: GEMM (padded, strided, dilated,
    grouped, no bias), pointwise, depthwise with a channel multiplier, 1-D,
    3-D, and one big enough to tile over threads."""

    def __init__(self):
        super().__init__()
        self.c3 = nn.Conv2d(8, 16, 3, padding=1)
        self.grouped = nn.Conv2d(16, 12, 3, stride=2, dilation=2, padding=2, groups=2)
        self.dw = nn.Conv2d(12, 24, 3, stride=2, padding=1, groups=12)
        self.pw = nn.Conv2d(24, 10, 1, bias=False)
        self.c1d = nn.Conv1d(6, 9, 5, padding=2, stride=2)
        self.c3d = nn.Conv3d(2, 4, 3, padding=(1, 0, 1))
        self.big = nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x, s, v, img):
        y = torch.relu(self.c3(x))
        y = self.grouped(y)
        y = self.dw(y)
        y = self.pw(y)
        return y, self.c1d(s), self.c3d(v), self.big(img)


class ConvChannelsLast(nn.Module):
    """Channels-last input, so the convolutions see an NHWC dim order."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(6, 8, 3, padding=1)
        self.pw = nn.Conv2d(8, 8, 1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x):
        y = self.c(x)
        return self.dw(self.pw(y)) + y


class Eltwise(nn.Module):
    """Broadcast shapes of add / sub / mul, Scalar variants, a 0-dim
    operand, relu, and a large tensor made from a small input (so element-wise
    and row kernels split over threads without megabytes of fixtures)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("zero_dim", torch.tensor(1.5))
        self.register_buffer("chan", torch.randn(3, 1, 1))
        self.register_buffer("row", torch.randn(5))
        self.up = nn.Parameter(torch.randn(8, 1000) * 0.5)
        self.register_buffer("bias", torch.randn(1000))

    def forward(self, x, col, rowv, small):
        a = x + self.chan                    # [2,3,4,5] + [3,1,1]
        b = x * self.row                     # [2,3,4,5] * [5]
        c = torch.sub(x, a, alpha=2.5)       # same shape, alpha
        d = x * self.zero_dim + 2.0          # 0-dim tensor, Scalar add
        e = torch.relu(col + rowv)           # [4,1] + [1,5]
        f = x * 0.25                         # mul.Scalar
        big = torch.mm(small, self.up) + self.bias   # [40, 1000]
        big = torch.relu(big) * big - big
        g = torch.softmax(big, dim=-1).sum(dim=1) + big.mean(dim=1)
        return a, b, c, d, e, f, g


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([6, 30])
        self.ln_plain = nn.LayerNorm(30, elementwise_affine=False)

    def forward(self, x):
        return (torch.softmax(x, dim=-1), torch.softmax(x, dim=1),
                torch.log_softmax(x, dim=-1), self.ln(x), self.ln_plain(x))


class Float64(nn.Module):
    """The same operators in float64: kernels_optimized registers none of them
    for this dtype, so kernels_portable must run them."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 10).double()
        self.conv = nn.Conv2d(3, 4, 3, padding=1).double()
        self.ln = nn.LayerNorm(10).double()

    def forward(self, x, img):
        h = torch.relu(self.fc(x)) * 2.0 + x[:, :10]
        h = torch.softmax(self.ln(h), dim=-1)
        return h, self.conv(img) + 1.0, torch.bmm(x.reshape(2, 6, 6), x.reshape(2, 6, 6))


class Mixed(nn.Module):
    """float32 first operands with int64 / float64 / bool others: the
    optimized kernel runs (the key is the first tensor's dtype) and must
    promote like PyTorch."""

    def forward(self, x, i, d, m):
        return x + i, x * i, x - d, x * m, torch.add(x, i, alpha=3)


class LinearPreserved(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 7)
        self.fc_nobias = nn.Linear(12, 5, bias=False)

    def forward(self, x):
        return self.fc(x), self.fc_nobias(x)


def _programs():
    g = torch.Generator().manual_seed(7)

    def rn(*s, dtype=torch.float32):
        return torch.randn(*s, generator=g).to(dtype)

    torch.manual_seed(1234)
    progs = [
        ("opt_gemm", Gemm(), (rn(64, 128), rn(33, 70), rn(3, 40, 50), rn(3, 50, 70)), [],
         "addmm split over threads, alpha/beta, mm, bmm with odd sizes"),
        ("opt_conv", Conv(), (rn(2, 8, 20, 20), rn(2, 6, 31), rn(1, 2, 5, 6, 7), rn(1, 16, 24, 24)), [],
         "convolution: GEMM, grouped+strided+dilated, depthwise x2, pointwise, 1-D, 3-D, tiled"),
        ("opt_conv_nhwc", ConvChannelsLast(),
         (rn(2, 6, 9, 11).to(memory_format=torch.channels_last),), [],
         "convolution on channels-last tensors"),
        ("opt_eltwise", Eltwise(), (rn(2, 3, 4, 5), rn(4, 1), rn(1, 5), rn(40, 8)), [],
         "add/sub/mul broadcasts, Scalar variants, 0-dim operand, relu, large rows"),
        ("opt_norm", Norm(), (rn(4, 6, 30) * 3.0,), [],
         "softmax (last and middle dim), log_softmax, layer norm over 2 dims and without affine"),
        ("opt_float64", Float64(), (rn(6, 12, dtype=torch.float64), rn(2, 3, 7, 7, dtype=torch.float64)), [],
         "float64: every operator falls back to kernels_portable"),
        ("opt_mixed", Mixed(),
         (rn(3, 4), torch.arange(12, dtype=torch.int64).reshape(3, 4) - 5,
          rn(3, 4, dtype=torch.float64), torch.tensor([True, False, True, True])), [],
         "float32 with int64 / float64 / bool operands (promotion in the optimized kernel)"),
        ("opt_linear", LinearPreserved(), (rn(2, 5, 12),), [torch.ops.aten.linear.default],
         "aten::linear.out (preserved), 3-D input, with and without bias"),
    ]
    # (name, module, inputs, preserved operators, what it proves)
    return progs


def _skip_casts(pte: bytes) -> bytes:
    """Rewires every operator argument that is the output of a
    dim_order_ops::_to_dim_order_copy to that copy's input. The exporter casts
    mixed-dtype operands to the result dtype first; without the casts the
    kernels see the operands eager PyTorch saw (same results), which is the
    case the optimized kernels must handle by promotion."""
    f = deserialize_pte_binary(pte)
    for plan in f.program.execution_plan:
        alias = {}
        calls = [ins.instr_args for ch in plan.chains for ins in ch.instructions
                 if hasattr(ins.instr_args, "op_index")]
        for a in calls:
            if plan.operators[a.op_index].name == "dim_order_ops::_to_dim_order_copy":
                for out in a.args[3:]:  # (self, non_blocking, dim_order, out[, return])
                    alias[out] = a.args[0]
        for a in calls:
            if plan.operators[a.op_index].name != "dim_order_ops::_to_dim_order_copy":
                a.args = [alias.get(i, i) for i in a.args]
    return bytes(serialize_pte_binary(f))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    entries = []
    for name, module, inputs, preserve, proves in _programs():
        methods = {"forward": fw.MethodSpec(module, inputs)}
        expected = fw.eager_reference(methods)
        pte = fw.export_program(methods, preserve_ops=preserve)
        if name == "opt_mixed":
            pte = _skip_casts(pte)
        entry = fw.write_fixture(args.out, name, pte, methods, expected)
        entry.update({"rtol": 1e-4, "atol": 1e-5, "proves": proves})
        entries.append(entry)
        print(f"{name}: {len(pte)} bytes, {entry['operators']}")
    fw.write_manifest(args.out, "tests/optimized/export.py", entries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
