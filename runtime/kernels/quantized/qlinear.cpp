// SPDX-License-Identifier: BSD-3-Clause
// qlinear.cpp - kernels_quantized: quantized_decomposed::add, mixed_mm and mixed_linear
// (upstream ExecuTorch 1.5.1's quantized.yaml). PyTorch has no eager reference for these; their
// meaning is the pattern upstream's exporter replaces with them, and upstream's kernels:
//   add           out = quantize_per_tensor(dequantize_per_tensor(a) + dequantize_per_tensor(b))
//                 with each side's (scale, zero point, quant range) and the out's, in float32
//                 step by step as those operators (quantize.cpp). a, b and out have one shape
//                 and a quantized dtype each (uint8 or int8; upstream's kernel takes uint8 only).
//   mixed_mm      out[M, N] = input[M, K] @ (weight[K, N] * weight_scales[K, 1]): the scales
//                 are per row of weight (upstream checks weight_scales.size(0) == weight.size(0)).
//   mixed_linear  out[..., N] = input[..., K] @ (weight[N, K] * weight_scales)^T, the scales
//                 [N] (per output channel) or [N, G] (G groups of K / G along K); out's dtype is
//                 `dtype`, or float32 when None.
// input is float32; weight int8 (or uint8); the products and sums are float32 (the sum order
// differs from eager's: float results match within float32 rounding). Weight zero points are
// refused with PTERON_ERROR_NOT_SUPPORTED, as upstream refuses them ("not supported yet").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel_util.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

int64_t load_q(const pteron_tensor* t, int64_t off) {  // uint8 / int8
  return kern::load<int64_t>(t->data, t->dtype, off);
}

bool is_q8(int32_t d) { return d == PTERON_DTYPE_UINT8 || d == PTERON_DTYPE_INT8; }

int32_t range_check(const Args& a, const char* side, const pteron_tensor* t, int64_t qmin,
                    int64_t qmax) {
  const int64_t lo = t->dtype == PTERON_DTYPE_UINT8 ? 0 : -128;
  const int64_t hi = t->dtype == PTERON_DTYPE_UINT8 ? 255 : 127;
  if (qmin > qmax || qmin < lo || qmax > hi)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: %s's quant_min %lld and quant_max %lld must lie in [%lld, %lld] (%s), "
                "quant_min <= quant_max",
                a.op, side, static_cast<long long>(qmin), static_cast<long long>(qmax),
                static_cast<long long>(lo), static_cast<long long>(hi), kern::dtype_name(t->dtype));
  return PTERON_OK;
}

// add.out(Tensor a, float a_scale, int a_zero_point, int a_quant_min, int a_quant_max,
//     Tensor b, float b_scale, int b_zero_point, int b_quant_min, int b_quant_max,
//     float out_scale, int out_zero_point, int out_quant_min, int out_quant_max, *,
//     Tensor(a!) out)
int32_t add_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::add.out"};
  PTERON_CHECK_OK(a.arity(15));
  pteron_tensor *ta = nullptr, *tb = nullptr, *out = nullptr;
  double sa = 0, sb = 0, so = 0;
  int64_t za = 0, zb = 0, zo = 0, amin = 0, amax = 0, bmin = 0, bmax = 0, omin = 0, omax = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "a", &ta));
  PTERON_CHECK_OK(a.real(1, "a_scale", &sa));
  PTERON_CHECK_OK(a.integer(2, "a_zero_point", &za));
  PTERON_CHECK_OK(a.integer(3, "a_quant_min", &amin));
  PTERON_CHECK_OK(a.integer(4, "a_quant_max", &amax));
  PTERON_CHECK_OK(kern::tensor_arg(a, 5, "b", &tb));
  PTERON_CHECK_OK(a.real(6, "b_scale", &sb));
  PTERON_CHECK_OK(a.integer(7, "b_zero_point", &zb));
  PTERON_CHECK_OK(a.integer(8, "b_quant_min", &bmin));
  PTERON_CHECK_OK(a.integer(9, "b_quant_max", &bmax));
  PTERON_CHECK_OK(a.real(10, "out_scale", &so));
  PTERON_CHECK_OK(a.integer(11, "out_zero_point", &zo));
  PTERON_CHECK_OK(a.integer(12, "out_quant_min", &omin));
  PTERON_CHECK_OK(a.integer(13, "out_quant_max", &omax));
  PTERON_CHECK_OK(kern::tensor_arg(a, 14, "out", &out));
  for (const pteron_tensor* t : {ta, tb, out})
    if (!is_q8(t->dtype))
      return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: %s has dtype %s (uint8 or int8)",
                  a.op, t == ta ? "a" : t == tb ? "b" : "out", kern::dtype_name(t->dtype));
  PTERON_CHECK_OK(range_check(a, "a", ta, amin, amax));
  PTERON_CHECK_OK(range_check(a, "b", tb, bmin, bmax));
  PTERON_CHECK_OK(range_check(a, "out", out, omin, omax));
  bool same = ta->dim == tb->dim;
  for (int32_t i = 0; same && i < ta->dim; ++i) same = ta->sizes[i] == tb->sizes[i];
  if (!same)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: a and b must have the same shape", a.op);
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, ta));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, tb));
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, ta->sizes, ta->dim));
  const float fza = static_cast<float>(za), fsa = static_cast<float>(sa);
  const float fzb = static_cast<float>(zb), fsb = static_cast<float>(sb);
  const float inv = static_cast<float>(1.0 / so), fzo = static_cast<float>(zo);
  std::vector<int64_t> boffs;
  boffs.reserve(static_cast<size_t>(kern::numel(tb)));
  kern::for_each_offset(kern::view_of(tb), [&](int64_t off) { boffs.push_back(off); });
  size_t i = 0;
  kern::zip_offsets(kern::view_of(ta), kern::view_of(out), [&](int64_t ao, int64_t oo) {
    const float x = (static_cast<float>(load_q(ta, ao)) - fza) * fsa +
                    (static_cast<float>(load_q(tb, boffs[i++])) - fzb) * fsb;
    const float r = std::nearbyint(x * inv) + fzo;
    const int64_t q = !(r >= static_cast<float>(omin)) ? omin
                      : r >= static_cast<float>(omax) ? omax
                                                      : static_cast<int64_t>(r);
    if (out->dtype == PTERON_DTYPE_UINT8)
      static_cast<uint8_t*>(out->data)[oo] = static_cast<uint8_t>(q);
    else
      static_cast<int8_t*>(out->data)[oo] = static_cast<int8_t>(q);
  });
  return PTERON_OK;
}

float load_f(const pteron_tensor* t, int64_t off) { return static_cast<const float*>(t->data)[off]; }

int32_t weight_args(const Args& a, pteron_tensor** in, pteron_tensor** w, pteron_tensor** s) {
  pteron_tensor* zp = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", in));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "weight", w));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "weight_scales", s));
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, 3, "weight_zero_points", &zp));
  if (zp)
    return fail(a.ctx, PTERON_ERROR_NOT_SUPPORTED,
                "%s: weight_zero_points are not supported (symmetric weights only, as upstream)",
                a.op);
  if ((*in)->dtype != PTERON_DTYPE_FLOAT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: input has dtype %s (float32)", a.op,
                kern::dtype_name((*in)->dtype));
  if (!is_q8((*w)->dtype) || (*w)->dim != 2)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: weight must be a 2-D int8 or uint8 tensor (got %s, rank %d)", a.op,
                kern::dtype_name((*w)->dtype), static_cast<int>((*w)->dim));
  if ((*s)->dtype != PTERON_DTYPE_FLOAT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: weight_scales has dtype %s (float32)",
                a.op, kern::dtype_name((*s)->dtype));
  return PTERON_OK;
}

// mixed_mm.out(Tensor input, Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, *,
//     Tensor(a!) out)
int32_t mixed_mm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::mixed_mm.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *in = nullptr, *w = nullptr, *s = nullptr, *out = nullptr;
  PTERON_CHECK_OK(weight_args(a, &in, &w, &s));
  PTERON_CHECK_OK(kern::tensor_arg(a, 4, "out", &out));
  const int64_t k = w->sizes[0], nn = w->sizes[1];
  if (in->dim != 2 || in->sizes[1] != k)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: input must be [M, %lld] for weight [%lld, %lld]",
                a.op, static_cast<long long>(k), static_cast<long long>(k),
                static_cast<long long>(nn));
  if (s->dim != 1 || s->sizes[0] != k)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: weight_scales must be [%lld] (one per row of weight)", a.op,
                static_cast<long long>(k));
  if (out->dtype != PTERON_DTYPE_FLOAT32)
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: out has dtype %s (float32)", a.op,
                kern::dtype_name(out->dtype));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, in));
  const int64_t m = in->sizes[0];
  const int64_t sizes[2] = {m, nn};
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, 2));
  if (kern::numel(out) == 0) return PTERON_OK;  // (an empty weight may declare any K)
  // The dequantized weight once (K x N), then row by row: out[i, :] = sum_p x[i, p] * W[p, :].
  std::vector<float> wd(static_cast<size_t>(k * nn));
  for (int64_t p = 0; p < k; ++p) {
    const float sc = load_f(s, p * s->strides[0]);
    for (int64_t j = 0; j < nn; ++j)
      wd[static_cast<size_t>(p * nn + j)] =
          static_cast<float>(load_q(w, p * w->strides[0] + j * w->strides[1])) * sc;
  }
  std::vector<float> row(static_cast<size_t>(nn));
  float* o = static_cast<float*>(out->data);
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float x = load_f(in, i * in->strides[0] + p * in->strides[1]);
      const float* wr = wd.data() + p * nn;
      for (int64_t j = 0; j < nn; ++j) row[static_cast<size_t>(j)] += x * wr[j];
    }
    for (int64_t j = 0; j < nn; ++j) o[i * out->strides[0] + j * out->strides[1]] = row[j];
  }
  return PTERON_OK;
}

// mixed_linear.out(Tensor input, Tensor weight, Tensor weight_scales, Tensor? weight_zero_points,
//     ScalarType? dtype=None, *, Tensor(a!) out)
int32_t mixed_linear_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::mixed_linear.out"};
  PTERON_CHECK_OK(a.arity(6));
  pteron_tensor *in = nullptr, *w = nullptr, *s = nullptr, *out = nullptr;
  PTERON_CHECK_OK(weight_args(a, &in, &w, &s));
  PTERON_CHECK_OK(kern::tensor_arg(a, 5, "out", &out));
  int64_t od = PTERON_DTYPE_FLOAT32;
  if (!a.is_none(4)) PTERON_CHECK_OK(a.integer(4, "dtype", &od));
  if (od != PTERON_DTYPE_FLOAT32 || out->dtype != PTERON_DTYPE_FLOAT32)
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: out and dtype must be float32 (out is %s)",
                a.op, kern::dtype_name(out->dtype));
  const int64_t nn = w->sizes[0], k = w->sizes[1];
  if (in->dim < 1 || in->sizes[in->dim - 1] != k)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: input's last dim must be %lld (weight [%lld, %lld])",
                a.op, static_cast<long long>(k), static_cast<long long>(nn),
                static_cast<long long>(k));
  const int64_t groups = s->dim == 2 ? s->sizes[1] : 1;
  if ((s->dim != 1 && s->dim != 2) || s->sizes[0] != nn || groups <= 0 || k % groups != 0)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: weight_scales must be [%lld] or [%lld, G] with G dividing %lld", a.op,
                static_cast<long long>(nn), static_cast<long long>(nn), static_cast<long long>(k));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, in));
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < in->dim; ++i) sizes[i] = in->sizes[i];
  sizes[in->dim - 1] = nn;
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, in->dim));
  if (kern::numel(out) == 0) return PTERON_OK;  // (an empty weight may declare any K)
  const int64_t gsize = k / groups;
  std::vector<float> wd(static_cast<size_t>(nn * k));  // dequantized, [N, K] row-major
  for (int64_t j = 0; j < nn; ++j)
    for (int64_t p = 0; p < k; ++p) {
      const int64_t so = j * s->strides[0] + (s->dim == 2 ? (p / gsize) * s->strides[1] : 0);
      wd[static_cast<size_t>(j * k + p)] =
          static_cast<float>(load_q(w, j * w->strides[0] + p * w->strides[1])) * load_f(s, so);
    }
  // Rows of input and of out, by logical position (any dim order).
  std::vector<int64_t> in_rows, out_rows;
  kern::for_each_offset(kern::lead_view(in, in->dim - 1), [&](int64_t o) { in_rows.push_back(o); });
  kern::for_each_offset(kern::lead_view(out, out->dim - 1), [&](int64_t o) { out_rows.push_back(o); });
  const int64_t ik = in->strides[in->dim - 1], on = out->strides[out->dim - 1];
  std::vector<float> x(static_cast<size_t>(k));
  float* o = static_cast<float*>(out->data);
  for (size_t r = 0; r < in_rows.size(); ++r) {
    for (int64_t p = 0; p < k; ++p) x[static_cast<size_t>(p)] = load_f(in, in_rows[r] + p * ik);
    for (int64_t j = 0; j < nn; ++j) {
      const float* wr = wd.data() + j * k;
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) acc += x[static_cast<size_t>(p)] * wr[p];
      o[out_rows[r] + j * on] = acc;
    }
  }
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"quantized_decomposed::add", "out", nullptr, add_out, PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::mixed_mm", "out", nullptr, mixed_mm_out, PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::mixed_linear", "out", nullptr, mixed_linear_out,
     PTERON_KERNEL_PRIORITY, 0})
