// SPDX-License-Identifier: BSD-3-Clause
// unroll.h - PTERON_UNROLL, before a loop with a constant trip count (up to 32) in a
// microkernel: unrolled fully, its arrays of accumulators stay in registers. gcc 12 does not
// unroll such loops by itself when they hold run-time tests, and then keeps the arrays on the
// stack (zeroed with `rep stos` at every call, spilled at every iteration).
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#define PTERON_UNROLL _Pragma("GCC unroll 32")
#elif defined(__clang__)
#define PTERON_UNROLL _Pragma("unroll")
#else
#define PTERON_UNROLL
#endif
