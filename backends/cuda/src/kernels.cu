// SPDX-License-Identifier: BSD-3-Clause
// kernels.cu - PteronCudaBackend's device code: one __global__ wrapper per
// kernel of kernels.h, around the same bodies the CPU reference runs. Built
// by the train's nvcc into one fatbin (SASS for each of the train's
// architectures, PTX for its newest: cmake/cuda_trains.json), which
// backends/cuda/CMakeLists.txt embeds into the library's .nv_fatbin (ELF) or
// .nv_fatb (PE) section. Names are extern "C", so the host looks them up
// unmangled (cuModuleGetFunction). Arguments: the parameter struct by value,
// then device pointers (64-bit on every target), in launch_abi.h's order.
#include "kernels.h"

using namespace pteron::cuda::k;

#define PTERON_GRID_STRIDE(i, n)                                                  \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

extern "C" __global__ void __launch_bounds__(kGemmThreads)
    pteron_gemm_f32(GemmParams p, const float* a, const float* b, const float* bias, float* out) {
  __shared__ GemmStage st;
  const int32_t tx = int32_t(threadIdx.x), ty = int32_t(threadIdx.y);
  const int32_t tid = ty * kGemmThreadsX + tx;
  const int64_t n0 = int64_t(blockIdx.x) * kGemmTileN, m0 = int64_t(blockIdx.y) * kGemmTileM;
  const int64_t s = blockIdx.z;
  float acc[kGemmMicro][kGemmMicro] = {};
  for (int64_t k0 = 0; k0 < p.k; k0 += kGemmTileK) {
    gemm_stage(p, a, b, s, m0, n0, k0, tid, st);
    __syncthreads();
    gemm_accumulate(st, tx, ty, acc);
    __syncthreads();
  }
  gemm_store(p, bias, out, s, m0, n0, tx, ty, acc);
}

extern "C" __global__ void pteron_binary_f32(BinaryParams p, const float* a, const float* b,
                                             float* out) {
  PTERON_GRID_STRIDE(i, p.numel) binary_element(p, a, b, out, i);
}

extern "C" __global__ void pteron_unary_f32(UnaryParams p, const float* x, float* out) {
  PTERON_GRID_STRIDE(i, p.numel) unary_element(p, x, out, i);
}

extern "C" __global__ void pteron_strided_f32(StridedParams p, const float* x, float* out) {
  PTERON_GRID_STRIDE(i, p.numel) strided_element(p, x, out, i);
}

extern "C" __global__ void pteron_copy_f32(CopyParams p, const float* x, float* out) {
  PTERON_GRID_STRIDE(i, p.numel) copy_element(p, x, out, i);
}

extern "C" __global__ void pteron_softmax_f32(SoftmaxParams p, const float* x, float* out) {
  PTERON_GRID_STRIDE(r, p.outer * p.inner) softmax_row(p, x, out, r);
}

extern "C" __global__ void pteron_layer_norm_f32(LayerNormParams p, const float* x, const float* w,
                                                 const float* b, float* out) {
  PTERON_GRID_STRIDE(r, p.rows) layer_norm_row(p, x, w, b, out, r);
}

extern "C" __global__ void pteron_reduce_f32(ReduceParams p, const float* x, float* out) {
  PTERON_GRID_STRIDE(i, p.numel) reduce_element(p, x, out, i);
}

extern "C" __global__ void pteron_conv2d_f32(ConvParams p, const float* x, const float* w,
                                             const float* b, float* out) {
  PTERON_GRID_STRIDE(i, p.n * p.oc * p.oh * p.ow) conv2d_element(p, x, w, b, out, i);
}

extern "C" __global__ void pteron_pool2d_f32(PoolParams p, const float* x, float* out) {
  PTERON_GRID_STRIDE(i, p.n * p.c * p.oh * p.ow) pool2d_element(p, x, out, i);
}

extern "C" __global__ void pteron_cat_f32(CatParams p, CatInputs in, float* out) {
  PTERON_GRID_STRIDE(i, p.numel) cat_element(p, in, out, i);
}
