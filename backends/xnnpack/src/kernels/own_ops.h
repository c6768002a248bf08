// SPDX-License-Identifier: BSD-3-Clause
// own_ops.h - pteron's own kernels for XNNPACK node types.
//
// Every node type has (or will have) a kernel here, so the delegate runs with
// no XNNPACK library at all. Buffers are float32 (or, for a quantized value
// between two int8 nodes, its 8-bit codes: graph.h, Node::coded), dense and
// row-major in XNNPACK's own layout (NHWC for image tensors); shapes are
// already inferred (shape_inference.cpp, infer_shape). The kernels are split
// by family, one file each:
//   own_ops.cpp         layout: transpose, reshape, slice, concatenate, copy,
//                       convert, constant pad; and own_kernel() itself;
//   own_linear.cpp      fully connected, convolution (dense, depthwise,
//                       transposed), batch matrix multiply;
//   own_qlinear.cpp     the int8 GEMM path of fully connected and convolution;
//   own_qcodes.cpp      the int8 codes paths of depthwise convolution, Add, Clamp;
//   own_elementwise.cpp binary and unary element-wise nodes, pooling,
//                       softmax, resize.
#ifndef PTERON_XNNPACK_OWN_OPS_H
#define PTERON_XNNPACK_OWN_OPS_H

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "pteron_cpu/gemm.h"  // GemmAct
#include "graph.h"

namespace pteron {
namespace xnnpack {

// pteron_parallel_for (pteron/kernel.h) over [0, n) with a callable f(begin, end), at least
// `grain` items per chunk.
template <typename F>
void parallel(size_t n, size_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;
  if (n == 0) return;
  pteron_parallel_for(
      0, int64_t(n), int64_t(std::max<size_t>(grain, 1)),
      [](void* u, int64_t b, int64_t e) { (*static_cast<Fn*>(u))(size_t(b), size_t(e)); }, &f);
}

// What a kernel prepares once per node at method load (packed weights,
// tables, scratch it reuses). Owned by the delegate.
struct NodeState {
  virtual ~NodeState() = default;
  // The int8 GEMM's ISA level when this node runs on the int8 path, else null. Such a node's
  // kernel rounds its quantized output onto the output's grid itself.
  virtual const char* int8_path() const { return nullptr; }
  // Values held as 8-bit codes (graph.h, Node::coded; plan/qcodes.cpp chooses them): can the
  // kernel read input i as codes, and write its output as codes? Must every quantized input be
  // codes for its int8 path to run (else it runs its float32 path, kCodedPath unset)?
  virtual bool reads_codes(size_t i) const { return false; }
  virtual bool writes_codes() const { return false; }
  virtual bool codes_only() const { return false; }
};

struct OwnKernel {
  // Null, or called once per node at method load, before any run: `g` holds
  // the constants (g.values[v].constant, shape g.values[v].dims). May leave
  // *state null. False with *err set fails method load.
  bool (*prepare)(const Graph& g, const Node& n, std::unique_ptr<NodeState>* state,
                  std::string* err);
  // Runs node `n`: ptr[v] is value v's storage, shapes[v] its shape in this
  // call; `state` is what prepare made (or null). Applies the node's output
  // range. May split its work with pteron_parallel_for; never called
  // concurrently for one node. False with *err set (naming the node) on
  // failure.
  bool (*run)(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
              const std::vector<float*>& ptr, std::string* err);
};

// A flag of passes/fusion.cpp's fuse_elementwise pass, never in a blob (XNNPACK's
// node flags are below bit 16): on a Sigmoid node, the node computes
// x * sigmoid(x) (SiLU: a Sigmoid and the Multiply of its input by its
// result, fused). Only pteron's kernel runs such a node.
constexpr uint32_t kOwnFlagSilu = 0x80000000u;
// Another, on a DepthwiseConv2d, Conv2d or FullyConnected node: the
// activation p[15] names (kOwnActSigmoid, kOwnActSilu, kOwnActHardswish) is
// applied to its output, after its output range (the activation node that
// read it, fused; p[15] is unused by those node types otherwise).
constexpr uint32_t kOwnFlagEpilogue = 0x40000000u;
// A Concatenate that took over the inputs of the Concatenates before it
// (passes/fusion.cpp, flatten_concatenations): more inputs than its op's name says,
// at most kOwnMaxConcatInputs; pteron's kernel only.
constexpr uint32_t kOwnFlagFlattened = 0x20000000u;
// Another, on a 1x1 Conv2d (stride 1, no padding, one group): the node reads the input of a 1x1
// DepthwiseConv2d it absorbed and maps it per channel as that node did, x * scale + shift clamped
// to its output range (Node::pre_*; passes/fusion_conv.cpp, fuse_channel_affine), tile by tile
// inside the GEMM (pteron_cpu::gemm_packed_pre).
constexpr uint32_t kOwnFlagPrologue = 0x10000000u;
// Another, on a Conv2d of one group with a bias: a fourth input, of the output's shape, is added to
// the output tile by tile inside the GEMM, then clamped to [Node::res_min, res_max]
// (passes/fusion_conv.cpp, fuse_residual_add: the Add that read the convolution's output, fused).
// In a call where that input is smaller and broadcasts into the output (a dynamic program's inputs
// of different sizes), it is added after the GEMM with the Add node's broadcasting kernel instead.
constexpr uint32_t kOwnFlagResidual = 0x08000000u;
// Another, on a DepthwiseConv2d (channel multiplier 1, dilation 1): its input is that of the 1x1
// Conv2d it absorbed, whose output rows it computes as its window needs them (Node::exp_*;
// passes/fusion_conv.cpp, fuse_expand_depthwise; pteron_cpu::expand_depthwise_conv2d).
constexpr uint32_t kOwnFlagExpand = 0x04000000u;
// The most inputs pteron's concatenation kernel takes (own_ops.cpp).
constexpr size_t kOwnMaxConcatInputs = 8;
constexpr uint32_t kOwnActSigmoid = 1, kOwnActSilu = 2, kOwnActHardswish = 3;

// The activation of a kOwnFlagEpilogue node (GemmAct::on false without the
// flag). Call only on a node whose epilogue_ok() held.
pteron_cpu::GemmAct fused_activation(const Node& n);
// False with *why set when n has kOwnFlagEpilogue and p[15] names no known
// activation.
bool epilogue_ok(const Node& n, std::string* why);

// The kernel for node `n`, or null: then *why says why when the node type is
// known but its parameters are not supported (empty: no kernel for the type).
const OwnKernel* own_kernel(const Node& n, std::string* why);

// The families own_kernel() asks in turn; each returns null for node types
// that are not its own.
const OwnKernel* layout_kernel(const Node& n, std::string* why);
const OwnKernel* linear_kernel(const Node& n, std::string* why);
const OwnKernel* elementwise_kernel(const Node& n, std::string* why);

// x (a node's output of shape `shape`, dense) rounded onto the grid of its
// quantization q (graph.h, Quant): each element quantized and dequantized
// again, per tensor or (Dynamic) per token with parameters chosen from that
// token. NaN becomes the lowest quantized value. Nothing for QuantKind::None.
void requantize(const Quant& q, float* x, const Shape& shape);

// The int8 path of FullyConnected and Conv2d (own_qlinear.cpp): prepared at method load where
// the node qualifies (*q set; null: the float path runs the node), run instead of the float
// kernel. qlinear_path() names the int8 GEMM's ISA level ("avx512vnni", "avx512", "avx2",
// "baseline").
struct QLinear;
struct QLinearDeleter {
  void operator()(QLinear* q) const;
};
using QLinearPtr = std::unique_ptr<QLinear, QLinearDeleter>;
bool prepare_qlinear(const Graph& g, const Node& n, QLinearPtr* q, std::string* err);
bool run_qlinear(QLinear& q, const Node& n, const std::vector<Shape>& shapes,
                 const std::vector<float*>& ptr, std::string* err);
const char* qlinear_path();
// The path of one node's int8 kernel: qlinear_path(), or the int4 GEMM's level for a fully
// connected node with 4-bit groupwise weights (q4gemm.h).
const char* qlinear_node_path(const QLinear& q);
// Whether the int8 FullyConnected / Conv2d path reads a per-tensor input as codes (a dynamic one
// it quantizes itself) and writes a per-tensor output as codes.
bool qlinear_reads_codes(const QLinear& q);
bool qlinear_writes_codes(const QLinear& q);

// The int8 codes paths of DepthwiseConv2d (channel multiplier 1), Add and Clamp (own_qcodes.cpp): codes
// in (every quantized input held as codes: kCodedPath), codes or rounded float32 out, on
// pteron_cpu's qgemm.h kernels. Prepared at method load where the node qualifies (*q set).
struct QCodes;
struct QCodesDeleter {
  void operator()(QCodes* q) const;
};
using QCodesPtr = std::unique_ptr<QCodes, QCodesDeleter>;
bool prepare_qcodes(const Graph& g, const Node& n, QCodesPtr* q, std::string* err);
bool run_qcodes(const QCodes& q, const Node& n, const std::vector<Shape>& shapes,
                const std::vector<float*>& ptr, std::string* err);

// The bounds, in grid units (quant_min / quant_max minus the zero point), that a node's output
// of per-tensor quantization q is clamped to after rounding: the grid with the node's output
// range folded in (a range beyond the grid clamps to the grid's end, as rounding a clamped
// float32 value would).
void grid_bounds(const Quant& q, const Node& n, float* lo, float* hi);

// The code of a per-tensor quantized value's zero point (qgemm.h's codes: q + 128 for QInt8,
// q for QUInt8): what a code minus it is, q - zero_point.
inline int32_t code_offset(const Quant& q) { return q.zero_point + (q.qmin < 0 ? 128 : 0); }

// One token's quantization parameters (x: n > 0 floats), as PyTorch's
// choose_qparams_per_token_asymmetric computes them (int8): scale, 1 / scale and the zero point
// (an integer in [-128, 127], as a float). requantize's Dynamic kind uses them; so does the int8
// fully connected node of a dynamically quantized input (own_qlinear.cpp), which quantizes the
// same float input itself.
void token_qparams(const float* x, size_t n, float* scale, float* inv, float* zp);
// quantize_per_token's codes of n floats with token_qparams' inv and zp: round(x * inv + zp)
// (half to even), clamped to [-128, 127]; NaN gives -128.
void quantize_token(const float* x, size_t n, float inv, float zp, int8_t* q);

// out[i] = min(max(out[i], lo), hi) for i < count, NaN kept (XNNPACK's
// clamp of a NaN is not specified; pteron keeps PyTorch's NaN).
void apply_range(float* out, size_t count, float lo, float hi);

}  // namespace xnnpack
}  // namespace pteron

#endif
