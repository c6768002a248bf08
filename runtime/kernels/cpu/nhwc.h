// SPDX-License-Identifier: BSD-3-Clause
// nhwc.h - NHWC window and element-wise kernels (depthwise convolution, pooling, broadcasting
// binary, unary, softmax, resize) for backend_xnnpack's own nodes. Part of pteron_cpu
// (runtime/kernels/cpu/CMakeLists.txt); the per-ISA hot loops are in nhwc_kernels.cpp, the driver
// in nhwc.cpp.
#pragma once

namespace pteron_opt {}  // namespace pteron_opt
