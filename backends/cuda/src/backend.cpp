// SPDX-License-Identifier: BSD-3-Clause
// backend.cpp - the PteronCudaBackend delegate (component backend_cuda).
//
// init, in this order, each failure an error status with a message:
//   1. the blob (graph.cpp) and its launches (plan.cpp):
//      PTERON_ERROR_INVALID_PROGRAM when malformed, PTERON_ERROR_NOT_SUPPORTED
//      for a kernel or dtype this pteron does not have;
//   2. the driver (driver.cpp): no driver, a stub, no device, a driver older
//      than CUDA 13.0 (PTERON_ERROR_MISSING_DELEGATE: the program cannot run
//      on this machine; CPU-only programs still run with this library loaded);
//   3. the device code: this build embeds none yet (no CUDA train's fatbin),
//      so a usable driver ends in PTERON_ERROR_NOT_SUPPORTED naming the
//      kernels the graph needs.
// The driver is loaded on the first init, never when the library loads.
#include <cstdio>
#include <memory>
#include <new>
#include <set>
#include <string>

#include "driver.h"
#include "graph.h"
#include "plan.h"
#include "pteron/kernel.h"

namespace pteron {
namespace cuda {
namespace {

constexpr const char* kId = "PteronCudaBackend";

int32_t failf(pteron_kernel_context* ctx, int32_t code, const std::string& msg) {
  return pteron_kernel_fail(ctx, code, msg.c_str());
}

int32_t is_available() { return 1; }  // the driver is checked by init, with a message

int32_t init(pteron_kernel_context* ctx, const void* processed, size_t size,
             const pteron_compile_spec*, size_t, void** handle) {
  *handle = nullptr;
  Graph g;
  std::string err;
  if (!parse_graph(static_cast<const uint8_t*>(processed), size, &g, &err))
    return failf(ctx, PTERON_ERROR_INVALID_PROGRAM, err);
  std::vector<Launch> launches;
  int32_t code = PTERON_OK;
  if (!plan_graph(g, &launches, &code, &err)) return failf(ctx, code, err);
  const DriverState& d = driver();
  if (d.code != PTERON_OK) return failf(ctx, d.code, std::string(kId) + ": " + d.message);
  std::set<std::string> kernels;
  for (const Launch& l : launches) kernels.insert(l.name);
  std::string names;
  for (const std::string& k : kernels) names += (names.empty() ? "" : ", ") + k;
  return failf(ctx, PTERON_ERROR_NOT_SUPPORTED,
               std::string(kId) + ": this build of backend_cuda has no device code (it was built "
               "without a CUDA train), so it cannot run the kernels this graph needs: " + names);
}

int32_t execute(pteron_kernel_context* ctx, void*, pteron_value* const*, size_t) {
  return pteron_kernel_fail(ctx, PTERON_ERROR_INTERNAL, "PteronCudaBackend: execute without a delegate handle");
}

void destroy(void*) {}

const pteron_backend_interface kInterface = {
    sizeof(pteron_backend_interface), kId, &is_available, &init, &execute, &destroy};

struct Registration {
  Registration() { pteron_register_backend(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, &kInterface); }
} registration;

}  // namespace
}  // namespace cuda
}  // namespace pteron
