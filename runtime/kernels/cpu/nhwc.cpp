// SPDX-License-Identifier: BSD-3-Clause
// nhwc.cpp - the driver of nhwc.h, compiled at the baseline ISA.
#include "nhwc.h"

namespace pteron_opt {}  // namespace pteron_opt
