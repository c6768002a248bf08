// SPDX-License-Identifier: BSD-3-Clause
// kernel_test_util.h - what both C++ kernel test programs share: tensor
// strides from the runtime, and the command line
// (tests/test_kernels_native.py drives it):
//   PROGRAM            runs every section
//   PROGRAM --list     prints the section names, one a line
//   PROGRAM NAME...    runs the named sections
// Each run ends with the line "<checks> checks, <failures> failures" and
// exits 0 only when no check failed (2 for an unknown section name).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "pteron/export.h"
#include "pteron/kernel.h"

// Referencing the anchor keeps kernels_portable linked (an ELF linker with
// --as-needed, or GNU ld on PE, drops a library nothing references), as any
// consumer of a registration-only library does.
extern "C" PTERON_DLL_IMPORT int pteron_anchor_kernels_portable(void);

// Sets t's strides from its sizes and dim order with the runtime's own rule
// (pteron_tensor_resize recomputes them for a tensor that is not static).
inline void set_strides_from_dim_order(pteron_tensor& t) {
  pteron_tensor tmp = t;
  tmp.dynamism = PTERON_SHAPE_DYNAMIC_UNBOUND;
  tmp.capacity_bytes = INT64_MAX;
  if (pteron_tensor_resize(nullptr, &tmp, t.sizes, t.dim) == PTERON_OK)
    std::memcpy(t.strides, tmp.strides, sizeof t.strides);
}

struct Section {
  const char* name;
  void (*run)();
};

template <size_t N>
int run_sections(int argc, char** argv, const Section (&sections)[N], const int& checks,
                 const int& failures) {
  if (pteron_anchor_kernels_portable() != 1) {
    std::fprintf(stderr, "kernels_portable's anchor did not answer\n");
    return 1;
  }
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Section& s : sections) std::printf("%s\n", s.name);
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    bool known = false;
    for (const Section& s : sections) known = known || std::strcmp(argv[i], s.name) == 0;
    if (!known) {
      std::fprintf(stderr, "unknown section '%s' (--list names them)\n", argv[i]);
      return 2;
    }
  }
  for (const Section& s : sections) {
    bool selected = argc == 1;
    for (int i = 1; i < argc; ++i) selected = selected || std::strcmp(argv[i], s.name) == 0;
    if (selected) s.run();
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
