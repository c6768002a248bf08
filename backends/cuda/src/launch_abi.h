// SPDX-License-Identifier: BSD-3-Clause
// launch_abi.h - how a launch of plan.h reaches its __global__ function in
// kernels.cu: the function's name, and its arguments as cuLaunchKernel takes
// them (kernelParams: one pointer per argument). Every kernel's first argument
// is its parameter struct (kernels.h); the rest are device pointers in the
// order below, the output last:
//   gemm_f32        a, b, bias (null unless addmm), out
//   layer_norm_f32  x, weight (or null), bias (or null), out
//   conv2d_f32      x, w, bias (or null), out
//   cat_f32         k::CatInputs (kMaxCatInputs pointers by value, unused ones null), out
//   the others      their inputs in order, out
// device.cpp builds kernelParams this way; the CPU reference runner and the
// test driver's fake device (test/cpu_grid.h) read them back the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels.h"

namespace pteron {
namespace cuda {

enum class KernelId : int32_t {
  Gemm, Binary, Unary, Strided, Copy, Softmax, LayerNorm, Reduce, Conv2d, Pool2d, Cat
};
constexpr int kKernelCount = 11;

inline const char* kernel_function(KernelId k) {
  static const char* const names[kKernelCount] = {
      "pteron_gemm_f32",   "pteron_binary_f32",     "pteron_unary_f32",  "pteron_strided_f32",
      "pteron_copy_f32",   "pteron_softmax_f32",    "pteron_layer_norm_f32", "pteron_reduce_f32",
      "pteron_conv2d_f32", "pteron_pool2d_f32",     "pteron_cat_f32"};
  return names[int(k)];
}

// The kernel's name in the blob (Node.kernel): its function's name without "pteron_".
inline const char* kernel_name(KernelId k) { return kernel_function(k) + 7; }

inline bool kernel_from_function(const char* name, KernelId* k) {
  for (int i = 0; i < kKernelCount; ++i)
    if (std::strcmp(kernel_function(KernelId(i)), name) == 0) {
      *k = KernelId(i);
      return true;
    }
  return false;
}

// The device pointer arguments of a launch, as 64-bit values (CUdeviceptr on
// the device, host addresses on the CPU), with the kernelParams array that
// points at them. `inputs` are the node's inputs' pointers in the blob's order
// (addmm: bias, A, B), `out` the output's.
struct LaunchArgs {
  uint64_t ptr[k::kMaxCatInputs + 4] = {};
  k::CatInputs cat{};
  void* params[k::kMaxCatInputs + 4] = {};
  size_t count = 0;  // entries of params

  LaunchArgs(const LaunchArgs&) = delete;  // params point into this object
  LaunchArgs& operator=(const LaunchArgs&) = delete;

  LaunchArgs(KernelId kernel, const void* kernel_params, const uint64_t* inputs, size_t n_inputs,
             int32_t gemm_mode, uint64_t out) {
    params[0] = const_cast<void*>(kernel_params);
    size_t np = 0;
    auto at = [&](size_t j) { return j < n_inputs ? inputs[j] : uint64_t(0); };
    switch (kernel) {
      case KernelId::Gemm:
        if (gemm_mode == 1)
          ptr[np++] = at(1), ptr[np++] = at(2), ptr[np++] = at(0);
        else
          ptr[np++] = at(0), ptr[np++] = at(1), ptr[np++] = 0;
        break;
      case KernelId::LayerNorm:
      case KernelId::Conv2d:
        for (size_t j = 0; j < 3; ++j) ptr[np++] = at(j);
        break;
      case KernelId::Cat:
        for (size_t j = 0; j < size_t(k::kMaxCatInputs); ++j) {
          const uint64_t v = at(j);
          std::memcpy(&cat.x[j], &v, sizeof(v));
        }
        params[1] = &cat;
        ptr[0] = out;
        params[2] = &ptr[0];
        count = 3;
        return;
      default:
        for (size_t j = 0; j < n_inputs; ++j) ptr[np++] = inputs[j];
    }
    ptr[np++] = out;
    for (size_t j = 0; j < np; ++j) params[1 + j] = &ptr[j];
    count = 1 + np;
  }
};

}  // namespace cuda
}  // namespace pteron
