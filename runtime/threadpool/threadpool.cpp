// SPDX-License-Identifier: BSD-3-Clause
// threadpool.cpp - the process's one thread pool: owns the Pool, installs it
// as the runtime's parallel_for backend at load, reads PTERON_NUM_THREADS,
// and implements pteron/threadpool.h.
//
// Order of a parallel_for: runtime's pteron_parallel_for -> backend_run()
// (split into chunks, nested calls serial) -> Pool::run (pool_pthreadpool.cpp
// or pool_std.cpp) -> run_chunk() on each thread -> the caller's fn.
#include "pteron/threadpool.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>

#if !defined(_WIN32)
#include <pthread.h>
#endif

#include "pool.h"
#include "pteron/kernel.h"

namespace pteron {
namespace threadpool {
namespace {

// Chunks per thread. The pool hands chunks out one at a time to whichever
// thread asks first, so small chunks keep a descheduled thread from holding a
// big share of the range (the others finish the rest), at the cost of one
// shared atomic increment per chunk (bench/README.md, "Thread pool").
#ifndef PTERON_THREADPOOL_CHUNKS_PER_THREAD
#define PTERON_THREADPOOL_CHUNKS_PER_THREAD 8
#endif
constexpr int64_t kChunksPerThread = PTERON_THREADPOOL_CHUNKS_PER_THREAD;

// Depth of parallel_for chunks running on this thread; > 0 means a nested
// call, which runs serially (the pool is busy with the outer call).
thread_local int t_depth = 0;

// The calling thread's thread cap (pteron_threadpool_set_thread_cap): at most
// this many threads run the chunks of a parallel_for it starts; 0: no cap.
thread_local std::size_t t_cap = 0;

struct State {
  std::shared_mutex mu;        // parallel_for calls share it; replacing the pool is exclusive
  std::unique_ptr<Pool> pool;  // created on first use (not inside the loader lock)
  bool create_failed = false;  // the lazy creation failed: run serially, warn once
  std::atomic<bool> shut_down{false};  // past the exit destructor: no new pool
  std::atomic<std::size_t> num_threads{1};
};

// Outlives every static destructor; the pool inside is not. Replaced in a forked child.
State*& state_ptr() {
  static State* s = new State;
  return s;
}

State& state() { return *state_ptr(); }

std::size_t default_threads() {
  unsigned hw = std::thread::hardware_concurrency();
  return std::min<std::size_t>(std::max(hw, 1u), PTERON_THREADPOOL_MAX_THREADS);
}

// PTERON_NUM_THREADS: a decimal integer in 1..PTERON_THREADPOOL_MAX_THREADS.
// Returns 0 (after a one-line warning) for anything else, 0 silently if unset.
std::size_t threads_from_environment() {
  const char* v = std::getenv("PTERON_NUM_THREADS");
  if (!v) return 0;
  std::size_t n = 0;
  bool ok = *v != '\0' && std::strlen(v) <= 9;
  for (const char* p = v; ok && *p; ++p) {
    if (*p < '0' || *p > '9')
      ok = false;
    else
      n = n * 10 + static_cast<std::size_t>(*p - '0');
  }
  if (ok && n >= 1 && n <= PTERON_THREADPOOL_MAX_THREADS) return n;
  std::fprintf(stderr,
               "pteron: ignoring PTERON_NUM_THREADS='%.32s' (expected an integer in 1..%u); "
               "using %u threads\n",
               v, PTERON_THREADPOOL_MAX_THREADS, static_cast<unsigned>(default_threads()));
  return 0;
}

// The pool, created on first use. Called with `lock` held shared; may
// upgrade to exclusive and back (returns with it held shared again).
Pool* pool_locked(State& s, std::shared_lock<std::shared_mutex>& lock) {
  if (s.pool || s.create_failed || s.shut_down.load()) return s.pool.get();
  lock.unlock();
  {
    std::unique_lock<std::shared_mutex> write(s.mu);
    if (!s.pool && !s.create_failed && !s.shut_down.load()) {
      std::size_t n = s.num_threads.load();
      s.pool = make_pool(n);
      if (!s.pool) {
        s.create_failed = true;
        s.num_threads.store(1);
        std::fprintf(stderr,
                     "pteron: could not start a thread pool of %u threads; running serially\n",
                     static_cast<unsigned>(n));
      }
    }
  }
  lock.lock();
  return s.pool.get();
}

// One parallel_for split into `chunks` near-equal sub-ranges: the first
// `rem` have q+1 elements, the rest q (q >= grain by construction).
struct Split {
  pteron_range_fn fn;
  void* user;
  int64_t begin;
  int64_t q;
  int64_t rem;
};

void run_chunk(void* ctx, std::size_t index) {
  const Split& s = *static_cast<const Split*>(ctx);
  int64_t i = static_cast<int64_t>(index);
  int64_t b = s.begin + i * s.q + std::min(i, s.rem);
  int64_t e = b + s.q + (i < s.rem ? 1 : 0);
  ++t_depth;
  s.fn(s.user, b, e);
  --t_depth;
}

// Runs fn over [begin, end) on this thread, as one chunk.
void run_serial(int64_t begin, int64_t end, pteron_range_fn fn, void* user) {
  ++t_depth;
  fn(user, begin, end);
  --t_depth;
}

void backend_run(int64_t begin, int64_t end, int64_t grain, pteron_range_fn fn, void* user) {
  if (!fn || end <= begin) return;
  // end - begin without overflow; a range longer than INT64_MAX stays serial.
  const uint64_t length = static_cast<uint64_t>(end) - static_cast<uint64_t>(begin);
  const int64_t n = length > static_cast<uint64_t>(INT64_MAX) ? 1 : static_cast<int64_t>(length);
  const int64_t g = std::max<int64_t>(grain, 1);
  // Nested inside a chunk (the pool is busy with the outer call), or too
  // short to split: serial on this thread.
  if (t_depth > 0 || n / g <= 1 || t_cap == 1) {
    run_serial(begin, end, fn, user);
    return;
  }
  State& s = state();
  std::shared_lock<std::shared_mutex> lock(s.mu);
  Pool* pool = pool_locked(s, lock);
  const int64_t pool_threads = pool ? static_cast<int64_t>(pool->threads()) : 1;
  const bool capped = t_cap > 0 && static_cast<int64_t>(t_cap) < pool_threads;
  const int64_t threads = capped ? static_cast<int64_t>(t_cap) : pool_threads;
  // Chunks go to whichever thread asks first, so under a cap only the number
  // of chunks bounds how many threads run at once: one chunk per allowed thread.
  const int64_t chunks = std::min(n / g, capped ? threads : threads * kChunksPerThread);
  if (threads <= 1 || chunks <= 1) {
    run_serial(begin, end, fn, user);
    return;
  }
  Split split{fn, user, begin, n / chunks, n % chunks};
  pool->run(static_cast<std::size_t>(chunks), &run_chunk, &split);
}

int32_t backend_threads(void) {
  return static_cast<int32_t>(state().num_threads.load(std::memory_order_relaxed));
}

// The runtime's hint that parallel work follows (an execute begins). Inside a
// chunk the pool is busy anyway; before the pool exists there is nothing to
// wake (it is created by the first parallel call).
void backend_wake(void) {
  if (t_depth > 0) return;
  State& s = state();
  std::shared_lock<std::shared_mutex> lock(s.mu);
  if (s.pool) s.pool->wake();
}

const pteron_parallel_backend kBackend = {sizeof(pteron_parallel_backend), &backend_run,
                                          &backend_threads, &backend_wake};

#if !defined(_WIN32)
// fork(): the child has only the forking thread, so the pool's workers are not in it, and its
// locks may be held by threads that are not either. Joining or destroying that pool waited
// forever (on the workers' condition variables). The child leaves the parent's State as it is
// (leaked) and starts from a fresh one, with the same thread count: a new pool is made on
// first use. A fork from inside a chunk of a parallel_for is not supported: that job's other
// chunks belong to workers the child has not got.
void after_fork_child() {
  State* old = state_ptr();
  State* fresh = new State;
  fresh->num_threads.store(old->num_threads.load());
  state_ptr() = fresh;
}
#endif

// Installs the backend at load and uninstalls it at unload / exit.
struct Lifetime {
  Lifetime() {
#if !defined(_WIN32)
    pthread_atfork(nullptr, nullptr, &after_fork_child);
#endif
    std::size_t n = threads_from_environment();
    state().num_threads.store(n ? n : default_threads());
    // On an ABI mismatch the runtime refuses and names both versions;
    // parallel_for then stays serial.
    pteron_set_parallel_backend(PTERON_ABI_VERSION, &kBackend);
  }
  ~Lifetime() {
    pteron_set_parallel_backend(PTERON_ABI_VERSION, nullptr);
    State& s = state();
    s.shut_down.store(true);
#if defined(_WIN32)
    // Leak the pool on purpose: Windows has already terminated its workers.
    // (No lock either: a terminated thread may have held it.)
#else
    std::unique_lock<std::shared_mutex> write(s.mu);  // waits for calls in flight
    s.pool.reset();                                   // joins the workers
#endif
  }
};

Lifetime g_lifetime;

}  // namespace
}  // namespace threadpool
}  // namespace pteron

using namespace pteron::threadpool;

extern "C" {

int32_t pteron_threadpool_set_num_threads(size_t n) {
  if (n > PTERON_THREADPOOL_MAX_THREADS) return PTERON_ERROR_INVALID_ARGUMENT;
  if (t_depth > 0) return PTERON_ERROR_INVALID_ARGUMENT;  // would wait for itself
  if (n == 0) n = default_threads();
  std::unique_ptr<Pool> fresh = make_pool(n);
  if (!fresh) return PTERON_ERROR_OUT_OF_MEMORY;
  State& s = state();
  std::unique_ptr<Pool> old;
  {
    std::unique_lock<std::shared_mutex> write(s.mu);  // waits for calls in flight
    if (s.shut_down.load()) return PTERON_OK;         // process exit: keep serial
    old = std::move(s.pool);
    s.pool = std::move(fresh);
    s.create_failed = false;
    s.num_threads.store(n);
  }
  return PTERON_OK;  // `old` is destroyed (its workers joined) outside the lock
}

size_t pteron_threadpool_num_threads(void) { return state().num_threads.load(); }

size_t pteron_threadpool_set_thread_cap(size_t n) {
  const std::size_t previous = t_cap;
  t_cap = n;
  return previous;
}

void* pteron_threadpool_pthreadpool(void) {
  State& s = state();
  std::shared_lock<std::shared_mutex> lock(s.mu);
  Pool* pool = pool_locked(s, lock);
  return pool ? pool->native() : nullptr;
}

const char* pteron_threadpool_implementation(void) { return kImplementation; }

}  // extern "C"
