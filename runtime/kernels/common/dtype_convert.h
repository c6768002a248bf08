// SPDX-License-Identifier: BSD-3-Clause
// dtype_convert.h - element conversion between the dtypes the kernels
// compute in, PyTorch's casting rules (can_cast, result_type) and typed
// loads/stores (header-only, private to the kernel libraries). float16 and
// bfloat16 (Half, BFloat16: half.h) convert through float.
//
// The one float -> integer rule of every kernel is PyTorch's on x86
// (what torch.Tensor.to() gives there), without C++ undefined behaviour:
// truncation toward zero; NaN and values outside the target's range give
// the "integer indefinite" value INT64_MIN / INT32_MIN for 64- and 32-bit
// targets, and targets narrower than 32 bits wrap the int32 value (so NaN
// becomes 0 in int16, int8, uint8). Integer -> integer wraps; anything ->
// bool is "nonzero".
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernel_util.h"

namespace pteron::kern {

template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    // Half / BFloat16 read as float, then float's rules
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    // through float, rounded to nearest even (c10::Half / BFloat16 do the same)
    if constexpr (std::is_same_v<From, bool>)
      return To(v ? 1.0f : 0.0f);
    else
      return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if constexpr (sizeof(To) == 8) {
      if (!(v >= From(-9223372036854775808.0) && v < From(9223372036854775808.0)))
        return static_cast<To>(std::numeric_limits<int64_t>::min());
      return static_cast<To>(static_cast<int64_t>(v));
    } else {
      int32_t i;
      if (!(v > From(-2147483649.0) && v < From(2147483648.0)))
        i = std::numeric_limits<int32_t>::min();
      else
        i = static_cast<int32_t>(v);
      return static_cast<To>(i);
    }
  } else {
    return static_cast<To>(v);
  }
}

// Reads element i of a tensor storage of dtype `dt` converted to C.
template <typename C>
inline C load(const void* p, int32_t dt, int64_t i) {
  switch (dt) {
    case PTERON_DTYPE_UINT8: return convert<C>(static_cast<const uint8_t*>(p)[i]);
    case PTERON_DTYPE_INT8: return convert<C>(static_cast<const int8_t*>(p)[i]);
    case PTERON_DTYPE_INT16: return convert<C>(static_cast<const int16_t*>(p)[i]);
    case PTERON_DTYPE_UINT16: return convert<C>(static_cast<const uint16_t*>(p)[i]);
    case PTERON_DTYPE_INT32: return convert<C>(static_cast<const int32_t*>(p)[i]);
    case PTERON_DTYPE_INT64: return convert<C>(static_cast<const int64_t*>(p)[i]);
    case PTERON_DTYPE_FLOAT32: return convert<C>(static_cast<const float*>(p)[i]);
    case PTERON_DTYPE_FLOAT64: return convert<C>(static_cast<const double*>(p)[i]);
    case PTERON_DTYPE_FLOAT16: return convert<C>(static_cast<const Half*>(p)[i]);
    case PTERON_DTYPE_BFLOAT16: return convert<C>(static_cast<const BFloat16*>(p)[i]);
    case PTERON_DTYPE_BOOL: {
      uint8_t b;  // any nonzero byte is true; never read a bool object
      std::memcpy(&b, static_cast<const uint8_t*>(p) + i, 1);
      return convert<C>(b != 0);
    }
    default: return C(0);
  }
}

// Writes v (of type C) as element i of a storage of dtype `dt`.
template <typename C>
inline void store(void* p, int32_t dt, int64_t i, C v) {
  switch (dt) {
    case PTERON_DTYPE_UINT8: static_cast<uint8_t*>(p)[i] = convert<uint8_t>(v); break;
    case PTERON_DTYPE_INT8: static_cast<int8_t*>(p)[i] = convert<int8_t>(v); break;
    case PTERON_DTYPE_INT16: static_cast<int16_t*>(p)[i] = convert<int16_t>(v); break;
    case PTERON_DTYPE_UINT16: static_cast<uint16_t*>(p)[i] = convert<uint16_t>(v); break;
    case PTERON_DTYPE_INT32: static_cast<int32_t*>(p)[i] = convert<int32_t>(v); break;
    case PTERON_DTYPE_INT64: static_cast<int64_t*>(p)[i] = convert<int64_t>(v); break;
    case PTERON_DTYPE_FLOAT32: static_cast<float*>(p)[i] = convert<float>(v); break;
    case PTERON_DTYPE_FLOAT64: static_cast<double*>(p)[i] = convert<double>(v); break;
    case PTERON_DTYPE_FLOAT16: static_cast<Half*>(p)[i] = convert<Half>(v); break;
    case PTERON_DTYPE_BFLOAT16: static_cast<BFloat16*>(p)[i] = convert<BFloat16>(v); break;
    case PTERON_DTYPE_BOOL: static_cast<uint8_t*>(p)[i] = convert<bool>(v) ? 1 : 0; break;
    default: break;
  }
}

// Element i of a typed storage; bool storage is read as a byte.
template <typename T>
inline T load_typed(const void* p, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t b;
    std::memcpy(&b, static_cast<const uint8_t*>(p) + i, 1);
    return b != 0;
  } else {
    return static_cast<const T*>(p)[i];
  }
}

// convert() of a value read from storage. Bool storage is read as bytes
// (kBoolSrc): a malformed program can hand a kernel bool tensors whose bytes
// are not 0/1, and loading such a byte as C++ bool is undefined behaviour.
// Any nonzero byte reads as true.
template <typename To, typename From, bool kBoolSrc = false>
inline To load_convert(From v) {
  if constexpr (kBoolSrc)
    return convert<To>(v != From(0));
  else
    return convert<To>(v);
}

// Wrapping integer arithmetic (no signed-overflow UB).
template <typename T>
inline T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// The dtype of C++ type T (-1 for a type no dtype maps to).
template <typename T>
constexpr int32_t dtype_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return PTERON_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return PTERON_DTYPE_INT8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return PTERON_DTYPE_INT16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return PTERON_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return PTERON_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, float>)
    return PTERON_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return PTERON_DTYPE_FLOAT64;
  else if constexpr (std::is_same_v<T, bool>)
    return PTERON_DTYPE_BOOL;
  else if constexpr (std::is_same_v<T, Half>)
    return PTERON_DTYPE_FLOAT16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return PTERON_DTYPE_BFLOAT16;
  else
    return -1;
}

// ---- PyTorch's casting rules ------------------------------------------------

// PyTorch's canCast: no floating -> integral, no non-bool -> bool.
inline bool can_cast(int32_t from, int32_t to) {
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != PTERON_DTYPE_BOOL && to == PTERON_DTYPE_BOOL) return false;
  return true;
}

// PyTorch's result_type over tensors and Python scalars: dimensioned tensors
// decide the dtype, zero-dim tensors and scalars only lift the category.
struct ResultType {
  static constexpr int32_t kUndef = -1;
  int32_t dim_result = kUndef, zero_result = kUndef, wrapped_result = kUndef;

  static int32_t promote_skip(int32_t a, int32_t b) {
    if (a == kUndef) return b;
    if (b == kUndef) return a;
    return promote_types(a, b);
  }
  static int32_t combine(int32_t higher, int32_t lower) {
    if (higher != kUndef && is_floating(higher)) return higher;
    if (higher == PTERON_DTYPE_BOOL || (lower != kUndef && is_floating(lower)))
      return promote_skip(higher, lower);
    if (higher != kUndef) return higher;
    return lower;
  }
  void add_tensor(const pteron_tensor* t) {
    if (t->dim == 0)
      zero_result = promote_skip(zero_result, t->dtype);
    else
      dim_result = promote_skip(dim_result, t->dtype);
  }
  void add_scalar(ScalarKind k) {
    int32_t d = k == ScalarKind::Float ? PTERON_DTYPE_FLOAT32
                : k == ScalarKind::Int ? PTERON_DTYPE_INT64
                                       : PTERON_DTYPE_BOOL;
    wrapped_result = promote_skip(wrapped_result, d);
  }
  int32_t get() const { return combine(dim_result, combine(zero_result, wrapped_result)); }
};

}  // namespace pteron::kern
