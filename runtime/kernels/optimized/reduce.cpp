// SPDX-License-Identifier: BSD-3-Clause
// reduce.cpp - optimized float32 aten::mean.out (mean.dim): global average
// pooling (mean over H, W of an NCHW tensor), RMSNorm's mean over the last
// dim, and every other reduction of a float32 self.
//
// Checks and the reduction plan: reduction_plan.h and kernels_portable's
// rules (reduce_sum.cpp): the same messages, the same output shape. Fast path:
// out float32 and the reduced dims one unit-stride run in memory (the
// trailing dims of a contiguous tensor), so each output element is one
// vectorised sum (isa moments: float block sums added in double); output
// elements split over the thread pool. Any other layout (channels-last H, W;
// a middle dim) or out dtype sums in double along the plan's strides, as
// kernels_portable does.
#include <cstdint>

#include "opt_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "reduction_plan.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

// True when the reduced dims of `in`, in order, are one run of unit stride.
bool reduced_run(const pteron_tensor* in, const ReducePlan& p) {
  int64_t expect = 1;
  for (int32_t i = in->dim - 1; i >= 0; --i) {
    if (!p.reduced[i] || in->sizes[i] == 1) continue;
    if (in->strides[i] != expect) return false;
    expect *= in->sizes[i];
  }
  // ... and no kept dim sits inside the run (a kept dim with a stride below
  // the run's extent would interleave with it).
  for (int32_t i = 0; i < in->dim; ++i)
    if (!p.reduced[i] && in->sizes[i] > 1 && in->strides[i] < expect) return false;
  return true;
}

int32_t mean_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::mean.out";
  Args a{ctx, args, n, op};
  DimListReduction r;
  PTERON_CHECK_OK(read_dim_list_reduction(a, &r));
  const pteron_tensor* self = r.self;
  pteron_tensor* out = r.out;
  // Registered for float32 (PTERON_OPT_KEY); every other dtype is portable's.
  if (self->dtype != PTERON_DTYPE_FLOAT32) return unsupported_dtype(ctx, op, "self", self->dtype);
  PTERON_CHECK_OK(mean_dtype_check(ctx, op, r));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, r.dims, r.ndims, true, r.keepdim, &p));
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, self));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  const int64_t outputs = numel(out);
  if (outputs == 0) return PTERON_OK;
  ReduceIter it(self, out, &p);
  const float* x = static_cast<const float*>(self->data);
  const int64_t count = p.reduce_count;
  const double dcount = static_cast<double>(count);
  if (out->dtype == PTERON_DTYPE_FLOAT32 && reduced_run(self, p) && count > 0) {
    // The (out offset, input base) pairs, then the sums in parallel.
    ScratchPlan plan;
    const size_t io = plan.add(4 * outputs);  // two int64 per output element
    if (!plan.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
    int64_t* offs = reinterpret_cast<int64_t*>(plan.get(io));
    int64_t k = 0;
    it.outer([&](int64_t oo, int64_t base) {
      offs[2 * k] = oo;
      offs[2 * k + 1] = base;
      ++k;
    });
    float* y = static_cast<float*>(out->data);
    const IsaOps& isa = ops();
    const int64_t grain = count >= 16384 ? 1 : 16384 / count;
    parallel_for(0, k, grain, [&](int64_t k0, int64_t k1) {
      for (int64_t j = k0; j < k1; ++j) {
        double sum = 0;
        isa.moments(x + offs[2 * j + 1], count, &sum, nullptr);
        y[offs[2 * j]] = static_cast<float>(sum / dcount);
      }
    });
    return PTERON_OK;
  }
  void* od = out->data;
  const int32_t odt = out->dtype;
  it.outer([&](int64_t oo, int64_t base) {
    double acc = 0;
    it.inner(base, [&](int64_t off) { acc += static_cast<double>(x[off]); });
    store<double>(od, odt, oo, acc / dcount);
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::mean", "out", PTERON_OPT_KEY, mean_out, PTERON_KERNEL_PRIORITY, 0})
