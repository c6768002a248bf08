// SPDX-License-Identifier: BSD-3-Clause
// hooks.h - what backend_cuda offers extension_cuda (extensions/cuda), its
// companion component: the process-wide settings PteronCudaBackend reads at
// each method load, and the driver's state. Internal to the two components;
// applications use pteron/cuda.h.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "pteron/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PTERON_BUILDING_BACKEND_CUDA)
#define PTERON_CUDA_HOOKS_API PTERON_DLL_EXPORT
#else
#define PTERON_CUDA_HOOKS_API PTERON_DLL_IMPORT
#endif

#define PTERON_CUDA_HOOKS_VERSION 1u

typedef struct pteron_cuda_hooks {
  uint32_t struct_size;  /* sizeof(pteron_cuda_hooks) */
  uint32_t version;      /* PTERON_CUDA_HOOKS_VERSION */
  /* The device ordinal later method loads use (>= 0; checked at method load). */
  void (*set_device)(int32_t ordinal);
  int32_t (*device)(void);
  /* A CUstream later method loads keep for their executions, or NULL: each
   * delegate then makes a stream of its own. */
  void (*set_stream)(void* stream);
  void* (*stream)(void);
  /* "cu134", or "" without device code. */
  const char* (*train)(void);
  /* Loads the driver once; its pteron_error code (0: usable), its message
   * copied into message[0..capacity) (NUL-terminated, truncated), and the
   * device count and driver version (CUDA x 1000 + minor x 10) through the
   * pointers when not NULL. */
  int32_t (*driver_status)(char* message, size_t capacity, int32_t* devices, int32_t* version);
} pteron_cuda_hooks;

/* Exported by backend_cuda. NULL when version is not PTERON_CUDA_HOOKS_VERSION. */
PTERON_CUDA_HOOKS_API const pteron_cuda_hooks* pteron_backend_cuda_hooks(uint32_t version);

#ifdef __cplusplus
}
#endif
