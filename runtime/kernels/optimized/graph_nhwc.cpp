// SPDX-License-Identifier: BSD-3-Clause
// graph_nhwc.cpp - kernels_optimized's graph pass (pteron/kernel.h, "graph passes"): at method
// load, each run of float32 CNN operators in a chain becomes one NHWC region, computed the way
// the XNNPACK delegate computes a lowered program, on the same pteron_cpu kernels. A program
// exported without a partitioner then runs at delegate speed. PTERON_GRAPH_OPT=0 turns it off.
//
// A run is a sequence of consecutive kernel calls (frees allowed) each of which is one of
//   aten::convolution.out               2-D, not transposed, constant filter and bias;
//   aten::_native_batch_norm_legit_no_training.out   constant statistics and affine;
//   aten::relu.out, aten::hardtanh.out, aten::clamp.out (numbers for bounds);
//   aten::sigmoid.out, aten::silu.out, aten::hardswish.out;
//   aten::add.out (alpha 1, same shapes), aten::mul.out (same shapes, or a per-channel
//     [N, C, 1, 1] factor: a squeeze-and-excitation gate);
//   aten::max_pool2d_with_indices.out   indices read by nothing;
//   aten::mean.out                      over dims 2 and 3 (global average pooling);
// on float32 4-D tensors with static shapes and contiguous dim order, with at least one
// convolution. Inside a region, tensors live in NHWC in the region's own arena; the region
// reads its inputs (NCHW, transposed once on entry) and writes, in NCHW, every value that an
// instruction outside the run or the caller can read. Values read only inside the run are never
// written to the program's memory.
//
// Rewrites inside a region (the delegate's, graph passes of backends/xnnpack/src/passes):
//  - a batch norm after a convolution whose output only it reads is folded into the filter and
//    bias: w' = w * s, b' = (b - mean) * s + beta with s = gamma / sqrt(var + eps) (double);
//  - sigmoid(x) * x (either order) is silu(x);
//  - a clamp (relu, hardtanh, clamp) and then an activation (sigmoid, silu, hardswish) after a
//    convolution are applied to its output tiles while they are in cache;
//  - an add of a dense convolution's output and a value computed before that convolution is
//    the GEMM's residual, and a clamp after it (ResNet's relu) too;
//  - a batch norm no convolution absorbs is a 1x1 depthwise convolution (a per-channel map).
// Tolerance: folding changes rounding only (float32 sums in another order, the folded filter
// rounded once): observed differences against PTERON_GRAPH_OPT=0 are within 1e-4 of the output's
// largest magnitude (tests/test_graph_opt.py).
//
// At execute the region first checks that every input still has the shape and dtype it was
// built for and every written value the shape it had; if not (a program whose shapes changed),
// it declines and the runtime runs the original instructions, so results and errors are the
// program's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "opt_util.h"
#include "pteron_cpu/conv.h"
#include "pteron_cpu/nhwc.h"

namespace {

using namespace pteron_opt;
namespace cpu = ::pteron_cpu;

constexpr float kInf = std::numeric_limits<float>::infinity();

enum class Kind {
  Conv,
  Depthwise,
  ExpandDepthwise,  // a 1x1 convolution (Node::expand) computed inside the depthwise one
  Bn,
  Clamp,
  Unary,
  Add,
  Mul,
  MulChannel,
  MaxPool,
  AvgPool,
  Mean,
  Cat,       // along channels
  Gather,    // out[pixel][c] = in[pixel][gather[c]] (a channel shuffle's split halves)
  Scalar,    // a one-element constant copied at run time (_to_dim_order_copy): known at load
  ScalarOp   // x op a Scalar node's value (add, mul, div)
};

// NHWC sizes of a region value.
struct Dims {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t numel() const { return n * h * w * c; }
  bool operator==(const Dims& o) const { return n == o.n && h == o.h && w == o.w && c == o.c; }
};

struct Node {
  Kind kind = Kind::Clamp;
  std::vector<pteron_value*> in;  // region values it reads (activations)
  pteron_value* out = nullptr;    // the value it defines
  bool alive = true;
  // Conv / Depthwise: the filter (OHWI, or [kh][kw][c] for Depthwise) and bias, folded.
  cpu::ConvNhwcShape cs;
  std::vector<float> filter, bias;
  float lo = -kInf, hi = kInf;  // the output range (Conv, Depthwise, Add, Clamp)
  bool act = false;
  cpu::NUnary act_op = cpu::NUnary::Abs;  // Unary's function, or a fused activation
  pteron_value* res = nullptr;            // Conv: the residual added after the activation
  float res_lo = -kInf, res_hi = kInf;
  // Bn before folding: per-channel scale and shift.
  std::vector<double> scale, shift;
  cpu::Pool2d pool;
  // Scalar: its value; ScalarOp: the operator, and the Scalar node's value (scalar_src).
  float scalar = 0.0f;
  cpu::NBinary scalar_op = cpu::NBinary::Add;
  pteron_value* scalar_src = nullptr;
  // Gather: the input channel of each output channel. out_view: `out` is a 5-D tensor
  // ([N, C/g, g, H, W], a channel shuffle's) whose storage later instructions read as the
  // [N, C, H, W] tensor out_dims.
  std::vector<int64_t> gather;
  bool out_view = false;
  Dims out_dims;
  // ExpandDepthwise: the 1x1 convolution whose output only this node reads.
  std::shared_ptr<Node> expand;
  // Conv (1x1, direct): a per-channel map of its input (a pre-activation batch norm and its
  // clamp, DenseNet's), applied to the GEMM's rows (pteron_cpu::GemmPre).
  std::vector<float> pre_scale, pre_shift;
  float pre_lo = -kInf, pre_hi = kInf;
  // The region's slots of in, out and res (Builder::place), so execute looks nothing up.
  std::vector<size_t> in_slot;
  size_t out_slot = 0, res_slot = 0;
  // Execution.
  cpu::ConvNhwc conv;
};

// ---- reading instructions ------------------------------------------------------------------

bool is_op(const char* name, const char* ov, const char* want_name, const char* want_ov) {
  return name && ov && std::strcmp(name, want_name) == 0 && std::strcmp(ov, want_ov) == 0;
}

pteron_tensor* tensor_of(pteron_value* v) {
  return v && v->tag == PTERON_VALUE_TENSOR ? v->u.tensor : nullptr;
}

bool contiguous(const pteron_tensor* t) {
  for (int32_t d = 0; d < t->dim; ++d)
    if (t->dim_order[d] != d) return false;
  return true;
}

// A float32 activation tensor of rank 4 (or `rank2_ok` and rank 2) with static shape.
bool activation(const pteron_graph* g, pteron_value* v, bool rank2_ok = false) {
  const pteron_tensor* t = tensor_of(v);
  if (!t || t->dtype != PTERON_DTYPE_FLOAT32 || !contiguous(t)) return false;
  if (t->dim != 4 && !(rank2_ok && t->dim == 2)) return false;
  const uint32_t f = pteron_graph_value_flags(g, v);
  return !(f & (PTERON_GRAPH_DYNAMIC | PTERON_GRAPH_CONSTANT));
}

Dims dims_of(const pteron_tensor* t) {
  if (t->dim == 2) return {t->sizes[0], 1, 1, t->sizes[1]};
  return {t->sizes[0], t->sizes[2], t->sizes[3], t->sizes[1]};
}

const float* constant_floats(const pteron_graph* g, pteron_value* v, int64_t numel) {
  const pteron_tensor* t = tensor_of(v);
  if (!t || t->dtype != PTERON_DTYPE_FLOAT32 || !t->data || !contiguous(t)) return nullptr;
  if (!(pteron_graph_value_flags(g, v) & PTERON_GRAPH_CONSTANT)) return nullptr;
  int64_t n = 1;
  for (int32_t d = 0; d < t->dim; ++d) n *= t->sizes[d];
  return n == numel ? static_cast<const float*>(t->data) : nullptr;
}

// A fixed int list of `n` items (one item repeated when the list has one).
bool int_pair(const pteron_graph* g, pteron_value* v, int64_t* out, size_t n = 2) {
  if (!v || v->tag != PTERON_VALUE_INT_LIST || (pteron_graph_value_flags(g, v) & PTERON_GRAPH_COMPUTED))
    return false;
  const size_t k = v->u.int_list.size;
  if (k != n && k != 1) return false;
  for (size_t i = 0; i < n; ++i) out[i] = v->u.int_list.data[k == 1 ? 0 : i];
  return true;
}

bool number(const pteron_value* v, double* out) {
  if (!v) return false;
  if (v->tag == PTERON_VALUE_INT) *out = double(v->u.i);
  else if (v->tag == PTERON_VALUE_DOUBLE) *out = v->u.d;
  else return false;
  return true;
}

bool read_conv(const pteron_graph* g, size_t i, Node* nd) {
  if (pteron_graph_num_args(g, i) < 10) return false;
  pteron_value* a[10];
  for (size_t j = 0; j < 10; ++j) a[j] = pteron_graph_arg(g, i, j);
  if (!activation(g, a[0]) || !activation(g, a[9])) return false;
  const pteron_tensor* x = tensor_of(a[0]);
  const pteron_tensor* w = tensor_of(a[1]);
  const pteron_tensor* y = tensor_of(a[9]);
  if (!w || w->dim != 4 || a[6]->tag != PTERON_VALUE_BOOL || a[6]->u.b) return false;
  if (a[8]->tag != PTERON_VALUE_INT || a[8]->u.i < 1) return false;
  const int64_t groups = a[8]->u.i, cout = w->sizes[0], cin_g = w->sizes[1];
  const int64_t kh = w->sizes[2], kw = w->sizes[3];
  if (x->sizes[1] != groups * cin_g || cout % groups != 0 || y->sizes[1] != cout ||
      y->sizes[0] != x->sizes[0])
    return false;
  int64_t st[2], pad[2], dil[2];
  if (!int_pair(g, a[3], st) || !int_pair(g, a[4], pad) || !int_pair(g, a[5], dil)) return false;
  for (int k = 0; k < 2; ++k)
    if (st[k] < 1 || pad[k] < 0 || dil[k] < 1) return false;
  // The output's sizes must be PyTorch's for these parameters.
  const int64_t oh = (x->sizes[2] + 2 * pad[0] - dil[0] * (kh - 1) - 1) / st[0] + 1;
  const int64_t ow = (x->sizes[3] + 2 * pad[1] - dil[1] * (kw - 1) - 1) / st[1] + 1;
  if (oh != y->sizes[2] || ow != y->sizes[3] || oh < 1 || ow < 1) return false;
  const float* wd = constant_floats(g, a[1], cout * cin_g * kh * kw);
  const float* bd = nullptr;
  if (a[2] && a[2]->tag != PTERON_VALUE_NONE) {
    bd = constant_floats(g, a[2], cout);
    if (!bd) return false;
  }
  if (!wd) return false;
  nd->in = {a[0]};
  nd->out = a[9];
  cpu::ConvNhwcShape& s = nd->cs;
  s.kh = kh, s.kw = kw, s.sh = st[0], s.sw = st[1], s.dh = dil[0], s.dw = dil[1];
  s.pt = pad[0], s.pl = pad[1], s.groups = groups, s.cin_g = cin_g, s.cout_g = cout / groups;
  nd->bias.assign(size_t(cout), 0.0f);
  if (bd) std::copy(bd, bd + cout, nd->bias.begin());
  nd->filter.resize(size_t(cout * cin_g * kh * kw));
  const bool depthwise = groups > 1 && cin_g == 1 && cout == groups;
  if (depthwise && kh > cpu::kMaxWindowRows) return false;  // the row driver's limit
  if (depthwise) {  // [kh][kw][c]
    nd->kind = Kind::Depthwise;
    for (int64_t c = 0; c < cout; ++c)
      for (int64_t t = 0; t < kh * kw; ++t) nd->filter[size_t(t * cout + c)] = wd[c * kh * kw + t];
  } else {  // OIHW -> OHWI
    nd->kind = Kind::Conv;
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t ci = 0; ci < cin_g; ++ci)
        for (int64_t t = 0; t < kh * kw; ++t)
          nd->filter[size_t((o * kh * kw + t) * cin_g + ci)] = wd[(o * cin_g + ci) * kh * kw + t];
  }
  return true;
}

bool read_bn(const pteron_graph* g, size_t i, Node* nd, std::vector<pteron_value*>* dead) {
  if (pteron_graph_num_args(g, i) < 10) return false;
  pteron_value* a[10];
  for (size_t j = 0; j < 10; ++j) a[j] = pteron_graph_arg(g, i, j);
  if (!activation(g, a[0]) || !activation(g, a[7])) return false;
  const int64_t c = tensor_of(a[0])->sizes[1];
  if (!(dims_of(tensor_of(a[0])) == dims_of(tensor_of(a[7])))) return false;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  if (a[1]->tag != PTERON_VALUE_NONE && !(gamma = constant_floats(g, a[1], c))) return false;
  if (a[2]->tag != PTERON_VALUE_NONE && !(beta = constant_floats(g, a[2], c))) return false;
  const float* mean = constant_floats(g, a[3], c);
  const float* var = constant_floats(g, a[4], c);
  double eps = 0.0;
  if (!mean || !var || !number(a[6], &eps)) return false;
  nd->kind = Kind::Bn;
  nd->in = {a[0]};
  nd->out = a[7];
  nd->scale.resize(size_t(c));
  nd->shift.resize(size_t(c));
  for (int64_t k = 0; k < c; ++k) {
    const double s = (gamma ? double(gamma[k]) : 1.0) / std::sqrt(double(var[k]) + eps);
    nd->scale[size_t(k)] = s;
    nd->shift[size_t(k)] = (beta ? double(beta[k]) : 0.0) - double(mean[k]) * s;
    // A variance of 0 with eps 0 (or a NaN statistic): no finite map; the kernel's own
    // arithmetic makes its infinities and NaNs.
    if (!std::isfinite(nd->scale[size_t(k)]) || !std::isfinite(nd->shift[size_t(k)]) ||
        !std::isfinite(float(s)))
      return false;
  }
  dead->push_back(a[8]);
  dead->push_back(a[9]);
  return true;
}

bool read_pool(const pteron_graph* g, size_t i, Node* nd, std::vector<pteron_value*>* dead) {
  if (pteron_graph_num_args(g, i) < 8) return false;
  pteron_value* a[8];
  for (size_t j = 0; j < 8; ++j) a[j] = pteron_graph_arg(g, i, j);
  if (!activation(g, a[0]) || !activation(g, a[6])) return false;
  int64_t k[2], st[2], pad[2], dil[2];
  if (!int_pair(g, a[1], k)) return false;
  if (a[2]->tag == PTERON_VALUE_INT_LIST && a[2]->u.int_list.size == 0) {
    st[0] = k[0], st[1] = k[1];  // stride defaults to the window
  } else if (!int_pair(g, a[2], st)) {
    return false;
  }
  if (!int_pair(g, a[3], pad) || !int_pair(g, a[4], dil) || a[5]->tag != PTERON_VALUE_BOOL)
    return false;
  const Dims x = dims_of(tensor_of(a[0])), y = dims_of(tensor_of(a[6]));
  if (x.n != y.n || x.c != y.c || pad[0] * 2 > k[0] || pad[1] * 2 > k[1] ||
      k[0] > cpu::kMaxWindowRows)
    return false;
  nd->kind = Kind::MaxPool;
  nd->in = {a[0]};
  nd->out = a[6];
  cpu::Pool2d& p = nd->pool;
  p.n = x.n, p.ih = x.h, p.iw = x.w, p.c = x.c, p.oh = y.h, p.ow = y.w;
  p.kh = k[0], p.kw = k[1], p.sh = st[0], p.sw = st[1], p.dh = dil[0], p.dw = dil[1];
  p.pt = pad[0], p.pl = pad[1], p.lo = -kInf, p.hi = kInf;
  // PyTorch's output size (ceil_mode: a last window must start inside the input or the left
  // padding).
  for (int d = 0; d < 2; ++d) {
    const int64_t in = d ? x.w : x.h, out = d ? y.w : y.h;
    const int64_t span = in + 2 * pad[d] - dil[d] * (k[d] - 1) - 1;
    if (span < 0 || st[d] < 1) return false;
    int64_t o = (a[5]->u.b ? (span + st[d] - 1) / st[d] : span / st[d]) + 1;
    if (a[5]->u.b && (o - 1) * st[d] >= in + pad[d]) --o;
    if (o != out) return false;
  }
  dead->push_back(a[7]);
  return true;
}

// avg_pool2d.out(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override, out): without padding or a divisor, every window inside the input.
bool read_avg_pool(const pteron_graph* g, size_t i, Node* nd) {
  if (pteron_graph_num_args(g, i) < 8) return false;
  pteron_value* a[8];
  for (size_t j = 0; j < 8; ++j) a[j] = pteron_graph_arg(g, i, j);
  if (!activation(g, a[0]) || !activation(g, a[7]) || a[6]->tag != PTERON_VALUE_NONE) return false;
  int64_t k[2], st[2], pad[2];
  if (!int_pair(g, a[1], k)) return false;
  if (a[2]->tag == PTERON_VALUE_INT_LIST && a[2]->u.int_list.size == 0) {
    st[0] = k[0], st[1] = k[1];
  } else if (!int_pair(g, a[2], st)) {
    return false;
  }
  if (!int_pair(g, a[3], pad) || pad[0] != 0 || pad[1] != 0) return false;
  const Dims x = dims_of(tensor_of(a[0])), y = dims_of(tensor_of(a[7]));
  if (x.n != y.n || x.c != y.c || k[0] < 1 || k[1] < 1 || st[0] < 1 || st[1] < 1 ||
      k[0] > cpu::kMaxWindowRows)
    return false;
  if (x.h < k[0] || x.w < k[1] || y.h != (x.h - k[0]) / st[0] + 1 ||
      y.w != (x.w - k[1]) / st[1] + 1)
    return false;  // (ceil mode with a partial window: the kernel's)
  nd->kind = Kind::AvgPool;
  nd->in = {a[0]};
  nd->out = a[7];
  cpu::Pool2d& p = nd->pool;
  p.n = x.n, p.ih = x.h, p.iw = x.w, p.c = x.c, p.oh = y.h, p.ow = y.w;
  p.kh = k[0], p.kw = k[1], p.sh = st[0], p.sw = st[1], p.lo = -kInf, p.hi = kInf;
  return true;
}

// cat.out(tensors, dim, out) along the channels of 4-D tensors.
bool read_cat(const pteron_graph* g, size_t i, Node* nd) {
  if (pteron_graph_num_args(g, i) < 3) return false;
  pteron_value* list = pteron_graph_arg(g, i, 0);
  pteron_value* dim = pteron_graph_arg(g, i, 1);
  pteron_value* out = pteron_graph_arg(g, i, 2);
  if (!list || list->tag != PTERON_VALUE_TENSOR_LIST || list->u.tensor_list.size == 0 ||
      dim->tag != PTERON_VALUE_INT || (dim->u.i != 1 && dim->u.i != -3) || !activation(g, out))
    return false;
  const Dims y = dims_of(tensor_of(out));
  int64_t c = 0;
  for (size_t j = 0; j < list->u.tensor_list.size; ++j) {
    pteron_value* v = pteron_graph_list_item(g, list, j);
    if (!activation(g, v)) return false;
    const Dims x = dims_of(tensor_of(v));
    if (x.n != y.n || x.h != y.h || x.w != y.w) return false;
    for (const pteron_value* seen : nd->in)
      if (seen == v) return false;  // one value twice: its slot is read twice, keep it simple
    nd->in.push_back(v);
    c += x.c;
  }
  if (c != y.c) return false;
  nd->kind = Kind::Cat;
  nd->out = out;
  return true;
}

bool read_mean(const pteron_graph* g, size_t i, Node* nd) {
  if (pteron_graph_num_args(g, i) < 5) return false;
  pteron_value* a[5];
  for (size_t j = 0; j < 5; ++j) a[j] = pteron_graph_arg(g, i, j);
  if (!activation(g, a[0]) || !activation(g, a[4], true)) return false;
  if (a[1]->tag != PTERON_VALUE_INT_LIST || a[1]->u.int_list.size != 2 ||
      (pteron_graph_value_flags(g, a[1]) & PTERON_GRAPH_COMPUTED))
    return false;
  bool seen[4] = {false, false, false, false};
  for (size_t k = 0; k < 2; ++k) {
    int64_t d = a[1]->u.int_list.data[k];
    if (d < 0) d += 4;
    if (d < 0 || d > 3) return false;
    seen[d] = true;
  }
  if (!seen[2] || !seen[3]) return false;
  if (a[3]->tag != PTERON_VALUE_NONE &&
      !(a[3]->tag == PTERON_VALUE_INT && a[3]->u.i == PTERON_DTYPE_FLOAT32))
    return false;
  const Dims x = dims_of(tensor_of(a[0])), y = dims_of(tensor_of(a[4]));
  if (!(y == Dims{x.n, 1, 1, x.c}) || x.h * x.w == 0) return false;
  nd->kind = Kind::Mean;
  nd->in = {a[0]};
  nd->out = a[4];
  return true;
}

// A one-element float32 tensor of static shape (rank 0 or all sizes 1).
bool one_element(const pteron_graph* g, pteron_value* v) {
  const pteron_tensor* t = tensor_of(v);
  if (!t || t->dtype != PTERON_DTYPE_FLOAT32 || (pteron_graph_value_flags(g, v) & PTERON_GRAPH_DYNAMIC))
    return false;
  for (int32_t d = 0; d < t->dim; ++d)
    if (t->sizes[d] != 1) return false;
  return true;
}

// dim_order_ops::_to_dim_order_copy.out(self, non_blocking, dim_order, out) of a one-element
// float32 constant (the exporter's way of placing a number such as hardswish's 3 and 6).
bool read_scalar_copy(const pteron_graph* g, size_t i, Node* nd) {
  if (pteron_graph_num_args(g, i) < 4) return false;
  pteron_value* x = pteron_graph_arg(g, i, 0);
  pteron_value* out = pteron_graph_arg(g, i, 3);
  const pteron_tensor* t = tensor_of(x);
  if (!t || !t->data || !one_element(g, out) ||
      !(pteron_graph_value_flags(g, x) & PTERON_GRAPH_CONSTANT))
    return false;
  for (int32_t d = 0; d < t->dim; ++d)
    if (t->sizes[d] != 1) return false;
  // The source's dtype (the exporter keeps Python numbers as int64 or float64 constants),
  // rounded to float32 as the copy rounds it.
  switch (t->dtype) {
    case PTERON_DTYPE_FLOAT32: nd->scalar = *static_cast<const float*>(t->data); break;
    case PTERON_DTYPE_FLOAT64: nd->scalar = float(*static_cast<const double*>(t->data)); break;
    case PTERON_DTYPE_INT64: nd->scalar = float(*static_cast<const int64_t*>(t->data)); break;
    case PTERON_DTYPE_INT32: nd->scalar = float(*static_cast<const int32_t*>(t->data)); break;
    default: return false;
  }
  nd->kind = Kind::Scalar;
  nd->out = out;
  return true;
}

// add / mul / div of an activation and a one-element tensor (resolved against the run's
// Scalar nodes by the caller): x op s; add with alpha 1 only.
bool read_scalar_op(const pteron_graph* g, size_t i, cpu::NBinary op, Node* nd) {
  const size_t na = pteron_graph_num_args(g, i);
  const size_t out_at = op == cpu::NBinary::Add ? 3 : 2;
  if (na <= out_at) return false;
  pteron_value* a = pteron_graph_arg(g, i, 0);
  pteron_value* b = pteron_graph_arg(g, i, 1);
  pteron_value* out = pteron_graph_arg(g, i, out_at);
  if (op == cpu::NBinary::Add) {
    double alpha = 0.0;
    if (!number(pteron_graph_arg(g, i, 2), &alpha) || alpha != 1.0) return false;
  }
  if (!activation(g, out)) return false;
  pteron_value* x = a;
  pteron_value* sc = b;
  if (!(activation(g, a) && one_element(g, b))) {
    if (op == cpu::NBinary::Div || !(activation(g, b) && one_element(g, a))) return false;
    x = b, sc = a;  // s + x, s * x
  }
  if (!(dims_of(tensor_of(x)) == dims_of(tensor_of(out)))) return false;
  nd->kind = Kind::ScalarOp;
  nd->scalar_op = op;
  nd->in = {x};
  nd->scalar_src = sc;
  nd->out = out;
  return true;
}

bool same_storage(const pteron_tensor* a, const pteron_tensor* b) {
  if (!a || !b || a->data != b->data || !a->data) return false;
  int64_t na = 1, nb = 1;
  for (int32_t d = 0; d < a->dim; ++d) na *= a->sizes[d];
  for (int32_t d = 0; d < b->dim; ++d) nb *= b->sizes[d];
  return na == nb && na > 0;
}

bool list_is(const pteron_value* v, std::initializer_list<int64_t> want) {
  if (!v || v->tag != PTERON_VALUE_INT_LIST || v->u.int_list.size != want.size()) return false;
  size_t k = 0;
  for (int64_t w : want)
    if (v->u.int_list.data[k++] != w) return false;
  return true;
}

// ShuffleNet's channel shuffle and split, three instructions on views the memory plan made:
//   permute_copy(view [N, g, C/g, H, W] of x, [0, 2, 1, 3, 4]) -> t
//   _clone_dim_order(t, contiguous) -> u
//   split_with_sizes_copy(view [N, C, H, W] of u, sizes, 1) -> outputs
// as one Gather node per output (x: a value an earlier node of the run wrote); without the
// split (a stage's last block), one Gather node writing u, which later nodes read through its
// [N, C, H, W] view. Appends the nodes, the values only they may read to *dead and the
// instructions taken to *consumed; false when the instructions are not that.
bool read_shuffle(const pteron_graph* g, size_t i, const std::vector<Node>& run,
                  std::vector<Node>* out, std::vector<pteron_value*>* dead, size_t* consumed) {
  const char* ov = nullptr;
  const char* name = pteron_graph_operator(g, i, &ov);
  if (!is_op(name, ov, "aten::permute_copy", "out") || pteron_graph_size(g) < i + 3 ||
      pteron_graph_num_args(g, i) < 3)
    return false;
  pteron_value* view = pteron_graph_arg(g, i, 0);
  pteron_value* t = pteron_graph_arg(g, i, 2);
  const pteron_tensor* vt = tensor_of(view);
  if (!vt || vt->dim != 5 || vt->dtype != PTERON_DTYPE_FLOAT32 || !contiguous(vt) ||
      !list_is(pteron_graph_arg(g, i, 1), {0, 2, 1, 3, 4}) || !tensor_of(t))
    return false;
  pteron_value* x = nullptr;
  for (const Node& p : run)
    if (p.kind != Kind::Scalar && same_storage(tensor_of(p.out), vt)) x = p.out;
  if (!x || !activation(g, x)) return false;
  const Dims xd = dims_of(tensor_of(x));
  const int64_t groups = vt->sizes[1], per = vt->sizes[2];
  if (vt->sizes[0] != xd.n || groups * per != xd.c || vt->sizes[3] != xd.h || vt->sizes[4] != xd.w)
    return false;
  name = pteron_graph_operator(g, i + 1, &ov);
  if (!is_op(name, ov, "dim_order_ops::_clone_dim_order", "out") ||
      pteron_graph_num_args(g, i + 1) < 4 || pteron_graph_arg(g, i + 1, 0) != t ||
      !list_is(pteron_graph_arg(g, i + 1, 2), {0, 1, 2, 3, 4}))
    return false;
  pteron_value* u = pteron_graph_arg(g, i + 1, 3);
  const pteron_tensor* ut = tensor_of(u);
  if (!ut || ut->dim != 5 || ut->dtype != PTERON_DTYPE_FLOAT32 || !contiguous(ut) ||
      ut->sizes[1] != per || ut->sizes[2] != groups)
    return false;
  name = pteron_graph_operator(g, i + 2, &ov);
  if (!is_op(name, ov, "aten::split_with_sizes_copy", "out") ||
      pteron_graph_num_args(g, i + 2) < 4) {
    // No split: later instructions read u's storage as [N, C, H, W].
    Node nd;
    nd.kind = Kind::Gather;
    nd.in = {x};
    nd.out = u;
    nd.out_view = true;
    nd.out_dims = xd;
    for (int64_t sh = 0; sh < xd.c; ++sh) nd.gather.push_back((sh % groups) * per + sh / groups);
    out->push_back(std::move(nd));
    dead->push_back(t);
    *consumed = 2;
    return true;
  }
  pteron_value* uview = pteron_graph_arg(g, i + 2, 0);
  pteron_value* sizes = pteron_graph_arg(g, i + 2, 1);
  pteron_value* dim = pteron_graph_arg(g, i + 2, 2);
  pteron_value* list = pteron_graph_arg(g, i + 2, 3);
  if (!same_storage(tensor_of(u), tensor_of(uview)) || !activation(g, uview) ||
      !(dims_of(tensor_of(uview)) == xd) || !dim || dim->tag != PTERON_VALUE_INT ||
      (dim->u.i != 1 && dim->u.i != -3) || !sizes || sizes->tag != PTERON_VALUE_INT_LIST ||
      !list || list->tag != PTERON_VALUE_TENSOR_LIST ||
      list->u.tensor_list.size != sizes->u.int_list.size)
    return false;
  int64_t offset = 0;
  std::vector<Node> nodes;
  for (size_t k = 0; k < list->u.tensor_list.size; ++k) {
    pteron_value* o = pteron_graph_list_item(g, list, k);
    const int64_t sk = sizes->u.int_list.data[k];
    if (!activation(g, o) || sk < 0) return false;
    const Dims od = dims_of(tensor_of(o));
    if (od.n != xd.n || od.h != xd.h || od.w != xd.w || od.c != sk || offset + sk > xd.c)
      return false;
    Node nd;
    nd.kind = Kind::Gather;
    nd.in = {x};
    nd.out = o;
    // Shuffled channel s = i * groups + gi holds x's channel gi * per + i.
    for (int64_t c = 0; c < sk; ++c) {
      const int64_t sh = offset + c;
      nd.gather.push_back((sh % groups) * per + sh / groups);
    }
    nodes.push_back(std::move(nd));
    offset += sk;
  }
  if (offset != xd.c) return false;
  for (Node& nd : nodes) out->push_back(std::move(nd));
  dead->push_back(t);
  dead->push_back(u);
  *consumed = 3;
  return true;
}

// One instruction as a node; false when it cannot be part of a region.
bool read_node(const pteron_graph* g, size_t i, Node* nd, std::vector<pteron_value*>* dead) {
  const char* ov = nullptr;
  const char* name = pteron_graph_operator(g, i, &ov);
  const size_t na = pteron_graph_num_args(g, i);
  auto arg = [&](size_t j) { return pteron_graph_arg(g, i, j); };
  if (is_op(name, ov, "aten::convolution", "out")) return read_conv(g, i, nd);
  if (is_op(name, ov, "aten::_native_batch_norm_legit_no_training", "out"))
    return read_bn(g, i, nd, dead);
  if (is_op(name, ov, "aten::max_pool2d_with_indices", "out")) return read_pool(g, i, nd, dead);
  if (is_op(name, ov, "aten::mean", "out")) return read_mean(g, i, nd);
  if (is_op(name, ov, "aten::avg_pool2d", "out")) return read_avg_pool(g, i, nd);
  if (is_op(name, ov, "aten::cat", "out")) return read_cat(g, i, nd);
  if (is_op(name, ov, "dim_order_ops::_to_dim_order_copy", "out"))
    return read_scalar_copy(g, i, nd);
  if (is_op(name, ov, "aten::div", "out")) return read_scalar_op(g, i, cpu::NBinary::Div, nd);
  const bool unary = is_op(name, ov, "aten::relu", "out") || is_op(name, ov, "aten::sigmoid", "out") ||
                     is_op(name, ov, "aten::silu", "out") || is_op(name, ov, "aten::hardswish", "out");
  if (unary) {
    if (na < 2 || !activation(g, arg(0)) || !activation(g, arg(1))) return false;
    if (!(dims_of(tensor_of(arg(0))) == dims_of(tensor_of(arg(1))))) return false;
    nd->in = {arg(0)};
    nd->out = arg(1);
    if (std::strcmp(name, "aten::relu") == 0) {
      nd->kind = Kind::Clamp;
      nd->lo = 0.0f;
    } else {
      nd->kind = Kind::Unary;
      nd->act_op = std::strcmp(name, "aten::sigmoid") == 0 ? cpu::NUnary::Sigmoid
                   : std::strcmp(name, "aten::silu") == 0  ? cpu::NUnary::Silu
                                                           : cpu::NUnary::Hardswish;
    }
    return true;
  }
  if (is_op(name, ov, "aten::hardtanh", "out") || is_op(name, ov, "aten::clamp", "out")) {
    if (na < 4 || !activation(g, arg(0)) || !activation(g, arg(3))) return false;
    if (!(dims_of(tensor_of(arg(0))) == dims_of(tensor_of(arg(3))))) return false;
    double lo = -INFINITY, hi = INFINITY;
    if (arg(1)->tag != PTERON_VALUE_NONE && !number(arg(1), &lo)) return false;
    if (arg(2)->tag != PTERON_VALUE_NONE && !number(arg(2), &hi)) return false;
    if (!(lo <= hi)) return false;  // PyTorch's min > max rule: leave it to the kernel
    nd->kind = Kind::Clamp;
    nd->lo = float(lo), nd->hi = float(hi);
    nd->in = {arg(0)};
    nd->out = arg(3);
    return true;
  }
  if (is_op(name, ov, "aten::add", "out") && read_scalar_op(g, i, cpu::NBinary::Add, nd))
    return true;
  if (is_op(name, ov, "aten::mul", "out") && read_scalar_op(g, i, cpu::NBinary::Mul, nd))
    return true;
  if (is_op(name, ov, "aten::add", "out")) {
    double alpha = 0.0;
    if (na < 4 || !number(arg(2), &alpha) || alpha != 1.0) return false;
    if (!activation(g, arg(0)) || !activation(g, arg(1)) || !activation(g, arg(3))) return false;
    const Dims y = dims_of(tensor_of(arg(3)));
    if (!(dims_of(tensor_of(arg(0))) == y) || !(dims_of(tensor_of(arg(1))) == y)) return false;
    nd->kind = Kind::Add;
    nd->in = {arg(0), arg(1)};
    nd->out = arg(3);
    return true;
  }
  if (is_op(name, ov, "aten::mul", "out")) {
    if (na < 3 || !activation(g, arg(0)) || !activation(g, arg(1)) || !activation(g, arg(2)))
      return false;
    const Dims a = dims_of(tensor_of(arg(0))), b = dims_of(tensor_of(arg(1)));
    const Dims y = dims_of(tensor_of(arg(2)));
    nd->out = arg(2);
    if (a == y && b == y) {
      nd->kind = Kind::Mul;
      nd->in = {arg(0), arg(1)};
      return true;
    }
    // One side a per-channel factor [N, C, 1, 1]; the gate goes second.
    const Dims gate{y.n, 1, 1, y.c};
    if (a == y && b == gate) nd->in = {arg(0), arg(1)};
    else if (b == y && a == gate) nd->in = {arg(1), arg(0)};
    else return false;
    nd->kind = Kind::MulChannel;
    return true;
  }
  return false;
}

// ---- the region --------------------------------------------------------------------------

struct Slot {
  pteron_value* v = nullptr;
  Dims dims;
  size_t offset = 0;  // floats, in the arena
};

struct Region {
  std::vector<Node> nodes;                  // alive ones, in order
  std::vector<Slot> slots;
  std::map<const pteron_value*, size_t> slot_of;
  std::vector<size_t> imports;              // slots read from the program (NCHW) on entry
  std::vector<size_t> exports;              // slots written to the program (NCHW) on exit
  std::vector<float> arena;
  std::vector<float> zeros;                 // depthwise padding rows
  std::vector<float> partial;               // global average pooling's parts
  float* at(size_t slot) { return arena.data() + slots[slot].offset; }
  const Dims& dims(const pteron_value* v) { return slots[slot_of.at(v)].dims; }
};

void destroy_region(void* p) { delete static_cast<Region*>(p); }

bool same_nchw(const pteron_tensor* t, const Dims& d) {
  if (t->dtype != PTERON_DTYPE_FLOAT32 || !t->data) return false;
  if (t->dim == 5)  // a channel shuffle's [N, C/g, g, H, W]: NCHW bytes
    return t->sizes[0] == d.n && t->sizes[1] * t->sizes[2] == d.c && t->sizes[3] == d.h &&
           t->sizes[4] == d.w;
  if (t->dim == 2) return t->sizes[0] == d.n && t->sizes[1] == d.c && d.h == 1 && d.w == 1;
  return t->dim == 4 && t->sizes[0] == d.n && t->sizes[1] == d.c && t->sizes[2] == d.h &&
         t->sizes[3] == d.w;
}

struct CatJob {
  Region* r;
  const Node* nd;
  float* out;
  int64_t c;
};

// Pixels [b, e) of a concatenation along channels: each input's channels at its offset.
void cat_pixels(void* user, int64_t b, int64_t e) {
  const CatJob& j = *static_cast<const CatJob*>(user);
  int64_t off = 0;
  for (size_t s : j.nd->in_slot) {
    const int64_t ci = j.r->slots[s].dims.c;
    const float* src = j.r->at(s);
    for (int64_t p = b; p < e; ++p)
      std::memcpy(j.out + p * j.c + off, src + p * ci, sizeof(float) * size_t(ci));
    off += ci;
  }
}

struct GatherJob {
  const float* in;
  float* out;
  int64_t ic, oc;
  const int64_t* from;
};

void gather_pixels(void* user, int64_t b, int64_t e) {
  const GatherJob& j = *static_cast<const GatherJob*>(user);
  for (int64_t p = b; p < e; ++p) {
    const float* src = j.in + p * j.ic;
    float* dst = j.out + p * j.oc;
    for (int64_t c = 0; c < j.oc; ++c) dst[c] = src[j.from[c]];
  }
}

// A node's name in the profile (one event per node while the method is profiled).
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Conv: return "nhwc convolution";
    case Kind::Depthwise: return "nhwc depthwise convolution";
    case Kind::ExpandDepthwise: return "nhwc 1x1 expansion + depthwise convolution";
    case Kind::Bn: return "nhwc batch norm";
    case Kind::Clamp: return "nhwc clamp";
    case Kind::Unary: return "nhwc activation";
    case Kind::Add: return "nhwc add";
    case Kind::Mul:
    case Kind::MulChannel: return "nhwc multiply";
    case Kind::MaxPool: return "nhwc max pooling";
    case Kind::AvgPool: return "nhwc average pooling";
    case Kind::Cat: return "nhwc concatenation";
    case Kind::Gather: return "nhwc channel shuffle";
    case Kind::Scalar: return "nhwc scalar";
    case Kind::ScalarOp: return "nhwc scalar operator";
    case Kind::Mean: return "nhwc global average pooling";
  }
  return "nhwc node";
}

int32_t run_region(pteron_kernel_context* ctx, void* state) {
  Region& r = *static_cast<Region*>(state);
  const bool profiled = pteron_profiling_enabled(ctx) != 0;
  uint64_t t0 = profiled ? pteron_profile_clock_ns() : 0;
  // Shapes first: nothing is written unless every one is as built.
  for (size_t s : r.imports)
    if (!same_nchw(r.slots[s].v->u.tensor, r.slots[s].dims)) return PTERON_REGION_DECLINED;
  for (size_t s : r.exports)
    if (!same_nchw(r.slots[s].v->u.tensor, r.slots[s].dims)) return PTERON_REGION_DECLINED;
  const cpu::NhwcOps& k = cpu::nhwc_ops();
  for (size_t s : r.imports) {  // NCHW -> NHWC
    const Dims& d = r.slots[s].dims;
    const float* src = static_cast<const float*>(r.slots[s].v->u.tensor->data);
    for (int64_t b = 0; b < d.n; ++b)
      k.transpose(src + b * d.c * d.h * d.w, d.h * d.w, r.at(s) + b * d.h * d.w * d.c, d.c, d.c,
                  d.h * d.w);
  }
  if (profiled) {
    const uint64_t t1 = pteron_profile_clock_ns();
    pteron_profile_delegate_event(ctx, "nhwc layout (inputs to NHWC)", -1, t0, t1);
    t0 = t1;
  }
  for (size_t ni = 0; ni < r.nodes.size(); ++ni) {
    Node& nd = r.nodes[ni];
    const Dims& x = r.slots[nd.in_slot[0]].dims;
    const Dims& y = r.slots[nd.out_slot].dims;
    float* out = r.at(nd.out_slot);
    const float* in = r.at(nd.in_slot[0]);
    switch (nd.kind) {
      case Kind::Conv: {
        cpu::GemmAct act;
        act.on = nd.act;
        act.op = nd.act_op;
        if (nd.res) {
          act.res = r.at(nd.res_slot);
          act.ldr = y.c;
          act.res_lo = nd.res_lo, act.res_hi = nd.res_hi;
        }
        if (!nd.pre_scale.empty()) {
          cpu::GemmPre pre;
          pre.scale = nd.pre_scale.data(), pre.shift = nd.pre_shift.data();
          pre.lo = nd.pre_lo, pre.hi = nd.pre_hi;
          if (!cpu::gemm_packed_pre(x.n * x.h * x.w, in, x.c, pre, nd.conv.weights(0), out, y.c,
                                    nd.lo, nd.hi, act))
            return PTERON_ERROR_OUT_OF_MEMORY;
        } else if (!nd.conv.run(in, x.n, x.h, x.w, y.h, y.w, out, y.c, nd.lo, nd.hi, act)) {
          return PTERON_ERROR_OUT_OF_MEMORY;
        }
        break;
      }
      case Kind::Depthwise: {
        cpu::DwConv2d p;
        p.n = x.n, p.ih = x.h, p.iw = x.w, p.ic = x.c, p.m = 1, p.oh = y.h, p.ow = y.w;
        p.kh = nd.cs.kh, p.kw = nd.cs.kw, p.sh = nd.cs.sh, p.sw = nd.cs.sw;
        p.dh = nd.cs.dh, p.dw = nd.cs.dw, p.pt = nd.cs.pt, p.pl = nd.cs.pl;
        p.w = nd.filter.data(), p.bias = nd.bias.data(), p.lo = nd.lo, p.hi = nd.hi;
        p.act = nd.act, p.act_op = nd.act_op;
        cpu::depthwise_conv2d(p, in, out, r.zeros.data());
        break;
      }
      case Kind::ExpandDepthwise: {
        const Node& e = *nd.expand;
        cpu::ExpandDepthwise p;
        p.dw.n = x.n, p.dw.ih = x.h, p.dw.iw = x.w, p.dw.ic = y.c, p.dw.m = 1;
        p.dw.oh = y.h, p.dw.ow = y.w;
        p.dw.kh = nd.cs.kh, p.dw.kw = nd.cs.kw, p.dw.sh = nd.cs.sh, p.dw.sw = nd.cs.sw;
        p.dw.dh = nd.cs.dh, p.dw.dw = nd.cs.dw, p.dw.pt = nd.cs.pt, p.dw.pl = nd.cs.pl;
        p.dw.w = nd.filter.data(), p.dw.bias = nd.bias.data(), p.dw.lo = nd.lo, p.dw.hi = nd.hi;
        p.dw.act = nd.act, p.dw.act_op = nd.act_op;
        p.w = &e.conv.weights(0);
        p.lo = e.lo, p.hi = e.hi;
        p.act.on = e.act, p.act.op = e.act_op;
        if (!cpu::expand_depthwise_conv2d(p, in, out, r.zeros.data()))
          return PTERON_ERROR_OUT_OF_MEMORY;
        break;
      }
      case Kind::Clamp:
        cpu::unary(cpu::NUnary::Clamp, in, out, y.numel(), nd.lo, nd.hi, -kInf, kInf);
        break;
      case Kind::Unary: cpu::unary(nd.act_op, in, out, y.numel(), 0.0f, 0.0f, -kInf, kInf); break;
      case Kind::Add:
      case Kind::Mul:
      case Kind::MulChannel: {
        const Dims& b = r.slots[nd.in_slot[1]].dims;
        const int64_t os[4] = {y.n, y.h, y.w, y.c}, bs[4] = {b.n, b.h, b.w, b.c};
        cpu::binary_broadcast(nd.kind == Kind::Add ? cpu::NBinary::Add : cpu::NBinary::Mul, in, os,
                              4, r.at(nd.in_slot[1]), bs, 4, out, os, 4, nd.lo, nd.hi);
        break;
      }
      case Kind::MaxPool: cpu::max_pool2d(nd.pool, in, out); break;
      case Kind::AvgPool: cpu::avg_pool2d(nd.pool, in, out); break;
      case Kind::Cat: {
        CatJob job{&r, &nd, out, y.c};
        pteron_parallel_for(0, y.n * y.h * y.w, cpu::grain_for(y.c), &cat_pixels, &job);
        break;
      }
      case Kind::Mean:
        cpu::global_avg_pool2d(x.n, x.h * x.w, x.c, in, out, -kInf, kInf, r.partial.data());
        break;
      case Kind::Gather: {
        GatherJob job{in, out, x.c, y.c, nd.gather.data()};
        pteron_parallel_for(0, y.n * y.h * y.w, cpu::grain_for(y.c), &gather_pixels, &job);
        break;
      }
      case Kind::ScalarOp: {
        const int64_t os[4] = {y.n, y.h, y.w, y.c}, one[1] = {1};
        cpu::binary_broadcast(nd.scalar_op, in, os, 4, &nd.scalar, one, 1, out, os, 4, nd.lo,
                              nd.hi);
        break;
      }
      case Kind::Scalar:  // never placed (place() keeps only nodes with a slot)
      case Kind::Bn: return PTERON_ERROR_INTERNAL;  // became a depthwise node at load
    }
    if (profiled) {
      const uint64_t t1 = pteron_profile_clock_ns();
      pteron_profile_delegate_event(ctx, kind_name(nd.kind), int32_t(ni), t0, t1);
      t0 = t1;
    }
  }
  for (size_t s : r.exports) {  // NHWC -> NCHW
    const Dims& d = r.slots[s].dims;
    float* dst = static_cast<float*>(r.slots[s].v->u.tensor->data);
    if (d.h * d.w == 1) {
      std::memcpy(dst, r.at(s), sizeof(float) * size_t(d.numel()));
      continue;
    }
    for (int64_t b = 0; b < d.n; ++b)
      k.transpose(r.at(s) + b * d.h * d.w * d.c, d.c, dst + b * d.c * d.h * d.w, d.h * d.w,
                  d.h * d.w, d.c);
  }
  if (profiled)
    pteron_profile_delegate_event(ctx, "nhwc layout (outputs to NCHW)", -1, t0,
                                  pteron_profile_clock_ns());
  return PTERON_OK;
}

// ---- building a region from a run -----------------------------------------------------------

struct Builder {
  pteron_graph* g;
  size_t first, count;
  std::vector<Node> nodes;
  int64_t producer(const pteron_value* v) const {
    for (size_t k = 0; k < nodes.size(); ++k)
      if (nodes[k].alive && nodes[k].out == v) return int64_t(k);
    return -1;
  }
  size_t readers(const pteron_value* v) const {
    size_t n = 0;
    for (const Node& nd : nodes)
      if (nd.alive) {
        for (const pteron_value* x : nd.in) n += x == v;
        n += nd.res == v;
      }
    return n;
  }
  bool exported(const pteron_value* v) const {
    return pteron_graph_uses_outside(g, v, first, count) > 0;
  }
  // v is read once, by the next consumer only, and nothing outside sees it.
  bool private_once(const pteron_value* v) const { return readers(v) == 1 && !exported(v); }

  // The one live node that reads v (-1: none or several).
  int64_t consumer(const pteron_value* v) const {
    int64_t found = -1;
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (!nodes[k].alive) continue;
      bool reads = nodes[k].res == v;
      for (const pteron_value* x : nodes[k].in) reads = reads || x == v;
      if (reads) {
        if (found >= 0) return -1;
        found = int64_t(k);
      }
    }
    return found;
  }

  // clamp(clamp(x, a, b), c, d) -> clamp(x, max(a, c), min(b, d)) (overlapping ranges), and
  // x * clamp(x + 3, 0, 6) / 6 (the exporter's hardswish) -> hardswish(x).
  void fuse_clamps_and_hardswish() {
    for (Node& c2 : nodes) {
      if (!c2.alive || c2.kind != Kind::Clamp) continue;
      const int64_t pi = producer(c2.in[0]);
      if (pi < 0 || nodes[size_t(pi)].kind != Kind::Clamp || !private_once(c2.in[0])) continue;
      Node& c1 = nodes[size_t(pi)];
      const float lo = std::max(c1.lo, c2.lo), hi = std::min(c1.hi, c2.hi);
      if (!(lo <= hi)) continue;
      c1.lo = lo, c1.hi = hi, c1.out = c2.out;
      c2.alive = false;
    }
    for (Node& a : nodes) {
      if (!a.alive || a.kind != Kind::ScalarOp || a.scalar_op != cpu::NBinary::Add ||
          a.scalar != 3.0f || !private_once(a.out))
        continue;
      const pteron_value* x = a.in[0];
      const int64_t ci = consumer(a.out);
      if (ci < 0) continue;
      Node& c = nodes[size_t(ci)];
      if (c.kind != Kind::Clamp || c.lo != 0.0f || c.hi != 6.0f || !private_once(c.out)) continue;
      const int64_t mi = consumer(c.out);
      if (mi < 0) continue;
      Node& m = nodes[size_t(mi)];
      const bool pair = m.kind == Kind::Mul && ((m.in[0] == x && m.in[1] == c.out) ||
                                               (m.in[1] == x && m.in[0] == c.out));
      if (!pair || !private_once(m.out)) continue;
      const int64_t di = consumer(m.out);
      if (di < 0) continue;
      Node& d = nodes[size_t(di)];
      const bool sixth = d.kind == Kind::ScalarOp &&
                         ((d.scalar_op == cpu::NBinary::Div && d.scalar == 6.0f) ||
                          (d.scalar_op == cpu::NBinary::Mul && d.scalar == 1.0f / 6.0f));
      if (!sixth) continue;
      a.kind = Kind::Unary;
      a.act_op = cpu::NUnary::Hardswish;
      a.out = d.out;
      c.alive = m.alive = d.alive = false;
    }
  }

  void fuse() {
    for (Node& nd : nodes)
      if (nd.kind == Kind::Scalar) nd.alive = false;  // read at load by its ScalarOps
    fuse_clamps_and_hardswish();
    // sigmoid(x) * x -> silu(x).
    for (size_t k = 0; k < nodes.size(); ++k) {
      Node& s = nodes[k];
      if (!s.alive || s.kind != Kind::Unary || s.act_op != cpu::NUnary::Sigmoid) continue;
      const pteron_value* x = s.in[0];
      if (readers(x) != 2 || exported(x) || !private_once(s.out)) continue;
      for (size_t j = k + 1; j < nodes.size(); ++j) {
        Node& m = nodes[j];
        if (!m.alive || m.kind != Kind::Mul) continue;
        const bool match = (m.in[0] == x && m.in[1] == s.out) || (m.in[1] == x && m.in[0] == s.out);
        if (!match) continue;
        s.act_op = cpu::NUnary::Silu;
        s.out = m.out;
        m.alive = false;
        break;
      }
    }
    for (size_t k = 0; k < nodes.size(); ++k) {
      Node& nd = nodes[k];
      if (!nd.alive) continue;
      const int64_t pi = producer(nd.in[0]);
      Node* p = pi >= 0 ? &nodes[size_t(pi)] : nullptr;
      const bool conv = p && (p->kind == Kind::Conv || p->kind == Kind::Depthwise);
      if (nd.kind == Kind::Bn && conv && !p->act && !p->res && p->lo == -kInf && p->hi == kInf &&
          private_once(nd.in[0])) {
        const int64_t cout = p->cs.groups * p->cs.cout_g;
        const size_t taps = p->filter.size() / size_t(cout);
        for (int64_t o = 0; o < cout; ++o) {
          const double s = nd.scale[size_t(o)];
          if (p->kind == Kind::Conv)
            for (size_t t = 0; t < taps; ++t)
              p->filter[size_t(o) * taps + t] = float(p->filter[size_t(o) * taps + t] * s);
          else
            for (size_t t = 0; t < taps; ++t)
              p->filter[t * size_t(cout) + size_t(o)] =
                  float(p->filter[t * size_t(cout) + size_t(o)] * s);
          p->bias[size_t(o)] = float(p->bias[size_t(o)] * s + nd.shift[size_t(o)]);
        }
        p->out = nd.out;
        nd.alive = false;
        continue;
      }
      if (nd.kind == Kind::Bn) {  // a per-channel map: a 1x1 depthwise convolution
        const int64_t c = int64_t(nd.scale.size());
        nd.kind = Kind::Depthwise;
        nd.cs = cpu::ConvNhwcShape{};
        nd.cs.groups = c, nd.cs.cin_g = 1, nd.cs.cout_g = 1;
        nd.filter.assign(nd.scale.begin(), nd.scale.end());
        nd.bias.assign(nd.shift.begin(), nd.shift.end());
        continue;
      }
      if (nd.kind == Kind::Clamp && p && private_once(nd.in[0])) {
        if ((conv && p->res) || (p->kind == Kind::Add && !p->res)) {
          float& lo = p->kind == Kind::Add ? p->lo : p->res_lo;
          float& hi = p->kind == Kind::Add ? p->hi : p->res_hi;
          if (lo == -kInf && hi == kInf) {
            lo = nd.lo, hi = nd.hi;
            p->out = nd.out;
            nd.alive = false;
            continue;
          }
        } else if (conv && !p->act && p->lo == -kInf && p->hi == kInf) {
          p->lo = nd.lo, p->hi = nd.hi;
          p->out = nd.out;
          nd.alive = false;
          continue;
        }
      }
      if (nd.kind == Kind::Unary && conv && !p->act && !p->res && private_once(nd.in[0])) {
        p->act = true;
        p->act_op = nd.act_op;
        p->out = nd.out;
        nd.alive = false;
        continue;
      }
      if (nd.kind == Kind::Add) {
        for (int side = 0; side < 2; ++side) {
          const int64_t ci = producer(nd.in[size_t(side)]);
          if (ci < 0) continue;
          Node& c = nodes[size_t(ci)];
          const pteron_value* other = nd.in[size_t(1 - side)];
          const int64_t oi = producer(other);  // must be ready before the convolution runs
          if (c.kind != Kind::Conv || c.cs.groups != 1 || c.res || other == c.out ||
              oi >= ci || !private_once(nd.in[size_t(side)]))
            continue;
          c.res = const_cast<pteron_value*>(other);
          c.out = nd.out;
          nd.alive = false;
          break;
        }
      }
    }
    // A per-channel map (a batch norm no convolution absorbed) and its clamp, read only by a
    // 1x1 convolution: applied to the convolution's rows as they are read (DenseNet's
    // pre-activation; the XNNPACK delegate's fuse_channel_affine).
    for (Node& c : nodes) {
      const cpu::ConvNhwcShape& k = c.cs;
      if (!c.alive || c.kind != Kind::Conv || k.kh != 1 || k.kw != 1 || k.sh != 1 || k.sw != 1 ||
          k.pt != 0 || k.pl != 0 || k.groups != 1)
        continue;
      const int64_t pi = producer(c.in[0]);
      if (pi < 0) continue;
      Node& d = nodes[size_t(pi)];
      if (d.kind != Kind::Depthwise || d.cs.kh != 1 || d.cs.kw != 1 || d.cs.sh != 1 ||
          d.cs.sw != 1 || d.act || !private_once(c.in[0]))
        continue;
      c.pre_scale = d.filter;
      c.pre_shift = d.bias;
      c.pre_lo = d.lo, c.pre_hi = d.hi;
      c.in = d.in;
      d.alive = false;
    }
    // A 1x1 expansion that only a depthwise convolution reads (MobileNetV2's and
    // EfficientNet's blocks): computed row by row inside it, never stored whole.
    for (Node& d : nodes) {
      // Where the XNNPACK delegate fuses them (kExpandDepthwiseMinBytes, windows up to 16).
      if (!d.alive || d.kind != Kind::Depthwise || d.cs.dh != 1 || d.cs.kh > 16 ||
          dims_of(d.in[0]->u.tensor).numel() * int64_t(sizeof(float)) <
              cpu::kExpandDepthwiseMinBytes)
        continue;
      const int64_t pi = producer(d.in[0]);
      if (pi < 0) continue;
      Node& e = nodes[size_t(pi)];
      const cpu::ConvNhwcShape& c = e.cs;
      if (e.kind != Kind::Conv || e.res || c.kh != 1 || c.kw != 1 || c.sh != 1 || c.sw != 1 ||
          c.pt != 0 || c.pl != 0 || c.groups != 1 || !private_once(d.in[0]))
        continue;
      d.kind = Kind::ExpandDepthwise;
      d.in = e.in;
      d.expand = std::make_shared<Node>(std::move(e));
      e.alive = false;
    }
  }

  // Slots: one per value a live node reads or writes; first fit in one arena over the nodes'
  // order (a value lives from its definition, or entry, to its last read, or exit).
  bool place(Region* r) {
    for (Node& nd : nodes)
      if (nd.alive) r->nodes.push_back(std::move(nd));
    const size_t nn = r->nodes.size();
    struct Life {
      int64_t def, last;
      size_t floats;
    };
    std::vector<Life> life;
    auto slot_for = [&](pteron_value* v, int64_t def) -> size_t {
      auto it = r->slot_of.find(v);
      if (it != r->slot_of.end()) return it->second;
      Slot s;
      s.v = v;
      s.dims = dims_of(v->u.tensor);
      for (const Node& nd : r->nodes)
        if (nd.out == v && nd.out_view) s.dims = nd.out_dims;
      r->slots.push_back(s);
      life.push_back({def, def, size_t(s.dims.numel())});
      r->slot_of[v] = r->slots.size() - 1;
      return r->slots.size() - 1;
    };
    for (size_t k = 0; k < nn; ++k) {
      Node& nd = r->nodes[k];
      std::vector<pteron_value*> reads = nd.in;
      if (nd.res) reads.push_back(nd.res);
      for (pteron_value* v : reads) {
        const bool fresh = !r->slot_of.count(v);
        const size_t s = slot_for(v, -1);
        if (fresh) r->imports.push_back(s);
        life[s].last = int64_t(k);
      }
      const size_t s = slot_for(nd.out, int64_t(k));
      if (life[s].def != int64_t(k)) return false;  // written twice
      life[s].last = std::max(life[s].last, int64_t(k));
      nd.out_slot = s;
      for (pteron_value* v : nd.in) nd.in_slot.push_back(r->slot_of.at(v));
      if (nd.res) nd.res_slot = r->slot_of.at(nd.res);
    }
    for (size_t s = 0; s < r->slots.size(); ++s)
      if (exported(r->slots[s].v) && life[s].def >= 0) {
        r->exports.push_back(s);
        life[s].last = int64_t(nn);
      }
    // First fit by definition order.
    std::vector<size_t> order(r->slots.size());
    for (size_t s = 0; s < order.size(); ++s) order[s] = s;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return life[a].def < life[b].def; });
    std::vector<size_t> placed;
    size_t total = 0;
    for (size_t s : order) {
      const size_t need = (life[s].floats + 15) / 16 * 16;
      size_t off = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t q : placed) {
          const bool overlap_time = !(life[q].last < life[s].def || life[s].last < life[q].def);
          const size_t qo = r->slots[q].offset, qe = qo + (life[q].floats + 15) / 16 * 16;
          if (overlap_time && off < qe && qo < off + need) {
            off = qe;
            moved = true;
          }
        }
      }
      r->slots[s].offset = off;
      placed.push_back(s);
      total = std::max(total, off + need);
    }
    // Imports read by a node must be rank-4 NCHW tensors of the program.
    for (size_t s : r->imports) {
      if (r->slots[s].v->u.tensor->dim != 4) return false;
    }
    size_t zeros = 0, partial = 0;
    for (Node& nd : r->nodes) {
      const Dims& x = r->dims(nd.in[0]);
      if (nd.kind == Kind::Depthwise) zeros = std::max(zeros, size_t(x.w * x.c));
      if (nd.kind == Kind::ExpandDepthwise) {
        zeros = std::max(zeros, size_t(x.w * r->dims(nd.out).c));
        Node& e = *nd.expand;
        if (!e.conv.prepare(e.cs, e.filter.data(), e.bias.data())) return false;
        std::vector<float>().swap(e.filter);
      }
      if (nd.kind == Kind::Mean)
        partial = std::max(partial, size_t(x.n * cpu::global_avg_pool2d_parts(x.h * x.w, x.c) *
                                           x.c));
      if (nd.kind == Kind::Conv) {
        if (!nd.conv.prepare(nd.cs, nd.filter.data(), nd.bias.data())) return false;
        std::vector<float>().swap(nd.filter);
      }
    }
    try {
      r->arena.assign(total + 16, 0.0f);
      r->zeros.assign(zeros + 16, 0.0f);
      r->partial.assign(partial + 16, 0.0f);
    } catch (const std::bad_alloc&) {
      return false;
    }
    return true;
  }
};

bool worth_it(const std::vector<Node>& nodes) {
  for (const Node& nd : nodes)
    if (nd.kind == Kind::Conv || nd.kind == Kind::Depthwise) return true;
  return false;
}

// Builds and installs the region of instructions [first, first + count).
int32_t install(pteron_graph* g, size_t first, size_t count, std::vector<Node>* nodes,
                const std::vector<pteron_value*>& dead) {
  if (!worth_it(*nodes)) return PTERON_OK;
  for (const pteron_value* v : dead)
    if (pteron_graph_uses_outside(g, v, first, count) > 0) return PTERON_OK;
  for (const Node& nd : *nodes)
    if (nd.kind == Kind::Scalar && pteron_graph_uses_outside(g, nd.out, first, count) > 0)
      return PTERON_OK;
  Builder b{g, first, count, std::move(*nodes)};
  b.fuse();
  std::unique_ptr<Region> r(new (std::nothrow) Region);
  if (!r || !b.place(r.get())) return PTERON_OK;  // memory or an odd shape: leave the run as is
  // A range the runtime refuses stays as it was (it destroys the state).
  pteron_graph_replace(g, first, count, "pteron_nhwc_region", &run_region, r.release(),
                       &destroy_region);
  return PTERON_OK;
}

int32_t nhwc_pass(pteron_graph* g) {
  const size_t n = pteron_graph_size(g);
  std::vector<Node> nodes;
  std::vector<pteron_value*> dead;
  size_t first = 0;
  for (size_t i = 0; i <= n; ++i) {
    const char* ov = nullptr;
    const char* name = i < n ? pteron_graph_operator(g, i, &ov) : nullptr;
    bool taken = false;
    size_t consumed = 0;
    if (i < n && name && !nodes.empty() && read_shuffle(g, i, nodes, &nodes, &dead, &consumed)) {
      i += consumed - 1;  // the instructions are in the run
      continue;
    }
    if (i < n && name) {
      Node nd;
      const size_t before = dead.size();
      bool ok = read_node(g, i, &nd, &dead);
      if (ok && nd.kind == Kind::ScalarOp) {  // its number: a Scalar node of this run
        ok = false;
        for (const Node& p : nodes)
          if (p.kind == Kind::Scalar && p.out == nd.scalar_src) {
            nd.scalar = p.scalar;
            ok = true;
          }
      }
      // An input that is not a value the run wrote, on storage the run wrote before (a view
      // the memory plan made of a value the region would not write): not in this run, unless
      // it is the [N, C, H, W] view of a channel shuffle's output (read as that output).
      for (size_t k = 0; ok && k < nd.in.size(); ++k) {
        bool produced = false;
        for (const Node& p : nodes) produced = produced || p.out == nd.in[k];
        if (!produced)
          for (const Node& p : nodes)
            if (p.out_view && same_storage(tensor_of(p.out), tensor_of(nd.in[k])) &&
                dims_of(tensor_of(nd.in[k])) == p.out_dims) {
              nd.in[k] = p.out;
              produced = true;
            }
        if (!produced)
          for (const Node& p : nodes)
            if (p.kind != Kind::Scalar && p.out->u.tensor->data == nd.in[k]->u.tensor->data)
              ok = false;
      }
      if (ok) {
        if (nodes.empty()) first = i;
        nodes.push_back(std::move(nd));
        taken = true;
      } else {
        dead.resize(before);
      }
    } else if (i < n && !nodes.empty() && pteron_graph_num_args(g, i) == 0 &&
               pteron_graph_operator(g, i, nullptr) == nullptr) {
      taken = true;  // a free inside a run
    }
    if (!taken && !nodes.empty()) {
      // The run ends before i (trailing frees excluded: the region ends at its last node).
      size_t last = i;
      while (last > first && pteron_graph_operator(g, last - 1, nullptr) == nullptr) --last;
      const int32_t rc = install(g, first, last - first, &nodes, dead);
      if (rc != PTERON_OK) return rc;
      nodes.clear();
      dead.clear();
    }
  }
  return PTERON_OK;
}

const int kRegistered = [] {
  static const pteron_graph_pass pass = {sizeof(pteron_graph_pass), "kernels_optimized.nhwc",
                                         &nhwc_pass};
  pteron_register_graph_pass(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, &pass);
  return 0;
}();

}  // namespace
