// SPDX-License-Identifier: BSD-3-Clause
// device.h - a PteronCudaBackend graph on the GPU: the embedded fatbin loaded
// as a module in the device's primary context (shared with any other user of
// that device in the process, PyTorch included), device memory for every
// value, and the launches of plan.h on a stream of the delegate's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"
#include "plan.h"
#include "pteron/kernel.h"

namespace pteron {
namespace cuda {

struct DeviceGraph;

// The train whose device code this library embeds ("cu134"), or "" for none.
const char* embedded_train();

// Loads the module and copies the constants (constant_data[i]: the host
// bytes of value i, nullptr unless it is a constant) to device `ordinal`.
// `stream`: a CUstream of that device's primary context to run on (the
// application's, through extension_cuda), or nullptr for one of its own.
// Needs a usable driver (driver()). Errors (*err says what and what to do):
//  - PTERON_ERROR_NOT_SUPPORTED: no embedded device code; no SASS for this
//    GPU's architecture and PTX the driver cannot JIT (names the GPU, its
//    sm_XY, the train, its PTX ISA and the driver's CUDA version);
//  - PTERON_ERROR_INVALID_ARGUMENT: no device of that ordinal;
//  - PTERON_ERROR_OUT_OF_MEMORY: device memory;
//  - PTERON_ERROR_DELEGATE_FAILED: any other driver failure (call and CUresult).
int32_t device_prepare(const Graph& g, const std::vector<Launch>& launches,
                       const std::vector<const void*>& constant_data, int ordinal, void* stream,
                       DeviceGraph** out, std::string* err);

// Copies the input externals to the device, runs the launches, copies the
// outputs back and waits for the stream. args are the delegate call's
// arguments (each a contiguous float32 tensor of the blob's shape, else
// PTERON_ERROR_SHAPE_MISMATCH); driver failures are PTERON_ERROR_DELEGATE_FAILED.
int32_t device_execute(DeviceGraph* d, pteron_value* const* args, size_t num_args, std::string* err);

// Frees everything device_prepare made; accepts nullptr.
void device_release(DeviceGraph* d);

}  // namespace cuda
}  // namespace pteron
