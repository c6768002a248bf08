// SPDX-License-Identifier: BSD-3-Clause
// gemm_shapes.cpp - a benchmark, not a test: runtime/cpu/include/pteron_cpu/gemm.h's gemm_packed on the
// zoo programs' GEMM shapes (the stem convolutions' im2col GEMM, 1x1 convolutions with few
// pixels or few input channels, batch-1 fully connected), one thread (pteron_parallel_for
// replaced by a serial loop), at the level PTERON_ISA selects. Prints per shape the thread's
// CPU microseconds per call (CLOCK_THREAD_CPUTIME_ID, median of 7 batches) and GFLOP per
// CPU-second (2 M N K per call), of the median batch and of the best one (less
// sensitive to other processes sharing the core's caches). Build (bench/gemm/README.md):
//   c++ -O2 -std=c++17 bench/gemm/gemm_shapes.cpp -Iruntime/cpu/include -Iinclude \
//       build-dev/runtime/cpu/libpteron_cpu.a -o gemm_shapes
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "pteron_cpu/gemm.h"
#include "pteron/kernel.h"

extern "C" void pteron_parallel_for(int64_t begin, int64_t end, int64_t, pteron_range_fn fn,
                                    void* user) {
  if (begin < end) fn(user, begin, end);
}
extern "C" int32_t pteron_parallel_threads(void) { return 1; }

namespace {

double cpu_us() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

}  // namespace

int main() {
  struct Shape {
    const char* what;
    int64_t m, k, n;
  };
  const Shape shapes[] = {
      {"stem 3x3 s2 224 -> 16 (im2col K 27)", 12544, 27, 16},
      {"stem 3x3 s2 224 -> 24 (im2col K 27)", 12544, 27, 24},
      {"stem 3x3 s2 224 -> 32 (im2col K 27)", 12544, 27, 32},
      {"stem 7x7 s2 224 -> 64 (im2col K 147)", 12544, 147, 64},
      {"1x1 [1,7,7,192] x 1152", 49, 192, 1152},
      {"1x1 [1,7,7,96] x 576", 49, 96, 576},
      {"1x1 [1,56,56,16] x 72", 3136, 16, 72},
      {"1x1 [1,28,28,24] x 24", 784, 24, 24},
      {"1x1 [1,14,14,112] x 672 (efficientnet)", 196, 112, 672},
      {"1x1 [1,14,14,672] x 112 (efficientnet)", 196, 672, 112},
      {"1x1 [1,7,7,1152] x 192 (efficientnet)", 49, 1152, 192},
      {"1x1 [1,28,28,40] x 240 (efficientnet)", 784, 40, 240},
      {"FC [1,1024] x 1000", 1, 1024, 1000},
      {"FC [1,576] x 1024", 1, 576, 1024},
      {"FC [256,1024] x 1024", 256, 1024, 1024},
      {"vit FC [197,192] x 576 (qkv)", 197, 192, 576},
      {"vit FC [197,192] x 192 (proj)", 197, 192, 192},
      {"vit FC [197,192] x 768 (mlp fc1)", 197, 192, 768},
      {"vit FC [197,768] x 192 (mlp fc2)", 197, 768, 192},
      {"vit BMM [197,64] x 197 (q k^T, per head)", 197, 64, 197},
      {"vit BMM [197,197] x 64 (attn v, per head)", 197, 197, 64},
      {"swin FC [3136,96] x 288 (qkv)", 3136, 96, 288},
      {"swin FC [3136,96] x 384 (mlp fc1)", 3136, 96, 384},
      {"swin FC [3136,384] x 96 (mlp fc2)", 3136, 384, 96},
      {"densenet 1x1 [1,56,56,192] x 128", 3136, 192, 128},
      {"densenet 1x1 [1,28,28,512] x 128", 784, 512, 128},
      {"resnet18 1x1 s2 [1,28,28,128] x 256", 196, 128, 256},
      {"mobilenet_v2 1x1 [1,14,14,96] x 576", 196, 96, 576},
      {"mobilenet_v2 1x1 [1,14,14,576] x 96", 196, 576, 96},
      {"mobilenet_v2 1x1 [1,112,112,16] x 96", 12544, 16, 96},
      {"mobilenet_v2 1x1 [1,112,112,96] x 16", 12544, 96, 16},
      {"mobilenet_v2 1x1 [1,56,56,24] x 144", 3136, 24, 144},
  };
  // 3x3 convolutions, stride 1, padding 1, as the delegate runs them: indirect rows (one
  // segment of C floats per tap, padding taps pointing at a zero row), K = 9 C.
  struct Conv {
    const char* what;
    int64_t h, w, c, n;
  };
  const Conv convs[] = {
      {"densenet 3x3 [1,56,56,128] x 32 (indirect)", 56, 56, 128, 32},
      {"densenet 3x3 [1,14,14,128] x 32 (indirect)", 14, 14, 128, 32},
      {"resnet18 3x3 [1,56,56,64] x 64 (indirect)", 56, 56, 64, 64},
      {"resnet18 3x3 [1,14,14,256] x 256 (indirect)", 14, 14, 256, 256},
  };
  std::printf("level %s\n", pteron_cpu::gemm_kernels().name);
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m * s.k), 0.5f), b(size_t(s.k * s.n), 0.25f), bias(size_t(s.n));
    std::vector<float> c(size_t(s.m * s.n));
    pteron_cpu::PackedWeights w;
    w.pack(s.k, s.n, b.data(), s.k, true, bias.data());
    const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
    const int reps = int(std::max<double>(1, 2e8 / flop));
    std::vector<double> us;
    for (int batch = 0; batch < 7; ++batch) {
      const double t0 = cpu_us();
      for (int r = 0; r < reps; ++r)
        pteron_cpu::gemm_packed(s.m, a.data(), s.k, w, c.data(), s.n, -1e30f, 1e30f);
      us.push_back((cpu_us() - t0) / reps);
    }
    std::sort(us.begin(), us.end());
    std::printf("%-44s %10.1f us  %6.1f GFLOP/cpu-s  (best batch %6.1f)\n", s.what, us[3],
                flop / us[3] * 1e-3, flop / us[0] * 1e-3);
  }
  for (const Conv& v : convs) {
    const int64_t m = v.h * v.w, k = 9 * v.c;
    std::vector<float> in(size_t(m * v.c), 0.5f), zero(size_t(v.c), 0.0f), b(size_t(k * v.n), 0.25f);
    std::vector<float> c(size_t(m * v.n));
    std::vector<const float*> rows(size_t(m * 9));
    for (int64_t y = 0; y < v.h; ++y)
      for (int64_t x = 0; x < v.w; ++x)
        for (int64_t t = 0; t < 9; ++t) {
          const int64_t iy = y + t / 3 - 1, ix = x + t % 3 - 1;
          const bool inside = iy >= 0 && iy < v.h && ix >= 0 && ix < v.w;
          rows[size_t((y * v.w + x) * 9 + t)] = inside ? &in[size_t((iy * v.w + ix) * v.c)] : zero.data();
        }
    pteron_cpu::PackedWeights w;
    w.pack(k, v.n, b.data(), k, true, nullptr);
    const double flop = 2.0 * double(m) * double(v.n) * double(k);
    const int reps = int(std::max<double>(1, 2e8 / flop));
    std::vector<double> us;
    for (int batch = 0; batch < 7; ++batch) {
      const double t0 = cpu_us();
      for (int r = 0; r < reps; ++r)
        pteron_cpu::gemm_packed_indirect(m, 9, v.c, rows.data(), 0, w, c.data(), v.n, -1e30f, 1e30f);
      us.push_back((cpu_us() - t0) / reps);
    }
    std::sort(us.begin(), us.end());
    std::printf("%-44s %10.1f us  %6.1f GFLOP/cpu-s  (best batch %6.1f)\n", v.what, us[3],
                flop / us[3] * 1e-3, flop / us[0] * 1e-3);
  }
  return 0;
}
