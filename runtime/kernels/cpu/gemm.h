// SPDX-License-Identifier: BSD-3-Clause
// gemm.h - packed-weight GEMM (fully connected, convolution as GEMM, batch matmul): weight packing,
// register-blocked microkernels per ISA level, the parallel driver. Part of pteron_cpu
// (runtime/kernels/cpu/CMakeLists.txt); the per-ISA hot loops are in gemm_kernels.cpp, the driver
// in gemm.cpp.
#pragma once

namespace pteron_opt {}  // namespace pteron_opt
