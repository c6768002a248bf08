// SPDX-License-Identifier: BSD-3-Clause
// graph_reader.h - what graph.cpp (blob, values, graph inputs and outputs) and graph_nodes.cpp
// (nodes) share while they read a blob into a Graph (graph.h). Internal to those two files.
#ifndef PTERON_XNNPACK_GRAPH_READER_H
#define PTERON_XNNPACK_GRAPH_READER_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "graph.h"

namespace pteron {
namespace xnnpack {
namespace reader {

namespace fbx = ::pteron::xnn;

// Sets `err` to the formatted message; returns false.
template <typename... A>
bool fail(std::string* err, const char* fmt, A... a) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, a...);
  *err = buf;
  return false;
}

inline std::vector<size_t> to_sizes(const flatbuffers::Vector<uint32_t>* v) {
  std::vector<size_t> r;
  if (v)
    for (uint32_t x : *v) r.push_back(x);
  return r;
}

// Value ids as nodes use them -> indices into Graph::values.
struct ValueIds {
  std::unordered_map<uint32_t, uint32_t> index;
  uint32_t count = 0;  // values the graph defines
  bool find(uint32_t id, uint32_t* idx) const {
    auto it = index.find(id);
    if (it == index.end()) return false;
    *idx = it->second;
    return true;
  }
};

// Node `k` of the blob into g->nodes[k]: its parameters, operands (as value indices), window
// checks and output range (graph_nodes.cpp).
bool read_node(const fbx::Node* fn, uint32_t k, const ValueIds& ids, Graph* g, std::string* err);

}  // namespace reader
}  // namespace xnnpack
}  // namespace pteron

#endif
