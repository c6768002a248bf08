// SPDX-License-Identifier: BSD-3-Clause
// placement.cpp - where each value lives (stages.h, Home in types.h): a delegate argument, a
// constant, XNNPACK-internal, an arena buffer, or a view of another value (reshapes, and the
// convolutions that write into a concatenation's output).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "passes/passes.h"
#include "plan/stages.h"
#include "types.h"

namespace pteron {
namespace xnnpack {

// Where each value lives.
void place_values(Delegate& d, PlanFacts& f) {
  const Graph& g = d.g;
  const size_t nv = g.values.size();
  d.home.assign(nv, Home::Internal);
  d.alias_of.assign(nv, kNoValue);
  d.alias_offset.assign(nv, 0);
  f.read_by.assign(nv, {});
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].inputs) f.read_by[v].push_back(f.step_of[k]);
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g.values[v];
    if (val.constant) {
      d.home[v] = Home::Constant;
      continue;
    }
    if (val.graph_input || val.graph_output) {
      // A quantized argument is int8 / uint8, a half one float16: the float32 copy the
      // nodes use lives in the arena (stage_inputs / stage_outputs).
      d.home[v] = quantized(g, uint32_t(v)) || val.half ? Home::Buffer : Home::Argument;
      continue;
    }
    const int ps = f.producer[v] >= 0 ? f.step_of[size_t(f.producer[v])] : -1;
    if (ps < 0 && f.read_by[v].empty()) continue;  // no node touches it (Internal: no storage)
    // A value no node reads (and no graph output) still needs storage: XNNPACK
    // gives an unread internal value none, then fails an assertion writing it.
    bool internal = ps >= 0 && d.steps[size_t(ps)].native && !f.read_by[v].empty();
    for (int s : f.read_by[v]) internal &= (s == ps);
    d.home[v] = internal ? Home::Internal : Home::Buffer;
  }
}

// Own-code reshapes into a non-argument value are views of their input.
void alias_reshapes(Delegate& d, const PlanFacts& f) {
  for (const Step& s : d.steps) {
    if (s.native) continue;
    const Node& n = d.g.nodes[s.nodes[0]];
    if (n.op != Op::StaticReshape) continue;
    const uint32_t in = n.inputs[0], out = n.outputs[0];
    if (d.home[out] == Home::Buffer) {
      d.home[out] = Home::Alias;
      d.alias_of[out] = in;
    } else if (d.home[out] == Home::Argument && d.home[in] == Home::Buffer &&
               f.read_by[in].size() == 1) {
      // Reshaped into a delegate output: the producer writes there directly.
      d.home[in] = Home::Alias;
      d.alias_of[in] = out;
    }
  }
}

// A Concatenate along the channels (the last dim) whose inputs include the outputs of 1x1 or
// KxK Conv2d nodes that only it reads: each such convolution writes its channels straight into
// the concatenation's output (Node::out_ldc: the output's channel count as its row stride; its
// output value becomes an Alias of the concatenation's at its channel offset), and the
// Concatenate copies only the other inputs (Node::in_place). SqueezeNet's fire modules and
// Inception-style blocks concatenate two or more convolutions; the copy was a pass over the
// whole output. Float32 values where pteron runs both nodes; PTERON_XNNPACK_FUSE=0 (Options::fuse)
// switches it off. Returns the number of inputs written in place.
size_t write_concatenation_inputs_in_place(Delegate& d, const PlanFacts& f) {
  if (!d.options.fuse) return 0;
  Graph& g = d.g;
  size_t placed = 0;
  for (size_t kc = 0; kc < g.nodes.size(); ++kc) {
    Node& cat = g.nodes[kc];
    if (!concatenation(cat.op) || f.native[kc] || cat.outputs.size() != 1 ||
        touches_quant(g, cat) || cat.inputs.size() > kOwnMaxConcatInputs)
      continue;
    const uint32_t out = cat.outputs[0];
    const Shape& os = g.values[out].dims;
    if (os.empty() || cat.p[0] != os.size() - 1 ||
        (d.home[out] != Home::Buffer && d.home[out] != Home::Argument))
      continue;
    size_t offset = 0;
    bool shapes_fit = true;
    for (size_t i = 0; i < cat.inputs.size(); ++i) {
      const uint32_t v = cat.inputs[i];
      const Shape& is = g.values[v].dims;
      if (is.size() != os.size()) shapes_fit = false;
      for (size_t k = 0; shapes_fit && k + 1 < os.size(); ++k) shapes_fit = is[k] == os[k];
      if (!shapes_fit) break;
      const int pk = f.producer[v];
      const size_t channels = is.back();
      if (pk >= 0 && !f.native[size_t(pk)] && d.home[v] == Home::Buffer &&
          f.read_by[v].size() == 1 && !g.values[v].graph_output) {
        Node& conv = g.nodes[size_t(pk)];
        if (conv.op == Op::Conv2d && conv.outputs.size() == 1 && conv.out_ldc == 0 &&
            !touches_quant(g, conv)) {
          conv.out_ldc = os.back();
          d.home[v] = Home::Alias;
          d.alias_of[v] = out;
          d.alias_offset[v] = offset;
          cat.in_place |= 1u << i;
          ++placed;
        }
      }
      offset += channels;
    }
    if (!shapes_fit) {  // undo: the shapes are not a channel concatenation's
      for (size_t i = 0; i < cat.inputs.size(); ++i)
        if (cat.in_place & (1u << i)) {
          const uint32_t v = cat.inputs[i];
          g.nodes[size_t(f.producer[v])].out_ldc = 0;
          d.home[v] = Home::Buffer;
          d.alias_of[v] = kNoValue;
          d.alias_offset[v] = 0;
          --placed;
        }
      cat.in_place = 0;
    }
  }
  return placed;
}

}  // namespace xnnpack
}  // namespace pteron
