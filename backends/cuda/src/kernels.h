// SPDX-License-Identifier: BSD-3-Clause
// kernels.h - PteronCudaBackend's kernel table: each kernel's parameters and
// its body (per output element, or per phase of a tile), as __host__ __device__ functions that also
// compile as plain C++. The device code (kernels.cu: one __global__ wrapper
// per kernel) and the CPU reference runner
// (backends/cuda/test/cpu_reference.cpp, a test target that is not shipped)
// call the same bodies over the same index space, so the kernels' logic is
// tested where there is no GPU; a GPU run then confirms the launches.
//
// Element-wise kernels run one thread per output element (a grid-stride loop
// over [0, numel)); gemm_f32 is tiled (below).
//
// Parameter structs cross to the device as kernel arguments: fixed-width
// types only (a MinGW `long` is 4 bytes, a Linux device `long` 8), no
// pointers inside. Tensors are float32, row-major and contiguous; shapes have
// at most kMaxRank dimensions. Indices are int64.
//
// The blob names a kernel by string (Node.kernel), with Node.ints:
//   gemm_f32     ints {mode}: 0 mm      out[M,N]    = A[M,K] @ B[K,N]            inputs A, B
//                            1 addmm   out[M,N]    = bias + A[M,K] @ B[K,N]     inputs bias, A, B
//                                      (bias broadcast to [M,N]: [N], [1,N], [M,1], [M,N] or a scalar)
//                            2 bmm     out[S,M,N]  = A[S,M,K] @ B[S,K,N]        inputs A, B
//   binary_f32   ints {op}: 0 add, 1 sub, 2 mul, 3 div; out = a op b with
//                PyTorch broadcasting (shapes aligned at the last dimension)
//   unary_f32    ints {op, gelu_tanh}: 0 relu, 1 sigmoid, 2 tanh, 3 gelu (erf, or the
//                tanh approximation when gelu_tanh is 1), 4 silu, 5 hardswish
//   permute_f32  ints {perm...}: out dim d is input dim perm[d]
//   copy_f32     a reshape (view_copy): out = the input's elements in order
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define PTERON_HD __host__ __device__ __forceinline__
#else
#include <math.h>
#define PTERON_HD inline
#endif

namespace pteron {
namespace cuda {
namespace k {

constexpr int32_t kMaxRank = 8;

// ---- gemm_f32 ------------------------------------------------------------------
//
// Tiled: a block of kGemmThreadsX x kGemmThreadsY threads computes a
// kGemmTileM x kGemmTileN tile of one batch's output, each thread a
// kGemmMicro x kGemmMicro micro-tile, stepping through K in slices of
// kGemmTileK that the block first stages into its shared memory (GemmStage).
// Grid: (ceil(n / kGemmTileN), ceil(m / kGemmTileM), batch). Each block runs,
// per K slice, gemm_stage for every thread, a barrier, gemm_accumulate for
// every thread, a barrier; then gemm_store. The CPU reference runs exactly
// these phases thread by thread. Products are summed in K order from 0.

constexpr int32_t kGemmTileM = 64, kGemmTileN = 64, kGemmTileK = 16;
constexpr int32_t kGemmThreadsX = 16, kGemmThreadsY = 16, kGemmMicro = 4;
constexpr int32_t kGemmThreads = kGemmThreadsX * kGemmThreadsY;
static_assert(kGemmThreadsX * kGemmMicro == kGemmTileN && kGemmThreadsY * kGemmMicro == kGemmTileM,
              "the threads' micro-tiles cover the tile");

struct GemmParams {
  int64_t batch, m, n, k;   // bmm: batch S; mm and addmm: 1
  int64_t bias_rs, bias_cs; // addmm: the bias's strides for row and column (0 = broadcast)
  int32_t mode;             // 0 mm, 1 addmm, 2 bmm
  int32_t pad_;
};

// The block's shared memory: one K slice of A (stored K-major) and of B.
struct GemmStage {
  float a[kGemmTileK][kGemmTileM];
  float b[kGemmTileK][kGemmTileN];
};

// Thread `tid` (0 .. kGemmThreads) stages its share of the K slice at k0 for
// the tile at (m0, n0) of batch s; entries past m, n or k are zero.
PTERON_HD void gemm_stage(const GemmParams& p, const float* a, const float* b, int64_t s,
                          int64_t m0, int64_t n0, int64_t k0, int32_t tid, GemmStage& st) {
  for (int32_t e = tid; e < kGemmTileM * kGemmTileK; e += kGemmThreads) {
    const int32_t r = e / kGemmTileK, c = e % kGemmTileK;
    const int64_t gr = m0 + r, gc = k0 + c;
    st.a[c][r] = (gr < p.m && gc < p.k) ? a[(s * p.m + gr) * p.k + gc] : 0.0f;
  }
  for (int32_t e = tid; e < kGemmTileK * kGemmTileN; e += kGemmThreads) {
    const int32_t r = e / kGemmTileN, c = e % kGemmTileN;
    const int64_t gr = k0 + r, gc = n0 + c;
    st.b[r][c] = (gr < p.k && gc < p.n) ? b[(s * p.k + gr) * p.n + gc] : 0.0f;
  }
}

// Thread (tx, ty) adds the staged slice's products to its micro-tile.
PTERON_HD void gemm_accumulate(const GemmStage& st, int32_t tx, int32_t ty,
                               float acc[kGemmMicro][kGemmMicro]) {
  for (int32_t kk = 0; kk < kGemmTileK; ++kk) {
    float av[kGemmMicro], bv[kGemmMicro];
    for (int32_t i = 0; i < kGemmMicro; ++i) av[i] = st.a[kk][ty * kGemmMicro + i];
    for (int32_t j = 0; j < kGemmMicro; ++j) bv[j] = st.b[kk][tx * kGemmMicro + j];
    for (int32_t i = 0; i < kGemmMicro; ++i)
      for (int32_t j = 0; j < kGemmMicro; ++j) acc[i][j] += av[i] * bv[j];
  }
}

// Thread (tx, ty) writes its micro-tile (with addmm's bias), inside m and n.
PTERON_HD void gemm_store(const GemmParams& p, const float* bias, float* out, int64_t s, int64_t m0,
                          int64_t n0, int32_t tx, int32_t ty,
                          const float acc[kGemmMicro][kGemmMicro]) {
  for (int32_t i = 0; i < kGemmMicro; ++i) {
    const int64_t row = m0 + ty * kGemmMicro + i;
    if (row >= p.m) break;
    for (int32_t j = 0; j < kGemmMicro; ++j) {
      const int64_t col = n0 + tx * kGemmMicro + j;
      if (col >= p.n) break;
      float v = acc[i][j];
      if (p.mode == 1) v += bias[row * p.bias_rs + col * p.bias_cs];
      out[(s * p.m + row) * p.n + col] = v;
    }
  }
}

// ---- binary_f32 ------------------------------------------------------------------

struct BinaryParams {
  int64_t numel;
  int64_t out_sizes[kMaxRank];
  int64_t a_strides[kMaxRank];  // 0 along a broadcast dimension
  int64_t b_strides[kMaxRank];
  int32_t rank, op;             // op: 0 add, 1 sub, 2 mul, 3 div
};

PTERON_HD float binary_op(int32_t op, float x, float y) {
  switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    default: return x / y;
  }
}

PTERON_HD void binary_element(const BinaryParams& p, const float* a, const float* b, float* out,
                              int64_t i) {
  int64_t rest = i, ia = 0, ib = 0;
  for (int32_t d = p.rank - 1; d >= 0; --d) {
    const int64_t idx = rest % p.out_sizes[d];
    rest /= p.out_sizes[d];
    ia += idx * p.a_strides[d];
    ib += idx * p.b_strides[d];
  }
  out[i] = binary_op(p.op, a[ia], b[ib]);
}

// ---- unary_f32 -------------------------------------------------------------------

struct UnaryParams {
  int64_t numel;
  int32_t op, gelu_tanh;  // op: 0 relu, 1 sigmoid, 2 tanh, 3 gelu, 4 silu, 5 hardswish
};

PTERON_HD float unary_op(int32_t op, int32_t gelu_tanh, float x) {
  switch (op) {
    case 0: return x > 0.0f ? x : (x == x ? 0.0f : x);  // NaN stays NaN, as torch.relu
    case 1: return 1.0f / (1.0f + expf(-x));
    case 2: return tanhf(x);
    case 3:
      if (gelu_tanh) {
        const float c = 0.7978845608028654f;  // sqrt(2 / pi)
        return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
      }
      return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case 4: return x / (1.0f + expf(-x));
    default: {
      const float r = x + 3.0f;
      const float c = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
      return x * c / 6.0f;
    }
  }
}

PTERON_HD void unary_element(const UnaryParams& p, const float* x, float* out, int64_t i) {
  out[i] = unary_op(p.op, p.gelu_tanh, x[i]);
}

// ---- permute_f32 and copy_f32 ------------------------------------------------------

struct PermuteParams {
  int64_t numel;
  int64_t out_sizes[kMaxRank];
  int64_t in_strides[kMaxRank];  // the input's stride of the dimension out dim d reads
  int32_t rank, pad_;
};

PTERON_HD void permute_element(const PermuteParams& p, const float* x, float* out, int64_t i) {
  int64_t rest = i, src = 0;
  for (int32_t d = p.rank - 1; d >= 0; --d) {
    src += (rest % p.out_sizes[d]) * p.in_strides[d];
    rest /= p.out_sizes[d];
  }
  out[i] = x[src];
}

struct CopyParams {
  int64_t numel;
};

PTERON_HD void copy_element(const CopyParams&, const float* x, float* out, int64_t i) { out[i] = x[i]; }

}  // namespace k
}  // namespace cuda
}  // namespace pteron
