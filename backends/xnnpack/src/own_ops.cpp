// SPDX-License-Identifier: BSD-3-Clause
// own_ops.cpp - own_kernel() (the lookup over the kernel families of
// own_ops.h) and the layout kernels: static transpose, reshape, slice,
// concatenate, copy and convert. float32, dense row-major buffers in
// XNNPACK's own layout (NHWC for image tensors), shapes already inferred
// (graph.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "graph.h"
#include "own_ops.h"

namespace pteron {
namespace xnnpack {

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
    default:
      *err = std::string("node ") + std::to_string(n.index) + " (" + op_name(n.op) +
             ") is not a layout node";
      return false;
  }
  if (n.has_range()) apply_range(out, count, n.out_min, n.out_max);
  return true;
}

const OwnKernel kLayout = {nullptr, &run_layout};

}  // namespace

const OwnKernel* layout_kernel(const Node& n, std::string*) {
  switch (n.op) {
    case Op::StaticTranspose:
    case Op::StaticReshape:
    case Op::StaticSlice:
    case Op::Concatenate2:
    case Op::Concatenate3:
    case Op::Concatenate4:
    case Op::Concatenate5:
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

void apply_range(float* out, size_t count, float lo, float hi) {
  for (size_t i = 0; i < count; ++i) {
    const float x = out[i];
    out[i] = x < lo ? lo : (x > hi ? hi : x);  // NaN fails both tests: kept
  }
}

}  // namespace xnnpack
}  // namespace pteron
