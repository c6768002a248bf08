// SPDX-License-Identifier: BSD-3-Clause
// graph.h - the XNNPACK delegate's own view of a processed blob.
//
// Reading order: blob header -> flatbuffer (verified) -> Graph (values and
// nodes copied out of the flatbuffer, every id checked) -> shape inference.
// Nothing here calls XNNPACK; backend.cpp turns a Graph into segments.
#ifndef PTERON_XNNPACK_GRAPH_H
#define PTERON_XNNPACK_GRAPH_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pteron/kernel.h"
#include "xnn_graph_generated.h"

namespace pteron {
namespace xnnpack {

using Op = ::pteron::xnn::Op;
using Shape = std::vector<size_t>;

constexpr uint32_t kNoValue = 0xFFFFFFFFu;  // "no bias", "not external"

// Name of a node type as pteron's schema spells it ("StaticTranspose").
const char* op_name(Op op);

struct Value {
  uint32_t id = 0;                  // id as nodes refer to it
  Shape dims;                       // as declared in the blob (upper bounds if dynamic)
  const float* constant = nullptr;  // non-null for a constant
  uint32_t external = kNoValue;     // index among the delegate's arguments
  bool graph_input = false;
  bool graph_output = false;
};

// One node, its parameters copied out of the flatbuffer.
struct Node {
  Op op = Op::NONE;
  uint32_t index = 0;            // position in the blob's node list
  std::vector<uint32_t> inputs;  // value indices (not ids), in operand order
  std::vector<uint32_t> outputs;
  uint32_t flags = 0;
  uint32_t p[16] = {};               // integer parameters, see graph.cpp per kind
  float f = 0.0f;                    // float parameter (pad value, alpha, slope)
  std::vector<size_t> list0, list1;  // permutation / new shape / paddings / offsets
  float out_min = -std::numeric_limits<float>::infinity();
  float out_max = std::numeric_limits<float>::infinity();
  bool has_range() const {
    return out_min != -std::numeric_limits<float>::infinity() ||
           out_max != std::numeric_limits<float>::infinity();
  }
};

struct Graph {
  std::vector<Value> values;      // dense; nodes refer to them by index
  std::vector<Node> nodes;        // in the blob's (topological) order
  std::vector<uint32_t> inputs;   // value indices of the graph inputs
  std::vector<uint32_t> outputs;  // value indices of the graph outputs
  uint32_t num_externals = 0;
  // Constants copied out of the blob's constant region (named data is
  // referenced in place: it lives as long as the program).
  std::vector<std::vector<float>> owned_constants;
};

// Parses and checks a processed blob. On failure returns false with `err`
// set to a message naming what is wrong (offset, value id, node index).
bool parse_blob(pteron_kernel_context* ctx, const uint8_t* blob, size_t size, Graph* g,
                std::string* err);

// Output shape of node `n` given the current shapes of all values (its inputs
// must be set). Returns false with `err` when the shapes do not fit.
bool infer_shape(const Graph& g, const Node& n, std::vector<Shape>& shapes, std::string* err);

// Largest tensor the backend accepts (elements); anything larger in a blob is
// malformed, and products of dims are checked against it before use.
constexpr size_t kMaxElements = size_t(1) << 36;

// Element count, or kMaxElements + 1 when it exceeds kMaxElements.
inline size_t checked_numel(const Shape& s) {
  size_t n = 1;
  for (size_t d : s) {
    if (d != 0 && n > kMaxElements / d) return kMaxElements + 1;
    n *= d;
  }
  return n;
}

inline size_t numel(const Shape& s) {
  size_t n = 1;
  for (size_t d : s) n *= d;
  return n;
}
std::string shape_str(const Shape& s);

}  // namespace xnnpack
}  // namespace pteron

#endif
