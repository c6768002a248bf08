// SPDX-License-Identifier: BSD-3-Clause
// options.cpp - the delegate's settings (options.h): compile specs first, then the environment,
// read once at method load.
#include "options.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "graph.h"
#include "pteron/kernel.h"

namespace pteron {
namespace xnnpack {
namespace {

// Whether the linked library runs node type `op` by default (where it can
// define the node); every other type runs on pteron's own kernel. The rule: a
// type goes to the library only where the library measured faster in whole
// programs. Measured on the 2-core AVX2 EPYC with Debian 12's XNNPACK
// (bench/gemm/README.md; tests/xnnpack_nodes/export_nhwc.py --bench; the zoo
// with PTERON_XNNPACK_PROFILE=1): pteron's GEMM runs fully connected and
// convolution 2.2-2.5x faster at 1 thread; depthwise 5x5, resize and the
// broadcasting binaries are faster on pteron's side, depthwise 3x3 and softmax
// even; the library's pooling and sigmoid are 1.2-1.3x faster at 1 thread,
// but handing them over costs a segment boundary each (whole programs came
// out 5-10% slower) and the library runs single-threaded on the process's
// std::thread pool. So no type goes to the library by default;
// use_library (PTERON_XNNPACK_USE_LIBRARY) chooses it explicitly.
bool library_first(Op) { return false; }

// A switch's text: 1, true, yes or on (any case) is true; 0, false, no or off is false.
bool parse_switch(std::string s, bool* out) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    *out = true;
    return true;
  }
  if (s == "0" || s == "false" || s == "no" || s == "off") {
    *out = false;
    return true;
  }
  return false;
}

// A switch read from the environment variable `name`: as parse_switch; unset or empty is
// `unset`. Anything else is `unset` too, with a warning once per process naming the variable, so
// a misspelt setting is never silently taken.
bool env_switch(const char* name, bool unset) {
  const char* v = std::getenv(name);
  if (!v || !*v) return unset;
  bool on = unset;
  if (parse_switch(v, &on)) return on;
  const std::string msg = std::string("pteron: ignoring ") + name + "='" + v +
                          "' (expected 1 or 0, true or false, yes or no, on or off)";
  pteron_warn_once(name, msg.c_str());  // the value in full; control bytes escaped there
  return unset;
}

// A setting's text, safe to put in a message: a compile spec's bytes come from the program
// (bytes outside printable ASCII as \xNN).
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(u));
      out += buf;
    }
  }
  return out;
}

// use_library's text, from `setting` (for messages): "none" = pteron's kernels for every node
// (load fails naming a node type pteron has no kernel for); "all" = the library for every node
// it can define; otherwise comma-separated node type names (as graph.h's op_name spells them,
// e.g. "Conv2d,FullyConnected"): the library for those, pteron's kernels for the rest where it
// has them.
bool parse_library(const std::string& text, const char* setting, LibraryChoice* p,
                   std::string* err) {
  p->text = text;
  p->setting = setting;
  auto fail = [&](const std::string& why) {
    *err = std::string(setting) + "='" + printable(p->text) + "': " + why +
           " (use none, all, or node type names such as Conv2d,FullyConnected)";
    return false;
  };
  // Names are compared without surrounding blanks; none and all in any case, as the
  // switches are read, node type names as graph.h's op_name spells them.
  auto trim = [](const std::string& t) {
    const size_t b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  auto lower = [](std::string t) {
    for (char& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  const std::string whole = lower(trim(text));
  if (whole == "none") {
    p->mode = LibraryChoice::None;
    return true;
  }
  if (whole == "all") {
    p->mode = LibraryChoice::All;
    return true;
  }
  p->mode = LibraryChoice::List;
  size_t at = 0;
  while (at <= p->text.size()) {
    size_t end = p->text.find(',', at);
    if (end == std::string::npos) end = p->text.size();
    const std::string name = trim(p->text.substr(at, end - at));
    at = end + 1;
    if (name.empty()) continue;
    if (lower(name) == "none" || lower(name) == "all")
      return fail("'" + name + "' stands alone, not in a list of node types");
    bool found = false;
    for (int i = 1; i <= int(Op::MAX) && !found; ++i)
      if (name == op_name(Op(i))) p->list.push_back(Op(i)), found = true;
    if (!found) return fail("'" + printable(name) + "' is not a node type");
  }
  if (p->list.empty()) return fail("names no node type");
  return true;
}

}  // namespace

bool read_options(const pteron_compile_spec* specs, size_t num_specs, Options* out,
                  std::string* err) {
  Options o;
  bool fuse = false, use_library = false, profile = false, debug = false;  // set by a spec
  for (size_t i = 0; specs && i < num_specs; ++i) {
    const pteron_compile_spec& spec = specs[i];
    if (!spec.key) continue;
    const std::string key = spec.key;
    std::string value;
    if (spec.value) value.assign(reinterpret_cast<const char*>(spec.value), spec.value_size);
    if (!value.empty() && value.back() == '\0') value.pop_back();
    if (value.empty()) continue;
    // The switches: where each goes, and where the spec records that it set it.
    bool* flag = nullptr;
    bool* set = nullptr;
    if (key == "fuse") flag = &o.fuse, set = &fuse;
    if (key == "profile") flag = &o.profile, set = &profile;
    if (key == "debug") flag = &o.debug, set = &debug;
    if (flag) {
      if (!parse_switch(value, flag)) {
        *err = "compile spec " + key + "='" + printable(value) +
               "': expected 1 or 0, true or false, yes or no, on or off";
        return false;
      }
      *set = true;
    } else if (key == "use_library") {
      if (!parse_library(value, "compile spec use_library", &o.use_library, err)) return false;
      use_library = true;
    }
  }
  if (!fuse) o.fuse = env_switch("PTERON_XNNPACK_FUSE", true);
  if (!use_library) {
    const char* v = std::getenv("PTERON_XNNPACK_USE_LIBRARY");
    if (v && *v && !parse_library(v, "PTERON_XNNPACK_USE_LIBRARY", &o.use_library, err))
      return false;
  }
  if (!profile) o.profile = env_switch("PTERON_XNNPACK_PROFILE", false);
  if (!debug) o.debug = env_switch("PTERON_XNNPACK_DEBUG", false);
  *out = std::move(o);
  return true;
}

bool wants_library(const Options& options, Op op) {
  const LibraryChoice& p = options.use_library;
  switch (p.mode) {
    case LibraryChoice::None: return false;
    case LibraryChoice::All: return true;
    case LibraryChoice::List: return std::find(p.list.begin(), p.list.end(), op) != p.list.end();
    default: return library_first(op);
  }
}

}  // namespace xnnpack
}  // namespace pteron
