// SPDX-License-Identifier: BSD-3-Clause
// types.h - what the XnnpackBackend delegate holds between init and destroy: the graph, its
// steps (pteron's own nodes and XNNPACK library segments), where each value lives, and the
// variants (one per set of input shapes: shapes, arena, library runtimes).
//
// Who fills what: plan/ (steps, homes, kernels, why), variant.cpp (Variant), delegate.cpp
// (the C ABI: init, execute, destroy, the profile).
#ifndef PTERON_XNNPACK_TYPES_H
#define PTERON_XNNPACK_TYPES_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "options.h"

namespace pteron {
namespace xnnpack {

constexpr const char* kId = "XnnpackBackend";
constexpr size_t kMaxVariants = 8;  // input-shape variants kept per delegate
constexpr size_t kAlign = 64;
constexpr size_t kPad = 64;  // XNNPACK may read a little past a tensor

struct Step {
  bool native = false;             // an XNNPACK library segment
  std::vector<uint32_t> nodes;     // node indices, in execution order
  std::vector<uint32_t> boundary;  // native: values exchanged with the outside
  std::vector<char> boutput;       // native: per boundary value, 1 if the segment writes it
};

enum class Home : uint8_t { Constant, Argument, Internal, Buffer, Alias };

struct Variant {
  std::vector<Shape> in_shapes;  // the key
  std::vector<Shape> shapes;     // every value
  std::vector<size_t> offset;    // Buffer values: offset in `arena`
  size_t arena_bytes = 0;        // planned (values with disjoint lifetimes share bytes)
  size_t unshared_bytes = 0;     // what one buffer per value would take
  void* arena = nullptr;         // kAlign-aligned, inside arena_raw
  void* arena_raw = nullptr;     // what malloc gave (MinGW has no std::aligned_alloc)
  std::vector<void*> runtimes;   // per step (null for own steps)
  std::vector<char> empty;       // per step: every value it writes has no elements
  void* pool = nullptr;          // pthreadpool the runtimes were made with
  ~Variant();                    // variant.cpp: deletes the runtimes, frees the arena
};

struct Delegate {
  Options options;  // read once, at init (options.h)
  Graph g;
  std::vector<Step> steps;
  std::vector<Home> home;
  std::vector<uint32_t> alias_of;
  std::vector<size_t> alias_offset;  // per Alias value: floats after its source's first
  std::vector<std::unique_ptr<Variant>> variants;  // most recently used last
  std::vector<float*> ptr;                         // scratch for execute
  std::vector<const OwnKernel*> kernel;            // per node: pteron's kernel, if pteron runs it
  std::vector<std::unique_ptr<NodeState>> state;   // per node: what its kernel prepared
  std::vector<std::string> why;                    // per node: why it runs on its side
  std::vector<char> requant;                       // per node: round its output (quantized)
  std::vector<char> idle;                          // per node: nothing to do (see plan)
  size_t cancelled = 0;                            // transposes removed at load
  size_t in_place = 0;                             // concatenation inputs written in place
  size_t fused = 0;                                // element-wise pairs fused at load
  size_t folded = 0, chains = 0;                   // transposes removed by folding chains
  // Options::profile: per step, executions timed and their total time.
  bool profile = false;
  std::vector<double> step_us;
  std::vector<uint64_t> step_calls;
  std::vector<Shape> step_shape;  // the first input's shape in the last timed call
  ~Delegate();  // delegate.cpp: prints the profile
};

}  // namespace xnnpack
}  // namespace pteron

#endif
