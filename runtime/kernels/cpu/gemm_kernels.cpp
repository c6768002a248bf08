// SPDX-License-Identifier: BSD-3-Clause
// gemm_kernels.cpp - the hot loops of gemm.h, compiled once per ISA level
// (PTERON_OPT_ISA, as isa_kernels.cpp).
#include "gemm.h"

namespace pteron_opt {}  // namespace pteron_opt
