// SPDX-License-Identifier: BSD-3-Clause
/* pteron/cuda.h - where PteronCudaBackend runs: component extension_cuda
 * (pteron_extension_cuda.dll / libpteron_extension_cuda.so, CMake target
 * pteron::extension_cuda), the companion of backend_cuda.
 *
 * The delegate runs on a device's primary context (cuDevicePrimaryCtxRetain),
 * so it shares the context with every other user of that device in the
 * process, PyTorch included. The settings below are process-wide and are read
 * when a method with PteronCudaBackend calls is loaded (pteron_method_load):
 * a loaded method keeps the device and stream it was loaded with.
 *
 * Nothing here needs a driver except pteron_cuda_driver_status(), which
 * loads it (once per process) as the delegate does. */
#ifndef PTERON_CUDA_H
#define PTERON_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "pteron/export.h"

#if defined(PTERON_BUILDING_EXTENSION_CUDA)
#define PTERON_CUDA_API PTERON_DLL_EXPORT
#else
#define PTERON_CUDA_API PTERON_DLL_IMPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The device later method loads use, by its CUDA ordinal (as
 * CUDA_VISIBLE_DEVICES numbers them; default 0). Returns PTERON_OK, or
 * PTERON_ERROR_INVALID_ARGUMENT for a negative ordinal. An ordinal the
 * machine does not have fails at method load (PTERON_ERROR_INVALID_ARGUMENT,
 * naming the device count). */
PTERON_CUDA_API int32_t pteron_cuda_set_device(int32_t ordinal);
PTERON_CUDA_API int32_t pteron_cuda_device(void);

/* The stream later method loads run on: a CUstream created on the chosen
 * device's primary context, which the application keeps alive while those
 * methods live; NULL (the default) gives each delegate call a stream of its
 * own. Each execute enqueues its copies and kernels on the stream and then
 * waits for it. Returns PTERON_OK. */
PTERON_CUDA_API int32_t pteron_cuda_set_stream(void* cu_stream);
PTERON_CUDA_API void* pteron_cuda_stream(void);

/* The CUDA release train of the embedded device code ("cu132", "cu134"), or
 * "" for a build without device code. Static storage. */
PTERON_CUDA_API const char* pteron_cuda_train(void);

/* Loads the CUDA driver as the delegate would (once per process) and says
 * whether it is usable: PTERON_OK, or the code method load would return
 * (PTERON_ERROR_MISSING_DELEGATE: no driver, a stub, no device, a driver
 * older than CUDA 13.0; PTERON_ERROR_DELEGATE_FAILED: another driver
 * failure). `message` (may be NULL) receives the reason, NUL-terminated and
 * truncated to `capacity` bytes ("" when usable); `devices` and
 * `cuda_version` (may be NULL) the device count and the driver's CUDA version
 * (1000 x major + 10 x minor, 0 when unknown). */
PTERON_CUDA_API int32_t pteron_cuda_driver_status(char* message, size_t capacity,
                                                  int32_t* devices, int32_t* cuda_version);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTERON_CUDA_H */
