// SPDX-License-Identifier: BSD-3-Clause
// plan.cpp - plan(): the load-time passes, then the stages of stages.h in order, and each
// node's reasons (Delegate::why) as PTERON_XNNPACK_DEBUG prints them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "passes/passes.h"
#include "plan/plan.h"
#include "plan/stages.h"
#include "types.h"

namespace pteron {
namespace xnnpack {

bool plan(Delegate& d, std::string* err) {
  fix_dynamic_convert_shapes(d.g);
  rewrite_trivial_transposes(d.g);
  // Chains first: a round trip cancelled inside a chain would leave a value
  // read twice, which splits the chain.
  d.folded = fold_transpose_chains(d.g, &d.chains);
  d.cancelled = cancel_transpose_round_trips(d.g);
  d.cancelled += merge_duplicate_transposes(d.g);
  d.fused = run_fusions(d.g, d.options);
  link_dynamic_sources(d.g);
  PlanFacts f;
  if (!find_producers(d.g, f, err)) return false;
  if (!choose_sides(d, f, err)) return false;
  for (size_t k = 0; k < d.g.nodes.size(); ++k)
    if (d.g.nodes[k].op == Op::Sigmoid && (d.g.nodes[k].flags & kOwnFlagSilu))
      d.why[k] += "; fused: x * Sigmoid(x) (SiLU), a Sigmoid and this Multiply";
    else if (concatenation(d.g.nodes[k].op) && (d.g.nodes[k].flags & kOwnFlagFlattened))
      d.why[k] += "; fused: the concatenations before it, " +
                  std::to_string(d.g.nodes[k].inputs.size()) + " inputs in one copy";
    else if (d.g.nodes[k].flags & kOwnFlagEpilogue)
      d.why[k] += std::string("; fused: the ") +
                  (d.g.nodes[k].p[15] == kOwnActSilu      ? "SiLU"
                   : d.g.nodes[k].p[15] == kOwnActSigmoid ? "Sigmoid"
                                                          : "Hardswish") +
                  " after it, applied to each " +
                  (d.g.nodes[k].op == Op::DepthwiseConv2d ? "output row" : "output tile");
  for (size_t k = 0; k < d.g.nodes.size(); ++k)
    if (d.g.nodes[k].flags & kOwnFlagPrologue)
      d.why[k] += "; fused: the 1x1 DepthwiseConv2d before it (its per-channel map of the input, "
                  "applied to each tile's rows in the GEMM)";
  for (size_t k = 0; k < d.g.nodes.size(); ++k)
    if (d.g.nodes[k].flags & kOwnFlagResidual)
      d.why[k] += "; fused: the Add after it (the residual, added to each output tile in the GEMM)";
  for (size_t k = 0; k < d.g.nodes.size(); ++k)
    if (d.g.nodes[k].flags & kOwnFlagExpand)
      d.why[k] += "; fused: the 1x1 Conv2d before it (its output computed row by row into the "
                  "rows the window reads, never stored whole)";
  const std::vector<char> chosen = f.native;
  move_reshapes_to_own_side(d.g, f);
  for (size_t k = 0; k < chosen.size(); ++k)
    if (chosen[k] && !f.native[k]) d.why[k] = "a reshape beside pteron's nodes";
  if (!schedule_steps(d, f, err)) return false;
  place_values(d, f);
  alias_reshapes(d, f);
  d.in_place = write_concatenation_inputs_in_place(d, f);
  for (size_t k = 0; k < d.g.nodes.size(); ++k)
    if (d.g.nodes[k].out_ldc)
      d.why[k] += "; writes its channels into the concatenation's output (in place)";
    else if (d.g.nodes[k].in_place)
      d.why[k] += "; copies only the inputs not written in place by their convolutions";
  find_boundaries(d, f);
  // pteron's kernels for the nodes it runs, prepared once (packed weights).
  d.kernel.assign(d.g.nodes.size(), nullptr);
  d.state.resize(d.g.nodes.size());
  for (const Step& s : d.steps) {
    if (s.native) continue;
    const uint32_t k = s.nodes[0];
    const Node& n = d.g.nodes[k];
    std::string why;
    d.kernel[k] = own_kernel(n, &why);
    if (!d.kernel[k]) {
      *err = "node " + std::to_string(n.index) + " (" + op_name(n.op) +
             "): " + (why.empty() ? std::string("pteron has no kernel for it") : why);
      return false;
    }
    if (d.kernel[k]->prepare && !d.kernel[k]->prepare(d.g, n, &d.state[k], err)) return false;
  }
  for (size_t k = 0; k < d.g.nodes.size(); ++k)
    if (d.state[k] && d.state[k]->int8_path())
      d.why[k] += std::string("; int8 GEMM (") + d.state[k]->int8_path() + ")";
  // A Convert to QDInt8 whose every reader is an int8 FullyConnected quantizing the Convert's
  // input itself (Node::qsource) has nothing to do.
  d.idle.assign(d.g.nodes.size(), 0);
  for (size_t k = 0; k < d.g.nodes.size(); ++k) {
    const Node& c = d.g.nodes[k];
    if (c.op != Op::Convert || c.outputs.size() != 1 || c.inputs.size() != 1 ||
        d.g.values[c.outputs[0]].quant.kind != QuantKind::Dynamic ||
        d.g.values[c.outputs[0]].graph_output)
      continue;
    bool all = true, any = false;
    for (size_t r = 0; r < d.g.nodes.size(); ++r)
      for (uint32_t v : d.g.nodes[r].inputs)
        if (v == c.outputs[0]) {
          any = true;
          all &= d.g.nodes[r].qsource == c.inputs[0] && d.state[r] && d.state[r]->int8_path();
        }
    if (any && all) {
      d.idle[k] = 1;
      d.why[k] += "; not run: each reader quantizes its input itself (int8 GEMM)";
    }
  }
  choose_codes(d, f);
  d.requant.assign(d.g.nodes.size(), 0);
  for (size_t k = 0; k < d.g.nodes.size(); ++k)
    d.requant[k] = needs_requantize(d.g, d.g.nodes[k]) &&
                   !(d.state[k] && d.state[k]->int8_path()) &&  // which rounds it itself
                   !(d.g.nodes[k].coded & kCodedPath);           // so does this one
  return true;
}

}  // namespace xnnpack
}  // namespace pteron
