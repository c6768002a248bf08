// SPDX-License-Identifier: BSD-3-Clause
// elementwise.cpp - optimized float32 element-wise operators: aten::add,
// aten::sub, aten::mul, aten::div (true division; Tensor and Scalar out
// variants) and aten::relu.out.
//
// Fast path (every operand and the out tensor float32): the iteration space
// is the out tensor's dims in memory order, with adjacent dims merged
// wherever all operands allow, so the common cases - same shape, a
// bias-like row broadcast, a per-channel broadcast, a scalar or 0-dim
// operand - become a few long runs, each a vectorised ISA loop
// (isa_kernels.cpp) with unit or zero operand strides. Any other broadcast
// or dim-order mix still runs correctly, on shorter runs or a strided loop.
// Runs are split over the thread pool.
//
// Mixed dtypes (a float32 self with an int, bool or float64 other, or a
// non-float32 out) follow kernels_portable's rules: PyTorch's result_type,
// computation in the promoted type, can_cast to the out dtype.
#include <cstdint>

#include "opt_util.h"
#include "arg_reading.h"
#include "elementwise.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

// ---- the strided fast path ------------------------------------------------

constexpr int64_t kGrain = 32768;

// out = a (op) alpha * b over out's shape; a and b broadcast to it.
// b_scalar: b is one value (a Scalar argument).
void binary_fast(Binary op, const pteron_tensor* a, const pteron_tensor* b, const float* b_scalar,
                 float alpha, pteron_tensor* out) {
  int64_t sa[PTERON_MAX_DIM] = {0}, sb[PTERON_MAX_DIM] = {0};
  broadcast_strides(a, out->dim, out->sizes, sa);
  if (b)
    broadcast_strides(b, out->dim, out->sizes, sb);
  else
    for (int32_t i = 0; i < out->dim; ++i) sb[i] = 0;
  Iter it;
  make_iter(out, sa, sb, &it);
  const float* pa = static_cast<const float*>(a->data);
  const float* pb = b ? static_cast<const float*>(b->data) : b_scalar;
  float* po = static_cast<float*>(out->data);
  const IsaOps& isa = ops();
  const int32_t last = it.nd - 1;
  const bool unit_out = it.so[last] == 1;
  parallel_for(0, numel(out), kGrain, [&](int64_t begin, int64_t end) {
    for_runs(it, begin, end, [&](int64_t oo, int64_t oa, int64_t ob, int64_t len) {
      if (unit_out) {
        isa.binary(op, pa + oa, it.sa[last], pb + ob, it.sb[last], alpha, po + oo, len);
      } else {
        for (int64_t i = 0; i < len; ++i) {
          const float x = pa[oa + i * it.sa[last]], y = pb[ob + i * it.sb[last]];
          po[oo + i * it.so[last]] =
              op == Binary::Add ? x + alpha * y : (op == Binary::Mul ? x * y : x / y);
        }
      }
    });
  });
}

// ---- add / sub / mul ----------------------------------------------------------

enum class Kind { Add, Sub, Mul, Div };

struct Spec {
  const char* op;
  Kind kind;
  bool scalar_other;
  bool has_alpha;
};

template <typename C>
void compute_generic(Kind kind, const pteron_tensor* self, const pteron_tensor* other,
                     const Scalar& other_s, const Scalar& alpha, pteron_tensor* out) {
  const C al = alpha.to<C>();
  auto f = [&](C a, C b) -> C {
    switch (kind) {
      case Kind::Add: return a + al * b;
      case Kind::Sub: return a - al * b;
      case Kind::Mul: return a * b;
      case Kind::Div: return a / b;
    }
    return C(0);
  };
  if (other) {
    const pteron_tensor* ins[2] = {self, other};
    map_elements<C, C>(ins, out, f);
  } else {
    const C b = other_s.to<C>();
    const pteron_tensor* ins[1] = {self};
    map_elements<C, C>(ins, out, [&](C a) { return f(a, b); });
  }
}

int32_t binary_op(pteron_kernel_context* ctx, pteron_value* const* args, size_t n, const Spec& s) {
  Args a{ctx, args, n, s.op};
  BinaryOperands b;
  int32_t ct = 0;  // floating: self is float32
  PTERON_CHECK_OK(read_binary_args(a, s.scalar_other, s.has_alpha, false, &b, &ct));
  if (s.kind == Kind::Sub) PTERON_CHECK_OK(reject_bool_subtraction(ctx, s.op, b));
  const Scalar &other_s = b.other_s, &alpha = b.alpha;
  pteron_tensor *self = b.self, *other = b.other, *out = b.out;
  if (s.has_alpha) PTERON_CHECK_OK(check_binary_alpha(ctx, s.op, b, ct));
  if (!is_floating(ct)) return unsupported_dtype(ctx, s.op, "self", ct);
  if (!can_cast(ct, out->dtype)) return cast_error(ctx, s.op, ct, out->dtype);
  PTERON_CHECK_OK(resize_binary_out(ctx, s.op, b));
  if (numel(out) == 0) return PTERON_OK;

  const bool fast = ct == PTERON_DTYPE_FLOAT32 && out->dtype == PTERON_DTYPE_FLOAT32 &&
                    self->dtype == PTERON_DTYPE_FLOAT32 &&
                    (!other || other->dtype == PTERON_DTYPE_FLOAT32);
  if (fast) {
    const float al = alpha.to<float>();
    const float bs = other ? 0.0f : other_s.to<float>();
    switch (s.kind) {
      case Kind::Add: binary_fast(Binary::Add, self, other, &bs, al, out); break;
      case Kind::Sub: binary_fast(Binary::Add, self, other, &bs, -al, out); break;
      case Kind::Mul: binary_fast(Binary::Mul, self, other, &bs, 1.0f, out); break;
      case Kind::Div: binary_fast(Binary::Div, self, other, &bs, 1.0f, out); break;
    }
    return PTERON_OK;
  }
  dispatch_float(
      ct, [&](auto t) { compute_generic<decltype(t)>(s.kind, self, other, other_s, alpha, out); });
  return PTERON_OK;
}

#define PTERON_OPT_BINARY(fn, opname, kind, scalar, alpha)                      \
  int32_t fn(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    static const Spec spec{opname, kind, scalar, alpha};                        \
    return binary_op(ctx, args, n, spec);                                       \
  }

PTERON_OPT_BINARY(add_out, "aten::add.out", Kind::Add, false, true)
PTERON_OPT_BINARY(add_scalar_out, "aten::add.Scalar_out", Kind::Add, true, true)
PTERON_OPT_BINARY(sub_out, "aten::sub.out", Kind::Sub, false, true)
PTERON_OPT_BINARY(sub_scalar_out, "aten::sub.Scalar_out", Kind::Sub, true, true)
PTERON_OPT_BINARY(mul_out, "aten::mul.out", Kind::Mul, false, false)
PTERON_OPT_BINARY(mul_scalar_out, "aten::mul.Scalar_out", Kind::Mul, true, false)
PTERON_OPT_BINARY(div_out, "aten::div.out", Kind::Div, false, false)
PTERON_OPT_BINARY(div_scalar_out, "aten::div.Scalar_out", Kind::Div, true, false)

#undef PTERON_OPT_BINARY

// ---- relu ---------------------------------------------------------------------

int32_t relu_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::relu.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 2, &self, &out));
  if (self->dtype != PTERON_DTYPE_FLOAT32) return unsupported_dtype(ctx, a.op, "self", self->dtype);
  if (!can_cast(self->dtype, out->dtype)) return cast_error(ctx, a.op, self->dtype, out->dtype);
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  if (numel(out) == 0) return PTERON_OK;
  if (out->dtype != PTERON_DTYPE_FLOAT32) {
    const pteron_tensor* ins[1] = {self};
    map_elements<float, float>(ins, out, [](float x) { return x < 0.0f ? 0.0f : x; });
    return PTERON_OK;
  }
  int64_t sx[PTERON_MAX_DIM] = {0}, zero[PTERON_MAX_DIM] = {0};
  broadcast_strides(self, out->dim, out->sizes, sx);
  Iter it;
  make_iter(out, sx, zero, &it);
  const float* px = static_cast<const float*>(self->data);
  float* po = static_cast<float*>(out->data);
  const IsaOps& isa = ops();
  const int32_t last = it.nd - 1;
  parallel_for(0, numel(out), kGrain, [&](int64_t begin, int64_t end) {
    for_runs(it, begin, end, [&](int64_t oo, int64_t ox, int64_t, int64_t len) {
      if (it.so[last] == 1 && it.sa[last] == 1) {
        isa.relu(px + ox, po + oo, len);
      } else {
        for (int64_t i = 0; i < len; ++i) {
          const float x = px[ox + i * it.sa[last]];
          po[oo + i * it.so[last]] = x < 0.0f ? 0.0f : x;
        }
      }
    });
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::add", "out", PTERON_OPT_KEY, add_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::add", "Scalar_out", PTERON_OPT_KEY, add_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sub", "out", PTERON_OPT_KEY, sub_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sub", "Scalar_out", PTERON_OPT_KEY, sub_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::mul", "out", PTERON_OPT_KEY, mul_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::mul", "Scalar_out", PTERON_OPT_KEY, mul_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::div", "out", PTERON_OPT_KEY, div_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::div", "Scalar_out", PTERON_OPT_KEY, div_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::relu", "out", PTERON_OPT_KEY, relu_out, PTERON_KERNEL_PRIORITY, 0})
