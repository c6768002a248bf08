// SPDX-License-Identifier: BSD-3-Clause
// quantize.cpp - kernels_quantized: the affine quantize and dequantize operators of upstream
// ExecuTorch 1.5.1's kernels/quantized/quantized.yaml (quantized_decomposed::), per tensor,
// per channel and per token, and the choose_qparams operators that compute their parameters.
//
// Semantics are PyTorch's quantized_decomposed reference (torch/ao/quantization/fx/
// _decomposed.py in torch 2.13), including where it computes in float32 and where in the
// parameters' dtype, so integer outputs are bit-exact against eager:
//   quantize, per tensor   q = clamp(round(x * f32(1 / scale)) + zp, qmin, qmax)   in float32
//   quantize, per channel  q = clamp(round(x * (1 / s[c])) + zp[c], qmin, qmax)    in s's dtype
//   quantize, per token    q = clamp(round(x * (1 / s[t]) + zp[t]), qmin, qmax)    in s's dtype
//   dequantize, per tensor y = (out(q) - zp) * scale     in the out dtype (default float32)
//   dequantize, per channel / per token
//                          y = out((q - zp[c]) * s[c])   the difference exact, the product in
//                                                        s's dtype, then converted
// round() is half to even (the default rounding mode, std::nearbyint). x is float32 (float16
// and bfloat16 inputs are widened first); q is uint8, int8, int16, uint16 or int32 (the
// `dtype` argument, which must be the quantized tensor's dtype); quant_min <= quant_max must lie
// in that dtype's range. A NaN input quantizes to quant_min (no undefined conversion).
// Every tensor may have any dim order (a channels-last input is walked by logical position);
// out is resized to the input's shape.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
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

// ---- shared checks ---------------------------------------------------------------------------

bool is_quant_dtype(int32_t d) {
  return d == PTERON_DTYPE_UINT8 || d == PTERON_DTYPE_INT8 || d == PTERON_DTYPE_INT16 ||
         d == PTERON_DTYPE_UINT16 || d == PTERON_DTYPE_INT32;
}

void quant_range(int32_t d, int64_t* lo, int64_t* hi) {
  switch (d) {
    case PTERON_DTYPE_UINT8: *lo = 0, *hi = 255; return;
    case PTERON_DTYPE_INT8: *lo = -128, *hi = 127; return;
    case PTERON_DTYPE_INT16: *lo = -32768, *hi = 32767; return;
    case PTERON_DTYPE_UINT16: *lo = 0, *hi = 65535; return;
    default: *lo = INT32_MIN, *hi = INT32_MAX; return;
  }
}

// The quantized dtype argument, and quant_min / quant_max within it.
int32_t quant_args(const Args& a, size_t i_min, size_t i_max, size_t i_dtype, int64_t* qmin,
                   int64_t* qmax, int32_t* dtype) {
  PTERON_CHECK_OK(a.integer(i_min, "quant_min", qmin));
  PTERON_CHECK_OK(a.integer(i_max, "quant_max", qmax));
  int64_t d = 0;
  PTERON_CHECK_OK(a.integer(i_dtype, "dtype", &d));
  if (d < 0 || d > 64 || !is_quant_dtype(static_cast<int32_t>(d)))
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: quantized dtype %lld is not one of uint8, int8, int16, uint16, int32", a.op,
                static_cast<long long>(d));
  *dtype = static_cast<int32_t>(d);
  int64_t lo = 0, hi = 0;
  quant_range(*dtype, &lo, &hi);
  if (*qmin > *qmax || *qmin < lo || *qmax > hi)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: quant_min %lld and quant_max %lld must satisfy %lld <= quant_min <= "
                "quant_max <= %lld for %s",
                a.op, static_cast<long long>(*qmin), static_cast<long long>(*qmax),
                static_cast<long long>(lo), static_cast<long long>(hi), kern::dtype_name(*dtype));
  return PTERON_OK;
}

bool is_float_input(int32_t d) {
  return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT16 || d == PTERON_DTYPE_BFLOAT16;
}

// Elements by storage offset, through the kernels' one typed load and store (dtype_convert.h).
float load_f32(const pteron_tensor* t, int64_t off) {  // float32 / float16 / bfloat16
  return kern::load<float>(t->data, t->dtype, off);
}
int64_t load_int(const pteron_tensor* t, int64_t off) {  // the quantized dtypes, int64
  return kern::load<int64_t>(t->data, t->dtype, off);
}
// v already clamped to the quantized range.
void store_q(pteron_tensor* t, int64_t off, int64_t v) { kern::store(t->data, t->dtype, off, v); }

// clamp(r, qmin, qmax) as an integer; NaN gives qmin. r is already integral (rounded).
template <typename F>
int64_t clamp_q(F r, int64_t qmin, int64_t qmax) {
  if (!(r >= static_cast<F>(qmin))) return qmin;  // NaN too
  if (r >= static_cast<F>(qmax)) return qmax;
  return static_cast<int64_t>(r);
}

// Stores a float result into an out tensor of dtype float32, float64, float16 or bfloat16.
template <typename F>
void store_f(pteron_tensor* t, int64_t off, F v) {
  switch (t->dtype) {
    case PTERON_DTYPE_FLOAT64: static_cast<double*>(t->data)[off] = static_cast<double>(v); return;
    case PTERON_DTYPE_FLOAT16: static_cast<Half*>(t->data)[off] = Half(v); return;
    case PTERON_DTYPE_BFLOAT16: static_cast<BFloat16*>(t->data)[off] = BFloat16(v); return;
    default: static_cast<float*>(t->data)[off] = static_cast<float>(v); return;
  }
}

bool is_float_out(int32_t d) {
  return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT64 || d == PTERON_DTYPE_FLOAT16 ||
         d == PTERON_DTYPE_BFLOAT16;
}

// The logical element i of a parameter tensor (its strides: a [C] or [T, 1] view may have any).
int64_t param_offset(const pteron_tensor* t, int64_t i) {
  int64_t off = 0;
  for (int32_t d = t->dim - 1; d >= 0; --d) {
    const int64_t s = t->sizes[d];
    if (s == 0) return 0;
    off += (i % s) * t->strides[d];
    i /= s;
  }
  return off;
}

// Logical element i of a parameter tensor (scales: float32 / float64; zero points: integers).
double param(const pteron_tensor* t, int64_t i) {
  return kern::load<double>(t->data, t->dtype, param_offset(t, i));
}

// A tensor of parameters (scales or zero points): `count` elements of an accepted dtype.
int32_t param_tensor(const Args& a, const pteron_tensor* t, const char* name, int64_t count,
                     bool scales) {
  const bool ok = scales ? (t->dtype == PTERON_DTYPE_FLOAT32 || t->dtype == PTERON_DTYPE_FLOAT64)
                         : kern::is_integral(t->dtype, false);
  if (!ok)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: '%s' has dtype %s (%s)", a.op, name,
                kern::dtype_name(t->dtype),
                scales ? "scales are float32 or float64" : "zero points are integers");
  if (kern::numel(t) != count)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: '%s' has %lld elements, expected %lld",
                a.op, name, static_cast<long long>(kern::numel(t)),
                static_cast<long long>(count));
  if (!scales)  // the differences q - zp and the float sums stay exact and defined
    for (int64_t i = 0; i < count; ++i) {
      const int64_t z = load_int(t, param_offset(t, i));
      if (z < INT32_MIN || z > INT32_MAX)
        return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: '%s'[%lld] = %lld is outside the int32 range", a.op, name,
                    static_cast<long long>(i), static_cast<long long>(z));
    }
  return PTERON_OK;
}

int32_t resize_like_input(const Args& a, pteron_tensor* out, const pteron_tensor* in) {
  return kern::resize_out(a.ctx, a.op, "out", out, in->sizes, in->dim);
}

// Walks input and out together by logical position: f(i, in_off, out_off), i the logical index.
template <typename F>
void zip(const pteron_tensor* in, const pteron_tensor* out, F&& f) {
  int64_t i = 0;
  kern::zip_offsets(kern::view_of(in), kern::view_of(out), [&](int64_t io, int64_t oo) {
    f(i, io, oo);
    ++i;
  });
}

// A quantize operator's tensors: a float input, an out of the quantized dtype.
int32_t check_quantize_io(const Args& a, const pteron_tensor* in, const pteron_tensor* out,
                          int32_t qd) {
  if (!is_float_input(in->dtype))
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: input has dtype %s (float32, float16 or bfloat16 expected)", a.op,
                kern::dtype_name(in->dtype));
  if (out->dtype != qd)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out has dtype %s but dtype is %s", a.op,
                kern::dtype_name(out->dtype), kern::dtype_name(qd));
  return PTERON_OK;
}

// ---- quantize_per_tensor ---------------------------------------------------------------------

int32_t quantize_tensor_scalar(const Args& a, pteron_tensor* in, double scale, int64_t zp,
                               size_t i_min, pteron_tensor* out) {
  int64_t qmin = 0, qmax = 0;
  int32_t qd = 0;
  PTERON_CHECK_OK(quant_args(a, i_min, i_min + 1, i_min + 2, &qmin, &qmax, &qd));
  PTERON_CHECK_OK(check_quantize_io(a, in, out, qd));
  PTERON_CHECK_OK(resize_like_input(a, out, in));
  // PyTorch: input * (1.0 / scale) with the Python float narrowed to float32, round, + zp.
  const float inv = static_cast<float>(1.0 / scale), z = static_cast<float>(zp);
  zip(in, out, [&](int64_t, int64_t io, int64_t oo) {
    const float r = std::nearbyint(load_f32(in, io) * inv) + z;
    store_q(out, oo, clamp_q(r, qmin, qmax));
  });
  return PTERON_OK;
}

// quantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
//                         int quant_max, ScalarType dtype, *, Tensor(a!) out)
int32_t quantize_per_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::quantize_per_tensor.out"};
  PTERON_CHECK_OK(a.arity(7));
  pteron_tensor *in = nullptr, *out = nullptr;
  double scale = 0;
  int64_t zp = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(a.real(1, "scale", &scale));
  PTERON_CHECK_OK(a.integer(2, "zero_point", &zp));
  PTERON_CHECK_OK(kern::tensor_arg(a, 6, "out", &out));
  return quantize_tensor_scalar(a, in, scale, zp, 3, out);
}

// The one value of a 1-element scale or zero-point tensor.
int32_t single(const Args& a, size_t i, const char* name, bool scales, double* v) {
  pteron_tensor* t = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, i, name, &t));
  PTERON_CHECK_OK(param_tensor(a, t, name, 1, scales));
  *v = param(t, 0);
  return PTERON_OK;
}

// quantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point, int quant_min,
//                                int quant_max, ScalarType dtype, *, Tensor(a!) out)
int32_t quantize_per_tensor_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                       size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::quantize_per_tensor.Tensor_out"};
  PTERON_CHECK_OK(a.arity(7));
  pteron_tensor *in = nullptr, *out = nullptr;
  double scale = 0, zp = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(single(a, 1, "scale", true, &scale));
  PTERON_CHECK_OK(single(a, 2, "zero_point", false, &zp));
  PTERON_CHECK_OK(kern::tensor_arg(a, 6, "out", &out));
  return quantize_tensor_scalar(a, in, scale, static_cast<int64_t>(zp), 3, out);
}

// ---- dequantize_per_tensor -------------------------------------------------------------------

// The out dtype: `out_dtype` (argument i, None = float32), which out must have.
int32_t out_dtype_arg(const Args& a, size_t i, const pteron_tensor* out, int32_t* d) {
  int64_t v = PTERON_DTYPE_FLOAT32;
  if (!a.is_none(i)) PTERON_CHECK_OK(a.integer(i, "out_dtype", &v));
  if (v < 0 || v > 64 || !is_float_out(static_cast<int32_t>(v)))
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: out_dtype %lld is not float32, float64, float16 or bfloat16", a.op,
                static_cast<long long>(v));
  *d = static_cast<int32_t>(v);
  if (out->dtype != *d)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out has dtype %s but out_dtype is %s",
                a.op, kern::dtype_name(out->dtype), kern::dtype_name(*d));
  return PTERON_OK;
}

int32_t check_quantized_input(const Args& a, const pteron_tensor* in, int32_t qd) {
  if (in->dtype != qd)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: input has dtype %s but dtype is %s",
                a.op, kern::dtype_name(in->dtype), kern::dtype_name(qd));
  return PTERON_OK;
}

// PyTorch: (input.to(out_dtype) - zero_point) * scale, each step rounded to out_dtype.
int32_t dequantize_tensor_scalar(const Args& a, pteron_tensor* in, double scale, int64_t zp,
                                 size_t i_min, size_t i_outdt, pteron_tensor* out) {
  int64_t qmin = 0, qmax = 0;
  int32_t qd = 0, od = 0;
  PTERON_CHECK_OK(quant_args(a, i_min, i_min + 1, i_min + 2, &qmin, &qmax, &qd));
  PTERON_CHECK_OK(check_quantized_input(a, in, qd));
  PTERON_CHECK_OK(out_dtype_arg(a, i_outdt, out, &od));
  PTERON_CHECK_OK(resize_like_input(a, out, in));
  if (od == PTERON_DTYPE_FLOAT64) {
    zip(in, out, [&](int64_t, int64_t io, int64_t oo) {
      store_f(out, oo, (static_cast<double>(load_int(in, io)) - static_cast<double>(zp)) * scale);
    });
  } else if (od == PTERON_DTYPE_FLOAT32) {
    const float z = static_cast<float>(zp), s = static_cast<float>(scale);
    zip(in, out, [&](int64_t, int64_t io, int64_t oo) {
      store_f(out, oo, (static_cast<float>(load_int(in, io)) - z) * s);
    });
  } else {
    // float16 / bfloat16: each step computed in float32 and rounded to the 16-bit type; as in
    // PyTorch, the zero point is first converted to that type, the scale only to float32.
    const bool half = od == PTERON_DTYPE_FLOAT16;
    auto narrow = [half](float v) -> float { return half ? float(Half(v)) : float(BFloat16(v)); };
    const float z = narrow(static_cast<float>(zp)), s = static_cast<float>(scale);
    zip(in, out, [&](int64_t, int64_t io, int64_t oo) {
      const float q = narrow(static_cast<float>(load_int(in, io)));
      store_f(out, oo, narrow(q - z) * s);
    });
  }
  return PTERON_OK;
}

// dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
//     int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out)
int32_t dequantize_per_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                  size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::dequantize_per_tensor.out"};
  PTERON_CHECK_OK(a.arity(8));
  pteron_tensor *in = nullptr, *out = nullptr;
  double scale = 0;
  int64_t zp = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(a.real(1, "scale", &scale));
  PTERON_CHECK_OK(a.integer(2, "zero_point", &zp));
  PTERON_CHECK_OK(kern::tensor_arg(a, 7, "out", &out));
  return dequantize_tensor_scalar(a, in, scale, zp, 3, 6, out);
}

// dequantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None,
//     Tensor(a!) out)
int32_t dequantize_per_tensor_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                         size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::dequantize_per_tensor.Tensor_out"};
  PTERON_CHECK_OK(a.arity(8));
  pteron_tensor *in = nullptr, *out = nullptr;
  double scale = 0, zp = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(single(a, 1, "scale", true, &scale));
  PTERON_CHECK_OK(single(a, 2, "zero_point", false, &zp));
  PTERON_CHECK_OK(kern::tensor_arg(a, 7, "out", &out));
  return dequantize_tensor_scalar(a, in, scale, static_cast<int64_t>(zp), 3, 6, out);
}

// ---- per channel and per token -------------------------------------------------------------

// Which parameter element each logical element of `in` uses: (i / inner) % count.
struct Group {
  int64_t inner = 1, count = 1;
  int64_t of(int64_t i) const { return count > 0 ? (i / inner) % count : 0; }
};

// quantize with per-group parameters, in the scales' dtype S (PyTorch promotes the float32 input
// to float64 when the scales are float64). zp_first: zero point added before rounding (per
// channel: round(x * inv) + zp; per token: round(x * inv + zp)).
template <typename S>
void quantize_groups(const pteron_tensor* in, pteron_tensor* out, const pteron_tensor* scales,
                     const pteron_tensor* zps, const Group& g, bool zp_before_round, int64_t qmin,
                     int64_t qmax) {
  // Each group's 1 / scale and zero point once, not per element.
  std::vector<S> inv(static_cast<size_t>(g.count)), zp(static_cast<size_t>(g.count));
  for (int64_t c = 0; c < g.count; ++c) {
    inv[static_cast<size_t>(c)] = S(1) / static_cast<S>(param(scales, c));
    zp[static_cast<size_t>(c)] = static_cast<S>(param(zps, c));
  }
  zip(in, out, [&](int64_t i, int64_t io, int64_t oo) {
    const size_t c = static_cast<size_t>(g.of(i));
    const S x = static_cast<S>(load_f32(in, io)) * inv[c];
    const S r = zp_before_round ? std::nearbyint(x + zp[c]) : std::nearbyint(x) + zp[c];
    store_q(out, oo, clamp_q(r, qmin, qmax));
  });
}

// dequantize with per-group parameters: (q - zp) exact, times the scale in S, then converted.
template <typename S>
void dequantize_groups(const pteron_tensor* in, pteron_tensor* out, const pteron_tensor* scales,
                       const pteron_tensor* zps, const Group& g) {
  std::vector<S> scale(static_cast<size_t>(g.count));
  std::vector<int64_t> zp(static_cast<size_t>(g.count), 0);
  for (int64_t c = 0; c < g.count; ++c) {
    scale[static_cast<size_t>(c)] = static_cast<S>(param(scales, c));
    if (zps) zp[static_cast<size_t>(c)] = static_cast<int64_t>(param(zps, c));
  }
  zip(in, out, [&](int64_t i, int64_t io, int64_t oo) {
    const size_t c = static_cast<size_t>(g.of(i));
    store_f(out, oo, static_cast<S>(load_int(in, io) - zp[c]) * scale[c]);
  });
}

// Checks the per-group parameters (zero points optional for dequantize), resizes out and runs
// the loop in the scales' dtype.
int32_t quantize_with(const Args& a, const pteron_tensor* in, pteron_tensor* out,
                      const pteron_tensor* scales, const pteron_tensor* zps, const Group& g,
                      bool zp_before_round, int64_t qmin, int64_t qmax) {
  PTERON_CHECK_OK(param_tensor(a, scales, "scales", g.count, true));
  PTERON_CHECK_OK(param_tensor(a, zps, "zero_points", g.count, false));
  PTERON_CHECK_OK(resize_like_input(a, out, in));
  if (scales->dtype == PTERON_DTYPE_FLOAT64)
    quantize_groups<double>(in, out, scales, zps, g, zp_before_round, qmin, qmax);
  else
    quantize_groups<float>(in, out, scales, zps, g, zp_before_round, qmin, qmax);
  return PTERON_OK;
}

int32_t dequantize_with(const Args& a, const pteron_tensor* in, pteron_tensor* out,
                        const pteron_tensor* scales, const pteron_tensor* zps, const Group& g) {
  PTERON_CHECK_OK(param_tensor(a, scales, "scales", g.count, true));
  if (zps) PTERON_CHECK_OK(param_tensor(a, zps, "zero_points", g.count, false));
  PTERON_CHECK_OK(resize_like_input(a, out, in));
  if (scales->dtype == PTERON_DTYPE_FLOAT64)
    dequantize_groups<double>(in, out, scales, zps, g);
  else
    dequantize_groups<float>(in, out, scales, zps, g);
  return PTERON_OK;
}

int32_t channel_group(const Args& a, const pteron_tensor* in, int64_t axis_arg, Group* g) {
  const int64_t axis = axis_arg < 0 && axis_arg >= -in->dim ? axis_arg + in->dim : axis_arg;
  if (axis < 0 || axis >= in->dim)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: axis %lld is out of range for rank %d",
                a.op, static_cast<long long>(axis_arg), static_cast<int>(in->dim));
  g->count = in->sizes[axis];  // 0 for an empty axis: no element uses a parameter
  g->inner = 1;
  for (int32_t d = static_cast<int32_t>(axis) + 1; d < in->dim; ++d) g->inner *= in->sizes[d];
  if (g->inner == 0) g->inner = 1;
  return PTERON_OK;
}

// quantize_per_channel.out(Tensor input, Tensor scales, Tensor zero_points, int axis,
//     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
int32_t quantize_per_channel_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                 size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::quantize_per_channel.out"};
  PTERON_CHECK_OK(a.arity(8));
  pteron_tensor *in = nullptr, *scales = nullptr, *zps = nullptr, *out = nullptr;
  int64_t axis = 0, qmin = 0, qmax = 0;
  int32_t qd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "scales", &scales));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "zero_points", &zps));
  PTERON_CHECK_OK(a.integer(3, "axis", &axis));
  PTERON_CHECK_OK(quant_args(a, 4, 5, 6, &qmin, &qmax, &qd));
  PTERON_CHECK_OK(kern::tensor_arg(a, 7, "out", &out));
  PTERON_CHECK_OK(check_quantize_io(a, in, out, qd));
  Group g;
  PTERON_CHECK_OK(channel_group(a, in, axis, &g));
  return quantize_with(a, in, out, scales, zps, g, false, qmin, qmax);
}

// dequantize_per_channel.out(Tensor input, Tensor scales, Tensor? zero_points, int axis,
//     int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None,
//     Tensor(a!) out)
// Zero points may be int32 or int64 (both read by logical index: no read past a shorter
// element type's end).
int32_t dequantize_per_channel_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                   size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::dequantize_per_channel.out"};
  PTERON_CHECK_OK(a.arity(9));
  pteron_tensor *in = nullptr, *scales = nullptr, *zps = nullptr, *out = nullptr;
  int64_t axis = 0, qmin = 0, qmax = 0;
  int32_t qd = 0, od = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "scales", &scales));
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, 2, "zero_points", &zps));
  PTERON_CHECK_OK(a.integer(3, "axis", &axis));
  PTERON_CHECK_OK(quant_args(a, 4, 5, 6, &qmin, &qmax, &qd));
  PTERON_CHECK_OK(kern::tensor_arg(a, 8, "out", &out));
  PTERON_CHECK_OK(check_quantized_input(a, in, qd));
  PTERON_CHECK_OK(out_dtype_arg(a, 7, out, &od));
  Group g;
  PTERON_CHECK_OK(channel_group(a, in, axis, &g));
  return dequantize_with(a, in, out, scales, zps, g);
}

// Per token: the last dim is a token's values; every other dim counts tokens.
Group token_group(const pteron_tensor* in) {
  Group g;
  g.inner = in->dim > 0 ? in->sizes[in->dim - 1] : 1;
  g.count = 1;  // the tokens: every dim but the last (0 when one is empty)
  for (int32_t d = 0; d + 1 < in->dim; ++d) g.count *= in->sizes[d];
  if (g.inner == 0) g.inner = 1;  // no element: of() is never called
  return g;
}

// quantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, int quant_min,
//     int quant_max, ScalarType dtype, *, Tensor(a!) out)
int32_t quantize_per_token_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::quantize_per_token.out"};
  PTERON_CHECK_OK(a.arity(7));
  pteron_tensor *in = nullptr, *scales = nullptr, *zps = nullptr, *out = nullptr;
  int64_t qmin = 0, qmax = 0;
  int32_t qd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "scales", &scales));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "zero_points", &zps));
  PTERON_CHECK_OK(quant_args(a, 3, 4, 5, &qmin, &qmax, &qd));
  PTERON_CHECK_OK(kern::tensor_arg(a, 6, "out", &out));
  PTERON_CHECK_OK(check_quantize_io(a, in, out, qd));
  const Group g = token_group(in);
  return quantize_with(a, in, out, scales, zps, g, true, qmin, qmax);
}

// dequantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, int quant_min,
//     int quant_max, ScalarType dtype, ScalarType output_dtype, *, Tensor(a!) out)
int32_t dequantize_per_token_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                 size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::dequantize_per_token.out"};
  PTERON_CHECK_OK(a.arity(8));
  pteron_tensor *in = nullptr, *scales = nullptr, *zps = nullptr, *out = nullptr;
  int64_t qmin = 0, qmax = 0;
  int32_t qd = 0, od = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "scales", &scales));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "zero_points", &zps));
  PTERON_CHECK_OK(quant_args(a, 3, 4, 5, &qmin, &qmax, &qd));
  PTERON_CHECK_OK(kern::tensor_arg(a, 7, "out", &out));
  PTERON_CHECK_OK(check_quantized_input(a, in, qd));
  PTERON_CHECK_OK(out_dtype_arg(a, 6, out, &od));
  const Group g = token_group(in);
  return dequantize_with(a, in, out, scales, zps, g);
}

// ---- choose_qparams ------------------------------------------------------------------------

// Writes one (scale, zero point) pair: scale_out float64 or float32, zero_point_out int64 or
// int32, element i by logical index.
int32_t qparam_outs(const Args& a, const pteron_tensor* s, const pteron_tensor* z) {
  if (s->dtype != PTERON_DTYPE_FLOAT64 && s->dtype != PTERON_DTYPE_FLOAT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: scale_out has dtype %s (float64 or float32 expected)", a.op,
                kern::dtype_name(s->dtype));
  if (z->dtype != PTERON_DTYPE_INT64 && z->dtype != PTERON_DTYPE_INT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: zero_point_out has dtype %s (int64 or int32 expected)", a.op,
                kern::dtype_name(z->dtype));
  return PTERON_OK;
}

void put_qparam(pteron_tensor* s, pteron_tensor* z, int64_t i, float scale, int64_t zp) {
  const int64_t so = param_offset(s, i), zo = param_offset(z, i);
  if (s->dtype == PTERON_DTYPE_FLOAT64)
    static_cast<double*>(s->data)[so] = scale;
  else
    static_cast<float*>(s->data)[so] = scale;
  if (z->dtype == PTERON_DTYPE_INT64)
    static_cast<int64_t*>(z->data)[zo] = zp;
  else
    static_cast<int32_t*>(z->data)[zo] = static_cast<int32_t>(zp);
}

// choose_qparams.Tensor_out(Tensor input, int quant_min, int quant_max, float eps,
//     ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out)
// PyTorch's per-tensor affine determine_qparams, in float32: with lo = min(min(x), 0) and
// hi = max(max(x), 0), scale = max((hi - lo) / (quant_max - quant_min), eps) and
// zero_point = clamp(quant_min - round(lo / scale), quant_min, quant_max). Outs have 1 element.
int32_t choose_qparams_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                  size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::choose_qparams.Tensor_out"};
  PTERON_CHECK_OK(a.arity(7));
  pteron_tensor *in = nullptr, *s = nullptr, *z = nullptr;
  int64_t qmin = 0, qmax = 0;
  int32_t qd = 0;
  double eps = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(a.real(3, "eps", &eps));
  PTERON_CHECK_OK(quant_args(a, 1, 2, 4, &qmin, &qmax, &qd));
  PTERON_CHECK_OK(kern::tensor_arg(a, 5, "scale_out", &s));
  PTERON_CHECK_OK(kern::tensor_arg(a, 6, "zero_point_out", &z));
  if (!is_float_input(in->dtype))
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: input has dtype %s (float32, float16 or bfloat16 expected)", a.op,
                kern::dtype_name(in->dtype));
  PTERON_CHECK_OK(qparam_outs(a, s, z));
  if (kern::numel(in) == 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: input has no elements", a.op);
  const int64_t one[1] = {1};
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "scale_out", s, one, 1));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "zero_point_out", z, one, 1));
  float mn = std::numeric_limits<float>::infinity(), mx = -mn;
  bool nan = false;
  kern::for_each_offset(kern::view_of(in), [&](int64_t off) {
    const float v = load_f32(in, off);
    if (std::isnan(v)) nan = true;
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  });
  if (nan)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: input holds NaN", a.op);
  const float lo = mn < 0.0f ? mn : 0.0f, hi = mx > 0.0f ? mx : 0.0f;
  float scale = (hi - lo) / static_cast<float>(static_cast<double>(qmax - qmin));
  const float e = static_cast<float>(eps);
  if (!(scale >= e)) scale = e;
  const float r = std::nearbyint(lo / scale);
  int64_t zp = qmin - clamp_q(r, INT32_MIN, INT32_MAX);  // round(...).to(torch.int)
  zp = zp < qmin ? qmin : (zp > qmax ? qmax : zp);
  put_qparam(s, z, 0, scale, zp);
  return PTERON_OK;
}

// choose_qparams_per_token_asymmetric.out(Tensor input, ScalarType dtype, *,
//     Tensor(a!) scale_out, Tensor(b!) zero_point_out)
// Per token (last dim), int8 range [-128, 127], in float32 as PyTorch's reference: with lo/hi
// the token's min and max widened to include 0, scale = max((hi - lo) / 255, FLT_EPSILON); the
// zero point is qmin - lo / scale or qmax - hi / scale, whichever error is smaller, clamped and
// rounded. Outs are resized to input.shape[:-1] + [1].
int32_t choose_qparams_per_token_asymmetric_out(pteron_kernel_context* ctx,
                                                pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "quantized_decomposed::choose_qparams_per_token_asymmetric.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *in = nullptr, *s = nullptr, *z = nullptr;
  int64_t d = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(a.integer(1, "dtype", &d));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "scale_out", &s));
  PTERON_CHECK_OK(kern::tensor_arg(a, 3, "zero_point_out", &z));
  if (in->dtype != PTERON_DTYPE_FLOAT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: input has dtype %s (float32 expected)",
                a.op, kern::dtype_name(in->dtype));
  PTERON_CHECK_OK(qparam_outs(a, s, z));
  if (in->dim == 0 || in->sizes[in->dim - 1] == 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: input has no tokens to reduce", a.op);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < in->dim; ++i) sizes[i] = in->sizes[i];
  sizes[in->dim - 1] = 1;
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "scale_out", s, sizes, in->dim));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "zero_point_out", z, sizes, in->dim));
  const Group g = token_group(in);
  const float qmin = -128.0f, qmax = 127.0f;
  float mn = 0, mx = 0;
  int64_t done = 0;
  kern::for_each_offset(kern::view_of(in), [&](int64_t off) {
    const float v = load_f32(in, off);
    const int64_t k = done % g.inner;
    if (k == 0) mn = mx = v;
    mn = (v < mn || std::isnan(v)) ? v : mn;  // amin / amax propagate NaN
    mx = (v > mx || std::isnan(v)) ? v : mx;
    if (k == g.inner - 1) {
      const float lo = std::isnan(mn) ? mn : (mn < 0 ? mn : 0.0f);
      const float hi = std::isnan(mx) ? mx : (mx > 0 ? mx : 0.0f);
      float scale = (hi - lo) / 255.0f;
      if (scale < FLT_EPSILON) scale = FLT_EPSILON;
      const float dmin = lo / scale, dmax = hi / scale;
      const float emin = qmin + dmin, emax = qmax + dmax;
      float zp = (emin + emax > 0.0f) ? qmin - dmin : qmax - dmax;
      zp = zp < qmin ? qmin : (zp > qmax ? qmax : zp);
      put_qparam(s, z, done / g.inner, scale, clamp_q(std::nearbyint(zp), -128, 127));
    }
    ++done;
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"quantized_decomposed::quantize_per_tensor", "out", nullptr, quantize_per_tensor_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::quantize_per_tensor", "Tensor_out", nullptr,
     quantize_per_tensor_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::dequantize_per_tensor", "out", nullptr, dequantize_per_tensor_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::dequantize_per_tensor", "Tensor_out", nullptr,
     dequantize_per_tensor_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::quantize_per_channel", "out", nullptr, quantize_per_channel_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::dequantize_per_channel", "out", nullptr, dequantize_per_channel_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::quantize_per_token", "out", nullptr, quantize_per_token_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::dequantize_per_token", "out", nullptr, dequantize_per_token_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::choose_qparams", "Tensor_out", nullptr, choose_qparams_tensor_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"quantized_decomposed::choose_qparams_per_token_asymmetric", "out", nullptr,
     choose_qparams_per_token_asymmetric_out, PTERON_KERNEL_PRIORITY, 0})
