#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the small CUDA-lowered programs of tests/test_cuda.py.

Each is lowered with pteron.lowering.cuda.CudaPartitioner (delegate
PteronCudaBackend); the tests check the partitions, run them where there is
no GPU (the clear errors at method load), and, on a GPU machine
(scripts/gpu_check.sh), against the eager outputs written here.
upstream_cuda_backend.pte is a program whose delegate id is upstream's
"CudaBackend" (made with a stand-in preprocess of that class name, since
upstream's AOTInductor lowering needs the CUDA toolkit): pteron must refuse it
at method load, naming its own partitioner.

Development-only (needs torch and executorch), written through
models/fixture_writer.py. The tests only read what it writes:
    tests/cuda/<name>.pte, <name>.forward.{input,expected}_<i>.npy,
    tests/cuda/manifest.json

Usage:
    .venv-export/bin/python tests/cuda/export.py [--out DIR]
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))
sys.path.insert(0, str(HERE.parent.parent / "python"))

import fixture_writer as fw  # noqa: E402
from executorch.exir.backend.backend_details import (  # noqa: E402
    BackendDetails,
    PreprocessResult,
)
from executorch.exir.backend.partitioner import (  # noqa: E402
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from pteron.lowering.cuda import CudaPartitioner  # noqa: E402


class Mlp(nn.Module):
    """Linear, ReLU, Linear on the delegate; the softmax stays on the CPU."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):                        # x: [4, 16]
        return torch.softmax(self.b(torch.relu(self.a(x))), -1)


class Block(nn.Module):
    """Two partitions around an operator the partitioner leaves on the CPU
    (cumsum): a projection with GELU, then a residual add, a batched matmul
    with a permute and a SiLU after it."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(24, 24)

    def forward(self, x):                        # x: [2, 6, 24]
        h = nn.functional.gelu(self.proj(x))
        n = torch.cumsum(h, dim=-1) * 0.1
        r = n + x
        s = torch.bmm(r, r.permute(0, 2, 1))     # [2, 6, 6]
        return nn.functional.silu(s) * 0.5


class Tiles(nn.Module):
    """GEMMs over several tiles, K slices and edges of kernels.h's tiling
    (64 x 64 tiles, K slices of 16): [100, 70] @ [70, 130] with a bias, a
    broadcast add, then a batched [3, 67, 33] @ [3, 33, 70]."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(70, 130), nn.Linear(130, 65)

    def forward(self, x, p, q):                  # x: [100, 70], p: [3, 67, 33], q: [3, 33, 70]
        h = self.b(torch.tanh(self.a(x))) + x[:, :65].sum(dim=0)
        return h, torch.sigmoid(torch.bmm(p, q))


class Cnn(nn.Module):
    """Convolutions with batch norm folded (eval), grouped and strided ones,
    ReLU6 (hardtanh), max and average pooling, a channel concatenation, global
    average pooling and a classifier: the CNN operators on the delegate."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU6())
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Sequential(nn.Conv2d(8, 12, 1), nn.BatchNorm2d(12), nn.ReLU())
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.avg = nn.AvgPool2d(2, stride=2, count_include_pad=False)
        self.branch = nn.Conv2d(8, 4, 1, dilation=1)
        self.head = nn.Linear(16, 10)
        for bn in (self.stem[1], self.pw[1]):  # statistics other than the identity
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):                        # x: [2, 3, 20, 20]
        s = self.stem(x)                         # [2, 8, 10, 10]
        a = self.pw(self.dw(s))                  # [2, 12, 10, 10]
        b = self.branch(s)                       # [2, 4, 10, 10]
        c = torch.cat([a, b], dim=1)             # [2, 16, 10, 10]
        d = self.avg(self.pool(c))               # [2, 16, 2, 2]
        g = nn.functional.adaptive_avg_pool2d(d, 1).flatten(1)
        return self.head(g)


class Attention(nn.Module):
    """A pre-norm attention block: layer norm, a QKV projection split by
    slices, heads through view and permute, scaled dot-product attention
    decomposed (bmm, mul, softmax), an RMS norm (mean, rsqrt), log softmax,
    select, expand and clamp: the transformer operators on the delegate."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.qkv = nn.Linear(32, 96)
        self.proj = nn.Linear(32, 32)
        self.scale = nn.Parameter(torch.rand(32) + 0.5)

    def forward(self, x):                        # x: [2, 5, 32]
        h = self.norm(x)
        q, k, v = self.qkv(h)[..., :32], self.qkv(h)[..., 32:64], self.qkv(h)[..., 64:]
        def heads(t):
            return t.reshape(2, 5, 4, 8).permute(0, 2, 1, 3).reshape(8, 5, 8)
        att = torch.softmax(torch.bmm(heads(q), heads(k).transpose(1, 2)) * (8 ** -0.5), dim=-1)
        o = torch.bmm(att, heads(v)).reshape(2, 4, 5, 8).permute(0, 2, 1, 3).reshape(2, 5, 32)
        r = x + self.proj(o)
        rms = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + 1e-6) * self.scale
        first = rms.select(1, 0).unsqueeze(1).expand(2, 5, 32)
        return torch.log_softmax(rms + first, dim=-1), torch.clamp(rms, -0.5, 0.75).sum(dim=(1,))


class Relu(nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1.0


class CudaBackend(BackendDetails):
    """A stand-in with upstream's CUDA delegate's class name (its delegate id)."""

    @staticmethod
    def preprocess(edge_program, compile_specs):
        return PreprocessResult(processed_bytes=b"stand-in for an AOTInductor-compiled blob")


class _TagRelu(Partitioner):
    def __init__(self):
        super().__init__()
        self.delegation_spec = DelegationSpec("CudaBackend", [])

    def partition(self, ep):
        for n in ep.graph_module.graph.nodes:
            if n.op == "call_function" and "relu" in str(n.target):
                n.meta["delegation_tag"] = "upstream_cuda"
        return PartitionResult(tagged_exported_program=ep, partition_tags={"upstream_cuda": self.delegation_spec})


torch.manual_seed(0)  # the weights: the same programs on every export
PROGRAMS = {
    "mlp_cuda": (Mlp(), (torch.randn(4, 16),), [CudaPartitioner()],
                 "linear/relu/linear on PteronCudaBackend, softmax on the CPU"),
    "block_cuda": (Block(), (torch.randn(2, 6, 24),), [CudaPartitioner()],
                   "two PteronCudaBackend partitions around a CPU cumsum"),
    "tiles_cuda": (Tiles(), (torch.randn(100, 70), torch.randn(3, 67, 33), torch.randn(3, 33, 70)),
                   [CudaPartitioner()], "tiled GEMMs across tiles, K slices and edges"),
    "cnn_cuda": (Cnn(), (torch.randn(2, 3, 20, 20),), [CudaPartitioner()],
                 "convolution (batch norm folded), pooling, cat and the classifier on the delegate"),
    "attention_cuda": (Attention(), (torch.randn(2, 5, 32),), [CudaPartitioner()],
                       "layer norm, attention, RMS norm, slices, softmax on the delegate"),
    "upstream_cuda_backend": (Relu(), (torch.randn(3, 5),), [_TagRelu()],
                              "a delegate id of upstream's CudaBackend: refused at load"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    entries = []
    for name, (module, inputs, partitioners, proves) in PROGRAMS.items():
        entries.append(fw.export_forward(args.out, name, module, inputs, proves, rtol=1e-5,
                                         atol=1e-5, partitioners=partitioners))
    fw.write_manifest(args.out, "tests/cuda/export.py", entries)
    if args.out == HERE:  # test_package runs the CUDA MLP too (test_package/test_package.cpp)
        shutil.copy(HERE / "mlp_cuda.pte", HERE.parent.parent / "test_package" / "mlp_cuda.pte")
    return 0


if __name__ == "__main__":
    sys.exit(main())
