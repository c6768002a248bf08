// SPDX-License-Identifier: BSD-3-Clause
// variant.cpp - a plan bound to one set of input shapes (variant.h): every value's shape
// (shape_inference.cpp), the steps with nothing to do, the arena (values whose lifetimes do not
// overlap share bytes), the XNNPACK runtimes; and, at each call, every value's storage.
#include "variant.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph.h"
#include "types.h"
#include "xnn_library.h"

namespace pteron {
namespace xnnpack {

Variant::~Variant() {
  for (void* r : runtimes)
    if (r) delete_runtime(r);
  std::free(arena_raw);
}

// The library runtimes of every segment of `var` that has work, made on the process's pool as it
// is now (var.pool); the old ones deleted.
bool make_runtimes(const Delegate& d, Variant& var, std::string* err) {
  for (void*& r : var.runtimes)
    if (r) {
      delete_runtime(r);
      r = nullptr;
    }
  var.pool = library_pool();
  var.runtimes.assign(d.steps.size(), nullptr);
  for (size_t i = 0; i < d.steps.size(); ++i)
    if (d.steps[i].native && !var.empty[i] &&
        !build_segment(d.g, d.steps[i], var.shapes, var.pool, &var.runtimes[i], err))
      return false;
  return true;
}

namespace {

// Marks the steps that have nothing to compute (every value they write has no
// elements: a batch of 0): they are skipped, as XNNPACK cannot set up
// operators on zero-size tensors. A native step that reads an empty value
// but writes a non-empty one cannot run; that fails naming the value.
bool mark_empty_steps(const Delegate& d, Variant& var, std::string* err) {
  const Graph& g = d.g;
  var.empty.assign(d.steps.size(), 0);
  for (size_t si = 0; si < d.steps.size(); ++si) {
    const Step& s = d.steps[si];
    bool all_empty = true;
    uint32_t empty_value = kNoValue, full_value = kNoValue, node = 0;
    for (uint32_t k : s.nodes) {
      const Node& n = g.nodes[k];
      for (uint32_t v : n.outputs) {
        const bool e = numel(var.shapes[v]) == 0;
        all_empty &= e;
        if (!e && full_value == kNoValue) full_value = v;
      }
      for (uint32_t v : n.inputs)
        if (numel(var.shapes[v]) == 0 && empty_value == kNoValue) empty_value = v, node = k;
    }
    if (all_empty) {
      var.empty[si] = 1;
      continue;
    }
    if (s.native && empty_value != kNoValue) {
      const Node& n = g.nodes[node];
      *err = "node " + std::to_string(n.index) + " (" + op_name(n.op) + ") reads value id " +
             std::to_string(g.values[empty_value].id) + " of shape " +
             shape_str(var.shapes[empty_value]) + ", which has no elements, but value id " +
             std::to_string(g.values[full_value].id) + " it computes has shape " +
             shape_str(var.shapes[full_value]) + ": XNNPACK cannot run on zero-size tensors";
      return false;
    }
  }
  return true;
}

// The arena of a variant: every Buffer value gets an aligned block, and
// values whose lifetimes do not overlap share bytes. A value lives from the
// step that writes it to the last step that reads it or a view of it
// (inclusive: a step never writes over what it reads). Greedy first fit,
// largest first. Sets var.offset, var.arena_bytes, var.unshared_bytes;
// returns the arena's size.
size_t plan_arena(const Delegate& d, Variant& var) {
  const Graph& g = d.g;
  const size_t nv = g.values.size();
  var.offset.assign(nv, 0);
  std::vector<int> step_of(g.nodes.size(), 0);
  for (size_t si = 0; si < d.steps.size(); ++si)
    for (uint32_t k : d.steps[si].nodes) step_of[k] = int(si);
  auto root = [&](uint32_t v) {
    while (d.home[v] == Home::Alias) v = d.alias_of[v];
    return v;
  };
  const int kUnset = -1;
  std::vector<int> first(nv, kUnset), last(nv, kUnset);
  auto touch = [&](uint32_t v, int step) {
    v = root(v);
    if (d.home[v] != Home::Buffer) return;
    if (first[v] == kUnset || step < first[v]) first[v] = step;
    if (last[v] == kUnset || step > last[v]) last[v] = step;
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (uint32_t v : g.nodes[k].inputs) touch(v, step_of[k]);
    for (uint32_t v : g.nodes[k].outputs) touch(v, step_of[k]);
    if (g.nodes[k].qsource != kNoValue) touch(g.nodes[k].qsource, step_of[k]);
  }
  // The float32 copies of quantized arguments: written before the first
  // step, read after the last.
  for (uint32_t v : g.inputs) touch(v, 0);
  for (uint32_t v : g.outputs) touch(v, d.steps.empty() ? 0 : int(d.steps.size()) - 1);
  struct Block {
    uint32_t v;
    size_t bytes;
  };
  std::vector<Block> blocks;
  size_t unshared = 0;
  for (size_t v = 0; v < nv; ++v) {
    if (d.home[v] != Home::Buffer || first[v] == kUnset) continue;
    const size_t bytes =
        (numel(var.shapes[v]) * sizeof(float) + kPad + kAlign - 1) / kAlign * kAlign;
    blocks.push_back({uint32_t(v), bytes});
    unshared += bytes;
  }
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const Block& a, const Block& b) { return a.bytes > b.bytes; });
  std::vector<Block> placed;  // in placement order
  size_t total = 0;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of overlapping lifetimes
  for (const Block& b : blocks) {
    busy.clear();
    for (const Block& p : placed)
      if (first[p.v] <= last[b.v] && first[b.v] <= last[p.v])
        busy.push_back({var.offset[p.v], var.offset[p.v] + p.bytes});
    std::sort(busy.begin(), busy.end());
    size_t at = 0;
    for (const auto& r : busy) {
      if (r.first >= at + b.bytes) break;  // the gap before r fits
      at = std::max(at, r.second);
    }
    var.offset[b.v] = at;
    total = std::max(total, at + b.bytes);
    placed.push_back(b);
  }
  var.arena_bytes = total;
  var.unshared_bytes = unshared;
  return total;
}

}  // namespace

// Builds the variant for the given graph-input shapes. `exact`: the declared
// input shapes, so every inferred shape must equal the one the blob declares;
// otherwise (other input shapes of a dynamic program) each must fit within
// the declared one, its upper bound.
std::unique_ptr<Variant> make_variant(const Delegate& d, const std::vector<Shape>& in_shapes,
                                      bool exact, std::string* err, bool* oom) {
  const Graph& g = d.g;
  *oom = false;
  auto var = std::make_unique<Variant>();
  var->in_shapes = in_shapes;
  var->shapes.resize(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant) var->shapes[v] = g.values[v].dims;
  for (size_t i = 0; i < g.inputs.size(); ++i) var->shapes[g.inputs[i]] = in_shapes[i];
  for (const Node& n : g.nodes) {
    if (!infer_shape(g, n, var->shapes, err)) return nullptr;
    for (uint32_t v : n.outputs) {
      const Shape& have = var->shapes[v];
      const Shape& decl = g.values[v].dims;
      bool fits = have.size() == decl.size();
      for (size_t k = 0; fits && k < have.size(); ++k)
        fits = exact ? have[k] == decl[k] : have[k] <= decl[k];
      if (!fits) {
        *err = "value id " + std::to_string(g.values[v].id) + ", written by node " +
               std::to_string(n.index) + " (" + op_name(n.op) + "), has shape " + shape_str(have) +
               (exact ? " but the graph declares " : ", beyond the graph's bound ") +
               shape_str(decl);
        return nullptr;
      }
    }
  }
  if (!mark_empty_steps(d, *var, err)) return nullptr;
  const size_t total = plan_arena(d, *var);
  if (total) {
    var->arena_raw = std::malloc(total + kAlign);
    if (var->arena_raw) {
      const uintptr_t at = reinterpret_cast<uintptr_t>(var->arena_raw);
      var->arena = reinterpret_cast<void*>((at + kAlign - 1) / kAlign * kAlign);
    }
    if (!var->arena) {
      size_t largest = 0;
      uint32_t largest_value = 0;
      for (size_t v = 0; v < g.values.size(); ++v)
        if (d.home[v] == Home::Buffer && numel(var->shapes[v]) >= largest)
          largest = numel(var->shapes[v]), largest_value = uint32_t(v);
      *oom = true;
      *err = "out of memory for " + std::to_string(total) +
             " bytes of buffers between nodes (the largest: value id " +
             std::to_string(g.values[largest_value].id) + " of shape " +
             shape_str(var->shapes[largest_value]) + ")";
      return nullptr;
    }
  }
  if (!make_runtimes(d, *var, err)) return nullptr;
  return var;
}

// The delegate call's tensor for graph value `v` (an external), or null.
pteron_tensor* tensor_arg(const Graph& g, pteron_value* const* args, uint32_t v) {
  const pteron_value* a = args[g.values[v].external];
  return (a && a->tag == PTERON_VALUE_TENSOR) ? a->u.tensor : nullptr;
}
// Storage of every value for this call (d.ptr).
void bind_storage(Delegate& d, pteron_value* const* args, const Variant& var) {
  const Graph& g = d.g;
  for (size_t v = 0; v < g.values.size(); ++v) {
    switch (d.home[v]) {
      case Home::Constant: d.ptr[v] = const_cast<float*>(g.values[v].constant); break;
      case Home::Argument: {
        // An empty tensor may have no storage; pteron's own code still gets
        // a valid pointer (it copies 0 bytes from it).
        static float no_elements[1];
        float* p = static_cast<float*>(tensor_arg(g, args, uint32_t(v))->data);
        d.ptr[v] = p ? p : no_elements;
        break;
      }
      case Home::Buffer:
        d.ptr[v] = reinterpret_cast<float*>(static_cast<char*>(var.arena) + var.offset[v]);
        break;
      default: d.ptr[v] = nullptr; break;
    }
  }
  for (size_t v = 0; v < g.values.size(); ++v)  // aliases follow their source
    if (d.home[v] == Home::Alias) {
      size_t offset = d.alias_offset[v];
      uint32_t src = d.alias_of[v];
      while (d.home[src] == Home::Alias) offset += d.alias_offset[src], src = d.alias_of[src];
      d.ptr[v] = d.ptr[src] + offset;
    }
}

}  // namespace xnnpack
}  // namespace pteron
