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
  std::vector<float*> host;
  std::string err;
  const int32_t code = external_data(r.g, args, n, &host, &err);
  if (code != PTERON_OK) return fail(ctx, code, err);
  std::vector<uint64_t> address(r.g.values.size());
  for (size_t i = 0; i < address.size(); ++i)
    address[i] = uint64_t(uintptr_t(host[i] ? host[i] : r.owned[i].data()));
  for (const Launch& l : r.launches) {
    if (l.threads && !cpu_grid::launch(l.kernel, l.grid, l.block, launch_args(l, address)->params))
      return fail(ctx, PTERON_ERROR_INTERNAL, std::string("PteronCudaBackend: ") +
                  kernel_name(l.kernel) + ": the launch's block shape does not fit the kernel");
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
