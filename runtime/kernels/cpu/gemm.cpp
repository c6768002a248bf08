// SPDX-License-Identifier: BSD-3-Clause
// gemm.cpp - the driver of gemm.h, compiled at the baseline ISA.
#include "gemm.h"

namespace pteron_opt {}  // namespace pteron_opt
