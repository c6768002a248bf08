# SPDX-License-Identifier: BSD-3-Clause
"""Exports models/fixtures/scalars/scalar_outputs.pte: a program whose outputs are a tensor, a
bool scalar and an int scalar (x * 2, x.shape[0] > 2, x.shape[0] * 3 over x [b, 3] with b
dynamic in 1..8), as upstream's exporter writes symbolic-size outputs: the method's outputs are
Bool and Int values, not tensors. tests/test_pteron_run_dtypes.py checks that pteron-run prints
them with their types (`bool True`, `int 12`).

    .venv-export/bin/python models/export_scalar_outputs.py
"""
from pathlib import Path

import torch
from torch.export import Dim


class ScalarOutputs(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.shape[0] > 2, x.shape[0] * 3


def main():
    from executorch.exir import to_edge_transform_and_lower

    ep = torch.export.export(ScalarOutputs(), (torch.randn(4, 3),),
                             dynamic_shapes={"x": {0: Dim("b", min=1, max=8)}})
    out = Path(__file__).resolve().parent / "fixtures" / "scalars" / "scalar_outputs.pte"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(to_edge_transform_and_lower(ep).to_executorch().buffer)
    print(f"{out}: {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
