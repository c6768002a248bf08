// SPDX-License-Identifier: BSD-3-Clause
// half.h - the two 16-bit floating types of the kernels: Half (IEEE 754
// binary16, PTERON_DTYPE_FLOAT16) and BFloat16 (the upper half of a float32,
// PTERON_DTYPE_BFLOAT16), as storage types with exact conversions to float
// and round-to-nearest-even conversions from float (header-only, private to
// the kernel libraries; no dependency on other headers here).
//
// They are storage types: a kernel reads an element as float, computes in
// float (or double) and rounds once when it stores, as PyTorch's CPU kernels
// do for these dtypes. A double converts through float (as c10::Half and
// c10::BFloat16 do). NaN stays NaN (quiet); overflow gives +-inf.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace pteron::kern {

// ---- bit conversions ----------------------------------------------------------

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// binary16 bits -> float (exact).
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // inf, NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
  // zero and subnormals: man * 2^-24, exact in float
  const float v = static_cast<float>(man) * bits_float(0x33800000u);  // 2^-24
  return sign ? -v : v;
}

// float -> binary16 bits, rounding to nearest even.
inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN: quiet
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (ax < 0x38800000u) {
    // below 2^-14: a subnormal (or zero). Adding 0.5 puts the value's bits
    // at the bottom of the mantissa, rounded to nearest even by the FPU.
    const float r = bits_float(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(r) - 0x3f000000u));
  }
  // normal: rebias the exponent (127 -> 15) and round the 13 dropped bits
  const uint32_t odd = (ax >> 13) & 1u;
  const uint32_t r = ax + 0xc8000fffu + odd;
  return static_cast<uint16_t>(sign | (r >> 13));
}

inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

// float -> bfloat16 bits, rounding to nearest even.
inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // NaN: the quiet NaN
  const uint32_t r = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(r >> 16);
}

// A double narrowed to float; out-of-range values become +-inf (never the
// undefined out-of-range conversion). NaN stays NaN.
inline float narrow_to_float(double d) {
  if (d > static_cast<double>(std::numeric_limits<float>::max()))
    return std::numeric_limits<float>::infinity();
  if (d < -static_cast<double>(std::numeric_limits<float>::max()))
    return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

// ---- the types ------------------------------------------------------------------

// Converting constructors are explicit (every rounding is visible in the
// code); reading converts implicitly to float, so comparisons and
// std::isnan work on the value.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(float_to_half_bits(f)) {}
  explicit Half(double d) : Half(narrow_to_float(d)) {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  explicit Half(I i) : Half(static_cast<float>(i)) {}
  operator float() const { return half_bits_to_float(bits); }
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  explicit BFloat16(double d) : BFloat16(narrow_to_float(d)) {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  explicit BFloat16(I i) : BFloat16(static_cast<float>(i)) {}
  operator float() const { return bfloat16_bits_to_float(bits); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage types");

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// C++ floating types and the 16-bit ones.
template <typename T>
inline constexpr bool is_float_type_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type a kernel computes in for storage type T: float for the 16-bit
// types, T itself otherwise.
template <typename T>
using compute_type_t = std::conditional_t<is_half_v<T>, float, T>;

}  // namespace pteron::kern
