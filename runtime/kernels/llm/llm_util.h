// SPDX-License-Identifier: BSD-3-Clause
// llm_util.h - helpers shared by kernels_llm's operator sources (private to the component,
// compiled at the baseline ISA): strided 4-D views read and written as float32 rows. (The work
// split over the thread pool is kernel_util.h's parallel_for.)
#pragma once

#include <cstdint>

#include "dtype_convert.h"
#include "kernel_util.h"

namespace pteron_llm {

// A rank-4 tensor seen as [batch, sequence, heads, head_dim] (element strides in that order),
// whatever the dim order the operator's layout gives it.
struct View4 {
  void* data = nullptr;
  int32_t dtype = 0;
  int64_t size[4] = {0, 0, 0, 0};
  int64_t stride[4] = {0, 0, 0, 0};
  int64_t offset(int64_t b, int64_t s, int64_t h) const {
    return b * stride[0] + s * stride[1] + h * stride[2];
  }
};

// `t` as a View4; seq_at_dim_2: t is [batch, heads, sequence, head_dim].
inline View4 view4(const pteron_tensor* t, bool seq_at_dim_2 = false) {
  View4 v;
  v.data = t->data;
  v.dtype = t->dtype;
  const int order[4] = {0, seq_at_dim_2 ? 2 : 1, seq_at_dim_2 ? 1 : 2, 3};
  for (int i = 0; i < 4; ++i) {
    v.size[i] = t->sizes[order[i]];
    v.stride[i] = t->strides[order[i]];
  }
  return v;
}

// Row (b, s, h) of v as head_dim float32 values.
inline void load_row(const View4& v, int64_t b, int64_t s, int64_t h, float* dst) {
  const int64_t base = v.offset(b, s, h), d = v.size[3], sd = v.stride[3];
  if (v.dtype == PTERON_DTYPE_FLOAT32) {
    const float* p = static_cast<const float*>(v.data) + base;
    for (int64_t i = 0; i < d; ++i) dst[i] = p[i * sd];
    return;
  }
  for (int64_t i = 0; i < d; ++i) dst[i] = pteron::kern::load<float>(v.data, v.dtype, base + i * sd);
}

// Writes head_dim float32 values as row (b, s, h) of v, in v's dtype.
inline void store_row(const View4& v, int64_t b, int64_t s, int64_t h, const float* src) {
  const int64_t base = v.offset(b, s, h), d = v.size[3], sd = v.stride[3];
  if (v.dtype == PTERON_DTYPE_FLOAT32) {
    float* p = static_cast<float*>(v.data) + base;
    for (int64_t i = 0; i < d; ++i) p[i * sd] = src[i];
    return;
  }
  for (int64_t i = 0; i < d; ++i) pteron::kern::store<float>(v.data, v.dtype, base + i * sd, src[i]);
}

}  // namespace pteron_llm
