// SPDX-License-Identifier: BSD-3-Clause
// matmul.cpp - optimized float32 matrix products: aten::addmm.out,
// aten::mm.out, aten::bmm.out, aten::linear.out.
//
// Each becomes one (batched) GEMM C = alpha * A * B + beta * bias run by the
// ISA-dispatched Eigen kernel (isa_kernels.cpp), split over the thread pool
// by batch, row and column blocks (opt_util.h, run_gemm). Row-major and
// column-major operands are used in place; an operand with no unit stride
// (possible only for a batch slice of a permuted 3-D tensor) is packed into
// scratch first, and an output with no unit stride is computed into scratch
// and scattered. Registered for float32 only (PTERON_OPT_KEY): other dtypes run
// kernels_portable's generic kernels.
#include <cstdint>

#include "matmul_checks.h"
#include "opt_util.h"
#include "arg_reading.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

// One operand of a (batched) product: element (b, i, j) at
// p[b * bs + i * rs + j * cs].
struct MatArg {
  const float* p;
  int64_t rows, cols, rs, cs, bs;
};

// out (batches x m x n, element strides o_bs, o_rs, o_cs) =
//   alpha * A @ B + beta * bias  (bias nullable; element (b, i, j) at
//   bias[b * bias_bs + i * bias_rs + j * bias_cs], strides 0 broadcast).
struct Product {
  int64_t batches = 1;
  MatArg a{}, b{};
  float* out = nullptr;
  int64_t o_bs = 0, o_rs = 0, o_cs = 0;
  const float* bias = nullptr;
  int64_t bias_bs = 0, bias_rs = 0, bias_cs = 0;
  float alpha = 1.0f, beta = 0.0f;
};

bool operand_ok(const MatArg& m) {
  Operand o;
  return as_operand(m.p, m.rows, m.cols, m.rs, m.cs, &o);
}

// Packs a batched operand densely ([batches, rows, cols]) into dst.
MatArg pack(const MatArg& m, int64_t batches, float* dst) {
  const int64_t sizes[3] = {batches, m.rows, m.cols};
  const int64_t src_st[3] = {m.bs, m.rs, m.cs};
  int64_t dst_st[3];
  dense_strides(sizes, 3, dst_st);
  copy_strided(m.p, src_st, dst, dst_st, sizes, 3);
  return MatArg{dst, m.rows, m.cols, dst_st[1], dst_st[2], dst_st[0]};
}

int32_t run_product(pteron_kernel_context* ctx, const char* op, Product pr) {
  const int64_t m = pr.a.rows, n = pr.b.cols, k = pr.a.cols;
  if (pr.batches == 0 || m == 0 || n == 0) return PTERON_OK;
  const bool pack_a = !operand_ok(pr.a), pack_b = !operand_ok(pr.b);
  const bool out_direct = n <= 1 || m <= 1 || pr.o_cs == 1 || pr.o_rs == 1;
  ScratchPlan plan;
  const size_t ia = plan.add(pack_a ? pr.batches * m * k : 0);
  const size_t ib = plan.add(pack_b ? pr.batches * k * n : 0);
  const size_t ic = plan.add(out_direct ? 0 : pr.batches * m * n);
  if (!plan.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
  if (pack_a) pr.a = pack(pr.a, pr.batches, plan.get(ia));
  if (pack_b) pr.b = pack(pr.b, pr.batches, plan.get(ib));

  float* c = pr.out;
  int64_t c_rs = pr.o_rs, c_cs = pr.o_cs, c_bs = pr.o_bs;
  if (!out_direct) {  // dense scratch result, scattered below
    c = plan.get(ic);
    c_bs = m * n;
    c_rs = n;
    c_cs = 1;
  }
  Operand oa, ob;
  as_operand(pr.a.p, m, k, pr.a.rs, pr.a.cs, &oa);
  as_operand(pr.b.p, k, n, pr.b.rs, pr.b.cs, &ob);

  BatchedGemm bg;
  bg.batches = pr.batches;
  bg.g.alpha = pr.alpha;
  bg.g.beta = pr.beta;
  bg.g.bias = pr.beta != 0.0f ? pr.bias : nullptr;
  bg.g.k = k;
  bg.c_bs = c_bs;
  bg.bias_bs = pr.bias_bs;
  // C row-major (unit column stride) as the kernel wants it; a column-major
  // C is computed as C^T = B^T A^T instead.
  const bool c_row = n <= 1 ? (m <= 1 || c_rs != 1 || c_cs == 1) : c_cs == 1;
  if (c_row) {
    bg.g.m = m;
    bg.g.n = n;
    bg.g.a = oa.p;
    bg.g.lda = oa.ld;
    bg.g.a_trans = oa.trans;
    bg.g.b = ob.p;
    bg.g.ldb = ob.ld;
    bg.g.b_trans = ob.trans;
    bg.g.c = c;
    bg.g.ldc = m <= 1 ? n : c_rs;
    bg.g.bias_rs = pr.bias_rs;
    bg.g.bias_cs = pr.bias_cs;
    bg.a_bs = pr.a.bs;
    bg.b_bs = pr.b.bs;
  } else {
    const Operand ta = transposed(ob), tb = transposed(oa);
    bg.g.m = n;
    bg.g.n = m;
    bg.g.a = ta.p;
    bg.g.lda = ta.ld;
    bg.g.a_trans = ta.trans;
    bg.g.b = tb.p;
    bg.g.ldb = tb.ld;
    bg.g.b_trans = tb.trans;
    bg.g.c = c;
    bg.g.ldc = n <= 1 ? m : c_cs;
    bg.g.bias_rs = pr.bias_cs;
    bg.g.bias_cs = pr.bias_rs;
    bg.a_bs = pr.b.bs;
    bg.b_bs = pr.a.bs;
  }
  PTERON_CHECK_OK(run_gemm(ctx, op, bg));
  if (!out_direct) {
    const int64_t sizes[3] = {pr.batches, m, n};
    const int64_t src_st[3] = {m * n, n, 1};
    const int64_t dst_st[3] = {pr.o_bs, pr.o_rs, pr.o_cs};
    copy_strided(c, src_st, pr.out, dst_st, sizes, 3);
  }
  return PTERON_OK;
}

// ---- argument checks (as kernels_portable's, for the float32 case) ---------

int32_t check_float32(pteron_kernel_context* ctx, const char* op, const char* name,
                      const pteron_tensor* t) {
  if (t->dtype != PTERON_DTYPE_FLOAT32) return unsupported_dtype(ctx, op, name, t->dtype);
  return PTERON_OK;
}

MatArg mat2d(const pteron_tensor* t) {
  return MatArg{static_cast<const float*>(t->data),
                t->sizes[0],
                t->sizes[1],
                t->strides[0],
                t->strides[1],
                0};
}

// ---- operators --------------------------------------------------------------

// mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
int32_t mm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::mm.out";
  ProductOperands po;
  PTERON_CHECK_OK(read_product(Args{ctx, args, n, op}, ProductKind::mm, true, &po));
  pteron_tensor *self = po.a, *mat2 = po.b, *out = po.out;
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, po.shape, 2));
  Product pr;
  pr.a = mat2d(self);
  pr.b = mat2d(mat2);
  pr.out = static_cast<float*>(out->data);
  pr.o_rs = out->strides[0];
  pr.o_cs = out->strides[1];
  return run_product(ctx, op, pr);
}

// bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
int32_t bmm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::bmm.out";
  ProductOperands po;
  PTERON_CHECK_OK(read_product(Args{ctx, args, n, op}, ProductKind::bmm, true, &po));
  pteron_tensor *self = po.a, *mat2 = po.b, *out = po.out;
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, po.shape, 3));
  Product pr;
  pr.batches = self->sizes[0];
  pr.a = MatArg{static_cast<const float*>(self->data),
                self->sizes[1],
                self->sizes[2],
                self->strides[1],
                self->strides[2],
                self->strides[0]};
  pr.b = MatArg{static_cast<const float*>(mat2->data),
                mat2->sizes[1],
                mat2->sizes[2],
                mat2->strides[1],
                mat2->strides[2],
                mat2->strides[0]};
  pr.out = static_cast<float*>(out->data);
  pr.o_bs = out->strides[0];
  pr.o_rs = out->strides[1];
  pr.o_cs = out->strides[2];
  return run_product(ctx, op, pr);
}

// addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1,
//           Scalar alpha=1, Tensor(a!) out)
int32_t addmm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::addmm.out";
  ProductOperands po;
  PTERON_CHECK_OK(read_product(Args{ctx, args, n, op}, ProductKind::addmm, true, &po));
  pteron_tensor *self = po.bias, *mat1 = po.a, *mat2 = po.b, *out = po.out;
  const Scalar &beta = po.beta, &alpha = po.alpha;
  const int64_t* bias_st = po.bias_strides;
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, po.shape, 2));
  Product pr;
  pr.a = mat2d(mat1);
  pr.b = mat2d(mat2);
  pr.out = static_cast<float*>(out->data);
  pr.o_rs = out->strides[0];
  pr.o_cs = out->strides[1];
  pr.alpha = alpha.to<float>();
  pr.beta = beta.to<float>();
  // beta == 0 ignores self entirely (NaN in self does not propagate)
  if (pr.beta != 0.0f && numel(self) > 0) {
    pr.bias = static_cast<const float*>(self->data);
    pr.bias_rs = bias_st[0];
    pr.bias_cs = bias_st[1];
  } else {
    pr.beta = 0.0f;
  }
  return run_product(ctx, op, pr);
}

// linear.out(Tensor input, Tensor weight, Tensor? bias=None, *,
//            Tensor(a!) out): out = input @ weight^T + bias, input [*, K],
// weight [N, K], bias [N] (or one element), out [*, N].
int32_t linear_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::linear.out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *input = nullptr, *weight = nullptr, *bias = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "input", &input));
  PTERON_CHECK_OK(a.tensor(1, "weight", &weight));
  PTERON_CHECK_OK(a.opt_tensor(2, "bias", &bias));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(check_float32(ctx, op, "input", input));
  PTERON_CHECK_OK(same_dtype(ctx, op, "input", input, "weight", weight));
  if (bias) PTERON_CHECK_OK(same_dtype(ctx, op, "input", input, "bias", bias));
  PTERON_CHECK_OK(same_dtype(ctx, op, "input", input, "out", out));
  PTERON_CHECK_OK(check_tensor(ctx, op, "input", input));
  PTERON_CHECK_OK(check_tensor(ctx, op, "weight", weight));
  if (bias) PTERON_CHECK_OK(check_tensor(ctx, op, "bias", bias));
  if (input->dim < 1)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: 'input' must have rank >= 1", op);
  PTERON_CHECK_OK(check_rank(ctx, op, "weight", weight, 2));
  const int64_t K = input->sizes[input->dim - 1], N = weight->sizes[0];
  if (weight->sizes[1] != K)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: input has %lld features but weight expects %lld", op,
                static_cast<long long>(K), static_cast<long long>(weight->sizes[1]));
  if (bias && !(bias->dim <= 1 && (numel(bias) == N || numel(bias) == 1)))
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: 'bias' must have %lld elements (or one)", op,
                static_cast<long long>(N));
  int64_t shape[PTERON_MAX_DIM];
  const int32_t od = input->dim;
  for (int32_t i = 0; i + 1 < od; ++i) shape[i] = input->sizes[i];
  shape[od - 1] = N;
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, od));

  // input as an M x K matrix and out as M x N, when their leading dims
  // collapse to one stride; otherwise through dense scratch copies.
  int64_t M = 1, in_rs = K, out_rs = N;
  const bool in_flat = collapse(input, 0, od - 1, &M, &in_rs);
  int64_t m_out = 1;
  const bool out_flat = collapse(out, 0, od - 1, &m_out, &out_rs);
  if (M == 0 || N == 0) return PTERON_OK;
  ScratchPlan plan;
  const size_t ii = plan.add(in_flat ? 0 : M * K);
  const size_t io = plan.add(out_flat ? 0 : M * N);
  if (!plan.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
  int64_t dense_in[PTERON_MAX_DIM], dense_out[PTERON_MAX_DIM];
  dense_strides(input->sizes, od, dense_in);
  dense_strides(out->sizes, od, dense_out);
  Product pr;
  if (in_flat) {
    pr.a = MatArg{static_cast<const float*>(input->data), M, K, in_rs, input->strides[od - 1], 0};
  } else {
    float* d = plan.get(ii);
    copy_strided(static_cast<const float*>(input->data), input->strides, d, dense_in, input->sizes,
                 od);
    pr.a = MatArg{d, M, K, K, 1, 0};
  }
  // B = weight^T: element (k, n) is weight(n, k).
  pr.b = MatArg{
      static_cast<const float*>(weight->data), K, N, weight->strides[1], weight->strides[0], 0};
  if (out_flat) {
    pr.out = static_cast<float*>(out->data);
    pr.o_rs = out_rs;
    pr.o_cs = out->strides[od - 1];
  } else {
    pr.out = plan.get(io);
    pr.o_rs = N;
    pr.o_cs = 1;
  }
  if (bias) {
    pr.bias = static_cast<const float*>(bias->data);
    pr.beta = 1.0f;
    pr.bias_rs = 0;
    pr.bias_cs = (bias->dim == 1 && bias->sizes[0] == N && N > 1) ? bias->strides[0] : 0;
  }
  PTERON_CHECK_OK(run_product(ctx, op, pr));
  if (!out_flat)
    copy_strided(pr.out, dense_out, static_cast<float*>(out->data), out->strides, out->sizes, od);
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::mm", "out", PTERON_OPT_KEY, mm_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::bmm", "out", PTERON_OPT_KEY, bmm_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::addmm", "out", PTERON_OPT_KEY, addmm_out, PTERON_KERNEL_PRIORITY,
                         0},
                        {"aten::linear", "out", PTERON_OPT_KEY, linear_out, PTERON_KERNEL_PRIORITY,
                         0})
