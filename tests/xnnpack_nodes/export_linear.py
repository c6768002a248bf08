#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the small XNNPACK-lowered programs of tests/test_xnnpack_linear.py: one program per
case, each holding only the linear node types (FullyConnected, Conv2d, ConvTranspose2d,
BatchMatMul) plus what the exporter puts around them (StaticTranspose for NCHW <-> NHWC,
StaticReshape), into tests/xnnpack_nodes/:

    linear_<case>.pte   the program (upstream XnnpackPartitioner, default configuration)
    linear_<case>.npz   input_<i> and expected_<i> (eager PyTorch outputs), float32
    linear.json         the manifest: per case its files, input / output counts, tolerances
                        and the node types the delegate must run

Development-only (needs torch and executorch: /work/exportenv/bin/python or .venv-export).
CI never re-exports: the programs are committed, a few KB each.

Usage:
    /work/exportenv/bin/python tests/xnnpack_nodes/export_linear.py [CASE ...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent


class Fc(nn.Module):
    def __init__(self, k, n, bias=True, act=None):
        super().__init__()
        self.fc = nn.Linear(k, n, bias=bias)
        self.act = act

    def forward(self, x):
        y = self.fc(x)
        return self.act(y) if self.act is not None else y


class Mlp(nn.Module):
    def __init__(self, k, h, n):
        super().__init__()
        self.a, self.b = nn.Linear(k, h), nn.Linear(h, n)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Conv(nn.Module):
    def __init__(self, *args, act=None, **kw):
        super().__init__()
        self.conv = nn.Conv2d(*args, **kw)
        self.act = act

    def forward(self, x):
        y = self.conv(x)
        return self.act(y) if self.act is not None else y


class Deconv(nn.Module):
    def __init__(self, *args, **kw):
        super().__init__()
        self.conv = nn.ConvTranspose2d(*args, **kw)

    def forward(self, x):
        return self.conv(x)


class Bmm(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


class Mm(nn.Module):
    """aten.mm with a constant B: a FullyConnected with XNN_FLAG_TRANSPOSE_WEIGHTS ([K, N]
    filter). (With B an input the partitioner leaves the mm to the portable kernels.)"""

    def __init__(self, const_b=None):
        super().__init__()
        self.b = None if const_b is None else nn.Parameter(const_b)

    def forward(self, a, b=None):
        return torch.mm(a, self.b if self.b is not None else b)


class AttentionScores(nn.Module):
    """q @ k^T then @ v: the two batch matmuls of attention (no softmax)."""

    def forward(self, q, k, v):
        return (q @ k.transpose(-1, -2)) @ v


def r(*shape):
    return torch.randn(*shape)


# name -> (module, inputs, node types the delegate must run, rtol, atol)
def cases():
    return {
        "fc_1x3x5": (Fc(5, 3), [r(1, 5)], ["FullyConnected"]),
        "fc_7x33x17": (Fc(17, 33), [r(7, 17)], ["FullyConnected"]),
        "fc_nobias": (Fc(17, 33, bias=False), [r(7, 17)], ["FullyConnected"]),
        "fc_relu": (Fc(40, 24, act=nn.ReLU()), [r(9, 40)], ["FullyConnected"]),
        "fc_hardtanh": (Fc(40, 20, act=nn.Hardtanh(-0.5, 0.25)), [r(5, 40)], ["FullyConnected"]),
        "fc_rank3": (Fc(24, 20), [r(2, 5, 24)], ["FullyConnected"]),
        "fc_64x256x40": (Fc(256, 40), [r(64, 256)], ["FullyConnected"]),
        "fc_50x200x64": (Fc(64, 200), [r(50, 64)], ["FullyConnected"]),
        "fc_1x300x64": (Fc(64, 300), [r(1, 64)], ["FullyConnected"]),
        "mlp": (Mlp(32, 48, 10), [r(13, 32)], ["FullyConnected"]),
        "conv3x3_s1p1": (Conv(3, 8, 3, 1, 1), [r(1, 3, 9, 11)], ["Conv2d"]),
        "conv3x3_s2p1": (Conv(5, 6, 3, 2, 1), [r(2, 5, 10, 7)], ["Conv2d"]),
        "conv1x1": (Conv(8, 20, 1), [r(1, 8, 6, 5)], ["Conv2d"]),
        "conv1x1_big": (Conv(32, 48, 1), [r(1, 32, 12, 12)], ["Conv2d"]),
        "conv3x3_16to32": (Conv(16, 32, 3, 1, 1, act=nn.ReLU()), [r(1, 16, 16, 16)], ["Conv2d"]),
        # Over 12 x 48 output pixels: the fused im2col + GEMM tasks at 3 threads too.
        "conv3x3_many_pixels": (Conv(4, 8, 3, padding=1), [r(1, 4, 28, 28)], ["Conv2d"]),
        "conv_groups2_many_pixels": (Conv(8, 6, 3, 1, 1, groups=2, act=nn.ReLU()),
                                     [r(1, 8, 24, 26)], ["Conv2d"]),
        "conv1x1_s2": (Conv(8, 4, 1, stride=2), [r(1, 8, 7, 5)], ["Conv2d"]),
        "conv7x7_s2p3": (Conv(3, 16, 7, 2, 3), [r(1, 3, 20, 18)], ["Conv2d"]),
        "conv_groups2": (Conv(8, 12, 3, 1, 1, groups=2), [r(1, 8, 7, 6)], ["Conv2d"]),
        "conv_groups4_s2": (Conv(16, 32, 3, 2, 1, groups=4), [r(1, 16, 9, 9)], ["Conv2d"]),
        "conv1x1_groups4": (Conv(16, 24, 1, groups=4), [r(2, 16, 5, 3)], ["Conv2d"]),
        "conv_dilation2": (Conv(4, 6, 3, padding=2, dilation=2), [r(1, 4, 9, 8)], ["Conv2d"]),
        "conv_odd": (Conv(3, 5, (3, 2), stride=(2, 1), padding=(1, 0)), [r(1, 3, 11, 7)],
                     ["Conv2d"]),
        "conv_nobias_relu": (Conv(6, 17, 3, padding=1, bias=False, act=nn.ReLU()),
                             [r(1, 6, 5, 5)], ["Conv2d"]),
        "conv_relu6": (Conv(4, 9, 3, stride=2, act=nn.ReLU6()), [r(1, 4, 13, 10)], ["Conv2d"]),
        # The indirect path (one group, dilation_w 1: kh segments of kw * cin input values per
        # row, zero-padded copies at the left / right edges, a zero segment above / below):
        # stems with Cin 3 (3x3 stride 2, 7x7 stride 2 with 24 outputs: a partial panel),
        # an asymmetric kernel with dilation_h 2, a 1x1 stride 2 with a batch of 2.
        "conv_stem3x3_s2": (Conv(3, 24, 3, 2, 1, act=nn.ReLU6()), [r(1, 3, 31, 42)], ["Conv2d"]),
        "conv_stem7x7_s2": (Conv(3, 20, 7, 2, 3), [r(1, 3, 30, 27)], ["Conv2d"]),
        "conv_dilation_h2": (Conv(5, 18, (3, 2), padding=(2, 1), dilation=(2, 1)),
                             [r(1, 5, 17, 19)], ["Conv2d"]),
        "conv1x1_s2_batch2": (Conv(16, 40, 1, stride=2), [r(2, 16, 17, 18)], ["Conv2d"]),
        "deconv": (Deconv(4, 6, 3, stride=2, padding=1, output_padding=1), [r(1, 4, 5, 6)],
                   ["ConvTranspose2d"]),
        "mm_const": (Mm(r(12, 35)), [r(6, 12)], ["FullyConnected"]),
        "bmm": (Bmm(), [r(4, 7, 9), r(4, 9, 5)], ["BatchMatMul"]),
        "attention": (AttentionScores(), [r(2, 3, 7, 16), r(2, 3, 8, 16), r(2, 3, 8, 5)],
                      ["BatchMatMul"]),
    }


def export(module, inputs) -> bytes:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    module.eval()
    ep = torch.export.export(module, tuple(inputs))
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    return bytes(edge.to_executorch().buffer)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args(argv)
    all_cases = cases()
    manifest_path = HERE / "linear.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.setdefault("generator", "tests/xnnpack_nodes/export_linear.py")
    manifest["exporter"] = {"torch": torch.__version__}
    try:
        import executorch
        manifest["exporter"]["executorch"] = getattr(executorch, "__version__", "unknown")
    except ImportError:
        pass
    entries = manifest.setdefault("cases", {})
    for name in args.cases or list(all_cases):
        if name not in all_cases:
            raise SystemExit(f"no case {name!r}; have {sorted(all_cases)}")
        torch.manual_seed(sum(map(ord, name)))
        module, inputs, nodes = all_cases[name]
        with torch.no_grad():
            out = module.eval()(*inputs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        pte = export(module, inputs)
        stem = f"linear_{name}"
        (HERE / f"{stem}.pte").write_bytes(pte)
        arrays = {f"input_{i}": t.numpy().astype(np.float32) for i, t in enumerate(inputs)}
        arrays.update({f"expected_{i}": t.numpy().astype(np.float32) for i, t in enumerate(outs)})
        np.savez(HERE / f"{stem}.npz", **arrays)
        entries[name] = {"pte": f"{stem}.pte", "npz": f"{stem}.npz", "inputs": len(inputs),
                         "outputs": len(outs), "nodes": nodes, "rtol": 1e-4, "atol": 1e-4}
        print(f"{stem}: {len(pte)} bytes")
    manifest["cases"] = dict(sorted(entries.items()))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
