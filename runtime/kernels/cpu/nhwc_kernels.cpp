// SPDX-License-Identifier: BSD-3-Clause
// nhwc_kernels.cpp - the hot loops of nhwc.h, compiled once per ISA level
// (PTERON_OPT_ISA, as isa_kernels.cpp).
#include "nhwc.h"

namespace pteron_opt {}  // namespace pteron_opt
