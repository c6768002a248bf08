// SPDX-License-Identifier: BSD-3-Clause
// settings.h - what extension_cuda set (settings.cpp), read at each method load.
#pragma once

#include <cstdint>

namespace pteron {
namespace cuda {

int32_t configured_device();  // the device ordinal (default 0)
void* configured_stream();    // the application's CUstream, or nullptr (the delegate's own)

}  // namespace cuda
}  // namespace pteron
