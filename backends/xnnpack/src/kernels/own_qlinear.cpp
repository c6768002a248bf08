// SPDX-License-Identifier: BSD-3-Clause
// own_qlinear.cpp - the int8 path of pteron's FullyConnected and Conv2d kernels (own_linear.cpp
// asks prepare_qlinear first): int8 weights times 8-bit activation codes, summed exactly in
// int32 by pteron_cpu's qgemm.h (run-time ISA dispatch up to AVX512-VNNI), then scaled to
// float32.
//
// Taken where the node's input is quantized per tensor (QInt8 / QUInt8) or dynamically per token
// (QDInt8 made by a Convert node, Node::qsource), its filter an int8 constant (QConstant: QInt8
// with zero point 0 or QCInt8 along the output channels), a fully connected filter stored
// [N, K], a convolution with one group; every other node keeps the float32 path (the same
// results up to float rounding). What it computes, per output (i, j):
//
//   y = float(C[i, j] - o_i * colsum_j) * (s_i * w_j) + bias_j,  clamped to the output range
//
// C the int32 GEMM of the activation codes (qgemm.h: u = q + 128 for int8, q for uint8, o_i the
// matching zero point offset), s_i the input's scale (per token when dynamic), w_j the filter's
// scale of output channel j, bias the dequantized bias. The input codes are the quantized values
// the graph's values already hold (they lie on their grid: x * (1 / s) is within rounding of an
// integer); a dynamic input is quantized here from the Convert's float input with the Convert's
// own per-token parameters (token_qparams). A quantized output is rounded onto its grid here
// (NodeState::int8_path: plan/plan.cpp leaves such a node's output as it is).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "own_ops.h"
#include "pteron/kernel.h"
#include "pteron_cpu/q4gemm.h"
#include "pteron_cpu/qgemm.h"

namespace pteron {
namespace xnnpack {

struct QLinear {
  pteron_cpu::QPackedWeights w;
  // A dynamically quantized fully connected layer with 4-bit groupwise weights (q4gemm.h):
  // the weights stay 4-bit; rows are quantized into int8 here (xq, per-row scale and zero
  // point), then one q4gemm.
  std::unique_ptr<pteron_cpu::Q4Weights> q4;
  std::vector<int8_t> xq;
  std::vector<int32_t> xzp;
  std::vector<float> wscale, bias;  // per output channel
  // a static input: its zero point offset times colsum(j), and its scale times wscale[j]
  // (kQGemmNr-padded)
  std::vector<int32_t> corr;
  std::vector<float> cscale;
  bool conv = false, dynamic = false;
  int64_t k = 0, n = 0;  // fully connected: K, N
  // convolution: pads, kernel, stride, dilation, input channels
  int64_t pt = 0, pl = 0, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, cin = 0;
  bool per_row = false;  // convolution: a segment per filter row (else per tap)
  Quant in, out;  // the input's and the output's quantization
  // per run
  std::vector<char> codes;  // activation codes (act_bytes each), + a zero row, + padding
  std::vector<const void*> rows;
  const char* rows_for = nullptr;  // the codes buffer `rows` points into, for these shapes
  const char* zero_for = nullptr;  // and the zero segment
  Shape rows_shape, rows_out;
  // per filter row: a row whose taps leave the input at the left or right reads a copy of its
  // codes with zero codes for those taps (edge e at edges[e * seg_elems], refreshed each run
  // from (input pixel offset of its first tap, that tap's column))
  std::vector<char> edges;
  std::vector<std::pair<int64_t, int64_t>> edge_src;
  std::vector<float> rscale;  // dynamic, per row: the token's scale
  std::vector<int32_t> roff;  // dynamic, per row: its codes' zero point offset
};

void QLinearDeleter::operator()(QLinear* q) const { delete q; }

const char* qlinear_path() { return pteron_cpu::qgemm_kernels().name; }
const char* qlinear_node_path(const QLinear& q) {
  if (!q.q4) return qlinear_path();
  static const std::string path =
      std::string("4-bit weights, ") + pteron_cpu::q4gemm_kernels().name;
  return path.c_str();
}
bool qlinear_reads_codes(const QLinear& q) { return !q.dynamic; }
bool qlinear_writes_codes(const QLinear& q) { return q.out.kind == QuantKind::Tensor; }

void grid_bounds(const Quant& q, const Node& n, float* lo, float* hi) {
  const float inv = static_cast<float>(1.0 / double(q.scale));
  const float gmin = float(q.qmin - q.zero_point), gmax = float(q.qmax - q.zero_point);
  float glo = gmin, ghi = gmax;
  if (n.out_min > -std::numeric_limits<float>::infinity())
    glo = std::min(std::max(glo, std::nearbyint(n.out_min * inv)), gmax);
  if (n.out_max < std::numeric_limits<float>::infinity())
    ghi = std::max(std::min(ghi, std::nearbyint(n.out_max * inv)), gmin);
  *lo = glo, *hi = std::max(glo, ghi);
}

namespace {


void fill_code(int act_bytes, void* out, size_t count, float code) {
  if (act_bytes == 1)
    std::memset(out, int(code), count);
  else
    std::fill(static_cast<int16_t*>(out), static_cast<int16_t*>(out) + count, int16_t(code));
}

}  // namespace

// The int4 path: a fully connected node with 4-bit groupwise weights ([N, K], not transposed)
// whose input a Convert quantizes per token, and a float32 output. Anything else keeps the
// float32 path (the dequantized weights).
bool prepare_q4linear(const Graph& g, const Node& n, QLinearPtr* out, std::string* err) {
  const Value& x = g.values[n.inputs[0]];
  const Q4Constant& c = *g.values[n.inputs[1]].q4constant;
  if (n.op != Op::FullyConnected || n.qsource == kNoValue || x.quant.token_dims != 1 ||
      (n.flags & 1u) || g.values[n.outputs[0]].quant.kind != QuantKind::None)
    return true;
  const float* bias = n.inputs.size() > 2 ? g.values[n.inputs[2]].constant : nullptr;
  if (n.inputs.size() > 2 && (!bias || numel(g.values[n.inputs[2]].dims) != size_t(c.n)))
    return true;
  QLinearPtr q(new QLinear);
  q->q4.reset(new pteron_cpu::Q4Weights);
  if (!q->q4->pack(c.n, c.k, c.group_size, c.codes.data(), c.scales.data()))
    return true;  // a group size the kernels do not take: the float32 path
  q->dynamic = true;
  q->in = x.quant;
  q->n = c.n, q->k = c.k;
  q->bias.assign(size_t(q->n), 0.0f);
  if (bias) std::copy(bias, bias + q->n, q->bias.begin());
  (void)err;
  *out = std::move(q);
  return true;
}

bool run_q4linear(QLinear& q, const Node& n, const std::vector<Shape>& shapes,
                  const std::vector<float*>& ptr, std::string* err) {
  const size_t count = numel(shapes[n.inputs[0]]);
  const int64_t m = int64_t(count / size_t(q.k));
  if (m == 0) return true;
  try {
    q.xq.resize(count);
    q.xzp.resize(size_t(m));
    q.rscale.resize(size_t(m));
  } catch (const std::bad_alloc&) {
    *err = "node " + std::to_string(n.index) + ": out of memory for the int8 rows";
    return false;
  }
  const float* src = ptr[n.qsource];
  parallel(size_t(m), 16, [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      const float* xr = src + r * size_t(q.k);
      float s = 1, inv = 1, zp = 0;
      token_qparams(xr, size_t(q.k), &s, &inv, &zp);
      quantize_token(xr, size_t(q.k), inv, zp, q.xq.data() + r * size_t(q.k));
      q.rscale[r] = s, q.xzp[r] = int32_t(zp);
    }
  });
  if (!pteron_cpu::q4gemm(m, q.xq.data(), q.k, q.xzp.data(), q.rscale.data(), *q.q4,
                          q.bias.data(), ptr[n.outputs[0]], q.n, n.out_min, n.out_max)) {
    *err = "node " + std::to_string(n.index) + ": out of memory for the int4 GEMM";
    return false;
  }
  return true;
}

bool prepare_qlinear(const Graph& g, const Node& n, QLinearPtr* out, std::string* err) {
  out->reset();
  if (n.op != Op::FullyConnected && n.op != Op::Conv2d) return true;
  if (n.inputs.size() < 2 || n.outputs.size() != 1 || (n.flags & kOwnFlagEpilogue)) return true;
  const Value& x = g.values[n.inputs[0]];
  const Value& wv = g.values[n.inputs[1]];
  const bool dynamic = x.quant.kind == QuantKind::Dynamic;
  if (!wv.qconstant && wv.q4constant && dynamic) return prepare_q4linear(g, n, out, err);
  if (!wv.qconstant) return true;
  if (dynamic && (n.op != Op::FullyConnected || n.qsource == kNoValue || x.quant.token_dims != 1))
    return true;
  if (!dynamic && x.quant.kind != QuantKind::Tensor) return true;
  const float* bias = n.inputs.size() > 2 ? g.values[n.inputs[2]].constant : nullptr;
  if (n.inputs.size() > 2 && !bias) return true;
  QLinearPtr q(new QLinear);
  q->dynamic = dynamic;
  q->in = x.quant;
  q->out = g.values[n.outputs[0]].quant;
  if (q->out.kind == QuantKind::Dynamic) return true;
  int64_t segs = 1, seglen = 0;
  if (n.op == Op::FullyConnected) {
    if ((n.flags & 1u) || wv.dims.size() != 2) return true;  // [K, N] filters: the float path
    q->n = int64_t(wv.dims[0]), q->k = int64_t(wv.dims[1]);
    seglen = q->k;
  } else {
    // pad top, right, bottom, left, kernel h, w, stride h, w, dilation h, w, group input
    // channels, group output channels, groups (graph_nodes.cpp's order)
    if (n.p[12] != 1) return true;
    q->conv = true;
    q->pt = n.p[0], q->pl = n.p[3], q->kh = n.p[4], q->kw = n.p[5], q->sh = n.p[6];
    q->sw = n.p[7], q->dh = n.p[8], q->dw = n.p[9], q->cin = n.p[10], q->n = n.p[11];
    const Shape want{size_t(q->n), size_t(q->kh), size_t(q->kw), size_t(q->cin)};
    if (wv.dims != want) return true;  // the float path names the mismatch
    // Dilation 1 along w: one segment per filter row (kw * cin contiguous codes of an input
    // row), else one per tap.
    q->per_row = q->dw == 1;
    segs = q->per_row ? q->kh : q->kh * q->kw;
    seglen = q->per_row ? q->kw * q->cin : q->cin;
    q->k = segs * seglen;
  }
  if (q->n < 1 || q->k < 1 || q->k > pteron_cpu::kQGemmMaxK) return true;
  if (bias && numel(g.values[n.inputs[2]].dims) != size_t(q->n)) return true;
  if (!q->w.pack(q->n, segs, seglen, wv.qconstant->q.data())) {
    *err = "node " + std::to_string(n.index) + " (" + op_name(n.op) +
           "): out of memory packing int8 weights";
    return false;
  }
  q->wscale = wv.qconstant->scales;
  q->bias.assign(size_t(q->n), 0.0f);
  if (bias) std::copy(bias, bias + q->n, q->bias.begin());
  if (!dynamic) {
    const int32_t off = code_offset(q->in);
    for (int64_t j = 0; j < q->n; ++j) {
      q->corr.push_back(off * q->w.colsum(j));
      q->cscale.push_back(q->in.scale * q->wscale[size_t(j)]);
    }
    // Padded to whole panels with zeros, as QPackedWeights' colsums: the avx2 epilogue loads 16
    // columns of them (an unmasked read past N otherwise; ASan at PTERON_ISA=avx2).
    const size_t padded = size_t((q->n + pteron_cpu::kQGemmNr - 1) / pteron_cpu::kQGemmNr *
                                 pteron_cpu::kQGemmNr);
    q->corr.resize(padded, 0);
    q->cscale.resize(padded, 0.0f);
  }
  *out = std::move(q);
  return true;
}

bool run_qlinear(QLinear& q, const Node& n, const std::vector<Shape>& shapes,
                 const std::vector<float*>& ptr, std::string* err) {
  if (q.q4) return run_q4linear(q, n, shapes, ptr, err);
  const pteron_cpu::QGemmKernels& kt = pteron_cpu::qgemm_kernels();
  const int ab = kt.act_bytes;
  const Shape& xs = shapes[n.inputs[0]];
  const Shape& os = shapes[n.outputs[0]];
  const size_t in_count = numel(xs);
  const float shift = q.in.qmin < 0 ? 128.0f : 0.0f;
  int64_t m = 0, segs = 1;
  size_t row_elems = 0;  // codes per input row (fully connected) or pixel (convolution)
  if (!q.conv) {
    m = int64_t(in_count / size_t(q.k));
    row_elems = size_t(q.k);
  } else {
    if (xs.size() != 4 || int64_t(xs[3]) != q.cin) {
      *err = "node " + std::to_string(n.index) + ": input " + shape_str(xs) + " does not have " +
             std::to_string(q.cin) + " channels";
      return false;
    }
    m = int64_t(os[0] * os[1] * os[2]);
    segs = q.per_row ? q.kh : q.kh * q.kw;
    row_elems = size_t(q.cin);
  }
  if (m == 0 || q.n == 0) return true;
  // Codes: the input, then one segment of the zero code (padding taps), then kQGemmPad more.
  // An input held as codes (Node::coded) is read where it is when the level reads uint8 codes;
  // then q.codes holds only the zero segment.
  const bool in_coded = (n.coded & 1u) != 0;
  const bool direct = in_coded && ab == 1;
  const size_t seg_elems = q.conv && q.per_row ? size_t(q.kw) * row_elems : row_elems;
  const size_t own = direct ? 0 : in_count;
  const size_t total = own + seg_elems + size_t(pteron_cpu::kQGemmPad);
  try {
    q.codes.resize(total * size_t(ab));
    q.rows.resize(size_t(m * segs));
    if (q.dynamic) q.rscale.resize(size_t(m)), q.roff.resize(size_t(m));  // per token
  } catch (const std::bad_alloc&) {
    *err = "node " + std::to_string(n.index) + ": out of memory for the int8 buffers";
    return false;
  }
  char* codes = direct ? reinterpret_cast<char*>(ptr[n.inputs[0]]) : q.codes.data();
  const float qmin = float(q.in.qmin), qmax = float(q.in.qmax);
  if (direct) {
  } else if (in_coded) {  // uint8 codes widened to the level's int16
    const uint8_t* src = reinterpret_cast<const uint8_t*>(ptr[n.inputs[0]]);
    int16_t* dst = reinterpret_cast<int16_t*>(codes);
    parallel(in_count, 65536, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) dst[i] = int16_t(src[i]);
    });
  } else if (q.dynamic) {
    const float* src = ptr[n.qsource];
    parallel(size_t(m), 16, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const float* xr = src + r * row_elems;
        float s = 1, inv = 1, zp = 0;
        token_qparams(xr, row_elems, &s, &inv, &zp);
        kt.encode(xr, int64_t(row_elems), inv, zp, -128.0f, 127.0f, 128.0f, 1,
                  codes + r * row_elems * size_t(ab));
        q.rscale[r] = s, q.roff[r] = int32_t(zp) + 128;
      }
    });
  } else {
    const float* x = ptr[n.inputs[0]];
    const float inv = static_cast<float>(1.0 / double(q.in.scale));
    const float zp = float(q.in.zero_point);
    parallel(in_count, 16384, [&](size_t b, size_t e) {
      kt.encode(x + b, int64_t(e - b), inv, zp, qmin, qmax, shift, 0, codes + b * size_t(ab));
    });
  }
  const float zero_code = q.dynamic ? 0.0f : float(q.in.zero_point) + shift;
  char* zero_row = q.codes.data() + own * size_t(ab);
  fill_code(ab, zero_row, seg_elems + size_t(pteron_cpu::kQGemmPad), zero_code);
  // Rows: fully connected, one segment per row; convolution, one per filter tap. They depend
  // only on where the codes are and on the shapes: built again only when those change.
  const bool same_rows = q.rows_for == codes && q.zero_for == zero_row && q.rows_shape == xs &&
                         q.rows_out == os;
  q.rows_for = codes, q.zero_for = zero_row, q.rows_shape = xs, q.rows_out = os;
  if (same_rows) {
  } else if (!q.conv) {
    for (int64_t r = 0; r < m; ++r) q.rows[size_t(r)] = codes + size_t(r) * row_elems * size_t(ab);
  } else {
    const int64_t h = int64_t(xs[1]), w = int64_t(xs[2]), oh = int64_t(os[1]), ow = int64_t(os[2]);
    if (q.per_row) {
      // Rows of pixels whose filter rows leave the input horizontally read edge copies.
      q.edge_src.clear();
      std::vector<size_t> edge_rows;
      const size_t stride = (seg_elems + size_t(pteron_cpu::kQGemmPad)) * size_t(ab);
      for (int64_t r = 0; r < m; ++r) {
        const int64_t bi = r / (oh * ow), oy = r / ow % oh, ox = r % ow;
        const int64_t ix0 = ox * q.sw - q.pl;
        for (int64_t ky = 0; ky < q.kh; ++ky) {
          const int64_t iy = oy * q.sh - q.pt + ky * q.dh;
          const void*& dst = q.rows[size_t(r * segs + ky)];
          if (iy < 0 || iy >= h) {
            dst = zero_row;
          } else if (ix0 >= 0 && ix0 + q.kw <= w) {
            dst = codes + size_t((bi * h + iy) * w + ix0) * row_elems * size_t(ab);
          } else {
            edge_rows.push_back(size_t(r * segs + ky));  // set below, once edges is allocated
            q.edge_src.emplace_back((bi * h + iy) * w, ix0);
          }
        }
      }
      q.edges.assign(q.edge_src.size() * stride, 0);
      for (size_t e = 0; e < edge_rows.size(); ++e) q.rows[edge_rows[e]] = q.edges.data() + e * stride;
    } else parallel(size_t(m), 256, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const int64_t bi = int64_t(r) / (oh * ow), oy = int64_t(r) / ow % oh, ox = int64_t(r) % ow;
        const void** dst = q.rows.data() + r * size_t(segs);
        for (int64_t ky = 0; ky < q.kh; ++ky)
          for (int64_t kx = 0; kx < q.kw; ++kx) {
            const int64_t iy = oy * q.sh - q.pt + ky * q.dh, ix = ox * q.sw - q.pl + kx * q.dw;
            *dst++ = (iy < 0 || iy >= h || ix < 0 || ix >= w)
                         ? zero_row
                         : codes + size_t((bi * h + iy) * w + ix) * row_elems * size_t(ab);
          }
      }
    });
  }
  if (q.conv && q.per_row && !q.edge_src.empty()) {
    const int64_t w = int64_t(xs[2]);
    const size_t stride = (seg_elems + size_t(pteron_cpu::kQGemmPad)) * size_t(ab);
    for (size_t e = 0; e < q.edge_src.size(); ++e) {
      char* dst = q.edges.data() + e * stride;
      const int64_t base = q.edge_src[e].first, ix0 = q.edge_src[e].second;
      for (int64_t kx = 0; kx < q.kw; ++kx) {
        char* d = dst + size_t(kx) * row_elems * size_t(ab);
        const int64_t ix = ix0 + kx;
        if (ix < 0 || ix >= w)
          fill_code(ab, d, row_elems, zero_code);
        else
          std::memcpy(d, codes + size_t(base + ix) * row_elems * size_t(ab), row_elems * size_t(ab));
      }
    }
  }
  pteron_cpu::QGemmOut o;
  o.y = ptr[n.outputs[0]], o.ldy = q.n;
  o.colsum = q.w.colsums(), o.bias = q.bias.data();
  if (q.dynamic) {  // per row: the token's scale and zero point offset
    o.row_off = q.roff.data(), o.row_scale = q.rscale.data(), o.col_scale = q.wscale.data();
  } else {  // one offset and scale: folded into the columns at prepare
    o.col_corr = q.corr.data(), o.col_scale = q.cscale.data();
  }
  o.lo = n.out_min, o.hi = n.out_max;
  // A quantized output is rounded onto its grid on the way out (NodeState::int8_path), the
  // output range folded into the grid's bounds (rounding is monotonic).
  if (q.out.kind == QuantKind::Tensor) {
    o.requant = 1;
    o.o_inv = static_cast<float>(1.0 / double(q.out.scale));
    o.o_scale = q.out.scale;
    grid_bounds(q.out, n, &o.lo, &o.hi);
    if (n.coded & kCodedOutput) {
      o.yc = reinterpret_cast<uint8_t*>(ptr[n.outputs[0]]);
      o.code_add = float(code_offset(q.out));
    }
  }
  pteron_cpu::qgemm_indirect(m, q.rows.data(), q.w, o);
  return true;
}

}  // namespace xnnpack
}  // namespace pteron
