// SPDX-License-Identifier: BSD-3-Clause
// own_ops.cpp - own_kernel() (the lookup over the kernel families of
// own_ops.h) and the layout kernels: static transpose, reshape, slice,
// concatenate, copy, convert and constant pad. float32, dense row-major
// buffers in XNNPACK's own layout (NHWC for image tensors), shapes already
// inferred (shape_inference.cpp). Each splits its work with pteron_parallel_for.
//
// Transpose first simplifies the permutation (dims of size 1 dropped,
// input dims that stay adjacent and in order merged: NCHW->NHWC of
// [N, C, H, W] becomes [N, C, H*W] -> [N, H*W, C]); then either copies
// contiguous runs (the innermost dim does not move) or transposes strips of
// kStrip input columns between the input's innermost dim and the output's
// (pteron_cpu's NhwcOps::transpose).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "graph.h"
#include "pteron_cpu/nhwc.h"
#include "own_ops.h"
#include "pteron_cpu/qgemm.h"

namespace pteron {
namespace xnnpack {

namespace {

constexpr int64_t kGrainBytes = 64 * 1024;  // the least work one parallel chunk gets
constexpr size_t kStrip = 64;               // transpose: input columns per work item
constexpr size_t kBlockB = 4096;            // transpose: output columns per work item, at most


// Items per chunk so that one chunk moves at least kGrainBytes.
size_t grain_for(size_t bytes_per_item) {
  return size_t(kGrainBytes) / std::max<size_t>(bytes_per_item, 1) + 1;
}

std::vector<size_t> strides_of(const Shape& s) {
  std::vector<size_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

void copy_floats(float* out, const float* in, size_t count) {
  if (out == in || count == 0) return;
  const size_t bytes = count * sizeof(float);
  if ((out + count <= in) || (in + count <= out)) {
    parallel(count, grain_for(sizeof(float)),
             [&](size_t b, size_t e) { std::memcpy(out + b, in + b, (e - b) * sizeof(float)); });
  } else {
    std::memmove(out, in, bytes);  // overlapping (never planned so; kept safe)
  }
}

// ---- transpose ----------------------------------------------------------------

// `is` and `perm` (output dim d is input dim perm[d]) with dims of size 1
// dropped and input dims that stay adjacent and in order merged.
void simplify_transpose(const Shape& is, const std::vector<size_t>& perm, Shape* s,
                        std::vector<size_t>* p) {
  std::vector<int> keep(is.size(), -1);
  Shape in1;
  for (size_t i = 0; i < is.size(); ++i)
    if (is[i] != 1) keep[i] = int(in1.size()), in1.push_back(is[i]);
  std::vector<size_t> p1;
  for (size_t x : perm)
    if (keep[x] >= 0) p1.push_back(size_t(keep[x]));
  // Groups of output dims whose input dims are consecutive.
  std::vector<size_t> group_of(in1.size(), 0);  // input dim -> its group
  std::vector<size_t> heads;                    // output order: first input dim of each group
  for (size_t d = 0; d < p1.size(); ++d) {
    if (d > 0 && p1[d] == p1[d - 1] + 1) {
      group_of[p1[d]] = group_of[p1[d - 1]];
      continue;
    }
    group_of[p1[d]] = heads.size();
    heads.push_back(p1[d]);
  }
  // Merged input shape: groups in input order.
  std::vector<size_t> order(heads.size());
  for (size_t gi = 0; gi < heads.size(); ++gi) order[gi] = gi;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return heads[a] < heads[b]; });
  std::vector<size_t> rank_of(heads.size());
  for (size_t r = 0; r < order.size(); ++r) rank_of[order[r]] = r;
  s->assign(heads.size(), 1);
  for (size_t i = 0; i < in1.size(); ++i) (*s)[rank_of[group_of[i]]] *= in1[i];
  p->resize(heads.size());
  for (size_t gi = 0; gi < heads.size(); ++gi) (*p)[gi] = rank_of[gi];
}

void transpose(const float* in, const Shape& shape, const std::vector<size_t>& perm, float* out) {
  const size_t total = numel(shape);
  if (total == 0) return;
  Shape is;
  std::vector<size_t> p;
  simplify_transpose(shape, perm, &is, &p);
  const size_t rank = is.size();
  bool identity = true;
  for (size_t d = 0; d < rank; ++d) identity &= p[d] == d;
  if (identity) {  // only dims of size 1 moved
    copy_floats(out, in, total);
    return;
  }
  const std::vector<size_t> ist = strides_of(is);
  Shape os(rank);
  for (size_t d = 0; d < rank; ++d) os[d] = is[p[d]];
  const std::vector<size_t> ost = strides_of(os);
  if (p[rank - 1] == rank - 1) {
    // The innermost dim stays: copy runs of is[rank-1] floats, output order.
    const size_t run = is[rank - 1], runs = total / run;
    parallel(runs, grain_for(run * sizeof(float)), [&](size_t begin, size_t end) {
      for (size_t r = begin; r < end; ++r) {
        size_t rest = r, src = 0;
        for (size_t d = rank - 1; d-- > 0;) {
          src += (rest % os[d]) * ist[p[d]];
          rest /= os[d];
        }
        std::memcpy(out + r * run, in + src, run * sizeof(float));
      }
    });
    return;
  }
  // A: the input's innermost dim (at output position qa); B: the output's
  // innermost dim (input dim p[rank-1]): two different dims.
  const size_t b_in = p[rank - 1];
  size_t qa = 0;
  while (p[qa] != rank - 1) ++qa;
  const size_t na = is[rank - 1], nb = is[b_in];
  const size_t a_out_stride = ost[qa], b_in_stride = ist[b_in];
  // The other dims, in output order: each outer index gives a base offset.
  std::vector<size_t> odims, o_in_st, o_out_st;
  for (size_t d = 0; d < rank; ++d)
    if (d != qa && d != rank - 1) {
      odims.push_back(os[d]);
      o_in_st.push_back(ist[p[d]]);
      o_out_st.push_back(ost[d]);
    }
  const size_t outer = numel(odims);
  // One item: a strip of ta input columns (A) over every B, transposed by pteron_cpu's
  // register-blocked kernel; a strip keeps ta output rows in flight, so both sides stream.
  const size_t ta = std::max<size_t>(kStrip, (kStrip * kStrip / std::max<size_t>(nb, 1) + 7) / 8 * 8);
  // B is cut in blocks of kBlockB too, so that a transpose with few A columns (an NHWC output
  // of 21 channels back to NCHW: one strip) is still split over the threads.
  const size_t a_tiles = (na + ta - 1) / ta, tb = std::min(nb, kBlockB);
  const size_t b_tiles = (nb + tb - 1) / tb;
  const size_t items = outer * a_tiles * b_tiles;
  const auto t = pteron_cpu::nhwc_ops().transpose;
  parallel(items, grain_for(ta * tb * sizeof(float)), [&](size_t begin, size_t end) {
    for (size_t it = begin; it < end; ++it) {
      const size_t bt = it % b_tiles;
      size_t o = it / b_tiles / a_tiles, at = it / b_tiles % a_tiles;
      size_t ib = 0, ob = 0;
      for (size_t k = odims.size(); k-- > 0;) {
        const size_t x = o % odims[k];
        o /= odims[k];
        ib += x * o_in_st[k];
        ob += x * o_out_st[k];
      }
      const size_t a0 = at * ta, a1 = std::min(na, a0 + ta);
      const size_t b0 = bt * tb, b1 = std::min(nb, b0 + tb);
      t(in + ib + a0 + b0 * b_in_stride, int64_t(b_in_stride), out + ob + a0 * a_out_stride + b0,
        int64_t(a_out_stride), int64_t(b1 - b0), int64_t(a1 - a0));
    }
  });
}

// ---- slice, concatenate, pad ------------------------------------------------------

// Copies the box of `in` (shape `is`) that starts at `start` and has shape
// `os` into the dense `out`: one memcpy per innermost row, rows in parallel.
void slice(const float* in, const Shape& is, const std::vector<size_t>& start, const Shape& os,
           float* out) {
  const size_t rank = is.size();
  const size_t total = numel(os);
  if (total == 0) return;
  if (rank == 0) {
    *out = *in;
    return;
  }
  const std::vector<size_t> ist = strides_of(is);
  const size_t inner = os[rank - 1];
  const size_t rows = total / inner;
  parallel(rows, grain_for(inner * sizeof(float)), [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      size_t rest = r, off = start[rank - 1];
      for (size_t d = rank - 1; d-- > 0;) {
        off += (start[d] + rest % os[d]) * ist[d];
        rest /= os[d];
      }
      std::memcpy(out + r * inner, in + off, inner * sizeof(float));
    }
  });
}

// Concatenation along `axis`: each outer index (the dims before the axis)
// moves one contiguous block per input; outer indices are split between
// threads (one parallel loop for all inputs, so small ones stay on one).
void concatenate(const Node& n, const std::vector<Shape>& shapes, const std::vector<float*>& ptr,
                 float* out, const Shape& os) {
  const size_t axis = n.p[0];
  size_t outer = 1, after = 1;
  for (size_t d = 0; d < axis; ++d) outer *= os[d];
  for (size_t d = axis + 1; d < os.size(); ++d) after *= os[d];
  const size_t out_block = os[axis] * after;
  if (out_block == 0 || outer == 0) return;
  const size_t ni = std::min(n.inputs.size(), kOwnMaxConcatInputs);
  const float* in[kOwnMaxConcatInputs];
  size_t block[kOwnMaxConcatInputs], at[kOwnMaxConcatInputs];
  size_t pos = 0;
  for (size_t i = 0; i < ni; ++i) {
    in[i] = ptr[n.inputs[i]];
    block[i] = shapes[n.inputs[i]][axis] * after;
    at[i] = pos;
    pos += block[i];
  }
  parallel(outer, grain_for(out_block * sizeof(float)), [&](size_t begin, size_t end) {
    for (size_t o = begin; o < end; ++o) {
      float* dst = out + o * out_block;
      for (size_t i = 0; i < ni; ++i)
        if (block[i] && !(n.in_place & (1u << i)))  // in place: its producer wrote it there
          std::memcpy(dst + at[i], in[i] + o * block[i], block[i] * sizeof(float));
    }
  });
}

// StaticConstantPad: out has shape is + before + after, `value` outside the
// copy of `in`. One output row (innermost dim) per item.
void constant_pad(const float* in, const Shape& is, const std::vector<size_t>& before,
                  const Shape& os, float value, float* out) {
  const size_t rank = os.size();
  const size_t total = numel(os);
  if (total == 0) return;
  if (rank == 0) {
    *out = *in;
    return;
  }
  const std::vector<size_t> ist = strides_of(is);
  const size_t inner = os[rank - 1], lead = before[rank - 1], width = is[rank - 1];
  const size_t rows = total / inner;
  parallel(rows, grain_for(inner * sizeof(float)), [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      float* row = out + r * inner;
      size_t rest = r, off = 0;
      bool inside = width != 0;
      for (size_t d = rank - 1; d-- > 0;) {
        const size_t x = rest % os[d];
        rest /= os[d];
        if (x < before[d] || x >= before[d] + is[d])
          inside = false;
        else
          off += (x - before[d]) * ist[d];
      }
      if (!inside) {
        std::fill(row, row + inner, value);
        continue;
      }
      std::fill(row, row + lead, value);
      std::memcpy(row + lead, in + off, width * sizeof(float));
      std::fill(row + lead + width, row + inner, value);
    }
  });
}

bool run_layout(const Node& n, NodeState*, const std::vector<Shape>& shapes,
                const std::vector<float*>& ptr, std::string* err) {
  const Shape& is = shapes[n.inputs[0]];
  const Shape& os = shapes[n.outputs[0]];
  const float* in = ptr[n.inputs[0]];
  float* out = ptr[n.outputs[0]];
  const size_t count = numel(os);
  switch (n.op) {
    case Op::StaticTranspose: transpose(in, is, n.list0, out); break;
    case Op::StaticReshape:
    case Op::Copy:
    case Op::Convert: copy_floats(out, in, count); break;
    case Op::StaticSlice: slice(in, is, n.list0, os, out); break;
    case Op::StaticConstantPad: constant_pad(in, is, n.list0, os, n.f, out); break;
    case Op::Concatenate2:
    case Op::Concatenate3:
    case Op::Concatenate4:
    case Op::Concatenate5: concatenate(n, shapes, ptr, out, os); break;
    default:
      *err = std::string("node ") + std::to_string(n.index) + " (" + op_name(n.op) +
             ") is not a layout node";
      return false;
  }
  if (n.has_range()) apply_range(out, count, n.out_min, n.out_max);
  return true;
}

const OwnKernel kLayout = {nullptr, &run_layout};

// ---- quantized values ---------------------------------------------------------

// round(t) half to even for |t| <= 2^22 (the float32 sum's own rounding;
// vectorises, unlike nearbyint); larger |t| are clamped anyway.
inline float round_even(float t) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (t + kMagic) - kMagic;
}

// clamp(v, lo, hi) with NaN giving lo (kernels_quantized's rule).
inline float clamp_q(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}

}  // namespace

// One token's parameters, as choose_qparams_per_token_asymmetric computes
// them (kernels_quantized, quantize.cpp), into scale, 1 / scale and zero point.
void token_qparams(const float* x, size_t n, float* scale, float* inv, float* zp) {
  float mn = 0, mx = 0;
  pteron_cpu::qgemm_kernels().minmax(x, int64_t(n), &mn, &mx);  // NaN when one is NaN
  const float lo = std::isnan(mn) ? mn : (mn < 0 ? mn : 0.0f);
  const float hi = std::isnan(mx) ? mx : (mx > 0 ? mx : 0.0f);
  float s = (hi - lo) / 255.0f;
  if (s < FLT_EPSILON) s = FLT_EPSILON;  // NaN stays NaN
  const float dmin = lo / s, dmax = hi / s;
  float z = (-128.0f + dmin + 127.0f + dmax > 0.0f) ? -128.0f - dmin : 127.0f - dmax;
  z = clamp_q(z, -128.0f, 127.0f);
  *scale = s;
  *inv = 1.0f / s;
  *zp = std::nearbyint(z);
}

void quantize_token(const float* x, size_t n, float inv, float zp, int8_t* q) {
  for (size_t i = 0; i < n; ++i)
    q[i] = int8_t(clamp_q(round_even(clamp_q(x[i] * inv + zp, -129.0f, 128.0f)), -128.0f, 127.0f));
}

void requantize(const Quant& q, float* x, const Shape& shape) {
  const size_t count = numel(shape);
  if (count == 0) return;
  if (q.kind == QuantKind::Tensor) {
    const float inv = static_cast<float>(1.0 / double(q.scale));
    const float lo = float(q.qmin - q.zero_point), hi = float(q.qmax - q.zero_point);
    const auto requant = pteron_cpu::qgemm_kernels().requant;
    parallel(count, grain_for(sizeof(float)) * 4, [&](size_t b, size_t e) {
      requant(x + b, int64_t(e - b), inv, lo, hi, q.scale);
    });
    return;
  }
  if (q.kind != QuantKind::Dynamic) return;
  size_t token = 1;
  for (size_t d = shape.size() - std::min<size_t>(q.token_dims, shape.size()); d < shape.size();
       ++d)
    token *= shape[d];
  const size_t tokens = count / token;
  parallel(tokens, grain_for(token * sizeof(float)) * 4, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) {
      float* row = x + t * token;
      float scale = 1, inv = 1, zp = 0;
      token_qparams(row, token, &scale, &inv, &zp);
      // quantize_per_token: round(x * (1 / scale) + zp), then clamp.
      for (size_t i = 0; i < token; ++i) {
        const float t2 = clamp_q(row[i] * inv + zp, -129.0f, 128.0f);
        row[i] = (clamp_q(round_even(t2), -128.0f, 127.0f) - zp) * scale;
      }
    }
  });
}

const OwnKernel* layout_kernel(const Node& n, std::string* why) {
  switch (n.op) {
    case Op::StaticConstantPad:
      if (n.inputs.size() != 1 || n.outputs.size() != 1) {
        *why = "constant pad with " + std::to_string(n.inputs.size()) + " inputs";
        return nullptr;
      }
      return &kLayout;
    case Op::Concatenate2:
    case Op::Concatenate3:
    case Op::Concatenate4:
    case Op::Concatenate5:
      if (n.inputs.empty() || n.inputs.size() > kOwnMaxConcatInputs || n.outputs.size() != 1) {
        *why = "concatenation of " + std::to_string(n.inputs.size()) + " inputs";
        return nullptr;
      }
      return &kLayout;
    case Op::StaticTranspose:
    case Op::StaticReshape:
    case Op::StaticSlice:
    case Op::Copy:
    case Op::Convert: return &kLayout;
    default: return nullptr;
  }
}

const OwnKernel* own_kernel(const Node& n, std::string* why) {
  why->clear();
  if (const OwnKernel* k = layout_kernel(n, why)) return k;
  if (!why->empty()) return nullptr;
  if (const OwnKernel* k = linear_kernel(n, why)) return k;
  if (!why->empty()) return nullptr;
  return elementwise_kernel(n, why);
}

pteron_cpu::GemmAct fused_activation(const Node& n) {
  pteron_cpu::GemmAct a;
  if (!(n.flags & kOwnFlagEpilogue)) return a;
  a.on = true;
  a.op = n.p[15] == kOwnActSigmoid ? pteron_cpu::NUnary::Sigmoid
         : n.p[15] == kOwnActSilu  ? pteron_cpu::NUnary::Silu
                                   : pteron_cpu::NUnary::Hardswish;
  return a;
}

bool epilogue_ok(const Node& n, std::string* why) {
  if (!(n.flags & kOwnFlagEpilogue) || (n.p[15] >= kOwnActSigmoid && n.p[15] <= kOwnActHardswish))
    return true;
  *why = "fused activation " + std::to_string(n.p[15]) + " is not known";
  return false;
}

void apply_range(float* out, size_t count, float lo, float hi) {
  for (size_t i = 0; i < count; ++i) {
    const float x = out[i];
    out[i] = x < lo ? lo : (x > hi ? hi : x);  // NaN fails both tests: kept
  }
}

}  // namespace xnnpack
}  // namespace pteron
