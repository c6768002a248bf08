// SPDX-License-Identifier: BSD-3-Clause
// plan.h - one launch per node of a PteronCudaBackend graph: which kernel of
// kernels.h, its parameters and its index space, computed at method load from
// the blob's shapes. The device launcher and the CPU reference runner use
// the same plan: element-wise kernels run blocks of kElementThreads threads
// over a grid-stride loop (grid.x at most kElementBlocks), gemm_f32 the tiled
// grid of kernels.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph.h"
#include "kernels.h"
#include "launch_abi.h"

namespace pteron {
namespace cuda {

constexpr uint32_t kElementThreads = 256;
constexpr uint32_t kElementBlocks = 1u << 20;

struct Launch {
  KernelId kernel;
  int64_t numel = 0;              // output elements
  int64_t threads = 0;            // the index space: output elements, or rows (softmax, layer norm)
  uint32_t grid[3] = {1, 1, 1};   // blocks (x, y, z)
  uint32_t block[3] = {1, 1, 1};  // threads per block (x, y, z)
  std::vector<uint32_t> inputs;   // value indices, in the kernel's input order
  uint32_t output = 0;            // value index
  union {
    k::GemmParams gemm;
    k::BinaryParams binary;
    k::UnaryParams unary;
    k::StridedParams strided;
    k::CopyParams copy;
    k::SoftmaxParams softmax;
    k::LayerNormParams layer_norm;
    k::ReduceParams reduce;
    k::ConvParams conv;
    k::PoolParams pool;
    k::CatParams cat;
  } p;
};

// The launches of g's nodes, in order. False with *code and *err:
//  - PTERON_ERROR_NOT_SUPPORTED: a kernel this pteron does not have (named),
//    a dtype other than float32, or a GEMM whose grid exceeds CUDA's limits
//    (more than 65535 blocks of rows or batches);
//  - PTERON_ERROR_INVALID_PROGRAM: parameters or shapes that do not fit the
//    kernel (kernels.h states what each needs), rank above k::kMaxRank.
bool plan_graph(const Graph& g, std::vector<Launch>* out, int32_t* code, std::string* err);

// The kernelParams of launch l (launch_abi.h) given each value's address, as the kernel
// reads it (a CUdeviceptr on the device, a host address on the CPU). It points at l.p:
// l must outlive it and stay in place.
std::unique_ptr<LaunchArgs> launch_args(const Launch& l, const std::vector<uint64_t>& address);

}  // namespace cuda
}  // namespace pteron
