// SPDX-License-Identifier: BSD-3-Clause
// own_linear.cpp - pteron's kernels for the linear node types (own_ops.h): fully connected,
// dense convolution, transposed convolution and batch matrix multiply, on the packed-weight
// GEMM of pteron_cpu
// (runtime/cpu/include/pteron_cpu/gemm.h). float32, NHWC for image tensors. Every kernel applies the
// node's output range inside the GEMM (fused clamp, NaN kept).
//
// Parameter meaning (graph_nodes.cpp read_node, xnn_library.cpp define_node, XNNPACK's xnnpack.h):
//  - FullyConnected: input [..., K] (leading dims flattened to M rows), filter [N, K], or
//    [K, N] with flags bit 0 (XNN_FLAG_TRANSPOSE_WEIGHTS), optional bias [N].
//  - Conv2d: input NHWC [B, H, W, groups * group_input_channels], filter OHWI
//    [groups * group_output_channels, kh, kw, group_input_channels], optional bias; n.p holds
//    pad top, right, bottom, left, kernel h, w, stride h, w, dilation h, w, group input
//    channels, group output channels, groups (graph_nodes.cpp check_params' order).
//  - ConvTranspose2d (XNNPACK's deconvolution): the same parameters as Conv2d plus the
//    adjustment h, w in n.p[13], n.p[14]; the same OHWI filter layout.
//  - BatchMatMul: A [..., M, K] x B [..., K, N] (flags bit 0: B is [..., N, K]); batch dims
//    equal or one side a single matrix (infer_shape).
// Filters of FullyConnected and Conv2d that are constants are packed once at method load; a
// non-constant FullyConnected filter is packed at every run. Convolutions need constant filters.
// Conv2d: 1x1 stride 1 unpadded: the input is the GEMM's A; otherwise indirect rows, no
// im2col (ConvState).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "pteron_cpu/conv.h"
#include "pteron_cpu/gemm.h"
#include "graph.h"
#include "own_ops.h"
#include "pteron/kernel.h"
#include "pteron/types.h"

namespace pteron {
namespace xnnpack {
namespace {

using pteron_cpu::PackedWeights;

std::string node_name(const Node& n) {
  return "node " + std::to_string(n.index) + " (" + op_name(n.op) + ")";
}

bool out_of_memory(const Node& n, std::string* err) {
  *err = node_name(n) + ": out of memory packing weights";
  return false;
}

const float* constant_or_null(const Graph& g, const Node& n, size_t i) {
  return i < n.inputs.size() ? g.values[n.inputs[i]].constant : nullptr;
}

// ---- fully connected ----------------------------------------------------------------------

struct FcState : NodeState {
  PackedWeights w;
  bool packed = false;  // at prepare (constant filter and bias)
  QLinearPtr q;         // the int8 path (own_qlinear.cpp), when the node has one
  const char* int8_path() const override { return q ? qlinear_node_path(*q) : nullptr; }
  bool reads_codes(size_t i) const override { return q && i == 0 && qlinear_reads_codes(*q); }
  bool writes_codes() const override { return q && qlinear_writes_codes(*q); }
};

// K and N of a fully connected filter of shape ws.
void fc_dims(const Node& n, const Shape& ws, int64_t* k, int64_t* oc) {
  const bool kn = n.flags & 1u;
  *k = int64_t(kn ? ws[0] : ws[1]);
  *oc = int64_t(kn ? ws[1] : ws[0]);
}

bool prepare_fc(const Graph& g, const Node& n, std::unique_ptr<NodeState>* state,
                std::string* err) {
  std::unique_ptr<FcState> s(new FcState);
  if (!prepare_qlinear(g, n, &s->q, err)) return false;
  if (s->q) {
    *state = std::move(s);
    return true;
  }
  const float* w = constant_or_null(g, n, 1);
  const bool has_bias = n.inputs.size() > 2;
  const float* b = has_bias ? constant_or_null(g, n, 2) : nullptr;
  const Shape& ws = g.values[n.inputs[1]].dims;
  if (ws.size() != 2) {
    *err = node_name(n) + ": filter " + shape_str(ws) + " is not 2-D";
    return false;
  }
  if (w && (!has_bias || b)) {
    int64_t k, oc;
    fc_dims(n, ws, &k, &oc);
    if (has_bias && numel(g.values[n.inputs[2]].dims) != size_t(oc)) {
      *err = node_name(n) + ": bias " + shape_str(g.values[n.inputs[2]].dims) + " does not have " +
             std::to_string(oc) + " elements";
      return false;
    }
    if (!s->w.pack(k, oc, w, n.flags & 1u ? oc : k, !(n.flags & 1u), b))
      return out_of_memory(n, err);
    s->packed = true;
  }
  *state = std::move(s);
  return true;
}

bool run_fc(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
            const std::vector<float*>& ptr, std::string* err) {
  FcState& s = *static_cast<FcState*>(state);
  if (s.q) return run_qlinear(*s.q, n, shapes, ptr, err);
  const Shape& xs = shapes[n.inputs[0]];
  const Shape& ws = shapes[n.inputs[1]];
  int64_t k, oc;
  fc_dims(n, ws, &k, &oc);
  if (!s.packed && !s.w.pack(k, oc, ptr[n.inputs[1]], n.flags & 1u ? oc : k, !(n.flags & 1u),
                             n.inputs.size() > 2 ? ptr[n.inputs[2]] : nullptr))
    return out_of_memory(n, err);
  int64_t m = 1;
  for (size_t d = 0; d + 1 < xs.size(); ++d) m *= int64_t(xs[d]);
  pteron_cpu::gemm_packed(m, ptr[n.inputs[0]], k, s.w, ptr[n.outputs[0]], oc, n.out_min, n.out_max,
                          fused_activation(n));
  return true;
}

const OwnKernel kFullyConnected = {&prepare_fc, &run_fc};

// ---- convolution --------------------------------------------------------------------------

struct ConvParams {
  int64_t pt, pr, pb, pl, kh, kw, sh, sw, dh, dw, cin_g, cout_g, groups;
};

ConvParams conv_params(const Node& n) {
  return {n.p[0], n.p[1], n.p[2], n.p[3],  n.p[4],  n.p[5], n.p[6],
          n.p[7], n.p[8], n.p[9], n.p[10], n.p[11], n.p[12]};
}

// Every Conv2d runs on pteron_cpu::ConvNhwc (runtime/cpu/include/pteron_cpu/conv.h): the direct
// 1x1 on its input, every other as a GEMM on indirect rows (no im2col), built once per input
// address and shape (the arena is planned at load, so once).
struct ConvState : NodeState {
  QLinearPtr q;                  // the int8 path (own_qlinear.cpp), when the node has one
  const char* int8_path() const override { return q ? qlinear_path() : nullptr; }
  bool reads_codes(size_t i) const override { return q && i == 0 && qlinear_reads_codes(*q); }
  bool writes_codes() const override { return q && qlinear_writes_codes(*q); }
  pteron_cpu::ConvNhwc conv;
  // kOwnFlagPrologue: the per-channel map of the input (own copies of Node::pre_scale and
  // pre_shift, cin floats each; zeros for no shift).
  std::vector<float> pre_scale, pre_shift;
  pteron_cpu::GemmPre pre;
};

pteron_cpu::ConvNhwcShape conv_shape(const ConvParams& p) {
  pteron_cpu::ConvNhwcShape s;
  s.kh = p.kh, s.kw = p.kw, s.sh = p.sh, s.sw = p.sw, s.dh = p.dh, s.dw = p.dw;
  s.pt = p.pt, s.pl = p.pl, s.groups = p.groups, s.cin_g = p.cin_g, s.cout_g = p.cout_g;
  return s;
}

// The filter [groups * cout_g, kh, kw, cin_g] and bias (null without one) of
// a convolution or deconvolution node: constants whose shapes match the
// node's parameters, else false naming the node.
bool conv_constants(const Graph& g, const Node& n, const ConvParams& p, const float** w,
                    const float** b, std::string* err) {
  *w = constant_or_null(g, n, 1);
  const bool has_bias = n.inputs.size() > 2;
  *b = has_bias ? constant_or_null(g, n, 2) : nullptr;
  if (!*w || (has_bias && !*b)) {
    *err = node_name(n) + ": filter and bias must be constants (pteron packs them at load)";
    return false;
  }
  const Shape want{size_t(p.groups * p.cout_g), size_t(p.kh), size_t(p.kw), size_t(p.cin_g)};
  if (g.values[n.inputs[1]].dims != want) {
    *err = node_name(n) + ": filter " + shape_str(g.values[n.inputs[1]].dims) +
           " does not match the node's parameters " + shape_str(want);
    return false;
  }
  if (has_bias && numel(g.values[n.inputs[2]].dims) != want[0]) {
    *err = node_name(n) + ": bias " + shape_str(g.values[n.inputs[2]].dims) + " does not have " +
           std::to_string(want[0]) + " elements";
    return false;
  }
  return true;
}

bool prepare_conv(const Graph& g, const Node& n, std::unique_ptr<NodeState>* state,
                  std::string* err) {
  const ConvParams p = conv_params(n);
  const float *w = nullptr, *b = nullptr;
  if (!conv_constants(g, n, p, &w, &b, err)) return false;
  std::unique_ptr<ConvState> s(new ConvState);
  if (n.op == Op::Conv2d && !prepare_qlinear(g, n, &s->q, err)) return false;
  if (s->q) {
    *state = std::move(s);
    return true;
  }
  if (n.flags & kOwnFlagPrologue) {
    const float* scale = g.values[n.pre_scale].constant;
    const float* shift = n.pre_shift == kNoValue ? nullptr : g.values[n.pre_shift].constant;
    try {
      s->pre_scale.assign(scale, scale + p.cin_g);
      s->pre_shift.assign(size_t(p.cin_g), 0.0f);
    } catch (const std::bad_alloc&) {
      return out_of_memory(n, err);
    }
    if (shift) std::copy(shift, shift + p.cin_g, s->pre_shift.begin());
    s->pre.scale = s->pre_scale.data(), s->pre.shift = s->pre_shift.data();
    s->pre.lo = n.pre_min, s->pre.hi = n.pre_max;
  }
  if (!s->conv.prepare(conv_shape(p), w, b)) return out_of_memory(n, err);
  *state = std::move(s);
  return true;
}

bool run_conv(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
              const std::vector<float*>& ptr, std::string* err) {
  ConvState& s = *static_cast<ConvState*>(state);
  if (s.q) return run_qlinear(*s.q, n, shapes, ptr, err);
  const ConvParams p = conv_params(n);
  const Shape& xs = shapes[n.inputs[0]];
  const Shape& os = shapes[n.outputs[0]];
  const int64_t bsz = int64_t(xs[0]), h = int64_t(xs[1]), w = int64_t(xs[2]), c = int64_t(xs[3]);
  const int64_t oh = int64_t(os[1]), ow = int64_t(os[2]), oc = int64_t(os[3]);
  const int64_t m = bsz * oh * ow;
  const float* x = ptr[n.inputs[0]];
  float* out = ptr[n.outputs[0]];
  if (m == 0 || oc == 0) return true;
  // The output's row stride: its channel count, or a concatenation's (Node::out_ldc).
  const int64_t ldc = n.out_ldc ? int64_t(n.out_ldc) : oc;
  if (c != p.groups * p.cin_g) {  // the indirect rows read groups * cin_g channels per pixel
    *err = node_name(n) + ": input " + shape_str(xs) + " does not have groups * " +
           "group_input_channels = " + std::to_string(p.groups * p.cin_g) + " channels";
    return false;
  }
  pteron_cpu::GemmAct act = fused_activation(n);
  // A residual that broadcasts into the output in this call (a dynamic program whose two
  // inputs' sizes differ at run time) is added after the GEMM, as the Add node would.
  const float* late_res = nullptr;
  if (n.flags & kOwnFlagResidual) {  // fuse_residual_add made sure of one group and a bias
    const uint32_t r = n.inputs.size() == 4 ? n.inputs[3] : kNoValue;
    bool broadcasts = r != kNoValue && shapes[r].size() == os.size() && n.out_ldc == 0;
    for (size_t i = 0; broadcasts && i < os.size(); ++i)
      broadcasts = shapes[r][i] == os[i] || shapes[r][i] == 1;
    if (p.groups != 1 || !broadcasts) {
      *err = node_name(n) + ": a fused residual needs one group and a shape that broadcasts to "
             "the output's " + shape_str(os) +
             (r == kNoValue ? std::string() : ", not " + shape_str(shapes[r]));
      return false;
    }
    if (shapes[r] == os)
      act.res = ptr[r], act.ldr = oc, act.res_lo = n.res_min, act.res_hi = n.res_max;
    else
      late_res = ptr[r];
  }
  if (late_res) {  // the convolution alone, then its output += the residual, broadcast
    Node plain = n;
    plain.flags &= ~kOwnFlagResidual;
    plain.inputs.resize(3);
    if (!run_conv(plain, state, shapes, ptr, err)) return false;
    const Shape& rs = shapes[n.inputs[3]];
    int64_t o[pteron_cpu::kMaxRank], b[pteron_cpu::kMaxRank];
    if (os.size() > size_t(pteron_cpu::kMaxRank)) {  // graph.cpp keeps ranks within it
      *err = node_name(n) + ": output of rank " + std::to_string(os.size()) + " (at most " +
             std::to_string(pteron_cpu::kMaxRank) + ")";
      return false;
    }
    for (size_t i = 0; i < os.size(); ++i) o[i] = int64_t(os[i]), b[i] = int64_t(rs[i]);
    pteron_cpu::binary_broadcast(pteron_cpu::NBinary::Add, out, o, int(os.size()), late_res, b,
                                 int(rs.size()), out, o, int(os.size()), n.res_min, n.res_max);
    return true;
  }
  if (n.flags & kOwnFlagPrologue) {  // fuse_channel_affine made sure of direct and one group
    if (!s.conv.direct(h, w, oh, ow) || p.groups != 1) {
      *err = node_name(n) + ": a fused per-channel map needs a 1x1 convolution of one group";
      return false;
    }
    if (!pteron_cpu::gemm_packed_pre(m, x, c, s.pre, s.conv.weights(0), out, ldc, n.out_min,
                                     n.out_max, act)) {
      *err = node_name(n) + ": out of memory for the rows of its mapped input";
      return false;
    }
    return true;
  }
  if (!s.conv.run(x, bsz, h, w, oh, ow, out, ldc, n.out_min, n.out_max, act)) {
    *err = node_name(n) + ": out of memory for the indirection buffer";
    return false;
  }
  return true;
}

const OwnKernel kConv2d = {&prepare_conv, &run_conv};

// ---- transposed convolution (XNNPACK's deconvolution) ---------------------------------------
//
// Per group, one GEMM over every input pixel: cols[pixel, (kh, kw, oc)] = x[pixel, ic] x W, with
// W[ic, (kh, kw, oc)] the filter taps; then each tap's oc values are added at its output pixel
// (oy = iy * stride - pad_top + kh * dilation, likewise ox), then bias and the output range.
// n.p[13], n.p[14]: the adjustment (extra rows / columns at the bottom / right).

struct DeconvState : NodeState {
  std::vector<PackedWeights> w;  // per group: K = cin_g, N = kh * kw * cout_g
  std::vector<float> bias;       // groups * cout_g (zeros without one)
  std::vector<float> cols;
};

bool prepare_deconv(const Graph& g, const Node& n, std::unique_ptr<NodeState>* state,
                    std::string* err) {
  const ConvParams p = conv_params(n);
  const float *w = nullptr, *b = nullptr;
  if (!conv_constants(g, n, p, &w, &b, err)) return false;
  std::unique_ptr<DeconvState> s(new DeconvState);
  const int64_t taps = p.kh * p.kw, ntot = taps * p.cout_g;
  s->w.resize(size_t(p.groups));
  std::vector<float> t(size_t(ntot * p.cin_g));  // [kh][kw][oc][ic] of one group
  for (int64_t gi = 0; gi < p.groups; ++gi) {
    for (int64_t o = 0; o < p.cout_g; ++o)
      for (int64_t tap = 0; tap < taps; ++tap)
        std::memcpy(&t[size_t((tap * p.cout_g + o) * p.cin_g)],
                    w + ((gi * p.cout_g + o) * taps + tap) * p.cin_g,
                    sizeof(float) * size_t(p.cin_g));
    if (!s->w[size_t(gi)].pack(p.cin_g, ntot, t.data(), p.cin_g, true, nullptr))
      return out_of_memory(n, err);
  }
  s->bias.assign(size_t(p.groups * p.cout_g), 0.0f);
  if (b) std::memcpy(s->bias.data(), b, sizeof(float) * s->bias.size());
  *state = std::move(s);
  return true;
}

struct Scatter {
  const ConvParams* p;
  const float* cols;  // [pixel][group][tap][cout_g]
  const float* bias;
  float* out;
  int64_t h, w, oh, ow, oc;
  float lo, hi;
};

// Output rows [begin, end) of all images (row = b * oh + oy): gathers, for each output pixel,
// the taps of the input pixels that reach it.
void deconv_rows(void* user, int64_t begin, int64_t end) {
  const Scatter& s = *static_cast<const Scatter*>(user);
  const ConvParams& p = *s.p;
  const int64_t taps = p.kh * p.kw, per_pixel = p.groups * taps * p.cout_g;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t b = row / s.oh, oy = row % s.oh;
    float* orow = s.out + row * s.ow * s.oc;
    for (int64_t ox = 0; ox < s.ow; ++ox)
      std::memcpy(orow + ox * s.oc, s.bias, sizeof(float) * size_t(s.oc));
    for (int64_t i = 0; i < p.kh; ++i) {
      const int64_t ty = oy + p.pt - i * p.dh;  // = iy * sh
      if (ty < 0 || ty % p.sh != 0 || ty / p.sh >= s.h) continue;
      const int64_t iy = ty / p.sh;
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        float* o = orow + ox * s.oc;
        for (int64_t j = 0; j < p.kw; ++j) {
          const int64_t tx = ox + p.pl - j * p.dw;
          if (tx < 0 || tx % p.sw != 0 || tx / p.sw >= s.w) continue;
          const float* c = s.cols + ((b * s.h + iy) * s.w + tx / p.sw) * per_pixel;
          for (int64_t gi = 0; gi < p.groups; ++gi) {
            const float* src = c + (gi * taps + i * p.kw + j) * p.cout_g;
            float* dst = o + gi * p.cout_g;
            for (int64_t k = 0; k < p.cout_g; ++k) dst[k] += src[k];
          }
        }
      }
    }
    for (int64_t e = 0; e < s.ow * s.oc; ++e) {
      const float x = orow[e];
      orow[e] = x < s.lo ? s.lo : (x > s.hi ? s.hi : x);  // NaN kept
    }
  }
}

bool run_deconv(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
                const std::vector<float*>& ptr, std::string* err) {
  DeconvState& s = *static_cast<DeconvState*>(state);
  const ConvParams p = conv_params(n);
  const Shape& xs = shapes[n.inputs[0]];
  const Shape& os = shapes[n.outputs[0]];
  const int64_t bsz = int64_t(xs[0]), h = int64_t(xs[1]), w = int64_t(xs[2]), c = int64_t(xs[3]);
  const int64_t oh = int64_t(os[1]), ow = int64_t(os[2]), oc = int64_t(os[3]);
  const int64_t m = bsz * h * w, taps = p.kh * p.kw, per_pixel = p.groups * taps * p.cout_g;
  if (bsz * oh * ow == 0 || oc == 0) return true;
  const size_t need = size_t(m) * size_t(per_pixel);
  if (s.cols.size() < need) {
    try {
      s.cols.resize(need);
    } catch (...) {
      *err = node_name(n) + ": out of memory for the deconvolution scratch";
      return false;
    }
  }
  const float* x = ptr[n.inputs[0]];
  for (int64_t gi = 0; gi < p.groups; ++gi)
    pteron_cpu::gemm_packed(
        m, x + gi * p.cin_g, c, s.w[size_t(gi)], s.cols.data() + gi * taps * p.cout_g, per_pixel,
        -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity());
  Scatter sc{&p, s.cols.data(), s.bias.data(), ptr[n.outputs[0]], h, w, oh, ow,
             oc, n.out_min,     n.out_max};
  pteron_parallel_for(0, bsz * oh, 1, &deconv_rows, &sc);
  return true;
}

const OwnKernel kDeconv = {&prepare_deconv, &run_deconv};

// ---- batch matrix multiply ----------------------------------------------------------------

struct BmmState : NodeState {
  std::vector<PackedWeights> w;  // per B matrix (or per task)
};

struct BmmJob {
  const float *a, *b;
  float* c;
  int64_t m, k, nn, abatch, bbatch;
  bool tb;
  float lo, hi;
  PackedWeights* w;  // one per batch
  std::atomic<bool> oom{false};
  int64_t chunk_rows = 0, chunks = 1;  // bmm_rows: row chunks per matrix pair
};

void bmm_batches(void* user, int64_t begin, int64_t end) {
  BmmJob& j = *static_cast<BmmJob*>(user);
  for (int64_t bi = begin; bi < end; ++bi) {
    const float* B = j.b + (j.bbatch == 1 ? 0 : bi) * j.k * j.nn;
    PackedWeights& w = j.w[bi];
    if (!w.pack(j.k, j.nn, B, j.tb ? j.k : j.nn, j.tb, nullptr)) {
      j.oom = true;
      return;
    }
    pteron_cpu::gemm_packed_serial(j.m, j.a + (j.abatch == 1 ? 0 : bi) * j.m * j.k, j.k, w,
                                   j.c + bi * j.m * j.nn, j.nn, j.lo, j.hi);
  }
}

// Tasks (pair bi, row chunk r): rows [r * chunk_rows, ...) of pair bi against its B packed
// beforehand (j.w[0] when every pair shares one B).
void bmm_rows(void* user, int64_t begin, int64_t end) {
  const BmmJob& j = *static_cast<const BmmJob*>(user);
  for (int64_t t = begin; t < end; ++t) {
    const int64_t bi = t / j.chunks, r0 = (t % j.chunks) * j.chunk_rows;
    const int64_t rows = std::min(j.m - r0, j.chunk_rows);
    if (rows <= 0) continue;
    pteron_cpu::gemm_packed_serial(rows, j.a + (j.abatch == 1 ? 0 : bi) * j.m * j.k + r0 * j.k, j.k,
                                   j.w[j.bbatch == 1 ? 0 : bi], j.c + (bi * j.m + r0) * j.nn, j.nn,
                                   j.lo, j.hi);
  }
}

bool prepare_bmm(const Graph&, const Node&, std::unique_ptr<NodeState>* state, std::string*) {
  state->reset(new BmmState);
  return true;
}

bool run_bmm(const Node& n, NodeState* state, const std::vector<Shape>& shapes,
             const std::vector<float*>& ptr, std::string* err) {
  BmmState& s = *static_cast<BmmState*>(state);
  const Shape& as = shapes[n.inputs[0]];
  const Shape& bs = shapes[n.inputs[1]];
  const Shape& cs = shapes[n.outputs[0]];
  const bool tb = n.flags & 1u;
  const int64_t m = int64_t(as[as.size() - 2]), k = int64_t(as[as.size() - 1]);
  const int64_t nn = int64_t(cs[cs.size() - 1]);
  const int64_t batch = int64_t(numel(cs)) / std::max<int64_t>(m * nn, 1);
  if (m == 0 || nn == 0 || batch == 0) return true;
  BmmJob j;
  j.a = ptr[n.inputs[0]], j.b = ptr[n.inputs[1]], j.c = ptr[n.outputs[0]];
  j.m = m, j.k = k, j.nn = nn, j.tb = tb, j.lo = n.out_min, j.hi = n.out_max;
  j.abatch = int64_t(numel(as)) / std::max<int64_t>(m * k, 1);
  j.bbatch = int64_t(numel(bs)) / std::max<int64_t>(k * nn, 1);
  if (k == 0) j.abatch = j.bbatch = batch;  // no elements to index: any offset is 0
  const int64_t threads = std::max<int32_t>(1, pteron_parallel_threads());
  if (batch >= 2 * threads || threads == 1) {
    // One task per matrix pair: pack B, multiply on that thread.
    if (s.w.size() < size_t(batch)) s.w.resize(size_t(batch));
    j.w = s.w.data();
    pteron_parallel_for(0, batch, 1, &bmm_batches, &j);
  } else {
    // Few pairs (a transformer's heads): every B packed here (cheap next to the products),
    // then one parallel_for over pairs x row chunks of whole microkernel blocks, about 8
    // tasks per thread (one pool wake-up per node, the chunks' sizes even).
    const int64_t packs = j.bbatch == 1 ? 1 : batch;
    if (s.w.size() < size_t(packs)) s.w.resize(size_t(packs));
    for (int64_t bi = 0; bi < packs && !j.oom; ++bi)
      if (!s.w[size_t(bi)].pack(k, nn, j.b + bi * k * nn, tb ? k : nn, tb, nullptr)) j.oom = true;
    if (!j.oom) {
      const int64_t mr = pteron_cpu::gemm_rows_per_block();
      const int64_t blocks = (m + mr - 1) / mr;
      const int64_t want = std::min(blocks, (8 * threads + batch - 1) / batch);
      j.chunk_rows = ((blocks + want - 1) / want) * mr;
      j.chunks = (m + j.chunk_rows - 1) / j.chunk_rows;
      j.w = s.w.data();
      pteron_parallel_for(0, batch * j.chunks, 1, &bmm_rows, &j);
    }
  }
  if (j.oom) return out_of_memory(n, err);
  return true;
}

const OwnKernel kBatchMatMul = {&prepare_bmm, &run_bmm};

}  // namespace

const OwnKernel* linear_kernel(const Node& n, std::string* why) {
  switch (n.op) {
    case Op::FullyConnected:
      if (!epilogue_ok(n, why)) return nullptr;
      if (n.flags & ~(1u | kOwnFlagEpilogue)) {
        *why = "flags " + std::to_string(n.flags) +
               " are not understood (only bit 0, XNN_FLAG_TRANSPOSE_WEIGHTS)";
        return nullptr;
      }
      return &kFullyConnected;
    case Op::Conv2d:
      if (!epilogue_ok(n, why)) return nullptr;
      if ((n.flags & ~(kOwnFlagEpilogue | kOwnFlagPrologue | kOwnFlagResidual)) != 0) {
        *why = "flags " + std::to_string(n.flags) + " are not understood (expected 0)";
        return nullptr;
      }
      if (n.inputs.size() < 2) {
        *why = "no filter";
        return nullptr;
      }
      return &kConv2d;
    case Op::ConvTranspose2d:
      if (n.flags != 0) {
        *why = "flags " + std::to_string(n.flags) + " are not understood (expected 0)";
        return nullptr;
      }
      if (n.inputs.size() < 2) {
        *why = "no filter";
        return nullptr;
      }
      if (n.p[13] >= std::max(n.p[6], n.p[8]) || n.p[14] >= std::max(n.p[7], n.p[9])) {
        *why = "adjustment " + std::to_string(n.p[13]) + "x" + std::to_string(n.p[14]) +
               " is not below the stride or dilation";
        return nullptr;
      }
      return &kDeconv;
    case Op::BatchMatMul:
      if (n.flags & ~1u) {
        *why = "flags " + std::to_string(n.flags) + " are not understood (only bit 0, transpose B)";
        return nullptr;
      }
      return &kBatchMatMul;
    default: return nullptr;
  }
}

}  // namespace xnnpack
}  // namespace pteron
