# SPDX-License-Identifier: BSD-3-Clause
"""float16 and bfloat16 cases of the operators real models hit beyond
tests/ops/cases/half.py: convolution, the matrix products, pooling,
upsampling, batch / layer / group norm, the element-wise math (exp, log,
sqrt, rsqrt, pow ...), the Scalar arithmetic overloads, maximum / minimum and
the shape copies (stack, split, transpose, flip, pad, index_select,
embedding). Each program's cases run the operator on float16 and on bfloat16
inputs; eager PyTorch, which computes these dtypes in float32 and rounds
once per element, gives the expected outputs.

Tolerances: an element-wise result is at most one rounding of the 16-bit
type away from eager's (2^-8 relative for bfloat16); products, convolutions,
pools and norms accumulate in double here and in float32 in eager, so one
rounding apart as well, which near zero needs an absolute bound (ATOL)."""
import torch
import torch.nn.functional as F

import opcase
from opcase import OpProgram, case, channels_last

F16, BF16 = torch.float16, torch.bfloat16
aten = torch.ops.aten

RTOL, ATOL = 1e-2, 1e-2
EXACT = {"rtol": 0.0, "atol": 0.0}


def programs():
    g = torch.Generator().manual_seed(14)

    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    def pos(*shape, dtype=torch.float32):
        """Positive values (log, sqrt, rsqrt, pow bases)."""
        return (torch.rand(*shape, generator=g) * 4 + 0.05).to(dtype)

    def per_half(name, operator, make, **kw):
        kw.setdefault("rtol", RTOL)
        kw.setdefault("atol", ATOL)
        kw.setdefault("notes", "float16 and bfloat16, computed in float and rounded once "
                               "(eager's rule); rtol/atol: one rounding of the 16-bit type")
        return opcase.per_half(name, operator, make, **kw)

    progs = []

    # ---- convolution, matrix products ---------------------------------------------------
    progs += [
        per_half("convolution_out", "aten::convolution.out", lambda dt: {
            "2d_pad": case(lambda x, w, b: F.conv2d(x, w, b, padding=1), r(1, 3, 5, 5, dtype=dt),
                           r(4, 3, 3, 3, dtype=dt), r(4, dtype=dt)),
            "depthwise_channels_last": case(
                lambda x, w: F.conv2d(x, w, stride=2, groups=2),
                channels_last(r(1, 2, 6, 6, dtype=dt)), channels_last(r(2, 1, 3, 3, dtype=dt))),
            "1d": case(lambda x, w, b: F.conv1d(x, w, b, dilation=2), r(2, 2, 8, dtype=dt),
                       r(3, 2, 3, dtype=dt), r(3, dtype=dt)),
        }, atol=3e-2),
        per_half("mm_out", "aten::mm.out", lambda dt: {
            "": case(torch.mm, r(3, 8, dtype=dt), r(8, 4, dtype=dt)),
        }, atol=3e-2),
        per_half("bmm_out", "aten::bmm.out", lambda dt: {
            "": case(torch.bmm, r(2, 3, 5, dtype=dt), r(2, 5, 2, dtype=dt)),
        }, atol=3e-2),
        per_half("addmm_out", "aten::addmm.out", lambda dt: {
            "linear": case(lambda x, w, b: F.linear(x, w, b), r(3, 6, dtype=dt),
                           r(4, 6, dtype=dt), r(4, dtype=dt)),
            "alpha_beta": case(lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0),
                               r(2, 3, dtype=dt), r(2, 4, dtype=dt), r(4, 3, dtype=dt)),
        }, atol=5e-2),
    ]

    # ---- pooling, upsampling --------------------------------------------------------------
    progs += [
        per_half("max_pool2d_with_indices_out", "aten::max_pool2d_with_indices.out", lambda dt: {
            "": case(lambda x: aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1]),
                     r(1, 2, 7, 6, dtype=dt)),
            "channels_last": case(lambda x: aten.max_pool2d_with_indices(x, [2, 2]),
                                  channels_last(r(1, 3, 4, 4, dtype=dt))),
        }, **EXACT, notes="values and indices exact (a max is a copy)"),
        per_half("avg_pool2d_out", "aten::avg_pool2d.out", lambda dt: {
            "": case(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), r(1, 2, 7, 6, dtype=dt)),
            "exclude_pad_channels_last": case(
                lambda x: F.avg_pool2d(x, 2, padding=1, count_include_pad=False),
                channels_last(r(1, 3, 5, 4, dtype=dt))),
        }),
        per_half("adaptive_avg_pool2d_out", "aten::_adaptive_avg_pool2d.out", lambda dt: {
            "": case(lambda x: F.adaptive_avg_pool2d(x, (2, 2)), r(2, 3, 4, 5, dtype=dt)),
            "uneven": case(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), r(1, 2, 7, 5, dtype=dt)),
        }),
        per_half("upsample_nearest2d_vec_out", "aten::upsample_nearest2d.vec_out", lambda dt: {
            "": case(lambda x: aten.upsample_nearest2d.vec(x, None, [2.0, 2.0]),
                     r(1, 2, 3, 4, dtype=dt)),
        }, **EXACT, notes="exact (nearest copies)"),
        per_half("upsample_bilinear2d_vec_out", "aten::upsample_bilinear2d.vec_out", lambda dt: {
            "": case(lambda x: aten.upsample_bilinear2d.vec(x, None, False, [2.0, 2.0]),
                     r(1, 2, 3, 4, dtype=dt)),
            "align_channels_last": case(
                lambda x: aten.upsample_bilinear2d.vec(x, [5, 7], True, None),
                channels_last(r(1, 3, 3, 4, dtype=dt))),
        }),
    ]

    # ---- normalisation --------------------------------------------------------------------
    progs += [
        per_half("native_batch_norm_legit_no_training_out",
                 "aten::_native_batch_norm_legit_no_training.out", lambda dt: {
                     "": case(lambda x, w, b, m, v: aten._native_batch_norm_legit_no_training(
                         x, w, b, m, v, 0.1, 1e-5)[0], r(2, 3, 4, 4, dtype=dt), r(3, dtype=dt),
                         r(3, dtype=dt), r(3, dtype=dt), pos(3, dtype=dt)),
                     "channels_last": case(
                         lambda x, w, b, m, v: aten._native_batch_norm_legit_no_training(
                             x, w, b, m, v, 0.1, 1e-5)[0],
                         channels_last(r(1, 3, 3, 2, dtype=dt)), r(3, dtype=dt), r(3, dtype=dt),
                         r(3, dtype=dt), pos(3, dtype=dt)),
                 }, atol=3e-2),
        per_half("native_layer_norm_out", "aten::native_layer_norm.out", lambda dt: {
            "": case(lambda x, w, b: aten.native_layer_norm(x, [8], w, b, 1e-5)[0],
                     r(3, 8, dtype=dt), r(8, dtype=dt), r(8, dtype=dt)),
        }, atol=3e-2),
        per_half("native_group_norm_out", "aten::native_group_norm.out", lambda dt: {
            "": case(lambda x, w, b: F.group_norm(x, 2, w, b), r(2, 4, 3, 3, dtype=dt),
                     r(4, dtype=dt), r(4, dtype=dt)),
        }, atol=3e-2),
    ]

    # ---- element-wise math ------------------------------------------------------------------
    unary = [
        ("exp", torch.exp, r), ("log", torch.log, pos), ("sqrt", torch.sqrt, pos),
        ("rsqrt", torch.rsqrt, pos), ("abs", torch.abs, r), ("neg", torch.neg, r),
        ("sin", torch.sin, r), ("cos", torch.cos, r), ("erf", torch.erf, r),
        ("reciprocal", torch.reciprocal, pos), ("floor", torch.floor, r),
        ("round", torch.round, r), ("log1p", torch.log1p, pos), ("expm1", torch.expm1, r),
        ("atan", torch.atan, r),
    ]
    for nm, fn, gen in unary:
        progs.append(per_half(f"{nm}_out", f"aten::{nm}.out", lambda dt, fn=fn, gen=gen: {
            "": case(fn, gen(2, 5, dtype=dt) * (2 if gen is r else 1)),
        }, atol=1e-3))
    progs += [
        per_half("elu_out", "aten::elu.out", lambda dt: {
            "": case(F.elu, r(9, dtype=dt) * 2),
        }, atol=1e-3),
        per_half("leaky_relu_out", "aten::leaky_relu.out", lambda dt: {
            "": case(lambda x: F.leaky_relu(x, 0.1), r(9, dtype=dt)),
        }, atol=1e-3),
        per_half("pow_tensor_scalar_out", "aten::pow.Tensor_Scalar_out", lambda dt: {
            "square": case(lambda x: torch.pow(x, 2), r(6, dtype=dt)),
            "half": case(lambda x: torch.pow(x, 0.5), pos(6, dtype=dt)),
        }, atol=1e-3),
        per_half("pow_tensor_tensor_out", "aten::pow.Tensor_Tensor_out", lambda dt: {
            "broadcast": case(torch.pow, pos(3, 4, dtype=dt), r(4, dtype=dt)),
        }, atol=1e-3),
        per_half("maximum_out", "aten::maximum.out", lambda dt: {
            "broadcast": case(torch.maximum, r(3, 4, dtype=dt), r(4, dtype=dt)),
        }, **EXACT),
        per_half("minimum_out", "aten::minimum.out", lambda dt: {
            "broadcast": case(torch.minimum, r(3, 4, dtype=dt), r(3, 1, dtype=dt)),
        }, **EXACT),
        per_half("add_scalar_out", "aten::add.Scalar_out", lambda dt: {
            "alpha": case(lambda x: aten.add.Scalar(x, 1.5, 2), r(6, dtype=dt)),
        }, preserve_ops=[aten.add.Scalar], atol=1e-3),
        per_half("mul_scalar_out", "aten::mul.Scalar_out", lambda dt: {
            "": case(lambda x: aten.mul.Scalar(x, 0.3), r(6, dtype=dt)),
        }, preserve_ops=[aten.mul.Scalar], atol=1e-3),
        per_half("div_scalar_out", "aten::div.Scalar_out", lambda dt: {
            "": case(lambda x: aten.div.Scalar(x, 3), r(6, dtype=dt)),
        }, preserve_ops=[aten.div.Scalar], atol=1e-3),
    ]

    # ---- shape copies and selections (exact) ------------------------------------------------
    progs += [
        per_half("stack_out", "aten::stack.out", lambda dt: {
            "": case(lambda a, b: torch.stack([a, b], dim=1), r(2, 3, dtype=dt),
                     r(2, 3, dtype=dt)),
        }, preserve_ops=[aten.stack.default], **EXACT),
        per_half("split_with_sizes_copy_out", "aten::split_with_sizes_copy.out", lambda dt: {
            "": case(lambda x: tuple(torch.split(x, [1, 3], dim=-1)), r(2, 4, dtype=dt)),
        }, **EXACT),
        per_half("transpose_copy_int_out", "aten::transpose_copy.int_out", lambda dt: {
            "": case(lambda x: aten.transpose_copy.int(x, 0, -1), r(2, 3, 4, dtype=dt)),
        }, preserve_ops=[aten.transpose_copy.int], **EXACT),
        per_half("flip_out", "aten::flip.out", lambda dt: {
            "": case(lambda x: torch.flip(x, [0, 2]), r(2, 3, 2, dtype=dt)),
        }, **EXACT),
        per_half("constant_pad_nd_out", "aten::constant_pad_nd.out", lambda dt: {
            "": case(lambda x: F.pad(x, (1, 2), value=0.5), r(2, 3, dtype=dt)),
        }, **EXACT),
        per_half("index_select_out", "aten::index_select.out", lambda dt: {
            "": case(lambda x, i: torch.index_select(x, 1, i), r(2, 4, dtype=dt),
                     torch.tensor([3, 0, 3])),
        }, **EXACT),
        per_half("embedding_out", "aten::embedding.out", lambda dt: {
            "": case(F.embedding, torch.tensor([[1, 0], [2, 2]]), r(3, 4, dtype=dt)),
        }, **EXACT),
        per_half("clone_out", "aten::clone.out", lambda dt: {
            "": case(lambda x: x.clone(), r(3, 2, dtype=dt)),
        }, skip_dim_order=True, **EXACT),
    ]

    # ---- index / scatter operators ----------------------------------------------------------
    progs += [
        per_half("gather_out", "aten::gather.out", lambda dt: {
            "": case(lambda x, i: torch.gather(x, 1, i), r(2, 4, dtype=dt),
                     torch.tensor([[3, 0], [1, 1]])),
        }, **EXACT),
        per_half("scatter_add_out", "aten::scatter_add.out", lambda dt: {
            "": case(lambda x, i, v: torch.scatter_add(x, 0, i, v), r(3, 2, dtype=dt),
                     torch.tensor([[2, 0], [2, 1]]), r(2, 2, dtype=dt)),
        }, atol=1e-3),
        per_half("index_put_out", "aten::index_put.out", lambda dt: {
            "accumulate": case(lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
                               r(4, 2, dtype=dt), torch.tensor([1, 1, 3]), r(3, 2, dtype=dt)),
        }, atol=1e-3),
        per_half("index_tensor_out", "aten::index.Tensor_out", lambda dt: {
            "": case(lambda x, i: x[i], r(4, 3, dtype=dt), torch.tensor([2, 0, 2])),
        }, **EXACT),
        per_half("nonzero_out", "aten::nonzero.out", lambda dt: {
            "": case(torch.nonzero, torch.tensor([[0.0, 1.5], [-0.0, 2.0]], dtype=dt)),
        }, **EXACT),
    ]

    # ---- more reductions ------------------------------------------------------------------
    def distinct(*shape, dtype):
        n = 1
        for d in shape:
            n *= d
        return ((torch.randperm(n, generator=g) - n // 2).reshape(shape) / 4).to(dtype)

    progs += [
        per_half("amin_out", "aten::amin.out", lambda dt: {
            "": case(lambda x: torch.amin(x, dim=-1), r(3, 5, dtype=dt)),
        }, **EXACT),
        per_half("argmin_out", "aten::argmin.out", lambda dt: {
            "": case(lambda x: torch.argmin(x, dim=1), distinct(3, 4, dtype=dt)),
        }, **EXACT),
        per_half("min_dim_min", "aten::min.dim_min", lambda dt: {
            "": case(lambda x: tuple(torch.min(x, dim=0)), distinct(4, 3, dtype=dt)),
        }, **EXACT),
        per_half("max_unary_out", "aten::max.unary_out", lambda dt: {
            "": case(torch.max, r(3, 4, dtype=dt)),
        }, **EXACT),
        per_half("min_unary_out", "aten::min.unary_out", lambda dt: {
            "": case(torch.min, r(3, 4, dtype=dt)),
        }, **EXACT),
        per_half("var_correction_out", "aten::var.correction_out", lambda dt: {
            "dim": case(lambda x: torch.var(x, dim=1), r(3, 6, dtype=dt)),
        }),
        per_half("var_mean_correction_out", "aten::var_mean.correction_out", lambda dt: {
            "": case(lambda x: torch.var_mean(x, dim=-1, correction=0), r(2, 5, dtype=dt)),
        }, preserve_ops=[aten.var_mean.correction]),
        per_half("prod_int_out", "aten::prod.int_out", lambda dt: {
            "": case(lambda x: torch.prod(x, dim=1), r(3, 4, dtype=dt)),
        }, atol=1e-3),
        per_half("mean_dtype_out", "aten::mean.dtype_out", lambda dt: {
            "to_f32": case(lambda x: aten.mean.default(x, dtype=torch.float32), r(3, 4, dtype=dt)),
        }, preserve_ops=[aten.mean.default], atol=1e-3),
        per_half("topk_values", "aten::topk.values", lambda dt: {
            "": case(lambda x: tuple(torch.topk(x, 2, dim=-1)), distinct(3, 5, dtype=dt)),
        }, **EXACT),
    ]

    # ---- creation -------------------------------------------------------------------------
    progs += [
        per_half("full_out", "aten::full.out", lambda dt: {
            "": case(lambda: torch.full((2, 3), 0.1, dtype=dt)),
        }, **EXACT, notes="0.1 rounded to nearest even once"),
        per_half("ones_out", "aten::ones.out", lambda dt: {
            "": case(lambda: torch.ones(2, 2, dtype=dt)),
        }, preserve_ops=[aten.ones.default], **EXACT),
        per_half("zeros_out", "aten::zeros.out", lambda dt: {
            "": case(lambda: torch.zeros(3, dtype=dt)),
        }, preserve_ops=[aten.zeros.default], **EXACT),
        per_half("scalar_tensor_out", "aten::scalar_tensor.out", lambda dt: {
            "": case(lambda: torch.scalar_tensor(1.1, dtype=dt)),
        }, **EXACT),
        per_half("fill_scalar_out", "aten::fill.Scalar_out", lambda dt: {
            "": case(lambda x: aten.fill.Scalar(x, -2.3), r(2, 3, dtype=dt)),
        }, preserve_ops=[aten.fill.Scalar], **EXACT),
        per_half("masked_fill_scalar_out", "aten::masked_fill.Scalar_out", lambda dt: {
            "": case(lambda x, m: x.masked_fill(m, 0.7), r(2, 3, dtype=dt),
                     r(3) > 0),
        }, preserve_ops=[aten.masked_fill.Scalar], **EXACT),
        per_half("arange_start_out", "aten::arange.start_out", lambda dt: {
            "": case(lambda: torch.arange(0, 2, 0.25, dtype=dt)),
        }, preserve_ops=[aten.arange.start_step], **EXACT),
    ]

    # ---- the other element-wise operators of the same kernels -------------------------------
    def unit(*shape, dtype):
        # values in (-0.9, 0.9): asin, acos, atanh, tan
        return ((torch.rand(*shape, generator=g) * 1.8) - 0.9).to(dtype)

    def above_one(*shape, dtype):
        return pos(*shape, dtype=dtype) + 1

    def in_unit(*shape, dtype):
        # values in (0.05, 0.95): logit
        return (torch.rand(*shape, generator=g) * 0.9 + 0.05).to(dtype)

    for nm, fn, gen in (("acos", torch.acos, unit), ("asin", torch.asin, unit),
                        ("atanh", torch.atanh, unit), ("asinh", torch.asinh, r),
                        ("acosh", torch.acosh, above_one), ("ceil", torch.ceil, r),
                        ("trunc", torch.trunc, r), ("cosh", torch.cosh, r),
                        ("sinh", torch.sinh, r), ("tan", torch.tan, unit),
                        ("log2", torch.log2, pos), ("log10", torch.log10, pos),
                        ("sign", torch.sign, r)):
        progs.append(per_half(f"{nm}_out", f"aten::{nm}.out", lambda dt, fn=fn, gen=gen: {
            "": case(fn, gen(2, 4, dtype=dt)),
        }, atol=1e-3))
    progs += [
        per_half("isnan_out", "aten::isnan.out", lambda dt: {
            "": case(torch.isnan, torch.tensor([0.0, float("nan"), float("inf"), -1.0], dtype=dt)),
        }, **EXACT),
        per_half("isinf_out", "aten::isinf.out", lambda dt: {
            "": case(torch.isinf, torch.tensor([0.0, float("nan"), float("-inf"), 7.0], dtype=dt)),
        }, **EXACT),
        per_half("glu_out", "aten::glu.out", lambda dt: {
            "": case(lambda x: aten.glu.default(x, -1), r(3, 4, dtype=dt)),
        }, preserve_ops=[aten.glu.default], atol=1e-3),
        per_half("logit_out", "aten::logit.out", lambda dt: {
            "eps": case(lambda x: aten.logit.default(x, 0.1), in_unit(2, 4, dtype=dt)),
        }, preserve_ops=[aten.logit.default], atol=1e-3),
        per_half("atan2_out", "aten::atan2.out", lambda dt: {
            "": case(torch.atan2, r(3, 2, dtype=dt), r(2, dtype=dt)),
        }, atol=1e-3),
        per_half("floor_divide_out", "aten::floor_divide.out", lambda dt: {
            "": case(lambda a, b: aten.floor_divide.default(a, b), r(6, dtype=dt) * 4,
                     r(6, dtype=dt)),
        }, preserve_ops=[aten.floor_divide.default], atol=1e-3),
        per_half("fmod_tensor_out", "aten::fmod.Tensor_out", lambda dt: {
            "": case(torch.fmod, r(6, dtype=dt) * 4, pos(6, dtype=dt)),
        }, atol=1e-2),
        per_half("remainder_tensor_out", "aten::remainder.Tensor_out", lambda dt: {
            "": case(torch.remainder, r(6, dtype=dt) * 4, pos(6, dtype=dt)),
        }, atol=1e-2),
        per_half("logical_and_out", "aten::logical_and.out", lambda dt: {
            "": case(torch.logical_and, torch.tensor([0.0, 1.0, -0.0, 2.0], dtype=dt),
                     torch.tensor([1.0, 0.5, 1.0, 0.0], dtype=dt)),
        }, **EXACT),
        per_half("rsub_scalar_out", "aten::rsub.Scalar_out", lambda dt: {
            "": case(lambda x: aten.rsub.Scalar(x, 2.5, 2), r(6, dtype=dt)),
        }, preserve_ops=[aten.rsub.Scalar], atol=1e-2),
        per_half("sub_scalar_out", "aten::sub.Scalar_out", lambda dt: {
            "": case(lambda x: aten.sub.Scalar(x, 0.75), r(6, dtype=dt)),
        }, preserve_ops=[aten.sub.Scalar], atol=1e-3),
        per_half("div_scalar_mode_out", "aten::div.Scalar_mode_out", lambda dt: {
            "floor": case(lambda x: aten.div.Scalar_mode(x, 0.7, rounding_mode="floor"),
                          r(6, dtype=dt) * 3),
        }, preserve_ops=[aten.div.Scalar_mode], atol=1e-3),
    ]

    # ---- the other copies, pads and scatters (exact) ------------------------------------------
    progs += [
        per_half("reflection_pad2d_out", "aten::reflection_pad2d.out", lambda dt: {
            "": case(lambda x: aten.reflection_pad2d(x, [1, 1, 2, 0]), r(1, 2, 3, 3, dtype=dt)),
        }, preserve_ops=[aten.reflection_pad2d.default], **EXACT),
        per_half("replication_pad1d_out", "aten::replication_pad1d.out", lambda dt: {
            "": case(lambda x: aten.replication_pad1d(x, [2, 1]), r(1, 2, 3, dtype=dt)),
        }, preserve_ops=[aten.replication_pad1d.default], **EXACT),
        per_half("roll_out", "aten::roll.out", lambda dt: {
            "": case(lambda x: torch.roll(x, 1, 0), r(3, 2, dtype=dt)),
        }, preserve_ops=[aten.roll.default], **EXACT),
        per_half("repeat_out", "aten::repeat.out", lambda dt: {
            "": case(lambda x: x.repeat(2, 1, 2), r(2, 3, dtype=dt)),
        }, **EXACT),
        per_half("pixel_shuffle_out", "aten::pixel_shuffle.out", lambda dt: {
            "": case(lambda x: torch.pixel_shuffle(x, 2), r(1, 4, 2, 3, dtype=dt)),
        }, preserve_ops=[aten.pixel_shuffle.default], **EXACT),
        per_half("tril_out", "aten::tril.out", lambda dt: {
            "": case(lambda x: torch.tril(x, -1), r(3, 4, dtype=dt)),
        }, preserve_ops=[aten.tril.default], **EXACT),
        per_half("unbind_copy_int_out", "aten::unbind_copy.int_out", lambda dt: {
            "": case(lambda x: tuple(aten.unbind_copy.int(x, 1)), r(2, 3, dtype=dt)),
        }, preserve_ops=[aten.unbind_copy.int], **EXACT),
        per_half("slice_scatter_out", "aten::slice_scatter.out", lambda dt: {
            "": case(lambda x, y: torch.slice_scatter(x, y, 1, 0, 4, 2), r(2, 4, dtype=dt),
                     r(2, 2, dtype=dt)),
        }, **EXACT),
        per_half("scatter_src_out", "aten::scatter.src_out", lambda dt: {
            "": case(lambda x, i, v: torch.scatter(x, 1, i, v), r(2, 3, dtype=dt),
                     torch.tensor([[2], [0]]), r(2, 1, dtype=dt)),
        }, **EXACT),
    ]
    return progs
