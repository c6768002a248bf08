# SPDX-License-Identifier: BSD-3-Clause
"""Exports XNNPACK-lowered programs whose dynamic dimension is not the first
(models/fixtures/xnnpack_dynamic/): upstream's XnnpackPartitioner lowers them whole, with the
upper bound of the dimension in the blob's value shapes and reshapes, and upstream's runtime
runs them at any length up to it.

    attention_seq   pre-norm self-attention block (LayerNorm, fused QKV Linear, heads split and
                    merged by reshape/transpose, softmax attention, residual), x [1, S, 64],
                    S dynamic in 1..64
    conv1d_time     Conv1d stack (dense, depthwise, pointwise; GELU, ReLU) over a time axis,
                    x [1, 4, T], T dynamic in 8..400 (upstream lowers Conv1d as Conv2d between
                    reshapes)
    mlp_tokens      Linear -> SiLU -> Linear over [2, S, 32], S dynamic in 1..48, with the
                    tokens flattened by a reshape into the batch

Each program is run at several lengths, the upper bound included, by eager PyTorch
(expected_*.npy) and by upstream's runtime (upstream_*.npy; models/fixture_writer.py's layout).

    .venv-export/bin/python models/export_xnnpack_dynamic.py
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

OUT = Path(__file__).resolve().parent / "fixtures" / "xnnpack_dynamic"


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


class TokenMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 64)
        self.b = nn.Linear(64, 32)

    def forward(self, x):
        b, s, d = x.shape
        y = self.b(F.silu(self.a(x.reshape(b * s, d))))
        return y.reshape(b, s, d)


def main():
    torch.manual_seed(20261207)
    progs = [
        ("attention_seq", Attention(), torch.randn(1, 16, 64), {"x": {1: Dim("s", min=1, max=64)}},
         [torch.randn(1, n, 64) for n in (1, 7, 64)]),
        ("conv1d_time", Conv1dStack(), torch.randn(1, 4, 100),
         {"x": {2: Dim("t", min=8, max=400)}}, [torch.randn(1, 4, n) for n in (8, 50, 400)]),
        ("mlp_tokens", TokenMlp(), torch.randn(2, 5, 32), {"x": {1: Dim("s", min=1, max=48)}},
         [torch.randn(2, n, 32) for n in (1, 17, 48)]),
    ]
    entries = []
    for name, module, x, dyn, cases in progs:
        module.eval()
        methods = {"forward": MethodSpec(module, (x,), dyn, [(c,) for c in cases])}
        expected = fw.eager_reference(methods)
        pte = fw.export_program(methods, xnnpack=True)
        entry = fw.write_fixture(OUT, name, pte, methods, expected)
        fw.record_upstream(OUT, name, pte, entry)
        m = entry["methods"]["forward"]
        ups = ["ok" if "upstream" in c else c["upstream_error"] for c in [m] + m["cases"]]
        print(f"{name}: {len(pte)} bytes, delegates {entry['delegates']}, CPU operators "
              f"{entry['operators']}, upstream {ups}", flush=True)
        entries.append(entry)
    fw.write_manifest(OUT, "models/export_xnnpack_dynamic.py", entries)


if __name__ == "__main__":
    main()
