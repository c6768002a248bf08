// SPDX-License-Identifier: BSD-3-Clause
// graph_nodes.cpp - the nodes of a blob (graph_reader.h, read_node): each node's parameters
// and operands copied out of the flatbuffer, window parameters checked, every id resolved.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "graph.h"
#include "graph_reader.h"

namespace pteron {
namespace xnnpack {
namespace reader {
namespace {

// Window parameters of convolutions and poolings: a zero kernel, stride or
// dilation, or a value no real model uses (a corrupt blob), is refused here,
// naming the parameter, before any shape is computed from it.
constexpr uint32_t kMaxWindowParam = uint32_t(1) << 20;

bool check_params(const Node& n, std::string* err) {
  static const char* const conv_names[] = {"pad_top",
                                           "pad_right",
                                           "pad_bottom",
                                           "pad_left",
                                           "kernel_h",
                                           "kernel_w",
                                           "stride_h",
                                           "stride_w",
                                           "dilation_h",
                                           "dilation_w",
                                           "group_input_channels",
                                           "group_output_channels",
                                           "groups"};
  static const char* const pool_names[] = {"pad_top",    "pad_right", "pad_bottom", "pad_left",
                                           "window_h",   "window_w",  "stride_h",   "stride_w",
                                           "dilation_h", "dilation_w"};
  const char* const* names = nullptr;
  size_t count = 0, first_nonzero = 4, last_nonzero = 0;
  switch (n.op) {
    case Op::Conv2d:
    case Op::DepthwiseConv2d:
    case Op::ConvTranspose2d: names = conv_names, count = 13, last_nonzero = 13; break;
    case Op::AvgPool2d:
    case Op::MaxPool2d:
      // A pooling dilation of 0 means 1 (older exporters leave it unset).
      names = pool_names, count = 10, last_nonzero = 8;
      break;
    case Op::ResizeBilinear2d:
      if (n.p[0] == 0 || n.p[1] == 0 || n.p[0] > kMaxWindowParam || n.p[1] > kMaxWindowParam)
        return fail(err, "node %u (%s): output size %ux%u is out of range (1..%u)", n.index,
                    op_name(n.op), n.p[0], n.p[1], kMaxWindowParam);
      return true;
    default: return true;
  }
  for (size_t i = 0; i < count; ++i) {
    if (n.p[i] == 0 && i >= first_nonzero && i < last_nonzero)
      return fail(err, "node %u (%s): %s 0 (must be at least 1)", n.index, op_name(n.op), names[i]);
    if (n.p[i] > kMaxWindowParam)
      return fail(err, "node %u (%s): %s %u is out of range (at most %u)", n.index, op_name(n.op),
                  names[i], n.p[i], kMaxWindowParam);
  }
  return true;
}

// A node's operands as value ids, read from its parameter table.
struct NodeOperands {
  std::vector<uint32_t> in_ids, out_ids;
  bool optional_last_input = false;  // bias may be absent
};

// Each read_*_node below handles one family of node types: it copies the
// parameters into `n` and the operand ids into `o`, and returns false for a
// type outside its family.

// Element-wise nodes: binary and unary arithmetic, activations.
bool read_elementwise_node(const fbx::Node* fn, Node& n, NodeOperands& o) {
  switch (n.op) {
    case Op::Add:
    case Op::Div:
    case Op::Minimum:
    case Op::Multiply:
    case Op::Subtract:
    case Op::Maximum:
    case Op::PReLU:
    case Op::BatchMatMul: {
      const fbx::Binary* b = static_cast<const fbx::Binary*>(fn->op());
      o.in_ids = {b->a(), b->b()};
      o.out_ids = {b->output()};
      n.flags = b->flags();
      return true;
    }
    case Op::Softmax:
    case Op::Sigmoid:
    case Op::Clamp:
    case Op::Floor:
    case Op::Convert:
    case Op::GlobalAvgPool2d:
    case Op::SquareRoot:
    case Op::Ceiling:
    case Op::Hardswish:
    case Op::Negate:
    case Op::Square:
    case Op::Abs:
    case Op::ReciprocalSquareRoot:
    case Op::Log:
    case Op::Gelu:
    case Op::Tanh:
    case Op::Exp:
    case Op::Sin:
    case Op::Copy:
    case Op::Cos: {
      const fbx::Unary* u = static_cast<const fbx::Unary*>(fn->op());
      o.in_ids = {u->input()};
      o.out_ids = {u->output()};
      n.flags = u->flags();
      return true;
    }
    case Op::ELU: {
      const fbx::Elu* e = fn->op_as_ELU();
      n.f = e->alpha();
      o.in_ids = {e->input()};
      o.out_ids = {e->output()};
      n.flags = e->flags();
      return true;
    }
    case Op::LeakyReLU: {
      const fbx::LeakyRelu* e = fn->op_as_LeakyReLU();
      n.f = e->slope();
      o.in_ids = {e->input()};
      o.out_ids = {e->output()};
      n.flags = e->flags();
      return true;
    }
    default: return false;
  }
}

// Nodes with weights or windows: fully connected, convolutions, poolings,
// attention. Window parameters go to n.p in the order check_params names them.
bool read_weighted_node(const fbx::Node* fn, Node& n, NodeOperands& o) {
  switch (n.op) {
    case Op::FullyConnected: {
      const fbx::Linear* l = fn->op_as_FullyConnected();
      o.in_ids = {l->input(), l->weight(), l->bias()};
      o.out_ids = {l->output()};
      n.flags = l->flags();
      o.optional_last_input = true;
      return true;
    }
    case Op::Conv2d:
    case Op::DepthwiseConv2d:
    case Op::ConvTranspose2d: {
      const fbx::Convolution* c = static_cast<const fbx::Convolution*>(fn->op());
      uint32_t p[] = {c->pad_top(),    c->pad_right(),         c->pad_bottom(),
                      c->pad_left(),   c->kernel_h(),          c->kernel_w(),
                      c->stride_h(),   c->stride_w(),          c->dilation_h(),
                      c->dilation_w(), c->group_in_channels(), c->group_out_channels(),
                      c->groups(),     c->adjust_h(),          c->adjust_w()};
      std::memcpy(n.p, p, sizeof p);
      o.in_ids = {c->input(), c->weight(), c->bias()};
      o.out_ids = {c->output()};
      n.flags = c->flags();
      o.optional_last_input = true;
      return true;
    }
    case Op::AvgPool2d:
    case Op::MaxPool2d: {
      const fbx::Pooling* q = static_cast<const fbx::Pooling*>(fn->op());
      uint32_t p[] = {q->pad_top(),    q->pad_right(), q->pad_bottom(), q->pad_left(),
                      q->window_h(),   q->window_w(),  q->stride_h(),   q->stride_w(),
                      q->dilation_h(), q->dilation_w()};
      std::memcpy(n.p, p, sizeof p);
      o.in_ids = {q->input()};
      o.out_ids = {q->output()};
      n.flags = q->flags();
      return true;
    }
    case Op::ArgMaxPool2d: {
      const fbx::ArgMaxPooling* q = fn->op_as_ArgMaxPool2d();
      o.in_ids = {q->input()};
      o.out_ids = {q->output_values(), q->output_indices()};
      n.flags = q->flags();
      return true;
    }
    case Op::ScaledDotProductAttention: {
      const fbx::Attention* a = fn->op_as_ScaledDotProductAttention();
      o.in_ids = {a->query(), a->key(), a->value(), a->scale(), a->mask()};
      o.out_ids = {a->output()};
      n.flags = a->flags();
      return true;
    }
    default: return false;
  }
}

// Nodes that move data: transpose, reshape, slice, pad, resize, concatenate.
// Their shape parameters go to n.list0 / n.list1 / n.p.
bool read_layout_node(const fbx::Node* fn, Node& n, NodeOperands& o) {
  switch (n.op) {
    case Op::StaticTranspose: {
      const fbx::Transpose* t = fn->op_as_StaticTranspose();
      n.list0 = to_sizes(t->permutation());
      o.in_ids = {t->input()};
      o.out_ids = {t->output()};
      n.flags = t->flags();
      return true;
    }
    case Op::StaticReshape: {
      const fbx::Reshape* r = fn->op_as_StaticReshape();
      n.list0 = to_sizes(r->shape());
      o.in_ids = {r->input()};
      o.out_ids = {r->output()};
      n.flags = r->flags();
      return true;
    }
    case Op::StaticSlice: {
      const fbx::Slice* s = fn->op_as_StaticSlice();
      n.list0 = to_sizes(s->starts());
      n.list1 = to_sizes(s->lengths());
      o.in_ids = {s->input()};
      o.out_ids = {s->output()};
      n.flags = s->flags();
      return true;
    }
    case Op::StaticConstantPad: {
      const fbx::ConstantPad* c = fn->op_as_StaticConstantPad();
      n.list0 = to_sizes(c->before());
      n.list1 = to_sizes(c->after());
      n.f = c->value();
      o.in_ids = {c->input()};
      o.out_ids = {c->output()};
      n.flags = c->flags();
      return true;
    }
    case Op::ResizeBilinear2d: {
      const fbx::ResizeBilinear* r = fn->op_as_ResizeBilinear2d();
      n.p[0] = r->height();
      n.p[1] = r->width();
      o.in_ids = {r->input()};
      o.out_ids = {r->output()};
      n.flags = r->flags();
      return true;
    }
    case Op::Concatenate2:
    case Op::Concatenate3:
    case Op::Concatenate4:
    case Op::Concatenate5: {
      const fbx::Concat* c = static_cast<const fbx::Concat*>(fn->op());
      const int count = n.op == Op::Concatenate2   ? 2
                        : n.op == Op::Concatenate3 ? 3
                        : n.op == Op::Concatenate4 ? 4
                                                   : 5;
      const uint32_t all[] = {c->in0(), c->in1(), c->in2(), c->in3(), c->in4()};
      o.in_ids.assign(all, all + count);
      o.out_ids = {c->output()};
      n.p[0] = c->axis();
      n.flags = c->flags();
      return true;
    }
    default: return false;
  }
}

// The node's operand ids as value indices: every id defined, no output a
// constant or graph input.
bool resolve_operands(const Graph& g, const ValueIds& ids, NodeOperands& o, Node& n,
                      std::string* err) {
  const uint32_t k = n.index;
  if (o.optional_last_input && o.in_ids.back() == kNoValue) o.in_ids.pop_back();
  for (uint32_t id : o.in_ids) {
    uint32_t idx;
    if (!ids.find(id, &idx))
      return fail(err,
                  "node %u (%s) reads value id %u, which is out of range (the graph "
                  "defines %u values)",
                  k, op_name(n.op), id, ids.count);
    n.inputs.push_back(idx);
  }
  for (uint32_t id : o.out_ids) {
    uint32_t idx;
    if (!ids.find(id, &idx))
      return fail(err,
                  "node %u (%s) writes value id %u, which is out of range (the graph "
                  "defines %u values)",
                  k, op_name(n.op), id, ids.count);
    if (g.values[idx].constant || g.values[idx].graph_input)
      return fail(err, "node %u (%s) writes value id %u, which is a constant or graph input", k,
                  op_name(n.op), id);
    n.outputs.push_back(idx);
  }
  return true;
}

}  // namespace

// Node `k`: its parameters, operands, window checks and output range.
bool read_node(const fbx::Node* fn, uint32_t k, const ValueIds& ids, Graph* g, std::string* err) {
  Node& n = g->nodes[k];
  n.index = k;
  n.debug_handle = fn->debug_handle();
  n.op = fn->op_type();
  // The Verifier accepts a union whose value is absent: refuse it before
  // any case reads the parameters.
  if (!fn->op()) return fail(err, "node %u (%s) has no parameters", k, op_name(n.op));
  NodeOperands o;
  if (!read_elementwise_node(fn, n, o) && !read_weighted_node(fn, n, o) &&
      !read_layout_node(fn, n, o))
    return fail(err, "node %u has an unknown node type (%d)", k, int(n.op));
  if (!resolve_operands(*g, ids, o, n, err)) return false;
  if (!check_params(n, err)) return false;
  if (const fbx::OutputRange* r = fn->output_range()) {
    n.out_min = r->min();
    n.out_max = r->max();
    if (!(n.out_min <= n.out_max))
      return fail(err, "node %u (%s): output range [%g, %g] is empty", k, op_name(n.op),
                  double(n.out_min), double(n.out_max));
  }
  return true;
}


}  // namespace reader
}  // namespace xnnpack
}  // namespace pteron
