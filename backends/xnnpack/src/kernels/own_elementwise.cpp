// SPDX-License-Identifier: BSD-3-Clause
// own_elementwise.cpp - pteron's kernels for the NHWC window and element-wise
// node types (own_ops.h): depthwise convolution, max / average / global
// average pooling, bilinear resize, softmax, the binary nodes (NumPy
// broadcasting, PReLU) and the unary nodes. float32, NHWC for image tensors.
// The loops are pteron_cpu's (runtime/cpu/include/pteron_cpu/nhwc.h: vectorised per ISA
// level, split over the thread pool); this file checks each node's
// parameters once at method load (refusing, with the node and the parameter
// named, what it does not handle), prepares what it can (the depthwise
// filter and bias), and maps a node onto its driver.
//
// The meaning of each node's parameters is XNNPACK's (xnnpack.h, and how
// xnn_library.cpp define_node passes them on); where XNNPACK's library would
// clamp a NaN, these kernels keep it, as PyTorch does.
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "graph.h"
#include "pteron_cpu/nhwc.h"
#include "own_ops.h"

namespace pteron {
namespace xnnpack {
namespace {

namespace cpu = ::pteron_cpu;

constexpr uint32_t kFlagKeepDims = 0x40;     // XNN_FLAG_KEEP_DIMS (pooling)
constexpr uint32_t kFlagAlignCorners = 0x8;  // XNN_FLAG_ALIGN_CORNERS (resize)
constexpr uint32_t kMaxWindowRows = uint32_t(cpu::kMaxWindowRows);  // the row drivers' limit

std::string node_str(const Node& n) {
  return "node " + std::to_string(n.index) + " (" + op_name(n.op) + ")";
}

// *why for a node whose type is handled but not its parameters: the caller
// (plan/sides.cpp) prefixes the node's index and type; "cannot run" makes
// method load fail with PTERON_ERROR_NOT_SUPPORTED.
bool refuse(const Node&, std::string* why, const std::string& what) {
  *why = what + "; pteron's kernel cannot run it";
  return false;
}

float range_lo(const Node& n) { return n.out_min; }
float range_hi(const Node& n) { return n.out_max; }

// ---- depthwise convolution ------------------------------------------------------------------

// The filter [kh * kw][channels] (XNNPACK's 1HWO as it is) and the bias
// (zeros without one), copied once; the zero row for the padding, sized at
// the first run of each input width.
struct DwState : NodeState {
  std::vector<float> w, bias, zeros;
  cpu::PackedWeights expand;  // kOwnFlagExpand: the absorbed 1x1 Conv2d's filter and bias
  QCodesPtr q;  // the int8 codes path (own_qcodes.cpp), when the node has one
  bool reads_codes(size_t i) const override { return q && i == 0; }
  bool writes_codes() const override { return q != nullptr; }
  bool codes_only() const override { return q != nullptr; }
};

bool dw_check(const Node& n, std::string* why) {
  if (!epilogue_ok(n, why)) return false;
  if ((n.flags & ~(kOwnFlagEpilogue | kOwnFlagExpand)) != 0)
    return refuse(n, why, "flags " + std::to_string(n.flags) + " are not supported (only 0)");
  if ((n.flags & kOwnFlagExpand) &&
      (n.exp_filter == kNoValue || n.p[8] != 1 || n.p[11] != 1 || n.p[4] > 16 ||
       (n.exp_act != 0 && (n.exp_act < kOwnActSigmoid || n.exp_act > kOwnActHardswish))))
    return refuse(n, why, "a fused 1x1 convolution needs dilation 1 and multiplier 1");
  if (n.p[10] != 1)
    return refuse(n, why,
                  "group_input_channels " + std::to_string(n.p[10]) + " is not supported (only 1)");
  if (n.p[4] > kMaxWindowRows)
    return refuse(
        n, why,
        "kernel_h " + std::to_string(n.p[4]) + " is above " + std::to_string(kMaxWindowRows));
  if (n.inputs.size() < 2) return refuse(n, why, "the node has no filter operand");
  return true;
}

bool dw_prepare(const Graph& g, const Node& n, std::unique_ptr<NodeState>* state,
                std::string* err) {
  const Value& w = g.values[n.inputs[1]];
  if (!w.constant) {
    *err = node_str(n) + ": the filter (value id " + std::to_string(w.id) +
           ") is not a constant; pteron's depthwise kernel needs static weights";
    return false;
  }
  const size_t c = size_t(n.p[12]) * n.p[11];
  const size_t taps = size_t(n.p[4]) * n.p[5];
  if (numel(w.dims) != taps * c) {
    *err = node_str(n) + ": filter of shape " + shape_str(w.dims) + " does not hold " +
           std::to_string(taps) + " x " + std::to_string(c) + " values";
    return false;
  }
  auto s = std::make_unique<DwState>();
  s->w.assign(w.constant, w.constant + taps * c);
  s->bias.assign(c, 0.0f);
  if (n.inputs.size() > 2) {
    const Value& b = g.values[n.inputs[2]];
    if (!b.constant || numel(b.dims) != c) {
      *err = node_str(n) + ": the bias (value id " + std::to_string(b.id) +
             ") is not a constant of " + std::to_string(c) + " values";
      return false;
    }
    s->bias.assign(b.constant, b.constant + c);
  }
  if (n.flags & kOwnFlagExpand) {  // fuse_expand_depthwise checked the shapes and constants
    const Value& ew = g.values[n.exp_filter];
    const float* eb = n.exp_bias != kNoValue ? g.values[n.exp_bias].constant : nullptr;
    if (!ew.constant || ew.dims.size() != 4 || ew.dims[0] != c ||
        (n.exp_bias != kNoValue && (!eb || numel(g.values[n.exp_bias].dims) != c))) {
      *err = node_str(n) + ": the fused 1x1 convolution's filter (value id " +
             std::to_string(ew.id) + ") is not a constant [" + std::to_string(c) + ", 1, 1, K]";
      return false;
    }
    const int64_t k = int64_t(ew.dims[3]);
    if (!s->expand.pack(k, int64_t(c), ew.constant, k, true, eb)) {
      *err = node_str(n) + ": out of memory packing the fused 1x1 convolution's filter";
      return false;
    }
  }
  if (!prepare_qcodes(g, n, &s->q, err)) return false;
  *state = std::move(s);
  return true;
}

// The activation code of a fused 1x1 convolution (Node::exp_act) as GemmAct.
cpu::GemmAct expand_activation(const Node& n) {
  Node a;
  a.flags = n.exp_act ? kOwnFlagEpilogue : 0;
  a.p[15] = n.exp_act;
  return fused_activation(a);
}

bool dw_run(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
            const std::vector<float*>& ptr, std::string* err) {
  DwState& s = *static_cast<DwState*>(state);
  if (s.q && (n.coded & kCodedPath)) return run_qcodes(*s.q, n, shapes, ptr, err);
  const Shape& x = shapes[n.inputs[0]];
  const Shape& y = shapes[n.outputs[0]];
  cpu::DwConv2d p;
  p.n = int64_t(x[0]);
  p.ih = int64_t(x[1]);
  p.iw = int64_t(x[2]);
  p.ic = int64_t(n.p[12]);
  p.m = int64_t(n.p[11]);
  p.oh = int64_t(y[1]);
  p.ow = int64_t(y[2]);
  p.kh = n.p[4];
  p.kw = n.p[5];
  p.sh = n.p[6];
  p.sw = n.p[7];
  p.dh = n.p[8];
  p.dw = n.p[9];
  p.pt = n.p[0];
  p.pl = n.p[3];
  p.w = s.w.data();
  p.bias = s.bias.data();
  p.lo = range_lo(n);
  p.hi = range_hi(n);
  const cpu::GemmAct act = fused_activation(n);
  p.act = act.on;
  p.act_op = act.op;
  const size_t row = size_t(p.iw) * size_t(p.ic);
  if (s.zeros.size() < row) {
    try {
      s.zeros.assign(row, 0.0f);
    } catch (...) {
      *err = node_str(n) + ": out of memory for a zero row of " + std::to_string(row) + " floats";
      return false;
    }
  }
  if (n.flags & kOwnFlagExpand) {
    cpu::ExpandDepthwise e;
    e.dw = p;
    e.w = &s.expand;
    e.lo = n.exp_min, e.hi = n.exp_max;
    e.act = expand_activation(n);
    if (!cpu::expand_depthwise_conv2d(e, ptr[n.inputs[0]], ptr[n.outputs[0]], s.zeros.data())) {
      *err = node_str(n) + ": out of memory for the rows of the fused 1x1 convolution";
      return false;
    }
    return true;
  }
  cpu::depthwise_conv2d(p, ptr[n.inputs[0]], ptr[n.outputs[0]], s.zeros.data());
  return true;
}

// ---- pooling ----------------------------------------------------------------------------------

bool pool_check(const Node& n, std::string* why) {
  if (n.flags & ~kFlagKeepDims)
    return refuse(n, why,
                  "flags " + std::to_string(n.flags) + " are not supported (only KEEP_DIMS)");
  if (n.p[4] > kMaxWindowRows)
    return refuse(
        n, why,
        "window_h " + std::to_string(n.p[4]) + " is above " + std::to_string(kMaxWindowRows));
  return true;
}

bool pool_run(const Node& n, NodeState*, const std::vector<Shape>& shapes,
              const std::vector<float*>& ptr, std::string*) {
  const Shape& x = shapes[n.inputs[0]];
  const Shape& y = shapes[n.outputs[0]];
  cpu::Pool2d p;
  p.n = int64_t(x[0]);
  p.ih = int64_t(x[1]);
  p.iw = int64_t(x[2]);
  p.c = int64_t(x[3]);
  p.oh = int64_t(y[1]);
  p.ow = int64_t(y[2]);
  p.kh = n.p[4];
  p.kw = n.p[5];
  p.sh = n.p[6];
  p.sw = n.p[7];
  // XNNPACK's average pooling has no dilation; a max pooling dilation of 0 means 1.
  const bool max = n.op == Op::MaxPool2d;
  p.dh = max && n.p[8] ? n.p[8] : 1;
  p.dw = max && n.p[9] ? n.p[9] : 1;
  p.pt = n.p[0];
  p.pl = n.p[3];
  p.lo = range_lo(n);
  p.hi = range_hi(n);
  if (max)
    cpu::max_pool2d(p, ptr[n.inputs[0]], ptr[n.outputs[0]]);
  else
    cpu::avg_pool2d(p, ptr[n.inputs[0]], ptr[n.outputs[0]]);
  return true;
}

// The partial sums of a large image (nhwc.h), sized at the first run of each shape.
struct GlobalPoolState : NodeState {
  std::vector<float> partial;
};

bool global_pool_prepare(const Graph&, const Node&, std::unique_ptr<NodeState>* state,
                         std::string*) {
  state->reset(new GlobalPoolState);
  return true;
}

bool global_pool_run(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
                     const std::vector<float*>& ptr, std::string* err) {
  GlobalPoolState& s = *static_cast<GlobalPoolState*>(state);
  const Shape& x = shapes[n.inputs[0]];
  const int64_t b = int64_t(x[0]), hw = int64_t(x[1] * x[2]), c = int64_t(x[3]);
  const int64_t parts = cpu::global_avg_pool2d_parts(hw, c);
  if (parts > 1 && s.partial.size() < size_t(b * parts * c)) {
    try {
      s.partial.resize(size_t(b * parts * c));
    } catch (...) {
      *err = node_str(n) + ": out of memory for the partial sums";
      return false;
    }
  }
  cpu::global_avg_pool2d(b, hw, c, ptr[n.inputs[0]], ptr[n.outputs[0]], range_lo(n), range_hi(n),
                         s.partial.data());
  return true;
}

// ---- resize -----------------------------------------------------------------------------------

struct ResizeState : NodeState {
  std::vector<int64_t> index;
  std::vector<float> weight;
};

bool resize_prepare(const Graph&, const Node&, std::unique_ptr<NodeState>* state, std::string*) {
  *state = std::make_unique<ResizeState>();
  return true;
}

bool resize_run(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
                const std::vector<float*>& ptr, std::string* err) {
  ResizeState& s = *static_cast<ResizeState*>(state);
  const Shape& x = shapes[n.inputs[0]];
  const Shape& y = shapes[n.outputs[0]];
  float* out = ptr[n.outputs[0]];
  if ((x[1] == 0 || x[2] == 0) && numel(y) != 0) {
    *err = node_str(n) + ": input " + shape_str(x) + " has no pixels to resize to " + shape_str(y);
    return false;
  }
  try {
    s.index.resize(2 * y[2]);
    s.weight.resize(y[2]);
  } catch (...) {
    *err = node_str(n) + ": out of memory for the column table";
    return false;
  }
  cpu::resize_bilinear(int64_t(x[0]), int64_t(x[1]), int64_t(x[2]), int64_t(x[3]), int64_t(y[1]),
                       int64_t(y[2]), (n.flags & kFlagAlignCorners) != 0, ptr[n.inputs[0]], out,
                       s.index.data(), s.weight.data());
  if (n.has_range()) apply_range(out, numel(y), n.out_min, n.out_max);
  return true;
}

// ---- binary -----------------------------------------------------------------------------------

cpu::NBinary binary_of(Op op) {
  switch (op) {
    case Op::Add: return cpu::NBinary::Add;
    case Op::Subtract: return cpu::NBinary::Sub;
    case Op::Multiply: return cpu::NBinary::Mul;
    case Op::Div: return cpu::NBinary::Div;
    case Op::Minimum: return cpu::NBinary::Min;
    default: return cpu::NBinary::Max;
  }
}

// An Add or a Clamp of quantized values: its int8 codes path (own_qcodes.cpp).
struct QCodesState : NodeState {
  QCodesPtr q;
  bool reads_codes(size_t i) const override { return i < 2; }
  bool writes_codes() const override { return true; }
  bool codes_only() const override { return true; }
};

bool qcodes_prepare(const Graph& g, const Node& n, std::unique_ptr<NodeState>* state,
                    std::string* err) {
  if (n.op != Op::Add && n.op != Op::Clamp) return true;
  QCodesPtr q;
  if (!prepare_qcodes(g, n, &q, err)) return false;
  if (!q) return true;
  auto s = std::make_unique<QCodesState>();
  s->q = std::move(q);
  *state = std::move(s);
  return true;
}

bool binary_run(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
                const std::vector<float*>& ptr, std::string* err) {
  if (state && (n.coded & kCodedPath))
    return run_qcodes(*static_cast<QCodesState*>(state)->q, n, shapes, ptr, err);
  const Shape& as = shapes[n.inputs[0]];
  const Shape& bs = shapes[n.inputs[1]];
  const Shape& os = shapes[n.outputs[0]];
  if (os.size() > size_t(cpu::kMaxRank)) {  // graph.cpp keeps ranks within PTERON_MAX_DIM
    *err = node_str(n) + ": output of rank " + std::to_string(os.size()) + " (at most " +
           std::to_string(cpu::kMaxRank) + ")";
    return false;
  }
  int64_t a[cpu::kMaxRank], b[cpu::kMaxRank], o[cpu::kMaxRank];
  for (size_t i = 0; i < as.size(); ++i) a[i] = int64_t(as[i]);
  for (size_t i = 0; i < bs.size(); ++i) b[i] = int64_t(bs[i]);
  for (size_t i = 0; i < os.size(); ++i) o[i] = int64_t(os[i]);
  cpu::binary_broadcast(binary_of(n.op), ptr[n.inputs[0]], a, int(as.size()), ptr[n.inputs[1]], b,
                        int(bs.size()), ptr[n.outputs[0]], o, int(os.size()), range_lo(n),
                        range_hi(n));
  return true;
}

bool prelu_run(const Node& n, NodeState*, const std::vector<Shape>& shapes,
               const std::vector<float*>& ptr, std::string*) {
  const Shape& x = shapes[n.inputs[0]];
  const int64_t c = int64_t(x.back());
  const int64_t total = int64_t(numel(x));
  cpu::prelu(ptr[n.inputs[0]], ptr[n.inputs[1]], ptr[n.outputs[0]], c ? total / c : 0, c,
             range_lo(n), range_hi(n));
  return true;
}

// ---- unary, softmax ---------------------------------------------------------------------------

bool unary_of(Op op, cpu::NUnary* u) {
  switch (op) {
    case Op::Abs: *u = cpu::NUnary::Abs; return true;
    case Op::Negate: *u = cpu::NUnary::Neg; return true;
    case Op::Floor: *u = cpu::NUnary::Floor; return true;
    case Op::Ceiling: *u = cpu::NUnary::Ceil; return true;
    case Op::Square: *u = cpu::NUnary::Square; return true;
    case Op::SquareRoot: *u = cpu::NUnary::Sqrt; return true;
    case Op::ReciprocalSquareRoot: *u = cpu::NUnary::Rsqrt; return true;
    case Op::Exp: *u = cpu::NUnary::Exp; return true;
    case Op::Log: *u = cpu::NUnary::Log; return true;
    case Op::Sin: *u = cpu::NUnary::Sin; return true;
    case Op::Cos: *u = cpu::NUnary::Cos; return true;
    case Op::Sigmoid: *u = cpu::NUnary::Sigmoid; return true;
    case Op::Tanh: *u = cpu::NUnary::Tanh; return true;
    case Op::Gelu: *u = cpu::NUnary::Gelu; return true;
    case Op::Hardswish: *u = cpu::NUnary::Hardswish; return true;
    case Op::ELU: *u = cpu::NUnary::Elu; return true;
    case Op::LeakyReLU: *u = cpu::NUnary::LeakyRelu; return true;
    case Op::Clamp: *u = cpu::NUnary::Clamp; return true;
    default: return false;
  }
}

bool unary_run(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
               const std::vector<float*>& ptr, std::string* err) {
  if (state && (n.coded & kCodedPath))
    return run_qcodes(*static_cast<QCodesState*>(state)->q, n, shapes, ptr, err);
  cpu::NUnary u;
  if (!unary_of(n.op, &u)) {
    *err = node_str(n) + " is not a unary node";
    return false;
  }
  if (n.op == Op::Sigmoid && (n.flags & kOwnFlagSilu)) u = cpu::NUnary::Silu;
  const int64_t count = int64_t(numel(shapes[n.outputs[0]]));
  const float inf = std::numeric_limits<float>::infinity();
  if (u == cpu::NUnary::Clamp) {
    // Clamp's bounds are its output range.
    cpu::unary(u, ptr[n.inputs[0]], ptr[n.outputs[0]], count, n.out_min, n.out_max, -inf, inf);
    return true;
  }
  cpu::unary(u, ptr[n.inputs[0]], ptr[n.outputs[0]], count, n.f, 0.0f, range_lo(n), range_hi(n));
  return true;
}

bool softmax_run(const Node& n, NodeState*, const std::vector<Shape>& shapes,
                 const std::vector<float*>& ptr, std::string*) {
  const Shape& x = shapes[n.inputs[0]];
  const int64_t len = x.empty() ? 1 : int64_t(x.back());
  const int64_t total = int64_t(numel(x));
  if (len == 0 || total == 0) return true;
  cpu::softmax(ptr[n.inputs[0]], ptr[n.outputs[0]], total / len, len, range_lo(n), range_hi(n));
  return true;
}

const OwnKernel kDepthwise = {&dw_prepare, &dw_run};
const OwnKernel kPool = {nullptr, &pool_run};
const OwnKernel kGlobalPool = {&global_pool_prepare, &global_pool_run};
const OwnKernel kResize = {&resize_prepare, &resize_run};
const OwnKernel kBinary = {&qcodes_prepare, &binary_run};
const OwnKernel kPrelu = {nullptr, &prelu_run};
const OwnKernel kUnary = {&qcodes_prepare, &unary_run};
const OwnKernel kSoftmax = {nullptr, &softmax_run};

}  // namespace

const OwnKernel* elementwise_kernel(const Node& n, std::string* why) {
  cpu::NUnary u;
  switch (n.op) {
    case Op::DepthwiseConv2d: return dw_check(n, why) ? &kDepthwise : nullptr;
    case Op::AvgPool2d:
    case Op::MaxPool2d: return pool_check(n, why) ? &kPool : nullptr;
    case Op::GlobalAvgPool2d:
      if (n.flags & ~kFlagKeepDims) {
        refuse(n, why, "flags " + std::to_string(n.flags) + " are not supported (only KEEP_DIMS)");
        return nullptr;
      }
      return &kGlobalPool;
    case Op::ResizeBilinear2d:
      if (n.flags & ~kFlagAlignCorners) {
        refuse(n, why,
               "flags " + std::to_string(n.flags) +
                   " are not supported (only ALIGN_CORNERS; TENSORFLOW_LEGACY_MODE is not)");
        return nullptr;
      }
      return &kResize;
    case Op::Add:
    case Op::Subtract:
    case Op::Multiply:
    case Op::Div:
    case Op::Minimum:
    case Op::Maximum: return &kBinary;
    case Op::PReLU: return &kPrelu;
    case Op::Softmax:
      if (n.flags != 0) {
        refuse(n, why, "flags " + std::to_string(n.flags) + " are not supported (only 0)");
        return nullptr;
      }
      return &kSoftmax;
    case Op::ScaledDotProductAttention:
      // Upstream's exporter (1.5.1) emits none, and shape_inference.cpp has no shape
      // rule for it.
      *why =
          "pteron has no kernel for ScaledDotProductAttention (upstream's exporter "
          "emits none), so delegate XnnpackBackend cannot run it";
      return nullptr;
    default: return unary_of(n.op, &u) ? &kUnary : nullptr;
  }
}

}  // namespace xnnpack
}  // namespace pteron
