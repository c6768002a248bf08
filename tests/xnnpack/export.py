#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the small XNNPACK-lowered programs tests/test_xnnpack.py and
tests/test_windows_mingw.py run on pteron's own kernels alone: programs made
only of the node types whose kernels live in backends/xnnpack/src/kernels/own_ops.cpp
(transpose, reshape, slice, concatenate, constant pad), so the delegate runs
them with no XNNPACK library at all (PTERON_XNNPACK_USE_LIBRARY=none, a build
with -DPTERON_XNNPACK_LIBRARY=OFF, the MinGW DLL).

Development-only (needs torch and executorch), written through
models/fixture_writer.py. The tests only read what it writes:
    tests/xnnpack/<name>.pte, <name>.forward.{input,expected}_<i>.npy,
    tests/xnnpack/manifest.json

Usage:
    /work/exportenv/bin/python tests/xnnpack/export.py [--out DIR]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))

import fixture_writer as fw  # noqa: E402


class Layout(nn.Module):
    """Every layout node type: an NCHW->NHWC->NCHW round trip (two
    transposes that cancel), concatenations of 2 and 3 inputs, a slice, a
    constant pad, reshapes, and a 4-D transpose big enough to be tiled."""

    def forward(self, x, y):                     # x, y: [2, 6, 5, 7]
        a = x.permute(0, 2, 3, 1)                # [2, 5, 7, 6]
        b = a.permute(0, 3, 1, 2)                # [2, 6, 5, 7]
        c = torch.cat([b, y, x], dim=1)          # [2, 18, 5, 7]
        d = c[:, 2:14, 1:4, :]                   # [2, 12, 3, 7]
        e = nn.functional.pad(d, (1, 2, 0, 1), value=0.5)  # [2, 12, 4, 10]
        f = e.reshape(2, -1)
        g = torch.cat([x, y], dim=3).permute(0, 2, 3, 1)    # [2, 5, 14, 6]
        return f, g


class Shuffle(nn.Module):
    """A channel shuffle between NHWC tensors, as exporters write it in NCHW:
    transpose, reshape, transpose, reshape, transpose (one permutation of
    the data, folded into a single transpose at load), and a round trip
    through a size-1 dim that folds into a view."""

    def forward(self, x):                        # x: [2, 5, 6, 8] (NHWC)
        a = x.permute(0, 3, 1, 2)                # [2, 8, 5, 6]
        b = a.reshape(2, 2, 4, 5, 6).transpose(1, 2).reshape(2, 8, 5, 6)
        c = b.permute(0, 2, 3, 1)                # [2, 5, 6, 8], channels shuffled
        d = c.permute(0, 3, 1, 2).reshape(2, 8, 30, 1).permute(0, 3, 2, 1)  # [2, 1, 30, 8]
        return c * 1.0, d.reshape(2, 5, 6, 8)


PROGRAMS = {
    "layout_xnnpack": (Layout(), (torch.randn(2, 6, 5, 7), torch.randn(2, 6, 5, 7)),
                       "every layout node type on pteron's kernels, no XNNPACK library"),
    "shuffle_xnnpack": (Shuffle(), (torch.randn(2, 5, 6, 8),),
                        "transpose/reshape chains folded at load into one transpose or a view"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    entries = []
    for name, (module, inputs, proves) in PROGRAMS.items():
        entries.append(fw.export_forward(args.out, name, module, inputs, proves, rtol=1e-5,
                                         atol=1e-6, xnnpack=True))
    fw.write_manifest(args.out, "tests/xnnpack/export.py", entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
