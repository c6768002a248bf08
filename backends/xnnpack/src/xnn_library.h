// SPDX-License-Identifier: BSD-3-Clause
// xnn_library.h - the delegate's only contact with the XNNPACK library (xnn_library.cpp, the
// one file that includes xnnpack.h). Without a linked library (PTERON_XNN_LINKED 0) it supports
// no node and every call that would need it fails with "no XNNPACK library is linked".
#ifndef PTERON_XNNPACK_XNN_LIBRARY_H
#define PTERON_XNNPACK_XNN_LIBRARY_H

#include <string>
#include <vector>

#include "graph.h"
#include "types.h"

namespace pteron {
namespace xnnpack {

// Can the linked XNNPACK (as detected at configure time) define node `n`?
bool lib_supports(const Node& n);

// xnn_initialize; false with `err` naming the status.
bool lib_initialize(std::string* err);

// The XNNPACK runtime of segment `s` of graph `g` for these shapes (every value's), on `pool`
// (a pthreadpool_t, or null: the calling thread). The runtime is opaque here (xnn_runtime_t).
bool build_segment(const Graph& g, const Step& s, const std::vector<Shape>& shapes, void* pool,
                   void** rt_out, std::string* err);

// Runs segment `rt`: boundary value i lives at ptr[boundary[i]].
bool run_segment(void* rt, const Step& s, const std::vector<float*>& ptr, std::string* err);

void delete_runtime(void* rt);

// The pool XNNPACK runtimes are made with: the process's pthreadpool, or null
// where the process pool is pteron's own (the runtimes then run serially).
void* library_pool();

// What the library's runtimes run on, for Options::debug (PTERON_XNNPACK_DEBUG).
std::string library_threads();

// The library found at configure time, in words (PTERON_XNN_DESCRIPTION).
const char* library_description();

}  // namespace xnnpack
}  // namespace pteron

#endif
