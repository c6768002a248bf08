// SPDX-License-Identifier: BSD-3-Clause
// graph.h - PteronCudaBackend's processed blob (schema/cuda_graph.fbs), read
// and checked at method load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pteron/kernel.h"

namespace pteron {
namespace cuda {

constexpr uint32_t kBlobVersion = 1;  // cuda_graph.fbs Graph.version

struct Value {
  int8_t dtype = 0;             // ScalarType number: 6 float32, 4 int64, 3 int32, 11 bool
  std::vector<int64_t> shape;   // row-major, contiguous
  int64_t numel = 1;
  int32_t external = -1;        // delegate argument index, or -1
  bool is_output = false;       // an external the graph writes
  std::string constant;         // named-data key ("" = not a constant)
};

struct Node {
  std::string kernel;
  std::vector<uint32_t> inputs, outputs;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  uint32_t num_externals = 0;   // 1 + the largest external index (0 without externals)
};

// Reads `size` bytes at `data` into *g. False, with *err saying what is wrong
// ("PteronCudaBackend blob: ..."), unless: the buffer carries identifier
// "PTCU" and passes the flatbuffers verifier; version is kBlobVersion; every
// value has a known dtype, at most 16 dimensions, sizes >= 0 and at most 2^40
// elements; externals are distinct indices below 65536, an output is an
// external, a constant is not; every node names a kernel, and its inputs and
// outputs are value indices; no node writes a constant or an input external,
// no value is written twice, and every value a node reads is an input
// external, a constant or written by an earlier node; every output external
// is written. Which kernels exist is not checked here (the kernel table is).
bool parse_graph(const uint8_t* data, size_t size, Graph* g, std::string* err);

// *err = "PteronCudaBackend blob: " + the formatted message; returns false.
bool blob_error(std::string* err, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

// The bytes of each constant of g in the program's named data (pteron_named_data_get, so
// only inside the delegate's init; they live as long as the program): (*data)[i] for value
// i, nullptr for a value that is no constant. False, with *err, for a key the program lacks
// or a byte size other than the value's shape needs.
bool constant_bytes(pteron_kernel_context* ctx, const Graph& g, std::vector<const void*>* data,
                    std::string* err);

// The host data of each external of g in the delegate call's arguments: (*host)[i] for
// value i, nullptr for a value that is not an external. PTERON_ERROR_INVALID_ARGUMENT with
// fewer arguments than the graph's externals, PTERON_ERROR_SHAPE_MISMATCH for an argument
// that is not the contiguous float32 tensor of the value's shape (*err names it), else
// PTERON_OK.
int32_t external_data(const Graph& g, pteron_value* const* args, size_t num_args,
                      std::vector<float*>* host, std::string* err);

}  // namespace cuda
}  // namespace pteron
