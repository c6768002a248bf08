// SPDX-License-Identifier: BSD-3-Clause
// cpu_grid.h - runs one launch of kernels.h on the CPU, as the device runs it
// (tests only), from the launch's kernelParams (launch_abi.h): an element-wise
// kernel over its indices in order, a per-row kernel over its rows, gemm_f32
// block by block, each block's threads phase by phase (stage, barrier,
// accumulate, barrier; then store). Used by the CPU reference runner
// (cpu_reference.cpp) and by the fake driver's cuLaunchKernel
// (tests/cuda/fake_cuda.cpp), so both run exactly the device's bodies with
// the arguments marshalled as for the driver.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../src/kernels.h"
#include "../src/launch_abi.h"

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

template <typename T>
const T& param(void* const* params) { return *static_cast<const T*>(params[0]); }

inline float* pointer(void* const* params, int i) {
  uint64_t v;
  std::memcpy(&v, params[i], sizeof v);
  return reinterpret_cast<float*>(uintptr_t(v));
}

// Runs kernel `k` over `grid` with cuLaunchKernel's kernelParams. False for a
// block shape the kernel cannot take (gemm_f32 needs its fixed 16 x 16).
inline bool launch(KernelId kid, const uint32_t grid[3], const uint32_t block[3],
                   void* const* params) {
  auto P = [&](int i) { return pointer(params, i); };
  switch (kid) {
    case KernelId::Gemm:
      if (block[0] != uint32_t(k::kGemmThreadsX) || block[1] != uint32_t(k::kGemmThreadsY))
        return false;
      gemm(param<k::GemmParams>(params), grid, P(1), P(2), P(3), P(4));
      return true;
    case KernelId::Binary: {
      const auto& p = param<k::BinaryParams>(params);
      for (int64_t i = 0; i < p.numel; ++i) k::binary_element(p, P(1), P(2), P(3), i);
      return true;
    }
    case KernelId::Unary: {
      const auto& p = param<k::UnaryParams>(params);
      for (int64_t i = 0; i < p.numel; ++i) k::unary_element(p, P(1), P(2), i);
      return true;
    }
    case KernelId::Strided: {
      const auto& p = param<k::StridedParams>(params);
      for (int64_t i = 0; i < p.numel; ++i) k::strided_element(p, P(1), P(2), i);
      return true;
    }
    case KernelId::Copy: {
      const auto& p = param<k::CopyParams>(params);
      for (int64_t i = 0; i < p.numel; ++i) k::copy_element(p, P(1), P(2), i);
      return true;
    }
    case KernelId::Softmax: {
      const auto& p = param<k::SoftmaxParams>(params);
      for (int64_t r = 0; r < p.outer * p.inner; ++r) k::softmax_row(p, P(1), P(2), r);
      return true;
    }
    case KernelId::LayerNorm: {
      const auto& p = param<k::LayerNormParams>(params);
      for (int64_t r = 0; r < p.rows; ++r) k::layer_norm_row(p, P(1), P(2), P(3), P(4), r);
      return true;
    }
    case KernelId::Reduce: {
      const auto& p = param<k::ReduceParams>(params);
      for (int64_t i = 0; i < p.numel; ++i) k::reduce_element(p, P(1), P(2), i);
      return true;
    }
    case KernelId::Conv2d: {
      const auto& p = param<k::ConvParams>(params);
      const int64_t n = p.n * p.oc * p.oh * p.ow;
      for (int64_t i = 0; i < n; ++i) k::conv2d_element(p, P(1), P(2), P(3), P(4), i);
      return true;
    }
    case KernelId::Pool2d: {
      const auto& p = param<k::PoolParams>(params);
      const int64_t n = p.n * p.c * p.oh * p.ow;
      for (int64_t i = 0; i < n; ++i) k::pool2d_element(p, P(1), P(2), i);
      return true;
    }
    case KernelId::Cat: {
      const auto& p = param<k::CatParams>(params);
      const auto& in = *static_cast<const k::CatInputs*>(params[1]);
      for (int64_t i = 0; i < p.numel; ++i) k::cat_element(p, in, P(2), i);
      return true;
    }
  }
  return false;
}

}  // namespace cpu_grid
}  // namespace cuda
}  // namespace pteron
