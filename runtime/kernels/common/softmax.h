// SPDX-License-Identifier: BSD-3-Clause
// softmax.h - aten::_softmax.out / aten::_log_softmax.out: the argument
// checks and the per-lane computation, shared by kernels_portable and
// kernels_optimized so both accept the same programs, report the same errors
// and compute the same values (header-only, private to the kernel libraries).
//
// Signature (PyTorch native_functions.yaml): _softmax.out(Tensor self,
// int dim, bool half_to_float, *, Tensor(a!) out); the same for
// _log_softmax.out. out has self's shape and dtype.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron::kern {

// Reads and checks the arguments (self and out of one floating dtype, float16
// and bfloat16 included: a caller that cannot compute them refuses them,
// half_to_float false, dim in range: *dim is the wrapped dim, 0 for a rank-0
// self) and resizes out to self's shape.
inline int32_t read_softmax_args(const Args& a, pteron_tensor** self, pteron_tensor** out,
                                 int32_t* dim) {
  pteron_kernel_context* ctx = a.ctx;
  const char* op = a.op;
  PTERON_CHECK_OK(a.arity(4));
  PTERON_CHECK_OK(a.tensor(0, "self", self));
  PTERON_CHECK_OK(a.tensor(3, "out", out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", (*self)->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", (*out)->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", *self));
  int64_t d = 0;
  bool half_to_float = false;
  PTERON_CHECK_OK(a.integer(1, "dim", &d));
  PTERON_CHECK_OK(a.boolean(2, "half_to_float", &half_to_float));
  if (half_to_float)
    return fail(ctx, PTERON_ERROR_NOT_SUPPORTED, "%s: half_to_float=True is not supported", op);
  if (!is_floating((*self)->dtype)) return unsupported_dtype(ctx, op, "self", (*self)->dtype);
  if ((*out)->dtype != (*self)->dtype)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: out dtype %s must match self dtype %s", op,
                dtype_name((*out)->dtype), dtype_name((*self)->dtype));
  const int64_t orig_dim = d;
  if (!wrap_dim(d, (*self)->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dim %lld out of range for a tensor of rank %d", op,
                static_cast<long long>(orig_dim), (*self)->dim);
  *dim = static_cast<int32_t>(d);
  return resize_out(ctx, op, "out", *out, (*self)->sizes, (*self)->dim);
}

// Softmax (log=false) or log-softmax (log=true) of one lane of `len`
// elements, x and y strided by xs / ys elements; y may alias x (every x[i]
// is read before y[i] is written). Computed in double from the lane's max,
// so exp never overflows; a NaN in the lane makes the whole lane NaN, as in
// PyTorch. Used by kernels_portable and kernels_optimized.
template <typename C>
void softmax_lane(const C* x, int64_t xs, C* y, int64_t ys, int64_t len, bool log) {
  C mx = x[0];
  for (int64_t i = 1; i < len; ++i) {
    const C v = x[i * xs];
    if (v > mx || std::isnan(v)) mx = v;
    if (std::isnan(mx)) break;
  }
  double sum = 0;
  for (int64_t i = 0; i < len; ++i) sum += std::exp(double(x[i * xs]) - double(mx));
  if (log) {
    const double ls = std::log(sum);
    for (int64_t i = 0; i < len; ++i)
      y[i * ys] = static_cast<C>(double(x[i * xs]) - double(mx) - ls);
  } else {
    const double inv = 1.0 / sum;
    for (int64_t i = 0; i < len; ++i)
      y[i * ys] = static_cast<C>(std::exp(double(x[i * xs]) - double(mx)) * inv);
  }
}

// The kernel entry points of aten::_softmax.out (Log=false) and
// aten::_log_softmax.out (Log=true) over a library's own implementation
// `Impl(ctx, args, n, operator's full name, log)`, so each library writes
// only the implementation and registers softmax_kernel<its_impl, false/true>.
using SoftmaxImpl = int32_t (*)(pteron_kernel_context*, pteron_value* const*, size_t, const char*,
                                bool);
template <SoftmaxImpl Impl, bool Log>
int32_t softmax_kernel(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return Impl(ctx, args, n, Log ? "aten::_log_softmax.out" : "aten::_softmax.out", Log);
}

}  // namespace pteron::kern
