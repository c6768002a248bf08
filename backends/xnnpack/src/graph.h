// SPDX-License-Identifier: BSD-3-Clause
// graph.h - the XNNPACK delegate's own view of a processed blob.
//
// Reading order: blob header -> flatbuffer (verified) -> Graph (values and
// nodes copied out of the flatbuffer, every id checked) -> shape inference (shape_inference.cpp).
// Nothing here calls XNNPACK; plan/ turns a Graph into steps and segments.
#ifndef PTERON_XNNPACK_GRAPH_H
#define PTERON_XNNPACK_GRAPH_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "pteron/kernel.h"
#include "xnn_graph_generated.h"

namespace pteron {
namespace xnnpack {

using Op = ::pteron::xnn::Op;
using Shape = std::vector<size_t>;

constexpr uint32_t kNoValue = 0xFFFFFFFFu;  // "no bias", "not external"

// Ends a parse_blob error about a valid blob this delegate does not run (a
// datatype or quantization it has no kernel for): init() fails those with
// NOT_SUPPORTED, every other parse error with INVALID_PROGRAM.
constexpr const char* kUnsupported = "not supported by pteron's XnnpackBackend";

// Name of a node type as pteron's schema spells it ("StaticTranspose").
const char* op_name(Op op);

// The quantization of a value with one of XNNPACK's quantized datatypes
// (upstream's XNNGraph schema, XNNQuantizedTensorValue). The delegate keeps
// every value as float32: a quantized value holds its dequantized numbers,
// (q - zero_point) * scale, so every float kernel reads it as it is, and the
// node that writes it rounds its result onto that grid (quantize, then
// dequantize: plan/qcodes.cpp, needs_requantize). Between two nodes that both
// have an int8 path (int8 GEMM, depthwise convolution, Add) a per-tensor
// value is held as its 8-bit codes instead (Node::coded). Constants are dequantized
// once, when the blob is read. The arithmetic is PyTorch's
// quantized_decomposed reference in float32:
//   Tensor (QInt8, QUInt8): q = clamp(round(x * f32(1 / scale)) + zero_point, qmin, qmax)
//   Dynamic (QDInt8): per token (the trailing `token_dims` dims), scale and
//     zero point chosen as choose_qparams_per_token_asymmetric does (int8,
//     range widened to hold 0), then q = clamp(round(x * (1 / scale) + zp))
// round() is half to even.
enum class QuantKind : uint8_t { None, Tensor, Dynamic };
struct Quant {
  QuantKind kind = QuantKind::None;
  float scale = 1.0f;      // Tensor
  int32_t zero_point = 0;  // Tensor
  int32_t qmin = 0, qmax = 0;
  uint32_t token_dims = 1;  // Dynamic: trailing dims that make one token
};

// The integers of an int8 weight constant (QInt8 with zero point 0, or QCInt8 along dim 0),
// kept beside its dequantized Value::constant for the int8 kernels (own_qlinear.cpp).
struct QConstant {
  std::vector<int8_t> q;      // the constant's elements, row-major
  std::vector<float> scales;  // one per index of dim 0 (per-tensor: repeated)
};

// A 4-bit groupwise weight constant's codes as the blob holds them (torchao's layout: [n, k]
// row-major, two codes per byte, element 2t in the low nibble, code = weight + 8) and its scales
// [n, k / group_size]: the int4 path of own_qlinear.cpp reads these, the float32 nodes the
// dequantized constant.
struct Q4Constant {
  int64_t n = 0, k = 0, group_size = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
};

struct Value {
  uint32_t id = 0;                  // id as nodes refer to it
  Shape dims;                       // as declared in the blob (upper bounds if dynamic)
  const float* constant = nullptr;  // non-null for a constant
  uint32_t external = kNoValue;     // index among the delegate's arguments
  bool graph_input = false;
  bool graph_output = false;
  // A float16 (F16) value: float32 inside the delegate (constants converted at load, every
  // node computing in float32), float16 only at the delegate's boundary: a graph input is
  // widened into a float32 copy, a graph output rounded (to nearest even) from one.
  bool half = false;
  Quant quant;  // of a non-constant quantized value (constants are dequantized)
  std::shared_ptr<const QConstant> qconstant;  // an int8 weight constant's integers, or null
  std::shared_ptr<const Q4Constant> q4constant;  // a 4-bit groupwise weight's codes, or null
};

// One node, its parameters copied out of the flatbuffer.
struct Node {
  Op op = Op::NONE;
  uint32_t index = 0;            // position in the blob's node list
  uint32_t debug_handle = 0;     // the blob's debug handle (the exporter's; 0: none)
  std::vector<uint32_t> inputs;  // value indices (not ids), in operand order
  std::vector<uint32_t> outputs;
  uint32_t flags = 0;
  uint32_t p[16] = {};               // integer parameters, see graph.cpp per kind
  float f = 0.0f;                    // float parameter (pad value, alpha, slope)
  std::vector<size_t> list0, list1;  // permutation / new shape / paddings / offsets
  // passes/fusion.cpp: a FullyConnected whose input is dynamically quantized (QDInt8) by a Convert
  // node: that Convert's float32 input, which the int8 kernel quantizes itself.
  uint32_t qsource = kNoValue;
  // passes/fusion_conv.cpp (fuse_channel_affine): on a Conv2d flagged kOwnFlagPrologue, the
  // constants of the 1x1 DepthwiseConv2d it absorbed (its filter: one scale per input channel; its
  // bias, or kNoValue for none) and that node's output range, applied to the input before the GEMM.
  uint32_t pre_scale = kNoValue, pre_shift = kNoValue;
  float pre_min = -std::numeric_limits<float>::infinity();
  float pre_max = std::numeric_limits<float>::infinity();
  // passes/fusion_conv.cpp (fuse_residual_add): on a Conv2d flagged kOwnFlagResidual (its fourth
  // input the residual), the output range of the Add it absorbed, applied after the addition.
  float res_min = -std::numeric_limits<float>::infinity();
  float res_max = std::numeric_limits<float>::infinity();
  // passes/fusion_conv.cpp (fuse_expand_depthwise): on a DepthwiseConv2d flagged kOwnFlagExpand,
  // whose input is then the input of the 1x1 Conv2d it absorbed, that Conv2d's filter ([channels,
  // 1, 1, input channels], OHWI), its bias (kNoValue: none), its output range and its fused
  // activation (kOwnAct*, 0: none), computed row by row into the rows the depthwise window reads.
  uint32_t exp_filter = kNoValue, exp_bias = kNoValue, exp_act = 0;
  float exp_min = -std::numeric_limits<float>::infinity();
  float exp_max = std::numeric_limits<float>::infinity();
  // plan/placement.cpp (write_concatenation_inputs_in_place): on a Conv2d, the row stride of its
  // output (0: dense) when it writes its channels straight into a concatenation's output; on that
  // Concatenate, bit i set when input i is written so (the node does not copy it).
  size_t out_ldc = 0;
  uint32_t in_place = 0;
  // plan/qcodes.cpp (choose_codes): which of the node's values are held as 8-bit activation codes
  // instead of float32 (qgemm.h's codes: q + 128 for QInt8, q for QUInt8, one byte per element),
  // and whether its int8 codes path runs (kCodedPath): bit i for input i (i < 8), kCodedOutput.
  uint32_t coded = 0;
  float out_min = -std::numeric_limits<float>::infinity();
  float out_max = std::numeric_limits<float>::infinity();
  bool has_range() const {
    return out_min != -std::numeric_limits<float>::infinity() ||
           out_max != std::numeric_limits<float>::infinity();
  }
};

constexpr uint32_t kCodedOutput = 1u << 31;
constexpr uint32_t kCodedPath = 1u << 30;
constexpr size_t kCodedInputs = 8;

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
