// SPDX-License-Identifier: BSD-3-Clause
// sides.cpp - which side runs each node (stages.h): pteron's own kernel or the linked XNNPACK
// library, as Options::use_library (options.h) and what each side can run decide.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "options.h"
#include "passes/passes.h"
#include "plan/stages.h"
#include "types.h"
#include "xnn_library.h"

namespace pteron {
namespace xnnpack {

// Producer of every value; each non-constant, non-input value must be
// written by exactly one node before it is read.
bool find_producers(const Graph& g, PlanFacts& f, std::string* err) {
  const size_t nn = g.nodes.size();
  f.producer.assign(g.values.size(), -1);
  for (size_t k = 0; k < nn; ++k) {
    for (uint32_t v : g.nodes[k].inputs) {
      const Value& val = g.values[v];
      if (!val.constant && !val.graph_input && f.producer[v] < 0) {
        *err = "node " + std::to_string(g.nodes[k].index) + " (" + op_name(g.nodes[k].op) +
               ") reads value id " + std::to_string(val.id) + " before any node writes it";
        return false;
      }
    }
    for (uint32_t v : g.nodes[k].outputs) {
      if (f.producer[v] >= 0) {
        *err = "value id " + std::to_string(g.values[v].id) + " is written by two nodes";
        return false;
      }
      f.producer[v] = int(k);
    }
  }
  for (uint32_t v : g.outputs)
    if (f.producer[v] < 0) {
      *err = "graph output value id " + std::to_string(g.values[v].id) + " is never written";
      return false;
    }
  return true;
}

// Each node's side: f.native[k] 1 the library, 0 pteron's kernel; d.why[k]
// says why. Load fails naming a node neither side can run.
bool choose_sides(Delegate& d, PlanFacts& f, std::string* err) {
  const Graph& g = d.g;
  const size_t nn = g.nodes.size();
  const LibraryChoice& choice = d.options.use_library;
  const std::string by = choice.mode == LibraryChoice::Table
                             ? std::string("the default table")
                             : choice.setting + "=" + choice.text;
  f.native.assign(nn, 0);
  d.why.assign(nn, std::string());
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = g.nodes[k];
    std::string own_why;
    const bool own = own_kernel(n, &own_why) != nullptr && n.outputs.size() == 1;
    // Quantized values are float32 here, rounded after each node that writes
    // one (requantize): only pteron's kernels run such nodes.
    const bool quant = touches_quant(g, n);
    const bool lib = n.outputs.size() == 1 && !quant && lib_supports(n);
    const bool want = wants_library(d.options, n.op);
    const std::string node = "node " + std::to_string(n.index) + " (" + op_name(n.op) + ")";
    if (lib && want) {
      f.native[k] = 1;
      d.why[k] = by;
    } else if (own) {
      d.why[k] = quant ? "quantized values (pteron rounds them after each node)"
                 : want ? "the library cannot define it"
                        : by;
    } else if (!own_why.empty()) {
      *err = node + ": " + own_why;
      return false;
    } else if (lib && choice.mode != LibraryChoice::None) {
      f.native[k] = 1;
      d.why[k] = "pteron has no kernel for it";
    } else if (lib) {
      *err = "node " + std::to_string(n.index) + " has type " + op_name(n.op) +
             ", which delegate " + kId +
             " cannot run with " + choice.setting + "=none: pteron has no kernel for it";
      return false;
    } else {
      *err = "node " + std::to_string(n.index) + " has type " + op_name(n.op) +
             ", which delegate " + kId + " cannot run: the XNNPACK library (" +
             library_description() + ") cannot define it and pteron has no kernel for it";
      return false;
    }
  }
  return true;
}

// A reshape next to pteron's own code is a view there (no copy), not
// XNNPACK work: it moves to pteron's side when its producer is pteron's,
// or when every node that reads its result is.
void move_reshapes_to_own_side(const Graph& g, PlanFacts& f) {
  const size_t nn = g.nodes.size();
  std::vector<std::vector<uint32_t>> readers(g.values.size());
  for (size_t k = 0; k < nn; ++k)
    for (uint32_t v : g.nodes[k].inputs) readers[v].push_back(uint32_t(k));
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = g.nodes[k];
    if (n.op != Op::StaticReshape || !f.native[k]) continue;
    const int p = f.producer[n.inputs[0]];
    bool own_side = p >= 0 && !f.native[size_t(p)];
    const uint32_t out = n.outputs[0];
    if (!own_side && !g.values[out].graph_output && !readers[out].empty()) {
      own_side = true;
      for (uint32_t r : readers[out]) own_side &= !f.native[r];
    }
    if (own_side) f.native[k] = 0;
  }
}

}  // namespace xnnpack
}  // namespace pteron
