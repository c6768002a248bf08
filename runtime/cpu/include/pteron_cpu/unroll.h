// SPDX-License-Identifier: BSD-3-Clause
// unroll.h - unrolled loops for microkernels.
//
// PTERON_UNROLL, before a loop with a constant trip count (up to 32): unrolled fully by GCC and
// Clang, its arrays of accumulators stay in registers. gcc 12 does not unroll such loops by
// itself when they hold run-time tests, and then keeps the arrays on the stack (zeroed with
// `rep stos` at every call, spilled at every iteration). MSVC has no unroll pragma: there it
// expands to nothing, and a loop whose body must fold per iteration uses unroll<N> instead.
//
// unroll<N>(f) calls f(std::integral_constant<int, i>{}) for i = 0 .. N-1, in order, the calls
// inlined on every compiler (MSVC: [[msvc::forceinline_calls]]): inside f, `decltype(i)::value`
// is a constant expression, so index arithmetic and `if constexpr` tests fold at compile time
// whether or not the compiler unrolls loops by itself. Under MSVC an array that f captures
// stays in registers but is also stored at each update (its address escaped): fine for the
// depthwise kernel's groups, too slow for a GEMM's K loop, which writes out its one or two
// vectors per row instead (gemm_kernels.cpp). Internal linkage (static): each ISA level's
// translation unit, compiled with its own target flags, keeps its own copies.
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
#if defined(_MSC_VER) && !defined(__clang__)
  // MSVC inlines a lambda given to a __forceinline function only on request: without it the
  // calls stayed, and the accumulators the lambdas share went to memory.
  [[msvc::forceinline_calls]] { (f(std::integral_constant<int, I>{}), ...); }
#else
  (f(std::integral_constant<int, I>{}), ...);
#endif
}

template <int N, class F>
static PTERON_FORCEINLINE void unroll(F&& f) {
  unroll_seq(f, std::make_integer_sequence<int, N>{});
}

}  // namespace pteron::cpu
