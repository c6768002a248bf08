// SPDX-License-Identifier: BSD-3-Clause
// testing.cpp - pteron_testing_call_kernel (pteron/testing.h), the runtime's
// one test-only entry point: one kernel call through the real registry and a
// real kernel context, with no program behind it.
#include <cstring>
#include <string>

#include "internal.h"
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
