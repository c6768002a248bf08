// SPDX-License-Identifier: BSD-3-Clause
// creation.cpp - portable operators that make or fill tensors from scalars:
// aten::full.out, zeros.out, ones.out, empty.out, scalar_tensor.out,
// fill.Scalar_out, fill.Tensor_out, masked_fill.Scalar_out, full_like.out,
// zeros_like.out, arange.out and arange.start_out.
//
// The out tensor's dtype (declared by the program) is the dtype written. A
// Scalar value is checked as PyTorch's fill_ checks it ("value cannot be
// converted to type ... without overflow": NaN or out-of-range values for
// integer dtypes, finite values beyond float's range for float32; unsigned
// dtypes accept negative integers down to -max, which wrap; bool takes any
// value as "nonzero"). empty.out only sizes its out tensor: its contents are
// unspecified, as in PyTorch. arange sizes its out tensor as PyTorch does:
// int64 outs count in int64 arithmetic, every other dtype in double.
// float16 / bfloat16 outs take the value rounded to nearest even (integers
// and finite floats beyond the type's largest finite value overflow, as in
// PyTorch).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

// PyTorch's overflow rule for a Scalar written into a tensor of type T.
template <typename T>
bool value_fits(const Scalar& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return true;
  } else if constexpr (is_half_v<T>) {
    if (v.kind == ScalarKind::Bool) return true;
    if (v.kind == ScalarKind::Float && !std::isfinite(v.d)) return true;
    // the largest finite values: 65504 (float16), 0x7f7f (bfloat16); an
    // integer beyond them overflows too
    const double max = std::is_same_v<T, Half>
                           ? 65504.0
                           : static_cast<double>(static_cast<float>(BFloat16::from_bits(0x7f7f)));
    const double x = v.kind == ScalarKind::Int ? static_cast<double>(v.i) : v.d;
    return !(x < -max || x > max);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.kind != ScalarKind::Float || !std::isfinite(v.d)) return true;
    return !(v.d < -static_cast<double>(std::numeric_limits<T>::max()) ||
             v.d > static_cast<double>(std::numeric_limits<T>::max()));
  } else {
    if (v.kind == ScalarKind::Bool) return true;
    if (v.kind == ScalarKind::Float) {
      if (std::isnan(v.d)) return false;
      return !(v.d < static_cast<double>(std::numeric_limits<T>::lowest()) ||
               v.d > static_cast<double>(std::numeric_limits<T>::max()));
    }
    const uint64_t max = static_cast<uint64_t>(std::numeric_limits<T>::max());
    if constexpr (std::is_unsigned_v<T>) {
      // negative integers wrap, as far as -max
      if (v.i < 0) return static_cast<uint64_t>(0) - static_cast<uint64_t>(v.i) <= max;
      return static_cast<uint64_t>(v.i) <= max;
    } else {
      return v.i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             v.i <= static_cast<int64_t>(std::numeric_limits<T>::max());
    }
  }
}

// c10's "value cannot be converted to type ... without overflow", naming the
// argument and its value.
int32_t overflow_error(pteron_kernel_context* ctx, const char* op, const char* arg,
                       const Scalar& v, int32_t dtype) {
  if (v.kind == ScalarKind::Float)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: %s %g cannot be converted to type %s without overflow", op, arg, v.d,
                dtype_name(dtype));
  return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
              "%s: %s %lld cannot be converted to type %s without overflow", op, arg,
              static_cast<long long>(v.i), dtype_name(dtype));
}

// Checks `v` against out's dtype (check_fits) and writes it to every element
// of out (dense storage: any dim order).
int32_t fill_with(pteron_kernel_context* ctx, const char* op, const char* arg, const Scalar& v,
                  pteron_tensor* out, bool check_fits) {
  bool fits = true;
  const int64_t count = numel(out);
  dispatch_half(out->dtype, [&](auto t) {
    using T = decltype(t);
    if (check_fits && !value_fits<T>(v)) {
      fits = false;
      return;
    }
    const T x = v.to<T>();
    for (int64_t i = 0; i < count; ++i) store<T>(out->data, out->dtype, i, x);
  });
  if (!fits) return overflow_error(ctx, op, arg, v, out->dtype);
  return PTERON_OK;
}

// An int[] size argument; resizes out to it.
int32_t resize_to_size_arg(const Args& a, size_t i, pteron_tensor* out) {
  const int64_t* sizes = nullptr;
  size_t count = 0;
  PTERON_CHECK_OK(a.int_list(i, "size", &sizes, &count));
  if (count > static_cast<size_t>(PTERON_MAX_DIM))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size has %zu dims, at most %d allowed",
                a.op, count, PTERON_MAX_DIM);
  if (count > 0 && !sizes)
    return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('size') has no data", a.op,
                i);
  for (size_t k = 0; k < count; ++k)
    if (sizes[k] < 0)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: size has a negative dimension %lld at index %zu", a.op,
                  static_cast<long long>(sizes[k]), k);
  return resize_out(a.ctx, a.op, "out", out, sizes, static_cast<int32_t>(count));
}

int32_t out_arg(const Args& a, size_t i, pteron_tensor** out) {
  PTERON_CHECK_OK(a.tensor(i, "out", out));
  return check_supported_half(a.ctx, a.op, "out", (*out)->dtype);
}

// full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out)
int32_t full_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::full.out"};
  PTERON_CHECK_OK(a.arity(3));
  Scalar v;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(read_scalar(a, 1, "fill_value", &v));
  PTERON_CHECK_OK(out_arg(a, 2, &out));
  PTERON_CHECK_OK(resize_to_size_arg(a, 0, out));
  return fill_with(ctx, a.op, "fill_value", v, out, true);
}

// zeros.out / ones.out(SymInt[] size, *, Tensor(a!) out)
int32_t constant_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                     const char* op, int64_t value) {
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(out_arg(a, 1, &out));
  PTERON_CHECK_OK(resize_to_size_arg(a, 0, out));
  Scalar v;
  v.kind = ScalarKind::Int;
  v.i = value;
  v.d = static_cast<double>(value);
  return fill_with(ctx, op, "value", v, out, false);
}

int32_t zeros_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return constant_out(ctx, args, n, "aten::zeros.out", 0);
}
int32_t ones_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return constant_out(ctx, args, n, "aten::ones.out", 1);
}

// empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out)
int32_t empty_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::empty.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(memory_format(a, 1));
  PTERON_CHECK_OK(out_arg(a, 2, &out));
  return resize_to_size_arg(a, 0, out);
}

// scalar_tensor.out(Scalar s, *, Tensor(a!) out)
int32_t scalar_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::scalar_tensor.out"};
  PTERON_CHECK_OK(a.arity(2));
  Scalar v;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(read_scalar(a, 0, "s", &v));
  PTERON_CHECK_OK(out_arg(a, 1, &out));
  const int64_t no_sizes[1] = {0};
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, no_sizes, 0));
  return fill_with(ctx, a.op, "s", v, out, true);
}

// Resizes out like self (checked); out takes self's dtype (can_cast).
int32_t out_like_self(const Args& a, const pteron_tensor* self, pteron_tensor* out) {
  PTERON_CHECK_OK(check_supported_half(a.ctx, a.op, "self", self->dtype));
  PTERON_CHECK_OK(check_tensor(a.ctx, a.op, "self", self));
  if (!can_cast(self->dtype, out->dtype)) return cast_error(a.ctx, a.op, self->dtype, out->dtype);
  return resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim);
}

// fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out)
int32_t fill_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::fill.Scalar_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  Scalar v;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(read_scalar(a, 1, "value", &v));
  PTERON_CHECK_OK(out_arg(a, 2, &out));
  PTERON_CHECK_OK(out_like_self(a, self, out));
  return fill_with(ctx, a.op, "value", v, out, true);
}

// fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out): value is a
// zero-dim tensor; its element is converted as a tensor copy converts it.
int32_t fill_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::fill.Tensor_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *value = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "value", &value));
  PTERON_CHECK_OK(out_arg(a, 2, &out));
  PTERON_CHECK_OK(check_supported_half(ctx, a.op, "value", value->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, a.op, "value", value));
  if (value->dim != 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: only a 0-dimension value tensor is supported, got one with %d dimensions",
                a.op, value->dim);
  PTERON_CHECK_OK(out_like_self(a, self, out));
  const int64_t count = numel(out);
  dispatch_half(out->dtype, [&](auto t) {
    using T = decltype(t);
    const T x = load<T>(value->data, value->dtype, 0);
    for (int64_t i = 0; i < count; ++i) store<T>(out->data, out->dtype, i, x);
  });
  return PTERON_OK;
}

// masked_fill.Scalar_out(Tensor self, Tensor mask, Scalar value, *, Tensor(a!) out):
// out is the broadcast of self and mask, in self's dtype.
int32_t masked_fill_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::masked_fill.Scalar_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *mask = nullptr, *out = nullptr;
  Scalar v;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "mask", &mask));
  PTERON_CHECK_OK(read_scalar(a, 2, "value", &v));
  PTERON_CHECK_OK(out_arg(a, 3, &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  if (mask->dtype != PTERON_DTYPE_BOOL)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: only boolean masks are supported, got mask with dtype %s", op,
                dtype_name(mask->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(check_tensor(ctx, op, "mask", mask));
  if (!can_cast(self->dtype, out->dtype)) return cast_error(ctx, op, self->dtype, out->dtype);
  int64_t shape[PTERON_MAX_DIM];
  int32_t nd = 0;
  if (!broadcast_shape(self, mask, shape, &nd)) return broadcast_error(ctx, op, self, mask);
  bool fits = true;
  dispatch_half(self->dtype, [&](auto t) { fits = value_fits<decltype(t)>(v); });
  if (!fits) return overflow_error(ctx, op, "value", v, self->dtype);
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, nd));
  // float16 / bfloat16 select in float (exact both ways): no map of their own
  dispatch_compute(self->dtype, [&](auto t) {
    using C = decltype(t);
    const C x = v.to<C>();
    const pteron_tensor* ins[2] = {self, mask};
    map_elements<C, C>(ins, out, [x](C s, C m) { return m != C(0) ? x : s; });
  });
  return PTERON_OK;
}

// ---- arange ---------------------------------------------------------------------

// PyTorch's checked Scalar -> int64 conversion (truncating fractions).
bool scalar_to_int64(const Scalar& s, int64_t* out) {
  if (s.kind != ScalarKind::Float) {
    *out = s.i;
    return true;
  }
  if (!(s.d >= -9223372036854775808.0 && s.d < 9223372036854775808.0)) return false;
  *out = static_cast<int64_t>(s.d);
  return true;
}

int32_t arange_impl(const Args& a, const Scalar& start, const Scalar& end, const Scalar& step,
                    pteron_tensor* out) {
  pteron_kernel_context* ctx = a.ctx;
  if (out->dtype == PTERON_DTYPE_BOOL) return unsupported_dtype(ctx, a.op, "out", out->dtype);
  const double dstart = start.d, dend = end.d, dstep = step.d;
  if (!(dstep > 0 || dstep < 0))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: step must be nonzero", a.op);
  if (!std::isfinite(dstart) || !std::isfinite(dend))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: unsupported range: %g -> %g", a.op, dstart,
                dend);
  if (!((dstep > 0 && dend >= dstart) || (dstep < 0 && dend <= dstart)))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: upper bound and lower bound inconsistent with step sign", a.op);
  // Integer outs count and step in int64 (fractions truncated), as PyTorch does.
  const bool integral = !is_floating(out->dtype);
  int64_t istart = 0, iend = 0, istep = 0;
  if (integral && (!scalar_to_int64(start, &istart) || !scalar_to_int64(end, &iend) ||
                   !scalar_to_int64(step, &istep)))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: start, end or step cannot be converted to int64 without overflow", a.op);
  double size_d = 0;
  if (out->dtype == PTERON_DTYPE_INT64) {
    if (istep == 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: step must be nonzero", a.op);
    // (end - start + step - sign(step)) / step without int64 overflow
    constexpr int64_t kLimit = int64_t{1} << 61;
    if (istart < -kLimit || istart > kLimit || iend < -kLimit || iend > kLimit || istep < -kLimit ||
        istep > kLimit)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: invalid size, possible overflow", a.op);
    const int64_t sign = istep > 0 ? 1 : -1;
    const int64_t count = (iend - istart + istep - sign) / istep;
    size_d = static_cast<double>(count < 0 ? 0 : count);
  } else {
    size_d = std::ceil((dend - dstart) / dstep);
  }
  if (!(size_d >= 0 && size_d < 9.2e18))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: invalid size, possible overflow", a.op);
  const int64_t size = static_cast<int64_t>(size_d);
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, &size, 1));
  if (integral) {
    for (int64_t i = 0; i < size; ++i)
      store<int64_t>(out->data, out->dtype, i,
                     wrap_add<int64_t>(istart, wrap_mul<int64_t>(istep, i)));
  } else {
    for (int64_t i = 0; i < size; ++i)
      store<double>(out->data, out->dtype, i, dstart + dstep * static_cast<double>(i));
  }
  return PTERON_OK;
}

// arange.out(Scalar end, *, Tensor(a!) out)
int32_t arange_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::arange.out"};
  PTERON_CHECK_OK(a.arity(2));
  Scalar start, end, step;
  start.i = 0;
  start.d = 0;
  step.i = 1;
  step.d = 1;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(read_scalar(a, 0, "end", &end));
  PTERON_CHECK_OK(out_arg(a, 1, &out));
  return arange_impl(a, start, end, step, out);
}

// arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out)
int32_t arange_start_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::arange.start_out"};
  PTERON_CHECK_OK(a.arity(4));
  Scalar start, end, step;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(read_scalar(a, 0, "start", &start));
  PTERON_CHECK_OK(read_scalar(a, 1, "end", &end));
  PTERON_CHECK_OK(read_scalar(a, 2, "step", &step));
  PTERON_CHECK_OK(out_arg(a, 3, &out));
  return arange_impl(a, start, end, step, out);
}

// ---- full_like / zeros_like -------------------------------------------------

// full_like.out(Tensor self, Scalar fill_value, *,
//               MemoryFormat? memory_format=None, Tensor(a!) out)
int32_t full_like_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::full_like.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  Scalar v;
  PTERON_CHECK_OK(tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(read_scalar(a, 1, "fill_value", &v));
  PTERON_CHECK_OK(memory_format(a, 2));
  PTERON_CHECK_OK(out_arg(a, 3, &out));
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  return fill_with(ctx, a.op, "fill_value", v, out, true);
}

// zeros_like.out(Tensor self, *, MemoryFormat? memory_format=None,
//                Tensor(a!) out)
int32_t zeros_like_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::zeros_like.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(memory_format(a, 1));
  PTERON_CHECK_OK(out_arg(a, 2, &out));
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  const int64_t count = numel(out);
  if (count > 0)
    std::memset(out->data, 0, static_cast<size_t>(count) * dtype_size(out->dtype));
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::full", "out", nullptr, full_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::zeros", "out", nullptr, zeros_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::ones", "out", nullptr, ones_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::empty", "out", nullptr, empty_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::scalar_tensor", "out", nullptr, scalar_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::fill", "Scalar_out", nullptr, fill_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::fill", "Tensor_out", nullptr, fill_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::masked_fill", "Scalar_out", nullptr, masked_fill_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::arange", "out", nullptr, arange_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::arange", "start_out", nullptr, arange_start_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::full_like", "out", nullptr, full_like_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::zeros_like", "out", nullptr, zeros_like_out, PTERON_KERNEL_PRIORITY, 0})
