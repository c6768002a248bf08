// SPDX-License-Identifier: BSD-3-Clause
// copy.cpp - optimized float32 aten::permute_copy.out.
//
// Exported Linear layers transpose their weight with permute_copy on every
// execution (the 2 x Linear(1024) MLP moves 8 MB that way per run), so the
// copy matters next to the GEMM. The out tensor's dims are walked in memory
// order with neighbours merged (opt_util.h, make_iter): a permutation that
// keeps the innermost dim is a few memcpy runs; one that moves it becomes a
// 2-D transpose of the source's contiguous dim against the destination's,
// copied in 32 x 32 tiles so both sides stay in cache; tiles are split over
// the thread pool. A non-float32 out (a converting copy) takes the generic
// element loop.
#include <cstdint>
#include <cstring>

#include "opt_util.h"
#include "arg_reading.h"
#include "elementwise.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

constexpr int64_t kTile = 32;

// Copies the 2-D block rows [a0, a1) x cols [0, nb) of a transpose:
// dst[a * dst_a + b] = src[a + b * src_b].
void transpose_block(const float* src, int64_t src_b, float* dst, int64_t dst_a, int64_t a0,
                     int64_t a1, int64_t nb) {
  for (int64_t b0 = 0; b0 < nb; b0 += kTile) {
    const int64_t b1 = b0 + kTile < nb ? b0 + kTile : nb;
    for (int64_t a = a0; a < a1; ++a) {
      float* d = dst + a * dst_a;
      const float* s = src + a;
      for (int64_t b = b0; b < b1; ++b) d[b] = s[b * src_b];
    }
  }
}

// permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out)
int32_t permute_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::permute_copy.out";
  Args a{ctx, args, n, op};
  pteron_tensor *self = nullptr, *out = nullptr;
  pteron_tensor view;  // self's storage, permuted sizes and strides
  PTERON_CHECK_OK(read_permute_copy(a, &self, &out, &view));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, view.sizes, view.dim));
  const int64_t total = numel(out);
  if (total == 0) return PTERON_OK;
  if (out->dtype != PTERON_DTYPE_FLOAT32) {  // converting copy
    const pteron_tensor* ins[1] = {&view};
    map_elements<float, float>(ins, out, [](float x) { return x; });
    return PTERON_OK;
  }
  int64_t zero[PTERON_MAX_DIM] = {0};
  Iter it;
  make_iter(out, view.strides, zero, &it);
  const float* src = static_cast<const float*>(self->data);
  float* dst = static_cast<float*>(out->data);
  const int32_t last = it.nd - 1;
  int32_t j = -1;  // the dim the source walks contiguously
  if (it.so[last] == 1 && it.sa[last] != 1)
    for (int32_t d = last - 1; d >= 0; --d)
      if (it.sa[d] == 1) j = d;
  if (j < 0) {
    // Innermost dims agree (memcpy runs), or no transpose structure.
    parallel_for(0, total, 65536, [&](int64_t begin, int64_t end) {
      for_runs(it, begin, end, [&](int64_t oo, int64_t oi, int64_t, int64_t len) {
        if (it.so[last] == 1 && it.sa[last] == 1) {
          std::memcpy(dst + oo, src + oi, static_cast<size_t>(len) * sizeof(float));
        } else {
          for (int64_t k = 0; k < len; ++k) dst[oo + k * it.so[last]] = src[oi + k * it.sa[last]];
        }
      });
    });
    return PTERON_OK;
  }
  // Transpose of dims (j, last) for every index of the other dims.
  int32_t od[PTERON_MAX_DIM];
  int32_t no = 0;
  int64_t outer = 1;
  for (int32_t d = 0; d < last; ++d)
    if (d != j) {
      od[no++] = d;
      outer *= it.size[d];
    }
  const int64_t na = it.size[j], nb = it.size[last];
  const int64_t ablocks = ceil_div(na, kTile);
  const int64_t tasks = outer * ablocks;
  const int64_t grain = ceil_div(65536, kTile * nb) > 0 ? ceil_div(65536, kTile * nb) : 1;
  parallel_for(0, tasks, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t o = t / ablocks;
      const int64_t ab = t % ablocks;
      int64_t so = 0, si = 0;
      for (int32_t k = no - 1; k >= 0; --k) {
        const int32_t d = od[k];
        const int64_t idx = o % it.size[d];
        o /= it.size[d];
        so += idx * it.so[d];
        si += idx * it.sa[d];
      }
      const int64_t a0 = ab * kTile, a1 = a0 + kTile < na ? a0 + kTile : na;
      transpose_block(src + si, it.sa[last], dst + so, it.so[j], a0, a1, nb);
    }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::permute_copy", "out", PTERON_OPT_KEY, permute_copy_out,
                         PTERON_KERNEL_PRIORITY, 0})
