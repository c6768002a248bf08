// SPDX-License-Identifier: BSD-3-Clause
// variant.h - building the variant of a planned delegate (types.h, Variant) for one set of
// input shapes, and binding every value's storage for a call (variant.cpp).
#ifndef PTERON_XNNPACK_VARIANT_H
#define PTERON_XNNPACK_VARIANT_H

#include <memory>
#include <string>
#include <vector>

#include "graph.h"
#include "pteron/kernel.h"
#include "types.h"

namespace pteron {
namespace xnnpack {

// Builds the variant for the given graph-input shapes. `exact`: the declared
// input shapes, so every inferred shape must equal the one the blob declares;
// otherwise (other input shapes of a dynamic program) each must fit within
// the declared one, its upper bound.
// `oom`: set when the arena could not be allocated.
std::unique_ptr<Variant> make_variant(const Delegate& d, const std::vector<Shape>& in_shapes,
                                      bool exact, std::string* err, bool* oom);

// (Re)makes the XNNPACK runtimes of var's segments on the process's current pool.
bool make_runtimes(const Delegate& d, Variant& var, std::string* err);

// The delegate call's tensor for graph value `v` (an external), or null.
pteron_tensor* tensor_arg(const Graph& g, pteron_value* const* args, uint32_t v);

// Storage of every value for this call (d.ptr).
void bind_storage(Delegate& d, pteron_value* const* args, const Variant& var);

}  // namespace xnnpack
}  // namespace pteron

#endif
