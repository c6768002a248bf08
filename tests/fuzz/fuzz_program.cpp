// SPDX-License-Identifier: BSD-3-Clause
// fuzz_program.cpp - fuzz target "program": the bytes are a .pte program.
// Through the C API, as an application calls it: pteron_program_load_memory,
// then for each method pteron_method_load, inputs made from the method's own
// metadata (each tensor input at its declared dtype and current sizes, filled
// with small values; each scalar input 1), one pteron_method_execute, and a
// copy of every tensor output. Every component of the build is linked, so
// lowered programs reach their delegates (XnnpackBackend on pteron's own
// kernels, PteronCudaBackend up to its driver check on a machine with none).
//
// The target's contract (tests/fuzz/README.md): every call ends in success
// or in an error status with a message; anything else (a sanitizer report,
// a status without a message, a program handle left by a failed load) stops
// the process. With PTERON_FUZZ_VERBOSE set, it prints each step's code
// ("program_load: 0", "method_load forward: 0", "execute forward: 0").
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_util.h"  // dtype_size (runtime/kernels/common, header-only)
#include "pteron/pteron.h"

extern "C" int pteron_keep_components(void);

namespace {

// Inputs larger than this are not made: the program still loads, its method
// is not executed (a huge declared input says nothing about the readers).
constexpr size_t kMaxInputBytes = size_t(64) << 20;
// Each method is loaded under a memory budget (pteron_method_options
// max_allocated_bytes), as an application that loads programs it does not
// trust should: the runtime allocates what a program declares, and a few
// bytes can declare terabytes. The campaign's memory limit is 2 GiB.
constexpr uint64_t kMaxAllocatedBytes = uint64_t(1) << 30;
// Element i of a deterministic input: small values in every dtype (0, 1 or
// 2 for integers, so index inputs stay in range for most programs).
void fill(int32_t dtype, size_t esize, std::vector<unsigned char>* buf) {
  const size_t n = esize ? buf->size() / esize : 0;
  unsigned char* p = buf->data();
  for (size_t i = 0; i < n; ++i, p += esize) {
    const int v = int(i % 3);
    switch (dtype) {
      case PTERON_DTYPE_FLOAT32: {
        const float f = 0.25f * float(int(i % 7) - 3);
        std::memcpy(p, &f, 4);
        break;
      }
      case PTERON_DTYPE_FLOAT64:
      case PTERON_DTYPE_COMPLEX128: {
        const double d = 0.25 * double(int(i % 7) - 3);
        std::memcpy(p, &d, 8);
        break;
      }
      case PTERON_DTYPE_COMPLEX64: {
        const float f[2] = {0.5f * float(v), -0.25f};
        std::memcpy(p, f, 8);
        break;
      }
      case PTERON_DTYPE_FLOAT16:
      case PTERON_DTYPE_BFLOAT16: {
        // 1.0 in both (float16 0x3c00, bfloat16 0x3f80), or 0.
        const uint16_t h = v ? (dtype == PTERON_DTYPE_FLOAT16 ? 0x3c00 : 0x3f80) : 0;
        std::memcpy(p, &h, 2);
        break;
      }
      case PTERON_DTYPE_BOOL: *p = static_cast<unsigned char>(v & 1); break;
      default: {  // integers, little-endian
        std::memset(p, 0, esize);
        *p = static_cast<unsigned char>(v);
      }
    }
  }
}

[[noreturn]] void contract(const char* what) {
  std::fprintf(stderr, "fuzz_program: contract broken: %s\n", what);
  std::abort();
}

// Releases `s`; true for success. An error must carry a message.
bool ok(pteron_status* s) {
  if (!s) return true;
  const char* m = pteron_status_message(s);
  if (pteron_status_code(s) == PTERON_OK) contract("a status object with code PTERON_OK");
  if (!m || !*m) contract("an error status without a message");
  pteron_status_release(s);
  return false;
}

bool verbose() {
  static const bool v = std::getenv("PTERON_FUZZ_VERBOSE") != nullptr;
  return v;
}

void run_method(pteron_program* prog, const char* name) {
  pteron_method* m = nullptr;
  pteron_method_options opts;
  std::memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.max_allocated_bytes = kMaxAllocatedBytes;
  pteron_status* s = pteron_method_load(prog, name, &opts, &m);
  if (verbose()) std::printf("method_load %s: %d\n", name, s ? pteron_status_code(s) : 0);
  if (!ok(s)) {
    if (m) contract("a failed method load left a method");
    return;
  }
  if (!m) contract("method load succeeded without a method");
  bool inputs_ok = true;
  const size_t nin = pteron_method_input_count(m);
  for (size_t j = 0; j < nin && inputs_ok; ++j) {
    pteron_value_info info;
    if (!ok(pteron_method_input_info(m, j, &info))) {
      inputs_ok = false;
      break;
    }
    if (info.tag != PTERON_VALUE_TENSOR) {
      // Int, Double or Bool inputs; other tags are refused, with a message.
      (void)ok(pteron_method_set_input_scalar(m, j, 1.0));
      continue;
    }
    const size_t esize = pteron::kern::dtype_size(info.dtype);
    size_t bytes = esize;
    for (int32_t d = 0; d < info.dim && d < PTERON_MAX_DIM && bytes; ++d) {
      if (info.sizes[d] < 0 || (info.sizes[d] && bytes > kMaxInputBytes / size_t(info.sizes[d]))) {
        bytes = kMaxInputBytes + 1;
        break;
      }
      bytes *= size_t(info.sizes[d]);
    }
    if (esize == 0 || info.dim < 0 || info.dim > PTERON_MAX_DIM || bytes > kMaxInputBytes) {
      inputs_ok = false;
      break;
    }
    std::vector<unsigned char> buf(bytes ? bytes : 1);
    fill(info.dtype, esize, &buf);
    if (!ok(pteron_method_set_input(m, j, info.dtype, info.sizes, info.dim, buf.data(), bytes)))
      inputs_ok = false;
  }
  s = inputs_ok ? pteron_method_execute(m) : nullptr;
  if (verbose() && inputs_ok)
    std::printf("execute %s: %d\n", name, s ? pteron_status_code(s) : 0);
  if (inputs_ok && ok(s)) {
    const size_t nout = pteron_method_output_count(m);
    for (size_t j = 0; j < nout; ++j) {
      pteron_value_info info;
      if (!ok(pteron_method_output_info(m, j, &info))) continue;
      if (info.tag != PTERON_VALUE_TENSOR || info.nbytes > kMaxInputBytes) continue;
      std::vector<unsigned char> out(info.nbytes ? info.nbytes : 1);
      (void)ok(pteron_method_copy_output(m, j, out.data(), info.nbytes));
    }
  }
  pteron_method_release(m);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)pteron_keep_components();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pteron_program* prog = nullptr;
  pteron_status* s = pteron_program_load_memory(data, size, &prog);
  if (verbose()) std::printf("program_load: %d\n", s ? pteron_status_code(s) : 0);
  if (!ok(s)) {
    if (prog) contract("a failed program load left a program");
    return 0;
  }
  if (!prog) contract("program load succeeded without a program");
  const size_t nm = pteron_program_method_count(prog);
  for (size_t i = 0; i < nm; ++i) {
    const char* name = nullptr;
    if (!ok(pteron_program_method_name(prog, i, &name))) continue;
    if (!name) contract("a method name of NULL");
    size_t nbuf = 0;
    (void)ok(pteron_program_planned_buffer_sizes(prog, name, nullptr, 0, &nbuf));
    run_method(prog, name);
  }
  pteron_program_release(prog);
  return 0;
}
