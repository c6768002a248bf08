// SPDX-License-Identifier: BSD-3-Clause
// cpu_reference.cpp - a CPU stand-in for PteronCudaBackend, for tests only
// (never shipped): it registers the same delegate id, reads the same blob
// (graph.cpp), makes the same launches (plan.cpp) and runs each kernel's
// body (kernels.h) over the same index space on the CPU, one element at a
// time. Linked into pteron-test-cuda-reference (pteron-run's source, without
// backend_cuda), it runs CUDA-lowered programs end to end, so
// tests/test_cuda.py checks the kernels' logic against eager PyTorch where
// there is no GPU.
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "../src/graph.h"
#include "../src/plan.h"
#include "cpu_grid.h"
#include "pteron/kernel.h"

namespace pteron {
namespace cuda {
namespace {

struct Reference {
  Graph g;
  std::vector<Launch> launches;
  std::vector<std::vector<float>> owned;  // per value: constants and internals
  std::vector<float*> ptr;                // per value, for the current execute
};

int32_t fail(pteron_kernel_context* ctx, int32_t code, const std::string& m) {
  return pteron_kernel_fail(ctx, code, m.c_str());
}

int32_t is_available() { return 1; }

int32_t init(pteron_kernel_context* ctx, const void* blob, size_t size, const pteron_compile_spec*,
             size_t, void** handle) {
  *handle = nullptr;
  std::unique_ptr<Reference> r(new (std::nothrow) Reference);
  if (!r) return pteron_kernel_fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, nullptr);
  std::string err;
  if (!parse_graph(static_cast<const uint8_t*>(blob), size, &r->g, &err))
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, err);
  int32_t code = PTERON_OK;
  if (!plan_graph(r->g, &r->launches, &code, &err)) return fail(ctx, code, err);
  const size_t nv = r->g.values.size();
  std::vector<const void*> constants;
  if (!constant_bytes(ctx, r->g, &constants, &err)) return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, err);
  r->owned.resize(nv);
  r->ptr.assign(nv, nullptr);
  for (size_t i = 0; i < nv; ++i) {
    const Value& v = r->g.values[i];
    if (v.external >= 0) continue;
    r->owned[i].assign(size_t(v.numel), 0.0f);
    if (constants[i]) std::memcpy(r->owned[i].data(), constants[i], size_t(v.numel) * sizeof(float));
  }
  *handle = r.release();
  return PTERON_OK;
}

int32_t execute(pteron_kernel_context* ctx, void* handle, pteron_value* const* args, size_t n) {
  Reference& r = *static_cast<Reference*>(handle);
  if (n < r.g.num_externals)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "PteronCudaBackend: " + std::to_string(n) +
                " arguments, the graph needs " + std::to_string(r.g.num_externals));
  for (size_t i = 0; i < r.g.values.size(); ++i) {
    const Value& v = r.g.values[i];
    if (v.external < 0) {
      r.ptr[i] = r.owned[i].data();
      continue;
    }
    const pteron_value* a = args[v.external];
    if (!a || a->tag != PTERON_VALUE_TENSOR || !a->u.tensor)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "PteronCudaBackend: argument " + std::to_string(v.external) + " is not a tensor");
    const pteron_tensor* t = a->u.tensor;
    bool same = t->dtype == PTERON_DTYPE_FLOAT32 && size_t(t->dim) == v.shape.size() && t->data;
    for (int32_t d = 0; same && d < t->dim; ++d)
      same = t->sizes[d] == v.shape[d] && t->dim_order[d] == d;
    if (!same)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "PteronCudaBackend: argument " + std::to_string(v.external) +
                      " is not the contiguous float32 tensor the graph was lowered for");
    r.ptr[i] = static_cast<float*>(t->data);
  }
  for (const Launch& l : r.launches) {
    uint64_t inputs[k::kMaxCatInputs];
    for (size_t j = 0; j < l.inputs.size() && j < size_t(k::kMaxCatInputs); ++j)
      inputs[j] = uint64_t(uintptr_t(r.ptr[l.inputs[j]]));
    const int32_t mode = l.kernel == KernelId::Gemm ? l.p.gemm.mode : 0;
    LaunchArgs args(l.kernel, &l.p, inputs, l.inputs.size(), mode, uint64_t(uintptr_t(r.ptr[l.output])));
    if (l.threads && !cpu_grid::launch(l.kernel, l.grid, l.block, args.params))
      return fail(ctx, PTERON_ERROR_INTERNAL, std::string("PteronCudaBackend: ") + l.name +
                  ": the launch's block shape does not fit the kernel");
  }
  return PTERON_OK;
}

void destroy(void* handle) { delete static_cast<Reference*>(handle); }

const pteron_backend_interface kInterface = {
    sizeof(pteron_backend_interface), "PteronCudaBackend", &is_available, &init, &execute, &destroy};

struct Registration {
  Registration() { pteron_register_backend(PTERON_ABI_VERSION, "cuda_cpu_reference", &kInterface); }
} registration;

}  // namespace
}  // namespace cuda
}  // namespace pteron
