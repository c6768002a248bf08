#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the programs pteron must refuse at method load, into tests/ops/refused/:

    device_copy.pte   methods h2d and d2h, each one call of upstream's device copy
                      et_copy::_h2d_copy.out / et_copy::_d2h_copy.out (self, *, out).
                      Upstream's exporter emits these only for device backends, so
                      each is exported as relu.out / sigmoid.out (same signature) and
                      renamed with fixture_writer.rewrite_operators.
    complex_add.pte   methods c64 and c128: aten::add.out on two complex64 / complex128
                      inputs of shape [2, 3]; add does not take complex tensors, so
                      it must fail at execute naming the dtype.

tests/test_op_coverage.py loads them. Development-only (needs torch and executorch);
the programs are committed.

Usage:
    /work/exportenv/bin/python tests/ops/export_refused.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import fixture_writer as fw  # noqa: E402
from opcase import case  # noqa: E402


def main() -> int:
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    pte = fw.export_program({"h2d": case(torch.relu, x), "d2h": case(torch.sigmoid, x)})
    pte = fw.rewrite_operators(pte, [("aten::relu.out", "et_copy::_h2d_copy.out", ()),
                                     ("aten::sigmoid.out", "et_copy::_d2h_copy.out", ())])
    _, _, plans = fw.program_info(pte)
    assert plans["h2d"]["operators"] == ["et_copy::_h2d_copy.out"], plans
    assert plans["d2h"]["operators"] == ["et_copy::_d2h_copy.out"], plans
    out = HERE / "refused" / "device_copy.pte"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(pte)
    print(f"{out.relative_to(HERE.parent.parent)}: {len(pte)} bytes")

    def c(dtype):
        return torch.complex(x, -x).to(dtype)

    # The edge verifier refuses add on complex tensors (upstream's portable add
    # has no complex kernel either), so this one is lowered without it.
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    eps = {m: torch.export.export(case(torch.add, c(d), c(d)).module, (c(d), c(d)))
           for m, d in (("c64", torch.complex64), ("c128", torch.complex128))}
    pte = to_edge_transform_and_lower(
        eps, compile_config=EdgeCompileConfig(_check_ir_validity=False)).to_executorch().buffer
    _, _, plans = fw.program_info(pte)
    assert plans["c64"]["operators"] == ["aten::add.out"], plans
    assert plans["c128"]["operators"] == ["aten::add.out"], plans
    out = HERE / "refused" / "complex_add.pte"
    out.write_bytes(pte)
    print(f"{out.relative_to(HERE.parent.parent)}: {len(pte)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
