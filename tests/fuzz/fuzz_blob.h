// SPDX-License-Identifier: BSD-3-Clause
// fuzz_blob.h - the body of the delegate blob fuzz targets (fuzz_xnnpack_blob.cpp,
// fuzz_cuda_blob.cpp): the bytes are one processed delegate blob, handed to
// the registered backend's init alone (pteron_testing_backend_init), as
// method load hands it over, with no program around it.
//
// Named data: a lowered program keeps its weights in the program's named
// data, and the blob names them by key. The target loads, once, every .pte
// in the folders PTERON_FUZZ_PROGRAM_DIRS names (':'-separated; the default,
// compiled in, is the source tree's fixture folders, where the seed blobs
// come from; programs over 128 KiB are left out, see kMaxNamedDataProgram),
// and the backend's pteron_named_data_get searches them all, so a seed blob
// reaches its weights and the code behind them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "pteron/pteron.h"
#include "pteron/testing.h"

extern "C" int pteron_keep_components(void);

namespace pteron_fuzz {

// The loaded programs, released at exit (LeakSanitizer checks after it).
struct Programs {
  std::vector<const pteron_program*> list;
  ~Programs() {
    for (const pteron_program* p : list) pteron_program_release(const_cast<pteron_program*>(p));
  }
};

inline std::vector<const pteron_program*>& named_data_programs() {
  static Programs programs;
  return programs.list;
}

// Programs larger than this give no named data. A delegate's init is linear
// in its weights (a fully connected node packs its filter into 16-column
// panels: up to 16 floats written per float read). A campaign found a mutated
// blob whose fully connected node re-shapes a weight of the 500 KB decoder
// fixture (tests/state): its init took 1.4 s under ASan with coverage on a
// busy core, which libFuzzer reports as a timeout (over 2 s) while it says
// nothing about the reader, and took 1 ms without that program. Every seed
// blob's own program is below this size.
constexpr uintmax_t kMaxNamedDataProgram = 128 * 1024;

// Stops the process unless backend `id` is registered (a target without its
// backend would fuzz nothing: every input is "no backend registered").
inline void require_backend(const char* id) {
  for (size_t i = 0; i < pteron_backend_count(); ++i) {
    pteron_backend_info info;
    if (pteron_status* s = pteron_backend_get(i, &info)) {
      pteron_status_release(s);
      continue;
    }
    if (std::string(info.id) == id) return;
  }
  std::fprintf(stderr, "fuzz target: backend %s is not registered in this build\n", id);
  std::abort();
}

inline void load_named_data_programs(const char* compiled_in) {
  const char* env = std::getenv("PTERON_FUZZ_PROGRAM_DIRS");
  std::string dirs = env ? env : compiled_in;
  std::vector<std::filesystem::path> files;
  for (size_t pos = 0; pos <= dirs.size();) {
    size_t e = dirs.find(':', pos);
    if (e == std::string::npos) e = dirs.size();
    const std::string dir = dirs.substr(pos, e - pos);
    pos = e + 1;
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.path().extension() == ".pte" && entry.file_size(ec) <= kMaxNamedDataProgram)
        files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    pteron_program* p = nullptr;
    if (pteron_status* s = pteron_program_load_file(f.string().c_str(), &p)) {
      pteron_status_release(s);
      continue;
    }
    named_data_programs().push_back(p);  // kept for the whole process
  }
  std::fprintf(stderr, "fuzz target: named data from %zu programs\n", named_data_programs().size());
}

// One input: init (then destroy) on backend `id`. The contract: a nonzero
// return carries a message. With
// PTERON_FUZZ_VERBOSE set, prints "init <id>: <code> <message>" per input
// (tests/test_fuzz_corpus.py reads it).
inline int run_blob(const char* id, const uint8_t* data, size_t size) {
  char message[512];
  const int32_t rc = pteron_testing_backend_init(id, named_data_programs().data(),
                                                 named_data_programs().size(), data, size, nullptr,
                                                 0, message, sizeof message);
  static const bool verbose = std::getenv("PTERON_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::printf("init %s: %d %s\n", id, rc, message);
  if (rc != PTERON_OK && message[0] == '\0') {
    std::fprintf(stderr, "fuzz target: %s init returned %d (%s) without a message\n", id, rc,
                 pteron_error_name(rc));
    std::abort();
  }
  return 0;
}

}  // namespace pteron_fuzz
