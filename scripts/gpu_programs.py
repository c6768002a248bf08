#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The CUDA-lowered programs scripts/gpu_check.sh carries to a GPU machine,
exported here with upstream's exporter and pteron.lowering.cuda.CudaPartitioner
(development machine only: needs torch and executorch).

    .venv-export/bin/python scripts/gpu_programs.py OUT [--only NAME ...]

Writes into OUT, through models/fixture_writer.py (each program, its inputs and
its eager outputs, and manifest.json):
  - cnn_squeezenet   the zoo's squeezenet1_1 (torchvision, random weights)
  - vit_tiny4        the zoo's ViT (4 layers, hidden 192)
  - decoder          the zoo's Llama-style decoder (models/decoder.py), one token
  - block512         a transformer block (dim 512, 8 heads, MLP 2048, 64 tokens),
                     for the benchmark; its parameters from fill() (below), so
                     eager PyTorch makes the same block on the GPU
  - mlp4096          2 x Linear(4096), batch 1024, for the benchmark. Its weights
                     (128 MiB) do not travel: the .pte is written with every
                     weight byte zero and gzip-compressed (mlp4096.pte.gz), and
                     mlp4096.json gives each weight's byte offset and shape; the
                     GPU side fills them with weights() below, as eager does.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "models"))
sys.path.insert(0, str(REPO / "python"))

MLP_SHAPES = {"a.weight": (4096, 4096), "a.bias": (4096,), "b.weight": (4096, 4096),
              "b.bias": (4096,)}


def weights(name: str, shape) -> np.ndarray:
    """The MLP's deterministic weights (float32), computed the same way on both
    machines: a scaled sine of the element index, a different phase per tensor."""
    n = int(np.prod(shape))
    phase = {"a.weight": 0.1, "a.bias": 0.2, "b.weight": 0.3, "b.bias": 0.4}[name]
    i = np.arange(n, dtype=np.float64)
    scale = 1.0 / np.sqrt(shape[-1]) if len(shape) == 2 else 0.1
    return (np.sin(i * 0.6180339887 + phase) * scale).astype(np.float32).reshape(shape)


def fill(module: nn.Module) -> nn.Module:
    """Sets every parameter of `module` from a formula (a scaled sine with a
    phase per parameter), so both machines make the same weights."""
    with torch.no_grad():
        for k, (name, p) in enumerate(sorted(module.named_parameters())):
            i = np.arange(p.numel(), dtype=np.float64)
            scale = 1.0 / np.sqrt(p.shape[-1]) if p.dim() == 2 else 0.1
            v = np.sin(i * 0.6180339887 + 0.7 * k + 0.05) * scale
            if name.endswith(("n1.weight", "n2.weight")):
                v = 1.0 + v
            p.copy_(torch.from_numpy(v.astype(np.float32)).reshape(p.shape))
    return module


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4096, 4096), nn.Linear(4096, 4096)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Block(nn.Module):
    """A pre-norm transformer block: attention (8 heads) and a GELU MLP."""

    def __init__(self, dim=512, heads=8, hidden=2048):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):                        # x: [1, T, dim]
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).chunk(3, dim=-1)
        h = d // self.heads

        def split(z):
            return z.reshape(b, t, self.heads, h).permute(0, 2, 1, 3).reshape(b * self.heads, t, h)
        a = torch.softmax(torch.bmm(split(q), split(k).transpose(1, 2)) * h ** -0.5, dim=-1)
        o = torch.bmm(a, split(v)).reshape(b, self.heads, t, h).permute(0, 2, 1, 3).reshape(b, t, d)
        x = x + self.proj(o)
        return x + self.down(nn.functional.gelu(self.up(self.n2(x))))


def main(argv=None) -> int:
    import fixture_writer as fw
    import zoo
    from pteron.lowering.cuda import CudaPartitioner

    import argparse

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    entries = []

    def wanted(name):
        return args.only is None or name in args.only

    def export(name, module, inputs, proves, rtol=1e-4, atol=1e-4, **kw):
        entries.append(fw.export_forward(out, name, module, inputs, proves, rtol=rtol, atol=atol,
                                         partitioners=[CudaPartitioner()], **kw))
        return (out / f"{name}.pte").read_bytes()

    if wanted("cnn_squeezenet"):
        m, x = zoo.by_name("squeezenet1_1").build()
        export("cnn_squeezenet", m, x, "a small CNN (torchvision squeezenet1_1)", rtol=1e-3,
               atol=1e-3)
    if wanted("vit_tiny4"):
        m, x = zoo.by_name("vit_tiny4").build()
        export("vit_tiny4", m, x, "a small ViT (4 layers, hidden 192)", rtol=1e-3, atol=1e-3)
    if wanted("decoder"):
        dec = zoo.by_name("llama_decoder")
        m, x = dec.build()
        export("decoder", m, x, "the zoo's decoder, one token", rtol=1e-3, atol=1e-3,
               backend_config=dec.backend_config() if dec.backend_config else None)
    if wanted("block512"):
        torch.manual_seed(0)
        export("block512", fill(Block()).eval(), (torch.randn(1, 64, 512),),
               "the benchmark's transformer block", rtol=1e-3, atol=1e-3)
    if not wanted("mlp4096"):
        fw.write_manifest(out, "scripts/gpu_programs.py", entries)
        return 0

    mlp = Mlp().eval()
    with torch.no_grad():
        for name, shape in MLP_SHAPES.items():
            mlp.get_parameter(name).copy_(torch.from_numpy(weights(name, shape)))
    x = torch.from_numpy(np.cos(np.arange(1024 * 4096) * 0.37).astype(np.float32).reshape(1024, 4096))
    pte = bytearray(export("mlp4096", mlp, (x,), "the benchmark's 2 x Linear(4096), batch 1024",
                           rtol=1e-3, atol=1e-3))
    layout = {}
    for name, shape in MLP_SHAPES.items():
        raw = weights(name, shape).tobytes()
        at = bytes(pte).find(raw)
        assert at >= 0, f"{name}'s bytes are not in the program"
        layout[name] = {"offset": at, "shape": list(shape)}
        pte[at:at + len(raw)] = bytes(len(raw))
    (out / "mlp4096.pte").unlink()
    (out / "mlp4096.pte.gz").write_bytes(gzip.compress(bytes(pte), 6))
    (out / "mlp4096.json").write_text(json.dumps(layout, indent=1))
    (out / "mlp4096.forward.expected_0.npy").unlink()  # 16 MiB; the GPU side compares with eager
    (out / "mlp4096.forward.input_0.npy").unlink()     # remade there from the same formula
    fw.write_manifest(out, "scripts/gpu_programs.py", entries)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
