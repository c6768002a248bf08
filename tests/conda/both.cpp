// SPDX-License-Identifier: BSD-3-Clause
// both.cpp - the C++ half of a process that uses pteron from Python and C++ at once
// (tests/test_conda.py loads it with ctypes after `import pteron`). It uses the runtime
// library the process already has: the registry it sees is the one the Python module's
// components registered into.
#include <cstdint>
#include <cstring>
#include <vector>

#include "pteron/pteron.hpp"

// Runs `pte`'s forward on one float32 input of `rank` sizes `sizes` (data `in`) and copies
// output 0 (`out`, room for `out_len` floats). Writes the number of registered kernel entries
// to *kernels. Returns 0, or the pteron error code (message copied to `err`, `err_len` bytes).
extern "C" int pteron_conda_both(const char* pte, const float* in, const int64_t* sizes,
                                 int32_t rank, float* out, int64_t out_len, int64_t* kernels,
                                 char* err, int32_t err_len) {
  try {
    *kernels = static_cast<int64_t>(pteron::registered_kernels().size());
    pteron::Program program = pteron::Program::load_file(pte);
    pteron::Method m = program.load_method("forward");
    std::vector<int64_t> shape(sizes, sizes + rank);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    m.set_input<float>(0, shape, std::vector<float>(in, in + n));
    m.execute();
    std::vector<float> y = m.output<float>(0);
    if (static_cast<int64_t>(y.size()) != out_len) return -1;
    std::memcpy(out, y.data(), y.size() * sizeof(float));
    return 0;
  } catch (const pteron::Error& e) {
    std::strncpy(err, e.what(), err_len - 1);
    err[err_len - 1] = '\0';
    return e.code() ? e.code() : -2;
  }
}
