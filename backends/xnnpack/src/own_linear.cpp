// SPDX-License-Identifier: BSD-3-Clause
// own_linear.cpp - pteron's kernels for the linear node types (own_ops.h):
// fully connected, convolution (dense, depthwise, transposed) and batch
// matrix multiply. float32, NHWC for image tensors.
#include <algorithm>
#include <string>
#include <vector>

#include "graph.h"
#include "own_ops.h"

namespace pteron {
namespace xnnpack {
namespace {

void batch_matmul(const float* a, const Shape& as, const float* b, const Shape& bs, bool tb,
                  float* c, const Shape& cs) {
  const size_t m = as[as.size() - 2], k = as[as.size() - 1];
  const size_t n = cs[cs.size() - 1];
  const size_t batch = numel(cs) / std::max<size_t>(m * n, 1);
  const size_t abatch = numel(as) / std::max<size_t>(m * k, 1);
  const size_t bbatch = numel(bs) / std::max<size_t>(k * n, 1);
  // Batch dims broadcast only as "equal" or "one side has a single matrix"
  // (what the exporter emits); infer_shape has checked they broadcast.
  for (size_t bi = 0; bi < batch; ++bi) {
    const float* A = a + (abatch == 1 ? 0 : bi) * m * k;
    const float* B = b + (bbatch == 1 ? 0 : bi) * k * n;
    float* C = c + bi * m * n;
    for (size_t i = 0; i < m; ++i) {
      float* row = C + i * n;
      for (size_t j = 0; j < n; ++j) row[j] = 0.0f;
      for (size_t p = 0; p < k; ++p) {
        const float av = A[i * k + p];
        if (tb) {
          for (size_t j = 0; j < n; ++j) row[j] += av * B[j * k + p];
        } else {
          const float* brow = B + p * n;
          for (size_t j = 0; j < n; ++j) row[j] += av * brow[j];
        }
      }
    }
  }
}

bool run_batch_matmul(const Node& n, NodeState*, const std::vector<Shape>& shapes,
                      const std::vector<float*>& ptr, std::string*) {
  float* out = ptr[n.outputs[0]];
  const Shape& os = shapes[n.outputs[0]];
  batch_matmul(ptr[n.inputs[0]], shapes[n.inputs[0]], ptr[n.inputs[1]], shapes[n.inputs[1]],
               n.flags & 1u, out, os);
  if (n.has_range()) apply_range(out, numel(os), n.out_min, n.out_max);
  return true;
}

const OwnKernel kBatchMatMul = {nullptr, &run_batch_matmul};

}  // namespace

const OwnKernel* linear_kernel(const Node& n, std::string* why) {
  switch (n.op) {
    case Op::BatchMatMul:
      if (n.flags & ~1u) {
        *why = "batch matrix multiply flags " + std::to_string(n.flags) + " are not understood";
        return nullptr;
      }
      return &kBatchMatMul;
    default: return nullptr;
  }
}

}  // namespace xnnpack
}  // namespace pteron
