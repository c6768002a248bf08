// SPDX-License-Identifier: BSD-3-Clause
// shape_inference.cpp - the output shape of each node type from its inputs' shapes (graph.h,
// infer_shape): at method load for the declared input shapes, and again for each new input
// shape of a dynamic program (variant.cpp, make_variant).
#include <algorithm>
#include <string>
#include <vector>

#include "graph.h"

namespace pteron {
namespace xnnpack {
namespace {

bool conv_out(size_t in, uint32_t pa, uint32_t pb, uint32_t k, uint32_t s, uint32_t d,
              size_t* out) {
  if (k == 0 || s == 0 || d == 0) return false;
  const size_t eff = size_t(d) * (k - 1) + 1;
  const size_t padded = in + pa + pb;
  if (padded < eff) return false;
  *out = (padded - eff) / s + 1;
  return true;
}

bool broadcast(const Shape& a, const Shape& b, Shape* out) {
  const size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    size_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    size_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

// Each infer_* below handles one family of node types. It returns false for
// a type outside its family; otherwise true, with `out` set to the output
// shape, or `why` saying why the input shapes do not fit.
using Shapes = std::vector<Shape>;

// Element-wise nodes: broadcasting binaries, PReLU, shape-preserving unaries.
bool infer_elementwise(const Node& n, const Shapes& shapes, Shape& out, std::string& why) {
  auto in = [&](size_t i) -> const Shape& { return shapes[n.inputs[i]]; };
  auto bad = [&](const std::string& w) {
    why = w;
    return true;
  };
  switch (n.op) {
    case Op::Add:
    case Op::Div:
    case Op::Minimum:
    case Op::Multiply:
    case Op::Subtract:
    case Op::Maximum:
      if (!broadcast(in(0), in(1), &out)) return bad("operand shapes do not broadcast");
      return true;
    case Op::PReLU:
      // XNNPACK reads one slope per channel (the input's last dim).
      if (in(0).empty() || numel(in(1)) != in(0).back())
        return bad("slope does not have one element per channel");
      out = in(0);
      return true;
    case Op::Softmax:
    case Op::Sigmoid:
    case Op::Clamp:
    case Op::Floor:
    case Op::Convert:
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
    case Op::Cos:
    case Op::ELU:
    case Op::LeakyReLU: out = in(0); return true;
    default: return false;
  }
}

// Matrix products: fully connected and batch matrix multiply.
bool infer_matmul(const Node& n, const Shapes& shapes, Shape& out, std::string& why) {
  auto in = [&](size_t i) -> const Shape& { return shapes[n.inputs[i]]; };
  auto bad = [&](const std::string& w) {
    why = w;
    return true;
  };
  switch (n.op) {
    case Op::FullyConnected: {
      const Shape& w = in(1);
      if (w.size() != 2 || in(0).empty()) return bad("weight must be 2-D and input at least 1-D");
      const bool transposed = n.flags & 1u;
      const size_t k = transposed ? w[0] : w[1], oc = transposed ? w[1] : w[0];
      if (in(0).back() != k) return bad("input's last dim does not match the weight");
      if (n.inputs.size() > 2 && numel(in(2)) != oc)
        return bad("bias does not have " + std::to_string(oc) + " elements");
      out = in(0);
      out.back() = oc;
      return true;
    }
    case Op::BatchMatMul: {
      const Shape& a = in(0);
      const Shape& b = in(1);
      if (a.size() < 2 || b.size() < 2) return bad("operands must be at least 2-D");
      const bool tb = n.flags & 1u;
      const size_t k = a[a.size() - 1], kb = tb ? b[b.size() - 1] : b[b.size() - 2];
      const size_t nn = tb ? b[b.size() - 2] : b[b.size() - 1];
      if (k != kb) return bad("inner dims differ");
      Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
      if (!broadcast(ba, bb, &out)) return bad("batch dims do not broadcast");
      // pteron's batch matmul pairs matrices one to one, or one to many.
      if (ba != bb && numel(ba) != 1 && numel(bb) != 1)
        return bad("batch dims broadcast other than one-to-one or one-to-many");
      out.push_back(a[a.size() - 2]);
      out.push_back(nn);
      return true;
    }
    default: return false;
  }
}

// Windowed nodes on NHWC input: convolutions and poolings.
bool infer_window(const Node& n, const Shapes& shapes, Shape& out, std::string& why) {
  auto in = [&](size_t i) -> const Shape& { return shapes[n.inputs[i]]; };
  auto bad = [&](const std::string& w) {
    why = w;
    return true;
  };
  switch (n.op) {
    case Op::Conv2d:
    case Op::DepthwiseConv2d: {
      const Shape& x = in(0);
      if (x.size() != 4) return bad("input must be 4-D NHWC");
      size_t oh, ow;
      if (!conv_out(x[1], n.p[0], n.p[2], n.p[4], n.p[6], n.p[8], &oh) ||
          !conv_out(x[2], n.p[3], n.p[1], n.p[5], n.p[7], n.p[9], &ow))
        return bad("window does not fit the padded input");
      const size_t c = size_t(n.p[12]) * n.p[11];
      if (n.exp_filter != kNoValue) {  // a fused 1x1 Conv2d makes the c channels from x's
        if (n.op != Op::DepthwiseConv2d || n.p[10] != 1 ||
            shapes[n.exp_filter] != Shape{c, 1, 1, x[3]})
          return bad("the fused 1x1 convolution's filter " + shape_str(shapes[n.exp_filter]) +
                     " does not map the input's channels to " + std::to_string(c));
        if (n.exp_bias != kNoValue && numel(shapes[n.exp_bias]) != c)
          return bad("the fused 1x1 convolution's bias does not have " + std::to_string(c) +
                     " elements");
      } else if (size_t(n.p[12]) * n.p[10] != x[3]) {
        return bad("channels do not match groups");
      }
      // The filter XNNPACK reads: OHWI (groups * group_output_channels,
      // kernel_h, kernel_w, group_input_channels), or 1HWO for depthwise.
      const Shape want =
          n.op == Op::Conv2d ? Shape{c, n.p[4], n.p[5], n.p[10]} : Shape{1, n.p[4], n.p[5], c};
      if (n.inputs.size() < 2 || in(1) != want)
        return bad("weight shape does not match the node's parameters " + shape_str(want));
      if (n.inputs.size() > 2 && numel(in(2)) != c)
        return bad("bias does not have " + std::to_string(c) + " elements");
      out = {x[0], oh, ow, c};
      return true;
    }
    case Op::ConvTranspose2d: {
      // XNNPACK's deconvolution: output = stride * (input - 1) + adjustment +
      // dilation * (kernel - 1) + 1 - padding (both sides); filter OHWI
      // (groups * group_output_channels, kernel_h, kernel_w, group_input_channels).
      const Shape& x = in(0);
      if (x.size() != 4) return bad("input must be 4-D NHWC");
      if (x[1] == 0 || x[2] == 0) return bad("input has no pixels");
      const size_t fh = size_t(n.p[6]) * (x[1] - 1) + n.p[13] + size_t(n.p[8]) * (n.p[4] - 1) + 1;
      const size_t fw = size_t(n.p[7]) * (x[2] - 1) + n.p[14] + size_t(n.p[9]) * (n.p[5] - 1) + 1;
      if (fh <= size_t(n.p[0]) + n.p[2] || fw <= size_t(n.p[3]) + n.p[1])
        return bad("padding removes the whole output");
      const size_t c = size_t(n.p[12]) * n.p[11];
      if (size_t(n.p[12]) * n.p[10] != x[3]) return bad("channels do not match groups");
      const Shape want{c, n.p[4], n.p[5], n.p[10]};
      if (n.inputs.size() < 2 || in(1) != want)
        return bad("weight shape does not match the node's parameters " + shape_str(want));
      if (n.inputs.size() > 2 && numel(in(2)) != c)
        return bad("bias does not have " + std::to_string(c) + " elements");
      out = {x[0], fh - n.p[0] - n.p[2], fw - n.p[3] - n.p[1], c};
      return true;
    }
    case Op::AvgPool2d:
    case Op::MaxPool2d: {
      const Shape& x = in(0);
      if (x.size() != 4) return bad("input must be 4-D NHWC");
      size_t oh, ow;
      const uint32_t dh = n.op == Op::AvgPool2d ? 1 : n.p[8],
                     dw = n.op == Op::AvgPool2d ? 1 : n.p[9];
      if (!conv_out(x[1], n.p[0], n.p[2], n.p[4], n.p[6], dh ? dh : 1, &oh) ||
          !conv_out(x[2], n.p[3], n.p[1], n.p[5], n.p[7], dw ? dw : 1, &ow))
        return bad("window does not fit the padded input");
      out = {x[0], oh, ow, x[3]};
      return true;
    }
    case Op::GlobalAvgPool2d: {
      const Shape& x = in(0);
      if (x.size() != 4) return bad("input must be 4-D NHWC");
      out = {x[0], 1, 1, x[3]};
      return true;
    }
    case Op::ResizeBilinear2d: {
      const Shape& x = in(0);
      if (x.size() != 4) return bad("input must be 4-D NHWC");
      out = {x[0], n.p[0], n.p[1], x[3]};
      return true;
    }
    default: return false;
  }
}

// A dynamic program's reshape. Its shape is either upstream's convention, 0 for the one dim
// XNNPACK infers (upstream's serializer writes a PyTorch -1 or a symbolic size so, e.g. in
// its squeeze and unsqueeze nodes), solved from the element count; or sizes written for the
// input's upper bounds (its own shape, and every reshape pteron's rewrites make from a
// transpose or a chain: they take the values' declared dims). For those the reshape is read
// as a regrouping of the declared input dims into the output dims, in memory order: groups
// whose products match, e.g. [1, 2, 64, 32] -> [2, 64, 32] is {1, 2} -> {2}, {64} -> {64},
// {32} -> {32}. A group whose input dims take their declared sizes keeps its output sizes; one
// that has changed gives its new product to its output dim when it has one, or, when it
// splits one input dim into several, to the one output dim of the input's declared size.
// Anything else is a named error.
bool infer_reshape(const Graph& g, const Node& n, const Shapes& shapes, Shape& out,
                   std::string& why) {
  out = n.list0;
  const Shape& x = shapes[n.inputs[0]];
  const size_t have = numel(x);
  if (numel(out) == have) return true;
  const auto zero = std::find(out.begin(), out.end(), size_t(0));
  if (zero != out.end()) {
    size_t rest = 1;
    for (size_t i = 0; i < out.size(); ++i)
      if (out.begin() + long(i) != zero) rest *= out[i];
    if (rest == 0 || have % rest != 0) {
      why = "cannot reshape to " + shape_str(n.list0);
      return true;
    }
    *zero = have / rest;
    return true;
  }
  why = "cannot reshape to " + shape_str(n.list0);
  const Shape& a = g.values[n.inputs[0]].dims;  // the declared (upper-bound) input
  const Shape& z = n.list0;
  if (a.size() != x.size() || numel(a) != numel(z)) return true;
  size_t i = 0, j = 0;
  while (i < a.size() || j < z.size()) {
    const size_t i0 = i, j0 = j;
    size_t pa = 1, pz = 1;
    if (i < a.size()) pa *= a[i++];
    if (j < z.size()) pz *= z[j++];
    while (pa != pz) {
      if (pa < pz && i < a.size()) pa *= a[i++];
      else if (pz < pa && j < z.size()) pz *= z[j++];
      else return true;
    }
    size_t px = 1;
    for (size_t k = i0; k < i; ++k) px *= x[k];
    if (px == pa) continue;  // this group kept its sizes
    if (j - j0 == 1) {
      out[j0] = px;
      continue;
    }
    // one input dim split into several output dims: the one of its declared size takes it
    if (i - i0 != 1) return true;
    size_t pick = j, same = 0;
    for (size_t k = j0; k < j; ++k)
      if (z[k] == a[i0]) pick = k, ++same;
    if (same != 1) return true;
    out[pick] = px;
  }
  if (numel(out) != have) return true;
  why.clear();
  return true;
}

// Nodes that move data: transpose, reshape, slice, pad, concatenate.
bool infer_layout(const Graph& g, const Node& n, const Shapes& shapes, Shape& out,
                  std::string& why) {
  auto in = [&](size_t i) -> const Shape& { return shapes[n.inputs[i]]; };
  auto bad = [&](const std::string& w) {
    why = w;
    return true;
  };
  switch (n.op) {
    case Op::StaticTranspose: {
      const Shape& x = in(0);
      if (n.list0.size() != x.size()) return bad("permutation rank differs from the input's");
      std::vector<bool> seen(x.size(), false);
      for (size_t i = 0; i < x.size(); ++i) {
        size_t p = n.list0[i];
        if (p >= x.size() || seen[p]) return bad("permutation is not a permutation");
        seen[p] = true;
        out.push_back(x[p]);
      }
      return true;
    }
    case Op::StaticReshape: return infer_reshape(g, n, shapes, out, why);
    case Op::StaticSlice: {
      const Shape& x = in(0);
      if (n.list0.size() != x.size() || n.list1.size() != x.size())
        return bad("slice rank differs from the input's");
      for (size_t i = 0; i < x.size(); ++i) {
        size_t len = n.list1[i] ? n.list1[i] : x[i] - std::min(x[i], n.list0[i]);
        if (n.list0[i] > x[i] || len > x[i] - n.list0[i]) return bad("slice runs past the input");
        out.push_back(len);
      }
      return true;
    }
    case Op::StaticConstantPad: {
      const Shape& x = in(0);
      if (n.list0.size() != x.size() || n.list1.size() != x.size())
        return bad("padding rank differs from the input's");
      for (size_t i = 0; i < x.size(); ++i) out.push_back(x[i] + n.list0[i] + n.list1[i]);
      return true;
    }
    case Op::Concatenate2:
    case Op::Concatenate3:
    case Op::Concatenate4:
    case Op::Concatenate5: {
      out = in(0);
      const size_t axis = n.p[0];
      if (axis >= out.size()) return bad("axis out of range");
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        const Shape& s = in(i);
        if (s.size() != out.size()) return bad("inputs differ in rank");
        for (size_t d = 0; d < s.size(); ++d)
          if (d != axis && s[d] != out[d]) return bad("inputs differ outside the axis");
        out[axis] += s[axis];
      }
      return true;
    }
    default: return false;
  }
}

}  // namespace

bool infer_shape(const Graph& g, const Node& n, std::vector<Shape>& shapes, std::string* err) {
  Shape out;
  std::string why;
  if (!infer_elementwise(n, shapes, out, why) && !infer_matmul(n, shapes, out, why) &&
      !infer_window(n, shapes, out, why) && !infer_layout(g, n, shapes, out, why))
    why = "no shape rule for this node type";
  if (why.empty() && out.size() > PTERON_MAX_DIM) why = "result has too many dims";
  if (why.empty() && checked_numel(out) > kMaxElements)
    why = "result " + shape_str(out) + " is too large";
  if (!why.empty()) {
    std::string s =
        "node " + std::to_string(n.index) + " (" + op_name(n.op) + "): " + why + " (input";
    for (size_t i = 0; i < n.inputs.size(); ++i) s += " " + shape_str(shapes[n.inputs[i]]);
    *err = s + ")";
    return false;
  }
  shapes[n.outputs[0]] = out;
  return true;
}


}  // namespace xnnpack
}  // namespace pteron
