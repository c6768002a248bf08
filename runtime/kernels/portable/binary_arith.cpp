// SPDX-License-Identifier: BSD-3-Clause
// binary_arith.cpp - portable element-wise arithmetic: aten::add, sub, mul,
// div (Tensor and Scalar out variants; div with rounding modes) and
// rsub.Scalar.
//
// Semantics follow eager PyTorch: broadcasting, result_type promotion
// (dimensioned tensors decide, zero-dim tensors and scalars lift the
// category), computation in the promoted type, then a cast to the out
// tensor's dtype when PyTorch's can_cast allows it. True division computes in
// float32 for integer/bool operands; float16 and bfloat16 compute in float and
// round once. Integer arithmetic wraps (no signed overflow); integer division
// by zero is an error.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

enum class Kind { Add, Sub, Mul, Div, DivTrunc, DivFloor };

struct Spec {
  const char* op;
  Kind kind;          // Div is resolved to a rounding kind at run time
  bool scalar_other;  // Scalar_out / Scalar_mode_out
  bool has_alpha;
  bool has_mode;
};

template <typename C>
int32_t compute(pteron_kernel_context* ctx, const Spec& s, Kind kind, const pteron_tensor* self,
                const pteron_tensor* other, const Scalar& other_s, const Scalar& alpha,
                pteron_tensor* out) {
  bool zero = false;
  const C al = alpha.to<C>();
  auto f = [&](C a, C b) -> C {
    if constexpr (std::is_same_v<C, bool>) {
      switch (kind) {
        case Kind::Add: return a || (al && b);
        case Kind::Mul: return a && b;
        default: return false;  // rejected before dispatch
      }
    } else if constexpr (std::is_floating_point_v<C>) {
      switch (kind) {
        case Kind::Add: return a + al * b;
        case Kind::Sub: return a - al * b;
        case Kind::Mul: return a * b;
        case Kind::Div: return a / b;
        case Kind::DivTrunc: return std::trunc(a / b);
        case Kind::DivFloor: return floor_div_float(a, b);
      }
      return C(0);
    } else {
      switch (kind) {
        case Kind::Add: return wrap_add<C>(a, wrap_mul<C>(al, b));
        case Kind::Sub: return wrap_sub<C>(a, wrap_mul<C>(al, b));
        case Kind::Mul: return wrap_mul<C>(a, b);
        case Kind::Div:  // never: true division computes in a float type
        case Kind::DivTrunc:
        case Kind::DivFloor:
          if (b == C(0)) {
            zero = true;
            return C(0);
          }
          return int_div<C>(a, b, kind == Kind::DivFloor);
      }
      return C(0);
    }
  };
  if (other) {
    const pteron_tensor* ins[2] = {self, other};
    map_elements<C, C>(ins, out, f);
  } else {
    const C b = other_s.to<C>();
    if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
      if ((kind == Kind::DivTrunc || kind == Kind::DivFloor) && b == C(0))
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: integer division by zero", s.op);
    }
    const pteron_tensor* ins[1] = {self};
    map_elements<C, C>(ins, out, [&](C a) { return f(a, b); });
  }
  if (zero) return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: integer division by zero", s.op);
  return PTERON_OK;
}

int32_t run(pteron_kernel_context* ctx, pteron_value* const* args, size_t n, const Spec& s) {
  Args a{ctx, args, n, s.op};
  BinaryOperands b;
  int32_t ct = 0;
  PTERON_CHECK_OK(read_binary_args(a, s.scalar_other, s.has_alpha, s.has_mode, &b, &ct));
  Kind kind = s.kind;
  if (b.rounding == RoundingMode::Trunc) kind = Kind::DivTrunc;
  if (b.rounding == RoundingMode::Floor) kind = Kind::DivFloor;
  if (kind == Kind::Div && !is_floating(ct)) ct = PTERON_DTYPE_FLOAT32;
  if (kind == Kind::Sub) PTERON_CHECK_OK(reject_bool_subtraction(ctx, s.op, b));
  const Scalar &other_s = b.other_s, &alpha = b.alpha;
  pteron_tensor *self = b.self, *other = b.other, *out = b.out;
  if ((kind == Kind::DivTrunc || kind == Kind::DivFloor) && ct == PTERON_DTYPE_BOOL)
    return unsupported_dtype(ctx, s.op, "self", ct);
  if (s.has_alpha) PTERON_CHECK_OK(check_binary_alpha(ctx, s.op, b, ct));
  if (!can_cast(ct, out->dtype)) return cast_error(ctx, s.op, ct, out->dtype);

  PTERON_CHECK_OK(resize_binary_out(ctx, s.op, b));

  int32_t rc = PTERON_OK;
  dispatch_compute(ct, [&](auto t) {
    rc = compute<decltype(t)>(ctx, s, kind, self, other, other_s, alpha, out);
  });
  return rc;
}

#define PTERON_BINARY_KERNEL(fn, opname, kind, scalar, alpha, mode)             \
  int32_t fn(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    static const Spec spec{opname, kind, scalar, alpha, mode};                  \
    return run(ctx, args, n, spec);                                             \
  }

PTERON_BINARY_KERNEL(add_out, "aten::add.out", Kind::Add, false, true, false)
PTERON_BINARY_KERNEL(add_scalar_out, "aten::add.Scalar_out", Kind::Add, true, true, false)
PTERON_BINARY_KERNEL(sub_out, "aten::sub.out", Kind::Sub, false, true, false)
PTERON_BINARY_KERNEL(sub_scalar_out, "aten::sub.Scalar_out", Kind::Sub, true, true, false)
PTERON_BINARY_KERNEL(mul_out, "aten::mul.out", Kind::Mul, false, false, false)
PTERON_BINARY_KERNEL(mul_scalar_out, "aten::mul.Scalar_out", Kind::Mul, true, false, false)
PTERON_BINARY_KERNEL(div_out, "aten::div.out", Kind::Div, false, false, false)
PTERON_BINARY_KERNEL(div_scalar_out, "aten::div.Scalar_out", Kind::Div, true, false, false)
PTERON_BINARY_KERNEL(div_out_mode, "aten::div.out_mode", Kind::Div, false, false, true)
PTERON_BINARY_KERNEL(div_scalar_mode_out, "aten::div.Scalar_mode_out", Kind::Div, true, false, true)

#undef PTERON_BINARY_KERNEL

// ---- rsub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, out) ----
// out = other - alpha * self.

int32_t rsub_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::rsub.Scalar_out";
  Args a{ctx, args, n, op};
  BinaryOperands b;
  int32_t ct = 0;
  PTERON_CHECK_OK(read_binary_args(a, true, true, false, &b, &ct));
  PTERON_CHECK_OK(reject_bool_subtraction(ctx, op, b));
  PTERON_CHECK_OK(check_binary_alpha(ctx, op, b, ct));
  if (!can_cast(ct, b.out->dtype)) return cast_error(ctx, op, ct, b.out->dtype);
  PTERON_CHECK_OK(resize_binary_out(ctx, op, b));
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    if constexpr (!std::is_same_v<C, bool>) {
      const C other = b.other_s.to<C>(), alpha = b.alpha.to<C>();
      const pteron_tensor* ins[1] = {b.self};
      map_elements<C, C>(ins, b.out, [other, alpha](C x) -> C {
        if constexpr (std::is_floating_point_v<C>)
          return other - alpha * x;
        else
          return wrap_sub<C>(other, wrap_mul<C>(alpha, x));
      });
    }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::add", "out", nullptr, add_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::add", "Scalar_out", nullptr, add_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sub", "out", nullptr, sub_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sub", "Scalar_out", nullptr, sub_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::mul", "out", nullptr, mul_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::mul", "Scalar_out", nullptr, mul_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::div", "out", nullptr, div_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::div", "Scalar_out", nullptr, div_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::div", "out_mode", nullptr, div_out_mode, PTERON_KERNEL_PRIORITY, 0},
    {"aten::div", "Scalar_mode_out", nullptr, div_scalar_mode_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::rsub", "Scalar_out", nullptr, rsub_scalar_out, PTERON_KERNEL_PRIORITY, 0})
