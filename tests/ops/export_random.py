#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the random operators' programs (aten::rand.out, randn.out,
native_dropout.out) into tests/ops/random/ through the one fixture writer.

They live outside tests/ops/programs/ because their outputs cannot match
eager PyTorch value for value: tests/test_random_ops.py checks them
statistically instead. Only the programs and the manifest are kept (its
input and output shapes and dtypes): the inputs are all zeros (rand, randn)
or all ones (native_dropout), which the test builds, and eager's draws are
of no use, so no .npy file is committed.

Usage:
    /opt/pteron-dev/bin/python tests/ops/export_random.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import fixture_writer as fw  # noqa: E402
from opcase import OpProgram, case  # noqa: E402

aten = torch.ops.aten


def programs():
    ones = torch.ones(20000)
    return [
        OpProgram("rand_out", "aten::rand.out", {
            "f32": case(lambda x: torch.rand(20000) + x * 0, torch.zeros(1)),
            "f64": case(lambda x: torch.rand(100, 200, dtype=torch.float64) + x * 0,
                        torch.zeros(1, dtype=torch.float64)),
        }, notes="uniform on [0, 1)"),
        OpProgram("randn_out", "aten::randn.out", {
            "f32": case(lambda x: torch.randn(20000) + x * 0, torch.zeros(1)),
            "f64": case(lambda x: torch.randn(100, 200, dtype=torch.float64) + x * 0,
                        torch.zeros(1, dtype=torch.float64)),
        }, notes="standard normal"),
        OpProgram("native_dropout_out", "aten::native_dropout.out", {
            "f32_p03": case(lambda x: aten.native_dropout(x, 0.3, True), ones),
            "f64_p0": case(lambda x: aten.native_dropout(x, 0.0, True), ones.double()[:100]),
            "f32_eval": case(lambda x: aten.native_dropout(x, 0.5, False), ones[:100]),
        }, preserve_ops=[torch.ops.aten.native_dropout.default],
            notes="keep probability 1 - p, kept values scaled by 1 / (1 - p); train=False "
                  "keeps everything"),
    ]


def main() -> int:
    out = HERE / "random"
    entries = []
    for prog in programs():
        expected = fw.eager_reference(prog.cases)
        pte = fw.export_program(prog.cases, preserve_ops=prog.preserve_ops)
        entry = fw.write_fixture(out, prog.name, pte, prog.cases, expected)
        called = {op for m in entry["methods"].values() for op in m["operators"]}
        if prog.operator not in called:
            raise SystemExit(f"random/{prog.name}: the exported program does not call "
                             f"{prog.operator} (it calls {sorted(called)})")
        for m in entry["methods"].values():
            for f in m.pop("inputs") + m.pop("expected"):
                (out / f).unlink()
        entry.update({"operator": prog.operator, "notes": prog.notes})
        entries.append(entry)
        print(f"random/{prog.name}: {len(pte)} bytes, {len(prog.cases)} case(s)")
    fw.write_manifest(out, "tests/ops/export_random.py", entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
