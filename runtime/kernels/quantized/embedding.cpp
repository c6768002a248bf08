// SPDX-License-Identifier: BSD-3-Clause
// embedding.cpp - kernels_quantized: quantized_decomposed::embedding_byte, embedding_2bit and
// embedding_4bit (and their .dtype overloads), upstream ExecuTorch 1.5.1's quantized.yaml.
//
// out[..., d] = dequantized weight[indices[...], d], with the semantics of upstream's Python
// reference (executorch/exir/passes/_quant_patterns_and_replacements.py, which calls PyTorch's
// dequantize_per_channel_group):
//   weight           [V, C] int8 or uint8: the values (byte), or 4 (2bit) or 2 (4bit) packed
//                    values per byte: row width D = C, 4 C or 2 C. 2bit: value k of a byte is
//                    bits 2k..2k+1, minus 2. 4bit: the high nibble is the even value, the low
//                    nibble the odd one, minus 8. An int8 weight unpacks with PyTorch's signed
//                    arithmetic (trunc division and floor remainder by 16, arithmetic shifts).
//   weight_scales    [V] or [V, G] float32, float16 or bfloat16: G groups of D / G values.
//   weight_zero_points  None, or the scales' shape and dtype.
//   quant_min/max    the weight's range (2bit: -2 and 1, 4bit: -8 and 7, as upstream checks).
//   indices          int64 or int32, any shape; each in [0, V).
//   out              indices.shape + [D], dtype: the scales' (.out) or `dtype` (.dtype_out;
//                    None = the scales').
// The value is (q - zp) * scale, each step rounded to the scales' dtype (float16 and bfloat16
// steps are computed in float32 and rounded), then converted to the out dtype.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_util.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::BFloat16;
using pteron::kern::fail;
using pteron::kern::Half;
namespace kern = pteron::kern;

float load_scale(const pteron_tensor* t, int64_t i) {  // float32 / float16 / bfloat16
  return kern::load<float>(t->data, t->dtype, i);
}

// Rounds a float32 step to the scales' dtype.
float narrow(int32_t dtype, float v) {
  switch (dtype) {
    case PTERON_DTYPE_FLOAT16: return Half(v);
    case PTERON_DTYPE_BFLOAT16: return BFloat16(v);
    default: return v;
  }
}

void store_out(pteron_tensor* t, int64_t off, float v) {
  switch (t->dtype) {
    case PTERON_DTYPE_FLOAT16: static_cast<Half*>(t->data)[off] = Half(v); return;
    case PTERON_DTYPE_BFLOAT16: static_cast<BFloat16*>(t->data)[off] = BFloat16(v); return;
    case PTERON_DTYPE_FLOAT64: static_cast<double*>(t->data)[off] = v; return;
    default: static_cast<float*>(t->data)[off] = v; return;
  }
}

bool is_scale_dtype(int32_t d) {
  return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT16 || d == PTERON_DTYPE_BFLOAT16;
}

// Value d (< D) of weight row r: the byte's unpacked value for `bits` 8, 4 or 2.
int32_t unpack(const pteron_tensor* w, int64_t r, int64_t d, int bits) {
  const int64_t per = 8 / bits, col = d / per, k = d % per;
  const int64_t off = r * w->strides[0] + col * w->strides[1];
  if (w->dtype == PTERON_DTYPE_UINT8) {
    const int32_t b = static_cast<const uint8_t*>(w->data)[off];
    if (bits == 8) return b;
    if (bits == 4) return (k == 0 ? b >> 4 : b & 15) - 8;
    return ((b >> (2 * k)) & 3) - 2;
  }
  const int32_t b = static_cast<const int8_t*>(w->data)[off];
  if (bits == 8) return b;
  if (bits == 4) {
    // weight.div(16, rounding_mode="trunc"), weight.remainder(16), as int8, then - 8.
    const int32_t v = k == 0 ? b / 16 : ((b % 16) + 16) % 16;
    return static_cast<int8_t>(v - 8);
  }
  // (weight & (3 << 2k)) >> 2k in int8 (arithmetic shift), then - 2, as int8.
  const int32_t masked = static_cast<int8_t>(b & (3 << (2 * k)));
  return static_cast<int8_t>((masked >> (2 * k)) - 2);
}

int64_t index_at(const pteron_tensor* idx, int64_t off) {
  return idx->dtype == PTERON_DTYPE_INT64 ? static_cast<const int64_t*>(idx->data)[off]
                                          : static_cast<const int32_t*>(idx->data)[off];
}

int32_t embedding(const Args& a, int bits, bool with_dtype) {
  PTERON_CHECK_OK(a.arity(with_dtype ? 8 : 7));
  pteron_tensor *w = nullptr, *scales = nullptr, *zps = nullptr, *idx = nullptr, *out = nullptr;
  int64_t qmin = 0, qmax = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "weight", &w));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "weight_scales", &scales));
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, 2, "weight_zero_points", &zps));
  PTERON_CHECK_OK(a.integer(3, "weight_quant_min", &qmin));
  PTERON_CHECK_OK(a.integer(4, "weight_quant_max", &qmax));
  PTERON_CHECK_OK(kern::tensor_arg(a, 5, "indices", &idx));
  PTERON_CHECK_OK(kern::tensor_arg(a, with_dtype ? 7 : 6, "out", &out));
  if (w->dtype != PTERON_DTYPE_INT8 && w->dtype != PTERON_DTYPE_UINT8)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: weight has dtype %s (int8 or uint8)",
                a.op, kern::dtype_name(w->dtype));
  if (w->dim != 2)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: weight has rank %d, expected 2", a.op,
                static_cast<int>(w->dim));
  if (bits == 4 && (qmin != -8 || qmax != 7))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: weight_quant_min and weight_quant_max must be -8 and 7 (got %lld, %lld)",
                a.op, static_cast<long long>(qmin), static_cast<long long>(qmax));
  if (bits == 2 && (qmin != -2 || qmax != 1))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: weight_quant_min and weight_quant_max must be -2 and 1 (got %lld, %lld)",
                a.op, static_cast<long long>(qmin), static_cast<long long>(qmax));
  if (!is_scale_dtype(scales->dtype))
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: weight_scales has dtype %s (float32, float16 or bfloat16)", a.op,
                kern::dtype_name(scales->dtype));
  if ((scales->dim != 1 && scales->dim != 2) || scales->sizes[0] != w->sizes[0])
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: weight_scales must be [%lld] or [%lld, groups]", a.op,
                static_cast<long long>(w->sizes[0]), static_cast<long long>(w->sizes[0]));
  if (zps && (zps->dtype != scales->dtype || zps->dim != scales->dim ||
              zps->sizes[0] != scales->sizes[0] ||
              (zps->dim == 2 && zps->sizes[1] != scales->sizes[1])))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: weight_zero_points must have weight_scales' shape and dtype", a.op);
  if (idx->dtype != PTERON_DTYPE_INT64 && idx->dtype != PTERON_DTYPE_INT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: indices has dtype %s (int64 or int32)",
                a.op, kern::dtype_name(idx->dtype));
  if (w->sizes[1] > INT64_MAX / 16)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: weight's row of %lld bytes is too large",
                a.op, static_cast<long long>(w->sizes[1]));
  const int64_t rows = w->sizes[0], width = w->sizes[1] * (8 / bits);
  const int64_t groups = scales->dim == 2 ? scales->sizes[1] : 1;
  if (groups <= 0 || width % groups != 0)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: %lld groups do not divide the row width %lld", a.op,
                static_cast<long long>(groups), static_cast<long long>(width));
  const int64_t group = width / groups;
  int32_t od = scales->dtype;
  if (with_dtype && !a.is_none(6)) {
    int64_t d = 0;
    PTERON_CHECK_OK(a.integer(6, "dtype", &d));
    if (d != PTERON_DTYPE_FLOAT32 && d != PTERON_DTYPE_FLOAT16 && d != PTERON_DTYPE_BFLOAT16 &&
        d != PTERON_DTYPE_FLOAT64)
      return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                  "%s: dtype %lld is not float32, float16, bfloat16 or float64", a.op,
                  static_cast<long long>(d));
    od = static_cast<int32_t>(d);
  }
  if (out->dtype != od)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out has dtype %s, expected %s", a.op,
                kern::dtype_name(out->dtype), kern::dtype_name(od));
  if (idx->dim + 1 > PTERON_MAX_DIM)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: indices rank %d is too large", a.op,
                static_cast<int>(idx->dim));
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < idx->dim; ++i) sizes[i] = idx->sizes[i];
  sizes[idx->dim] = width;
  // Every index is checked before out is written.
  bool any_bad = false;
  int64_t bad = 0;
  kern::for_each_offset(kern::view_of(idx), [&](int64_t off) {
    const int64_t v = index_at(idx, off);
    if ((v < 0 || v >= rows) && !any_bad) any_bad = true, bad = v;
  });
  if (any_bad)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index %lld is out of range for %lld embeddings", a.op,
                static_cast<long long>(bad), static_cast<long long>(rows));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, idx->dim + 1));
  const int32_t sd = scales->dtype;
  const int64_t s_row = scales->strides[0], s_col = scales->dim == 2 ? scales->strides[1] : 0;
  const int64_t z_row = zps ? zps->strides[0] : 0, z_col = zps && zps->dim == 2 ? zps->strides[1] : 0;
  const int64_t o_last = out->strides[idx->dim];
  kern::View lead = kern::lead_view(out, idx->dim);
  int64_t t = 0;
  bool changed = false;  // an index that changed after the check (out overlaps indices)
  std::vector<int64_t> out_rows;
  kern::for_each_offset(lead, [&](int64_t off) { out_rows.push_back(off); });
  kern::for_each_offset(kern::view_of(idx), [&](int64_t off) {
    const int64_t r = index_at(idx, off);
    if (r < 0 || r >= rows) {  // out overlaps indices and overwrote them: checked again
      changed = true;
      ++t;
      return;
    }
    const int64_t base = idx->dim == 0 ? 0 : out_rows[static_cast<size_t>(t)];
    for (int64_t d = 0; d < width; ++d) {
      const int64_t g = d / group;
      const float s = load_scale(scales, r * s_row + g * s_col);
      const float q = static_cast<float>(unpack(w, r, d, bits));
      // zp absent: PyTorch subtracts an int32 zero (q stays an integer), then q * scale.
      const float diff = zps ? narrow(sd, q - load_scale(zps, r * z_row + g * z_col)) : q;
      store_out(out, base + d * o_last, narrow(sd, diff * s));
    }
    ++t;
  });
  if (changed)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: out overlaps indices: an index changed while out was written", a.op);
  return PTERON_OK;
}

#define PTERON_EMBEDDING_KERNEL(fn, name, bits, with_dtype)                              \
  int32_t fn(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {          \
    return embedding(Args{ctx, args, n, "quantized_decomposed::" name}, bits, with_dtype); \
  }
PTERON_EMBEDDING_KERNEL(embedding_byte_out, "embedding_byte.out", 8, false)
PTERON_EMBEDDING_KERNEL(embedding_byte_dtype_out, "embedding_byte.dtype_out", 8, true)
PTERON_EMBEDDING_KERNEL(embedding_2bit_out, "embedding_2bit.out", 2, false)
PTERON_EMBEDDING_KERNEL(embedding_2bit_dtype_out, "embedding_2bit.dtype_out", 2, true)
PTERON_EMBEDDING_KERNEL(embedding_4bit_out, "embedding_4bit.out", 4, false)
PTERON_EMBEDDING_KERNEL(embedding_4bit_dtype_out, "embedding_4bit.dtype_out", 4, true)
#undef PTERON_EMBEDDING_KERNEL

}  // namespace

PTERON_REGISTER_KERNELS(
    {"quantized_decomposed::embedding_byte", "out", nullptr, embedding_byte_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::embedding_byte", "dtype_out", nullptr, embedding_byte_dtype_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::embedding_2bit", "out", nullptr, embedding_2bit_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::embedding_2bit", "dtype_out", nullptr, embedding_2bit_dtype_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::embedding_4bit", "out", nullptr, embedding_4bit_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::embedding_4bit", "dtype_out", nullptr, embedding_4bit_dtype_out,
     PTERON_KERNEL_PRIORITY, 0})
