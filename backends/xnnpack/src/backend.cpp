// SPDX-License-Identifier: BSD-3-Clause
// backend.cpp - the XnnpackBackend delegate: plan, segments, execution.
//
// Reading order:
//   init:    parse_blob (graph.cpp) -> cancel transpose round trips ->
//            choose each node's side (pteron's own kernel, or the linked
//            XNNPACK library: choose_sides, library_first and
//            PTERON_XNNPACK_USE_LIBRARY; load fails naming a node nobody
//            runs) -> schedule the nodes into steps: runs of library nodes
//            become one XNNPACK subgraph ("segment"), pteron's own nodes run
//            between them -> decide where each value lives (delegate
//            argument, constant, XNNPACK-internal, an arena buffer, or a view
//            of another value) -> build the variant for the declared input
//            shapes: shapes, the arena plan (values whose lifetimes do not
//            overlap share bytes), the XNNPACK runtimes.
//   execute: input shapes -> variant for those shapes (cached; a new shape
//            within the program's bounds plans anew) -> resize outputs -> run
//            the steps in order.
//   destroy: every runtime, buffer and owned constant.
//
// The XNNPACK library is optional (backends/xnnpack/CMakeLists.txt,
// PTERON_XNNPACK_LIBRARY): every call into it is in the section "the XNNPACK
// library" below, compiled only where PTERON_XNN_LINKED is 1. Its runtimes
// are created on the process's pthreadpool (pteron_threadpool_pthreadpool());
// where the process pool is not a pthreadpool, they run on the calling thread.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "graph.h"
#include "half.h"
#include "kernels/own_ops.h"
#include "pteron/kernel.h"
#include "pteron/threadpool.h"
#include "xnn_config.h"
#if PTERON_XNN_LINKED
#include <xnnpack.h>
#endif

namespace pteron {
namespace xnnpack {
namespace {

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

// The library's runtimes are opaque here (xnn_runtime_t where linked).
void delete_runtime(void* rt);

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
  ~Variant() {
    for (void* r : runtimes)
      if (r) delete_runtime(r);
    std::free(arena_raw);
  }
};

struct Delegate {
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
  // PTERON_XNNPACK_PROFILE: per step, executions timed and their total time.
  bool profile = false;
  std::vector<double> step_us;
  std::vector<uint64_t> step_calls;
  std::vector<Shape> step_shape;  // the first input's shape in the last timed call
  ~Delegate();
};

// ---- the XNNPACK library (PTERON_XNN_LINKED) ---------------------------------
// lib_supports, lib_initialize, build_segment, run_segment, delete_runtime:
// the delegate's only contact with the library.

#if PTERON_XNN_LINKED

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
bool lib_supports(const Node& n) {
  // A fused node (fuse_elementwise): pteron's only.
  if (n.flags &
      (kOwnFlagSilu | kOwnFlagEpilogue | kOwnFlagPrologue | kOwnFlagResidual | kOwnFlagExpand))
    return false;
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

bool lib_initialize(std::string* err) {
  const xnn_status st = xnn_initialize(nullptr);
  if (st != xnn_status_success) *err = std::string("xnn_initialize failed: ") + status_name(st);
  return st == xnn_status_success;
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

// The XNNPACK runtime of segment `s` for these shapes, on `pool` (a
// pthreadpool_t, or null: the calling thread).
bool build_segment(const Delegate& d, const Step& s, const std::vector<Shape>& shapes, void* pool,
                   void** rt_out, std::string* err) {
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
    st =
        define_value(s.boundary[i], uint32_t(i),
                     s.boutput[i] ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT : XNN_VALUE_FLAG_EXTERNAL_INPUT);
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
  xnn_runtime_t rt = nullptr;
  st = xnn_create_runtime_v2(sg, static_cast<pthreadpool_t>(pool), 0, &rt);
  xnn_delete_subgraph(sg);
  *rt_out = rt;
  if (st != xnn_status_success) {
    *err = std::string("xnn_create_runtime_v2: ") + status_name(st);
    return false;
  }
  return true;
}

// Runs segment `rt`: boundary value i lives at ptr[boundary[i]].
bool run_segment(void* rt, const Step& s, const std::vector<float*>& ptr, std::string* err) {
  std::vector<xnn_external_value> ext(s.boundary.size());
  for (size_t i = 0; i < s.boundary.size(); ++i) ext[i] = {uint32_t(i), ptr[s.boundary[i]]};
  xnn_runtime_t r = static_cast<xnn_runtime_t>(rt);
  xnn_status st = xnn_setup_runtime(r, ext.size(), ext.data());
  if (st == xnn_status_success) st = xnn_invoke_runtime(r);
  if (st != xnn_status_success) *err = status_name(st);
  return st == xnn_status_success;
}

void delete_runtime(void* rt) { xnn_delete_runtime(static_cast<xnn_runtime_t>(rt)); }

#else  // no XNNPACK library: pteron's kernels run every node

bool lib_supports(const Node&) { return false; }
bool lib_initialize(std::string*) { return true; }
bool build_segment(const Delegate&, const Step&, const std::vector<Shape>&, void*, void**,
                   std::string* err) {
  *err = "no XNNPACK library is linked";
  return false;
}
bool run_segment(void*, const Step&, const std::vector<float*>&, std::string* err) {
  *err = "no XNNPACK library is linked";
  return false;
}
void delete_runtime(void*) {}

#endif  // PTERON_XNN_LINKED

// The pool XNNPACK runtimes are made with: the process's pthreadpool, or null
// where the process pool is pteron's own (the runtimes then run serially).
void* library_pool() {
#if PTERON_XNN_LINKED
  return pteron_threadpool_pthreadpool();
#else
  return nullptr;
#endif
}

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
        !build_segment(d, d.steps[i], var.shapes, var.pool, &var.runtimes[i], err))
      return false;
  return true;
}

template <typename... A>
int32_t failf(pteron_kernel_context* ctx, int32_t code, const char* fmt, A... a) {
  char buf[768];
  std::snprintf(buf, sizeof buf, fmt, a...);
  return pteron_kernel_fail(ctx, code, buf);
}

// ---- planning ---------------------------------------------------------------

// A Convert writes its input's shape. Upstream's exporter (1.5.1) declares the
// QDInt8 output of a Convert that feeds a convolution in NCHW order while the
// Convert's input is NHWC (the channels-last pass permutes the float value but
// not the dynamically quantized one); XNNPACK takes the shape from the input
// when it reshapes. The quantization of such a value is per batch element
// (non_batch_dims 3, over H, W and C together), so the order of the other three
// dims does not change its arithmetic. Returns how many declarations were set
// to the input's shape.
size_t fix_dynamic_convert_shapes(Graph& g) {
  size_t fixed = 0;
  for (const Node& n : g.nodes) {
    if (n.op != Op::Convert || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
    Value& out = g.values[n.outputs[0]];
    const Shape& in = g.values[n.inputs[0]].dims;
    if (out.quant.kind != QuantKind::Dynamic || in.size() != 4 || out.dims.size() != 4 ||
        out.quant.token_dims != 3 || out.dims == in)
      continue;
    if (out.dims == Shape{in[0], in[3], in[1], in[2]}) {
      out.dims = in;
      ++fixed;
    }
  }
  return fixed;
}

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

// Does transpose(p2) . (reshapes that only add or drop dims of size 1) .
// transpose(p1), applied to a tensor of shape `a`, keep every element where
// it was? `c` is the shape the second transpose reads. Dims of size 1 never
// move memory; the others are labelled by their place in `a` and must come
// back in order.
bool round_trip_keeps_order(const Shape& a, const std::vector<size_t>& p1, const Shape& c,
                            const std::vector<size_t>& p2) {
  auto is_perm = [](const std::vector<size_t>& p, size_t rank) {
    if (p.size() != rank) return false;
    std::vector<char> seen(rank, 0);
    for (size_t x : p) {
      if (x >= rank || seen[x]) return false;
      seen[x] = 1;
    }
    return true;
  };
  if (!is_perm(p1, a.size()) || !is_perm(p2, c.size())) return false;
  std::vector<int> label_a(a.size(), -1);
  int m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != 1) label_a[i] = m++;
  std::vector<int> seq;  // labels of the first transpose's output, size-1 dims left out
  std::vector<size_t> sizes;
  for (size_t x : p1)
    if (a[x] != 1) seq.push_back(label_a[x]), sizes.push_back(a[x]);
  std::vector<int> label_c(c.size(), -1);
  size_t j = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] == 1) continue;
    if (j >= sizes.size() || c[i] != sizes[j]) return false;  // a reshape that moves data
    label_c[i] = seq[j++];
  }
  if (j != sizes.size()) return false;
  int next = 0;
  for (size_t x : p2)
    if (c[x] != 1 && label_c[x] != next++) return false;
  return next == m;
}

// The load-time rewrites below end here: the nodes whose drop[k] is set go,
// the others keep their order.
void erase_dropped(Graph& g, const std::vector<char>& drop) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
}

// Per value of g: the first node that writes it (-1: none) and how many node
// inputs read it (a node reading it twice counts twice).
struct ValueUses {
  std::vector<int> producer;
  std::vector<size_t> reads;
};
ValueUses value_uses(const Graph& g) {
  const size_t nv = g.values.size();
  ValueUses u{std::vector<int>(nv, -1), std::vector<size_t>(nv, 0)};
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (uint32_t v : g.nodes[k].outputs)
      if (v < nv && u.producer[v] < 0) u.producer[v] = int(k);
    for (uint32_t v : g.nodes[k].inputs)
      if (v < nv) ++u.reads[v];
  }
  return u;
}

// A switch read from the environment variable `name`: 1, true, yes or on
// (any case) is true; 0, false, no or off is false; unset or empty is
// `unset`. Anything else is `unset` too, with a warning once per process
// naming the variable, so a misspelt setting is never silently taken.
bool env_switch(const char* name, bool unset) {
  const char* v = std::getenv(name);
  if (!v || !*v) return unset;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  const std::string msg = std::string("pteron: ignoring ") + name + "='" + v +
                          "' (expected 1 or 0, true or false, yes or no, on or off)";
  pteron_warn_once(name, msg.c_str());  // the value in full; control bytes escaped there
  return unset;
}

// PTERON_XNNPACK_FUSE=0: the fusions (fuse_elementwise, flatten_concatenations,
// fuse_channel_affine) are off.
bool fusion_off() { return !env_switch("PTERON_XNNPACK_FUSE", true); }

// NCHW<->NHWC round trips removed: a StaticTranspose reading (through
// reshapes of size-1 dims) another StaticTranspose's output, where the two
// cancel, becomes a reshape of the first one's input (a view where it can
// be one). The first transpose and the reshapes, when nothing else reads
// them, are dropped. Returns the number of transposes removed or rewritten.
size_t cancel_transpose_round_trips(Graph& g) {
  const size_t nv = g.values.size();
  std::vector<int> producer(nv, -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].outputs)
      if (v < nv && producer[v] < 0) producer[v] = int(k);
  auto single = [](const Node& n) {
    return n.inputs.size() == 1 && n.outputs.size() == 1 && !n.has_range();
  };
  std::vector<char> candidate(g.nodes.size(), 0);
  size_t rewritten = 0;
  for (size_t k2 = 0; k2 < g.nodes.size(); ++k2) {
    Node& t2 = g.nodes[k2];
    if (t2.op != Op::StaticTranspose || !single(t2)) continue;
    uint32_t v = t2.inputs[0];
    std::vector<size_t> chain;
    while (producer[v] >= 0 && size_t(producer[v]) < k2 && chain.size() < 8) {
      const Node& r = g.nodes[size_t(producer[v])];
      if (r.op != Op::StaticReshape || !single(r)) break;
      chain.push_back(size_t(producer[v]));
      v = r.inputs[0];
    }
    if (producer[v] < 0 || size_t(producer[v]) >= k2) continue;
    const size_t k1 = size_t(producer[v]);
    const Node& t1 = g.nodes[k1];
    if (t1.op != Op::StaticTranspose || !single(t1)) continue;
    const uint32_t a = t1.inputs[0];
    if (!round_trip_keeps_order(g.values[a].dims, t1.list0, g.values[t2.inputs[0]].dims, t2.list0))
      continue;
    t2.op = Op::StaticReshape;
    t2.inputs[0] = a;
    t2.list0 = g.values[t2.outputs[0]].dims;
    candidate[k1] = 1;
    for (size_t c : chain) candidate[c] = 1;
    ++rewritten;
  }
  if (!rewritten) return 0;
  // Drop the candidates nothing reads any more (dropping a reshape may leave
  // the transpose before it unread).
  std::vector<char> drop(g.nodes.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<size_t> readers(nv, 0);
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (!drop[k])
        for (uint32_t v : g.nodes[k].inputs)
          if (v < nv) ++readers[v];
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      if (!candidate[k] || drop[k]) continue;
      const uint32_t out = g.nodes[k].outputs[0];
      if (readers[out] == 0 && !g.values[out].graph_output) drop[k] = 1, changed = true;
    }
  }
  erase_dropped(g, drop);
  return rewritten;
}

// The data movement of a chain of transposes and reshapes, as one
// permutation: the input is cut into "atoms" (factors of its dims) so that
// every reshape of the chain only regroups whole atoms; a transpose then
// permutes atoms. Fills `atom_shape` (the atoms of size > 1 in input memory
// order) and `perm` (output position -> atom). Returns false when a reshape
// splits dims in a way atoms cannot follow or the chain is malformed.
bool compose_chain(const Graph& g, const std::vector<const Node*>& chain, Shape* atom_shape,
                   std::vector<size_t>* perm) {
  std::vector<size_t> size;  // per atom id
  using Dims = std::vector<std::vector<size_t>>;
  auto make = [&](const Shape& s) {
    Dims d(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      d[i].push_back(size.size());
      size.push_back(s[i]);
    }
    return d;
  };
  Dims in = make(g.values[chain[0]->inputs[0]].dims);
  // An empty tensor has no factorisation into atoms (a dim of 0 would divide
  // by zero below) and nothing to move: the chain is left as it is.
  for (size_t a : size)
    if (a == 0) return false;
  Dims cur = in;
  // Splits atom x into (outer, x / outer) everywhere it appears.
  auto split = [&](size_t x, size_t outer) {
    const size_t hi = size.size(), lo = hi + 1;
    size.push_back(outer);
    size.push_back(size[x] / outer);
    for (Dims* d : {&in, &cur})
      for (auto& dim : *d)
        for (size_t i = 0; i < dim.size(); ++i)
          if (dim[i] == x) {
            dim[i] = lo;
            dim.insert(dim.begin() + long(i), hi);
            break;
          }
  };
  for (const Node* n : chain) {
    if (n->op == Op::StaticTranspose) {
      if (n->list0.size() != cur.size()) return false;
      Dims next(cur.size());
      std::vector<char> seen(cur.size(), 0);
      for (size_t d = 0; d < cur.size(); ++d) {
        const size_t p = n->list0[d];
        if (p >= cur.size() || seen[p]) return false;
        seen[p] = 1;
        next[d] = cur[p];
      }
      cur = std::move(next);
      continue;
    }
    const Shape& to = g.values[n->outputs[0]].dims;
    std::vector<size_t> seq;  // atoms of size > 1, memory order
    for (auto& dim : cur)
      for (size_t a : dim)
        if (size[a] != 1) seq.push_back(a);
    Dims next(to.size());
    size_t j = 0;
    for (size_t d = 0; d < to.size(); ++d) {
      size_t have = 1;
      while (have < to[d]) {
        if (j >= seq.size()) return false;
        const size_t a = seq[j], need = to[d] / have;
        if (to[d] % have != 0) return false;
        if (size[a] > need) {
          if (size[a] % need != 0) return false;
          split(a, need);
          seq[j] = size.size() - 2;
          seq.insert(seq.begin() + long(j) + 1, size.size() - 1);
          continue;
        }
        next[d].push_back(a);
        have *= size[a];
        ++j;
      }
      if (have != to[d]) return false;
    }
    if (j != seq.size()) return false;
    cur = std::move(next);
  }
  std::vector<size_t> in_order, out_order;
  for (auto& dim : in)
    for (size_t a : dim)
      if (size[a] != 1) in_order.push_back(a);
  for (auto& dim : cur)
    for (size_t a : dim)
      if (size[a] != 1) out_order.push_back(a);
  if (in_order.size() != out_order.size()) return false;
  std::vector<size_t> pos(size.size(), size_t(-1));
  for (size_t i = 0; i < in_order.size(); ++i) pos[in_order[i]] = i;
  atom_shape->clear();
  perm->clear();
  for (size_t a : in_order) atom_shape->push_back(size[a]);
  for (size_t a : out_order) {
    if (pos[a] == size_t(-1)) return false;
    perm->push_back(pos[a]);
  }
  if (perm->size() > 6) return false;  // XNNPACK's transposes take at most 6 dims (xnnpack.h)
  // A batch dim that may vary at run time must stay one whole atom, first.
  const Shape& a0 = g.values[chain[0]->inputs[0]].dims;
  const Shape& z0 = g.values[chain.back()->outputs[0]].dims;
  if (!a0.empty() && a0[0] != 1) {
    if (in[0].size() != 1 || perm->empty() || (*perm)[0] != 0 || z0.empty() || z0[0] != a0[0])
      return false;
  }
  return true;
}

// Chains of single-input transposes and reshapes, each link read only by the
// next (an NHWC->NCHW transpose, a channel shuffle written as reshape,
// transpose, reshape, and an NCHW->NHWC transpose): with two transposes or
// more, the chain becomes one reshape (a view) when its data stays in place,
// else reshape -> one transpose -> reshape (views around a single copy).
// The chain's intermediate values are reused for the new ones. Returns the
// number of transposes removed.
size_t fold_transpose_chains(Graph& g, size_t* chains) {
  const size_t nv = g.values.size(), nn = g.nodes.size();
  std::vector<int> producer(nv, -1);
  std::vector<size_t> readers(nv, 0);
  for (size_t k = 0; k < nn; ++k) {
    for (uint32_t v : g.nodes[k].outputs)
      if (v < nv && producer[v] < 0) producer[v] = int(k);
    for (uint32_t v : g.nodes[k].inputs)
      if (v < nv) ++readers[v];
  }
  auto link = [&](const Node& n) {
    return (n.op == Op::StaticTranspose || n.op == Op::StaticReshape) && n.inputs.size() == 1 &&
           n.outputs.size() == 1 && !n.has_range() && n.inputs[0] < nv && n.outputs[0] < nv;
  };
  // An inner value: written by a link, read once (by a link), not an argument.
  auto inner = [&](uint32_t v) {
    const Value& val = g.values[v];
    return readers[v] == 1 && !val.graph_output && !val.graph_input && !val.constant &&
           val.external == kNoValue && producer[v] >= 0 && link(g.nodes[size_t(producer[v])]);
  };
  std::vector<char> continued(nn, 0);  // its output feeds the next link
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = g.nodes[k];
    if (link(n) && inner(n.inputs[0])) continued[size_t(producer[n.inputs[0]])] = 1;
  }
  std::vector<char> drop(nn, 0);
  size_t removed = 0;
  *chains = 0;
  for (size_t k = 0; k < nn; ++k) {
    if (!link(g.nodes[k]) || continued[k]) continue;
    std::vector<size_t> idx{k};
    while (idx.size() < 16) {
      const uint32_t v = g.nodes[idx.back()].inputs[0];
      if (!inner(v) || size_t(producer[v]) >= idx.back()) break;
      idx.push_back(size_t(producer[v]));
    }
    std::reverse(idx.begin(), idx.end());
    size_t transposes = 0;
    for (size_t i : idx) transposes += g.nodes[i].op == Op::StaticTranspose;
    if (transposes < 2) continue;
    std::vector<const Node*> chain;
    for (size_t i : idx) chain.push_back(&g.nodes[i]);
    Shape atoms;
    std::vector<size_t> perm;
    if (!compose_chain(g, chain, &atoms, &perm)) continue;
    const uint32_t a = g.nodes[idx.front()].inputs[0], z = g.nodes[idx.back()].outputs[0];
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == i;
    std::vector<uint32_t> spare;  // the chain's inner values, free to reuse
    for (size_t i = 0; i + 1 < idx.size(); ++i) spare.push_back(g.nodes[idx[i]].outputs[0]);
    std::vector<Node> made;
    auto reshape = [&](uint32_t from, uint32_t to) {
      Node r = g.nodes[idx.back()];
      r.op = Op::StaticReshape;
      r.inputs = {from};
      r.outputs = {to};
      r.list0 = g.values[to].dims;
      r.list1.clear();
      made.push_back(std::move(r));
    };
    if (identity) {
      reshape(a, z);
    } else {
      Shape os(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) os[i] = atoms[perm[i]];
      const bool need_in = atoms != g.values[a].dims, need_out = os != g.values[z].dims;
      if (spare.size() < size_t(need_in) + size_t(need_out)) continue;
      uint32_t from = a;
      size_t s = 0;
      if (need_in) {
        g.values[spare[s]].dims = atoms;
        reshape(a, spare[s]);
        from = spare[s++];
      }
      Node t = g.nodes[idx.back()];
      t.op = Op::StaticTranspose;
      t.inputs = {from};
      t.list0 = perm;
      t.list1.clear();
      if (need_out) {
        g.values[spare[s]].dims = os;
        t.outputs = {spare[s]};
        made.push_back(std::move(t));
        reshape(spare[s], z);
      } else {
        t.outputs = {z};
        made.push_back(std::move(t));
      }
    }
    // The new nodes take the places of the chain's last nodes.
    const size_t first = idx.size() - made.size();
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i < first)
        drop[idx[i]] = 1;
      else {
        const uint32_t index = g.nodes[idx[i]].index;
        g.nodes[idx[i]] = std::move(made[i - first]);
        g.nodes[idx[i]].index = index;
      }
    }
    removed += transposes - (identity ? 0 : 1);
    ++*chains;
  }
  if (!*chains) return 0;
  erase_dropped(g, drop);
  return removed;
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

// ---- which side runs each node ------------------------------------------------

// Whether the linked library runs node type `op` by default (where it can
// define the node); every other type runs on pteron's own kernel. The rule: a
// type goes to the library only where the library measured faster in whole
// programs. Measured on the 2-core AVX2 EPYC with Debian 12's XNNPACK
// (bench/gemm/README.md; tests/xnnpack_nodes/export_nhwc.py --bench; the zoo
// with PTERON_XNNPACK_PROFILE=1): pteron's GEMM runs fully connected and
// convolution 2.2-2.5x faster at 1 thread; depthwise 5x5, resize and the
// broadcasting binaries are faster on pteron's side, depthwise 3x3 and softmax
// even; the library's pooling and sigmoid are 1.2-1.3x faster at 1 thread,
// but handing them over costs a segment boundary each (whole programs came
// out 5-10% slower) and the library runs single-threaded on the process's
// std::thread pool. So no type goes to the library by default;
// PTERON_XNNPACK_USE_LIBRARY chooses it explicitly.
bool library_first(Op) { return false; }

// PTERON_XNNPACK_USE_LIBRARY, read at method load: unset or empty =
// library_first above; "none" = pteron's kernels for every node (load fails naming a
// node type pteron has no kernel for); "all" = the library for every node it
// can define; otherwise comma-separated node type names (as graph.h's
// op_name spells them, e.g. "Conv2d,FullyConnected"): the library for those,
// pteron's kernels for the rest where it has them.
struct SidePolicy {
  enum Mode { Table, None, All, List } mode = Table;
  std::vector<Op> list;
  std::string text;  // the variable's value, for messages
};

bool read_policy(SidePolicy* p, std::string* err) {
  const char* v = std::getenv("PTERON_XNNPACK_USE_LIBRARY");
  if (!v || !*v) return true;
  p->text = v;
  if (p->text == "none") {
    p->mode = SidePolicy::None;
    return true;
  }
  if (p->text == "all") {
    p->mode = SidePolicy::All;
    return true;
  }
  p->mode = SidePolicy::List;
  size_t at = 0;
  while (at <= p->text.size()) {
    size_t end = p->text.find(',', at);
    if (end == std::string::npos) end = p->text.size();
    const std::string name = p->text.substr(at, end - at);
    at = end + 1;
    if (name.empty()) continue;
    bool found = false;
    for (int i = 1; i <= int(Op::MAX) && !found; ++i)
      if (name == op_name(Op(i))) p->list.push_back(Op(i)), found = true;
    if (!found) {
      *err = "PTERON_XNNPACK_USE_LIBRARY='" + p->text + "': '" + name +
             "' is not a node type (use none, all, or node type names such as Conv2d,"
             "FullyConnected)";
      return false;
    }
  }
  return true;
}

bool wants_library(const SidePolicy& p, Op op) {
  switch (p.mode) {
    case SidePolicy::None: return false;
    case SidePolicy::All: return true;
    case SidePolicy::List: return std::find(p.list.begin(), p.list.end(), op) != p.list.end();
    default: return library_first(op);
  }
}

// May a fusion pass merge a node of type `a` into one of type `b`? Only where fusion is on
// (PTERON_XNNPACK_FUSE) and pteron's kernels, not the library, run both types.
bool fusing_own(const SidePolicy& p, Op a, Op b) {
  return !fusion_off() && !wants_library(p, a) && !wants_library(p, b);
}

// Is value v quantized (Value::quant)? Does node n read or write one?
bool quantized(const Graph& g, uint32_t v) {
  return v < g.values.size() && g.values[v].quant.kind != QuantKind::None;
}
bool touches_quant(const Graph& g, const Node& n) {
  for (uint32_t v : n.inputs)
    if (quantized(g, v)) return true;
  for (uint32_t v : n.outputs)
    if (quantized(g, v)) return true;
  return false;
}

// fuse_elementwise: at method load, before the sides are chosen, a Sigmoid
// whose only reader is a Multiply of the Sigmoid's own input by its result
// (x * sigmoid(x), SiLU: EfficientNet's activation) becomes one node: the
// Multiply turns into a Sigmoid node flagged kOwnFlagSilu (own_ops.h) that
// reads x, keeps the Multiply's output range and writes its output, and the
// Sigmoid node goes. One pass over the tensor instead of two and one value
// less in the arena; the results are the unfused ones bit for bit (the
// kernel rounds the sigmoid, then the product). Only where pteron's kernels
// run both node types (not for PTERON_XNNPACK_USE_LIBRARY=all or a list
// naming either); PTERON_XNNPACK_FUSE=0 switches the pass off. Returns the
// number of fused pairs.
size_t fuse_elementwise(Graph& g, const SidePolicy& policy) {
  if (fusion_off()) return 0;
  if (wants_library(policy, Op::Sigmoid) || wants_library(policy, Op::Multiply)) return 0;
  const size_t nv = g.values.size();
  const ValueUses uses = value_uses(g);
  const std::vector<int>& producer = uses.producer;
  const std::vector<size_t>& reads = uses.reads;
  std::vector<char> drop(g.nodes.size(), 0);
  size_t fused = 0;
  for (size_t km = 0; km < g.nodes.size(); ++km) {
    Node& m = g.nodes[km];
    if (m.op != Op::Multiply || m.inputs.size() != 2 || m.outputs.size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      const uint32_t t = m.inputs[side], x = m.inputs[1 - side];
      if (t >= nv || x >= nv || t == x || producer[t] < 0 || reads[t] != 1 ||
          g.values[t].graph_output)
        continue;
      const size_t ks = size_t(producer[t]);
      const Node& s = g.nodes[ks];
      if (ks >= km || drop[ks] || s.op != Op::Sigmoid || s.inputs.size() != 1 ||
          s.outputs.size() != 1 || s.inputs[0] != x || s.flags != 0 || s.has_range())
        continue;
      if (touches_quant(g, s) || touches_quant(g, m)) continue;  // each output is rounded
      if (g.values[x].dims != g.values[m.outputs[0]].dims) continue;
      m.op = Op::Sigmoid;
      m.inputs = {x};
      m.flags = kOwnFlagSilu;
      m.f = 0.0f;
      drop[ks] = 1;
      ++fused;
      break;
    }
  }
  // A Sigmoid, SiLU or Hardswish without an output range whose input only it
  // reads, written by a DepthwiseConv2d, a Conv2d or a FullyConnected: that
  // node applies it to its output while the output is in cache (a row of
  // the depthwise convolution, a tile of the GEMM) and writes the
  // activation's output.
  if (!wants_library(policy, Op::Hardswish)) {
    for (size_t ku = 0; ku < g.nodes.size(); ++ku) {
      Node& u = g.nodes[ku];
      if (drop[ku] || (u.op != Op::Sigmoid && u.op != Op::Hardswish) || u.has_range() ||
          u.inputs.size() != 1 || u.outputs.size() != 1 ||
          (u.flags != 0 && u.flags != kOwnFlagSilu))
        continue;
      const uint32_t t = u.inputs[0];
      if (t >= nv || producer[t] < 0 || size_t(producer[t]) >= ku || g.values[t].graph_output)
        continue;
      if (touches_quant(g, u) || touches_quant(g, g.nodes[size_t(producer[t])])) continue;
      // Reads of t: the fused SiLU node read it twice before (x and sigmoid(x)).
      const bool silu = u.flags == kOwnFlagSilu;
      if (reads[t] != (silu ? 2u : 1u)) continue;
      Node& d = g.nodes[size_t(producer[t])];
      // The producer's own flags that its kernel accepts alongside the epilogue.
      const uint32_t own_flags = d.op == Op::FullyConnected ? 1u : 0u;
      if ((d.op != Op::DepthwiseConv2d && d.op != Op::Conv2d && d.op != Op::FullyConnected) ||
          wants_library(policy, d.op) || (d.flags & ~own_flags) != 0 || d.outputs.size() != 1 ||
          d.p[15] != 0)
        continue;
      if (g.values[t].dims != g.values[u.outputs[0]].dims) continue;
      d.flags |= kOwnFlagEpilogue;
      d.p[15] = u.op == Op::Hardswish ? kOwnActHardswish : silu ? kOwnActSilu : kOwnActSigmoid;
      d.outputs[0] = u.outputs[0];
      drop[ku] = 1;
      ++fused;
    }
  }
  if (!fused) return 0;
  erase_dropped(g, drop);
  return fused;
}

// fuse_channel_affine: at method load, a 1x1 DepthwiseConv2d (stride 1, no padding, one output
// channel per input channel: x * scale[c] + shift[c], clamped to its output range) whose only
// reader is a 1x1 Conv2d (stride 1, no padding, one group) goes, and the Conv2d reads its input
// and maps each tile of it inside the GEMM (kOwnFlagPrologue, own_ops.h). That is DenseNet's
// pre-activation: the batch norm and ReLU before each 1x1 convolution, which the exporter writes
// as a depthwise convolution, made a pass that wrote the whole tensor and a GEMM that read it
// back. Float32 values only, where pteron's kernels run both node types; PTERON_XNNPACK_FUSE=0
// switches it off. Returns the number of nodes removed.
// A window node of 1x1, stride 1, dilation 1, no padding.
bool one_by_one(const Node& n) {
  return n.p[0] == 0 && n.p[1] == 0 && n.p[2] == 0 && n.p[3] == 0 && n.p[4] == 1 &&
         n.p[5] == 1 && n.p[6] == 1 && n.p[7] == 1 && n.p[8] <= 1 && n.p[9] <= 1;
}

// For a fusion that removes node n: whether n's shape rules hold on the declared shapes and give
// its output's declared shape, as make_variant checks them when n is kept, so that a program
// with a wrong filter or output shape is refused with the fusion as without it. `declared`:
// every value's declared shape (filled on first use, left as it was).
bool declared_shapes_hold(const Graph& g, const Node& n, std::vector<Shape>& declared) {
  if (n.outputs.size() != 1 || n.outputs[0] >= g.values.size()) return false;
  if (declared.empty())
    for (const Value& v : g.values) declared.push_back(v.dims);
  std::string ignored;
  const uint32_t t = n.outputs[0];
  const bool holds = infer_shape(g, n, declared, &ignored) && declared[t] == g.values[t].dims;
  declared[t] = g.values[t].dims;
  return holds;
}

size_t fuse_channel_affine(Graph& g, const SidePolicy& policy) {
  if (!fusing_own(policy, Op::DepthwiseConv2d, Op::Conv2d)) return 0;
  const size_t nv = g.values.size();
  const ValueUses uses = value_uses(g);
  std::vector<int> reader(nv, -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].inputs)
      if (v < nv) reader[v] = int(k);
  std::vector<Shape> declared;
  std::vector<char> drop(g.nodes.size(), 0);
  size_t fused = 0;
  for (size_t kd = 0; kd < g.nodes.size(); ++kd) {
    const Node& d = g.nodes[kd];
    if (d.op != Op::DepthwiseConv2d || d.flags != 0 || d.inputs.size() < 2 ||
        d.outputs.size() != 1 || !one_by_one(d) || d.p[10] != 1 || d.p[11] != 1)
      continue;
    const uint32_t x = d.inputs[0], t = d.outputs[0];
    const uint32_t scale = d.inputs[1], shift = d.inputs.size() > 2 ? d.inputs[2] : kNoValue;
    if (x >= nv || t >= nv || scale >= nv || !g.values[scale].constant ||
        (shift != kNoValue && (shift >= nv || !g.values[shift].constant)))
      continue;
    if (uses.reads[t] != 1 || g.values[t].graph_output || reader[t] < 0 ||
        size_t(reader[t]) <= kd || touches_quant(g, d))
      continue;
    Node& c = g.nodes[size_t(reader[t])];
    if (c.op != Op::Conv2d || c.inputs.empty() || c.inputs[0] != t || (c.flags & ~kOwnFlagEpilogue) ||
        !one_by_one(c) || c.p[12] != 1 || touches_quant(g, c))
      continue;
    const size_t channels = size_t(d.p[12]);
    if (checked_numel(g.values[scale].dims) != channels || c.p[10] != channels ||
        (shift != kNoValue && checked_numel(g.values[shift].dims) != channels))
      continue;
    if (!declared_shapes_hold(g, d, declared)) continue;
    c.inputs[0] = x;
    c.flags |= kOwnFlagPrologue;
    c.pre_scale = scale, c.pre_shift = shift;
    c.pre_min = d.out_min, c.pre_max = d.out_max;
    drop[kd] = 1;
    ++fused;
  }
  if (fused) erase_dropped(g, drop);
  return fused;
}

// fuse_residual_add: at method load, an Add of two float32 values of one shape, one of them
// written by a Conv2d of one group with a bias (a ResNet or MobileNetV2 block's last
// convolution) and read by nothing else, goes: the Conv2d reads the other value as a residual
// (its fourth input, kOwnFlagResidual) and adds it to each output tile in the GEMM, clamped to
// the Add's output range (Node::res_min / res_max; pteron_cpu::GemmAct), writing the Add's
// output. One pass over the tensor less, and the convolution's output never leaves the cache
// before the addition; the results are the unfused ones bit for bit (the same float32 Add).
// The residual must be written before the Conv2d runs (by a node before it, or a graph input),
// and the Add's output must not be a graph output (the caller's buffer could be a graph
// input's). Float32 values only, where pteron's kernels run both node types;
// PTERON_XNNPACK_FUSE=0 switches it off. Returns the number of nodes removed.
size_t fuse_residual_add(Graph& g, const SidePolicy& policy) {
  if (!fusing_own(policy, Op::Add, Op::Conv2d)) return 0;
  const size_t nv = g.values.size();
  const ValueUses uses = value_uses(g);
  std::vector<char> drop(g.nodes.size(), 0);
  size_t fused = 0;
  for (size_t ka = 0; ka < g.nodes.size(); ++ka) {
    const Node& a = g.nodes[ka];
    if (a.op != Op::Add || a.flags != 0 || a.inputs.size() != 2 || a.outputs.size() != 1 ||
        touches_quant(g, a))
      continue;
    const uint32_t out = a.outputs[0];
    if (out >= nv || g.values[out].graph_output) continue;
    for (int side = 0; side < 2; ++side) {
      const uint32_t t = a.inputs[side], r = a.inputs[1 - side];
      if (t >= nv || r >= nv || t == r || uses.producer[t] < 0 || uses.reads[t] != 1 ||
          g.values[t].graph_output || g.values[r].constant)
        continue;
      const size_t kd = size_t(uses.producer[t]);
      if (kd >= ka || drop[kd]) continue;
      // The residual is ready when the convolution runs.
      if (uses.producer[r] >= 0 ? size_t(uses.producer[r]) >= kd : !g.values[r].graph_input)
        continue;
      Node& d = g.nodes[kd];
      if (d.op != Op::Conv2d || (d.flags & ~(kOwnFlagEpilogue | kOwnFlagPrologue)) != 0 ||
          d.inputs.size() != 3 || d.outputs.size() != 1 || d.outputs[0] != t || d.p[12] != 1 ||
          touches_quant(g, d))
        continue;
      const Shape& dims = g.values[out].dims;
      if (g.values[t].dims != dims || g.values[r].dims != dims) continue;
      d.inputs.push_back(r);
      d.outputs[0] = out;
      d.flags |= kOwnFlagResidual;
      d.res_min = a.out_min, d.res_max = a.out_max;
      drop[ka] = 1;
      ++fused;
      break;
    }
  }
  if (fused) erase_dropped(g, drop);
  return fused;
}

// fuse_expand_depthwise: at method load, a 1x1 Conv2d (stride 1, no padding, one group,
// constant filter) whose output only a DepthwiseConv2d reads (channel multiplier 1, dilation 1)
// goes: the DepthwiseConv2d reads the Conv2d's input and computes the rows of the Conv2d's
// output its window needs, each once per thread, into a ring of kernel_h rows
// (kOwnFlagExpand, Node::exp_*; pteron_cpu::expand_depthwise_conv2d). That is MobileNetV2's
// expansion and the depthwise convolution after it: the expanded tensor, six times the
// block's input, was written whole and read back (112 x 112 x 96 floats, 4.8 MB, in
// MobileNetV2's second block; twice the L2 cache). Only where that tensor is at least
// kExpandFuseMinBytes at the declared shapes: below, it stays in the cache between the two
// nodes, and each thread's first rows, computed twice at a split, would cost more than the
// pass saves. The results are the unfused ones bit for bit (each pixel through the GEMM
// microkernel the unfused convolution gives it, pteron_cpu::ExpandDepthwise; the same depthwise
// row kernel). Float32 values only, where pteron's kernels run both node types;
// PTERON_XNNPACK_FUSE=0 switches it off. Returns the number of nodes removed.
constexpr size_t kExpandFuseMinBytes = size_t(1) << 20;

size_t fuse_expand_depthwise(Graph& g, const SidePolicy& policy) {
  if (!fusing_own(policy, Op::DepthwiseConv2d, Op::Conv2d)) return 0;
  const size_t nv = g.values.size();
  const ValueUses uses = value_uses(g);
  std::vector<Shape> declared;
  std::vector<char> drop(g.nodes.size(), 0);
  size_t fused = 0;
  for (size_t kd = 0; kd < g.nodes.size(); ++kd) {
    Node& d = g.nodes[kd];
    if (d.op != Op::DepthwiseConv2d || (d.flags & ~kOwnFlagEpilogue) != 0 ||
        d.inputs.size() < 2 || d.inputs.size() > 3 || d.outputs.size() != 1 || d.p[4] > 16 ||
        d.p[8] != 1 || d.p[10] != 1 || d.p[11] != 1 || touches_quant(g, d))
      continue;
    const uint32_t t = d.inputs[0];
    if (t >= nv || uses.reads[t] != 1 || g.values[t].graph_output || uses.producer[t] < 0 ||
        size_t(uses.producer[t]) >= kd || drop[size_t(uses.producer[t])])
      continue;
    const size_t kc = size_t(uses.producer[t]);
    const Node& c = g.nodes[kc];
    if (c.op != Op::Conv2d || (c.flags & ~kOwnFlagEpilogue) != 0 || c.inputs.size() < 2 ||
        c.inputs.size() > 3 || c.outputs.size() != 1 || c.outputs[0] != t || !one_by_one(c) ||
        c.p[12] != 1 || c.out_ldc != 0 || touches_quant(g, c))
      continue;
    const uint32_t x = c.inputs[0], w = c.inputs[1];
    const uint32_t b = c.inputs.size() > 2 ? c.inputs[2] : kNoValue;
    if (x >= nv || w >= nv || !g.values[w].constant ||
        (b != kNoValue && (b >= nv || !g.values[b].constant)))
      continue;
    const Shape& td = g.values[t].dims;
    if (td.size() != 4 || checked_numel(td) * sizeof(float) < kExpandFuseMinBytes)
      continue;
    if (!declared_shapes_hold(g, c, declared)) continue;
    d.inputs[0] = x;
    d.flags |= kOwnFlagExpand;
    d.exp_filter = w, d.exp_bias = b;
    d.exp_min = c.out_min, d.exp_max = c.out_max;
    d.exp_act = (c.flags & kOwnFlagEpilogue) ? c.p[15] : 0;
    drop[kc] = 1;
    ++fused;
  }
  if (fused) erase_dropped(g, drop);
  return fused;
}

// Two StaticTransposes of one value with the same permutation: the second one's readers read
// the first one's output, and the second goes (unless it is a graph output). A delegate whose
// NCHW input feeds both a concatenation and a batch norm (each of DenseNet's dense blocks) has
// one such pair, written by the exporter. Returns the number of nodes removed.
size_t merge_duplicate_transposes(Graph& g) {
  const size_t nv = g.values.size();
  std::vector<char> drop(g.nodes.size(), 0);
  std::vector<uint32_t> rename(nv);
  for (size_t v = 0; v < nv; ++v) rename[v] = uint32_t(v);
  size_t merged = 0;
  for (size_t a = 0; a < g.nodes.size(); ++a) {
    const Node& first = g.nodes[a];
    if (first.op != Op::StaticTranspose || first.inputs.size() != 1 || first.outputs.size() != 1)
      continue;
    for (size_t b = a + 1; b < g.nodes.size(); ++b) {
      const Node& second = g.nodes[b];
      if (drop[b] || second.op != Op::StaticTranspose || second.inputs != first.inputs ||
          second.outputs.size() != 1 || second.list0 != first.list0 ||
          second.flags != first.flags || second.outputs[0] >= nv || first.outputs[0] >= nv ||
          g.values[second.outputs[0]].graph_output ||
          g.values[second.outputs[0]].dims != g.values[first.outputs[0]].dims ||
          touches_quant(g, second))
        continue;
      rename[second.outputs[0]] = first.outputs[0];
      drop[b] = 1;
      ++merged;
    }
  }
  if (!merged) return 0;
  for (Node& n : g.nodes)
    for (uint32_t& v : n.inputs)
      if (v < nv) v = rename[v];
  erase_dropped(g, drop);
  return merged;
}

// Is op one of the concatenations (2 to 5 inputs in the blob)?
bool concatenation(Op op) {
  return op == Op::Concatenate2 || op == Op::Concatenate3 || op == Op::Concatenate4 ||
         op == Op::Concatenate5;
}

// flatten_concatenations: at method load, a Concatenate whose input is the output of an earlier
// Concatenate along the same axis, read by it alone, takes that node's inputs in its place, and
// the earlier node goes, while the inputs number at most kOwnMaxConcatInputs (own_ops.h).
// XNNPACK's nodes have at most 5 inputs, so the exporter writes a concatenation of more as a
// chain (DenseNet's dense blocks: Concatenate2(Concatenate5(a, b, c, d, e), f)), and each link
// copied the whole tensor again. The output is the same bytes. Only where pteron's kernels run
// concatenations, on float32 values; PTERON_XNNPACK_FUSE=0 switches it off with the other
// load-time fusions. Returns the number of nodes removed.
size_t flatten_concatenations(Graph& g, const SidePolicy& policy) {
  if (fusion_off()) return 0;
  for (Op op : {Op::Concatenate2, Op::Concatenate3, Op::Concatenate4, Op::Concatenate5})
    if (wants_library(policy, op)) return 0;
  const size_t nv = g.values.size();
  const ValueUses uses = value_uses(g);
  const std::vector<int>& producer = uses.producer;
  const std::vector<size_t>& reads = uses.reads;
  std::vector<char> drop(g.nodes.size(), 0);
  size_t removed = 0;
  for (size_t kn = 0; kn < g.nodes.size(); ++kn) {
    Node& n = g.nodes[kn];
    if (!concatenation(n.op) || n.outputs.size() != 1 || n.has_range() || touches_quant(g, n))
      continue;
    for (size_t i = 0; i < n.inputs.size();) {
      const uint32_t t = n.inputs[i];
      const int kp = t < nv ? producer[t] : -1;
      if (kp < 0 || size_t(kp) >= kn || drop[size_t(kp)] || reads[t] != 1 ||
          g.values[t].graph_output || g.values[t].external != kNoValue) {
        ++i;
        continue;
      }
      const Node& p = g.nodes[size_t(kp)];
      if (!concatenation(p.op) || p.p[0] != n.p[0] || p.outputs.size() != 1 || p.has_range() ||
          touches_quant(g, p) || n.inputs.size() - 1 + p.inputs.size() > kOwnMaxConcatInputs) {
        ++i;
        continue;
      }
      std::vector<uint32_t> inputs(n.inputs.begin(), n.inputs.begin() + long(i));
      inputs.insert(inputs.end(), p.inputs.begin(), p.inputs.end());
      inputs.insert(inputs.end(), n.inputs.begin() + long(i) + 1, n.inputs.end());
      n.inputs = std::move(inputs);
      n.flags |= kOwnFlagFlattened;
      drop[size_t(kp)] = 1;
      ++removed;
      // i stays: the spliced inputs are looked at in turn (a chain of several links).
    }
  }
  if (!removed) return 0;
  erase_dropped(g, drop);
  return removed;
}

// Each node's side: f.native[k] 1 the library, 0 pteron's kernel; d.why[k]
// says why. Load fails naming a node neither side can run.
bool choose_sides(Delegate& d, PlanFacts& f, std::string* err) {
  const Graph& g = d.g;
  const size_t nn = g.nodes.size();
  SidePolicy policy;
  if (!read_policy(&policy, err)) return false;
  const std::string by = policy.mode == SidePolicy::Table
                             ? std::string("the default table")
                             : "PTERON_XNNPACK_USE_LIBRARY=" + policy.text;
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
    const bool want = wants_library(policy, n.op);
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
    } else if (lib && policy.mode != SidePolicy::None) {
      f.native[k] = 1;
      d.why[k] = "pteron has no kernel for it";
    } else if (lib) {
      *err = "node " + std::to_string(n.index) + " has type " + op_name(n.op) +
             ", which delegate " + kId +
             " cannot run with PTERON_XNNPACK_USE_LIBRARY=none: pteron has no kernel for it";
      return false;
    } else {
      *err = "node " + std::to_string(n.index) + " has type " + op_name(n.op) +
             ", which delegate " + kId + " cannot run: the XNNPACK library (" +
             PTERON_XNN_DESCRIPTION + ") cannot define it and pteron has no kernel for it";
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
  d.alias_offset.assign(nv, 0);
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
      // A quantized argument is int8 / uint8, a half one float16: the float32 copy the
      // nodes use lives in the arena (stage_inputs / stage_outputs).
      d.home[v] = quantized(g, uint32_t(v)) || val.half ? Home::Buffer : Home::Argument;
      continue;
    }
    const int ps = f.producer[v] >= 0 ? f.step_of[size_t(f.producer[v])] : -1;
    if (ps < 0 && f.read_by[v].empty()) continue;  // no node touches it (Internal: no storage)
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

// A Concatenate along the channels (the last dim) whose inputs include the outputs of 1x1 or
// KxK Conv2d nodes that only it reads: each such convolution writes its channels straight into
// the concatenation's output (Node::out_ldc: the output's channel count as its row stride; its
// output value becomes an Alias of the concatenation's at its channel offset), and the
// Concatenate copies only the other inputs (Node::in_place). SqueezeNet's fire modules and
// Inception-style blocks concatenate two or more convolutions; the copy was a pass over the
// whole output. Float32 values where pteron runs both nodes; PTERON_XNNPACK_FUSE=0 switches it
// off. Returns the number of inputs written in place.
size_t write_concatenation_inputs_in_place(Delegate& d, const PlanFacts& f) {
  if (fusion_off()) return 0;
  Graph& g = d.g;
  size_t placed = 0;
  for (size_t kc = 0; kc < g.nodes.size(); ++kc) {
    Node& cat = g.nodes[kc];
    if (!concatenation(cat.op) || f.native[kc] || cat.outputs.size() != 1 ||
        touches_quant(g, cat) || cat.inputs.size() > kOwnMaxConcatInputs)
      continue;
    const uint32_t out = cat.outputs[0];
    const Shape& os = g.values[out].dims;
    if (os.empty() || cat.p[0] != os.size() - 1 ||
        (d.home[out] != Home::Buffer && d.home[out] != Home::Argument))
      continue;
    size_t offset = 0;
    bool shapes_fit = true;
    for (size_t i = 0; i < cat.inputs.size(); ++i) {
      const uint32_t v = cat.inputs[i];
      const Shape& is = g.values[v].dims;
      if (is.size() != os.size()) shapes_fit = false;
      for (size_t k = 0; shapes_fit && k + 1 < os.size(); ++k) shapes_fit = is[k] == os[k];
      if (!shapes_fit) break;
      const int pk = f.producer[v];
      const size_t channels = is.back();
      if (pk >= 0 && !f.native[size_t(pk)] && d.home[v] == Home::Buffer &&
          f.read_by[v].size() == 1 && !g.values[v].graph_output) {
        Node& conv = g.nodes[size_t(pk)];
        if (conv.op == Op::Conv2d && conv.outputs.size() == 1 && conv.out_ldc == 0 &&
            !touches_quant(g, conv)) {
          conv.out_ldc = os.back();
          d.home[v] = Home::Alias;
          d.alias_of[v] = out;
          d.alias_offset[v] = offset;
          cat.in_place |= 1u << i;
          ++placed;
        }
      }
      offset += channels;
    }
    if (!shapes_fit) {  // undo: the shapes are not a channel concatenation's
      for (size_t i = 0; i < cat.inputs.size(); ++i)
        if (cat.in_place & (1u << i)) {
          const uint32_t v = cat.inputs[i];
          g.nodes[size_t(f.producer[v])].out_ldc = 0;
          d.home[v] = Home::Buffer;
          d.alias_of[v] = kNoValue;
          d.alias_offset[v] = 0;
          --placed;
        }
      cat.in_place = 0;
    }
  }
  return placed;
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
          s.boutput.push_back(f.producer[v] >= 0 && f.step_of[size_t(f.producer[v])] == int(si));
        }
      for (uint32_t v : n.outputs)
        if (!seen[v] && d.home[v] != Home::Internal) {
          seen[v] = 1;
          s.boundary.push_back(v);
          s.boutput.push_back(1);
        }
    }
  }
}

// A Clamp on a quantized value (ReLU6 after a quantized convolution: upstream's partitioner
// leaves those separate) whose input only it reads, written by a Conv2d, DepthwiseConv2d or
// FullyConnected with the same quantization: that node takes the Clamp's bounds into its own
// output range and writes the Clamp's output, which saves a pass over the tensor and one
// rounding (the result is the rounded clamp of the unrounded sum, as XNNPACK's fused clamp
// gives). Returns the number of Clamp nodes removed.
size_t fuse_quantized_clamps(Graph& g) {
  const size_t nv = g.values.size();
  const ValueUses uses = value_uses(g);
  const std::vector<int>& producer = uses.producer;
  const std::vector<size_t>& reads = uses.reads;
  auto same = [](const Quant& a, const Quant& b) {
    return a.kind == QuantKind::Tensor && b.kind == QuantKind::Tensor && a.scale == b.scale &&
           a.zero_point == b.zero_point && a.qmin == b.qmin && a.qmax == b.qmax;
  };
  std::vector<char> drop(g.nodes.size(), 0);
  size_t fused = 0;
  for (size_t ku = 0; ku < g.nodes.size(); ++ku) {
    const Node& u = g.nodes[ku];
    if (u.op != Op::Clamp || u.flags != 0 || u.inputs.size() != 1 || u.outputs.size() != 1)
      continue;
    const uint32_t t = u.inputs[0], o = u.outputs[0];
    if (t >= nv || o >= nv || producer[t] < 0 || size_t(producer[t]) >= ku || reads[t] != 1 ||
        g.values[t].graph_output || !same(g.values[t].quant, g.values[o].quant) ||
        g.values[t].dims != g.values[o].dims)
      continue;
    Node& d = g.nodes[size_t(producer[t])];
    if ((d.op != Op::Conv2d && d.op != Op::DepthwiseConv2d && d.op != Op::FullyConnected) ||
        drop[size_t(producer[t])] || d.outputs.size() != 1 || (d.flags & kOwnFlagEpilogue))
      continue;
    d.out_min = std::max(d.out_min, u.out_min);
    d.out_max = std::min(d.out_max, u.out_max);
    d.outputs[0] = o;
    drop[ku] = 1;
    ++fused;
  }
  if (!fused) return 0;
  erase_dropped(g, drop);
  return fused;
}

// A FullyConnected reading a dynamically quantized value (QDInt8) that a Convert node made from
// a float32 value: the node's int8 kernel quantizes that float32 value itself, with the same
// per-token parameters (own_qlinear.cpp), so it gets it as Node::qsource.
void link_dynamic_sources(Graph& g) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].outputs)
      if (v < producer.size() && producer[v] < 0) producer[v] = int(k);
  for (Node& n : g.nodes) {
    if (n.op != Op::FullyConnected || n.inputs.empty()) continue;
    const uint32_t x = n.inputs[0];
    if (g.values[x].quant.kind != QuantKind::Dynamic || producer[x] < 0) continue;
    const Node& c = g.nodes[size_t(producer[x])];
    if (c.op == Op::Convert && c.inputs.size() == 1 && !quantized(g, c.inputs[0]) &&
        !g.values[c.inputs[0]].constant)
      n.qsource = c.inputs[0];
  }
}

// Must node n's output be rounded onto its quantization grid after it runs?
// Not where it only moves or selects elements of an input quantized the same
// way (the values are on that grid already).
bool needs_requantize(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || !quantized(g, n.outputs[0])) return false;
  const Quant& q = g.values[n.outputs[0]].quant;
  switch (n.op) {
    case Op::StaticTranspose:
    case Op::StaticReshape:
    case Op::StaticSlice:
    case Op::Copy:
    case Op::MaxPool2d: {
      if (n.inputs.empty() || n.has_range()) return true;
      const Quant& a = g.values[n.inputs[0]].quant;
      return !(a.kind == QuantKind::Tensor && q.kind == QuantKind::Tensor && a.scale == q.scale &&
               a.zero_point == q.zero_point && a.qmin == q.qmin && a.qmax == q.qmax);
    }
    default: return true;
  }
}

// Which quantized values pteron's nodes exchange as 8-bit codes (graph.h, Node::coded), and
// which nodes run their int8 codes path (kCodedPath): a per-tensor value in a buffer of the
// delegate (not an argument, not an alias) whose writer can write codes and whose every reader
// can read them. A node that needs all its quantized inputs as codes (codes_only: depthwise,
// Add) runs its float32 path when one is not; then the values it writes stay float32, and the
// choice is made again until nothing changes.
void choose_codes(Delegate& d, const PlanFacts& f) {
  Graph& g = d.g;
  const size_t nv = g.values.size(), nn = g.nodes.size();
  const std::vector<int>& writer = f.producer;
  std::vector<std::vector<std::pair<uint32_t, size_t>>> readers(nv);  // (node, input index)
  for (size_t k = 0; k < nn; ++k)
    for (size_t i = 0; i < g.nodes[k].inputs.size(); ++i)
      readers[g.nodes[k].inputs[i]].emplace_back(uint32_t(k), i);
  auto own = [&](size_t k) { return d.kernel[k] && d.state[k] && !d.idle[k]; };
  std::vector<char> path(nn, 0), coded(nv, 0);
  for (size_t k = 0; k < nn; ++k) path[k] = own(k) && (d.state[k]->reads_codes(0) ||
                                                       d.state[k]->writes_codes());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < nv; ++v) {
      const Value& val = g.values[v];
      bool ok = d.home[v] == Home::Buffer && val.quant.kind == QuantKind::Tensor &&
                !val.constant && !val.graph_input && !val.graph_output && writer[v] >= 0 &&
                !readers[v].empty();
      if (ok) {
        const size_t w = size_t(writer[v]);
        ok = path[w] && g.nodes[w].outputs.size() == 1 && d.state[w]->writes_codes();
      }
      for (size_t r = 0; ok && r < readers[v].size(); ++r) {
        const size_t k = readers[v][r].first, i = readers[v][r].second;
        ok = path[k] && i < kCodedInputs && d.state[k]->reads_codes(i);
      }
      coded[v] = ok;
    }
    for (size_t k = 0; k < nn; ++k) {
      if (!path[k] || !d.state[k]->codes_only()) continue;
      for (uint32_t v : g.nodes[k].inputs)
        if (quantized(g, v) && !g.values[v].constant && !coded[v]) {
          path[k] = 0, changed = true;
          break;
        }
    }
  }
  for (size_t k = 0; k < nn; ++k) {
    Node& n = g.nodes[k];
    n.coded = 0;
    if (!path[k]) continue;
    if (d.state[k]->codes_only()) n.coded |= kCodedPath;
    for (size_t i = 0; i < n.inputs.size() && i < kCodedInputs; ++i)
      if (coded[n.inputs[i]]) n.coded |= 1u << i;
    if (n.outputs.size() == 1 && coded[n.outputs[0]]) n.coded |= kCodedOutput;
    if ((n.coded & kCodedPath) && !d.state[k]->int8_path())
      d.why[k] += std::string("; int8 codes (") + qlinear_path() + ")";
  }
}

bool plan(Delegate& d, std::string* err) {
  fix_dynamic_convert_shapes(d.g);
  rewrite_trivial_transposes(d.g);
  // Chains first: a round trip cancelled inside a chain would leave a value
  // read twice, which splits the chain.
  d.folded = fold_transpose_chains(d.g, &d.chains);
  d.cancelled = cancel_transpose_round_trips(d.g);
  d.cancelled += merge_duplicate_transposes(d.g);
  {
    SidePolicy policy;
    std::string ignored;  // a bad setting fails in choose_sides, naming it
    if (read_policy(&policy, &ignored)) {
      d.fused = fuse_elementwise(d.g, policy);
      d.fused += flatten_concatenations(d.g, policy);
      d.fused += fuse_channel_affine(d.g, policy);
      d.fused += fuse_residual_add(d.g, policy);
      d.fused += fuse_expand_depthwise(d.g, policy);
    }
  }
  d.fused += fuse_quantized_clamps(d.g);
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

// ---- the C ABI ---------------------------------------------------------------

int32_t is_available() { return 1; }

// What the library's runtimes run on, for PTERON_XNNPACK_DEBUG.
std::string library_threads() {
#if PTERON_XNN_LINKED
  if (!library_pool())
    return "1 (the process pool is not a pthreadpool: library nodes run on the calling thread)";
  return std::to_string(pteron_threadpool_num_threads());
#else
  return "none linked";
#endif
}

// PTERON_XNNPACK_DEBUG=1: at method load, one line per node on stderr (its
// index in the blob, type, side, output shape, why that side), then one
// summary line (segments, steps, the node types pteron runs, the arena).
void print_plan(const Delegate& d, const Variant& var) {
  const Graph& g = d.g;
  std::string own;
  size_t segs = 0;
  size_t views = 0;
  for (size_t si = 0; si < d.steps.size(); ++si) {
    const Step& s = d.steps[si];
    for (uint32_t k : s.nodes) {
      const Node& n = g.nodes[k];
      const bool view = !s.native && n.op == Op::StaticReshape &&
                        (d.home[n.outputs[0]] == Home::Alias || d.home[n.inputs[0]] == Home::Alias);
      std::fprintf(stderr, "pteron XnnpackBackend node %u: %s on %s, step %zu, output %s (%s)\n",
                   n.index, op_name(n.op),
                   s.native ? "XNNPACK library"
                   : view   ? "pteron (a view)"
                            : "pteron",
                   si, shape_str(var.shapes[n.outputs[0]]).c_str(), d.why[k].c_str());
    }
    if (s.native) {
      ++segs;
      continue;
    }
    const Node& n = g.nodes[s.nodes[0]];
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
               "pteron runs: %s; reshapes as views: %zu; transposes cancelled: %zu; "
               "transposes folded: %zu (in %zu chain(s)); fused (PTERON_XNNPACK_FUSE): %zu; "
               "concatenation inputs written in place: %zu; "
               "arena: %zu bytes (%zu without sharing); library: %s; library threads: %s\n",
               g.nodes.size(), segs, d.steps.size(), own.empty() ? "(none)" : own.c_str(), views,
               d.cancelled, d.folded, d.chains, d.fused, d.in_place, var.arena_bytes,
               var.unshared_bytes,
               PTERON_XNN_DESCRIPTION, library_threads().c_str());
}

int32_t init(pteron_kernel_context* ctx, const void* processed, size_t size,
             const pteron_compile_spec*, size_t, void** handle) {
  *handle = nullptr;
  std::string err;
  if (!lib_initialize(&err)) return failf(ctx, PTERON_ERROR_NOT_SUPPORTED, "%s", err.c_str());
  std::unique_ptr<Delegate> d(new (std::nothrow) Delegate);
  if (!d) return pteron_kernel_fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, nullptr);
  if (!parse_blob(ctx, static_cast<const uint8_t*>(processed), size, &d->g, &err)) {
    // A datatype or quantization pteron has no kernel for: valid, not run here.
    const bool unsupported = err.find(kUnsupported) != std::string::npos;
    return failf(ctx, unsupported ? PTERON_ERROR_NOT_SUPPORTED : PTERON_ERROR_INVALID_PROGRAM,
                 "%s", err.c_str());
  }
  if (!plan(*d, &err)) {
    const bool unsupported = err.find("cannot run") != std::string::npos;
    const bool setting = err.rfind("PTERON_XNNPACK_USE_LIBRARY='", 0) == 0;
    return failf(ctx,
                 setting       ? PTERON_ERROR_INVALID_ARGUMENT
                 : unsupported ? PTERON_ERROR_NOT_SUPPORTED
                               : PTERON_ERROR_INVALID_PROGRAM,
                 "%s", err.c_str());
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
  if (env_switch("PTERON_XNNPACK_PROFILE", false)) {
    d->profile = true;
    d->step_us.assign(d->steps.size(), 0.0);
    d->step_calls.assign(d->steps.size(), 0);
    d->step_shape.assign(d->steps.size(), Shape());
  }
  if (env_switch("PTERON_XNNPACK_DEBUG", false)) print_plan(*d, *d->variants.back());
  *handle = d.release();
  return PTERON_OK;
}

// The dtype of the delegate argument that holds graph value `val`: float32, float16 for an F16
// one, or int8 / uint8 for a per-tensor quantized one (QInt8 / QUInt8).
int32_t argument_dtype(const Value& val) {
  if (val.half) return PTERON_DTYPE_FLOAT16;
  if (val.quant.kind != QuantKind::Tensor) return PTERON_DTYPE_FLOAT32;
  return val.quant.qmin < 0 ? PTERON_DTYPE_INT8 : PTERON_DTYPE_UINT8;
}
const char* argument_dtype_name(int32_t dtype) {
  return dtype == PTERON_DTYPE_INT8    ? "int8"
         : dtype == PTERON_DTYPE_UINT8 ? "uint8"
         : dtype == PTERON_DTYPE_FLOAT16 ? "float16"
                                         : "float32";
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
    const int32_t want = argument_dtype(g.values[v]);
    if (!t || t->dtype != want)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph input %zu) must be a %s tensor", kId,
                   g.values[v].external, i, argument_dtype_name(want));
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
  } else if (var->pool != library_pool()) {
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
    const int32_t want = argument_dtype(g.values[v]);
    if (!t || t->dtype != want)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph output %zu) must be a %s tensor", kId,
                   g.values[v].external, i, argument_dtype_name(want));
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
      size_t offset = d.alias_offset[v];
      uint32_t src = d.alias_of[v];
      while (d.home[src] == Home::Alias) offset += d.alias_offset[src], src = d.alias_of[src];
      d.ptr[v] = d.ptr[src] + offset;
    }
}

// Runs the steps in order: pteron's own nodes, and XNNPACK segments.
// Adds one step's wall time to the profile when it goes out of scope.
struct StepTimer {
  Delegate& d;
  size_t si;
  std::chrono::steady_clock::time_point t0;
  const Shape& shape;
  ~StepTimer() {
    if (!d.profile) return;
    d.step_us[si] +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    ++d.step_calls[si];
    d.step_shape[si] = shape;
  }
};

int32_t run_steps(pteron_kernel_context* ctx, Delegate& d, const Variant& var) {
  const Graph& g = d.g;
  std::string err;
  for (size_t si = 0; si < d.steps.size(); ++si) {
    const Step& s = d.steps[si];
    if (var.empty[si]) continue;  // writes only values without elements
    const auto t0 =
        d.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    StepTimer timer{d, si, t0, var.shapes[d.g.nodes[s.nodes[0]].inputs[0]]};
    if (!s.native) {
      const Node& n = g.nodes[s.nodes[0]];
      if (n.op == Op::StaticReshape && d.ptr[n.inputs[0]] == d.ptr[n.outputs[0]])
        continue;  // a view: nothing to do
      const uint32_t k = s.nodes[0];
      if (d.idle[k]) continue;
      if (!d.kernel[k]->run(n, d.state[k].get(), var.shapes, d.ptr, &err))
        return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: %s", kId, err.c_str());
      if (d.requant[k]) requantize(g.values[n.outputs[0]].quant, d.ptr[n.outputs[0]],
                                   var.shapes[n.outputs[0]]);
      continue;
    }
    if (!run_segment(var.runtimes[si], s, d.ptr, &err))
      return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: XNNPACK segment %zu failed: %s", kId, si,
                   err.c_str());
  }
  return PTERON_OK;
}

// Quantized graph inputs, int8 / uint8 in the call, into their float32
// copies: (q - zero_point) * scale, as dequantize_per_tensor; float16 ones widened (exact).
void stage_inputs(Delegate& d, pteron_value* const* args, const Variant& var) {
  const Graph& g = d.g;
  for (uint32_t v : g.inputs) {
    if (g.values[v].half) {
      const pteron_tensor* t = tensor_arg(g, args, v);
      const size_t count = numel(var.shapes[v]);
      const uint16_t* in = static_cast<const uint16_t*>(t->data);
      float* x = d.ptr[v];
      for (size_t i = 0; i < count; ++i) x[i] = pteron::kern::half_bits_to_float(in[i]);
      continue;
    }
    const Quant& q = g.values[v].quant;
    if (q.kind != QuantKind::Tensor) continue;
    const pteron_tensor* t = tensor_arg(g, args, v);
    const size_t count = numel(var.shapes[v]);
    float* x = d.ptr[v];
    const float zp = float(q.zero_point);
    if (t->dtype == PTERON_DTYPE_INT8) {
      const int8_t* in = static_cast<const int8_t*>(t->data);
      for (size_t i = 0; i < count; ++i) x[i] = (float(in[i]) - zp) * q.scale;
    } else {
      const uint8_t* in = static_cast<const uint8_t*>(t->data);
      for (size_t i = 0; i < count; ++i) x[i] = (float(in[i]) - zp) * q.scale;
    }
  }
}

// Quantized graph outputs, from their float32 copies (on the grid already)
// into the call's int8 / uint8 tensors: clamp(round(x / scale) + zero_point); float16 ones
// rounded to nearest even.
void stage_outputs(Delegate& d, pteron_value* const* args, const Variant& var) {
  const Graph& g = d.g;
  for (uint32_t v : g.outputs) {
    if (g.values[v].half) {
      pteron_tensor* t = tensor_arg(g, args, v);
      const size_t count = numel(var.shapes[v]);
      const float* x = d.ptr[v];
      uint16_t* out = static_cast<uint16_t*>(t->data);
      for (size_t i = 0; i < count; ++i) out[i] = pteron::kern::float_to_half_bits(x[i]);
      continue;
    }
    const Quant& q = g.values[v].quant;
    if (q.kind != QuantKind::Tensor) continue;
    pteron_tensor* t = tensor_arg(g, args, v);
    const size_t count = numel(var.shapes[v]);
    const float* x = d.ptr[v];
    const float inv = static_cast<float>(1.0 / double(q.scale));
    for (size_t i = 0; i < count; ++i) {
      float r = std::nearbyint(x[i] * inv) + float(q.zero_point);
      r = r > float(q.qmin) ? r : float(q.qmin);  // NaN too
      r = r < float(q.qmax) ? r : float(q.qmax);
      if (t->dtype == PTERON_DTYPE_INT8)
        static_cast<int8_t*>(t->data)[i] = static_cast<int8_t>(r);
      else
        static_cast<uint8_t*>(t->data)[i] = static_cast<uint8_t>(r);
    }
  }
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
  stage_inputs(d, args, *var);
  rc = run_steps(ctx, d, *var);
  if (rc == PTERON_OK) stage_outputs(d, args, *var);
  return rc;
}

// PTERON_XNNPACK_PROFILE=1: when the delegate is destroyed, its steps on
// stderr, slowest first: total and mean wall time (microseconds), share,
// node type, the first input's shape. Steps are timed one by one with
// steady_clock (a few tens of nanoseconds each).
void print_profile(const Delegate& d) {
  double total = 0;
  std::vector<size_t> order;
  for (size_t si = 0; si < d.steps.size(); ++si)
    if (d.step_calls[si]) {
      order.push_back(si);
      total += d.step_us[si];
    }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return d.step_us[a] > d.step_us[b]; });
  std::fprintf(stderr, "pteron XnnpackBackend profile: %zu timed step(s), %.1f us in all\n",
               order.size(), total);
  for (size_t si : order) {
    const Step& s = d.steps[si];
    const Node& n = d.g.nodes[s.nodes[0]];
    std::fprintf(stderr, "  %10.1f us %8.2f us/call %5.1f%%  step %zu: %s %s%s\n", d.step_us[si],
                 d.step_us[si] / double(d.step_calls[si]),
                 total > 0 ? 100 * d.step_us[si] / total : 0.0, si,
                 s.native ? "XNNPACK segment from" : "pteron", op_name(n.op),
                 (" " + shape_str(d.step_shape[si])).c_str());
  }
}

Delegate::~Delegate() {
  if (profile) print_profile(*this);
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
