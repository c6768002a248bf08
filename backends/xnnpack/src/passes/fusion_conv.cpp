// SPDX-License-Identifier: BSD-3-Clause
// fusion_conv.cpp - load-time fusions around convolutions (passes.h), each on a FusionContext:
// a 1x1 depthwise convolution into the GEMM's input tiles (fuse_channel_affine), an Add into
// its output tiles (fuse_residual_add), a 1x1 expansion into the depthwise convolution after it
// (fuse_expand_depthwise).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "options.h"
#include "passes/passes.h"
#include "pteron_cpu/gemm.h"

namespace pteron {
namespace xnnpack {

namespace {

// A window node of 1x1, stride 1, dilation 1, no padding.
bool one_by_one(const Node& n) {
  return n.p[0] == 0 && n.p[1] == 0 && n.p[2] == 0 && n.p[3] == 0 && n.p[4] == 1 &&
         n.p[5] == 1 && n.p[6] == 1 && n.p[7] == 1 && n.p[8] <= 1 && n.p[9] <= 1;
}

// For a fusion that removes node n: whether n's shape rules hold on the declared shapes and give
// its output's declared shape, as make_variant checks them when n is kept, so that a program
// with a wrong filter or output shape is refused with the fusion as without it. `declared`:
// every value's declared shape (filled on first use, left as it was).
bool declared_shapes_hold(const Graph& g, const Node& n, std::vector<Shape>& declared) {
  if (n.outputs.size() != 1 || n.outputs[0] >= g.values.size()) return false;
  if (declared.empty())
    for (const Value& v : g.values) declared.push_back(v.dims);
  std::string ignored;
  const uint32_t t = n.outputs[0];
  const bool holds = infer_shape(g, n, declared, &ignored) && declared[t] == g.values[t].dims;
  declared[t] = g.values[t].dims;
  return holds;
}

}  // namespace

// fuse_channel_affine: at method load, a 1x1 DepthwiseConv2d (stride 1, no padding, one output
// channel per input channel: x * scale[c] + shift[c], clamped to its output range) whose only
// reader is a 1x1 Conv2d (stride 1, no padding, one group) goes, and the Conv2d reads its input
// and maps each tile of it inside the GEMM (kOwnFlagPrologue, own_ops.h). That is DenseNet's
// pre-activation: the batch norm and ReLU before each 1x1 convolution, which the exporter writes
// as a depthwise convolution, made a pass that wrote the whole tensor and a GEMM that read it
// back. Float32 values only, where pteron's kernels run both node types; PTERON_XNNPACK_FUSE=0
// switches it off. Returns the number of nodes removed.
size_t fuse_channel_affine(FusionContext& pass) {
  if (!pass.own({Op::DepthwiseConv2d, Op::Conv2d})) return 0;
  Graph& g = pass.g;
  const size_t nv = pass.nv;
  const ValueUses& uses = pass.uses;
  std::vector<char>& drop = pass.drop;
  std::vector<int> reader(nv, -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].inputs)
      if (v < nv) reader[v] = int(k);
  std::vector<Shape> declared;
  size_t fused = 0;
  for (size_t kd = 0; kd < g.nodes.size(); ++kd) {
    const Node& d = g.nodes[kd];
    if (d.op != Op::DepthwiseConv2d || d.flags != 0 || d.inputs.size() < 2 ||
        d.outputs.size() != 1 || !one_by_one(d) || d.p[10] != 1 || d.p[11] != 1)
      continue;
    const uint32_t x = d.inputs[0], t = d.outputs[0];
    const uint32_t scale = d.inputs[1], shift = d.inputs.size() > 2 ? d.inputs[2] : kNoValue;
    if (x >= nv || t >= nv || scale >= nv || !g.values[scale].constant ||
        (shift != kNoValue && (shift >= nv || !g.values[shift].constant)))
      continue;
    if (uses.reads[t] != 1 || g.values[t].graph_output || reader[t] < 0 ||
        size_t(reader[t]) <= kd || touches_quant(g, d))
      continue;
    Node& c = g.nodes[size_t(reader[t])];
    if (c.op != Op::Conv2d || c.inputs.empty() || c.inputs[0] != t || (c.flags & ~kOwnFlagEpilogue) ||
        !one_by_one(c) || c.p[12] != 1 || touches_quant(g, c))
      continue;
    const size_t channels = size_t(d.p[12]);
    if (checked_numel(g.values[scale].dims) != channels || c.p[10] != channels ||
        (shift != kNoValue && checked_numel(g.values[shift].dims) != channels))
      continue;
    if (!declared_shapes_hold(g, d, declared)) continue;
    c.inputs[0] = x;
    c.flags |= kOwnFlagPrologue;
    c.pre_scale = scale, c.pre_shift = shift;
    c.pre_min = d.out_min, c.pre_max = d.out_max;
    drop[kd] = 1;
    ++fused;
  }
  return pass.finish(fused);
}

// fuse_residual_add: at method load, an Add of two float32 values of one shape, one of them
// written by a Conv2d of one group with a bias (a ResNet or MobileNetV2 block's last
// convolution) and read by nothing else, goes: the Conv2d reads the other value as a residual
// (its fourth input, kOwnFlagResidual) and adds it to each output tile in the GEMM, clamped to
// the Add's output range (Node::res_min / res_max; pteron_cpu::GemmAct), writing the Add's
// output. One pass over the tensor less, and the convolution's output never leaves the cache
// before the addition; the results are the unfused ones bit for bit (the same float32 Add).
// The residual must be written before the Conv2d runs (by a node before it, or a graph input),
// and the Add's output must not be a graph output (the caller's buffer could be a graph
// input's). Float32 values only, where pteron's kernels run both node types;
// PTERON_XNNPACK_FUSE=0 switches it off. Returns the number of nodes removed.
size_t fuse_residual_add(FusionContext& pass) {
  if (!pass.own({Op::Add, Op::Conv2d})) return 0;
  Graph& g = pass.g;
  const size_t nv = pass.nv;
  const ValueUses& uses = pass.uses;
  std::vector<char>& drop = pass.drop;
  size_t fused = 0;
  for (size_t ka = 0; ka < g.nodes.size(); ++ka) {
    const Node& a = g.nodes[ka];
    if (a.op != Op::Add || a.flags != 0 || a.inputs.size() != 2 || a.outputs.size() != 1 ||
        touches_quant(g, a))
      continue;
    const uint32_t out = a.outputs[0];
    if (out >= nv || g.values[out].graph_output) continue;
    for (int side = 0; side < 2; ++side) {
      const uint32_t t = a.inputs[side], r = a.inputs[1 - side];
      if (t >= nv || r >= nv || t == r || uses.producer[t] < 0 || uses.reads[t] != 1 ||
          g.values[t].graph_output || g.values[r].constant)
        continue;
      const size_t kd = size_t(uses.producer[t]);
      if (kd >= ka || drop[kd]) continue;
      // The residual is ready when the convolution runs.
      if (uses.producer[r] >= 0 ? size_t(uses.producer[r]) >= kd : !g.values[r].graph_input)
        continue;
      Node& d = g.nodes[kd];
      if (d.op != Op::Conv2d || (d.flags & ~(kOwnFlagEpilogue | kOwnFlagPrologue)) != 0 ||
          d.inputs.size() != 3 || d.outputs.size() != 1 || d.outputs[0] != t || d.p[12] != 1 ||
          touches_quant(g, d))
        continue;
      const Shape& dims = g.values[out].dims;
      if (g.values[t].dims != dims || g.values[r].dims != dims) continue;
      d.inputs.push_back(r);
      d.outputs[0] = out;
      d.flags |= kOwnFlagResidual;
      d.res_min = a.out_min, d.res_max = a.out_max;
      drop[ka] = 1;
      ++fused;
      break;
    }
  }
  return pass.finish(fused);
}

// fuse_expand_depthwise: at method load, a 1x1 Conv2d (stride 1, no padding, one group,
// constant filter) whose output only a DepthwiseConv2d reads (channel multiplier 1, dilation 1)
// goes: the DepthwiseConv2d reads the Conv2d's input and computes the rows of the Conv2d's
// output its window needs, each once per thread, into a ring of kernel_h rows
// (kOwnFlagExpand, Node::exp_*; pteron_cpu::expand_depthwise_conv2d). That is MobileNetV2's
// expansion and the depthwise convolution after it: the expanded tensor, six times the
// block's input, was written whole and read back (112 x 112 x 96 floats, 4.8 MB, in
// MobileNetV2's second block; twice the L2 cache). Only where that tensor is at least
// pteron_cpu::kExpandDepthwiseMinBytes at the declared shapes: below, it stays in the cache
// between the two nodes, and each thread's first rows, computed twice at a split, would cost
// more than the pass saves. The results are the unfused ones bit for bit (each pixel through the GEMM
// microkernel the unfused convolution gives it, pteron_cpu::ExpandDepthwise; the same depthwise
// row kernel). Float32 values only, where pteron's kernels run both node types;
// PTERON_XNNPACK_FUSE=0 switches it off. Returns the number of nodes removed.
size_t fuse_expand_depthwise(FusionContext& pass) {
  if (!pass.own({Op::DepthwiseConv2d, Op::Conv2d})) return 0;
  Graph& g = pass.g;
  const size_t nv = pass.nv;
  const ValueUses& uses = pass.uses;
  std::vector<char>& drop = pass.drop;
  std::vector<Shape> declared;
  size_t fused = 0;
  for (size_t kd = 0; kd < g.nodes.size(); ++kd) {
    Node& d = g.nodes[kd];
    if (d.op != Op::DepthwiseConv2d || (d.flags & ~kOwnFlagEpilogue) != 0 ||
        d.inputs.size() < 2 || d.inputs.size() > 3 || d.outputs.size() != 1 || d.p[4] > 16 ||
        d.p[8] != 1 || d.p[10] != 1 || d.p[11] != 1 || touches_quant(g, d))
      continue;
    const uint32_t t = d.inputs[0];
    if (t >= nv || uses.reads[t] != 1 || g.values[t].graph_output || uses.producer[t] < 0 ||
        size_t(uses.producer[t]) >= kd || drop[size_t(uses.producer[t])])
      continue;
    const size_t kc = size_t(uses.producer[t]);
    const Node& c = g.nodes[kc];
    if (c.op != Op::Conv2d || (c.flags & ~kOwnFlagEpilogue) != 0 || c.inputs.size() < 2 ||
        c.inputs.size() > 3 || c.outputs.size() != 1 || c.outputs[0] != t || !one_by_one(c) ||
        c.p[12] != 1 || c.out_ldc != 0 || touches_quant(g, c))
      continue;
    const uint32_t x = c.inputs[0], w = c.inputs[1];
    const uint32_t b = c.inputs.size() > 2 ? c.inputs[2] : kNoValue;
    if (x >= nv || w >= nv || !g.values[w].constant ||
        (b != kNoValue && (b >= nv || !g.values[b].constant)))
      continue;
    const Shape& td = g.values[t].dims;
    if (td.size() != 4 || checked_numel(td) * sizeof(float) < size_t(pteron_cpu::kExpandDepthwiseMinBytes))
      continue;
    if (!declared_shapes_hold(g, c, declared)) continue;
    d.inputs[0] = x;
    d.flags |= kOwnFlagExpand;
    d.exp_filter = w, d.exp_bias = b;
    d.exp_min = c.out_min, d.exp_max = c.out_max;
    d.exp_act = (c.flags & kOwnFlagEpilogue) ? c.p[15] : 0;
    drop[kc] = 1;
    ++fused;
  }
  return pass.finish(fused);
}

}  // namespace xnnpack
}  // namespace pteron
