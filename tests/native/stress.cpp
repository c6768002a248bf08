// SPDX-License-Identifier: BSD-3-Clause
// stress.cpp - pteron-stress: the runtime under load, for ThreadSanitizer
// (scripts/slow.sh, build-tsan/) and AddressSanitizer (tests/test_stress.py).
//
//   pteron-stress SECONDS THREADS PROGRAM.pte INPUT.npy... 
//
// Loads PROGRAM once and shares it. Its method "forward" is run once first,
// on the calling thread, for the reference outputs. Then, until SECONDS
// have passed, at once:
//  - THREADS threads each load their own "forward" from the shared program,
//    run it a few times with the inputs, compare every output with the
//    reference, release it and start again;
//  - two more threads call one shared method instance at once (set inputs,
//    execute, copy outputs): pteron.h says calls on one method are
//    serialised, so each copy must still equal the reference (both threads
//    set the same inputs);
//  - one thread resizes the thread pool (1 to 4 threads) every few
//    milliseconds while the methods run.
// An output matches when |x - ref| <= 1e-5 + 1e-5 |ref| element-wise (a new
// thread count may split a reduction differently).
// Prints one summary line; exits 0 when every call succeeded and every
// output matched, 1 otherwise (the first failures are printed), 2 on bad
// arguments or when the reference run fails.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "npy.h"
#include "pteron/pteron.h"
#include "pteron/threadpool.h"

extern "C" int pteron_keep_components(void);

namespace {

std::vector<pteron_tools::NpyArray> g_inputs;
std::vector<std::vector<float>> g_reference;  // per output (float32 outputs only)
std::atomic<bool> g_stop{false};
std::atomic<long> g_executions{0}, g_loads{0}, g_resizes{0}, g_shared{0}, g_failures{0};
std::mutex g_print;

void failure(const std::string& what) {
  if (g_failures.fetch_add(1) < 10) {
    std::lock_guard<std::mutex> lock(g_print);
    std::fprintf(stderr, "pteron-stress: %s\n", what.c_str());
  }
}

// Releases `s`; true for success, else records `call`'s message.
bool ok(pteron_status* s, const char* call) {
  if (!s) return true;
  failure(std::string(call) + ": " + pteron_status_message(s));
  pteron_status_release(s);
  return false;
}

bool set_inputs(pteron_method* m) {
  for (size_t j = 0; j < g_inputs.size(); ++j) {
    const pteron_tools::NpyArray& a = g_inputs[j];
    if (!ok(pteron_method_set_input(m, j, a.dtype, a.shape.data(), int32_t(a.shape.size()),
                                    a.data.data(), a.data.size()),
            "set_input"))
      return false;
  }
  return true;
}

// Copies the float32 outputs; with `check`, compares them with the reference.
bool outputs(pteron_method* m, std::vector<std::vector<float>>* out, bool check) {
  const size_t n = pteron_method_output_count(m);
  for (size_t j = 0; j < n; ++j) {
    pteron_value_info info;
    if (!ok(pteron_method_output_info(m, j, &info), "output_info")) return false;
    std::vector<float> v;
    if (info.tag == PTERON_VALUE_TENSOR && info.dtype == PTERON_DTYPE_FLOAT32) {
      v.resize(info.nbytes / 4);
      if (!ok(pteron_method_copy_output(m, j, v.data(), v.size() * 4), "copy_output"))
        return false;
    }
    if (check) {
      const std::vector<float>& r = g_reference[j];
      if (v.size() != r.size()) {
        failure("output " + std::to_string(j) + " has " + std::to_string(v.size()) +
                " elements, the reference " + std::to_string(r.size()));
        return false;
      }
      for (size_t k = 0; k < v.size(); ++k)
        if (!(std::fabs(v[k] - r[k]) <= 1e-5f + 1e-5f * std::fabs(r[k]))) {
          failure("output " + std::to_string(j) + " element " + std::to_string(k) + " is " +
                  std::to_string(v[k]) + ", the reference " + std::to_string(r[k]));
          return false;
        }
    }
    if (out) out->push_back(std::move(v));
  }
  return true;
}

bool run_once(pteron_method* m, bool check) {
  if (!set_inputs(m) || !ok(pteron_method_execute(m), "execute")) return false;
  g_executions.fetch_add(1);
  return outputs(m, nullptr, check);
}

void own_methods(pteron_program* prog) {
  while (!g_stop.load()) {
    pteron_method* m = nullptr;
    if (!ok(pteron_method_load(prog, "forward", nullptr, &m), "method_load")) return;
    g_loads.fetch_add(1);
    for (int i = 0; i < 4 && !g_stop.load(); ++i)
      if (!run_once(m, true)) break;
    pteron_method_release(m);
  }
}

void shared_method(pteron_method* m) {
  while (!g_stop.load()) {
    if (!run_once(m, true)) return;
    g_shared.fetch_add(1);
  }
}

void resizer() {
  for (size_t i = 0; !g_stop.load(); ++i) {
    const int32_t rc = pteron_threadpool_set_num_threads(1 + i % 4);
    if (rc != PTERON_OK) failure("pteron_threadpool_set_num_threads: " + std::to_string(rc));
    g_resizes.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
}

}  // namespace

int main(int argc, char** argv) {
  (void)pteron_keep_components();
  if (argc < 4) {
    std::fprintf(stderr, "usage: pteron-stress SECONDS THREADS PROGRAM.pte INPUT.npy...\n");
    return 2;
  }
  const double seconds = std::strtod(argv[1], nullptr);
  const int threads = std::atoi(argv[2]);
  if (!(seconds > 0) || threads < 1 || threads > 64) {
    std::fprintf(stderr, "pteron-stress: SECONDS > 0 and THREADS in 1..64\n");
    return 2;
  }
  for (int i = 4; i < argc; ++i) {
    pteron_tools::NpyArray a;
    const std::string err = pteron_tools::npy_read(argv[i], &a);
    if (!err.empty()) {
      std::fprintf(stderr, "pteron-stress: %s\n", err.c_str());
      return 2;
    }
    g_inputs.push_back(std::move(a));
  }
  pteron_program* prog = nullptr;
  if (!ok(pteron_program_load_file(argv[3], &prog), "program_load_file")) return 2;
  pteron_method* shared = nullptr;
  if (!ok(pteron_method_load(prog, "forward", nullptr, &shared), "method_load") ||
      !set_inputs(shared) || !ok(pteron_method_execute(shared), "execute") ||
      !outputs(shared, &g_reference, false))
    return 2;

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(own_methods, prog);
  pool.emplace_back(shared_method, shared);
  pool.emplace_back(shared_method, shared);
  pool.emplace_back(resizer);
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds &&
         g_failures.load() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  g_stop.store(true);
  for (std::thread& t : pool) t.join();
  pteron_method_release(shared);
  pteron_program_release(prog);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "pteron-stress: %.1f s, %d threads + 2 on one shared method + a pool resizer: %ld "
      "executions (%ld on the shared method), %ld method loads, %ld pool resizes, %ld failures\n",
      took, threads, g_executions.load(), g_shared.load(), g_loads.load(), g_resizes.load(),
      g_failures.load());
  return g_failures.load() == 0 ? 0 : 1;
}
