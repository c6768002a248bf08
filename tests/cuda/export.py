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
    (layer norm): a projection with GELU, then a residual add, a batched
    matmul with a permute and a SiLU after it."""

    def __init__(self):
        super().__init__()
        self.proj, self.norm = nn.Linear(24, 24), nn.LayerNorm(24)

    def forward(self, x):                        # x: [2, 6, 24]
        h = nn.functional.gelu(self.proj(x))
        n = self.norm(h)
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
                   "two PteronCudaBackend partitions around a CPU layer norm"),
    "tiles_cuda": (Tiles(), (torch.randn(100, 70), torch.randn(3, 67, 33), torch.randn(3, 33, 70)),
                   [CudaPartitioner()], "tiled GEMMs across tiles, K slices and edges"),
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
        methods = {"forward": fw.MethodSpec(module, inputs)}
        expected = fw.eager_reference(methods)
        pte = fw.export_program(methods, partitioners=partitioners)
        entry = fw.write_fixture(args.out, name, pte, methods, expected)
        entry.update({"rtol": 1e-5, "atol": 1e-5, "proves": proves})
        entries.append(entry)
        print(f"{name}: {len(pte)} bytes, {entry['operators']}, {entry['delegates']}")
    fw.write_manifest(args.out, "tests/cuda/export.py", entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
