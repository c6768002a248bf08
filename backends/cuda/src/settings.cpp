// SPDX-License-Identifier: BSD-3-Clause
// settings.cpp - backend_cuda's process-wide settings (the device ordinal and
// the application's stream that extension_cuda sets) and the hooks that give
// extension_cuda access to them and to the driver's state (hooks.h).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "device.h"
#include "driver.h"
#include "hooks.h"
#include "settings.h"

namespace pteron {
namespace cuda {
namespace {

std::atomic<int32_t> g_device{0};
std::atomic<void*> g_stream{nullptr};

void set_device(int32_t ordinal) { g_device.store(ordinal); }
int32_t get_device() { return g_device.load(); }
void set_stream(void* s) { g_stream.store(s); }
void* get_stream() { return g_stream.load(); }
const char* train() { return embedded_train(); }

int32_t driver_status(char* message, size_t capacity, int32_t* devices, int32_t* version) {
  const DriverState& d = driver();
  if (message && capacity) {
    const size_t n = std::min(capacity - 1, d.message.size());
    std::memcpy(message, d.message.data(), n);
    message[n] = '\0';
  }
  if (devices) *devices = d.devices;
  if (version) *version = d.version;
  return d.code;
}

const pteron_cuda_hooks kHooks = {sizeof(pteron_cuda_hooks), PTERON_CUDA_HOOKS_VERSION,
                                  &set_device, &get_device, &set_stream, &get_stream, &train,
                                  &driver_status};

}  // namespace

int32_t configured_device() { return get_device(); }
void* configured_stream() { return get_stream(); }

}  // namespace cuda
}  // namespace pteron

extern "C" const pteron_cuda_hooks* pteron_backend_cuda_hooks(uint32_t version) {
  return version == PTERON_CUDA_HOOKS_VERSION ? &pteron::cuda::kHooks : nullptr;
}
