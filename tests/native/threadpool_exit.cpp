// SPDX-License-Identifier: BSD-3-Clause
// threadpool_exit.cpp - an application that uses the thread pool and exits.
//
//   threadpool_exit PROGRAM.pte METHOD INPUT.npy... -- EXPECTED.npy...
//
// Links the runtime, the kernel libraries and the threadpool (it calls
// pteron_threadpool_num_threads, so the linker keeps it), runs METHOD on two
// application threads at once (one method instance each) a few times, checks
// every output against the expected arrays, meanwhile calls
// pteron_parallel_for itself from the main thread (so the pool's workers are
// started even when the kernels find the fixture too small to split), and
// returns from main while the workers are still alive, so the library's
// exit-time destructor joins them. Prints "start" on stdout as main begins (flushed: a run
// that exits without it never reached main), then "threads=N tasks=K ok" (K: this process's
// threads on Linux, -1 elsewhere) and nothing on stderr when all is well; exit 0. Every
// failure writes its cause to stderr and exits 1 (2 for bad arguments).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <dirent.h>
#endif

#include "npy.h"
#include "pteron/kernel.h"  // pteron_parallel_for
#include "pteron/pteron.h"
#include "pteron/threadpool.h"

namespace {

using pteron_tools::NpyArray;

int process_threads() {
#if defined(__linux__)
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
#else
  return -1;
#endif
}

bool ok(pteron_status* s, const char* what) {
  if (!s) return true;
  std::fprintf(stderr, "%s: %s\n", what, pteron_status_message(s));
  std::fflush(stderr);
  pteron_status_release(s);
  return false;
}

bool close_enough(const NpyArray& want, const void* got, size_t nbytes) {
  if (nbytes != want.data.size()) return false;
  if (want.dtype == PTERON_DTYPE_FLOAT32) {
    const float* a = static_cast<const float*>(got);
    const float* e = reinterpret_cast<const float*>(want.data.data());
    for (size_t i = 0; i < nbytes / sizeof(float); ++i)
      if (!(std::fabs(a[i] - e[i]) <= 1e-5f + 1e-4f * std::fabs(e[i]))) return false;
    return true;
  }
  return std::memcmp(got, want.data.data(), nbytes) == 0;
}

// Loads METHOD, runs it `iterations` times, checks the outputs each time.
bool run_method(pteron_program* prog, const char* method, const std::vector<NpyArray>& inputs,
                const std::vector<NpyArray>& expected, int iterations) {
  pteron_method* m = nullptr;
  if (!ok(pteron_method_load(prog, method, nullptr, &m), "method load")) return false;
  bool good = true;
  for (size_t i = 0; good && i < inputs.size(); ++i)
    good = ok(pteron_method_set_input(m, i, inputs[i].dtype, inputs[i].shape.data(),
                                      static_cast<int32_t>(inputs[i].shape.size()),
                                      inputs[i].data.data(), inputs[i].data.size()),
              "set input");
  for (int it = 0; good && it < iterations; ++it) {
    good = ok(pteron_method_execute(m), "execute");
    for (size_t o = 0; good && o < expected.size(); ++o) {
      std::vector<unsigned char> out(expected[o].data.size());
      good = ok(pteron_method_copy_output(m, o, out.data(), out.size()), "copy output");
      if (good && !close_enough(expected[o], out.data(), out.size())) {
        std::fprintf(stderr, "output %zu differs from the expected array\n", o);
        good = false;
      }
    }
  }
  pteron_method_release(m);
  return good;
}

// The application's own parallel work: squares of 0..n-1, checked.
bool own_parallel_work() {
  std::vector<double> v(1 << 16);
  pteron_parallel_for(
      0, static_cast<int64_t>(v.size()), 1024,
      [](void* user, int64_t b, int64_t e) {
        double* d = static_cast<double*>(user);
        for (int64_t i = b; i < e; ++i) d[i] = double(i) * double(i);
      },
      v.data());
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != double(i) * double(i)) {
      std::fprintf(stderr, "parallel_for left index %zu wrong\n", i);
      return false;
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("start\n");
  std::fflush(stdout);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PROGRAM.pte METHOD INPUT.npy... -- EXPECTED.npy...\n", argv[0]);
    return 2;
  }
  std::vector<NpyArray> inputs, expected;
  bool after_sep = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      after_sep = true;
      continue;
    }
    NpyArray a;
    std::string err = pteron_tools::npy_read(argv[i], &a);
    if (!err.empty()) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 2;
    }
    (after_sep ? expected : inputs).push_back(std::move(a));
  }

  pteron_program* prog = nullptr;
  if (!ok(pteron_program_load_file(argv[1], &prog), "program load")) return 1;
  bool good_a = false, good_b = false;
  std::thread a([&] { good_a = run_method(prog, argv[2], inputs, expected, 3); });
  std::thread b([&] { good_b = run_method(prog, argv[2], inputs, expected, 3); });
  bool good_own = true;
  for (int i = 0; i < 20 && good_own; ++i) good_own = own_parallel_work();
  a.join();
  b.join();
  pteron_program_release(prog);
  if (!good_a || !good_b || !good_own) {
    std::fprintf(stderr, "failed: method on thread a %s, on thread b %s, own parallel_for %s\n",
                 good_a ? "ok" : "failed", good_b ? "ok" : "failed", good_own ? "ok" : "failed");
    return 1;
  }
  // The pool's workers are alive here; returning from main runs the exit path.
  std::printf("threads=%zu tasks=%d ok\n", pteron_threadpool_num_threads(), process_threads());
  return 0;
}
