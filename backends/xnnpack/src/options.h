// SPDX-License-Identifier: BSD-3-Clause
// options.h - the XnnpackBackend delegate's settings, read once per method load (init) and
// handed to every stage through the Delegate (types.h) and the passes' context
// (passes/passes.h): no pass reads the environment.
//
// Each setting comes from the delegate call's compile specs first, then from the environment.
// A compile spec's key is the variable's name after PTERON_XNNPACK_, in lower case; its value is
// the variable's text (raw bytes, a trailing NUL ignored; empty: not set):
//   key          variable                     value
//   fuse         PTERON_XNNPACK_FUSE          1/0, true/false, yes/no, on/off (default on):
//                                             the load-time fusions (passes/fusion*.cpp, and
//                                             plan/placement.cpp's in-place concatenation)
//   use_library  PTERON_XNNPACK_USE_LIBRARY   none, all, or node type names separated by commas
//                                             (e.g. Conv2d,FullyConnected); unset or empty: the
//                                             default table (library_first, options.cpp)
//   profile      PTERON_XNNPACK_PROFILE       a switch (default off): per-step times on stderr
//                                             when the delegate is destroyed
//   debug        PTERON_XNNPACK_DEBUG         a switch (default off): the plan on stderr at
//                                             method load
// A compile spec with another key is not the delegate's and is ignored. A compile spec with a
// value it cannot read fails the load (INVALID_ARGUMENT, naming it); an environment switch it
// cannot read is ignored with a warning once per process; an unknown node type in
// PTERON_XNNPACK_USE_LIBRARY fails the load, naming it.
#ifndef PTERON_XNNPACK_OPTIONS_H
#define PTERON_XNNPACK_OPTIONS_H

#include <cstddef>
#include <string>
#include <vector>

#include "graph.h"
#include "pteron/kernel.h"

namespace pteron {
namespace xnnpack {

// Which side runs each node type, where both can (use_library): the default table
// (library_first), pteron's kernels for every node (None), the library for every node it can
// define (All), or the library for the types listed (List).
struct LibraryChoice {
  enum Mode { Table, None, All, List } mode = Table;
  std::vector<Op> list;  // List: the node types the library runs
  std::string text;      // the setting's value, for messages
  std::string setting;   // where it came from, for messages: "PTERON_XNNPACK_USE_LIBRARY" or
                         // "compile spec use_library"
};

struct Options {
  bool fuse = true;           // fuse / PTERON_XNNPACK_FUSE
  LibraryChoice use_library;  // use_library / PTERON_XNNPACK_USE_LIBRARY
  bool profile = false;       // profile / PTERON_XNNPACK_PROFILE
  bool debug = false;         // debug / PTERON_XNNPACK_DEBUG
};

// Reads the options from specs[0..num_specs) (specs may be null when num_specs is 0), then the
// environment for the keys no spec set. False with `err` naming the setting that cannot be read.
bool read_options(const pteron_compile_spec* specs, size_t num_specs, Options* out,
                  std::string* err);

// Does the library run node type `op` (where it can define the node), as `options` say?
bool wants_library(const Options& options, Op op);

}  // namespace xnnpack
}  // namespace pteron

#endif
