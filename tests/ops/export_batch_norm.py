#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export aten::_native_batch_norm_legit.out's program into
tests/ops/programs/reduce_norm_rewritten/ (tests/test_ops.py runs it as it
runs every group).

Upstream's exporter never emits this overload on its own: the schema
mutates running_mean / running_var, so torch.export functionalises it into
_native_batch_norm_legit_functional, which has no out variant. The program
is therefore exported as _native_batch_norm_legit_no_training (the same
arguments but `training`) and its calls rewritten to
_native_batch_norm_legit.out with training=False inserted at argument 5;
the eager outputs are _native_batch_norm_legit's own.

Usage:
    /opt/pteron-dev/bin/python tests/ops/export_batch_norm.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import fixture_writer as fw  # noqa: E402
from opcase import Fn, channels_last  # noqa: E402

aten = torch.ops.aten
OLD, NEW = "aten::_native_batch_norm_legit_no_training.out", "aten::_native_batch_norm_legit.out"


def insert_training_false(pte: bytes) -> bytes:
    """Every call of OLD becomes a call of NEW with a False `training` argument."""
    from executorch.exir import schema
    from executorch.exir._serialize._program import (deserialize_pte_binary,
                                                     serialize_pte_binary)

    f = deserialize_pte_binary(pte)
    found = False
    for plan in f.program.execution_plan:
        for k, op in enumerate(plan.operators):
            if f"{op.name}.{op.overload}" != OLD:
                continue
            found = True
            op.name, _, op.overload = NEW.partition(".")
            plan.values.append(schema.EValue(schema.Bool(False)))
            flag = len(plan.values) - 1
            for ch in plan.chains:
                for ins in ch.instructions:
                    a = ins.instr_args
                    if getattr(a, "op_index", None) == k:
                        a.args = list(a.args[:5]) + [flag] + list(a.args[5:])
    if not found:
        raise SystemExit(f"the exported program does not call {OLD}")
    return bytes(serialize_pte_binary(f))


def main() -> int:
    g = torch.Generator().manual_seed(5)

    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    f64 = torch.float64

    def spec(fn, eager, *inputs):
        return fw.MethodSpec(Fn(fn), tuple(inputs), eager=Fn(eager))

    cases = {
        "f32_eval": spec(
            lambda x, w, b, m, v: aten._native_batch_norm_legit_no_training(x, w, b, m, v, 0.1,
                                                                            1e-5)[0],
            lambda x, w, b, m, v: aten._native_batch_norm_legit(x, w, b, m, v, False, 0.1,
                                                                1e-5)[0],
            r(2, 3, 4, 4), r(3), r(3), r(3), r(3).abs() + 0.5),
        "f64_eval_channels_last_no_affine": spec(
            lambda x, m, v: aten._native_batch_norm_legit_no_training(x, None, None, m, v, 0.1,
                                                                      1e-3)[0],
            lambda x, m, v: aten._native_batch_norm_legit(x, None, None, m, v, False, 0.1,
                                                          1e-3)[0],
            channels_last(r(2, 3, 2, 5, dtype=f64)), r(3, dtype=f64), r(3, dtype=f64).abs() + 0.5),
    }
    out = HERE / "programs" / "reduce_norm_rewritten"
    expected = fw.eager_reference(cases)
    pte = insert_training_false(fw.export_program(cases))
    entry = fw.write_fixture(out, "native_batch_norm_legit_out", pte, cases, expected)
    entry.update({"operator": NEW, "rtol": 1e-5, "atol": 1e-6,
                  "notes": "inference with running statistics (training=False); the training "
                           "path is native_batch_norm_legit_no_stats_out's"})
    fw.write_manifest(out, "tests/ops/export_batch_norm.py", [entry])
    print(f"reduce_norm_rewritten/native_batch_norm_legit_out: {len(pte)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
