// SPDX-License-Identifier: BSD-3-Clause
// fuzz_npy.cpp - fuzz target "npy": the bytes are a .npy file, parsed by the
// reader pteron-run uses for its inputs (tools/npy.cpp, npy_parse). The
// contract: success gives data of exactly the bytes the dtype and shape
// need; failure gives a message. With PTERON_FUZZ_VERBOSE set, it prints
// "npy: ok" or "npy: <message>".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernel_util.h"  // dtype_size (runtime/kernels/common, header-only)
#include "npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pteron_tools::NpyArray a;
  const std::string err = pteron_tools::npy_parse(data, size, "input", &a);
  static const bool verbose = std::getenv("PTERON_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::printf("npy: %s\n", err.empty() ? "ok" : err.c_str());
  if (!err.empty()) return 0;
  const size_t esize = pteron::kern::dtype_size(a.dtype);
  if (esize == 0) {
    std::fprintf(stderr, "npy_parse gave dtype %d\n", a.dtype);
    std::abort();
  }
  size_t numel = 1;
  for (int64_t d : a.shape) {
    if (d < 0) { std::fprintf(stderr, "npy_parse gave a negative dim\n"); std::abort(); }
    numel *= size_t(d);
  }
  if (a.data.size() != numel * esize || a.data.size() > size) {
    std::fprintf(stderr, "npy_parse gave %zu data bytes for %zu elements\n", a.data.size(), numel);
    std::abort();
  }
  return 0;
}
