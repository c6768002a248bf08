// SPDX-License-Identifier: BSD-3-Clause
// graph_linear.cpp - kernels_optimized's linear pass (pteron/kernel.h, "graph passes"): a
// Linear layer of a program exported without a partitioner is two kernel calls,
//   permute_copy(W, [1, 0]) -> Wt          W: a constant [N, K] float32 weight
//   addmm(bias, x, Wt, beta=1, alpha=1)    (or mm(x, Wt): no bias), x [M, K] -> [M, N]
// and the transpose of a constant is paid at every execute (a 1000 x 1024 classifier's took
// ~1.7 ms). At method load the pair becomes one region: W and the bias packed once
// (pteron_cpu::PackedWeights), then out = x W^T + bias on the packed-weight GEMM, as the
// XNNPACK delegate runs a fully connected node. Wt must be read by nothing else. Results differ
// from addmm's by summation order only. A region whose x or out has another shape than at load
// (a dynamic batch) declines, and the two kernels run.
#include <cmath>
#include <cstring>
#include <memory>
#include <new>

#include "opt_util.h"
#include "pteron_cpu/gemm.h"

namespace {

using namespace pteron_opt;
namespace cpu = ::pteron_cpu;

struct Linear {
  pteron_value* x = nullptr;
  pteron_value* out = nullptr;
  int64_t m = 0, k = 0, n = 0;
  cpu::PackedWeights w;
};

void destroy_linear(void* p) { delete static_cast<Linear*>(p); }

bool dense2(const pteron_tensor* t, int64_t rows, int64_t cols) {
  return t && t->dtype == PTERON_DTYPE_FLOAT32 && t->dim == 2 && t->data &&
         t->dim_order[0] == 0 && t->dim_order[1] == 1 && t->sizes[0] == rows &&
         t->sizes[1] == cols;
}

int32_t run_linear(pteron_kernel_context*, void* state) {
  Linear& l = *static_cast<Linear*>(state);
  const pteron_tensor* x = l.x->u.tensor;
  pteron_tensor* y = l.out->u.tensor;
  if (!dense2(x, l.m, l.k) || !dense2(y, l.m, l.n)) return PTERON_REGION_DECLINED;
  cpu::gemm_packed(l.m, static_cast<const float*>(x->data), l.k, l.w,
                   static_cast<float*>(y->data), l.n, -INFINITY, INFINITY);
  return PTERON_OK;
}

pteron_tensor* tensor(pteron_value* v) {
  return v && v->tag == PTERON_VALUE_TENSOR ? v->u.tensor : nullptr;
}

bool is_one(const pteron_value* v) {
  return v && ((v->tag == PTERON_VALUE_INT && v->u.i == 1) ||
               (v->tag == PTERON_VALUE_DOUBLE && v->u.d == 1.0));
}

bool constant(const pteron_graph* g, pteron_value* v) {
  return (pteron_graph_value_flags(g, v) & PTERON_GRAPH_CONSTANT) != 0;
}

// Instructions i (permute_copy) and i + 1 (addmm or mm) as a Linear; null when they are not one.
std::unique_ptr<Linear> match(pteron_graph* g, size_t i) {
  const char* ov = nullptr;
  const char* name = pteron_graph_operator(g, i, &ov);
  if (!name || std::strcmp(name, "aten::permute_copy") != 0 || std::strcmp(ov, "out") != 0 ||
      pteron_graph_num_args(g, i) < 3)
    return nullptr;
  pteron_value* w = pteron_graph_arg(g, i, 0);
  pteron_value* dims = pteron_graph_arg(g, i, 1);
  pteron_value* wt = pteron_graph_arg(g, i, 2);
  const pteron_tensor* wtt = tensor(w);
  if (!wtt || !constant(g, w) || wtt->dim != 2 || !dims || dims->tag != PTERON_VALUE_INT_LIST ||
      dims->u.int_list.size != 2 || dims->u.int_list.data[0] != 1 ||
      dims->u.int_list.data[1] != 0)
    return nullptr;
  const int64_t n = wtt->sizes[0], k = wtt->sizes[1];
  if (!dense2(wtt, n, k) || !dense2(tensor(wt), k, n)) return nullptr;
  const char* ov2 = nullptr;
  const char* name2 = pteron_graph_operator(g, i + 1, &ov2);
  if (!name2 || std::strcmp(ov2, "out") != 0) return nullptr;
  const bool addmm = std::strcmp(name2, "aten::addmm") == 0;
  if (!addmm && std::strcmp(name2, "aten::mm") != 0) return nullptr;
  const size_t j = i + 1;
  if (pteron_graph_num_args(g, j) < (addmm ? 6u : 3u)) return nullptr;
  pteron_value* bias = addmm ? pteron_graph_arg(g, j, 0) : nullptr;
  pteron_value* x = pteron_graph_arg(g, j, addmm ? 1 : 0);
  pteron_value* mat2 = pteron_graph_arg(g, j, addmm ? 2 : 1);
  pteron_value* out = pteron_graph_arg(g, j, addmm ? 5 : 2);
  if (mat2 != wt || x == wt) return nullptr;
  if (addmm && (!is_one(pteron_graph_arg(g, j, 3)) || !is_one(pteron_graph_arg(g, j, 4))))
    return nullptr;
  const float* b = nullptr;
  if (bias) {
    const pteron_tensor* bt = tensor(bias);
    if (!bt || !constant(g, bias) || bt->dtype != PTERON_DTYPE_FLOAT32 || !bt->data) return nullptr;
    int64_t numel = 1;
    for (int32_t d = 0; d < bt->dim; ++d) numel *= bt->sizes[d];
    // [N] or [1, N]: the same row for every output row.
    if (numel != n || (bt->dim == 2 && bt->sizes[0] != 1) || bt->dim > 2) return nullptr;
    b = static_cast<const float*>(bt->data);
  }
  const pteron_tensor* xt = tensor(x);
  if (!xt || xt->dim != 2 || !dense2(xt, xt->sizes[0], k) || !dense2(tensor(out), xt->sizes[0], n))
    return nullptr;
  if (pteron_graph_uses_outside(g, wt, i, 2) > 0) return nullptr;  // someone else reads W^T
  std::unique_ptr<Linear> l(new (std::nothrow) Linear);
  if (!l) return nullptr;
  l->x = x, l->out = out, l->m = xt->sizes[0], l->k = k, l->n = n;
  // W is [N, K]: the packed B is its transpose (nk).
  if (!l->w.pack(k, n, static_cast<const float*>(wtt->data), k, true, b)) return nullptr;
  return l;
}

int32_t linear_pass(pteron_graph* g) {
  const size_t n = pteron_graph_size(g);
  for (size_t i = 0; i + 1 < n; ++i) {
    std::unique_ptr<Linear> l = match(g, i);
    if (!l) continue;
    // A range the runtime refuses (another pass's region) stays as it was.
    if (pteron_graph_replace(g, i, 2, "pteron_linear", &run_linear, l.release(),
                             &destroy_linear) == PTERON_OK)
      ++i;
  }
  return PTERON_OK;
}

const int kRegistered = [] {
  static const pteron_graph_pass pass = {sizeof(pteron_graph_pass), "kernels_optimized.linear",
                                         &linear_pass};
  pteron_register_graph_pass(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, &pass);
  return 0;
}();

}  // namespace
