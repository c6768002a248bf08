// SPDX-License-Identifier: BSD-3-Clause
// abi_mismatch.cpp - a component deliberately built for another ABI version
// (PTERON_TEST_ABI_VERSION). The runtime must refuse its kernels and its
// backend, naming both versions. Built and loaded by tests/test_abi.py.
#include "pteron/kernel.h"

#ifndef PTERON_TEST_ABI_VERSION
#define PTERON_TEST_ABI_VERSION (PTERON_ABI_VERSION + 1u)
#endif

namespace {
int32_t never_called(pteron_kernel_context* ctx, pteron_value* const*, size_t) {
  return pteron_kernel_fail(ctx, PTERON_ERROR_INTERNAL, "must not be registered");
}
int32_t init(pteron_kernel_context*, const void*, size_t, const pteron_compile_spec*, size_t,
             void**) {
  return PTERON_ERROR_INTERNAL;
}
int32_t execute(pteron_kernel_context*, void*, pteron_value* const*, size_t) {
  return PTERON_ERROR_INTERNAL;
}

const int registered = [] {
  static const pteron_kernel_registration k[] = {
      {"test::abi_probe", "out", nullptr, never_called, 1000, 0}};
  pteron_register_kernels(PTERON_TEST_ABI_VERSION, "abi_mismatch", k, 1);
  static const pteron_backend_interface b = {
      sizeof(pteron_backend_interface), "AbiProbeBackend", nullptr, init, execute, nullptr};
  pteron_register_backend(PTERON_TEST_ABI_VERSION, "abi_mismatch", &b);
  return 0;
}();
}  // namespace

extern "C" PTERON_DLL_EXPORT int pteron_anchor_abi_mismatch(void) { return registered + 1; }
