// SPDX-License-Identifier: BSD-3-Clause
// dispatch.cpp - kernels_optimized's report of the ISA level its hot loops
// run at (the CPU kernel library's choice, runtime/cpu/src/dispatch.cpp).
#include "pteron_cpu/isa.h"
#include "pteron/kernels_optimized.h"

extern "C" const char* pteron_kernels_optimized_isa(void) { return pteron_cpu::ops().name; }
