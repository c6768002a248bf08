// SPDX-License-Identifier: BSD-3-Clause
// own_elementwise.cpp - pteron's kernels for the element-wise node types
// (own_ops.h): binary and unary nodes, pooling, softmax, resize. float32,
// NHWC for image tensors.
#include <cmath>
#include <string>
#include <vector>

#include "graph.h"
#include "own_ops.h"

namespace pteron {
namespace xnnpack {
namespace {

template <typename F>
void unary(const float* in, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

bool run_unary(const Node& n, NodeState*, const std::vector<Shape>& shapes,
               const std::vector<float*>& ptr, std::string* err) {
  const float* in = ptr[n.inputs[0]];
  float* out = ptr[n.outputs[0]];
  const size_t count = numel(shapes[n.outputs[0]]);
  switch (n.op) {
    case Op::Gelu:
      unary(in, out, count,
            [](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); });
      break;
    case Op::Tanh: unary(in, out, count, [](float x) { return std::tanh(x); }); break;
    case Op::Exp: unary(in, out, count, [](float x) { return std::exp(x); }); break;
    case Op::Log: unary(in, out, count, [](float x) { return std::log(x); }); break;
    case Op::Sin: unary(in, out, count, [](float x) { return std::sin(x); }); break;
    case Op::Cos: unary(in, out, count, [](float x) { return std::cos(x); }); break;
    case Op::ReciprocalSquareRoot:
      unary(in, out, count, [](float x) { return 1.0f / std::sqrt(x); });
      break;
    default:
      *err = std::string("node ") + std::to_string(n.index) + " (" + op_name(n.op) +
             ") is not a unary node";
      return false;
  }
  if (n.has_range()) apply_range(out, count, n.out_min, n.out_max);
  return true;
}

const OwnKernel kUnary = {nullptr, &run_unary};

}  // namespace

const OwnKernel* elementwise_kernel(const Node& n, std::string*) {
  switch (n.op) {
    case Op::Gelu:
    case Op::Tanh:
    case Op::Exp:
    case Op::Log:
    case Op::Sin:
    case Op::Cos:
    case Op::ReciprocalSquareRoot: return &kUnary;
    default: return nullptr;
  }
}

}  // namespace xnnpack
}  // namespace pteron
