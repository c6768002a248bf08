// SPDX-License-Identifier: BSD-3-Clause
// real_access.h - element access of the kernels that accept float32 and
// float64 only and compute in double (normalisation, grid sampling,
// distances, backward operators): the dtype rule, a load as double and a
// store from double. Offsets are in elements; the caller has checked the
// dtype with is_float_dtype.
#pragma once

#include <cstdint>

#include "pteron/kernel.h"

namespace pteron::kern::real {

inline bool is_float_dtype(int32_t d) {
  return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT64;
}

inline double load(const pteron_tensor* t, int64_t off) {
  return t->dtype == PTERON_DTYPE_FLOAT32
             ? static_cast<double>(static_cast<const float*>(t->data)[off])
             : static_cast<const double*>(t->data)[off];
}

inline void store(pteron_tensor* t, int64_t off, double v) {
  if (t->dtype == PTERON_DTYPE_FLOAT32)
    static_cast<float*>(t->data)[off] = static_cast<float>(v);
  else
    static_cast<double*>(t->data)[off] = v;
}

}  // namespace pteron::kern::real
