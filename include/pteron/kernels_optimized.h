// SPDX-License-Identifier: BSD-3-Clause
/* pteron/kernels_optimized.h - the small C API of the kernels_optimized
 * component (pteron_kernels_optimized.dll / libpteron_kernels_optimized.so).
 *
 * The library registers its kernels with the runtime when it loads (priority
 * 100, so they win over kernels_portable's whatever the load order); nothing
 * here is needed to use them. What it adds is a way to see which instruction
 * set its hot loops (GEMM, convolution, element-wise) run with.
 *
 * ISA dispatch: the library's baseline is x86-64-v2 on x86-64 (no baseline
 * restriction elsewhere). Its hot loops are also compiled for AVX2+FMA and
 * for AVX-512 (F, BW, DQ, VL); when the library is first used it picks the
 * widest level that both the CPU and the operating system support (CPUID and
 * XGETBV), once per process. The environment variable PTERON_ISA=baseline|
 * avx2|avx512, read at that moment, can only lower the level: a request above
 * what the CPU supports gets the CPU's best level instead.
 */
#ifndef PTERON_KERNELS_OPTIMIZED_H
#define PTERON_KERNELS_OPTIMIZED_H

#include "pteron/export.h"

#if defined(PTERON_BUILDING_KERNELS_OPTIMIZED)
#define PTERON_KERNELS_OPTIMIZED_API PTERON_DLL_EXPORT
#else
#define PTERON_KERNELS_OPTIMIZED_API PTERON_DLL_IMPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The ISA level the optimized kernels run with in this process:
 * "baseline", "avx2" or "avx512" (a static string; never NULL). */
PTERON_KERNELS_OPTIMIZED_API const char* pteron_kernels_optimized_isa(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTERON_KERNELS_OPTIMIZED_H */
