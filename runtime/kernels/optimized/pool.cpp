// SPDX-License-Identifier: BSD-3-Clause
// pool.cpp - optimized float32 aten::max_pool2d_with_indices.out on
// (C, H, W) or (N, C, H, W) inputs in any dim order. (avg_pool2d stays
// kernels_portable's: no clear gain measured, bench/kernels/README.md.)
//
// Checks and output shapes: pool_checks.h (kernels_portable's rules). Each
// (n, c) plane is one ISA call (isa_kernels.cpp): the window taps in the
// outer loops, a block of output columns in the inner one, so the inner loop
// is a vectorisable max over a unit- or stride-2 row of the input. Results
// are ATen's: the index is h * W + w within the plane, NaN wins a window.
// Planes split over the thread pool.
#include <cstdint>
#include <limits>

#include "opt_util.h"
#include "arg_reading.h"
#include "pool_checks.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

PoolPlane plane_of(const PoolGeometry& P) {
  PoolPlane q;
  q.H = P.H;
  q.W = P.W;
  q.is_h = P.is_h;
  q.is_w = P.is_w;
  q.Ho = P.Ho;
  q.Wo = P.Wo;
  q.kh = P.k[0];
  q.kw = P.k[1];
  q.sh = P.s[0];
  q.sw = P.s[1];
  q.ph = P.p[0];
  q.pw = P.p[1];
  q.dh = P.d[0];
  q.dw = P.d[1];
  return q;
}

// Runs f(n, c) over every plane, split over the thread pool.
template <typename F>
void for_planes(const PoolGeometry& P, F&& f) {
  const int64_t work = P.Ho * P.Wo * P.k[0] * P.k[1];
  const int64_t grain = work >= 32768 ? 1 : 32768 / (work > 0 ? work : 1);
  parallel_for(0, P.N * P.C, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) f(p / P.C, p % P.C);
  });
}

int32_t max_pool2d_with_indices_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                    size_t n) {
  Args a{ctx, args, n, "aten::max_pool2d_with_indices.out"};
  MaxPoolOperands m;
  // Registered for float32 (PTERON_OPT_KEY); every other dtype is portable's.
  PTERON_CHECK_OK(read_max_pool2d(a, /*float32_only=*/true, &m));
  const pteron_tensor* self = m.self;
  pteron_tensor *out = m.out, *indices = m.indices;
  const PoolGeometry& P = m.P;
  if (P.N == 0) return PTERON_OK;
  // The ISA loop keeps plane indices in int32.
  if (P.H > std::numeric_limits<int32_t>::max() / P.W)
    return fail(ctx, PTERON_ERROR_NOT_SUPPORTED, "%s: an input plane of %lldx%lld is too large",
                a.op, (long long)P.H, (long long)P.W);
  const PoolOutStrides os = pool_out_strides(out, P.batched);
  const PoolOutStrides xs = pool_out_strides(indices, P.batched);
  const float* x = static_cast<const float*>(self->data);
  float* y = static_cast<float*>(out->data);
  int64_t* ix = static_cast<int64_t*>(indices->data);
  const IsaOps& isa = ops();
  const PoolPlane base = plane_of(P);
  for_planes(P, [&](int64_t b, int64_t c) {
    PoolPlane q = base;
    q.in = x + b * P.is_n + c * P.is_c;
    q.out = y + b * os.n + c * os.c;
    q.os_h = os.h;
    q.os_w = os.w;
    q.idx = ix + b * xs.n + c * xs.c;
    q.xs_h = xs.h;
    q.xs_w = xs.w;
    isa.max_pool_plane(q);
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::max_pool2d_with_indices", "out", PTERON_OPT_KEY,
                         max_pool2d_with_indices_out, PTERON_KERNEL_PRIORITY, 0})
