// SPDX-License-Identifier: BSD-3-Clause
// fusion.cpp - load-time fusions of element-wise nodes, concatenations and quantized clamps
// (passes.h), each on a FusionContext. The fused nodes carry flags of pteron's own kernels
// (kernels/own_ops.h: kOwnFlag*), so a fusion happens only where pteron's kernels run every
// node it merges.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "options.h"
#include "passes/passes.h"

namespace pteron {
namespace xnnpack {

// fuse_elementwise: at method load, before the sides are chosen, a Sigmoid
// whose only reader is a Multiply of the Sigmoid's own input by its result
// (x * sigmoid(x), SiLU: EfficientNet's activation) becomes one node: the
// Multiply turns into a Sigmoid node flagged kOwnFlagSilu (own_ops.h) that
// reads x, keeps the Multiply's output range and writes its output, and the
// Sigmoid node goes. One pass over the tensor instead of two and one value
// less in the arena; the results are the unfused ones bit for bit (the
// kernel rounds the sigmoid, then the product). Only where pteron's kernels
// run both node types (not for PTERON_XNNPACK_USE_LIBRARY=all or a list
// naming either); PTERON_XNNPACK_FUSE=0 (Options::fuse) switches the pass off. Returns the
// number of fused pairs.
size_t fuse_elementwise(FusionContext& pass) {
  if (!pass.own({Op::Sigmoid, Op::Multiply})) return 0;
  Graph& g = pass.g;
  const size_t nv = pass.nv;
  const std::vector<int>& producer = pass.uses.producer;
  const std::vector<size_t>& reads = pass.uses.reads;
  std::vector<char>& drop = pass.drop;
  size_t fused = 0;
  for (size_t km = 0; km < g.nodes.size(); ++km) {
    Node& m = g.nodes[km];
    if (m.op != Op::Multiply || m.inputs.size() != 2 || m.outputs.size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      const uint32_t t = m.inputs[side], x = m.inputs[1 - side];
      if (t >= nv || x >= nv || t == x || producer[t] < 0 || reads[t] != 1 ||
          g.values[t].graph_output)
        continue;
      const size_t ks = size_t(producer[t]);
      const Node& s = g.nodes[ks];
      if (ks >= km || drop[ks] || s.op != Op::Sigmoid || s.inputs.size() != 1 ||
          s.outputs.size() != 1 || s.inputs[0] != x || s.flags != 0 || s.has_range())
        continue;
      if (touches_quant(g, s) || touches_quant(g, m)) continue;  // each output is rounded
      if (g.values[x].dims != g.values[m.outputs[0]].dims) continue;
      m.op = Op::Sigmoid;
      m.inputs = {x};
      m.flags = kOwnFlagSilu;
      m.f = 0.0f;
      drop[ks] = 1;
      ++fused;
      break;
    }
  }
  // A Sigmoid, SiLU or Hardswish without an output range whose input only it
  // reads, written by a DepthwiseConv2d, a Conv2d or a FullyConnected: that
  // node applies it to its output while the output is in cache (a row of
  // the depthwise convolution, a tile of the GEMM) and writes the
  // activation's output.
  if (!wants_library(pass.options, Op::Hardswish)) {
    for (size_t ku = 0; ku < g.nodes.size(); ++ku) {
      Node& u = g.nodes[ku];
      if (drop[ku] || (u.op != Op::Sigmoid && u.op != Op::Hardswish) || u.has_range() ||
          u.inputs.size() != 1 || u.outputs.size() != 1 ||
          (u.flags != 0 && u.flags != kOwnFlagSilu))
        continue;
      const uint32_t t = u.inputs[0];
      if (t >= nv || producer[t] < 0 || size_t(producer[t]) >= ku || g.values[t].graph_output)
        continue;
      if (touches_quant(g, u) || touches_quant(g, g.nodes[size_t(producer[t])])) continue;
      // Reads of t: the fused SiLU node read it twice before (x and sigmoid(x)).
      const bool silu = u.flags == kOwnFlagSilu;
      if (reads[t] != (silu ? 2u : 1u)) continue;
      Node& d = g.nodes[size_t(producer[t])];
      // The producer's own flags that its kernel accepts alongside the epilogue.
      const uint32_t own_flags = d.op == Op::FullyConnected ? 1u : 0u;
      if ((d.op != Op::DepthwiseConv2d && d.op != Op::Conv2d && d.op != Op::FullyConnected) ||
          wants_library(pass.options, d.op) || (d.flags & ~own_flags) != 0 ||
          d.outputs.size() != 1 || d.p[15] != 0)
        continue;
      if (g.values[t].dims != g.values[u.outputs[0]].dims) continue;
      d.flags |= kOwnFlagEpilogue;
      d.p[15] = u.op == Op::Hardswish ? kOwnActHardswish : silu ? kOwnActSilu : kOwnActSigmoid;
      d.outputs[0] = u.outputs[0];
      drop[ku] = 1;
      ++fused;
    }
  }
  return pass.finish(fused);
}

// flatten_concatenations: at method load, a Concatenate whose input is the output of an earlier
// Concatenate along the same axis, read by it alone, takes that node's inputs in its place, and
// the earlier node goes, while the inputs number at most kOwnMaxConcatInputs (own_ops.h).
// XNNPACK's nodes have at most 5 inputs, so the exporter writes a concatenation of more as a
// chain (DenseNet's dense blocks: Concatenate2(Concatenate5(a, b, c, d, e), f)), and each link
// copied the whole tensor again. The output is the same bytes. Only where pteron's kernels run
// concatenations, on float32 values; PTERON_XNNPACK_FUSE=0 switches it off with the other
// load-time fusions. Returns the number of nodes removed.
size_t flatten_concatenations(FusionContext& pass) {
  if (!pass.own({Op::Concatenate2, Op::Concatenate3, Op::Concatenate4, Op::Concatenate5}))
    return 0;
  Graph& g = pass.g;
  const size_t nv = pass.nv;
  const std::vector<int>& producer = pass.uses.producer;
  const std::vector<size_t>& reads = pass.uses.reads;
  std::vector<char>& drop = pass.drop;
  size_t removed = 0;
  for (size_t kn = 0; kn < g.nodes.size(); ++kn) {
    Node& n = g.nodes[kn];
    if (!concatenation(n.op) || n.outputs.size() != 1 || n.has_range() || touches_quant(g, n))
      continue;
    for (size_t i = 0; i < n.inputs.size();) {
      const uint32_t t = n.inputs[i];
      const int kp = t < nv ? producer[t] : -1;
      if (kp < 0 || size_t(kp) >= kn || drop[size_t(kp)] || reads[t] != 1 ||
          g.values[t].graph_output || g.values[t].external != kNoValue) {
        ++i;
        continue;
      }
      const Node& p = g.nodes[size_t(kp)];
      if (!concatenation(p.op) || p.p[0] != n.p[0] || p.outputs.size() != 1 || p.has_range() ||
          touches_quant(g, p) || n.inputs.size() - 1 + p.inputs.size() > kOwnMaxConcatInputs) {
        ++i;
        continue;
      }
      std::vector<uint32_t> inputs(n.inputs.begin(), n.inputs.begin() + long(i));
      inputs.insert(inputs.end(), p.inputs.begin(), p.inputs.end());
      inputs.insert(inputs.end(), n.inputs.begin() + long(i) + 1, n.inputs.end());
      n.inputs = std::move(inputs);
      n.flags |= kOwnFlagFlattened;
      drop[size_t(kp)] = 1;
      ++removed;
      // i stays: the spliced inputs are looked at in turn (a chain of several links).
    }
  }
  return pass.finish(removed);
}

// A Clamp on a quantized value (ReLU6 after a quantized convolution: upstream's partitioner
// leaves those separate) whose input only it reads, written by a Conv2d, DepthwiseConv2d or
// FullyConnected with the same quantization: that node takes the Clamp's bounds into its own
// output range and writes the Clamp's output, which saves a pass over the tensor and one
// rounding (the result is the rounded clamp of the unrounded sum, as XNNPACK's fused clamp
// gives). Always on (it is how XNNPACK runs the pair). Returns the number of Clamp nodes
// removed.
size_t fuse_quantized_clamps(FusionContext& pass) {
  Graph& g = pass.g;
  const size_t nv = pass.nv;
  const std::vector<int>& producer = pass.uses.producer;
  const std::vector<size_t>& reads = pass.uses.reads;
  auto same = [](const Quant& a, const Quant& b) {
    return a.kind == QuantKind::Tensor && b.kind == QuantKind::Tensor && a.scale == b.scale &&
           a.zero_point == b.zero_point && a.qmin == b.qmin && a.qmax == b.qmax;
  };
  std::vector<char>& drop = pass.drop;
  size_t fused = 0;
  for (size_t ku = 0; ku < g.nodes.size(); ++ku) {
    const Node& u = g.nodes[ku];
    if (u.op != Op::Clamp || u.flags != 0 || u.inputs.size() != 1 || u.outputs.size() != 1)
      continue;
    const uint32_t t = u.inputs[0], o = u.outputs[0];
    if (t >= nv || o >= nv || producer[t] < 0 || size_t(producer[t]) >= ku || reads[t] != 1 ||
        g.values[t].graph_output || !same(g.values[t].quant, g.values[o].quant) ||
        g.values[t].dims != g.values[o].dims)
      continue;
    Node& d = g.nodes[size_t(producer[t])];
    if ((d.op != Op::Conv2d && d.op != Op::DepthwiseConv2d && d.op != Op::FullyConnected) ||
        drop[size_t(producer[t])] || d.outputs.size() != 1 || (d.flags & kOwnFlagEpilogue))
      continue;
    d.out_min = std::max(d.out_min, u.out_min);
    d.out_max = std::min(d.out_max, u.out_max);
    d.outputs[0] = o;
    drop[ku] = 1;
    ++fused;
  }
  return pass.finish(fused);
}

// A FullyConnected reading a dynamically quantized value (QDInt8) that a Convert node made from
// a float32 value: the node's int8 kernel quantizes that float32 value itself, with the same
// per-token parameters (own_qlinear.cpp), so it gets it as Node::qsource.
void link_dynamic_sources(Graph& g) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].outputs)
      if (v < producer.size() && producer[v] < 0) producer[v] = int(k);
  for (Node& n : g.nodes) {
    if (n.op != Op::FullyConnected || n.inputs.empty()) continue;
    const uint32_t x = n.inputs[0];
    if (g.values[x].quant.kind != QuantKind::Dynamic || producer[x] < 0) continue;
    const Node& c = g.nodes[size_t(producer[x])];
    if (c.op == Op::Convert && c.inputs.size() == 1 && !quantized(g, c.inputs[0]) &&
        !g.values[c.inputs[0]].constant)
      n.qsource = c.inputs[0];
  }
}

}  // namespace xnnpack
}  // namespace pteron
