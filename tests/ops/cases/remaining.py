# SPDX-License-Identifier: BSD-3-Clause
"""Cases of the operators that had no per-operator program before: the
Scalar overloads of add/sub/mul/div, the matrix products, convolution,
pooling, batch norm (inference) and layer norm, embedding / index_select,
clone, squeeze_copy.dim, native_dropout's deterministic settings (p = 0,
p = 1, training off; its statistics are tests/test_random_ops.py's) and the
in-place copy_ / index_put_ the exporter emits for mutable buffers
(tests/ops/opcase.py)."""
import torch
import torch.nn.functional as F
from torch import nn

from fixture_writer import MethodSpec
from opcase import OpProgram, case, channels_last, random_maker

aten = torch.ops.aten
F64, I32, I64 = torch.float64, torch.int32, torch.int64


class BufferCopy(nn.Module):
    """A mutable buffer overwritten by its input (broadcast): the exporter
    writes the buffer back with aten::copy_. The output reads the buffer after
    the write."""

    def __init__(self, shape, dtype):
        super().__init__()
        self.register_buffer("buf", torch.zeros(shape, dtype=dtype))

    def forward(self, x):
        self.buf.copy_(x)
        return self.buf * 2


class BufferIndexPut(nn.Module):
    """buf[idx] = values (accumulate or not) on a mutable buffer: with
    upstream's reinplace pass the exporter emits aten::index_put_. The buffer
    starts at zero every execute here (it is zeroed first), so the output does
    not depend on earlier executes."""

    def __init__(self, shape, dtype, accumulate):
        super().__init__()
        self.register_buffer("buf", torch.zeros(shape, dtype=dtype))
        self.accumulate = accumulate

    def forward(self, idx, values):
        self.buf.zero_()
        self.buf.index_put_((idx,), values, accumulate=self.accumulate)
        # neg, not `+ 0`: the exporter's memory plan puts the scalar 0 at the
        # buffer copy's offset after the reinplaced index_put_, overwriting
        # element 0 while it is still live
        return torch.neg(self.buf)


class SqueezeDimProgram(OpProgram):
    """squeeze_copy.dim_out: the exporter always emits the .dims overload (a
    list of dims), so every call of squeeze_copy.dims_out with a one-element
    list is rewritten to squeeze_copy.dim_out with that dim as an int."""

    def post_export(self, pte: bytes) -> bytes:
        from executorch.exir._serialize._program import (deserialize_pte_binary,
                                                         serialize_pte_binary)

        f = deserialize_pte_binary(pte)
        for plan in f.program.execution_plan:
            for k, op in enumerate(plan.operators):
                if (op.name, op.overload) != ("aten::squeeze_copy", "dims_out"):
                    continue
                op.overload = "dim_out"
                for ch in plan.chains:
                    for ins in ch.instructions:
                        a = ins.instr_args
                        if getattr(a, "op_index", None) != k:
                            continue
                        # an IntList holds the indices of its Int values
                        items = plan.values[a.args[1]].val.items
                        assert len(items) == 1, items
                        a.args = [a.args[0], items[0]] + list(a.args[2:])
        return bytes(serialize_pte_binary(f))


def programs():
    g = torch.Generator().manual_seed(13)
    r = random_maker(g)

    progs = []

    # ---- Scalar overloads of the arithmetic ------------------------------------------
    progs += [
        OpProgram("add_scalar_out", "aten::add.Scalar_out", {
            "f32_float": case(lambda x: aten.add.Scalar(x, 1.5), r(2, 3)),
            "f32_alpha": case(lambda x: aten.add.Scalar(x, 2, 3), r(4)),
            "i64_int": case(lambda x: aten.add.Scalar(x, 7), r(2, 3, dtype=I64)),
            "i32_float_to_f32": case(lambda x: aten.add.Scalar(x, 0.5), r(5, dtype=I32)),
            "bool_int_to_i64": case(lambda x: aten.add.Scalar(x, 2), r(4, dtype=torch.bool)),
            "f64_channels_last": case(lambda x: aten.add.Scalar(x, -2.25),
                                      channels_last(r(1, 3, 2, 2, dtype=F64))),
            "f32_zero_size": case(lambda x: aten.add.Scalar(x, 1.0), r(0, 3)),
            "u8_wraps": case(lambda x: aten.add.Scalar(x, 250), r(6, dtype=torch.uint8)),
        }, preserve_ops=[aten.add.Scalar],
            notes="self + alpha * other; int/float/bool scalars lift the category only"),
        OpProgram("sub_scalar_out", "aten::sub.Scalar_out", {
            "f32_float": case(lambda x: aten.sub.Scalar(x, 1.5), r(2, 3)),
            "f32_alpha": case(lambda x: aten.sub.Scalar(x, 2, 3), r(4)),
            "i64_int": case(lambda x: aten.sub.Scalar(x, 7), r(2, 3, dtype=I64)),
            "i32_float_to_f32": case(lambda x: aten.sub.Scalar(x, 0.5), r(5, dtype=I32)),
            "f64_channels_last": case(lambda x: aten.sub.Scalar(x, -2.25),
                                      channels_last(r(1, 3, 2, 2, dtype=F64))),
            "f32_zero_size": case(lambda x: aten.sub.Scalar(x, 1.0), r(0, 3)),
        }, preserve_ops=[aten.sub.Scalar], notes="self - alpha * other"),
        OpProgram("mul_scalar_out", "aten::mul.Scalar_out", {
            "f32_float": case(lambda x: aten.mul.Scalar(x, 1.5), r(2, 3)),
            "i64_int": case(lambda x: aten.mul.Scalar(x, -3), r(2, 3, dtype=I64)),
            "i32_float_to_f32": case(lambda x: aten.mul.Scalar(x, 0.5), r(5, dtype=I32)),
            "bool_bool": case(lambda x: aten.mul.Scalar(x, True), r(4, dtype=torch.bool)),
            "f64_channels_last": case(lambda x: aten.mul.Scalar(x, -2.25),
                                      channels_last(r(1, 3, 2, 2, dtype=F64))),
            "f32_zero_size": case(lambda x: aten.mul.Scalar(x, 2.0), r(3, 0)),
            "u8_wraps": case(lambda x: aten.mul.Scalar(x, 30), r(6, dtype=torch.uint8)),
        }, preserve_ops=[aten.mul.Scalar], notes="bool * bool stays bool; uint8 wraps"),
        OpProgram("div_scalar_out", "aten::div.Scalar_out", {
            "f32_float": case(lambda x: aten.div.Scalar(x, 1.5), r(2, 3)),
            "f32_by_zero": case(lambda x: aten.div.Scalar(x, 0.0),
                                torch.tensor([1.0, -1.0, 0.0])),
            "i64_int_to_f32": case(lambda x: aten.div.Scalar(x, 4), r(2, 3, dtype=I64)),
            "f64_channels_last": case(lambda x: aten.div.Scalar(x, -3),
                                      channels_last(r(1, 3, 2, 2, dtype=F64))),
            "f32_zero_size": case(lambda x: aten.div.Scalar(x, 2.0), r(0,)),
        }, preserve_ops=[aten.div.Scalar], notes="true division: integers give float32"),
        OpProgram("div_scalar_mode_out", "aten::div.Scalar_mode_out", {
            "f32_floor": case(lambda x: aten.div.Scalar_mode(x, 1.5, rounding_mode="floor"),
                              r(8) * 4),
            "f32_trunc": case(lambda x: aten.div.Scalar_mode(x, -1.5, rounding_mode="trunc"),
                              r(8) * 4),
            "f32_none": case(lambda x: aten.div.Scalar_mode(x, 4, rounding_mode=None), r(5)),
            "i64_floor": case(lambda x: aten.div.Scalar_mode(x, 4, rounding_mode="floor"),
                              r(9, dtype=I64)),
            "i32_trunc": case(lambda x: aten.div.Scalar_mode(x, -4, rounding_mode="trunc"),
                              r(9, dtype=I32)),
            "f64_floor_channels_last": case(
                lambda x: aten.div.Scalar_mode(x, 0.7, rounding_mode="floor"),
                channels_last(r(1, 2, 2, 3, dtype=F64))),
        }, preserve_ops=[aten.div.Scalar_mode],
            notes="floor / trunc / no rounding; integer floor and trunc stay integers"),
    ]

    # ---- matrix products --------------------------------------------------------------
    progs += [
        OpProgram("mm_out", "aten::mm.out", {
            "f32": case(torch.mm, r(3, 4), r(4, 5)),
            "f64": case(torch.mm, r(2, 7, dtype=F64), r(7, 3, dtype=F64)),
            "i64": case(torch.mm, r(3, 2, dtype=I64), r(2, 4, dtype=I64)),
            "i32": case(torch.mm, r(2, 3, dtype=I32), r(3, 2, dtype=I32)),
            "f32_k0": case(torch.mm, r(3, 0), r(0, 2)),
            "f32_n0": case(torch.mm, r(0, 4), r(4, 2)),
        }, rtol=1e-5, atol=1e-5, notes="float and integer operands; empty inner dimension "
                                        "gives zeros; empty rows"),
        OpProgram("bmm_out", "aten::bmm.out", {
            "f32": case(torch.bmm, r(2, 3, 4), r(2, 4, 5)),
            "f64": case(torch.bmm, r(3, 2, 2, dtype=F64), r(3, 2, 3, dtype=F64)),
            "i64": case(torch.bmm, r(2, 2, 3, dtype=I64), r(2, 3, 2, dtype=I64)),
            "f32_zero_batch": case(torch.bmm, r(0, 2, 3), r(0, 3, 4)),
            "f32_k0": case(torch.bmm, r(2, 2, 0), r(2, 0, 3)),
        }, rtol=1e-5, atol=1e-5, notes="float and integer batches, empty batch, empty k"),
        OpProgram("addmm_out", "aten::addmm.out", {
            "f32_bias_row": case(torch.addmm, r(5), r(3, 4), r(4, 5)),
            "f32_bias_full_alpha_beta": case(
                lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0), r(3, 5), r(3, 4),
                r(4, 5)),
            "f32_bias_col": case(torch.addmm, r(3, 1), r(3, 2), r(2, 4)),
            "f64": case(torch.addmm, r(2, dtype=F64), r(3, 6, dtype=F64), r(6, 2, dtype=F64)),
            "i64_alpha_beta": case(lambda b, x, y: torch.addmm(b, x, y, beta=2, alpha=3),
                                   r(2, 2, dtype=I64), r(2, 3, dtype=I64), r(3, 2, dtype=I64)),
            "f32_beta0_nan_bias": case(lambda b, x, y: torch.addmm(b, x, y, beta=0),
                                       torch.full((4,), float("nan")), r(2, 3), r(3, 4)),
            "f32_k0": case(torch.addmm, r(3), r(2, 0), r(0, 3)),
        }, rtol=1e-5, atol=1e-5, notes="beta * self + alpha * mat1 @ mat2; self broadcast as a "
                                        "row or a column; beta = 0 ignores NaN in self"),
    ]

    # ---- convolution ------------------------------------------------------------------
    progs.append(OpProgram("convolution_out", "aten::convolution.out", {
        "f32_2d": case(lambda x, w, b: F.conv2d(x, w, b), r(1, 2, 5, 5), r(3, 2, 3, 3), r(3)),
        "f32_2d_stride_pad_dil": case(
            lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=(1, 2), dilation=(2, 1)),
            r(2, 3, 7, 6), r(4, 3, 3, 2), r(4)),
        "f32_2d_groups_no_bias": case(lambda x, w: F.conv2d(x, w, groups=2), r(1, 4, 4, 4),
                                      r(6, 2, 2, 2)),
        "f32_depthwise_channels_last": case(
            lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=3),
            channels_last(r(1, 3, 5, 4)), channels_last(r(3, 1, 3, 3)), r(3)),
        "f32_1d": case(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), r(2, 3, 9),
                       r(2, 3, 3), r(2)),
        "f64_2d": case(lambda x, w, b: F.conv2d(x, w, b, padding=1), r(1, 2, 4, 4, dtype=F64),
                       r(2, 2, 3, 3, dtype=F64), r(2, dtype=F64)),
        "f32_zero_batch": case(lambda x, w, b: F.conv2d(x, w, b), r(0, 2, 4, 4), r(3, 2, 3, 3),
                               r(3)),
        "f32_transposed_2d": case(
            lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
            r(1, 3, 4, 4), r(3, 2, 3, 3), r(2)),
        "f32_transposed_1d_groups_dil": case(
            lambda x, w: F.conv_transpose1d(x, w, stride=3, groups=2, dilation=2), r(2, 4, 5),
            r(4, 1, 2)),
        "f64_transposed_channels_last": case(
            lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(1, 2), padding=(0, 1)),
            channels_last(r(1, 2, 3, 3, dtype=F64)), r(2, 3, 2, 3, dtype=F64), r(3, dtype=F64)),
        "i64_2d": case(lambda x, w: F.conv2d(x, w, stride=1), r(1, 2, 4, 4, dtype=I64),
                       r(2, 2, 2, 2, dtype=I64)),
    }, rtol=1e-4, atol=1e-5, notes="1-D and 2-D, stride/padding/dilation, groups and depthwise, "
                                    "no bias, channels-last, zero batch, int64; transposed with "
                                    "output padding, groups, dilation"))

    # ---- pooling ----------------------------------------------------------------------
    progs += [
        OpProgram("avg_pool2d_out", "aten::avg_pool2d.out", {
            "f32": case(lambda x: F.avg_pool2d(x, 2), r(1, 2, 4, 6)),
            "f32_stride_pad": case(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
                                   r(2, 3, 7, 5)),
            "f32_exclude_pad_ceil": case(
                lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                       count_include_pad=False), r(1, 2, 6, 6)),
            "f32_divisor_override": case(
                lambda x: F.avg_pool2d(x, (2, 3), stride=1, divisor_override=4), r(1, 1, 4, 5)),
            "f64_3d": case(lambda x: F.avg_pool2d(x, 2, stride=1), r(3, 5, 5, dtype=F64)),
            "f32_channels_last": case(lambda x: F.avg_pool2d(x, 2, padding=1),
                                      channels_last(r(2, 3, 5, 4))),
            "f32_zero_batch": case(lambda x: F.avg_pool2d(x, 2), r(0, 2, 4, 4)),
        }, rtol=1e-5, atol=1e-6, notes="kernel/stride/padding, ceil mode, count_include_pad, "
                                        "divisor_override, unbatched, channels-last, zero batch"),
        OpProgram("max_pool2d_with_indices_out", "aten::max_pool2d_with_indices.out", {
            "f32": case(lambda x: aten.max_pool2d_with_indices(x, [2, 2]), r(1, 2, 4, 6)),
            "f32_stride_pad_dil": case(
                lambda x: aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [2, 1]),
                r(2, 2, 9, 7)),
            "f32_ceil": case(lambda x: aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [0, 0],
                                                                    [1, 1], True),
                             r(1, 1, 6, 6)),
            "f64_3d": case(lambda x: aten.max_pool2d_with_indices(x, [2, 2], [1, 1]),
                           r(3, 4, 4, dtype=F64)),
            "i64": case(lambda x: aten.max_pool2d_with_indices(x, [2, 2]),
                        torch.randperm(32, generator=g).reshape(1, 2, 4, 4)),
            "f32_channels_last": case(lambda x: aten.max_pool2d_with_indices(x, [2, 2], [2, 2],
                                                                             [1, 1]),
                                      channels_last(r(1, 3, 5, 4))),
            "f32_max_pool2d": case(lambda x: F.max_pool2d(x, 2, padding=1), r(1, 2, 5, 5)),
        }, notes="values and flat indices; stride, padding (-inf), dilation, ceil mode, "
                 "unbatched, int64, channels-last; F.max_pool2d without indices"),
    ]

    # ---- normalisation ----------------------------------------------------------------
    progs += [
        OpProgram("native_batch_norm_legit_no_training_out",
                  "aten::_native_batch_norm_legit_no_training.out", {
                      "f32": case(lambda x, w, b, m, v: aten._native_batch_norm_legit_no_training(
                          x, w, b, m, v, 0.1, 1e-5)[0], r(2, 3, 4, 4), r(3), r(3), r(3),
                          r(3).abs() + 0.5),
                      "f32_channels_last": case(
                          lambda x, w, b, m, v: aten._native_batch_norm_legit_no_training(
                              x, w, b, m, v, 0.1, 1e-5)[0],
                          channels_last(r(2, 3, 3, 2)), r(3), r(3), r(3), r(3).abs() + 0.5),
                      "f64_no_affine_3d": case(
                          lambda x, m, v: aten._native_batch_norm_legit_no_training(
                              x, None, None, m, v, 0.1, 1e-3)[0],
                          r(2, 4, 5, dtype=F64), r(4, dtype=F64), r(4, dtype=F64).abs() + 0.5),
                      "f32_module_2d": case(nn.BatchNorm1d(3).eval(), r(4, 3)),
                      "f32_zero_batch": case(
                          lambda x, w, b, m, v: aten._native_batch_norm_legit_no_training(
                              x, w, b, m, v, 0.1, 1e-5)[0], r(0, 3, 2, 2), r(3), r(3), r(3),
                          r(3).abs() + 0.5),
                  }, rtol=1e-5, atol=1e-5,
                  notes="inference with running statistics: NCHW, channels-last, no affine, "
                        "(N, C, L), (N, C), zero batch"),
        OpProgram("native_layer_norm_out", "aten::native_layer_norm.out", {
            "f32_last_dim": case(lambda x, w, b: tuple(aten.native_layer_norm(x, [5], w, b,
                                                                              1e-5)),
                                 r(2, 3, 5), r(5), r(5)),
            "f32_two_dims_no_affine": case(
                lambda x: tuple(aten.native_layer_norm(x, [3, 4], None, None, 1e-5)),
                r(2, 3, 4)),
            "f64": case(lambda x, w, b: tuple(aten.native_layer_norm(x, [4], w, b, 1e-3)),
                        r(3, 4, dtype=F64), r(4, dtype=F64), r(4, dtype=F64)),
            "f32_module": case(nn.LayerNorm(6).eval(), r(2, 6)),
            "f32_zero_rows": case(lambda x, w, b: tuple(aten.native_layer_norm(x, [4], w, b,
                                                                               1e-5)),
                                  r(0, 4), r(4), r(4)),
        }, rtol=1e-5, atol=1e-5, notes="output, mean and rstd; one and two normalised dims, no "
                                        "affine, float64, zero rows"),
    ]

    # ---- selection and copies ---------------------------------------------------------
    progs += [
        OpProgram("embedding_out", "aten::embedding.out", {
            "f32_i64": case(F.embedding, torch.tensor([[0, 2], [4, 1]]), r(5, 3)),
            "f64_i32": case(F.embedding, torch.tensor([3, 3, 0], dtype=I32), r(4, 2, dtype=F64)),
            "f32_padding_idx": case(lambda i, w: F.embedding(i, w, padding_idx=1),
                                    torch.tensor([1, 0, 1]), r(3, 4)),
            "i64_weight": case(F.embedding, torch.tensor([2, 0]), r(3, 2, dtype=I64)),
            "f32_empty_indices": case(F.embedding, torch.zeros(0, 2, dtype=I64), r(3, 4)),
        }, notes="int64 / int32 indices, 2-D indices, padding_idx (a forward no-op), integer "
                 "weights, empty indices"),
        OpProgram("index_select_out", "aten::index_select.out", {
            "f32_dim0": case(lambda x, i: torch.index_select(x, 0, i), r(4, 3),
                             torch.tensor([3, 0, 0])),
            "i64_neg_dim": case(lambda x, i: torch.index_select(x, -1, i), r(2, 3, 4, dtype=I64),
                                torch.tensor([1, 3])),
            "bool_i32_index": case(lambda x, i: torch.index_select(x, 1, i),
                                   r(3, 4, dtype=torch.bool), torch.tensor([2, 1], dtype=I32)),
            "u8_empty_index": case(lambda x, i: torch.index_select(x, 0, i),
                                   r(3, 2, dtype=torch.uint8), torch.zeros(0, dtype=I64)),
            "f32_channels_last": case(lambda x, i: torch.index_select(x, 1, i),
                                      channels_last(r(1, 3, 2, 2)), torch.tensor([2, 0])),
            "f64_scalar_index": case(lambda x, i: torch.index_select(x, 0, i),
                                     r(3, 2, dtype=F64), torch.tensor(1)),
        }, notes="repeated indices, negative dim, bool / uint8 / int64 / float64, int32 index, "
                 "empty index, channels-last, zero-dim index"),
        OpProgram("clone_out", "aten::clone.out", {
            "f32": case(lambda x: x.clone(), r(2, 3)),
            "i64": case(lambda x: x.clone(), r(4, dtype=I64)),
            "bool": case(lambda x: x.clone(), r(3, 2, dtype=torch.bool)),
            "f32_channels_last": case(lambda x: x.clone(), channels_last(r(1, 3, 2, 2))),
            "u8_zero_size": case(lambda x: x.clone(), r(0, 2, dtype=torch.uint8)),
        }, skip_dim_order=True, rtol=0.0, atol=0.0, notes="exact copies of every dtype"),
        SqueezeDimProgram("squeeze_copy_dim_out", "aten::squeeze_copy.dim_out", {
            "f32": case(lambda x: aten.squeeze_copy.dims(x, [1]), r(2, 1, 3)),
            "i64_neg_dim": case(lambda x: aten.squeeze_copy.dims(x, [-1]), r(3, 1, dtype=I64)),
            "bool": case(lambda x: aten.squeeze_copy.dims(x, [0]), r(1, 2, 2, dtype=torch.bool)),
            "f64_zero_size": case(lambda x: aten.squeeze_copy.dims(x, [0]),
                                  r(1, 0, 2, dtype=F64)),
            "f32_channels_last": case(lambda x: aten.squeeze_copy.dims(x, [2]),
                                      channels_last(r(2, 3, 1, 2))),
        }, rtol=0.0, atol=0.0, notes="a size-1 dim goes, negative dims, channels-last input, "
                                      "zero-size; exported as squeeze_copy.dims with one dim "
                                      "and rewritten to the .dim overload"),
        OpProgram("copy_inplace", "aten::copy_", {
            "f32": MethodSpec(BufferCopy((2, 3), torch.float32), (r(2, 3),)),
            "i64": MethodSpec(BufferCopy((4,), I64), (r(4, dtype=I64),)),
            "bool": MethodSpec(BufferCopy((3, 1), torch.bool), (r(3, 1, dtype=torch.bool),)),
        }, rtol=0.0, atol=0.0, notes="the write-back of a mutable buffer (same shapes: with a "
                                      "broadcasting copy_ the exporter computes buf * 2 from the "
                                      "unbroadcast input)"),
        OpProgram("index_put_inplace", "aten::index_put_", {
            "f32": MethodSpec(BufferIndexPut((5, 2), torch.float32, False),
                              (torch.tensor([4, 0]), r(2, 2))),
            "f32_accumulate": MethodSpec(BufferIndexPut((4,), torch.float32, True),
                                         (torch.tensor([1, 1, 3]), r(3))),
            "i64_broadcast_values": MethodSpec(BufferIndexPut((3, 3), I64, False),
                                               (torch.tensor([2]), r(3, dtype=I64))),
        }, backend_config={"run_reinplace_pass": True}, rtol=0.0, atol=0.0,
            notes="index_put on a mutable buffer, made in place by upstream's reinplace pass"),
    ]

    # ---- dropout's deterministic settings --------------------------------------------
    progs.append(OpProgram("native_dropout_out", "aten::native_dropout.out", {
        "f32_train_p0": case(lambda x: tuple(aten.native_dropout(x, 0.0, True)), r(3, 4)),
        "f32_train_p1": case(lambda x: tuple(aten.native_dropout(x, 1.0, True)), r(2, 5)),
        "f64_eval": case(lambda x: tuple(aten.native_dropout(x, 0.5, False)),
                         r(2, 3, dtype=F64)),
        "f32_eval_channels_last": case(lambda x: tuple(aten.native_dropout(x, 0.3, False)),
                                       channels_last(r(1, 2, 2, 2))),
        # eager's mask of an empty input has the input's dtype, the program's is bool:
        # the output alone is compared
        "f32_zero_size": case(lambda x: aten.native_dropout(x, 0.0, True)[0], r(0, 3)),
    }, rtol=0.0, atol=0.0, notes="p = 0 and training off keep everything (mask all true), "
                                  "p = 1 drops everything; the draws themselves are tested "
                                  "statistically in tests/test_random_ops.py"))
    return progs
