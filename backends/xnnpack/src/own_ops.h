// SPDX-License-Identifier: BSD-3-Clause
// own_ops.h - node types pteron executes itself between XNNPACK segments.
#ifndef PTERON_XNNPACK_OWN_OPS_H
#define PTERON_XNNPACK_OWN_OPS_H

#include <string>
#include <vector>

#include "graph.h"

namespace pteron {
namespace xnnpack {

// True if pteron's own code can run node `n`; otherwise false, with `why`
// set when the node type is known but its parameters are not.
bool own_supports(const Node& n, std::string* why);

// Runs node `n` on float32 buffers: ptr[v] is value v's storage, shapes[v]
// its current shape. Applies the node's output range. False with `err` set
// on failure.
bool run_own(const Node& n, const std::vector<Shape>& shapes, const std::vector<float*>& ptr,
             std::string* err);

}  // namespace xnnpack
}  // namespace pteron

#endif
