// SPDX-License-Identifier: BSD-3-Clause
// fuzz_xnnpack_blob.cpp - fuzz target "xnnpack_blob": the bytes are one processed blob
// of the XNNPACK delegate (backends/xnnpack/src/graph.cpp parse_blob, then the node preparation). See fuzz_blob.h.
#include "fuzz_blob.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)pteron_keep_components();
  pteron_fuzz::require_backend("XnnpackBackend");
  pteron_fuzz::load_named_data_programs(PTERON_FUZZ_PROGRAM_DIRS);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pteron_fuzz::run_blob("XnnpackBackend", data, size);
}
