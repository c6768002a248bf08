// SPDX-License-Identifier: BSD-3-Clause
// pool.h - the one interface both thread pools implement (internal to the
// threadpool component). threadpool.cpp splits a parallel_for into chunks and
// owns the process's pool; a pool only runs chunk indices on its threads.
#ifndef PTERON_THREADPOOL_POOL_H
#define PTERON_THREADPOOL_POOL_H

#include <cstddef>
#include <cstdint>
#include <memory>

namespace pteron {
namespace threadpool {

// Runs chunk `index` of a job; `ctx` is the job. Must not throw.
using ChunkFn = void (*)(void* ctx, std::size_t index);

class Pool {
 public:
  virtual ~Pool() = default;
  // Threads a job runs on, the calling thread included (>= 1).
  virtual std::size_t threads() const = 0;
  // Calls fn(ctx, i) exactly once for every i in [0, chunks), on the pool's
  // threads and the calling thread, and returns when all calls have returned.
  // Safe to call from several threads at once (jobs take turns). Must not be
  // called from inside fn: threadpool.cpp runs nested work serially instead.
  virtual void run(std::size_t chunks, ChunkFn fn, void* ctx) = 0;
  // A hint that a job follows soon: workers asleep may wake and poll for it.
  // Never waits; may do nothing (the pthreadpool pool has no such call).
  virtual void wake() {}
  // The pthreadpool_t behind this pool, or nullptr for the std::thread pool.
  virtual void* native() = 0;
};

// Which pool this build has: "pthreadpool" or "std".
extern const char* const kImplementation;

// A pool of `threads` threads (the caller included, >= 1), or nullptr when
// its threads could not be created. Defined by pool_pthreadpool.cpp or
// pool_std.cpp, whichever the build selected.
std::unique_ptr<Pool> make_pool(std::size_t threads);

}  // namespace threadpool
}  // namespace pteron

#endif  // PTERON_THREADPOOL_POOL_H
