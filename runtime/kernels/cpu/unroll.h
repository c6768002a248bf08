// SPDX-License-Identifier: BSD-3-Clause
// unroll.h - unrolled loops for microkernels.
//
// PTERON_UNROLL, before a loop with a constant trip count (up to 32): unrolled fully by GCC and
// Clang, its arrays of accumulators stay in registers. gcc 12 does not unroll such loops by
// itself when they hold run-time tests, and then keeps the arrays on the stack (zeroed with
// `rep stos` at every call, spilled at every iteration). MSVC has no unroll pragma: there it
// expands to nothing, and a loop whose body must fold per iteration uses unroll<N> instead.
//
// unroll<N>(f) calls f(std::integral_constant<int, i>{}) for i = 0 .. N-1, in order, each call
// inlined (PTERON_FORCEINLINE), on every compiler: inside f, `decltype(i)::value` is a constant
// expression, so index arithmetic and `if constexpr` tests fold at compile time whether or not
// the compiler unrolls loops by itself. Internal linkage (static): each ISA level's translation
// unit, compiled with its own target flags, keeps its own copies.
#pragma once

#include <type_traits>
#include <utility>

#if defined(__GNUC__) && !defined(__clang__)
#define PTERON_UNROLL _Pragma("GCC unroll 32")
#elif defined(__clang__)
#define PTERON_UNROLL _Pragma("unroll")
#else
#define PTERON_UNROLL
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define PTERON_FORCEINLINE __forceinline
#elif defined(__GNUC__)
#define PTERON_FORCEINLINE inline __attribute__((always_inline))
#else
#define PTERON_FORCEINLINE inline
#endif

namespace pteron::cpu {

template <class F, int... I>
static PTERON_FORCEINLINE void unroll_seq(F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}

template <int N, class F>
static PTERON_FORCEINLINE void unroll(F&& f) {
  unroll_seq(f, std::make_integer_sequence<int, N>{});
}

}  // namespace pteron::cpu
