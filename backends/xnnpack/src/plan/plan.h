// SPDX-License-Identifier: BSD-3-Clause
// plan.h - method load's plan of a parsed graph (plan.cpp): the load-time rewrites
// (passes/passes.h), each node's side (sides.cpp), the steps (schedule.cpp), where each value
// lives (placement.cpp), pteron's kernels prepared, and which quantized values travel as 8-bit
// codes (qcodes.cpp). The variant for the input shapes is built afterwards (variant.h).
#ifndef PTERON_XNNPACK_PLAN_H
#define PTERON_XNNPACK_PLAN_H

#include <string>

#include "types.h"

namespace pteron {
namespace xnnpack {

// Plans d.g as d.options say: fills d.steps, d.home, d.alias_of, d.alias_offset, d.kernel,
// d.state, d.why, d.requant, d.idle and the counts. False with `err` naming the node or value
// that cannot be planned ("cannot run" in it: a node no side can run).
bool plan(Delegate& d, std::string* err);

}  // namespace xnnpack
}  // namespace pteron

#endif
