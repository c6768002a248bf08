// SPDX-License-Identifier: BSD-3-Clause
// matmul.cpp - portable matrix products: aten::mm.out, aten::bmm.out,
// aten::addmm.out, aten::linear.out (float types: kernels_optimized's float32 one wins where it
// is loaded; here float64, float16 and bfloat16, which upstream's bf16 and fp16 LLM exports
// keep as linear).
//
// All operands share one dtype (float32, float64, float16, bfloat16 or an
// integer type), as PyTorch requires; float16 / bfloat16 accumulate in double
// and round once per output element, and addmm's alpha / beta are taken in
// float for them (PyTorch's opmath type). Any strides are accepted. The product runs row by row in
// i-k-j order into an accumulator row (double for floating types, wrapping
// 64-bit for integers), so the innermost loop streams over contiguous rows of
// the right-hand matrix. Rows are split over pteron_parallel_for when the
// product is large.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernel_util.h"
#include "matmul_checks.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

// A strided matrix view.
template <typename T>
struct Mat {
  T* p;
  int64_t rs, cs;  // row / column strides (elements)
};

template <typename C>
using AccOf = std::conditional_t<is_float_type_v<C>, double, uint64_t>;

// One batch entry of out = beta * bias + alpha * (a @ b), rows [r0, r1).
template <typename C>
struct Gemm {
  int64_t n, k, m;
  Mat<const C> a, b;
  Mat<C> out;
  const C* bias;  // nullable; broadcast view via strides (0 = broadcast)
  int64_t bias_rs, bias_cs;
  AccOf<C> alpha, beta;
  bool use_bias;

  // acc[0..m) += av * row[0..m): the hot loop, written so compilers
  // vectorise it (no aliasing between the accumulator and the operand).
  static void axpy(AccOf<C>* __restrict acc, AccOf<C> av, const C* __restrict row, int64_t m) {
    for (int64_t j = 0; j < m; ++j) acc[j] += av * static_cast<AccOf<C>>(row[j]);
  }

  // Rows [r0, r1) of batch entry whose operands start at element offsets
  // a0 / b0 / o0 (offsets, not pointers: an empty operand may have no
  // storage at all).
  void rows(int64_t r0, int64_t r1, int64_t a0, int64_t b0, int64_t o0, AccOf<C>* acc) const {
    using A = AccOf<C>;
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t j = 0; j < m; ++j) acc[j] = A(0);
      for (int64_t kk = 0; kk < k; ++kk) {
        const A av = static_cast<A>(a.p[a0 + i * a.rs + kk * a.cs]);
        const C* brow = b.p + (b0 + kk * b.rs);
        if (b.cs == 1) {
          axpy(acc, av, brow, m);
        } else {
          for (int64_t j = 0; j < m; ++j) acc[j] += av * static_cast<A>(brow[j * b.cs]);
        }
      }
      C* orow = out.p + (o0 + i * out.rs);
      for (int64_t j = 0; j < m; ++j) {
        A r = alpha * acc[j];
        if (use_bias) r += beta * static_cast<A>(bias[i * bias_rs + j * bias_cs]);
        orow[j * out.cs] = static_cast<C>(r);  // integer: wraps modulo 2^bits; half: rounds
      }
    }
  }
};

// Runs `batches` independent products (entry b offsets each operand by its
// batch stride), splitting the flattened (batch, row) range into blocks.
template <typename C>
int32_t run_gemm(pteron_kernel_context* ctx, const char* op, const Gemm<C>& g, int64_t batches,
                 int64_t a_bs, int64_t b_bs, int64_t o_bs) {
  using A = AccOf<C>;
  const int64_t rows = batches * g.n;
  if (rows == 0 || g.m == 0) return PTERON_OK;
  const double work = double(rows) * double(g.k + 1) * double(g.m);
  int64_t blocks = 1;
  const int32_t threads = pteron_parallel_threads();
  if (threads > 1 && work >= 65536.0) {
    blocks = int64_t(threads) * 4;
    if (blocks > rows) blocks = rows;
  }
  if (static_cast<uint64_t>(blocks) * static_cast<uint64_t>(g.m) > (uint64_t(1) << 40) / sizeof(A))
    return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: output row too large", op);
  A* acc =
      static_cast<A*>(pteron_kernel_scratch(ctx, static_cast<size_t>(blocks * g.m) * sizeof(A)));
  if (!acc) return PTERON_ERROR_OUT_OF_MEMORY;

  struct Job {
    const Gemm<C>* g;
    A* acc;
    int64_t blocks, rows, a_bs, b_bs, o_bs;
  } job{&g, acc, blocks, rows, a_bs, b_bs, o_bs};

  auto body = [](void* user, int64_t blk0, int64_t blk1) {
    const Job& j = *static_cast<const Job*>(user);
    const int64_t n = j.g->n;
    A* acc_row = j.acc + blk0 * j.g->m;  // one accumulator row per call
    const int64_t r_end = blk1 * j.rows / j.blocks;
    int64_t r = blk0 * j.rows / j.blocks;
    while (r < r_end) {
      const int64_t bi = r / n;
      const int64_t i0 = r - bi * n;
      const int64_t i1 = r_end - bi * n < n ? r_end - bi * n : n;
      j.g->rows(i0, i1, bi * j.a_bs, bi * j.b_bs, bi * j.o_bs, acc_row);
      r = bi * n + i1;
    }
  };
  if (blocks == 1)
    body(&job, 0, 1);
  else
    pteron_parallel_for(0, blocks, 1, body, &job);
  return PTERON_OK;
}

int32_t mm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::mm.out";
  ProductOperands po;
  PTERON_CHECK_OK(read_product(Args{ctx, args, n, op}, ProductKind::mm, false, &po));
  pteron_tensor *self = po.a, *mat2 = po.b, *out = po.out;
  const int64_t* shape = po.shape;
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, self, mat2));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, 2));
  int32_t rc = PTERON_OK;
  dispatch_half(self->dtype, [&](auto t) {
    using C = decltype(t);
    if constexpr (!std::is_same_v<C, bool>) {
      Gemm<C> g{};
      g.n = self->sizes[0];
      g.k = self->sizes[1];
      g.m = mat2->sizes[1];
      g.a = {static_cast<const C*>(self->data), self->strides[0], self->strides[1]};
      g.b = {static_cast<const C*>(mat2->data), mat2->strides[0], mat2->strides[1]};
      g.out = {static_cast<C*>(out->data), out->strides[0], out->strides[1]};
      g.alpha = 1;
      g.use_bias = false;
      rc = run_gemm<C>(ctx, op, g, 1, 0, 0, 0);
    }
  });
  return rc;
}

int32_t bmm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::bmm.out";
  ProductOperands po;
  PTERON_CHECK_OK(read_product(Args{ctx, args, n, op}, ProductKind::bmm, false, &po));
  pteron_tensor *self = po.a, *mat2 = po.b, *out = po.out;
  const int64_t* shape = po.shape;
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, self, mat2));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, 3));
  int32_t rc = PTERON_OK;
  dispatch_half(self->dtype, [&](auto t) {
    using C = decltype(t);
    if constexpr (!std::is_same_v<C, bool>) {
      Gemm<C> g{};
      g.n = self->sizes[1];
      g.k = self->sizes[2];
      g.m = mat2->sizes[2];
      g.a = {static_cast<const C*>(self->data), self->strides[1], self->strides[2]};
      g.b = {static_cast<const C*>(mat2->data), mat2->strides[1], mat2->strides[2]};
      g.out = {static_cast<C*>(out->data), out->strides[1], out->strides[2]};
      g.alpha = 1;
      g.use_bias = false;
      rc = run_gemm<C>(ctx, op, g, self->sizes[0], self->strides[0], mat2->strides[0],
                       out->strides[0]);
    }
  });
  return rc;
}

int32_t addmm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::addmm.out";
  ProductOperands po;
  PTERON_CHECK_OK(read_product(Args{ctx, args, n, op}, ProductKind::addmm, false, &po));
  pteron_tensor *self = po.bias, *mat1 = po.a, *mat2 = po.b, *out = po.out;
  const Scalar &beta = po.beta, &alpha = po.alpha;
  const int64_t* shape = po.shape;
  const int64_t* bias_st = po.bias_strides;
  bool fits = true;
  dispatch_half(mat1->dtype, [&](auto t) {
    using C = decltype(t);
    fits = beta.fits<compute_type_t<C>>() && alpha.fits<compute_type_t<C>>();
  });
  if (!fits)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: beta or alpha cannot be converted to %s without overflow", op,
                dtype_name(mat1->dtype));
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, self, mat1, mat2));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, 2));
  int32_t rc = PTERON_OK;
  dispatch_half(mat1->dtype, [&](auto t) {
    using C = decltype(t);
    if constexpr (!std::is_same_v<C, bool>) {
      using A = AccOf<C>;
      Gemm<C> g{};
      g.n = mat1->sizes[0];
      g.k = mat1->sizes[1];
      g.m = mat2->sizes[1];
      g.a = {static_cast<const C*>(mat1->data), mat1->strides[0], mat1->strides[1]};
      g.b = {static_cast<const C*>(mat2->data), mat2->strides[0], mat2->strides[1]};
      g.out = {static_cast<C*>(out->data), out->strides[0], out->strides[1]};
      // alpha/beta as PyTorch converts them to the operand type
      using O = compute_type_t<C>;  // the 16-bit types take alpha / beta as float
      g.alpha = static_cast<A>(alpha.to<O>());
      g.beta = static_cast<A>(beta.to<O>());
      // beta == 0 ignores self entirely (NaN in self does not propagate)
      g.use_bias = beta.to<O>() != O(0) && numel(self) > 0;
      g.bias = static_cast<const C*>(self->data);
      g.bias_rs = bias_st[0];
      g.bias_cs = bias_st[1];
      rc = run_gemm<C>(ctx, op, g, 1, 0, 0, 0);
    }
  });
  return rc;
}

// linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out):
// out = input @ weight^T + bias; input [*, K], weight [N, K], bias [N] or one element,
// out [*, N]; one floating dtype for all (float16 / bfloat16 accumulate in double and round
// once, as mm). Leading dims of input and out that do not collapse into one stride are
// refused (an exported program's linear input is dense).
int32_t linear_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::linear.out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *input = nullptr, *weight = nullptr, *bias = nullptr, *out = nullptr;
  PTERON_CHECK_OK(tensor_arg(a, 0, "input", &input));
  PTERON_CHECK_OK(tensor_arg(a, 1, "weight", &weight));
  PTERON_CHECK_OK(opt_tensor_arg(a, 2, "bias", &bias));
  PTERON_CHECK_OK(tensor_arg(a, 3, "out", &out));
  const int32_t dt = input->dtype;
  if (dt != PTERON_DTYPE_FLOAT32 && dt != PTERON_DTYPE_FLOAT64 && dt != PTERON_DTYPE_FLOAT16 &&
      dt != PTERON_DTYPE_BFLOAT16)
    return unsupported_dtype(ctx, op, "input", dt);
  PTERON_CHECK_OK(expect_dtype(ctx, op, weight, "weight", dt));
  if (bias) PTERON_CHECK_OK(expect_dtype(ctx, op, bias, "bias", dt));
  PTERON_CHECK_OK(expect_dtype(ctx, op, out, "out", dt));
  if (input->dim < 1)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: 'input' must have rank >= 1", op);
  if (weight->dim != 2)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: 'weight' must have rank 2, has %d", op,
                static_cast<int>(weight->dim));
  const int32_t od = input->dim;
  const int64_t K = input->sizes[od - 1], N = weight->sizes[0];
  if (weight->sizes[1] != K)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: input has %lld features but weight expects %lld", op,
                static_cast<long long>(K), static_cast<long long>(weight->sizes[1]));
  if (bias && !(bias->dim <= 1 && (numel(bias) == N || numel(bias) == 1)))
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: 'bias' must have %lld elements (or one)",
                op, static_cast<long long>(N));
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, input, weight, bias));
  int64_t shape[PTERON_MAX_DIM];
  for (int32_t i = 0; i + 1 < od; ++i) shape[i] = input->sizes[i];
  shape[od - 1] = N;
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, od));
  int64_t in_rows = 0, in_rs = 0, out_rows = 0, out_rs = 0;
  if (!collapse(input, 0, od - 1, &in_rows, &in_rs) ||
      !collapse(out, 0, od - 1, &out_rows, &out_rs))
    return fail(ctx, PTERON_ERROR_NOT_SUPPORTED,
                "%s: the leading dims of 'input' or 'out' do not collapse into one stride", op);
  const int64_t M = numel(input) / (K ? K : 1);
  int32_t rc = PTERON_OK;
  dispatch_float_half(dt, [&](auto t) {
    using C = decltype(t);
    Gemm<C> g{};
    g.n = K ? M : numel(out) / (N ? N : 1);
    g.k = K;
    g.m = N;
    g.a = {static_cast<const C*>(input->data), in_rs, input->strides[od - 1]};
    // B = weight^T: element (k, j) is weight(j, k)
    g.b = {static_cast<const C*>(weight->data), weight->strides[1], weight->strides[0]};
    g.out = {static_cast<C*>(out->data), out_rs, out->strides[od - 1]};
    g.alpha = 1;
    g.beta = 1;
    g.use_bias = bias != nullptr;
    if (bias) {
      g.bias = static_cast<const C*>(bias->data);
      g.bias_rs = 0;
      g.bias_cs = (bias->dim == 1 && bias->sizes[0] == N && N > 1) ? bias->strides[0] : 0;
    }
    rc = run_gemm<C>(ctx, op, g, 1, 0, 0, 0);
  });
  return rc;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::mm", "out", nullptr, mm_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::bmm", "out", nullptr, bmm_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::addmm", "out", nullptr, addmm_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::linear", "out", nullptr, linear_out, PTERON_KERNEL_PRIORITY, 0})
