# SPDX-License-Identifier: BSD-3-Clause
"""Exports XNNPACK-lowered programs of two kinds that upstream's XnnpackPartitioner lowers whole
and upstream's runtime runs, each with eager PyTorch's outputs (expected_*.npy) and upstream's
runtime's (upstream_*.npy) in models/fixture_writer.py's layout:

models/fixtures/xnnpack_dynamic/: a dynamic dimension other than the first, declared in the
blob at its upper bound (in the value shapes and the reshapes), run at several lengths, the
bound included:
    attention_seq   pre-norm self-attention block (LayerNorm, fused QKV Linear, heads split and
                    merged by reshape/transpose, softmax attention, residual), x [1, S, 64],
                    S dynamic in 1..64
    conv1d_time     Conv1d stack (dense, depthwise, pointwise; GELU, ReLU) over a time axis,
                    x [1, 4, T], T dynamic in 8..400 (upstream lowers Conv1d as Conv2d between
                    reshapes)
    mlp_tokens      Linear -> SiLU -> Linear over [2, S, 32], S dynamic in 1..48, with the
                    tokens flattened by a reshape into the batch

models/fixtures/xnnpack_half/: float16 programs (model.half(), float16 inputs and outputs:
XNNPACK's F16 values). Their expected outputs are eager PyTorch in float32 on the same float16
weights and inputs (model.float()), so a fixture's error is the program's own rounding:
    mlp_f16         Linear -> GELU -> Linear -> softmax, [4, 32]
    cnn_f16         Conv2d, ReLU, depthwise Conv2d, BatchNorm, Hardswish, average pooling,
                    Linear, [1, 3, 16, 16]
    attention_f16   the attention block of attention_seq in float16, S dynamic in 1..32

    .venv-export/bin/python models/export_xnnpack_more.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture_writer as fw  # noqa: E402
from fixture_writer import MethodSpec  # noqa: E402

HERE = Path(__file__).resolve().parent / "fixtures"


class Attention(nn.Module):
    def __init__(self, d=64, heads=2):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm(x)).split(d, -1)
        split = [t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v)]
        a = F.scaled_dot_product_attention(*split).transpose(1, 2).reshape(b, s, d)
        return x + self.out(a)


class Conv1dStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 3, padding=1)
        self.c2 = nn.Conv1d(8, 8, 5, padding=2, groups=8)
        self.c3 = nn.Conv1d(8, 4, 1)

    def forward(self, x):
        return self.c3(F.relu(self.c2(F.gelu(self.c1(x)))))


class HalfMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 64)
        self.b = nn.Linear(64, 16)

    def forward(self, x):
        return self.b(F.gelu(self.a(x))).softmax(-1)


class HalfCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, padding=1)
        self.d = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = F.hardswish(self.bn(self.d(F.relu(self.c(x)))))
        return self.fc(self.pool(y).flatten(1))


class Float32Of(nn.Module):
    """Eager float32 on a float16 model's weights: the fixtures' expected outputs."""

    def __init__(self, half_model):
        super().__init__()
        import copy
        self.m = copy.deepcopy(half_model).float()

    def forward(self, x):
        return self.m(x.float())


class TokenMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 64)
        self.b = nn.Linear(64, 32)

    def forward(self, x):
        b, s, d = x.shape
        y = self.b(F.silu(self.a(x.reshape(b * s, d))))
        return y.reshape(b, s, d)


def export_set(out: Path, generator: str, progs) -> None:
    entries = []
    for name, module, x, dyn, cases, eager in progs:
        module.eval()
        spec = MethodSpec(module, (x,), dyn, [(c,) for c in cases], eager=eager)
        methods = {"forward": spec}
        expected = fw.eager_reference(methods)
        pte = fw.export_program(methods, xnnpack=True)
        entry = fw.write_fixture(out, name, pte, methods, expected)
        fw.record_upstream(out, name, pte, entry)
        m = entry["methods"]["forward"]
        ups = ["ok" if "upstream" in c else c["upstream_error"] for c in [m] + m.get("cases", [])]
        print(f"{name}: {len(pte)} bytes, delegates {entry['delegates']}, CPU operators "
              f"{entry['operators']}, upstream {ups}", flush=True)
        entries.append(entry)
    fw.write_manifest(out, generator, entries)


def main():
    torch.manual_seed(20261207)
    export_set(HERE / "xnnpack_dynamic", "models/export_xnnpack_more.py", [
        ("attention_seq", Attention(), torch.randn(1, 16, 64), {"x": {1: Dim("s", min=1, max=64)}},
         [torch.randn(1, n, 64) for n in (1, 7, 64)], None),
        ("conv1d_time", Conv1dStack(), torch.randn(1, 4, 100),
         {"x": {2: Dim("t", min=8, max=400)}}, [torch.randn(1, 4, n) for n in (8, 50, 400)], None),
        ("mlp_tokens", TokenMlp(), torch.randn(2, 5, 32), {"x": {1: Dim("s", min=1, max=48)}},
         [torch.randn(2, n, 32) for n in (1, 17, 48)], None),
    ])
    torch.manual_seed(20261208)
    half = []
    for name, model, x, dyn, cases in [
            ("mlp_f16", HalfMlp(), torch.randn(4, 32), None, []),
            ("cnn_f16", HalfCnn(), torch.randn(1, 3, 16, 16), None, []),
            ("attention_f16", Attention(), torch.randn(1, 9, 64),
             {"x": {1: Dim("s", min=1, max=32)}}, [torch.randn(1, n, 64) for n in (1, 32)])]:
        model = model.eval().half()
        half.append((name, model, x.half(), dyn, [c.half() for c in cases], Float32Of(model)))
    export_set(HERE / "xnnpack_half", "models/export_xnnpack_more.py", half)


if __name__ == "__main__":
    main()
