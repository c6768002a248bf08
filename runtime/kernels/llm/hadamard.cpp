// SPDX-License-Identifier: BSD-3-Clause
// hadamard.cpp - kernels_llm: llama::fast_hadamard_transform.out(Tensor mat, *, Tensor(a!) out),
// the normalised Walsh-Hadamard transform over the last dimension that upstream ExecuTorch
// 1.5.1's SpinQuant rotation (extension/llm/custom_ops) emits:
//
//   out[..., :] = H_n mat[..., :] / sqrt(n),  n = mat.size(-1) a power of two,
//
// H_n the Sylvester-ordered Hadamard matrix (H_1 = [1], H_2n = [[H_n, H_n], [H_n, -H_n]]),
// computed with log2(n) butterfly passes. dtypes: float32, float64, float16, bfloat16 (the
// half types computed in float32, rounded once); out has mat's shape and dtype. A rank-0 mat
// is copied. Errors: n not a power of two (upstream also takes 28 * 2^k with its own order-28
// matrix, which pteron does not have: PTERON_ERROR_NOT_SUPPORTED naming the size), a dtype
// mismatch.
#include <cmath>
#include <cstdint>
#include <vector>

#include "llm_util.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

template <typename T>
void fwht(T* x, int64_t n) {
  for (int64_t h = 1; h < n; h *= 2)
    for (int64_t i = 0; i < n; i += 2 * h)
      for (int64_t j = i; j < i + h; ++j) {
        const T a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  const T s = T(1) / std::sqrt(static_cast<T>(n));
  for (int64_t j = 0; j < n; ++j) x[j] *= s;
}

int32_t hadamard(const Args& a) {
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *mat = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "mat", &mat));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "out", &out));
  const int32_t dt = mat->dtype;
  if (dt != PTERON_DTYPE_FLOAT32 && dt != PTERON_DTYPE_FLOAT64 && dt != PTERON_DTYPE_FLOAT16 &&
      dt != PTERON_DTYPE_BFLOAT16)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: mat has dtype %s (float32, float64, float16 or bfloat16)", a.op,
                kern::dtype_name(dt));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, out, "out", dt));
  const int64_t n = mat->dim == 0 ? 1 : mat->sizes[mat->dim - 1];
  if (mat->dim > 0 && n > 0 && (n & (n - 1)) != 0)
    return fail(a.ctx, PTERON_ERROR_NOT_SUPPORTED,
                "%s: the last dimension has size %lld; pteron transforms powers of two only "
                "(upstream's 28 * 2^k sizes use its own order-28 matrix)", a.op,
                static_cast<long long>(n));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, mat->sizes, mat->dim));
  const int64_t total = kern::numel(mat);
  if (total == 0) return PTERON_OK;
  const int64_t rows = total / n;
  // Row r's elements through the strides of the leading dims (any layout in, any layout out).
  auto row_offset = [](const pteron_tensor* t, int64_t r) {
    int64_t off = 0;
    for (int32_t d = t->dim - 2; d >= 0; --d) {
      off += (r % t->sizes[d]) * t->strides[d];
      r /= t->sizes[d];
    }
    return off;
  };
  const int64_t ls_in = mat->dim ? mat->strides[mat->dim - 1] : 1;
  const int64_t ls_out = out->dim ? out->strides[out->dim - 1] : 1;
  bool oom = false;
  kern::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> wd;
    std::vector<float> wf;
    try {
      if (dt == PTERON_DTYPE_FLOAT64) wd.resize(static_cast<size_t>(n));
      else wf.resize(static_cast<size_t>(n));
    } catch (...) {
      oom = true;
      return;
    }
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t oi = row_offset(mat, r), oo = row_offset(out, r);
      if (dt == PTERON_DTYPE_FLOAT64) {
        for (int64_t j = 0; j < n; ++j) wd[j] = kern::load<double>(mat->data, dt, oi + j * ls_in);
        fwht(wd.data(), n);
        for (int64_t j = 0; j < n; ++j) kern::store<double>(out->data, dt, oo + j * ls_out, wd[j]);
      } else {
        for (int64_t j = 0; j < n; ++j) wf[j] = kern::load<float>(mat->data, dt, oi + j * ls_in);
        fwht(wf.data(), n);
        for (int64_t j = 0; j < n; ++j) kern::store<float>(out->data, dt, oo + j * ls_out, wf[j]);
      }
    }
  });
  if (oom)
    return fail(a.ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: no memory for a row buffer", a.op);
  return PTERON_OK;
}

int32_t fast_hadamard_transform_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                    size_t n) {
  return hadamard(Args{ctx, args, n, "llama::fast_hadamard_transform.out"});
}

}  // namespace

PTERON_REGISTER_KERNELS({"llama::fast_hadamard_transform", "out", nullptr,
                         fast_hadamard_transform_out, PTERON_KERNEL_PRIORITY, 0})
