// SPDX-License-Identifier: BSD-3-Clause
// Exercises the header-only C++ layer (pteron/pteron.hpp) on the multi_out
// fixture: typed set_input/output, including bool (std::vector<bool> has no
// contiguous storage), the dtype-mismatch message, and the refusal to read
// outputs before a successful execute.
// Usage: hpp_api MULTI_OUT_PTE INPUT_F32  (INPUT_F32: input 0 as raw
// little-endian float32, row-major, of the method's static input shape)
// Prints "bool_output: <0/1 digits>" and "float_output0: <sum>" on success.
#include <cstdio>
#include <string>
#include <vector>

#include "pteron/pteron.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: hpp_api MULTI_OUT_PTE INPUT_F32 [ETDUMP]\n");
    return 2;
  }
  try {
    pteron::Program program = pteron::Program::load_file(argv[1]);
    pteron::Method m = program.load_method("forward");
    pteron::ValueInfo in = m.input_info(0);
    size_t n = 1;
    for (int64_t s : in.sizes) n *= static_cast<size_t>(s);
    std::vector<float> x(n);
    std::FILE* f = std::fopen(argv[2], "rb");
    if (!f || std::fread(x.data(), sizeof(float), n, f) != n) {
      std::printf("FAIL: cannot read %zu float32 values from %s\n", n, argv[2]);
      return 1;
    }
    std::fclose(f);

    try {
      (void)m.output<bool>(3);
      std::printf("FAIL: output before execute did not throw\n");
      return 1;
    } catch (const pteron::Error& e) {
      std::printf("before_execute: %s: %s\n", e.code_name(), e.what());
    }
    m.set_input<float>(0, in.sizes, x);
    m.execute();
    try {
      (void)m.output<float>(3);
      std::printf("FAIL: float read of a bool output did not throw\n");
      return 1;
    } catch (const pteron::Error& e) {
      std::printf("dtype_mismatch: %s\n", e.what());
    }
    std::vector<bool> b = m.output<bool>(3);
    std::string digits;
    for (bool v : b) digits += v ? '1' : '0';
    std::printf("bool_output: %s\n", digits.c_str());
    double sum = 0;
    for (float v : m.output<float>(0)) sum += v;
    std::printf("float_output0: %.9g\n", sum);
    std::printf("dtype_name(6): %s\n", pteron::dtype_name(PTERON_DTYPE_FLOAT32));
    // Profiling: one execute recorded, written as an ETDump (argv[3]).
    m.set_profiling(true);
    m.execute();
    size_t calls = 0, kernels = 0, load = 0;
    for (const pteron_profile_event& e : m.profile_events()) {
      if (e.run < 0) ++load;
      else if (e.name && std::string(e.name) == "OPERATOR_CALL") ++calls;
      else if (e.name && std::string(e.name).rfind("native_call_", 0) == 0) ++kernels;
    }
    std::printf("profile: %zu load, %zu operator calls, %zu kernels\n", load, calls, kernels);
    if (argc > 3) m.write_etdump(argv[3]);
  } catch (const pteron::Error& e) {
    std::printf("FAIL: %s: %s\n", e.code_name(), e.what());
    return 1;
  }
  return 0;
}
