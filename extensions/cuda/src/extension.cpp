// SPDX-License-Identifier: BSD-3-Clause
// extension.cpp - component extension_cuda: pteron/cuda.h over backend_cuda's
// hooks (backends/cuda/src/hooks.h).
#include "pteron/cuda.h"

#include "../../../backends/cuda/src/hooks.h"
#include "pteron/types.h"

namespace {

const pteron_cuda_hooks* hooks() {
  static const pteron_cuda_hooks* h = pteron_backend_cuda_hooks(PTERON_CUDA_HOOKS_VERSION);
  return h;
}

}  // namespace

extern "C" {

int32_t pteron_cuda_set_device(int32_t ordinal) {
  if (ordinal < 0 || !hooks()) return PTERON_ERROR_INVALID_ARGUMENT;
  hooks()->set_device(ordinal);
  return PTERON_OK;
}

int32_t pteron_cuda_device(void) { return hooks() ? hooks()->device() : 0; }

int32_t pteron_cuda_set_stream(void* cu_stream) {
  if (!hooks()) return PTERON_ERROR_INTERNAL;
  hooks()->set_stream(cu_stream);
  return PTERON_OK;
}

void* pteron_cuda_stream(void) { return hooks() ? hooks()->stream() : nullptr; }

const char* pteron_cuda_train(void) { return hooks() ? hooks()->train() : ""; }

int32_t pteron_cuda_driver_status(char* message, size_t capacity, int32_t* devices,
                                  int32_t* cuda_version) {
  if (!hooks()) {
    if (message && capacity) message[0] = '\0';
    return PTERON_ERROR_INTERNAL;
  }
  return hooks()->driver_status(message, capacity, devices, cuda_version);
}

}  // extern "C"
