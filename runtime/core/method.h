// SPDX-License-Identifier: BSD-3-Clause
// method.h - a loaded method (struct pteron_method) and the steps that build
// and run it. Never installed.
//
// The data path, top-down:
//   program.cpp      .pte bytes -> verified program (pteron_program)
//   method_load.cpp  execution plan -> values, tensors placed in memory
//   resolve.cpp      instructions decoded; operators resolved in the kernel
//                    registry (registry.cpp) by name, overload and kernel key;
//                    delegates resolved in the backend registry and initialised
//   executor.cpp     chains run: each instruction calls its kernel or delegate
//   method_capi.cpp  the C API over all of it (pteron.h)
#pragma once

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "internal.h"
#include "profile.h"

namespace pteron {

// 64-byte aligned heap block.
struct AlignedBlock {
  void* raw = nullptr;
  void* data = nullptr;
  size_t size = 0;
  AlignedBlock() = default;
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
  AlignedBlock(AlignedBlock&& o) noexcept : raw(o.raw), data(o.data), size(o.size) {
    o.raw = o.data = nullptr;
    o.size = 0;
  }
  ~AlignedBlock() { std::free(raw); }
  bool alloc(size_t n) {
    raw = std::calloc(1, n + 64);
    if (!raw) return false;
    uintptr_t p = (reinterpret_cast<uintptr_t>(raw) + 63) & ~static_cast<uintptr_t>(63);
    data = reinterpret_cast<void*>(p);
    size = n;
    return true;
  }
};

enum class Op : uint8_t { Kernel, Delegate, Move, JumpFalse, Free };

// One decoded instruction of a chain.
struct Instr {
  Op op;
  int32_t a = 0, b = 0;  // Move: from,to; JumpFalse: cond,dest; Free: value; Kernel: op index;
                         // Delegate: delegate index
  pteron_kernel_fn fn = nullptr;
  std::vector<pteron_value*> args;
  std::vector<int32_t> int_list_args;  // value indices of IntList args to refresh
  int32_t region = -1;  // a graph pass's region starting here (pteron_method::regions), or -1
};

// A run of instructions a graph pass replaced (graph.cpp, kernel.h).
struct Region {
  std::string name;
  pteron_region_fn run = nullptr;
  void* state = nullptr;
  void (*destroy)(void*) = nullptr;
  size_t count = 0;   // instructions it stands for, from the one that names it
  int32_t event = -1;  // interned "native_call_<name>" (profile)
};

struct Chain {
  std::vector<Instr> instrs;
};

struct Delegate {
  BackendEntry backend;
  void* handle = nullptr;
};

}  // namespace pteron

struct pteron_method {
  pteron_program* program = nullptr;
  const pteron::fb::ExecutionPlan* plan = nullptr;
  std::string name;
  bool outputs_ready = false;  // the last execute succeeded
  std::vector<pteron_value> values;
  std::vector<pteron_tensor> tensors;               // one per value (only Tensor slots used)
  std::vector<std::vector<int64_t>> ints;           // IntList materialisation, per value
  std::vector<std::vector<uint32_t>> int_items;     // IntList item value indices, per value
  std::vector<std::vector<pteron_tensor*>> tlists;  // (Optional)TensorList, per value
  std::vector<std::vector<int32_t>> tlist_items;    // their items' value indices (-1: absent)
  std::vector<pteron::AlignedBlock> planned;        // runtime-owned planned buffers
  std::vector<pteron::AlignedBlock> owned;          // runtime-owned unplanned tensors
  std::vector<pteron::Chain> chains;
  std::vector<pteron::Delegate> delegates;
  std::vector<pteron::Region> regions;  // graph passes' regions (graph.cpp)
  std::vector<int32_t> inputs, outputs;
  std::vector<bool> input_set;
  // Row-major copies of tensor inputs. Planned memory of an input may be
  // reused by later intermediates, so execute() copies these into place
  // every time: inputs keep their values between executions.
  std::vector<std::vector<unsigned char>> staged;
  pteron_kernel_context ctx;
  std::vector<std::string> op_names;  // per operator index, "name.overload"
  // Serialises the C API's calls on this method (pteron.h, "Thread-safety"):
  // info, set_input, execute and copy_output from several threads take turns.
  mutable std::mutex call_mutex;
  // The options' memory budget (0: none) and what method load allocated so far.
  uint64_t max_allocated_bytes = 0;
  uint64_t allocated_bytes = 0;
  // Timings (pteron.h, "Profiling"; profile.h): method load's always, the
  // executes' while profile.on.
  pteron::Profile profile;
  std::vector<int32_t> native_call_names;  // per operator index: "native_call_<op>", interned

  ~pteron_method() {
    for (pteron::Region& r : regions)
      if (r.destroy) r.destroy(r.state);
    for (pteron::Delegate& d : delegates)
      if (d.handle && d.backend.iface.destroy) d.backend.iface.destroy(d.handle);
    pteron_program_release(program);
  }
};

namespace pteron {

// INVALID_PROGRAM naming `what` unless 0 <= idx < the method's value count.
Status check_value_index(const pteron_method* m, int64_t idx, const char* what);

// method_load.cpp: finds method `name` in `p` and builds it into `m`: values,
// tensors placed in constant, planned or runtime-owned memory, inputs and
// outputs, then its chains (resolve.cpp).
Status load_method(pteron_program* p, const char* name, const pteron_method_options* opts,
                   pteron_method* m);

// resolve.cpp: decodes every chain's instructions, resolves every operator
// in the kernel registry and every delegate in the backend registry (naming
// all that are missing at once), then initialises the delegates.
Status build_chains(pteron_method* m);

// graph.cpp: runs the registered graph passes (kernel.h) on every chain
// without jumps or moves, unless PTERON_GRAPH_OPT is "0".
Status run_graph_passes(pteron_method* m);

// executor.cpp: copies the staged inputs into place and runs the chains.
Status execute(pteron_method* m);

}  // namespace pteron
