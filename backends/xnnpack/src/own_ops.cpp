// SPDX-License-Identifier: BSD-3-Clause
// own_ops.cpp - the node types pteron runs itself between XNNPACK segments:
// those the linked XNNPACK cannot express (static transpose, concatenate,
// slice, batch matrix multiply, GELU and other unary functions, convert and
// copy). float32, dense row-major buffers in XNNPACK's own layout (NHWC for
// image tensors), shapes already inferred (graph.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "graph.h"
#include "own_ops.h"

namespace pteron {
namespace xnnpack {

bool own_supports(const Node& n, std::string* why) {
  switch (n.op) {
    case Op::StaticTranspose:
    case Op::StaticReshape:
    case Op::StaticSlice:
    case Op::Concatenate2:
    case Op::Concatenate3:
    case Op::Concatenate4:
    case Op::Concatenate5:
    case Op::Gelu:
    case Op::Tanh:
    case Op::Exp:
    case Op::Log:
    case Op::Sin:
    case Op::Cos:
    case Op::ReciprocalSquareRoot:
    case Op::Copy:
    case Op::Convert: return true;
    case Op::BatchMatMul:
      if (n.flags & ~1u) {
        *why = "batch matrix multiply flags " + std::to_string(n.flags) + " are not understood";
        return false;
      }
      return true;
    default: return false;
  }
}

namespace {

std::vector<size_t> strides_of(const Shape& s) {
  std::vector<size_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Copies a box of `in` (shape `is`, starting at `start`, extent `os`) into the
// dense `out`, or the reverse when `scatter` (used by concatenate).
void copy_box(const float* in, const Shape& is, const std::vector<size_t>& start, const Shape& os,
              float* out, bool scatter) {
  const size_t rank = is.size();
  if (rank == 0) {
    *out = *in;
    return;
  }
  const std::vector<size_t> ist = strides_of(is);
  const size_t inner = os[rank - 1];
  const size_t rows = numel(os) / (inner ? inner : 1);
  if (inner == 0) return;
  std::vector<size_t> idx(rank, 0);
  for (size_t r = 0; r < rows; ++r) {
    size_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (start[d] + idx[d]) * ist[d];
    if (scatter)
      std::memcpy(const_cast<float*>(in) + off, out + r * inner, inner * sizeof(float));
    else
      std::memcpy(out + r * inner, in + off, inner * sizeof(float));
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
}

void transpose(const float* in, const Shape& is, const std::vector<size_t>& perm, float* out) {
  const size_t rank = is.size();
  const size_t total = numel(is);
  if (rank == 0 || total == 0) {
    if (total) *out = *in;
    return;
  }
  const std::vector<size_t> ist = strides_of(is);
  Shape os(rank);
  std::vector<size_t> src_stride(rank);  // input stride of each output dim
  for (size_t d = 0; d < rank; ++d) {
    os[d] = is[perm[d]];
    src_stride[d] = ist[perm[d]];
  }
  std::vector<size_t> idx(rank, 0);
  size_t src = 0;
  const size_t inner = os[rank - 1], inner_stride = src_stride[rank - 1];
  for (size_t o = 0; o < total; o += inner) {
    for (size_t i = 0; i < inner; ++i) out[o + i] = in[src + i * inner_stride];
    for (size_t d = rank - 1; d-- > 0;) {
      src += src_stride[d];
      if (++idx[d] < os[d]) break;
      src -= src_stride[d] * os[d];
      idx[d] = 0;
    }
  }
}

void batch_matmul(const float* a, const Shape& as, const float* b, const Shape& bs, bool tb,
                  float* c, const Shape& cs) {
  const size_t m = as[as.size() - 2], k = as[as.size() - 1];
  const size_t n = cs[cs.size() - 1];
  const size_t batch = numel(cs) / std::max<size_t>(m * n, 1);
  const size_t abatch = numel(as) / std::max<size_t>(m * k, 1);
  const size_t bbatch = numel(bs) / std::max<size_t>(k * n, 1);
  // Batch dims broadcast only as "equal" or "one side has a single matrix"
  // (what the exporter emits); infer_shape has checked they broadcast.
  for (size_t bi = 0; bi < batch; ++bi) {
    const float* A = a + (abatch == 1 ? 0 : bi) * m * k;
    const float* B = b + (bbatch == 1 ? 0 : bi) * k * n;
    float* C = c + bi * m * n;
    for (size_t i = 0; i < m; ++i) {
      float* row = C + i * n;
      for (size_t j = 0; j < n; ++j) row[j] = 0.0f;
      for (size_t p = 0; p < k; ++p) {
        const float av = A[i * k + p];
        if (tb) {
          for (size_t j = 0; j < n; ++j) row[j] += av * B[j * k + p];
        } else {
          const float* brow = B + p * n;
          for (size_t j = 0; j < n; ++j) row[j] += av * brow[j];
        }
      }
    }
  }
}

template <typename F>
void unary(const float* in, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

}  // namespace

bool run_own(const Node& n, const std::vector<Shape>& shapes, const std::vector<float*>& ptr,
             std::string* err) {
  const Shape& is = shapes[n.inputs[0]];
  const Shape& os = shapes[n.outputs[0]];
  const float* in = ptr[n.inputs[0]];
  float* out = ptr[n.outputs[0]];
  const size_t count = numel(os);
  switch (n.op) {
    case Op::StaticTranspose: transpose(in, is, n.list0, out); break;
    case Op::StaticReshape:
    case Op::Copy:
    case Op::Convert:
      if (out != in) std::memmove(out, in, count * sizeof(float));
      break;
    case Op::StaticSlice: copy_box(in, is, n.list0, os, out, false); break;
    case Op::Concatenate2:
    case Op::Concatenate3:
    case Op::Concatenate4:
    case Op::Concatenate5: {
      std::vector<size_t> start(os.size(), 0);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const Shape& s = shapes[n.inputs[i]];
        // Scatter input i into the box of `out` that starts at `start`.
        copy_box(out, os, start, s, const_cast<float*>(ptr[n.inputs[i]]), true);
        start[n.p[0]] += s[n.p[0]];
      }
      break;
    }
    case Op::BatchMatMul:
      batch_matmul(in, is, ptr[n.inputs[1]], shapes[n.inputs[1]], n.flags & 1u, out, os);
      break;
    case Op::Gelu:
      unary(in, out, count,
            [](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); });
      break;
    case Op::Tanh: unary(in, out, count, [](float x) { return std::tanh(x); }); break;
    case Op::Exp: unary(in, out, count, [](float x) { return std::exp(x); }); break;
    case Op::Log: unary(in, out, count, [](float x) { return std::log(x); }); break;
    case Op::Sin: unary(in, out, count, [](float x) { return std::sin(x); }); break;
    case Op::Cos: unary(in, out, count, [](float x) { return std::cos(x); }); break;
    case Op::ReciprocalSquareRoot:
      unary(in, out, count, [](float x) { return 1.0f / std::sqrt(x); });
      break;
    default:
      *err = std::string("node ") + std::to_string(n.index) + " (" + op_name(n.op) +
             ") has no pteron implementation";
      return false;
  }
  if (n.has_range()) {
    for (size_t i = 0; i < count; ++i) out[i] = std::fmin(std::fmax(out[i], n.out_min), n.out_max);
  }
  return true;
}

}  // namespace xnnpack
}  // namespace pteron
