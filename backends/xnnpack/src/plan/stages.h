// SPDX-License-Identifier: BSD-3-Clause
// stages.h - the stages of plan() (plan.cpp), in the order it runs them, and what they learn
// about the graph on the way (PlanFacts). Internal to plan/.
#ifndef PTERON_XNNPACK_PLAN_STAGES_H
#define PTERON_XNNPACK_PLAN_STAGES_H

#include <cstddef>
#include <string>
#include <vector>

#include "graph.h"
#include "types.h"

namespace pteron {
namespace xnnpack {

// What planning learns about the graph on the way, step by step.
struct PlanFacts {
  std::vector<int> producer;              // per value: the node writing it, -1 for none
  std::vector<char> native;               // per node: 1 XNNPACK runs it, 0 pteron does
  std::vector<int> step_of;               // per node: its step
  std::vector<std::vector<int>> read_by;  // per value: the steps of the nodes reading it
};

// ---- sides.cpp -----------------------------------------------------------------

// Producer of every value; each non-constant, non-input value must be
// written by exactly one node before it is read.
bool find_producers(const Graph& g, PlanFacts& f, std::string* err);
// Each node's side: f.native[k] 1 the library, 0 pteron's kernel; d.why[k]
// says why. Load fails naming a node neither side can run.
bool choose_sides(Delegate& d, PlanFacts& f, std::string* err);
// A reshape next to pteron's own code is a view there (no copy), not
// XNNPACK work: it moves to pteron's side when its producer is pteron's,
// or when every node that reads its result is.
void move_reshapes_to_own_side(const Graph& g, PlanFacts& f);

// ---- schedule.cpp --------------------------------------------------------------

// Schedule: alternately take every ready native node (one segment), then
// every ready own node (one step each), until all are placed.
bool schedule_steps(Delegate& d, PlanFacts& f, std::string* err);
// Boundary values of each segment: what it exchanges with the outside.
void find_boundaries(Delegate& d, const PlanFacts& f);

// ---- placement.cpp -------------------------------------------------------------

// Where each value lives.
void place_values(Delegate& d, PlanFacts& f);
// Own-code reshapes into a non-argument value are views of their input.
void alias_reshapes(Delegate& d, const PlanFacts& f);
// Convolutions that write their channels straight into a concatenation's output; returns the
// number of inputs written in place (Options::fuse switches it off).
size_t write_concatenation_inputs_in_place(Delegate& d, const PlanFacts& f);

// ---- qcodes.cpp ----------------------------------------------------------------

// Must node n's output be rounded onto its quantization grid after it runs?
bool needs_requantize(const Graph& g, const Node& n);
// Which quantized values pteron's nodes exchange as 8-bit codes (Node::coded).
void choose_codes(Delegate& d, const PlanFacts& f);

}  // namespace xnnpack
}  // namespace pteron

#endif
