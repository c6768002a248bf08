// SPDX-License-Identifier: BSD-3-Clause
// passes.h - the load-time rewrites of the graph, in the order plan() (plan/plan.cpp) runs them:
//   transpose.cpp    the declared shapes of dynamic Converts, transposes that are reshapes,
//                    chains of transposes folded, round trips cancelled, duplicates merged;
//   fusion.cpp       element-wise fusions (SiLU, activations into their producer),
//                    concatenation chains flattened, quantized clamps into their producer,
//                    and the sources of dynamically quantized FullyConnected inputs;
//   fusion_conv.cpp  fusions around convolutions (channel affine prologue, residual add,
//                    expansion into the depthwise convolution).
// The fusions share one context (FusionContext): the graph, the options (whether fusion is on,
// which side runs each node type), who writes each value and how often it is read, and the
// nodes a pass drops, erased when it finishes. No pass reads the environment.
#ifndef PTERON_XNNPACK_PASSES_H
#define PTERON_XNNPACK_PASSES_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "graph.h"
#include "options.h"

namespace pteron {
namespace xnnpack {

// ---- what the passes share (context.cpp) -------------------------------------

// Is value v quantized (Value::quant)? Does node n read or write one?
bool quantized(const Graph& g, uint32_t v);
bool touches_quant(const Graph& g, const Node& n);

// Is op one of the concatenations (2 to 5 inputs in the blob)?
bool concatenation(Op op);

// Per value of g: the first node that writes it (-1: none) and how many node
// inputs read it (a node reading it twice counts twice).
struct ValueUses {
  std::vector<int> producer;
  std::vector<size_t> reads;
};
ValueUses value_uses(const Graph& g);

// The load-time rewrites below end here: the nodes whose drop[k] is set go,
// the others keep their order.
void erase_dropped(Graph& g, const std::vector<char>& drop);

// What every fusion pass starts from, made afresh for each pass: the graph, the options, the
// value uses as the graph stands when the pass begins, and the nodes it drops.
struct FusionContext {
  FusionContext(Graph& graph, const Options& opts);
  Graph& g;
  const Options& options;
  const size_t nv;         // g.values.size()
  const ValueUses uses;    // value_uses(g) when the pass began
  std::vector<char> drop;  // per node: the pass removes it
  // May the pass merge nodes of these types? Only where fusion is on (Options::fuse,
  // PTERON_XNNPACK_FUSE) and pteron's kernels, not the library, run every one of them.
  bool own(std::initializer_list<Op> ops) const;
  // Erases the dropped nodes when `done` (the pass's count) is not 0; returns `done`.
  size_t finish(size_t done);
};

// ---- transpose.cpp -----------------------------------------------------------

size_t fix_dynamic_convert_shapes(Graph& g);
void rewrite_trivial_transposes(Graph& g);
size_t fold_transpose_chains(Graph& g, size_t* chains);
size_t cancel_transpose_round_trips(Graph& g);
size_t merge_duplicate_transposes(Graph& g);

// ---- fusion.cpp, fusion_conv.cpp -----------------------------------------------
// Each returns the number of nodes removed (fuse_elementwise: pairs fused).

size_t fuse_elementwise(FusionContext& pass);
size_t flatten_concatenations(FusionContext& pass);
size_t fuse_channel_affine(FusionContext& pass);
size_t fuse_residual_add(FusionContext& pass);
size_t fuse_expand_depthwise(FusionContext& pass);
size_t fuse_quantized_clamps(FusionContext& pass);

// The fusions above, in that order, each on a fresh context; returns what they removed.
size_t run_fusions(Graph& g, const Options& options);

void link_dynamic_sources(Graph& g);

}  // namespace xnnpack
}  // namespace pteron

#endif
