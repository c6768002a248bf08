// SPDX-License-Identifier: BSD-3-Clause
// plan_check.cpp - pteron-test-cuda-plan (tests only): plan_graph on graphs
// that the blob reader accepts but whose kernel parameters are wrong or
// hostile (huge strides or windows that would overflow the index arithmetic,
// reads outside an input, shapes that do not fit the kernel): each must fail
// with the expected code and name the node, never compute an index out of
// range. Valid graphs of each kernel must plan. Prints one line per case and
// "N plan checks passed"; exits 1 on the first wrong outcome.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../src/plan.h"
#include "pteron/types.h"

using pteron::cuda::Graph;
using pteron::cuda::Launch;
using pteron::cuda::Node;
using pteron::cuda::Value;

namespace {

Value val(std::vector<int64_t> shape, int32_t external = -1, bool out = false) {
  Value v;
  v.dtype = 6;
  v.shape = shape;
  v.numel = 1;
  for (int64_t d : shape) v.numel *= d;
  v.external = external;
  v.is_output = out;
  return v;
}

// A graph of one node: inputs are externals 0.., the output the last external.
Graph one(const std::string& kernel, std::vector<std::vector<int64_t>> ins, std::vector<int64_t> out,
          std::vector<int64_t> ints, std::vector<float> floats = {}) {
  Graph g;
  Node n;
  n.kernel = kernel;
  for (size_t i = 0; i < ins.size(); ++i) {
    g.values.push_back(val(ins[i], int32_t(i)));
    n.inputs.push_back(uint32_t(i));
  }
  g.values.push_back(val(out, int32_t(ins.size()), true));
  n.outputs.push_back(uint32_t(ins.size()));
  n.ints = ints;
  n.floats = floats;
  g.nodes.push_back(n);
  g.num_externals = uint32_t(ins.size() + 1);
  return g;
}

int checks = 0;

bool expect(const char* what, const Graph& g, int32_t want, const char* phrase) {
  std::vector<Launch> ls;
  int32_t code = PTERON_OK;
  std::string err;
  const bool ok = pteron::cuda::plan_graph(g, &ls, &code, &err);
  const int32_t got = ok ? PTERON_OK : code;
  const bool right = got == want && (ok || err.find(phrase) != std::string::npos);
  std::printf("%s %s: %s\n", right ? "ok  " : "FAIL", what, ok ? "planned" : err.c_str());
  ++checks;
  return right;
}

}  // namespace

int main() {
  const int64_t big = int64_t(1) << 39;
  bool all = true;
  const int32_t bad = PTERON_ERROR_INVALID_PROGRAM;
  // strided_f32
  all &= expect("strided transpose", one("strided_f32", {{3, 4}}, {4, 3}, {0, 1, 4}), PTERON_OK, "");
  all &= expect("strided read past the input", one("strided_f32", {{3, 4}}, {4, 3}, {1, 1, 4}), bad,
                "read outside input");
  all &= expect("strided stride overflowing the index", one("strided_f32", {{big}}, {3, 3},
                {0, big, big}), bad, "read outside input");
  all &= expect("strided negative offset", one("strided_f32", {{12}}, {12}, {-1, 1}), bad,
                "read outside input");
  // conv2d_f32
  all &= expect("conv 3x3", one("conv2d_f32", {{1, 2, 5, 5}, {4, 2, 3, 3}}, {1, 4, 3, 3},
                {1, 1, 0, 0, 1, 1, 1, 0}), PTERON_OK, "");
  all &= expect("conv dilation overflowing the output size", one("conv2d_f32",
                {{1, 2, 5, 5}, {4, 2, 3, 3}}, {1, 4, 3, 3}, {1, 1, 0, 0, int64_t(1) << 40, 1, 1, 0}),
                bad, "conv2d_f32");
  all &= expect("conv kernel larger than allowed", one("conv2d_f32",
                {{1, 1, 2, 2}, {1, 1, big, 1}}, {1, 1, 1, 2}, {1, 1, 0, 0, 1, 1, 1, 0}), bad,
                "conv2d_f32");
  all &= expect("conv output of the wrong size", one("conv2d_f32", {{1, 2, 5, 5}, {4, 2, 3, 3}},
                {1, 4, 5, 5}, {1, 1, 0, 0, 1, 1, 1, 0}), bad, "conv2d_f32");
  all &= expect("conv groups not dividing the channels", one("conv2d_f32",
                {{1, 3, 5, 5}, {4, 1, 3, 3}}, {1, 4, 3, 3}, {1, 1, 0, 0, 1, 1, 2, 0}), bad, "conv2d_f32");
  // pool2d_f32
  all &= expect("max pool 2x2", one("pool2d_f32", {{1, 1, 4, 4}}, {1, 1, 2, 2},
                {0, 2, 2, 2, 2, 0, 0, 1, 1, 0, 0}), PTERON_OK, "");
  all &= expect("pool negative padding", one("pool2d_f32", {{1, 1, 4, 4}}, {1, 1, 2, 2},
                {0, 2, 2, 2, 2, -1, 0, 1, 1, 0, 0}), bad, "pool2d_f32");
  all &= expect("pool huge stride", one("pool2d_f32", {{1, 1, 4, 4}}, {1, 1, 2, 2},
                {0, 2, 2, big, 2, 0, 0, 1, 1, 0, 0}), bad, "pool2d_f32");
  // gemm_f32, binary_f32, softmax_f32, cat_f32, reduce_f32
  all &= expect("mm", one("gemm_f32", {{2, 3}, {3, 4}}, {2, 4}, {0}), PTERON_OK, "");
  all &= expect("mm inner sizes differ", one("gemm_f32", {{2, 3}, {5, 4}}, {2, 4}, {0}), bad, "gemm_f32");
  all &= expect("addmm bias not broadcastable", one("gemm_f32", {{3}, {2, 3}, {3, 4}}, {2, 4}, {1}),
                bad, "does not broadcast");
  all &= expect("bmm more batches than a grid has", one("gemm_f32", {{70000, 1, 1}, {70000, 1, 1}},
                {70000, 1, 1}, {2}), PTERON_ERROR_NOT_SUPPORTED, "grid");
  all &= expect("binary not broadcastable", one("binary_f32", {{2, 3}, {4}}, {2, 3}, {0}), bad,
                "do not broadcast");
  all &= expect("softmax dim out of range", one("softmax_f32", {{2, 3}}, {2, 3}, {2, 0}), bad,
                "softmax_f32");
  all &= expect("cat sizes not adding up", one("cat_f32", {{2, 3}, {2, 3}}, {2, 7}, {1}), bad,
                "add up");
  all &= expect("cat of 9 inputs", one("cat_f32", std::vector<std::vector<int64_t>>(9, {1}), {9}, {0}),
                bad, "1 to 8");
  all &= expect("reduce of a dim twice", one("reduce_f32", {{2, 3}}, {2}, {0, 1, 1}), bad, "dim");
  all &= expect("unknown kernel", one("sort_f32", {{4}}, {4}, {}), PTERON_ERROR_NOT_SUPPORTED,
                "sort_f32");
  all &= expect("unary op out of range", one("unary_f32", {{4}}, {4}, {13, 0}), bad, "op 13");
  if (!all) return 1;
  std::printf("%d plan checks passed\n", checks);
  return 0;
}
