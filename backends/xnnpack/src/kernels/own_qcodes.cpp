// SPDX-License-Identifier: BSD-3-Clause
// own_qcodes.cpp - the int8 codes paths of DepthwiseConv2d, Add and Clamp: their quantized inputs held
// as 8-bit activation codes (graph.h, Node::coded: one byte per element instead of four), their
// output rounded onto its grid as codes or as float32, on pteron_cpu's qgemm.h kernels
// (QDwConv, QAdd; run-time ISA dispatch).
//
// Taken where every input the node reads is quantized per tensor (QInt8 / QUInt8), the output
// too, and plan/qcodes.cpp holds those inputs as codes (kCodedPath); else the node's float32
// kernel runs as for any other node. What they compute (PyTorch's quantized_decomposed
// reference: dequantize, compute in float32, quantize; round half to even):
//   DepthwiseConv2d (channel multiplier 1): v = bias[c] + sum over the taps inside the input
//     of (q - zp_in) * (w[tap, c] * scale_in), w the dequantized filter;
//   Add (same shapes; broadcasting one element at a time): v = (qa - zp_a) * scale_a +
//     (qb - zp_b) * scale_b;
//   Clamp: v = (q - zp) * scale, its bounds applied with the grid's (grid_bounds);
// then q_out = clamp(round(v / scale_out) + zp_out) within the grid and the node's output range
// (grid_bounds).
#include <algorithm>
#include <string>
#include <vector>

#include "own_ops.h"
#include "pteron_cpu/qgemm.h"

namespace pteron {
namespace xnnpack {

struct QCodes {
  Op op = Op::NONE;
  // depthwise: the filter times the input's scale, the bias, and the bias minus the input's
  // code offset times the filter's sum per channel (qgemm.h, QDwConv::bias_full)
  std::vector<float> w, bias, bias_full;
  Quant a, b, out;             // the inputs' and the output's quantization
};

void QCodesDeleter::operator()(QCodes* q) const { delete q; }

namespace {

pteron_cpu::QCodesOut codes_out(const QCodes& q, const Node& n, float* y) {
  pteron_cpu::QCodesOut o;
  o.inv = static_cast<float>(1.0 / double(q.out.scale));
  o.scale = q.out.scale;
  grid_bounds(q.out, n, &o.lo, &o.hi);
  if (n.coded & kCodedOutput) {
    o.yc = reinterpret_cast<uint8_t*>(y);
    o.code_add = float(code_offset(q.out));
  } else {
    o.y = y;
  }
  return o;
}

bool per_tensor(const Graph& g, uint32_t v) {
  return g.values[v].quant.kind == QuantKind::Tensor && !g.values[v].constant;
}

}  // namespace

bool prepare_qcodes(const Graph& g, const Node& n, QCodesPtr* out, std::string* err) {
  out->reset();
  if (n.outputs.size() != 1 || !per_tensor(g, n.outputs[0]) || (n.flags & kOwnFlagEpilogue))
    return true;
  QCodesPtr q(new QCodes);
  q->op = n.op;
  q->out = g.values[n.outputs[0]].quant;
  if (n.op == Op::DepthwiseConv2d) {
    // graph_nodes.cpp's parameters: pads t r b l, kernel h w, stride, dilation, group input
    // channels, multiplier (group output channels), groups (channels)
    if (n.inputs.size() < 2 || !per_tensor(g, n.inputs[0]) || n.p[10] != 1 || n.p[11] != 1)
      return true;
    const size_t c = n.p[12], taps = size_t(n.p[4]) * n.p[5];
    const Value& w = g.values[n.inputs[1]];
    if (!w.constant || taps == 0 || taps > 64 || numel(w.dims) != taps * c) return true;
    q->a = g.values[n.inputs[0]].quant;
    try {
      q->w.assign(w.constant, w.constant + taps * c);
      q->bias.assign(c, 0.0f);
    } catch (const std::bad_alloc&) {
      *err = "node " + std::to_string(n.index) + " (DepthwiseConv2d): out of memory";
      return false;
    }
    for (float& x : q->w) x *= q->a.scale;
    if (n.inputs.size() > 2) {
      const Value& b = g.values[n.inputs[2]];
      if (!b.constant || numel(b.dims) != c) return true;  // the float path names it
      std::copy(b.constant, b.constant + c, q->bias.begin());
    }
    q->bias_full = q->bias;
    const float off = float(code_offset(q->a));
    for (size_t t = 0; t < taps; ++t)
      for (size_t ch = 0; ch < c; ++ch) q->bias_full[ch] -= off * q->w[t * c + ch];
  } else if (n.op == Op::Add) {
    if (n.inputs.size() != 2 || !per_tensor(g, n.inputs[0]) || !per_tensor(g, n.inputs[1]))
      return true;
    q->a = g.values[n.inputs[0]].quant;
    q->b = g.values[n.inputs[1]].quant;
  } else if (n.op == Op::Clamp) {  // its bounds are its output range (grid_bounds)
    if (n.inputs.size() != 1 || !per_tensor(g, n.inputs[0])) return true;
    q->a = g.values[n.inputs[0]].quant;
  } else {
    return true;
  }
  *out = std::move(q);
  return true;
}

bool run_qcodes(const QCodes& q, const Node& n, const std::vector<Shape>& shapes,
                const std::vector<float*>& ptr, std::string* err) {
  const uint8_t* a = reinterpret_cast<const uint8_t*>(ptr[n.inputs[0]]);
  const pteron_cpu::QCodesOut o = codes_out(q, n, ptr[n.outputs[0]]);
  if (q.op == Op::DepthwiseConv2d) {
    const Shape& x = shapes[n.inputs[0]];
    const Shape& y = shapes[n.outputs[0]];
    if (x.size() != 4 || y.size() != 4 || int64_t(x[3]) != int64_t(n.p[12])) {
      *err = "node " + std::to_string(n.index) + " (DepthwiseConv2d): input " + shape_str(x) +
             " does not have " + std::to_string(n.p[12]) + " channels";
      return false;
    }
    pteron_cpu::QDwConv p;
    p.n = int64_t(x[0]), p.ih = int64_t(x[1]), p.iw = int64_t(x[2]), p.c = int64_t(x[3]);
    p.oh = int64_t(y[1]), p.ow = int64_t(y[2]);
    p.kh = n.p[4], p.kw = n.p[5], p.sh = n.p[6], p.sw = n.p[7], p.dh = n.p[8], p.dw = n.p[9];
    p.pt = n.p[0], p.pl = n.p[3];
    p.w = q.w.data(), p.bias = q.bias.data(), p.bias_full = q.bias_full.data();
    p.in_off = float(code_offset(q.a));
    p.out = o;
    pteron_cpu::qdwconv(p, a);
    return true;
  }
  pteron_cpu::QAdd p;
  p.a_off = float(code_offset(q.a)), p.a_scale = q.a.scale;
  p.out = o;
  if (q.op == Op::Clamp) {  // the sum with a second term of scale 0
    p.b_off = 0, p.b_scale = 0;
    pteron_cpu::qadd(p, a, a, int64_t(numel(shapes[n.outputs[0]])));
    return true;
  }
  // Add
  const uint8_t* b = reinterpret_cast<const uint8_t*>(ptr[n.inputs[1]]);
  p.b_off = float(code_offset(q.b)), p.b_scale = q.b.scale;
  const Shape& as = shapes[n.inputs[0]];
  const Shape& bs = shapes[n.inputs[1]];
  const Shape& os = shapes[n.outputs[0]];
  const size_t count = numel(os);
  if (as == os && bs == os) {
    pteron_cpu::qadd(p, a, b, int64_t(count));
    return true;
  }
  // Broadcasting (numpy's rule, shapes aligned at the right): one element at a time.
  const size_t rank = os.size();
  if (as.size() > rank || bs.size() > rank) {
    *err = "node " + std::to_string(n.index) + " (Add): inputs " + shape_str(as) + " and " +
           shape_str(bs) + " do not broadcast to " + shape_str(os);
    return false;
  }
  std::vector<size_t> sa(rank, 0), sb(rank, 0), idx(rank, 0);
  for (size_t d = rank, ea = 1, eb = 1; d-- > 0;) {
    const size_t da = d + as.size() >= rank ? as[d + as.size() - rank] : 1;
    const size_t db = d + bs.size() >= rank ? bs[d + bs.size() - rank] : 1;
    sa[d] = da == 1 ? 0 : ea, sb[d] = db == 1 ? 0 : eb;
    ea *= da, eb *= db;
  }
  const pteron_cpu::QGemmKernels& kt = pteron_cpu::qgemm_kernels();
  for (size_t i = 0; i < count; ++i) {
    size_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) ia += idx[d] * sa[d], ib += idx[d] * sb[d];
    kt.add(p, a + ia, b + ib, 1, int64_t(i));
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

}  // namespace xnnpack
}  // namespace pteron
