// SPDX-License-Identifier: BSD-3-Clause
// xnn_library.cpp - the XNNPACK library binding: lib_supports, lib_initialize, build_segment,
// run_segment, delete_runtime, library_pool, the delegate's only contact with the library and
// the only file that includes xnnpack.h.
//
// The XNNPACK library is optional (backends/xnnpack/CMakeLists.txt,
// PTERON_XNNPACK_LIBRARY): every call into it is here, compiled only where PTERON_XNN_LINKED is
// 1. Its runtimes are created on the process's pthreadpool (pteron_threadpool_pthreadpool());
// where the process pool is not a pthreadpool, they run on the calling thread.
#include "xnn_library.h"

#include <cstdio>
#include <string>
#include <vector>

#include "graph.h"
#include "kernels/own_ops.h"
#include "pteron/threadpool.h"
#include "types.h"
#include "xnn_config.h"
#if PTERON_XNN_LINKED
#include <xnnpack.h>
#endif

namespace pteron {
namespace xnnpack {

#if PTERON_XNN_LINKED

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

// The XNNPACK runtime of segment `s` for these shapes, on `pool` (a
// pthreadpool_t, or null: the calling thread).
bool build_segment(const Graph& g, const Step& s, const std::vector<Shape>& shapes, void* pool,
                   void** rt_out, std::string* err) {
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
bool build_segment(const Graph&, const Step&, const std::vector<Shape>&, void*, void**,
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

// What the library's runtimes run on, for Options::debug (PTERON_XNNPACK_DEBUG).
std::string library_threads() {
#if PTERON_XNN_LINKED
  if (!library_pool())
    return "1 (the process pool is not a pthreadpool: library nodes run on the calling thread)";
  return std::to_string(pteron_threadpool_num_threads());
#else
  return "none linked";
#endif
}

const char* library_description() { return PTERON_XNN_DESCRIPTION; }

}  // namespace xnnpack
}  // namespace pteron
