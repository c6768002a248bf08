// SPDX-License-Identifier: BSD-3-Clause
// qcodes.cpp - quantized values (stages.h): which nodes round their output onto its grid, and
// which values pteron's int8 kernels exchange as 8-bit codes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "passes/passes.h"
#include "plan/stages.h"
#include "types.h"

namespace pteron {
namespace xnnpack {

// Must node n's output be rounded onto its quantization grid after it runs?
// Not where it only moves or selects elements of an input quantized the same
// way (the values are on that grid already).
bool needs_requantize(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || !quantized(g, n.outputs[0])) return false;
  const Quant& q = g.values[n.outputs[0]].quant;
  switch (n.op) {
    case Op::StaticTranspose:
    case Op::StaticReshape:
    case Op::StaticSlice:
    case Op::Copy:
    case Op::MaxPool2d: {
      if (n.inputs.empty() || n.has_range()) return true;
      const Quant& a = g.values[n.inputs[0]].quant;
      return !(a.kind == QuantKind::Tensor && q.kind == QuantKind::Tensor && a.scale == q.scale &&
               a.zero_point == q.zero_point && a.qmin == q.qmin && a.qmax == q.qmax);
    }
    default: return true;
  }
}

// Which quantized values pteron's nodes exchange as 8-bit codes (graph.h, Node::coded), and
// which nodes run their int8 codes path (kCodedPath): a per-tensor value in a buffer of the
// delegate (not an argument, not an alias) whose writer can write codes and whose every reader
// can read them. A node that needs all its quantized inputs as codes (codes_only: depthwise,
// Add) runs its float32 path when one is not; then the values it writes stay float32, and the
// choice is made again until nothing changes.
void choose_codes(Delegate& d, const PlanFacts& f) {
  Graph& g = d.g;
  const size_t nv = g.values.size(), nn = g.nodes.size();
  const std::vector<int>& writer = f.producer;
  std::vector<std::vector<std::pair<uint32_t, size_t>>> readers(nv);  // (node, input index)
  for (size_t k = 0; k < nn; ++k)
    for (size_t i = 0; i < g.nodes[k].inputs.size(); ++i)
      readers[g.nodes[k].inputs[i]].emplace_back(uint32_t(k), i);
  auto own = [&](size_t k) { return d.kernel[k] && d.state[k] && !d.idle[k]; };
  std::vector<char> path(nn, 0), coded(nv, 0);
  for (size_t k = 0; k < nn; ++k) path[k] = own(k) && (d.state[k]->reads_codes(0) ||
                                                       d.state[k]->writes_codes());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < nv; ++v) {
      const Value& val = g.values[v];
      bool ok = d.home[v] == Home::Buffer && val.quant.kind == QuantKind::Tensor &&
                !val.constant && !val.graph_input && !val.graph_output && writer[v] >= 0 &&
                !readers[v].empty();
      if (ok) {
        const size_t w = size_t(writer[v]);
        ok = path[w] && g.nodes[w].outputs.size() == 1 && d.state[w]->writes_codes();
      }
      for (size_t r = 0; ok && r < readers[v].size(); ++r) {
        const size_t k = readers[v][r].first, i = readers[v][r].second;
        ok = path[k] && i < kCodedInputs && d.state[k]->reads_codes(i);
      }
      coded[v] = ok;
    }
    for (size_t k = 0; k < nn; ++k) {
      if (!path[k] || !d.state[k]->codes_only()) continue;
      for (uint32_t v : g.nodes[k].inputs)
        if (quantized(g, v) && !g.values[v].constant && !coded[v]) {
          path[k] = 0, changed = true;
          break;
        }
    }
  }
  for (size_t k = 0; k < nn; ++k) {
    Node& n = g.nodes[k];
    n.coded = 0;
    if (!path[k]) continue;
    if (d.state[k]->codes_only()) n.coded |= kCodedPath;
    for (size_t i = 0; i < n.inputs.size() && i < kCodedInputs; ++i)
      if (coded[n.inputs[i]]) n.coded |= 1u << i;
    if (n.outputs.size() == 1 && coded[n.outputs[0]]) n.coded |= kCodedOutput;
    if ((n.coded & kCodedPath) && !d.state[k]->int8_path())
      d.why[k] += std::string("; int8 codes (") + qlinear_path() + ")";
  }
}

}  // namespace xnnpack
}  // namespace pteron
