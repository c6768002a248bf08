// SPDX-License-Identifier: BSD-3-Clause
// testing.cpp - pteron_testing_call_kernel (pteron/testing.h), the runtime's
// one test-only entry point: one kernel call through the real registry and a
// real kernel context, with no program behind it.
#include <cstring>
#include <string>

#include "method.h"
#include "pteron/testing.h"

namespace {

void copy_message(const std::string& m, char* out, size_t cap) {
  if (!out || cap == 0) return;
  const size_t n = m.size() < cap - 1 ? m.size() : cap - 1;
  if (n) std::memcpy(out, m.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" int32_t pteron_testing_call_kernel(const char* name, const char* overload,
                                              const char* key, pteron_value* const* args,
                                              size_t num_args, char* message,
                                              size_t message_capacity, int32_t* recorded_code) {
  if (recorded_code) *recorded_code = PTERON_OK;
  if (!name || !overload || (!args && num_args > 0)) {
    copy_message("pteron_testing_call_kernel: name, overload and args must not be NULL", message,
                 message_capacity);
    return PTERON_ERROR_INVALID_ARGUMENT;
  }
  pteron_kernel_fn fn = pteron::find_kernel(name, overload, key ? key : "");
  if (!fn) {
    copy_message(pteron::format("no kernel registered for %s.%s", name, overload), message,
                 message_capacity);
    return PTERON_ERROR_MISSING_OPERATOR;
  }
  pteron_kernel_context ctx;
  const int32_t rc = fn(&ctx, args, num_args);
  if (recorded_code) *recorded_code = ctx.code;
  copy_message(ctx.message, message, message_capacity);
  return rc;
}

extern "C" int32_t pteron_testing_backend_init(const char* backend_id,
                                               const pteron_program* const* programs,
                                               size_t num_programs, const void* processed, size_t processed_size,
                                               const pteron_compile_spec* specs, size_t num_specs,
                                               char* message, size_t message_capacity) {
  copy_message("", message, message_capacity);
  if (!backend_id || (!programs && num_programs > 0) || (!processed && processed_size > 0) ||
      (!specs && num_specs > 0)) {
    copy_message("pteron_testing_backend_init: backend_id, programs, processed and specs must "
                 "not be NULL",
                 message, message_capacity);
    return PTERON_ERROR_INVALID_ARGUMENT;
  }
  pteron::BackendEntry b;
  if (!pteron::find_backend(backend_id, &b)) {
    copy_message(pteron::format("no backend registered as '%s'", backend_id), message,
                 message_capacity);
    return PTERON_ERROR_MISSING_DELEGATE;
  }
  if (b.iface.is_available && !b.iface.is_available()) {
    copy_message(pteron::format("backend '%s' is not available on this machine", backend_id),
                 message, message_capacity);
    return PTERON_ERROR_MISSING_DELEGATE;
  }
  pteron_kernel_context ctx;
  for (size_t i = 0; i < num_programs; ++i)
    if (programs[i]) ctx.named_data_programs.push_back(programs[i]);
  // As method load hands it over: 16-byte aligned (resolve.cpp).
  pteron::AlignedBlock aligned;
  if (reinterpret_cast<uintptr_t>(processed) % 16 != 0) {
    if (!aligned.alloc(processed_size)) return PTERON_ERROR_OUT_OF_MEMORY;
    std::memcpy(aligned.data, processed, processed_size);
    processed = aligned.data;
  }
  void* handle = nullptr;
  const int32_t rc = b.iface.init(&ctx, processed, processed_size, specs, num_specs, &handle);
  if (handle && b.iface.destroy) b.iface.destroy(handle);
  copy_message(ctx.message, message, message_capacity);
  return rc;
}
