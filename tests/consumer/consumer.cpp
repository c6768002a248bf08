// SPDX-License-Identifier: BSD-3-Clause
// consumer.cpp - an application of pteron's C++ layer, as a user writes it.
// Usage: consumer MODEL.pte METHOD INPUT.npy... -- EXPECTED.npy...
// Prints the registry (operators by library, backends) and the parallel_for
// thread count, runs the method and compares every output with the expected
// one (rtol 1e-4, atol 1e-5).
// Exit: 0 match, 1 mismatch, 3 pteron error (message on stderr), 2 usage.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "npy.h"
#include "pteron/kernel.h"
#include "pteron/pteron.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: consumer MODEL.pte METHOD INPUT.npy... -- EXPECTED.npy...\n");
    return 2;
  }
  std::vector<std::string> inputs, expected;
  bool after = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      after = true;
      continue;
    }
    (after ? expected : inputs).push_back(argv[i]);
  }
  // The registry: every kernel entry, with the library that provided it.
  std::map<std::string, int> per_library;
  std::vector<pteron::KernelInfo> kernels = pteron::registered_kernels();
  for (const pteron::KernelInfo& k : kernels) {
    per_library[k.library]++;
    std::printf("kernel %s %s %s %s\n", k.qualified().c_str(), k.library.c_str(),
                k.key.empty() ? "-" : k.key.c_str(), k.selected ? "selected" : "overridden");
  }
  for (const auto& kv : per_library) std::printf("library %s %d\n", kv.first.c_str(), kv.second);
  std::printf("registered operators: %zu\n", kernels.size());
  // 1 unless a thread pool (the threadpool component) installed itself.
  std::printf("parallel threads: %d\n", static_cast<int>(pteron_parallel_threads()));
  for (const pteron::BackendInfo& b : pteron::registered_backends())
    std::printf("backend %s %s\n", b.id.c_str(), b.library.c_str());

  // An error with a message crosses the boundary as a code + C string.
  try {
    pteron::Program::load_file(std::string(argv[1]) + ".does-not-exist");
    std::fprintf(stderr, "loading a missing file did not fail\n");
    return 1;
  } catch (const pteron::Error& e) {
    if (e.code() != PTERON_ERROR_IO ||
        std::string(e.what()).find("does-not-exist") == std::string::npos) {
      std::fprintf(stderr, "unexpected error for a missing file: %s\n", e.what());
      return 1;
    }
  }
  try {
    pteron::Program program = pteron::Program::load_file(argv[1]);
    pteron::Method m = program.load_method(argv[2]);
    for (size_t i = 0; i < inputs.size(); ++i) {
      pteron_tools::NpyArray a;
      std::string err = pteron_tools::npy_read(inputs[i], &a);
      if (!err.empty()) {
        std::fprintf(stderr, "%s\n", err.c_str());
        return 2;
      }
      m.set_input(i, a.dtype, a.shape, a.data.data(), a.data.size());
    }
    m.execute();
    bool ok = m.output_count() == expected.size();
    for (size_t o = 0; o < expected.size() && o < m.output_count(); ++o) {
      pteron_tools::NpyArray e;
      std::string err = pteron_tools::npy_read(expected[o], &e);
      if (!err.empty()) {
        std::fprintf(stderr, "%s\n", err.c_str());
        return 2;
      }
      pteron::ValueInfo info = m.output_info(o);
      std::vector<unsigned char> got = m.output_bytes(o);
      if (info.dtype != e.dtype || info.sizes != e.shape || got.size() != e.data.size()) {
        std::printf("output %zu: dtype/shape mismatch\n", o);
        ok = false;
        continue;
      }
      double max_err = 0;
      bool out_ok = true;
      if (info.dtype == PTERON_DTYPE_FLOAT32) {
        const float* g = reinterpret_cast<const float*>(got.data());
        const float* x = reinterpret_cast<const float*>(e.data.data());
        for (size_t k = 0; k < got.size() / 4; ++k) {
          double d = std::fabs(double(g[k]) - double(x[k]));
          max_err = std::max(max_err, d);
          if (!(d <= 1e-5 + 1e-4 * std::fabs(double(x[k])))) out_ok = false;
        }
      } else {
        out_ok = got == e.data;
      }
      std::printf("output %zu: %s max abs err %.3g\n", o, out_ok ? "match" : "MISMATCH", max_err);
      ok = ok && out_ok;
    }
    std::printf("%s\n", ok ? "consumer: outputs match" : "consumer: outputs DIFFER");
    return ok ? 0 : 1;
  } catch (const pteron::Error& e) {
    std::fprintf(stderr, "consumer: pteron error [%s]: %s\n", e.code_name(), e.what());
    return 3;
  }
}
