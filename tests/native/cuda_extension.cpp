// SPDX-License-Identifier: BSD-3-Clause
// cuda_extension.cpp - a consumer of extension_cuda (pteron/cuda.h), for
// tests/test_cuda.py: prints what the API reports, then loads and runs a
// CUDA-lowered program with the device and stream it was told to use.
//   cuda_extension MODEL.pte INPUT.f32 [--device N] [--stream HEX]
// INPUT.f32 holds the raw float32 input of shape [4, 16] (mlp_cuda).
// Prints "status ...", then "set_device rc=..." / "set_stream rc=..." when
// given, then "load ok" or "load error [code] message", then "output ..." .
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pteron/cuda.h"
#include "pteron/pteron.hpp"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  char msg[1024];
  int32_t devices = -1, version = -1;
  const int32_t rc = pteron_cuda_driver_status(msg, sizeof msg, &devices, &version);
  std::printf("status train=%s code=%d devices=%d version=%d message=%s\n", pteron_cuda_train(), rc,
              devices, version, msg);
  char tiny[8];
  pteron_cuda_driver_status(tiny, sizeof tiny, nullptr, nullptr);
  std::printf("truncated=%zu\n", std::strlen(tiny));
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--device") == 0) {
      const int32_t set = pteron_cuda_set_device(std::atoi(argv[i + 1]));
      std::printf("set_device rc=%d device=%d\n", set, pteron_cuda_device());
    } else if (std::strcmp(argv[i], "--stream") == 0) {
      void* s = reinterpret_cast<void*>(std::strtoull(argv[i + 1], nullptr, 16));
      const int32_t set = pteron_cuda_set_stream(s);
      std::printf("set_stream rc=%d stream=%p\n", set, pteron_cuda_stream());
    }
  }
  std::vector<float> x(64);
  FILE* f = std::fopen(argv[2], "rb");
  if (!f || std::fread(x.data(), 4, 64, f) != 64) return 2;
  std::fclose(f);
  try {
    pteron::Program p = pteron::Program::load_file(argv[1]);
    pteron::Method m = p.load_method("forward");
    std::printf("load ok\n");
    m.set_input<float>(0, {4, 16}, x);
    m.execute();
    std::vector<float> out = m.output<float>(0);
    std::printf("output");
    for (float v : out) std::printf(" %.9g", v);
    std::printf("\n");
  } catch (const pteron::Error& e) {
    std::printf("load error [%s] %s\n", e.code_name(), e.what());
  }
  return 0;
}
