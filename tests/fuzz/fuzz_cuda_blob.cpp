// SPDX-License-Identifier: BSD-3-Clause
// fuzz_cuda_blob.cpp - fuzz target "cuda_blob": the bytes are one processed blob
// of the CUDA delegate (backends/cuda/src/graph.cpp parse_graph, plan.cpp plan_graph, the constants; on a machine without a driver init ends at its driver check). See fuzz_blob.h.
#include "fuzz_blob.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)pteron_keep_components();
  pteron_fuzz::require_backend("PteronCudaBackend");
  pteron_fuzz::load_named_data_programs(PTERON_FUZZ_PROGRAM_DIRS);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pteron_fuzz::run_blob("PteronCudaBackend", data, size);
}
