// SPDX-License-Identifier: BSD-3-Clause
// binary_math.cpp - portable element-wise binary operators beyond the
// arithmetic of binary_arith.cpp: aten::atan2, bitwise_and/or/xor,
// bitwise_left_shift / bitwise_right_shift, floor_divide, fmod, remainder,
// pow (Scalar, Tensor_Scalar, Tensor_Tensor), maximum, minimum and
// logical_and/or/xor.
//
// Semantics follow eager PyTorch on CPU:
//  - broadcasting and result_type promotion (dimensioned tensors decide,
//    zero-dim tensors and Python scalars lift the category), computation in
//    the promoted type, then a cast to the out dtype when can_cast allows it;
//  - atan2 computes in float32 for integer and bool operands;
//  - bitwise operators take integers and bool, shifts integers only; a shift
//    by a negative count or by the bit width or more gives 0 (left) or the
//    sign fill (right), as PyTorch does;
//  - integer floor_divide / fmod / remainder by zero is an error naming the
//    operator (PyTorch raises ZeroDivisionError); remainder has the sign of
//    the divisor (Python), fmod the sign of the dividend (C);
//  - integer pow with a negative exponent gives 0 unless the base is 1 or -1
//    (Tensor exponents); pow.Tensor_Scalar refuses a negative integer
//    exponent of an integer tensor, as PyTorch does;
//  - maximum / minimum propagate NaN;
//  - logical_* read each operand as "nonzero" and write 0/1 in out's dtype.
//  - float16 / bfloat16 compute in float (dispatch_compute), rounded once
//    when stored, as PyTorch's CPU kernels do.
// Integer arithmetic wraps (no signed-overflow UB).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

enum class Op {
  Atan2,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  FloorDiv,
  Fmod,
  Remainder,
  Pow,
  Maximum,
  Minimum,
};

// Which result types an operator computes in.
enum class Accepts { All, IntegralOrBool, Integral, NotBool };

Accepts accepts(Op op) {
  switch (op) {
    case Op::And:
    case Op::Or:
    case Op::Xor: return Accepts::IntegralOrBool;
    case Op::Shl:
    case Op::Shr: return Accepts::Integral;
    case Op::FloorDiv:
    case Op::Fmod:
    case Op::Remainder:
    case Op::Pow: return Accepts::NotBool;
    case Op::Atan2:
    case Op::Maximum:
    case Op::Minimum: return Accepts::All;
  }
  return Accepts::All;
}

int32_t check_accepts(pteron_kernel_context* ctx, const char* op, Op kind, int32_t ct) {
  bool ok = true;
  switch (accepts(kind)) {
    case Accepts::All: break;
    case Accepts::IntegralOrBool: ok = is_integral(ct, true); break;
    case Accepts::Integral: ok = is_integral(ct, false); break;
    case Accepts::NotBool: ok = ct != PTERON_DTYPE_BOOL; break;
  }
  if (!ok)
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: not implemented for the result type %s",
                op, dtype_name(ct));
  return PTERON_OK;
}

// ---- element functions ---------------------------------------------------------

template <typename T>
T shift_left(T a, T b) {
  using U = std::make_unsigned_t<T>;
  constexpr uint64_t bits = sizeof(T) * 8;
  if constexpr (std::is_signed_v<T>) {
    if (b < 0) return T(0);
  }
  if (static_cast<uint64_t>(b) >= bits) return T(0);
  return static_cast<T>(static_cast<U>(static_cast<U>(a) << static_cast<unsigned>(b)));
}

// Arithmetic right shift; negative values shift without relying on the
// implementation-defined behaviour of >> on them.
template <typename T>
T shift_right(T a, T b) {
  constexpr uint64_t bits = sizeof(T) * 8;
  if constexpr (std::is_signed_v<T>) {
    const unsigned k = (b < 0 || static_cast<uint64_t>(b) >= bits - 1)
                           ? static_cast<unsigned>(bits - 1)
                           : static_cast<unsigned>(b);
    if (a >= 0) return static_cast<T>(a >> k);
    return static_cast<T>(~(~a >> k));
  } else {
    if (static_cast<uint64_t>(b) >= bits) return T(0);
    return static_cast<T>(a >> static_cast<unsigned>(b));
  }
}

template <typename T>
T fmod_int(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}

template <typename T>
T remainder_int(T a, T b) {
  T r = fmod_int(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (r != T(0) && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  }
  return r;
}

template <typename T>
T remainder_float(T a, T b) {
  T r = std::fmod(a, b);
  if (r != T(0) && ((b < T(0)) != (r < T(0)))) r += b;
  return r;
}

// Integer power by squaring, wrapping; negative exponents as PyTorch's
// integer pow gives them (1 and -1 keep their magnitude, others give 0).
template <typename T>
T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exp & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = T(1);
  while (exp) {
    if (exp & 1) result = wrap_mul<T>(result, base);
    exp = static_cast<T>(exp >> 1);
    base = wrap_mul<T>(base, base);
  }
  return result;
}

// The element function of `kind` in type C. Sets *zero when an integer
// division meets a zero divisor (the element's result is then 0).
template <typename C>
C apply(Op kind, C a, C b, bool* zero) {
  if constexpr (std::is_same_v<C, bool>) {
    switch (kind) {
      case Op::And:
      case Op::Minimum: return a && b;
      case Op::Or:
      case Op::Maximum: return a || b;
      case Op::Xor: return a != b;
      default: return false;  // refused before dispatch
    }
  } else if constexpr (std::is_floating_point_v<C>) {
    switch (kind) {
      case Op::Atan2: return std::atan2(a, b);
      case Op::FloorDiv: return floor_div_float(a, b);
      case Op::Fmod: return std::fmod(a, b);
      case Op::Remainder: return remainder_float(a, b);
      case Op::Pow: return std::pow(a, b);
      case Op::Maximum:
        if (a != a) return a;
        if (b != b) return b;
        return a < b ? b : a;
      case Op::Minimum:
        if (a != a) return a;
        if (b != b) return b;
        return b < a ? b : a;
      default: return C(0);  // refused before dispatch
    }
  } else {
    switch (kind) {
      case Op::And: return static_cast<C>(a & b);
      case Op::Or: return static_cast<C>(a | b);
      case Op::Xor: return static_cast<C>(a ^ b);
      case Op::Shl: return shift_left(a, b);
      case Op::Shr: return shift_right(a, b);
      case Op::FloorDiv:
      case Op::Fmod:
      case Op::Remainder:
        if (b == C(0)) {
          *zero = true;
          return C(0);
        }
        return kind == Op::FloorDiv ? int_div(a, b, true)
               : kind == Op::Fmod   ? fmod_int(a, b)
                                    : remainder_int(a, b);
      case Op::Pow: return int_pow(a, b);
      case Op::Maximum: return a < b ? b : a;
      case Op::Minimum: return b < a ? b : a;
      default: return C(0);  // atan2 computes in a float type
    }
  }
}

bool divides(Op kind) { return kind == Op::FloorDiv || kind == Op::Fmod || kind == Op::Remainder; }

int32_t zero_division(pteron_kernel_context* ctx, const char* op) {
  return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
              "%s: ZeroDivisionError (integer division by zero)", op);
}

// ---- Tensor-Tensor and Tensor-Scalar operators -----------------------------------

struct Spec {
  const char* op;
  Op kind;
  bool scalar_other;  // the .Scalar / .Tensor_Scalar overloads
};

// out = kind(self, other) with self a tensor and other a tensor or a scalar.
int32_t run_binary(pteron_kernel_context* ctx, pteron_value* const* args, size_t n, const Spec& s) {
  Args a{ctx, args, n, s.op};
  BinaryOperands b;
  int32_t ct = 0;
  PTERON_CHECK_OK(read_binary_args(a, s.scalar_other, false, false, &b, &ct));
  if (s.kind == Op::Atan2 && !is_floating(ct)) ct = PTERON_DTYPE_FLOAT32;
  PTERON_CHECK_OK(check_accepts(ctx, s.op, s.kind, ct));
  if (s.kind == Op::Pow && s.scalar_other && is_integral(b.self->dtype, true) &&
      b.other_s.kind != ScalarKind::Float && b.other_s.i < 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: integers to negative integer powers are not allowed (exponent %lld)", s.op,
                static_cast<long long>(b.other_s.i));
  if (!can_cast(ct, b.out->dtype)) return cast_error(ctx, s.op, ct, b.out->dtype);
  PTERON_CHECK_OK(resize_binary_out(ctx, s.op, b));

  bool zero = false;
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    const Op kind = s.kind;
    if (b.other) {
      const pteron_tensor* ins[2] = {b.self, b.other};
      map_elements<C, C>(ins, b.out, [&](C x, C y) { return apply<C>(kind, x, y, &zero); });
    } else {
      const C y = b.other_s.to<C>();
      if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
        if (divides(kind) && y == C(0)) {
          zero = true;
          return;
        }
      }
      const pteron_tensor* ins[1] = {b.self};
      map_elements<C, C>(ins, b.out, [&](C x) { return apply<C>(kind, x, y, &zero); });
    }
  });
  if (zero) return zero_division(ctx, s.op);
  return PTERON_OK;
}

// pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out)
int32_t pow_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::pow.Scalar_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(3));
  Scalar base;
  pteron_tensor *exponent = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_scalar(a, 0, "self", &base));
  PTERON_CHECK_OK(a.tensor(1, "exponent", &exponent));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "exponent", exponent->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "exponent", exponent));
  ResultType rt;
  rt.add_scalar(base.kind);
  rt.add_tensor(exponent);
  const int32_t ct = rt.get();
  PTERON_CHECK_OK(check_accepts(ctx, op, Op::Pow, ct));
  if (!can_cast(ct, out->dtype)) return cast_error(ctx, op, ct, out->dtype);
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, exponent->sizes, exponent->dim));
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    const C x = base.to<C>();
    bool unused = false;
    const pteron_tensor* ins[1] = {exponent};
    map_elements<C, C>(ins, out, [&](C y) { return apply<C>(Op::Pow, x, y, &unused); });
  });
  return PTERON_OK;
}

// ---- logical_and / or / xor ----------------------------------------------------------

enum class Logic { And, Or, Xor };

int32_t run_logical(pteron_kernel_context* ctx, pteron_value* const* args, size_t n, const char* op,
                    Logic kind) {
  Args a{ctx, args, n, op};
  BinaryOperands b;
  int32_t unused_ct = 0;  // the operands are read as "nonzero", whatever their dtypes
  PTERON_CHECK_OK(read_binary_args(a, false, false, false, &b, &unused_ct));
  PTERON_CHECK_OK(resize_binary_out(ctx, op, b));
  const pteron_tensor* ins[2] = {b.self, b.other};
  map_elements<bool, bool>(ins, b.out, [kind](bool x, bool y) {
    switch (kind) {
      case Logic::And: return x && y;
      case Logic::Or: return x || y;
      case Logic::Xor: return x != y;
    }
    return false;
  });
  return PTERON_OK;
}

#define PTERON_BINARY_MORE(fn, opname, kind, scalar)                            \
  int32_t fn(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    static const Spec spec{opname, kind, scalar};                               \
    return run_binary(ctx, args, n, spec);                                      \
  }

PTERON_BINARY_MORE(atan2_out, "aten::atan2.out", Op::Atan2, false)
PTERON_BINARY_MORE(bitwise_and_scalar_out, "aten::bitwise_and.Scalar_out", Op::And, true)
PTERON_BINARY_MORE(bitwise_and_tensor_out, "aten::bitwise_and.Tensor_out", Op::And, false)
PTERON_BINARY_MORE(bitwise_or_scalar_out, "aten::bitwise_or.Scalar_out", Op::Or, true)
PTERON_BINARY_MORE(bitwise_or_tensor_out, "aten::bitwise_or.Tensor_out", Op::Or, false)
PTERON_BINARY_MORE(bitwise_xor_scalar_out, "aten::bitwise_xor.Scalar_out", Op::Xor, true)
PTERON_BINARY_MORE(bitwise_xor_tensor_out, "aten::bitwise_xor.Tensor_out", Op::Xor, false)
PTERON_BINARY_MORE(shl_tensor_out, "aten::bitwise_left_shift.Tensor_out", Op::Shl, false)
PTERON_BINARY_MORE(shl_scalar_out, "aten::bitwise_left_shift.Tensor_Scalar_out", Op::Shl, true)
PTERON_BINARY_MORE(shr_tensor_out, "aten::bitwise_right_shift.Tensor_out", Op::Shr, false)
PTERON_BINARY_MORE(shr_scalar_out, "aten::bitwise_right_shift.Tensor_Scalar_out", Op::Shr, true)
PTERON_BINARY_MORE(floor_divide_out, "aten::floor_divide.out", Op::FloorDiv, false)
PTERON_BINARY_MORE(fmod_tensor_out, "aten::fmod.Tensor_out", Op::Fmod, false)
PTERON_BINARY_MORE(fmod_scalar_out, "aten::fmod.Scalar_out", Op::Fmod, true)
PTERON_BINARY_MORE(remainder_tensor_out, "aten::remainder.Tensor_out", Op::Remainder, false)
PTERON_BINARY_MORE(remainder_scalar_out, "aten::remainder.Scalar_out", Op::Remainder, true)
PTERON_BINARY_MORE(pow_tensor_scalar_out, "aten::pow.Tensor_Scalar_out", Op::Pow, true)
PTERON_BINARY_MORE(pow_tensor_tensor_out, "aten::pow.Tensor_Tensor_out", Op::Pow, false)
PTERON_BINARY_MORE(maximum_out, "aten::maximum.out", Op::Maximum, false)
PTERON_BINARY_MORE(minimum_out, "aten::minimum.out", Op::Minimum, false)

#undef PTERON_BINARY_MORE

int32_t logical_and_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return run_logical(ctx, args, n, "aten::logical_and.out", Logic::And);
}
int32_t logical_or_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return run_logical(ctx, args, n, "aten::logical_or.out", Logic::Or);
}
int32_t logical_xor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return run_logical(ctx, args, n, "aten::logical_xor.out", Logic::Xor);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::atan2", "out", nullptr, atan2_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_and", "Scalar_out", nullptr, bitwise_and_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_and", "Tensor_out", nullptr, bitwise_and_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_or", "Scalar_out", nullptr, bitwise_or_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_or", "Tensor_out", nullptr, bitwise_or_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_xor", "Scalar_out", nullptr, bitwise_xor_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_xor", "Tensor_out", nullptr, bitwise_xor_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_left_shift", "Tensor_out", nullptr, shl_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_left_shift", "Tensor_Scalar_out", nullptr, shl_scalar_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_right_shift", "Tensor_out", nullptr, shr_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_right_shift", "Tensor_Scalar_out", nullptr, shr_scalar_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"aten::floor_divide", "out", nullptr, floor_divide_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::fmod", "Tensor_out", nullptr, fmod_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::fmod", "Scalar_out", nullptr, fmod_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::remainder", "Tensor_out", nullptr, remainder_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::remainder", "Scalar_out", nullptr, remainder_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::pow", "Scalar_out", nullptr, pow_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::pow", "Tensor_Scalar_out", nullptr, pow_tensor_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::pow", "Tensor_Tensor_out", nullptr, pow_tensor_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::maximum", "out", nullptr, maximum_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::minimum", "out", nullptr, minimum_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::logical_and", "out", nullptr, logical_and_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::logical_or", "out", nullptr, logical_or_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::logical_xor", "out", nullptr, logical_xor_out, PTERON_KERNEL_PRIORITY, 0})
