// SPDX-License-Identifier: BSD-3-Clause
// pool.cpp - portable 2-D pooling: max_pool2d_with_indices and avg_pool2d,
// on (C, H, W) or (N, C, H, W) inputs in any dim order.
//
// Shapes, padding limits, ceil_mode and the divisor follow ATen's CPU
// kernels: the max index is h * W + w within the input plane, NaN wins a
// max window, and avg_pool2d's count_include_pad counts padding only up to
// the padded border. float16 / bfloat16 compare (max) and sum (avg, in
// double) through float and round once per output element.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernel_util.h"
#include "strided_views.h"
#include "tensor_checks.h"
#include "arg_reading.h"
#include "pool_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// The shared argument reading and output-size rule (pool_checks.h).
using Pool = kern::PoolGeometry;
using OutStrides = kern::PoolOutStrides;
using kern::parse_pool;
using kern::pool_out_strides;
using kern::resize_pooled;

template <typename T>
void max_pool_typed(const Pool& P, const T* in, T* out, OutStrides os, int64_t* idx,
                    OutStrides xs) {
  for (int64_t n = 0; n < P.N; ++n)
    for (int64_t c = 0; c < P.C; ++c) {
      const T* plane = in + n * P.is_n + c * P.is_c;
      for (int64_t oh = 0; oh < P.Ho; ++oh) {
        int64_t h0 = oh * P.s[0] - P.p[0];
        const int64_t h1 = std::min(h0 + (P.k[0] - 1) * P.d[0] + 1, P.H);
        while (h0 < 0) h0 += P.d[0];
        for (int64_t ow = 0; ow < P.Wo; ++ow) {
          int64_t w0 = ow * P.s[1] - P.p[1];
          const int64_t w1 = std::min(w0 + (P.k[1] - 1) * P.d[1] + 1, P.W);
          while (w0 < 0) w0 += P.d[1];
          int64_t best_i = h0 * P.W + w0;
          T best;
          if constexpr (kern::is_float_type_v<T>)
            best = T(-std::numeric_limits<float>::infinity());
          else
            best = std::numeric_limits<T>::lowest();
          for (int64_t h = h0; h < h1; h += P.d[0])
            for (int64_t w = w0; w < w1; w += P.d[1]) {
              const T v = plane[h * P.is_h + w * P.is_w];
              bool take = v > best;
              if constexpr (kern::is_float_type_v<T>)
                take = take || std::isnan(static_cast<float>(v));
              if (take) {
                best = v;
                best_i = h * P.W + w;
              }
            }
          out[n * os.n + c * os.c + oh * os.h + ow * os.w] = best;
          idx[n * xs.n + c * xs.c + oh * xs.h + ow * xs.w] = best_i;
        }
      }
    }
}

// max_pool2d_with_indices.out(Tensor self, int[2] kernel_size,
//   int[2] stride=[], int[2] padding=0, int[2] dilation=1,
//   bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices)
int32_t max_pool2d_with_indices_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                    size_t n) {
  Args a{ctx, args, n, "aten::max_pool2d_with_indices.out"};
  kern::MaxPoolOperands m;
  PTERON_CHECK_OK(kern::read_max_pool2d(a, /*float32_only=*/false, &m));
  const pteron_tensor* self = m.self;
  pteron_tensor *out = m.out, *indices = m.indices;
  const Pool& P = m.P;
  const int32_t dt = self->dtype;
  if (P.N == 0) return PTERON_OK;
  const OutStrides os = pool_out_strides(out, P.batched);
  const OutStrides xs = pool_out_strides(indices, P.batched);
  pteron::kern::dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      max_pool_typed<T>(P, static_cast<const T*>(self->data), static_cast<T*>(out->data), os,
                        static_cast<int64_t*>(indices->data), xs);
  });
  return PTERON_OK;
}

template <typename T>
void avg_pool_typed(const Pool& P, const T* in, T* out, OutStrides os, bool count_include_pad,
                    bool has_div, int64_t divisor) {
  for (int64_t n = 0; n < P.N; ++n)
    for (int64_t c = 0; c < P.C; ++c) {
      const T* plane = in + n * P.is_n + c * P.is_c;
      for (int64_t oh = 0; oh < P.Ho; ++oh)
        for (int64_t ow = 0; ow < P.Wo; ++ow) {
          int64_t h0 = oh * P.s[0] - P.p[0];
          int64_t w0 = ow * P.s[1] - P.p[1];
          int64_t h1 = std::min(h0 + P.k[0], P.H + P.p[0]);
          int64_t w1 = std::min(w0 + P.k[1], P.W + P.p[1]);
          const int64_t pool_size = (h1 - h0) * (w1 - w0);
          h0 = std::max<int64_t>(h0, 0);
          w0 = std::max<int64_t>(w0, 0);
          h1 = std::min(h1, P.H);
          w1 = std::min(w1, P.W);
          T& dst = out[n * os.n + c * os.c + oh * os.h + ow * os.w];
          if (h0 >= h1 || w0 >= w1) {
            dst = T(0);
            continue;
          }
          const int64_t factor =
              has_div ? divisor : (count_include_pad ? pool_size : (h1 - h0) * (w1 - w0));
          if constexpr (kern::is_float_type_v<T>) {
            double sum = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w)
                sum += static_cast<double>(plane[h * P.is_h + w * P.is_w]);
            dst = static_cast<T>(sum / static_cast<double>(factor));
          } else {
            uint64_t sum = 0;  // wraps like the fixed-width ATen sum
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w)
                sum += static_cast<uint64_t>(static_cast<int64_t>(plane[h * P.is_h + w * P.is_w]));
            const int64_t s = static_cast<int64_t>(sum);
            if (factor == -1)
              dst = static_cast<T>(static_cast<int64_t>(0 - sum));
            else
              dst = static_cast<T>(s / factor);
          }
        }
    }
}

// avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[],
//   int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True,
//   int? divisor_override=None, *, Tensor(a!) out)
int32_t avg_pool2d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::avg_pool2d.out"};
  PTERON_CHECK_OK(a.arity(8));
  pteron_tensor *self = nullptr, *out = nullptr;
  bool ceil_mode = false, count_include_pad = false, has_div = false;
  int64_t divisor = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.boolean(4, "ceil_mode", &ceil_mode));
  PTERON_CHECK_OK(a.boolean(5, "count_include_pad", &count_include_pad));
  PTERON_CHECK_OK(kern::opt_integer(a, 6, "divisor_override", &divisor, &has_div));
  PTERON_CHECK_OK(a.tensor(7, "out", &out));
  const int32_t dt = self->dtype;
  if (dt != PTERON_DTYPE_FLOAT32 && dt != PTERON_DTYPE_FLOAT64 && dt != PTERON_DTYPE_INT64 &&
      dt != PTERON_DTYPE_FLOAT16 && dt != PTERON_DTYPE_BFLOAT16)
    return pteron::kern::unsupported_dtype(ctx, a.op, "self", dt);
  if (out->dtype != dt)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out dtype %s differs from self dtype %s",
                a.op, pteron::kern::dtype_name(out->dtype), pteron::kern::dtype_name(dt));
  if (has_div && divisor == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: divisor_override must be non-zero", a.op);
  Pool P;
  PTERON_CHECK_OK(parse_pool(a, self, 1, 2, 3, -1, ceil_mode, &P));
  PTERON_CHECK_OK(resize_pooled(a, out, "out", P));
  if (P.N == 0) return PTERON_OK;
  const OutStrides os = pool_out_strides(out, P.batched);
  pteron::kern::dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kern::is_float_type_v<T> || std::is_same_v<T, int64_t>)
      avg_pool_typed<T>(P, static_cast<const T*>(self->data), static_cast<T*>(out->data), os,
                        count_include_pad, has_div, divisor);
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::max_pool2d_with_indices", "out", nullptr,
                         max_pool2d_with_indices_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::avg_pool2d", "out", nullptr, avg_pool2d_out, PTERON_KERNEL_PRIORITY,
                         0})
