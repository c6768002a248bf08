# SPDX-License-Identifier: BSD-3-Clause
"""Cases of the operators that move elements (split / stack / pad / gather /
index / flip / roll / repeat / pixel shuffle / transposes / copies ...):
several dtypes (float32, int64, bool, uint8), negative dims, zero-size and
channels-last inputs (tests/ops/opcase.py)."""
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from opcase import OpProgram, case, channels_last

aten = torch.ops.aten


def _as_to_copy(pte: bytes) -> bytes:
    """The program with dim_order_ops::_to_dim_order_copy.out (what the exporter
    always emits for aten::_to_copy) called as aten::_to_copy.out, its dim_order
    argument replaced by memory_format=None: the same positions otherwise."""
    from executorch.exir._serialize._program import (deserialize_pte_binary,
                                                     serialize_pte_binary)
    from executorch.exir.schema import EValue, Null

    f = deserialize_pte_binary(pte)
    for plan in f.program.execution_plan:
        ks = [k for k, op in enumerate(plan.operators)
              if (op.name, op.overload) == ("dim_order_ops::_to_dim_order_copy", "out")]
        for k in ks:
            plan.operators[k].name, plan.operators[k].overload = "aten::_to_copy", "out"
        none = len(plan.values)
        plan.values.append(EValue(val=Null()))
        for ch in plan.chains:
            for ins in ch.instructions:
                a = ins.instr_args
                if getattr(a, "op_index", None) in ks:
                    a.args = [none if j == 2 else v for j, v in enumerate(a.args)]
    return bytes(serialize_pte_binary(f))


def _as_lift_fresh_copy(pte: bytes) -> bytes:
    """The exporter turns lift_fresh_copy into a clone: call it as
    aten::lift_fresh_copy.out(self, *, out) again."""
    import fixture_writer as fw

    return fw.rewrite_operators(pte, [("dim_order_ops::_clone_dim_order.out",
                                       "aten::lift_fresh_copy.out", [1, 2])])


@dataclass
class RewrittenProgram(OpProgram):
    """An OpProgram whose .pte is edited after export (tests/ops/export.py)."""
    post_export: Optional[Callable[[bytes], bytes]] = None


def programs():
    g = torch.Generator().manual_seed(0)

    def r(*shape, dtype=torch.float32):
        if dtype == torch.bool:
            return torch.rand(*shape, generator=g) > 0.5
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=g).to(dtype)
        lo = 0 if dtype == torch.uint8 else -5
        return torch.randint(lo, 6, shape, generator=g).to(dtype)

    def idx(hi, *shape):
        return torch.randint(0, hi, shape, generator=g)

    f32, i64, b, u8 = torch.float32, torch.int64, torch.bool, torch.uint8
    cl = channels_last

    progs = [
        OpProgram("split_with_sizes_copy_out", "aten::split_with_sizes_copy.out", {
            "f32": case(lambda x: aten.split_with_sizes_copy(x, [1, 3], 1), r(2, 4, 3)),
            "i64_neg_dim": case(lambda x: aten.split_with_sizes_copy(x, [2, 0, 1], -1),
                                r(2, 3, dtype=i64)),
            "bool": case(lambda x: aten.split_with_sizes_copy(x, [1, 1], 0), r(2, 5, dtype=b)),
            "u8_channels_last": case(lambda x: aten.split_with_sizes_copy(x, [2, 2], 1),
                                     cl(r(1, 4, 3, 2, dtype=u8))),
            "f32_zero_size": case(lambda x: aten.split_with_sizes_copy(x, [0, 2], 1), r(0, 2)),
        }),
        OpProgram("split_copy_tensor_out", "aten::split_copy.Tensor_out", {
            "f32": case(lambda x: aten.split_copy(x, 2, 1), r(3, 5)),
            "i64_neg_dim": case(lambda x: aten.split_copy(x, 2, -1), r(2, 4, dtype=i64)),
            "bool": case(lambda x: aten.split_copy(x, 1, 0), r(3, 2, dtype=b)),
            "f32_channels_last": case(lambda x: aten.split_copy(x, 3, 1), cl(r(2, 5, 2, 2))),
        }, preserve_ops=[aten.split_copy.Tensor]),
        OpProgram("unbind_copy_int_out", "aten::unbind_copy.int_out", {
            "f32": case(lambda x: aten.unbind_copy(x, 0), r(3, 4)),
            "i64_neg_dim": case(lambda x: aten.unbind_copy(x, -1), r(2, 3, dtype=i64)),
            "u8_channels_last": case(lambda x: aten.unbind_copy(x, 1), cl(r(2, 3, 2, 2, dtype=u8))),
            "bool": case(lambda x: aten.unbind_copy(x, 1), r(2, 2, dtype=b)),
        }, preserve_ops=[aten.unbind_copy.int]),
        OpProgram("stack_out", "aten::stack.out", {
            "f32": case(lambda x, y: torch.stack([x, y]), r(2, 3), r(2, 3)),
            "i64_neg_dim": case(lambda x, y, z: torch.stack([x, y, z], -1), r(2, 3, dtype=i64),
                                r(2, 3, dtype=i64), r(2, 3, dtype=i64)),
            "bool_dim1": case(lambda x, y: torch.stack([x, y], 1), r(3, 2, dtype=b),
                              r(3, 2, dtype=b)),
            "f32_channels_last": case(lambda x, y: torch.stack([x, y], 2), cl(r(1, 3, 2, 2)),
                                      cl(r(1, 3, 2, 2))),
            "u8_zero_size": case(lambda x, y: torch.stack([x, y], 0), r(0, 3, dtype=u8),
                                 r(0, 3, dtype=u8)),
        }, preserve_ops=[aten.stack.default]),
        OpProgram("flip_out", "aten::flip.out", {
            "f32": case(lambda x: torch.flip(x, [0, 2]), r(2, 3, 4)),
            "i64_neg_dim": case(lambda x: torch.flip(x, [-1]), r(3, 5, dtype=i64)),
            "bool": case(lambda x: torch.flip(x, [0]), r(4, 2, dtype=b)),
            "u8_channels_last": case(lambda x: torch.flip(x, [1, 3]), cl(r(1, 3, 2, 4, dtype=u8))),
            "f32_zero_size": case(lambda x: torch.flip(x, [1]), r(0, 3)),
        }),
        OpProgram("roll_out", "aten::roll.out", {
            "f32": case(lambda x: torch.roll(x, 1, 0), r(4, 3)),
            "i64_multi_neg": case(lambda x: torch.roll(x, [-1, 7], [-1, 0]), r(3, 4, dtype=i64)),
            "f32_flat": case(lambda x: torch.roll(x, 5), r(2, 3)),
            "bool": case(lambda x: torch.roll(x, 2, 1), r(2, 5, dtype=b)),
            "u8_channels_last": case(lambda x: torch.roll(x, 1, 1), cl(r(1, 3, 2, 2, dtype=u8))),
            "f32_zero_size": case(lambda x: torch.roll(x, 1, 1), r(0, 3)),
        }, preserve_ops=[aten.roll.default]),
        OpProgram("repeat_out", "aten::repeat.out", {
            "f32": case(lambda x: x.repeat(2, 3), r(2, 3)),
            "i64_new_dims": case(lambda x: x.repeat(2, 1, 2), r(3, dtype=i64)),
            "bool": case(lambda x: x.repeat(1, 2), r(2, 2, dtype=b)),
            "u8_channels_last": case(lambda x: x.repeat(1, 2, 1, 2), cl(r(1, 2, 2, 3, dtype=u8))),
            "f32_zero": case(lambda x: x.repeat(0, 2), r(2, 3)),
        }),
        OpProgram("pixel_shuffle_out", "aten::pixel_shuffle.out", {
            "f32": case(lambda x: torch.pixel_shuffle(x, 2), r(1, 8, 2, 3)),
            "i64_3d": case(lambda x: torch.pixel_shuffle(x, 3), r(9, 2, 2, dtype=i64)),
            "f32_channels_last": case(lambda x: torch.pixel_shuffle(x, 2), cl(r(2, 4, 3, 2))),
            "u8": case(lambda x: torch.pixel_shuffle(x, 2), r(1, 4, 2, 2, dtype=u8)),
        }, preserve_ops=[aten.pixel_shuffle.default]),
        OpProgram("pixel_unshuffle_out", "aten::pixel_unshuffle.out", {
            "f32": case(lambda x: torch.pixel_unshuffle(x, 2), r(1, 2, 4, 6)),
            "bool": case(lambda x: torch.pixel_unshuffle(x, 2), r(1, 1, 2, 2, dtype=b)),
            "f32_channels_last": case(lambda x: torch.pixel_unshuffle(x, 2), cl(r(2, 3, 4, 2))),
            "i64_5d": case(lambda x: torch.pixel_unshuffle(x, 3), r(2, 1, 1, 3, 6, dtype=i64)),
        }, preserve_ops=[aten.pixel_unshuffle.default]),
        OpProgram("transpose_copy_int_out", "aten::transpose_copy.int_out", {
            "f32": case(lambda x: aten.transpose_copy(x, 0, 1), r(2, 3)),
            "i64_neg_dim": case(lambda x: aten.transpose_copy(x, -1, 0), r(2, 3, 4, dtype=i64)),
            "f32_channels_last": case(lambda x: aten.transpose_copy(x, 1, 3), cl(r(1, 3, 2, 4))),
            "bool": case(lambda x: aten.transpose_copy(x, 1, 2), r(2, 2, 3, dtype=b)),
            "u8_zero_size": case(lambda x: aten.transpose_copy(x, 0, 1), r(0, 4, dtype=u8)),
        }, preserve_ops=[aten.transpose_copy.int]),
        OpProgram("t_copy_out", "aten::t_copy.out", {
            "f32": case(lambda x: aten.t_copy(x), r(2, 5)),
            "i64_1d": case(lambda x: aten.t_copy(x), r(4, dtype=i64)),
            "bool": case(lambda x: aten.t_copy(x), r(3, 2, dtype=b)),
        }, preserve_ops=[aten.t_copy.default]),
        RewrittenProgram("_to_copy_out", "aten::_to_copy.out", {
            "f32_to_i64": case(lambda x: aten._to_copy(x, dtype=torch.int64), r(3, 4) * 4),
            "i64_to_f32": case(lambda x: aten._to_copy(x, dtype=torch.float32), r(5, dtype=i64)),
            "bool_to_u8": case(lambda x: aten._to_copy(x, dtype=torch.uint8), r(2, 3, dtype=b)),
            "f32_to_bool": case(lambda x: aten._to_copy(x, dtype=torch.bool),
                                torch.tensor([0.0, 1.5, -0.0, 3.0])),
            "f32_channels_last": case(lambda x: aten._to_copy(x, dtype=torch.float64),
                                      cl(r(1, 3, 2, 2))),
        }, post_export=_as_to_copy, notes="exported as _to_dim_order_copy, called as _to_copy"),
        OpProgram("alias_copy_out", "aten::alias_copy.out", {
            "f32": case(lambda x: aten.alias_copy(x), r(2, 3)),
            "i64": case(lambda x: aten.alias_copy(x), r(4, dtype=i64)),
        }, preserve_ops=[aten.alias_copy.default]),
        OpProgram("detach_copy_out", "aten::detach_copy.out", {
            "f32": case(lambda x: aten.detach_copy(x), r(2, 3)),
            "bool": case(lambda x: aten.detach_copy(x), r(3, dtype=b)),
        }, preserve_ops=[aten.detach_copy.default]),
        RewrittenProgram("lift_fresh_copy_out", "aten::lift_fresh_copy.out", {
            "f32": case(lambda x: aten.lift_fresh_copy(x), r(2, 3)),
            "u8": case(lambda x: aten.lift_fresh_copy(x), r(3, dtype=u8)),
        }, post_export=_as_lift_fresh_copy,
           notes="exported as _clone_dim_order, called as lift_fresh_copy"),
        OpProgram("copy_out", "aten::copy.out", {
            "f32_broadcast": case(lambda x, y: aten.copy(x, y), r(2, 3), r(3)),
            "i64_from_f32": case(lambda x, y: aten.copy(x, y), r(2, 2, dtype=i64), r(2, 2) * 3),
            "f32_channels_last": case(lambda x, y: aten.copy(x, y), cl(r(1, 2, 2, 2)),
                                      r(1, 2, 2, 2)),
            "bool_to_u8_neg_broadcast": case(lambda x, y: aten.copy(x, y), r(3, 2, dtype=u8),
                                             r(1, 2, dtype=b)),
        }, preserve_ops=[aten.copy.default]),
        OpProgram("as_strided_copy_out", "aten::as_strided_copy.out", {
            "f32": case(lambda x: aten.as_strided_copy(x, [2, 2], [1, 2], 1), r(3, 3)),
            "i64": case(lambda x: aten.as_strided_copy(x, [3, 2], [2, 1]), r(6, dtype=i64)),
        }, preserve_ops=[aten.as_strided_copy.default]),
        OpProgram("diagonal_copy_out", "aten::diagonal_copy.out", {
            "f32": case(lambda x: aten.diagonal_copy(x), r(3, 4)),
            "i64_offset_neg_dims": case(lambda x: aten.diagonal_copy(x, 1, -1, -2),
                                        r(2, 3, 4, dtype=i64)),
            "f32_neg_offset": case(lambda x: aten.diagonal_copy(x, -2), r(4, 3)),
            "bool_empty": case(lambda x: aten.diagonal_copy(x, 5), r(2, 2, dtype=b)),
        }, preserve_ops=[aten.diagonal_copy.default]),
        OpProgram("narrow_copy_out", "aten::narrow_copy.out", {
            "f32": case(lambda x: aten.narrow_copy(x, 1, 1, 2), r(2, 4)),
            "i64_neg_dim_start": case(lambda x: aten.narrow_copy(x, -1, -3, 2), r(2, 4, dtype=i64)),
            "u8_channels_last": case(lambda x: aten.narrow_copy(x, 1, 0, 2),
                                     cl(r(1, 3, 2, 2, dtype=u8))),
        }, preserve_ops=[aten.narrow_copy.default]),
        OpProgram("unfold_copy_out", "aten::unfold_copy.out", {
            "f32": case(lambda x: aten.unfold_copy(x, 1, 2, 1), r(2, 5)),
            "i64_neg_dim": case(lambda x: aten.unfold_copy(x, -1, 3, 2), r(2, 7, dtype=i64)),
            "f32_channels_last": case(lambda x: aten.unfold_copy(x, 1, 2, 2), cl(r(1, 4, 2, 2))),
        }, preserve_ops=[aten.unfold_copy.default]),
        OpProgram("tril_out", "aten::tril.out", {
            "f32": case(lambda x: torch.tril(x), r(4, 4)),
            "i64_diag": case(lambda x: torch.tril(x, 1), r(2, 3, 5, dtype=i64)),
            "bool_neg_diag": case(lambda x: torch.tril(x, -1), r(3, 3, dtype=b)),
            "f32_channels_last": case(lambda x: torch.tril(x), cl(r(1, 2, 3, 3))),
            "u8_zero_size": case(lambda x: torch.tril(x), r(0, 3, dtype=u8)),
        }, preserve_ops=[aten.tril.default]),
        OpProgram("select_scatter_out", "aten::select_scatter.out", {
            "f32": case(lambda x, s: torch.select_scatter(x, s, 0, 1), r(3, 4), r(4)),
            "i64_neg": case(lambda x, s: torch.select_scatter(x, s, -1, -1), r(2, 3, dtype=i64),
                            r(2, dtype=i64)),
            "f32_channels_last": case(lambda x, s: torch.select_scatter(x, s, 1, 2),
                                      cl(r(1, 3, 2, 2)), r(1, 2, 2)),
        }, preserve_ops=[aten.select_scatter.default]),
        OpProgram("slice_scatter_out", "aten::slice_scatter.out", {
            "f32": case(lambda x, s: torch.slice_scatter(x, s, 1, 1, 3), r(2, 4), r(2, 2)),
            "i64_step": case(lambda x, s: torch.slice_scatter(x, s, 0, 0, None, 2),
                             r(5, 2, dtype=i64), r(3, 2, dtype=i64)),
            "f32_channels_last_neg": case(lambda x, s: torch.slice_scatter(x, s, -1, -2),
                                          cl(r(1, 2, 2, 3)), r(1, 2, 2, 2)),
        }),
        OpProgram("repeat_interleave_tensor_out", "aten::repeat_interleave.Tensor_out", {
            "i64": case(lambda rp: torch.repeat_interleave(rp, output_size=6),
                        torch.tensor([1, 0, 3, 2])),
            "i64_zeros": case(lambda rp: torch.repeat_interleave(rp, output_size=0),
                              torch.tensor([0, 0])),
        }, preserve_ops=[aten.repeat_interleave.Tensor]),
    ]

    def perm_index(n, cols):
        # Each column a permutation of range(n): no duplicate targets.
        return torch.stack([torch.randperm(n, generator=g) for _ in range(cols)], 1)

    F = torch.nn.functional
    progs += [
        OpProgram("constant_pad_nd_out", "aten::constant_pad_nd.out", {
            "f32": case(lambda x: F.pad(x, (1, 2)), r(2, 3)),
            "f32_value_two_dims": case(lambda x: F.pad(x, (1, 0, 0, 2), value=1.5), r(2, 3, 2)),
            "i64_negative_crop": case(lambda x: F.pad(x, (-1, 2), value=7), r(2, 4, dtype=i64)),
            "bool": case(lambda x: F.pad(x, (1, 1), value=True), r(2, 2, dtype=b)),
            "u8_channels_last": case(lambda x: F.pad(x, (1, 1, 2, 0), value=3),
                                     cl(r(1, 3, 2, 2, dtype=u8))),
            "f32_zero_size": case(lambda x: F.pad(x, (1, 1)), r(0, 3)),
        }),
        OpProgram("reflection_pad1d_out", "aten::reflection_pad1d.out", {
            "f32": case(lambda x: aten.reflection_pad1d(x, [2, 1]), r(2, 4)),
            "i64_batch": case(lambda x: aten.reflection_pad1d(x, [1, 3]), r(2, 2, 4, dtype=i64)),
        }, preserve_ops=[aten.reflection_pad1d.default]),
        OpProgram("reflection_pad2d_out", "aten::reflection_pad2d.out", {
            "f32": case(lambda x: aten.reflection_pad2d(x, [1, 2, 2, 0]), r(1, 2, 3, 4)),
            "f32_channels_last": case(lambda x: aten.reflection_pad2d(x, [1, 1, 1, 1]),
                                      cl(r(2, 3, 3, 3))),
            "u8_3d": case(lambda x: aten.reflection_pad2d(x, [0, 1, 1, 0]), r(2, 2, 3, dtype=u8)),
        }, preserve_ops=[aten.reflection_pad2d.default]),
        OpProgram("reflection_pad3d_out", "aten::reflection_pad3d.out", {
            "f32": case(lambda x: aten.reflection_pad3d(x, [1, 0, 0, 1, 1, 1]), r(1, 2, 2, 3, 3)),
            "i64": case(lambda x: aten.reflection_pad3d(x, [1, 1, 1, 1, 1, 1]),
                        r(1, 2, 2, 2, dtype=i64)),
        }, preserve_ops=[aten.reflection_pad3d.default]),
        OpProgram("replication_pad1d_out", "aten::replication_pad1d.out", {
            "f32": case(lambda x: aten.replication_pad1d(x, [3, 1]), r(2, 3)),
            "i64_batch": case(lambda x: aten.replication_pad1d(x, [1, 2]), r(2, 2, 3, dtype=i64)),
        }, preserve_ops=[aten.replication_pad1d.default]),
        OpProgram("replication_pad2d_out", "aten::replication_pad2d.out", {
            "f32": case(lambda x: aten.replication_pad2d(x, [2, 1, 0, 3]), r(1, 2, 3, 3)),
            "f32_channels_last": case(lambda x: aten.replication_pad2d(x, [1, 1, 1, 1]),
                                      cl(r(2, 3, 2, 2))),
            "i64_3d": case(lambda x: aten.replication_pad2d(x, [1, 0, 0, 1]),
                           r(2, 2, 2, dtype=i64)),
        }, preserve_ops=[aten.replication_pad2d.default]),
        OpProgram("replication_pad3d_out", "aten::replication_pad3d.out", {
            "f32": case(lambda x: aten.replication_pad3d(x, [1, 2, 0, 1, 1, 0]), r(1, 2, 2, 2, 3)),
            "u8": case(lambda x: aten.replication_pad3d(x, [1, 1, 1, 1, 1, 1]),
                       r(1, 2, 2, 2, dtype=u8)),
        }, preserve_ops=[aten.replication_pad3d.default]),
        OpProgram("gather_out", "aten::gather.out", {
            "f32": case(lambda x, i: torch.gather(x, 1, i), r(3, 4), idx(4, 3, 5)),
            "i64_neg_dim": case(lambda x, i: torch.gather(x, -2, i), r(4, 3, dtype=i64),
                                idx(4, 2, 3)),
            "bool": case(lambda x, i: torch.gather(x, 0, i), r(3, 2, dtype=b), idx(3, 4, 2)),
            "f32_channels_last": case(lambda x, i: torch.gather(x, 1, i), cl(r(1, 3, 2, 2)),
                                      cl(idx(3, 1, 2, 2, 2))),
            "u8_zero_size": case(lambda x, i: torch.gather(x, 1, i), r(2, 3, dtype=u8),
                                 idx(3, 2, 0)),
        }),
        OpProgram("scatter_src_out", "aten::scatter.src_out", {
            "f32": case(lambda x, i, s: torch.scatter(x, 0, i, s), r(4, 3), perm_index(4, 3)[:3],
                        r(3, 3)),
            "i64_neg_dim": case(lambda x, i, s: torch.scatter(x, -1, i, s), r(3, 4, dtype=i64),
                                perm_index(4, 3).t()[:, :2].contiguous(), r(3, 2, dtype=i64)),
            "bool": case(lambda x, i, s: torch.scatter(x, 0, i, s), r(3, 2, dtype=b),
                         perm_index(3, 2), r(3, 2, dtype=b)),
        }),
        OpProgram("scatter_value_out", "aten::scatter.value_out", {
            "f32": case(lambda x, i: torch.scatter(x, 1, i, 2.5), r(3, 4), idx(4, 3, 2)),
            "i64": case(lambda x, i: torch.scatter(x, 0, i, -3), r(3, 2, dtype=i64), idx(3, 2, 2)),
            "u8_channels_last": case(lambda x, i: torch.scatter(x, 1, i, 9),
                                     cl(r(1, 3, 2, 2, dtype=u8)), idx(3, 1, 1, 2, 2)),
        }),
        OpProgram("scatter_add_out", "aten::scatter_add.out", {
            "f32": case(lambda x, i, s: torch.scatter_add(x, 0, i, s), r(3, 4), idx(3, 5, 4),
                        r(5, 4)),
            "i64_neg_dim": case(lambda x, i, s: torch.scatter_add(x, -1, i, s),
                                r(2, 3, dtype=i64), idx(3, 2, 6), r(2, 6, dtype=i64)),
            "f32_channels_last": case(lambda x, i, s: torch.scatter_add(x, 1, i, s),
                                      cl(r(1, 3, 2, 2)), idx(3, 1, 4, 2, 2), r(1, 4, 2, 2)),
            "u8": case(lambda x, i, s: torch.scatter_add(x, 1, i, s), r(2, 3, dtype=u8),
                       idx(3, 2, 4), r(2, 4, dtype=u8)),
            "bool": case(lambda x, i, s: torch.scatter_add(x, 0, i, s), r(3, 2, dtype=b),
                         idx(3, 4, 2), r(4, 2, dtype=b)),
        }),
        OpProgram("index_tensor_out", "aten::index.Tensor_out", {
            "f32_first_dim": case(lambda x, i: x[i], r(4, 3), idx(4, 5)),
            "i64_middle_dim": case(lambda x, i: x[:, i], r(2, 4, 3, dtype=i64), idx(4, 2, 2)),
            "f32_non_adjacent": case(lambda x, i, j: x[i, :, j], r(3, 2, 4), idx(3, 5),
                                     idx(4, 5)),
            "f32_broadcast_adjacent": case(lambda x, i, j: x[:, i, j], r(2, 3, 4), idx(3, 2, 1),
                                           idx(4, 3)),
            "bool_negative_index": case(lambda x, i: x[i], r(4, 2, dtype=b),
                                        torch.tensor([-1, 0, -4])),
            "u8_channels_last": case(lambda x, i: x[:, i], cl(r(1, 3, 2, 2, dtype=u8)),
                                     idx(3, 2)),
        }),
        OpProgram("index_put_out", "aten::index_put.out", {
            "f32": case(lambda x, i, v: torch.index_put(x, (i,), v), r(4, 3),
                        torch.tensor([2, 0]), r(2, 3)),
            "f32_accumulate": case(lambda x, i, v: torch.index_put(x, (i,), v, True), r(4, 3),
                                   torch.tensor([1, 1, 3]), r(3, 3)),
            "i64_broadcast_values": case(lambda x, i, j, v: torch.index_put(x, (i, j), v),
                                         r(3, 4, dtype=i64), torch.tensor([0, 2]),
                                         torch.tensor([3, -1]), torch.tensor([7])),
            "bool": case(lambda x, i, v: torch.index_put(x, (i,), v), r(3, 2, dtype=b),
                         torch.tensor([1]), r(1, 2, dtype=b)),
            "u8_accumulate_channels_last": case(
                lambda x, i, v: torch.index_put(x, (i,), v, True), cl(r(2, 3, 2, 2, dtype=u8)),
                torch.tensor([1, 1]), r(3, 2, 2, dtype=u8)),
        }),
        OpProgram("_empty_dim_order_out", "dim_order_ops::_empty_dim_order.out", {
            # The contents of an empty tensor are unspecified: zero-size cases.
            "f32_zero_size": case(lambda x: torch.empty(0, 3) + x, r(3)),
            "i64_zero_size": case(lambda x: torch.empty(2, 0, dtype=torch.int64) * x,
                                  r(1, dtype=i64)),
        }),
        # Data-dependent output sizes: the out tensor is planned with an upper
        # bound and resized by the kernel.
        OpProgram("nonzero_out", "aten::nonzero.out", {
            "f32": case(torch.nonzero, torch.tensor([[0.0, 1.0, -0.0], [3.0, 0.0, 2.5]])),
            "i64_3d": case(torch.nonzero, r(2, 3, 2, dtype=i64)),
            "bool": case(torch.nonzero, r(4, 3, dtype=b)),
            "u8_channels_last": case(torch.nonzero, cl(r(1, 3, 2, 2, dtype=u8))),
            "f32_all_zero": case(torch.nonzero, torch.zeros(3, 2)),
        }),
        OpProgram("masked_select_out", "aten::masked_select.out", {
            "f32": case(torch.masked_select, r(3, 4), r(3, 4, dtype=b)),
            "i64_broadcast_mask": case(torch.masked_select, r(2, 3, dtype=i64), r(3, dtype=b)),
            "f32_channels_last": case(torch.masked_select, cl(r(1, 2, 2, 3)),
                                      cl(r(1, 2, 2, 3, dtype=b))),
            "bool": case(torch.masked_select, r(2, 4, dtype=b), r(2, 4, dtype=b)),
        }, preserve_ops=[aten.masked_select.default]),
        OpProgram("masked_scatter_out", "aten::masked_scatter.out", {
            "f32": case(torch.masked_scatter, r(3, 4), r(3, 4, dtype=b), r(12)),
            "i64_broadcast_mask": case(torch.masked_scatter, r(2, 3, dtype=i64), r(3, dtype=b),
                                       r(2, 4, dtype=i64)),
            "bool": case(torch.masked_scatter, r(2, 2, dtype=b), r(2, 2, dtype=b),
                         r(4, dtype=b)),
        }),
        OpProgram("index_tensor_bool_mask_out", "aten::index.Tensor_out", {
            "f32_mask": case(lambda x, m: x[m], r(3, 4), r(3, 4, dtype=b)),
            "i64_1d_mask": case(lambda x, m: x[m], r(6, dtype=i64),
                                torch.tensor([True, False, True, True, False, True])),
        }),
    ]
    return progs
