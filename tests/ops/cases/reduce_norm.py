# SPDX-License-Identifier: BSD-3-Clause
"""Cases of the reductions (amin, argmin, min/max, mean.dtype_out, prod, var,
var_mean, topk), the normalisations with batch statistics (group norm, batch
norm legit) and the resampling operators (upsampling, adaptive average
pooling) of kernels_portable (tests/ops/opcase.py)."""
import torch
import torch.nn.functional as F

from opcase import OpProgram, case, channels_last, random_maker

aten = torch.ops.aten


def programs():
    g = torch.Generator().manual_seed(12)
    r = random_maker(g)

    def distinct(*shape, dtype=torch.float32):
        """No ties, so index outputs (argmin, topk) are unambiguous."""
        n = 1
        for s in shape:
            n *= s
        return (torch.randperm(n, generator=g) - n // 2).reshape(shape).to(dtype)

    def grid(n, h, w, dtype=torch.float32):
        """Sampling points, some outside [-1, 1]."""
        return (torch.rand(n, h, w, 2, generator=g) * 2.6 - 1.3).to(dtype)

    f64 = torch.float64
    i32, i64 = torch.int32, torch.int64
    return [
        # ---- resampling ---------------------------------------------------------
        OpProgram("upsample_nearest2d_vec_out", "aten::upsample_nearest2d.vec_out", {
            "f32_scale2": case(lambda x: aten.upsample_nearest2d.vec(x, None, [2.0, 2.0]),
                               r(1, 2, 3, 4)),
            "f32_scale_frac": case(lambda x: aten.upsample_nearest2d.vec(x, None, [1.5, 0.75]),
                                   r(2, 2, 5, 6)),
            "f64_size": case(lambda x: aten.upsample_nearest2d.vec(x, [7, 3], None),
                             r(1, 3, 4, 5, dtype=f64)),
            "u8_size": case(lambda x: aten.upsample_nearest2d.vec(x, [6, 8], None),
                            r(1, 2, 3, 4, dtype=torch.uint8)),
            "f32_channels_last": case(lambda x: aten.upsample_nearest2d.vec(x, [5, 9], None),
                                      channels_last(r(2, 3, 4, 4))),
            "f32_zero_batch": case(lambda x: aten.upsample_nearest2d.vec(x, [4, 4], None),
                                   r(0, 2, 2, 2)),
        }, notes="scale factors (integer and fractional), output sizes, uint8, channels-last, "
                 "zero batch"),
        OpProgram("upsample_bilinear2d_vec_out", "aten::upsample_bilinear2d.vec_out", {
            "f32_scale2": case(lambda x: aten.upsample_bilinear2d.vec(x, None, False, [2.0, 2.0]),
                               r(1, 2, 3, 4)),
            "f32_scale2_align": case(
                lambda x: aten.upsample_bilinear2d.vec(x, None, True, [2.0, 2.0]), r(1, 2, 3, 4)),
            "f32_scale_frac": case(
                lambda x: aten.upsample_bilinear2d.vec(x, None, False, [1.7, 0.6]), r(2, 2, 5, 6)),
            "f64_size_align": case(lambda x: aten.upsample_bilinear2d.vec(x, [7, 3], True, None),
                                   r(1, 3, 4, 5, dtype=f64)),
            "f64_size": case(lambda x: aten.upsample_bilinear2d.vec(x, [7, 3], False, None),
                             r(1, 3, 4, 5, dtype=f64)),
            "f32_down": case(lambda x: aten.upsample_bilinear2d.vec(x, [3, 2], False, None),
                             r(1, 2, 8, 7)),
            "f32_channels_last": case(
                lambda x: aten.upsample_bilinear2d.vec(x, [5, 9], False, None),
                channels_last(r(2, 3, 4, 4))),
            "f32_size1_align": case(lambda x: aten.upsample_bilinear2d.vec(x, [1, 1], True, None),
                                    r(1, 2, 3, 3)),
        }, notes="align_corners both ways, scale factors, output sizes, downsampling, "
                 "channels-last"),
        OpProgram("upsample_bilinear2d_aa_out", "aten::_upsample_bilinear2d_aa.out", {
            "f32_down": case(lambda x: aten._upsample_bilinear2d_aa(x, [3, 4], False),
                             r(1, 2, 9, 11)),
            "f32_down_align": case(lambda x: aten._upsample_bilinear2d_aa(x, [3, 4], True),
                                   r(1, 2, 9, 11)),
            "f64_up": case(lambda x: aten._upsample_bilinear2d_aa(x, [6, 7], False),
                           r(1, 2, 3, 4, dtype=f64)),
            "f32_channels_last": case(lambda x: aten._upsample_bilinear2d_aa(x, [2, 5], False),
                                      channels_last(r(2, 3, 6, 6))),
        }, notes="anti-aliased down- and upsampling, align_corners, channels-last"),
        OpProgram("adaptive_avg_pool2d_out", "aten::_adaptive_avg_pool2d.out", {
            "f32_1x1": case(lambda x: aten._adaptive_avg_pool2d(x, [1, 1]), r(2, 3, 5, 7)),
            "f32_uneven": case(lambda x: aten._adaptive_avg_pool2d(x, [3, 4]), r(1, 2, 7, 9)),
            "f64_3d": case(lambda x: aten._adaptive_avg_pool2d(x, [2, 2]), r(3, 5, 5, dtype=f64)),
            "f32_upsample": case(lambda x: aten._adaptive_avg_pool2d(x, [4, 5]), r(1, 2, 3, 3)),
            "f32_channels_last": case(lambda x: aten._adaptive_avg_pool2d(x, [2, 3]),
                                      channels_last(r(2, 4, 6, 6))),
            "f32_zero_batch": case(lambda x: aten._adaptive_avg_pool2d(x, [2, 2]),
                                   r(0, 2, 4, 4)),
        }, notes="global, uneven windows, 3-D input, output larger than input, channels-last, "
                 "zero batch"),
        # ---- normalisation --------------------------------------------------------
        OpProgram("native_group_norm_out", "aten::native_group_norm.out", {
            "f32_affine": case(lambda x, w, b: aten.native_group_norm(x, w, b, 2, 6, 12, 3, 1e-5),
                               r(2, 6, 3, 4), r(6), r(6)),
            "f32_no_affine": case(
                lambda x: aten.native_group_norm(x, None, None, 2, 4, 5, 2, 1e-5), r(2, 4, 5)),
            "f64_one_group": case(
                lambda x, w, b: aten.native_group_norm(x, w, b, 1, 4, 9, 1, 1e-3),
                r(1, 4, 3, 3, dtype=f64), r(4, dtype=f64), r(4, dtype=f64)),
            "f32_channels_last": case(
                lambda x, w, b: aten.native_group_norm(x, w, b, 2, 8, 9, 4, 1e-5),
                channels_last(r(2, 8, 3, 3)), r(8), r(8)),
        }, notes="affine and not, 3-D and 4-D, one group, channels-last; mean and rstd outs"),
        OpProgram("native_batch_norm_legit_no_stats_out",
                  "aten::_native_batch_norm_legit.no_stats_out", {
            "f32_train": case(
                lambda x, w, b: aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5),
                r(2, 3, 4, 4), r(3), r(3)),
            "f64_train_3d": case(
                lambda x: aten._native_batch_norm_legit(x, None, None, True, 0.1, 1e-5),
                r(4, 2, 5, dtype=f64)),
            "f32_train_channels_last": case(
                lambda x, w, b: aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-3),
                channels_last(r(3, 4, 2, 3)), r(4), r(4)),
        }, notes="batch statistics: out, save_mean, save_invstd; 3-D input, channels-last"),
        # ---- variance -----------------------------------------------------------
        OpProgram("var_correction_out", "aten::var.correction_out", {
            "f32_all": case(lambda x: torch.var(x), r(3, 4)),
            "f32_dim_keepdim": case(lambda x: torch.var(x, dim=1, keepdim=True), r(3, 4, 5)),
            "f64_neg_dims_corr0": case(lambda x: torch.var(x, dim=[-1, 0], correction=0),
                                       r(3, 4, 5, dtype=f64)),
            "f32_corr2": case(lambda x: torch.var(x, dim=0, correction=2), r(6, 3)),
            "f32_channels_last": case(lambda x: torch.var(x, dim=[2, 3]),
                                      channels_last(r(2, 3, 4, 5))),
            "f32_zero_size": case(lambda x: torch.var(x, dim=1), r(0, 4)),
        }, notes="all dims, keepdim, negative dims, corrections 0/1/2, channels-last, "
                 "zero-size"),
        OpProgram("var_out", "aten::var.out", {
            "f32_unbiased": case(lambda x: aten.var.dim(x, [1], True, False), r(3, 4)),
            "f64_biased_keepdim": case(lambda x: aten.var.dim(x, [-1], False, True),
                                       r(2, 5, dtype=f64)),
        }, preserve_ops=[torch.ops.aten.var.dim],
            notes="unbiased and biased, keepdim, negative dim"),
        OpProgram("var_mean_correction_out", "aten::var_mean.correction_out", {
            "f32_dim": case(lambda x: torch.var_mean(x, dim=1), r(3, 4)),
            "f64_all_corr0": case(lambda x: torch.var_mean(x, correction=0), r(3, 4, dtype=f64)),
            "f32_neg_keepdim": case(lambda x: torch.var_mean(x, dim=-2, keepdim=True),
                                    r(2, 3, 4)),
        }, preserve_ops=[torch.ops.aten.var_mean.correction],
            notes="var and mean outs, all dims, negative dim, keepdim"),
        # ---- min / max ------------------------------------------------------------
        OpProgram("amin_out", "aten::amin.out", {
            "f32_dim": case(lambda x: torch.amin(x, dim=1), r(3, 4)),
            "f64_all": case(lambda x: torch.amin(x), r(3, 4, dtype=f64)),
            "i32_neg_dims_keepdim": case(lambda x: torch.amin(x, dim=[-1, 0], keepdim=True),
                                         r(3, 4, 5, dtype=i32)),
            "u8": case(lambda x: torch.amin(x, dim=0), r(5, 2, dtype=torch.uint8)),
            "bool": case(lambda x: torch.amin(x, dim=1), r(3, 4, dtype=torch.bool)),
            "f32_nan": case(lambda x: torch.amin(x, dim=1),
                            torch.tensor([[1.0, float("nan"), -2.0], [3.0, 0.5, -1.0]])),
            "f32_channels_last": case(lambda x: torch.amin(x, dim=1),
                                      channels_last(r(2, 3, 4, 5))),
            "f32_zero_kept": case(lambda x: torch.amin(x, dim=1), r(0, 4)),
        }, notes="dims, all, negative dims, keepdim, integer and bool dtypes, NaN, "
                 "channels-last, zero-size kept dim"),
        OpProgram("argmin_out", "aten::argmin.out", {
            "f32_dim": case(lambda x: torch.argmin(x, dim=1), distinct(3, 4)),
            "f64_all": case(lambda x: torch.argmin(x), distinct(3, 4, dtype=f64)),
            "i64_neg_keepdim": case(lambda x: torch.argmin(x, dim=-1, keepdim=True),
                                    distinct(2, 3, 4, dtype=i64)),
            "f32_ties_first": case(lambda x: torch.argmin(x, dim=1),
                                   torch.tensor([[2.0, 1.0, 1.0], [0.0, 0.0, 3.0]])),
            "f32_channels_last": case(lambda x: torch.argmin(x, dim=1),
                                      channels_last(distinct(2, 3, 4, 5))),
        }, notes="dim, all, negative dim, keepdim, ties give the first index, channels-last"),
        OpProgram("min_dim_min", "aten::min.dim_min", {
            "f32": case(lambda x: tuple(torch.min(x, dim=1)), distinct(3, 4)),
            "i32_neg_keepdim": case(lambda x: tuple(torch.min(x, dim=-1, keepdim=True)),
                                    distinct(2, 3, 4, dtype=i32)),
            "f64_channels_last": case(lambda x: tuple(torch.min(x, dim=1)),
                                      channels_last(distinct(2, 3, 2, 2, dtype=f64))),
        }, notes="values and indices, negative dim, keepdim, channels-last"),
        OpProgram("min_unary_out", "aten::min.unary_out", {
            "f32": case(lambda x: torch.min(x), r(3, 4)),
            "i64": case(lambda x: torch.min(x), r(5, dtype=i64)),
            "bool": case(lambda x: torch.min(x), r(2, 3, dtype=torch.bool)),
            "f32_channels_last": case(lambda x: torch.min(x), channels_last(r(2, 3, 2, 2))),
        }, notes="whole-tensor minimum of float, integer and bool tensors"),
        OpProgram("max_unary_out", "aten::max.unary_out", {
            "f32": case(lambda x: torch.max(x), r(3, 4)),
            "i32": case(lambda x: torch.max(x), r(5, dtype=i32)),
            "f64_nan": case(lambda x: torch.max(x),
                            torch.tensor([1.0, float("nan"), 3.0], dtype=f64)),
        }, notes="whole-tensor maximum, NaN propagates"),
        # ---- mean / prod ------------------------------------------------------------
        OpProgram("mean_dtype_out", "aten::mean.dtype_out", {
            "f32": case(lambda x: aten.mean.default(x), r(3, 4)),
            "f32_to_f64": case(lambda x: aten.mean.default(x, dtype=f64), r(3, 4)),
            "f64_channels_last": case(lambda x: aten.mean.default(x),
                                      channels_last(r(2, 3, 2, 2, dtype=f64))),
        }, preserve_ops=[torch.ops.aten.mean.default],
            notes="whole-tensor mean, dtype argument, channels-last"),
        OpProgram("prod_int_out", "aten::prod.int_out", {
            "f32_dim": case(lambda x: torch.prod(x, dim=1), r(3, 4)),
            "i32_neg_keepdim": case(lambda x: torch.prod(x, dim=-1, keepdim=True),
                                    r(2, 3, 4, dtype=i32)),
            "bool_to_i64": case(lambda x: torch.prod(x, dim=0), r(3, 4, dtype=torch.bool)),
            "f64_dtype": case(lambda x: torch.prod(x, dim=0, dtype=f64), r(3, 2)),
            "f32_zero_size": case(lambda x: torch.prod(x, dim=0), r(0, 3)),
            "f32_channels_last": case(lambda x: torch.prod(x, dim=1),
                                      channels_last(r(2, 3, 2, 2))),
        }, notes="dim, negative dim, keepdim, int32 and bool promote to int64, dtype, "
                 "empty product is 1, channels-last"),
        OpProgram("prod_out", "aten::prod.out", {
            "f32": case(lambda x: torch.prod(x), r(2, 3)),
            "i64": case(lambda x: torch.prod(x), r(2, 3, dtype=i64)),
            "u8_to_i64": case(lambda x: torch.prod(x), r(4, dtype=torch.uint8)),
            "f32_zero_size": case(lambda x: torch.prod(x), r(0)),
        }, notes="whole-tensor product; integers promote to int64; empty gives 1"),
        # ---- topk -----------------------------------------------------------------
        OpProgram("topk_values", "aten::topk.values", {
            "f32_largest": case(lambda x: tuple(torch.topk(x, 3)), distinct(4, 6)),
            "f32_smallest_dim0": case(lambda x: tuple(torch.topk(x, 2, dim=0, largest=False)),
                                      distinct(5, 3)),
            "f64_neg_dim": case(lambda x: tuple(torch.topk(x, 2, dim=-2)), distinct(2, 4, 3, dtype=f64)),
            "i32": case(lambda x: tuple(torch.topk(x, 4)), distinct(3, 7, dtype=i32)),
            "i64_k0": case(lambda x: tuple(torch.topk(x, 0)), distinct(3, 4, dtype=i64)),
            "f32_nan_largest": case(lambda x: tuple(torch.topk(x, 2)),
                                    torch.tensor([[1.0, float("nan"), 3.0, 2.0]])),
            "f32_channels_last": case(lambda x: tuple(torch.topk(x, 2, dim=1)),
                                      channels_last(distinct(2, 4, 3, 3))),
        }, notes="largest and smallest, dims, negative dim, integers, k=0, NaN ranks highest, "
                 "channels-last"),
        # ---- sampling and distances -----------------------------------------------
        OpProgram("grid_sampler_2d_out", "aten::grid_sampler_2d.out", {
            "f32_bilinear_zeros": case(lambda x, gr: aten.grid_sampler_2d(x, gr, 0, 0, False),
                                       r(2, 3, 5, 6), grid(2, 4, 3)),
            "f32_bilinear_border_align": case(
                lambda x, gr: aten.grid_sampler_2d(x, gr, 0, 1, True), r(1, 2, 4, 4), grid(1, 3, 5)),
            "f64_bilinear_reflection": case(
                lambda x, gr: aten.grid_sampler_2d(x, gr, 0, 2, False), r(1, 2, 4, 5, dtype=f64),
                grid(1, 3, 3, dtype=f64)),
            "f32_nearest_zeros": case(lambda x, gr: aten.grid_sampler_2d(x, gr, 1, 0, False),
                                      r(1, 2, 5, 5), grid(1, 4, 4)),
            "f32_nearest_reflection_align": case(
                lambda x, gr: aten.grid_sampler_2d(x, gr, 1, 2, True), r(1, 2, 5, 5), grid(1, 4, 4)),
            "f32_bicubic_zeros": case(lambda x, gr: aten.grid_sampler_2d(x, gr, 2, 0, False),
                                      r(1, 2, 5, 6), grid(1, 3, 4)),
            "f64_bicubic_border": case(lambda x, gr: aten.grid_sampler_2d(x, gr, 2, 1, True),
                                       r(1, 2, 5, 6, dtype=f64), grid(1, 3, 4, dtype=f64)),
            "f32_bicubic_reflection": case(
                lambda x, gr: aten.grid_sampler_2d(x, gr, 2, 2, False), r(1, 2, 5, 6),
                grid(1, 3, 4)),
            "f32_channels_last": case(lambda x, gr: aten.grid_sampler_2d(x, gr, 0, 0, False),
                                      channels_last(r(2, 3, 4, 4)), grid(2, 2, 3)),
        }, notes="bilinear, nearest and bicubic; zeros, border and reflection padding; "
                 "align_corners both ways; grid points outside [-1, 1]; channels-last"),
        OpProgram("cdist_forward_out", "aten::_cdist_forward.out", {
            "f32_p2": case(lambda a, b: aten._cdist_forward(a, b, 2.0, None), r(4, 3), r(5, 3)),
            "f64_p1": case(lambda a, b: aten._cdist_forward(a, b, 1.0, None),
                           r(2, 4, 3, dtype=f64), r(2, 5, 3, dtype=f64)),
            "f32_p0": case(lambda a, b: aten._cdist_forward(a, b, 0.0, None),
                           r(3, 2).round(), r(4, 2).round()),
            "f32_pinf_broadcast": case(lambda a, b: aten._cdist_forward(a, b, float("inf"), None),
                                       r(2, 1, 3, 4), r(3, 5, 4)),
            "f32_p3": case(lambda a, b: aten._cdist_forward(a, b, 3.0, None), r(3, 2), r(2, 2)),
        }, notes="p = 0, 1, 2, 3, inf; batch dims broadcast"),
        OpProgram("pdist_forward_out", "aten::_pdist_forward.out", {
            "f32_p2": case(lambda x: aten._pdist_forward(x, 2.0), r(5, 3)),
            "f64_p1": case(lambda x: aten._pdist_forward(x, 1.0), r(4, 6, dtype=f64)),
            "f32_pinf": case(lambda x: aten._pdist_forward(x, float("inf")), r(4, 2)),
            "f32_one_row": case(lambda x: aten._pdist_forward(x, 2.0), r(1, 3)),
        }, notes="p = 1, 2, inf; a single row gives an empty result"),
        # ---- gradients -------------------------------------------------------------
        OpProgram("max_pool2d_with_indices_backward_grad_input",
                  "aten::max_pool2d_with_indices_backward.grad_input", {
            "f32": case(lambda x, go: aten.max_pool2d_with_indices_backward(
                go, x, [2, 2], [2, 2], [0, 0], [1, 1], False,
                aten.max_pool2d_with_indices(x, [2, 2], [2, 2])[1]), r(2, 3, 4, 6), r(2, 3, 2, 3)),
            "f64_overlap_pad_3d": case(lambda x, go: aten.max_pool2d_with_indices_backward(
                go, x, [3, 3], [1, 1], [1, 1], [1, 1], False,
                aten.max_pool2d_with_indices(x, [3, 3], [1, 1], [1, 1])[1]),
                r(2, 4, 5, dtype=f64), r(2, 4, 5, dtype=f64)),
            "f32_channels_last": case(lambda x, go: aten.max_pool2d_with_indices_backward(
                go, x, [2, 2], [1, 1], [0, 0], [1, 1], False,
                aten.max_pool2d_with_indices(x, [2, 2], [1, 1])[1]),
                channels_last(r(1, 3, 4, 4)), channels_last(r(1, 3, 3, 3))),
        }, notes="disjoint and overlapping windows (gradients add up), padding, 3-D input, "
                 "channels-last"),
        OpProgram("convolution_backward_out", "aten::convolution_backward.out", {
            "f32_2d": case(lambda go, x, w: aten.convolution_backward(
                go, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]),
                r(2, 4, 3, 3), r(2, 3, 5, 5), r(4, 3, 3, 3)),
            "f64_2d_stride_pad_dil": case(lambda go, x, w: aten.convolution_backward(
                go, x, w, [2], [2, 1], [1, 2], [1, 2], False, [0, 0], 1, [True, True, True]),
                r(1, 2, 4, 5, dtype=f64), r(1, 3, 6, 5, dtype=f64), r(2, 3, 2, 3, dtype=f64)),
            "f32_1d_groups": case(lambda go, x, w: aten.convolution_backward(
                go, x, w, [4], [1], [1], [1], False, [0], 2, [True, True, True]),
                r(2, 4, 6), r(2, 4, 6), r(4, 2, 3)),
            "f32_input_grad_only": case(lambda go, x, w: aten.convolution_backward(
                go, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                [True, False, False])[0], r(1, 2, 4, 4), r(1, 3, 4, 4), r(2, 3, 3, 3)),
            "f32_channels_last": case(lambda go, x, w: aten.convolution_backward(
                go, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]),
                channels_last(r(2, 4, 3, 3)), channels_last(r(2, 3, 4, 4)),
                channels_last(r(4, 3, 2, 2))),
        }, rtol=1e-4, atol=1e-5,
            notes="input, weight and bias gradients; stride, padding, dilation; 1-D with groups; "
                  "output_mask; channels-last"),
    ]
