// SPDX-License-Identifier: BSD-3-Clause
// backend.cpp - the PteronCudaBackend delegate (component backend_cuda).
//
// init, in this order, each failure an error status with a message:
//   1. the blob (graph.cpp) and its launches (plan.cpp):
//      PTERON_ERROR_INVALID_PROGRAM when malformed, PTERON_ERROR_NOT_SUPPORTED
//      for a kernel or dtype this pteron does not have;
//   2. the constants, from the program's named data;
//   3. the driver (driver.cpp): no driver, a stub, no device, a driver older
//      than CUDA 13.0 (PTERON_ERROR_MISSING_DELEGATE: the program cannot run
//      on this machine; CPU-only programs still run with this library loaded);
//   4. the device (device.cpp): the embedded fatbin as a module (no device
//      code in this build, or none this GPU can run: PTERON_ERROR_NOT_SUPPORTED
//      naming the train, the GPU's architecture and the driver's version),
//      device memory, the constants copied once.
// execute copies the inputs in, runs the launches and copies the outputs out.
// The driver is loaded on the first init, never when the library loads.
#include <cstdio>
#include <memory>
#include <new>
#include <string>

#include "device.h"
#include "driver.h"
#include "graph.h"
#include "plan.h"
#include "pteron/kernel.h"
#include "settings.h"

namespace pteron {
namespace cuda {
namespace {

constexpr const char* kId = "PteronCudaBackend";

int32_t failf(pteron_kernel_context* ctx, int32_t code, const std::string& msg) {
  return pteron_kernel_fail(ctx, code, msg.c_str());
}

int32_t is_available() { return 1; }  // the driver is checked by init, with a message

struct Delegate {
  Graph g;
  DeviceGraph* dev = nullptr;
  ~Delegate() { device_release(dev); }
};

int32_t init(pteron_kernel_context* ctx, const void* processed, size_t size,
             const pteron_compile_spec*, size_t, void** handle) {
  *handle = nullptr;
  std::unique_ptr<Delegate> d(new (std::nothrow) Delegate);
  if (!d) return pteron_kernel_fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, nullptr);
  std::string err;
  if (!parse_graph(static_cast<const uint8_t*>(processed), size, &d->g, &err))
    return failf(ctx, PTERON_ERROR_INVALID_PROGRAM, err);
  std::vector<Launch> launches;
  int32_t code = PTERON_OK;
  if (!plan_graph(d->g, &launches, &code, &err)) return failf(ctx, code, err);
  // The constants' bytes, from the program's named data (valid while it lives).
  std::vector<const void*> constants;
  if (!constant_bytes(ctx, d->g, &constants, &err)) return failf(ctx, PTERON_ERROR_INVALID_PROGRAM, err);
  code = device_prepare(d->g, launches, constants, configured_device(), configured_stream(),
                        &d->dev, &err);
  if (code != PTERON_OK) return failf(ctx, code, err);
  *handle = d.release();
  return PTERON_OK;
}

int32_t execute(pteron_kernel_context* ctx, void* handle, pteron_value* const* args, size_t n) {
  Delegate& d = *static_cast<Delegate*>(handle);
  std::string err;
  const int32_t code = device_execute(d.dev, args, n, &err);
  return code == PTERON_OK ? code : failf(ctx, code, err);
}

void destroy(void* handle) { delete static_cast<Delegate*>(handle); }

const pteron_backend_interface kInterface = {
    sizeof(pteron_backend_interface), kId, &is_available, &init, &execute, &destroy};

struct Registration {
  Registration() { pteron_register_backend(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, &kInterface); }
} registration;

}  // namespace
}  // namespace cuda
}  // namespace pteron
