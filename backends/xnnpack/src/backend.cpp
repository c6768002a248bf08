// SPDX-License-Identifier: BSD-3-Clause
// backend.cpp - the XnnpackBackend delegate: plan, segments, execution.
//
// Reading order:
//   init:    parse_blob (graph.cpp) -> classify every node (the linked
//            XNNPACK defines it natively, or pteron runs it itself, or load
//            fails naming it) -> schedule the nodes into steps: runs of
//            native nodes become one XNNPACK subgraph ("segment"), pteron's
//            own nodes run between them -> decide where each value lives
//            (delegate argument, constant, XNNPACK-internal, or a boundary
//            buffer) -> build the variant for the declared input shapes.
//   execute: input shapes -> variant for those shapes (cached; a new shape
//            within the program's bounds builds new XNNPACK runtimes) ->
//            resize outputs -> run the steps in order.
//   destroy: every runtime, buffer and owned constant.
//
// Every XNNPACK runtime is created on the process's one pthreadpool, which
// pteron_threadpool owns (pteron_threadpool_pthreadpool()).
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "graph.h"
#include "own_ops.h"
#include "pteron/kernel.h"
#include "pteron/threadpool.h"
#include "xnn_config.h"

namespace pteron {
namespace xnnpack {
namespace {

constexpr const char* kId = "XnnpackBackend";
constexpr size_t kMaxVariants = 8;  // input-shape variants kept per delegate
constexpr size_t kAlign = 64;
constexpr size_t kPad = 64;  // XNNPACK may read a little past a tensor

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
    default: return "error";
  }
}

// Can the linked XNNPACK (as detected at configure time) define node `n`?
bool native_supported(const Node& n) {
  switch (n.op) {
    case Op::Add:
    case Op::Subtract:
    case Op::Multiply:
    case Op::Div:
    case Op::FullyConnected:
    case Op::Conv2d:
    case Op::DepthwiseConv2d:
    case Op::Clamp:
    case Op::Hardswish:
    case Op::Sigmoid:
    case Op::Softmax:
    case Op::AvgPool2d:
    case Op::MaxPool2d:
    case Op::GlobalAvgPool2d:
    case Op::StaticReshape:
    case Op::StaticConstantPad:
    case Op::ResizeBilinear2d:
    case Op::Minimum:
    case Op::Maximum:
    case Op::Abs:
    case Op::Negate:
    case Op::Floor:
    case Op::Ceiling:
    case Op::SquareRoot:
    case Op::Square:
    case Op::ELU:
    case Op::LeakyReLU:
    case Op::PReLU: return true;
#if PTERON_XNN_HAS_STATIC_TRANSPOSE
    case Op::StaticTranspose: return true;
#endif
#if PTERON_XNN_HAS_CONCATENATE2
    case Op::Concatenate2: return true;
#endif
#if PTERON_XNN_HAS_CONCATENATE3
    case Op::Concatenate3: return true;
#endif
#if PTERON_XNN_HAS_CONCATENATE4
    case Op::Concatenate4: return true;
#endif
#if PTERON_XNN_HAS_STATIC_SLICE
    case Op::StaticSlice: return true;
#endif
#if PTERON_XNN_HAS_BATCH_MATRIX_MULTIPLY
    case Op::BatchMatMul: return n.flags == 0;
#endif
#if PTERON_XNN_HAS_TANH
    case Op::Tanh: return true;
#endif
    default: return false;
  }
}

struct Step {
  bool native = false;
  std::vector<uint32_t> nodes;     // node indices, in execution order
  std::vector<uint32_t> boundary;  // native: values exchanged with the outside
  std::vector<uint32_t> bflags;    // native: XNN_VALUE_FLAG_EXTERNAL_* per boundary value
};

enum class Home : uint8_t { Constant, Argument, Internal, Buffer, Alias };

struct Variant {
  std::vector<Shape> in_shapes;  // the key
  std::vector<Shape> shapes;     // every value
  std::vector<size_t> offset;    // Buffer values: offset in `arena`
  void* arena = nullptr;
  std::vector<xnn_runtime_t> runtimes;  // per step (null for own steps)
  std::vector<char> empty;              // per step: every value it writes has no elements
  void* pool = nullptr;                 // pthreadpool the runtimes were made with
  ~Variant() {
    for (xnn_runtime_t r : runtimes)
      if (r) xnn_delete_runtime(r);
    std::free(arena);
  }
};

struct Delegate {
  Graph g;
  std::vector<Step> steps;
  std::vector<Home> home;
  std::vector<uint32_t> alias_of;
  std::vector<std::unique_ptr<Variant>> variants;  // most recently used last
  std::vector<float*> ptr;                         // scratch for execute
  std::vector<const OwnKernel*> kernel;            // per node: pteron's kernel, if pteron runs it
  std::vector<std::unique_ptr<NodeState>> state;   // per node: what its kernel prepared
};

// PTERON_XNNPACK_USE_LIBRARY=none: pteron's own kernel for every node, the
// linked XNNPACK library for none (unset: the library where it can).
bool library_allowed() {
  const char* v = std::getenv("PTERON_XNNPACK_USE_LIBRARY");
  return !(v && std::strcmp(v, "none") == 0);
}

template <typename... A>
int32_t failf(pteron_kernel_context* ctx, int32_t code, const char* fmt, A... a) {
  char buf[768];
  std::snprintf(buf, sizeof buf, fmt, a...);
  return pteron_kernel_fail(ctx, code, buf);
}

// ---- planning ---------------------------------------------------------------

// A transpose that only moves dims of size 1 keeps the memory order: it is a
// reshape, which every XNNPACK can run (e.g. [N,1,1,C] -> [N,C,1,1]).
void rewrite_trivial_transposes(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.op != Op::StaticTranspose || n.inputs.size() != 1) continue;
    const Shape& in = g.values[n.inputs[0]].dims;
    if (n.list0.size() != in.size()) continue;
    size_t last = 0;
    bool ordered = true, first = true;
    for (size_t p : n.list0) {
      if (p >= in.size()) {
        ordered = false;
        break;
      }
      if (in[p] == 1) continue;
      if (!first && p < last) {
        ordered = false;
        break;
      }
      last = p;
      first = false;
    }
    if (!ordered) continue;
    n.op = Op::StaticReshape;
    n.list0 = g.values[n.outputs[0]].dims;
  }
}

// What planning learns about the graph on the way, step by step.
struct PlanFacts {
  std::vector<int> producer;              // per value: the node writing it, -1 for none
  std::vector<char> native;               // per node: 1 XNNPACK runs it, 0 pteron does
  std::vector<int> step_of;               // per node: its step
  std::vector<std::vector<int>> read_by;  // per value: the steps of the nodes reading it
};

// Producer of every value; each non-constant, non-input value must be
// written by exactly one node before it is read.
bool find_producers(const Graph& g, PlanFacts& f, std::string* err) {
  const size_t nn = g.nodes.size();
  f.producer.assign(g.values.size(), -1);
  for (size_t k = 0; k < nn; ++k) {
    for (uint32_t v : g.nodes[k].inputs) {
      const Value& val = g.values[v];
      if (!val.constant && !val.graph_input && f.producer[v] < 0) {
        *err = "node " + std::to_string(k) + " (" + op_name(g.nodes[k].op) + ") reads value id " +
               std::to_string(val.id) + " before any node writes it";
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

// Classify: native, own, or neither (load fails naming the node type).
bool classify_nodes(const Graph& g, PlanFacts& f, std::string* err) {
  const size_t nn = g.nodes.size();
  std::vector<char>& native = f.native;
  native.assign(nn, 0);
  const bool library = library_allowed();
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = g.nodes[k];
    if (n.outputs.size() != 1)
      native[k] = 2;  // multi-output nodes: none supported
    else if (library && native_supported(n))
      native[k] = 1;
    else {
      std::string why;
      if (!own_kernel(n, &why)) native[k] = 2;
      if (native[k] == 2 && !why.empty()) {
        *err = "node " + std::to_string(k) + " (" + op_name(n.op) + "): " + why;
        return false;
      }
    }
    if (native[k] == 2) {
      *err = std::string("node ") + std::to_string(k) + " has type " + op_name(n.op) +
             ", which delegate " + kId + " cannot run: the linked XNNPACK (" +
             PTERON_XNN_DESCRIPTION + ") has no such node and pteron has no implementation of it";
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

// Schedule: alternately take every ready native node (one segment), then
// every ready own node (one step each), until all are placed.
bool schedule_steps(Delegate& d, PlanFacts& f, std::string* err) {
  const Graph& g = d.g;
  const size_t nn = g.nodes.size();
  std::vector<int> pending(nn, 0);
  std::vector<std::vector<uint32_t>> users(nn);
  for (size_t k = 0; k < nn; ++k)
    for (uint32_t v : g.nodes[k].inputs)
      if (f.producer[v] >= 0) {
        ++pending[k];
        users[size_t(f.producer[v])].push_back(uint32_t(k));
      }
  std::vector<char> done(nn, 0);
  size_t placed = 0;
  f.step_of.assign(nn, -1);
  while (placed < nn) {
    const size_t before = placed;
    for (int want_native = 1; want_native >= 0; --want_native) {
      Step seg;
      seg.native = want_native;
      bool progress = true;
      while (progress) {
        progress = false;
        for (size_t k = 0; k < nn; ++k) {
          if (done[k] || pending[k] != 0 || bool(f.native[k]) != bool(want_native)) continue;
          done[k] = 1;
          ++placed;
          for (uint32_t u : users[k]) --pending[u];
          if (want_native) {
            seg.nodes.push_back(uint32_t(k));
            f.step_of[k] = int(d.steps.size());
          } else {
            Step s;
            s.nodes.push_back(uint32_t(k));
            f.step_of[k] = int(d.steps.size());
            d.steps.push_back(s);
          }
          progress = true;
          break;
        }
      }
      if (want_native && !seg.nodes.empty()) {
        const int idx = int(d.steps.size());
        for (uint32_t k : seg.nodes) f.step_of[k] = idx;
        d.steps.push_back(std::move(seg));
      }
    }
    if (placed == before) {
      *err = "the graph has a cycle";
      return false;
    }
  }
  return true;
}

// Where each value lives.
void place_values(Delegate& d, PlanFacts& f) {
  const Graph& g = d.g;
  const size_t nv = g.values.size();
  d.home.assign(nv, Home::Internal);
  d.alias_of.assign(nv, kNoValue);
  f.read_by.assign(nv, {});
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].inputs) f.read_by[v].push_back(f.step_of[k]);
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g.values[v];
    if (val.constant) {
      d.home[v] = Home::Constant;
      continue;
    }
    if (val.graph_input || val.graph_output) {
      d.home[v] = Home::Argument;
      continue;
    }
    const int ps = f.producer[v] >= 0 ? f.step_of[size_t(f.producer[v])] : -1;
    // A value no node reads (and no graph output) still needs storage: XNNPACK
    // gives an unread internal value none, then fails an assertion writing it.
    bool internal = ps >= 0 && d.steps[size_t(ps)].native && !f.read_by[v].empty();
    for (int s : f.read_by[v]) internal &= (s == ps);
    d.home[v] = internal ? Home::Internal : Home::Buffer;
  }
}

// Own-code reshapes into a non-argument value are views of their input.
void alias_reshapes(Delegate& d, const PlanFacts& f) {
  for (const Step& s : d.steps) {
    if (s.native) continue;
    const Node& n = d.g.nodes[s.nodes[0]];
    if (n.op != Op::StaticReshape) continue;
    const uint32_t in = n.inputs[0], out = n.outputs[0];
    if (d.home[out] == Home::Buffer) {
      d.home[out] = Home::Alias;
      d.alias_of[out] = in;
    } else if (d.home[out] == Home::Argument && d.home[in] == Home::Buffer &&
               f.read_by[in].size() == 1) {
      // Reshaped into a delegate output: the producer writes there directly.
      d.home[in] = Home::Alias;
      d.alias_of[in] = out;
    }
  }
}

// Boundary values of each segment: what it exchanges with the outside.
void find_boundaries(Delegate& d, const PlanFacts& f) {
  const Graph& g = d.g;
  const size_t nv = g.values.size();
  for (size_t si = 0; si < d.steps.size(); ++si) {
    Step& s = d.steps[si];
    if (!s.native) continue;
    std::vector<char> seen(nv, 0);
    for (uint32_t k : s.nodes) {
      const Node& n = g.nodes[k];
      for (uint32_t v : n.inputs)
        if (!seen[v] && d.home[v] != Home::Constant && d.home[v] != Home::Internal) {
          seen[v] = 1;
          s.boundary.push_back(v);
          s.bflags.push_back(f.producer[v] >= 0 && f.step_of[size_t(f.producer[v])] == int(si)
                                 ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT
                                 : XNN_VALUE_FLAG_EXTERNAL_INPUT);
        }
      for (uint32_t v : n.outputs)
        if (!seen[v] && d.home[v] != Home::Internal) {
          seen[v] = 1;
          s.boundary.push_back(v);
          s.bflags.push_back(XNN_VALUE_FLAG_EXTERNAL_OUTPUT);
        }
    }
  }
}

bool plan(Delegate& d, std::string* err) {
  rewrite_trivial_transposes(d.g);
  PlanFacts f;
  if (!find_producers(d.g, f, err)) return false;
  if (!classify_nodes(d.g, f, err)) return false;
  move_reshapes_to_own_side(d.g, f);
  if (!schedule_steps(d, f, err)) return false;
  place_values(d, f);
  alias_reshapes(d, f);
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
  return true;
}

// ---- XNNPACK subgraph of one segment ---------------------------------------

xnn_status define_node(xnn_subgraph_t sg, const Node& n, const std::vector<uint32_t>& id,
                       const std::vector<Shape>& shapes, uint32_t out_id) {
  auto in = [&](size_t i) { return id[n.inputs[i]]; };
  const uint32_t out = out_id;
  const float lo = n.out_min, hi = n.out_max;
  const uint32_t bias = n.inputs.size() > 2 ? in(2) : XNN_INVALID_VALUE_ID;
  switch (n.op) {
    case Op::Add: return xnn_define_add2(sg, lo, hi, in(0), in(1), out, 0);
    case Op::Subtract: return xnn_define_subtract(sg, lo, hi, in(0), in(1), out, 0);
    case Op::Multiply: return xnn_define_multiply2(sg, lo, hi, in(0), in(1), out, 0);
    case Op::Div: return xnn_define_divide(sg, lo, hi, in(0), in(1), out, 0);
    case Op::Minimum: return xnn_define_minimum2(sg, in(0), in(1), out, 0);
    case Op::Maximum: return xnn_define_maximum2(sg, in(0), in(1), out, 0);
    case Op::PReLU: return xnn_define_prelu(sg, in(0), in(1), out, 0);
    case Op::FullyConnected:
      return xnn_define_fully_connected(sg, lo, hi, in(0), in(1), bias, out,
                                        n.flags & XNN_FLAG_TRANSPOSE_WEIGHTS);
    case Op::Conv2d:
      return xnn_define_convolution_2d(sg, n.p[0], n.p[1], n.p[2], n.p[3], n.p[4], n.p[5], n.p[6],
                                       n.p[7], n.p[8], n.p[9], n.p[12], n.p[10], n.p[11], lo, hi,
                                       in(0), in(1), bias, out, 0);
    case Op::DepthwiseConv2d:
      return xnn_define_depthwise_convolution_2d(
          sg, n.p[0], n.p[1], n.p[2], n.p[3], n.p[4], n.p[5], n.p[6], n.p[7], n.p[8], n.p[9],
          n.p[11] / (n.p[10] ? n.p[10] : 1), n.p[12] * n.p[10], lo, hi, in(0), in(1), bias, out, 0);
    case Op::AvgPool2d:
      return xnn_define_average_pooling_2d(sg, n.p[0], n.p[1], n.p[2], n.p[3], n.p[4], n.p[5],
                                           n.p[6], n.p[7], lo, hi, in(0), out, 0);
    case Op::MaxPool2d:
      return xnn_define_max_pooling_2d(sg, n.p[0], n.p[1], n.p[2], n.p[3], n.p[4], n.p[5], n.p[6],
                                       n.p[7], n.p[8] ? n.p[8] : 1, n.p[9] ? n.p[9] : 1, lo, hi,
                                       in(0), out, 0);
    case Op::GlobalAvgPool2d:
      return xnn_define_global_average_pooling_2d(sg, lo, hi, in(0), out, 0);
    case Op::Clamp: return xnn_define_clamp(sg, lo, hi, in(0), out, 0);
    case Op::Hardswish: return xnn_define_hardswish(sg, in(0), out, 0);
    case Op::Sigmoid: return xnn_define_sigmoid(sg, in(0), out, 0);
    case Op::Softmax: return xnn_define_softmax(sg, in(0), out, 0);
    case Op::Abs: return xnn_define_abs(sg, in(0), out, 0);
    case Op::Negate: return xnn_define_negate(sg, in(0), out, 0);
    case Op::Floor: return xnn_define_floor(sg, in(0), out, 0);
    case Op::Ceiling: return xnn_define_ceiling(sg, in(0), out, 0);
    case Op::SquareRoot: return xnn_define_square_root(sg, in(0), out, 0);
    case Op::Square: return xnn_define_square(sg, in(0), out, 0);
    case Op::ELU: return xnn_define_elu(sg, n.f, in(0), out, 0);
    case Op::LeakyReLU: return xnn_define_leaky_relu(sg, n.f, in(0), out, 0);
    case Op::StaticReshape: {
      const Shape& s = shapes[n.outputs[0]];
      return xnn_define_static_reshape(sg, s.size(), s.data(), in(0), out, 0);
    }
    case Op::StaticConstantPad:
      return xnn_define_static_constant_pad(sg, n.list0.data(), n.list1.data(), n.f, in(0), out, 0);
    case Op::ResizeBilinear2d:
      return xnn_define_static_resize_bilinear_2d(
          sg, n.p[0], n.p[1], in(0), out,
          n.flags & (XNN_FLAG_ALIGN_CORNERS | XNN_FLAG_TENSORFLOW_LEGACY_MODE));
#if PTERON_XNN_HAS_STATIC_TRANSPOSE
    case Op::StaticTranspose:
      return xnn_define_static_transpose(sg, n.list0.size(), n.list0.data(), in(0), out, 0);
#endif
#if PTERON_XNN_HAS_CONCATENATE2
    case Op::Concatenate2: return xnn_define_concatenate2(sg, n.p[0], in(0), in(1), out, 0);
#endif
#if PTERON_XNN_HAS_CONCATENATE3
    case Op::Concatenate3: return xnn_define_concatenate3(sg, n.p[0], in(0), in(1), in(2), out, 0);
#endif
#if PTERON_XNN_HAS_CONCATENATE4
    case Op::Concatenate4:
      return xnn_define_concatenate4(sg, n.p[0], in(0), in(1), in(2), in(3), out, 0);
#endif
#if PTERON_XNN_HAS_STATIC_SLICE
    case Op::StaticSlice:
      return xnn_define_static_slice(sg, n.list0.size(), n.list0.data(),
                                     shapes[n.outputs[0]].data(), in(0), out, 0);
#endif
#if PTERON_XNN_HAS_BATCH_MATRIX_MULTIPLY
    case Op::BatchMatMul: return xnn_define_batch_matrix_multiply(sg, in(0), in(1), out, 0);
#endif
#if PTERON_XNN_HAS_TANH
    case Op::Tanh: return xnn_define_tanh(sg, in(0), out, 0);
#endif
    default: return xnn_status_unsupported_parameter;
  }
}

// Nodes whose XNNPACK definition takes the output range itself.
bool takes_range(Op op) {
  switch (op) {
    case Op::Add:
    case Op::Subtract:
    case Op::Multiply:
    case Op::Div:
    case Op::FullyConnected:
    case Op::Conv2d:
    case Op::DepthwiseConv2d:
    case Op::AvgPool2d:
    case Op::MaxPool2d:
    case Op::GlobalAvgPool2d:
    case Op::Clamp: return true;
    default: return false;
  }
}

bool build_segment(const Delegate& d, const Step& s, const std::vector<Shape>& shapes, void* pool,
                   xnn_runtime_t* rt, std::string* err) {
  const Graph& g = d.g;
  xnn_subgraph_t sg = nullptr;
  xnn_status st = xnn_create_subgraph(uint32_t(s.boundary.size()), 0, &sg);
  if (st != xnn_status_success) {
    *err = std::string("xnn_create_subgraph: ") + status_name(st);
    return false;
  }
  std::vector<uint32_t> id(g.values.size(), XNN_INVALID_VALUE_ID);
  auto define_value = [&](uint32_t v, uint32_t ext, uint32_t flags) {
    const Shape& dims = shapes[v];
    return xnn_define_tensor_value(sg, xnn_datatype_fp32, dims.size(), dims.data(),
                                   g.values[v].constant, ext, flags, &id[v]);
  };
  for (size_t i = 0; i < s.boundary.size() && st == xnn_status_success; ++i)
    st = define_value(s.boundary[i], uint32_t(i), s.bflags[i]);
  std::string where;
  for (uint32_t k : s.nodes) {
    if (st != xnn_status_success) break;
    const Node& n = g.nodes[k];
    for (uint32_t v : n.inputs)
      if (id[v] == XNN_INVALID_VALUE_ID && st == xnn_status_success)
        st = define_value(v, XNN_INVALID_VALUE_ID, 0);
    for (uint32_t v : n.outputs)
      if (id[v] == XNN_INVALID_VALUE_ID && st == xnn_status_success)
        st = define_value(v, XNN_INVALID_VALUE_ID, 0);
    if (st != xnn_status_success) {
      where = "defining a value of";
      break;
    }
    const uint32_t out = id[n.outputs[0]];
    if (n.has_range() && !takes_range(n.op)) {
      // Clamp separately: node -> fresh internal value -> clamp -> output.
      uint32_t tmp = XNN_INVALID_VALUE_ID;
      const Shape& dims = shapes[n.outputs[0]];
      st = xnn_define_tensor_value(sg, xnn_datatype_fp32, dims.size(), dims.data(), nullptr,
                                   XNN_INVALID_VALUE_ID, 0, &tmp);
      if (st == xnn_status_success) st = define_node(sg, n, id, shapes, tmp);
      if (st == xnn_status_success) st = xnn_define_clamp(sg, n.out_min, n.out_max, tmp, out, 0);
    } else {
      st = define_node(sg, n, id, shapes, out);
    }
    if (st != xnn_status_success) {
      where = "defining";
      char buf[200];
      std::snprintf(buf, sizeof buf, "XNNPACK refused node %u (%s): %s (output %s)", n.index,
                    op_name(n.op), status_name(st), shape_str(shapes[n.outputs[0]]).c_str());
      *err = buf;
      xnn_delete_subgraph(sg);
      return false;
    }
  }
  if (st != xnn_status_success) {
    *err = std::string("XNNPACK refused a value: ") + status_name(st);
    xnn_delete_subgraph(sg);
    return false;
  }
  st = xnn_create_runtime_v2(sg, static_cast<pthreadpool_t>(pool), 0, rt);
  xnn_delete_subgraph(sg);
  if (st != xnn_status_success) {
    *err = std::string("xnn_create_runtime_v2: ") + status_name(st);
    return false;
  }
  return true;
}

bool make_runtimes(const Delegate& d, Variant& var, std::string* err) {
  for (xnn_runtime_t& r : var.runtimes)
    if (r) {
      xnn_delete_runtime(r);
      r = nullptr;
    }
  var.pool = pteron_threadpool_pthreadpool();
  var.runtimes.assign(d.steps.size(), nullptr);
  for (size_t i = 0; i < d.steps.size(); ++i)
    if (d.steps[i].native && !var.empty[i] &&
        !build_segment(d, d.steps[i], var.shapes, var.pool, &var.runtimes[i], err))
      return false;
  return true;
}

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
  size_t total = 0, largest = 0;
  uint32_t largest_value = 0;
  var->offset.assign(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (d.home[v] != Home::Buffer) continue;
    var->offset[v] = total;
    const size_t bytes = numel(var->shapes[v]) * sizeof(float);
    if (bytes >= largest) largest = bytes, largest_value = uint32_t(v);
    total += (bytes + kPad + kAlign - 1) / kAlign * kAlign;
  }
  if (total) {
    var->arena = std::aligned_alloc(kAlign, total);
    if (!var->arena) {
      *oom = true;
      *err = "out of memory for " + std::to_string(total) +
             " bytes of buffers between segments (the largest: value id " +
             std::to_string(g.values[largest_value].id) + " of shape " +
             shape_str(var->shapes[largest_value]) + ")";
      return nullptr;
    }
  }
  if (!make_runtimes(d, *var, err)) return nullptr;
  return var;
}

// ---- the C ABI ---------------------------------------------------------------

int32_t is_available() { return 1; }

// PTERON_XNNPACK_DEBUG: one line on stderr saying how the graph was split.
void print_plan(const Delegate& d) {
  std::string own;
  size_t segs = 0;
  size_t views = 0;
  for (const Step& s : d.steps) {
    if (s.native) {
      ++segs;
      continue;
    }
    const Node& n = d.g.nodes[s.nodes[0]];
    if (n.op == Op::StaticReshape &&
        (d.home[n.outputs[0]] == Home::Alias || d.home[n.inputs[0]] == Home::Alias)) {
      ++views;
      continue;
    }
    const std::string nm = op_name(n.op);
    if (("," + own + ",").find("," + nm + ",") == std::string::npos)
      own += (own.empty() ? "" : ",") + nm;
  }
  std::fprintf(stderr,
               "pteron XnnpackBackend: %zu nodes, %zu XNNPACK segment(s), %zu step(s); "
               "pteron runs: %s; reshapes as views: %zu\n",
               d.g.nodes.size(), segs, d.steps.size(), own.empty() ? "(none)" : own.c_str(), views);
}

int32_t init(pteron_kernel_context* ctx, const void* processed, size_t size,
             const pteron_compile_spec*, size_t, void** handle) {
  *handle = nullptr;
  xnn_status st = xnn_initialize(nullptr);
  if (st != xnn_status_success)
    return failf(ctx, PTERON_ERROR_NOT_SUPPORTED, "xnn_initialize failed: %s", status_name(st));
  std::unique_ptr<Delegate> d(new (std::nothrow) Delegate);
  if (!d) return pteron_kernel_fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, nullptr);
  std::string err;
  if (!parse_blob(ctx, static_cast<const uint8_t*>(processed), size, &d->g, &err))
    return failf(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s", err.c_str());
  if (!plan(*d, &err)) {
    const bool unsupported = err.find("cannot run") != std::string::npos;
    return failf(ctx, unsupported ? PTERON_ERROR_NOT_SUPPORTED : PTERON_ERROR_INVALID_PROGRAM, "%s",
                 err.c_str());
  }
  // Build the declared-shape variant now: a graph XNNPACK refuses fails here,
  // at method load, not at the first execute.
  std::vector<Shape> declared;
  for (uint32_t v : d->g.inputs) declared.push_back(d->g.values[v].dims);
  bool oom = false;
  std::unique_ptr<Variant> var = make_variant(*d, declared, true, &err, &oom);
  if (!var)
    return failf(ctx, oom ? PTERON_ERROR_OUT_OF_MEMORY : PTERON_ERROR_INVALID_PROGRAM, "%s",
                 err.c_str());
  d->variants.push_back(std::move(var));
  d->ptr.assign(d->g.values.size(), nullptr);
  if (const char* dbg = std::getenv("PTERON_XNNPACK_DEBUG"))
    if (*dbg && *dbg != '0') print_plan(*d);
  *handle = d.release();
  return PTERON_OK;
}

// The delegate call's tensor for graph value `v` (an external), or null.
pteron_tensor* tensor_arg(const Graph& g, pteron_value* const* args, uint32_t v) {
  const pteron_value* a = args[g.values[v].external];
  return (a && a->tag == PTERON_VALUE_TENSOR) ? a->u.tensor : nullptr;
}

// The shapes of the call's graph inputs, each within the graph's bound (an
// input of another rank but the declared element count takes the declared
// shape).
int32_t read_input_shapes(pteron_kernel_context* ctx, const Graph& g, pteron_value* const* args,
                          std::vector<Shape>* in_shapes) {
  in_shapes->assign(g.inputs.size(), {});
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const uint32_t v = g.inputs[i];
    const pteron_tensor* t = tensor_arg(g, args, v);
    if (!t || t->dtype != PTERON_DTYPE_FLOAT32)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph input %zu) must be a float32 tensor", kId,
                   g.values[v].external, i);
    const Shape& decl = g.values[v].dims;
    Shape s(t->sizes, t->sizes + t->dim);
    if (!t->data && numel(s) != 0)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph input %zu) of shape %s has no data", kId,
                   g.values[v].external, i, shape_str(s).c_str());
    if (s.size() != decl.size()) {
      if (numel(s) != numel(decl))
        return failf(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                     "%s: graph input %zu has shape %s, the "
                     "graph declares %s",
                     kId, i, shape_str(s).c_str(), shape_str(decl).c_str());
      s = decl;
    }
    for (size_t k = 0; k < s.size(); ++k)
      if (s[k] > decl[k])
        return failf(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                     "%s: graph input %zu has shape %s, beyond "
                     "the graph's bound %s",
                     kId, i, shape_str(s).c_str(), shape_str(decl).c_str());
    (*in_shapes)[i] = std::move(s);
  }
  return PTERON_OK;
}

// The variant for these input shapes: cached (most recently used last; its
// runtimes rebuilt if the thread pool was replaced) or built now.
int32_t find_variant(pteron_kernel_context* ctx, Delegate& d, const std::vector<Shape>& in_shapes,
                     Variant** out) {
  Variant* var = nullptr;
  for (size_t i = d.variants.size(); i-- > 0;) {
    if (d.variants[i]->in_shapes == in_shapes) {
      std::unique_ptr<Variant> hit = std::move(d.variants[i]);
      d.variants.erase(d.variants.begin() + long(i));
      d.variants.push_back(std::move(hit));
      var = d.variants.back().get();
      break;
    }
  }
  std::string err;
  if (!var) {
    bool oom = false;
    std::unique_ptr<Variant> nv = make_variant(d, in_shapes, false, &err, &oom);
    if (!nv)
      return failf(ctx, oom ? PTERON_ERROR_OUT_OF_MEMORY : PTERON_ERROR_SHAPE_MISMATCH, "%s: %s",
                   kId, err.c_str());
    if (d.variants.size() >= kMaxVariants) d.variants.erase(d.variants.begin());
    d.variants.push_back(std::move(nv));
    var = d.variants.back().get();
  } else if (var->pool != pteron_threadpool_pthreadpool()) {
    // The thread pool was replaced (pteron_threadpool_set_num_threads).
    if (!make_runtimes(d, *var, &err))
      return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: %s", kId, err.c_str());
  }
  *out = var;
  return PTERON_OK;
}

// Outputs take the inferred shapes.
int32_t resize_outputs(pteron_kernel_context* ctx, const Graph& g, pteron_value* const* args,
                       const Variant& var) {
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const uint32_t v = g.outputs[i];
    pteron_tensor* t = tensor_arg(g, args, v);
    if (!t || t->dtype != PTERON_DTYPE_FLOAT32)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph output %zu) must be a float32 tensor", kId,
                   g.values[v].external, i);
    const Shape& s = var.shapes[v];
    if (size_t(t->dim) == s.size()) {
      int64_t sizes[PTERON_MAX_DIM];
      bool same = true;
      for (size_t k = 0; k < s.size(); ++k) {
        sizes[k] = int64_t(s[k]);
        same &= t->sizes[k] == sizes[k];
      }
      if (!same) {
        int32_t rc = pteron_tensor_resize(ctx, t, sizes, t->dim);
        if (rc != PTERON_OK) return rc;
      }
    } else {
      size_t have = 1;
      for (int k = 0; k < t->dim; ++k) have *= size_t(t->sizes[k]);
      if (have != numel(s))
        return failf(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                     "%s: graph output %zu has %zu elements, "
                     "the graph computes %s",
                     kId, i, have, shape_str(s).c_str());
    }
    if (!t->data && numel(s) != 0)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: graph output %zu has no storage", kId,
                   i);
  }
  return PTERON_OK;
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
      uint32_t src = d.alias_of[v];
      while (d.home[src] == Home::Alias) src = d.alias_of[src];
      d.ptr[v] = d.ptr[src];
    }
}

// Runs the steps in order: pteron's own nodes, and XNNPACK segments.
int32_t run_steps(pteron_kernel_context* ctx, Delegate& d, const Variant& var) {
  const Graph& g = d.g;
  std::string err;
  std::vector<xnn_external_value> ext;
  for (size_t si = 0; si < d.steps.size(); ++si) {
    const Step& s = d.steps[si];
    if (var.empty[si]) continue;  // writes only values without elements
    if (!s.native) {
      const Node& n = g.nodes[s.nodes[0]];
      if (n.op == Op::StaticReshape && d.ptr[n.inputs[0]] == d.ptr[n.outputs[0]])
        continue;  // a view: nothing to do
      const uint32_t k = s.nodes[0];
      if (!d.kernel[k]->run(n, d.state[k].get(), var.shapes, d.ptr, &err))
        return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: %s", kId, err.c_str());
      continue;
    }
    ext.resize(s.boundary.size());
    for (size_t i = 0; i < s.boundary.size(); ++i) ext[i] = {uint32_t(i), d.ptr[s.boundary[i]]};
    xnn_status st = xnn_setup_runtime(var.runtimes[si], ext.size(), ext.data());
    if (st == xnn_status_success) st = xnn_invoke_runtime(var.runtimes[si]);
    if (st != xnn_status_success)
      return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: XNNPACK segment %zu failed: %s", kId, si,
                   status_name(st));
  }
  return PTERON_OK;
}

int32_t execute(pteron_kernel_context* ctx, void* handle, pteron_value* const* args,
                size_t num_args) {
  Delegate& d = *static_cast<Delegate*>(handle);
  const Graph& g = d.g;
  if (num_args < g.num_externals)
    return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: %zu arguments, the graph needs %u", kId,
                 num_args, g.num_externals);
  std::vector<Shape> in_shapes;
  int32_t rc = read_input_shapes(ctx, g, args, &in_shapes);
  if (rc != PTERON_OK) return rc;
  Variant* var = nullptr;
  rc = find_variant(ctx, d, in_shapes, &var);
  if (rc != PTERON_OK) return rc;
  rc = resize_outputs(ctx, g, args, *var);
  if (rc != PTERON_OK) return rc;
  bind_storage(d, args, *var);
  return run_steps(ctx, d, *var);
}

void destroy(void* handle) { delete static_cast<Delegate*>(handle); }

const pteron_backend_interface kInterface = {
    sizeof(pteron_backend_interface), kId, &is_available, &init, &execute, &destroy};

struct Registration {
  Registration() {
    pteron_register_backend(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, &kInterface);
  }
} registration;

}  // namespace
}  // namespace xnnpack
}  // namespace pteron
