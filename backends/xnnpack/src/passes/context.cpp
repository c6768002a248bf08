// SPDX-License-Identifier: BSD-3-Clause
// context.cpp - what the load-time passes share (passes.h): value uses, dropping nodes, the
// fusion context, and the order the fusions run in.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "graph.h"
#include "options.h"
#include "passes/passes.h"

namespace pteron {
namespace xnnpack {

bool quantized(const Graph& g, uint32_t v) {
  return v < g.values.size() && g.values[v].quant.kind != QuantKind::None;
}
bool touches_quant(const Graph& g, const Node& n) {
  for (uint32_t v : n.inputs)
    if (quantized(g, v)) return true;
  for (uint32_t v : n.outputs)
    if (quantized(g, v)) return true;
  return false;
}

bool concatenation(Op op) {
  return op == Op::Concatenate2 || op == Op::Concatenate3 || op == Op::Concatenate4 ||
         op == Op::Concatenate5;
}

ValueUses value_uses(const Graph& g) {
  const size_t nv = g.values.size();
  ValueUses u{std::vector<int>(nv, -1), std::vector<size_t>(nv, 0)};
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (uint32_t v : g.nodes[k].outputs)
      if (v < nv && u.producer[v] < 0) u.producer[v] = int(k);
    for (uint32_t v : g.nodes[k].inputs)
      if (v < nv) ++u.reads[v];
  }
  return u;
}

void erase_dropped(Graph& g, const std::vector<char>& drop) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
}

FusionContext::FusionContext(Graph& graph, const Options& opts)
    : g(graph), options(opts), nv(graph.values.size()), uses(value_uses(graph)),
      drop(graph.nodes.size(), 0) {}

bool FusionContext::own(std::initializer_list<Op> ops) const {
  if (!options.fuse) return false;
  for (Op op : ops)
    if (wants_library(options, op)) return false;
  return true;
}

size_t FusionContext::finish(size_t done) {
  if (done) erase_dropped(g, drop);
  return done;
}

size_t run_fusions(Graph& g, const Options& options) {
  // In this order: each pass sees the graph the one before it left.
  size_t (*const passes[])(FusionContext&) = {
      fuse_elementwise,  flatten_concatenations, fuse_channel_affine,
      fuse_residual_add, fuse_expand_depthwise,  fuse_quantized_clamps};
  size_t removed = 0;
  for (auto* pass : passes) {
    FusionContext context(g, options);
    removed += pass(context);
  }
  return removed;
}

}  // namespace xnnpack
}  // namespace pteron
