// SPDX-License-Identifier: BSD-3-Clause
// cpu_grid.h - runs one launch of kernels.h on the CPU, as the device runs it
// (tests only): an element-wise kernel over its indices in order, gemm_f32
// block by block, each block's threads phase by phase (stage, barrier,
// accumulate, barrier; then store). Used by the CPU reference runner
// (cpu_reference.cpp) and by the fake driver's cuLaunchKernel
// (tests/cuda/fake_cuda.cpp), so both run exactly the device's bodies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../src/kernels.h"

namespace pteron {
namespace cuda {
namespace cpu_grid {

inline void gemm(const k::GemmParams& p, const uint32_t grid[3], const float* a, const float* b,
                 const float* bias, float* out) {
  std::vector<float> acc(size_t(k::kGemmThreads) * k::kGemmMicro * k::kGemmMicro);
  auto tile = [&](int32_t tid) {
    return reinterpret_cast<float(*)[k::kGemmMicro]>(&acc[size_t(tid) * k::kGemmMicro * k::kGemmMicro]);
  };
  k::GemmStage st;
  for (uint32_t bz = 0; bz < grid[2]; ++bz)
    for (uint32_t by = 0; by < grid[1]; ++by)
      for (uint32_t bx = 0; bx < grid[0]; ++bx) {
        const int64_t m0 = int64_t(by) * k::kGemmTileM, n0 = int64_t(bx) * k::kGemmTileN;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t k0 = 0; k0 < p.k; k0 += k::kGemmTileK) {
          for (int32_t tid = 0; tid < k::kGemmThreads; ++tid)
            k::gemm_stage(p, a, b, bz, m0, n0, k0, tid, st);
          for (int32_t ty = 0; ty < k::kGemmThreadsY; ++ty)
            for (int32_t tx = 0; tx < k::kGemmThreadsX; ++tx)
              k::gemm_accumulate(st, tx, ty, tile(ty * k::kGemmThreadsX + tx));
        }
        for (int32_t ty = 0; ty < k::kGemmThreadsY; ++ty)
          for (int32_t tx = 0; tx < k::kGemmThreadsX; ++tx)
            k::gemm_store(p, bias, out, bz, m0, n0, tx, ty, tile(ty * k::kGemmThreadsX + tx));
      }
}

inline void binary(const k::BinaryParams& p, const float* a, const float* b, float* out) {
  for (int64_t i = 0; i < p.numel; ++i) k::binary_element(p, a, b, out, i);
}
inline void unary(const k::UnaryParams& p, const float* x, float* out) {
  for (int64_t i = 0; i < p.numel; ++i) k::unary_element(p, x, out, i);
}
inline void permute(const k::PermuteParams& p, const float* x, float* out) {
  for (int64_t i = 0; i < p.numel; ++i) k::permute_element(p, x, out, i);
}
inline void copy(const k::CopyParams& p, const float* x, float* out) {
  for (int64_t i = 0; i < p.numel; ++i) k::copy_element(p, x, out, i);
}

}  // namespace cpu_grid
}  // namespace cuda
}  // namespace pteron
