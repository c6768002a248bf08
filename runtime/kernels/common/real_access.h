// SPDX-License-Identifier: BSD-3-Clause
// real_access.h - element access of the kernels that accept float32 and
// float64 only and compute in double (normalisation, grid sampling,
// distances, backward operators): the dtype rule, a load as double and a
// store from double. Offsets are in elements; the caller has checked the
// dtype with is_float_dtype, or with is_float_half_dtype where the kernel
// also takes float16 / bfloat16 (read exactly, stored rounded to nearest
// even through float, half.h).
#pragma once

#include <cstdint>

#include "half.h"
#include "pteron/kernel.h"

namespace pteron::kern::real {

inline bool is_float_dtype(int32_t d) {
  return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT64;
}

inline bool is_float_half_dtype(int32_t d) {
  return is_float_dtype(d) || d == PTERON_DTYPE_FLOAT16 || d == PTERON_DTYPE_BFLOAT16;
}

inline double load(const pteron_tensor* t, int64_t off) {
  switch (t->dtype) {
    case PTERON_DTYPE_FLOAT32: return static_cast<double>(static_cast<const float*>(t->data)[off]);
    case PTERON_DTYPE_FLOAT16: return static_cast<float>(static_cast<const Half*>(t->data)[off]);
    case PTERON_DTYPE_BFLOAT16:
      return static_cast<float>(static_cast<const BFloat16*>(t->data)[off]);
    default: return static_cast<const double*>(t->data)[off];
  }
}

inline void store(pteron_tensor* t, int64_t off, double v) {
  switch (t->dtype) {
    case PTERON_DTYPE_FLOAT32: static_cast<float*>(t->data)[off] = static_cast<float>(v); break;
    case PTERON_DTYPE_FLOAT16: static_cast<Half*>(t->data)[off] = Half(v); break;
    case PTERON_DTYPE_BFLOAT16: static_cast<BFloat16*>(t->data)[off] = BFloat16(v); break;
    default: static_cast<double*>(t->data)[off] = v; break;
  }
}

}  // namespace pteron::kern::real
