// SPDX-License-Identifier: BSD-3-Clause
/* pteron/testing.h - the runtime's TEST-ONLY entry points.
 *
 * Not part of the application API: pteron.h does not include this header,
 * applications must not call it, and it may change in any release without
 * an ABI version bump. They exist so that the C++ kernel tests
 * (tests/kernels/) can call a kernel the real registry holds, with the real
 * runtime's pteron_kernel_fail, pteron_tensor_resize, pteron_kernel_scratch
 * and pteron_parallel_for behind it, without building a program for every
 * case, and so that the fuzz targets (tests/fuzz/) can hand a delegate blob
 * to its backend alone. The executor is not involved: no method or memory plan.
 */
#ifndef PTERON_TESTING_H
#define PTERON_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "pteron/export.h"
#include "pteron/kernel.h"
#include "pteron/pteron.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Calls the kernel the registry selects for operator `name` (e.g.
 * "aten::add") and `overload` (e.g. "out", "" for none), as method load
 * selects it: among the kernels registered under that name and overload,
 * one whose key equals `key` (e.g. "dtype=6") beats a generic one (key NULL
 * or ""), then the higher priority wins. `key` NULL or "" selects among the
 * generic kernels only.
 *
 * args[0..num_args) are passed to the kernel as they are (schema order, out
 * arguments last, optionally one more value for the return); the kernel
 * reads and writes the tensors they point to. The kernel gets a fresh
 * context: its scratch memory lives until the call returns.
 *
 * Returns the kernel's return value, or
 *  - PTERON_ERROR_INVALID_ARGUMENT: name or overload NULL, or args NULL with
 *    num_args > 0;
 *  - PTERON_ERROR_MISSING_OPERATOR: no kernel registered for them.
 * message (optional, out): when not NULL and message_capacity > 0, receives
 *   the message the kernel recorded with pteron_kernel_fail ("" if none),
 *   truncated to message_capacity - 1 bytes and NUL-terminated.
 * recorded_code (optional, out): when not NULL, receives the code the
 *   kernel recorded with pteron_kernel_fail (PTERON_OK if it recorded none),
 *   so a test can check that a failing kernel recorded what it returned. */
PTERON_API int32_t pteron_testing_call_kernel(const char* name, const char* overload,
                                              const char* key, pteron_value* const* args,
                                              size_t num_args, char* message,
                                              size_t message_capacity, int32_t* recorded_code);

/* Hands `processed_size` bytes at `processed` to the `init` of the backend
 * registered as `backend_id`, as method load hands a delegate its blob, with
 * the compile specs specs[0..num_specs) and a fresh context. The backend's
 * pteron_named_data_get looks a key up in programs[0..num_programs) in
 * order (NULL entries skipped) and is PTERON_ERROR_NOT_FOUND when none holds
 * it. A handle the backend returns is destroyed before the call returns. It
 * exists for the delegate blob readers' fuzz targets (tests/fuzz/).
 * Returns init's return value, or
 *  - PTERON_ERROR_INVALID_ARGUMENT: backend_id NULL, or programs, processed
 *    or specs NULL with a nonzero count or size;
 *  - PTERON_ERROR_MISSING_DELEGATE: no backend registered under that id, or
 *    it says it is not available.
 * message / message_capacity: as for pteron_testing_call_kernel (the
 * message the backend recorded with pteron_kernel_fail). */
PTERON_API int32_t pteron_testing_backend_init(const char* backend_id,
                                               const pteron_program* const* programs,
                                               size_t num_programs, const void* processed,
                                               size_t processed_size,
                                               const pteron_compile_spec* specs, size_t num_specs,
                                               char* message, size_t message_capacity);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTERON_TESTING_H */
