// SPDX-License-Identifier: BSD-3-Clause
// pool_pthreadpool.cpp - the Pool over pthreadpool (Debian's libpthreadpool,
// or Conan Center's pthreadpool). The same pthreadpool_t is handed to the
// XNNPACK delegate, so the process has one set of worker threads.
#include <pthreadpool.h>

#include "pool.h"

namespace pteron {
namespace threadpool {

const char* const kImplementation = "pthreadpool";

namespace {

class PthreadPool final : public Pool {
 public:
  explicit PthreadPool(pthreadpool_t p) : pool_(p) {}
  ~PthreadPool() override { pthreadpool_destroy(pool_); }
  PthreadPool(const PthreadPool&) = delete;
  PthreadPool& operator=(const PthreadPool&) = delete;

  std::size_t threads() const override { return pthreadpool_get_threads_count(pool_); }

  void run(std::size_t chunks, ChunkFn fn, void* ctx) override {
    // pthreadpool serialises concurrent parallelize calls on one pool with its
    // own mutex (XNNPACK's calls take the same turns), and the calling thread
    // works too. PTHREADPOOL_FLAG_YIELD_WORKERS: the workers sleep right after
    // the call instead of spinning for the next one. Between two pteron
    // kernels the caller does serial work (argument checks, resizing), and
    // spinning workers then compete with it and with other processes for the
    // cores: measured on a 2-vCPU VM, MobileNet-like CNN with 2 threads took
    // 29-33 ms per run without the flag and 15-18 ms with it (12.8 ms with 1
    // thread); the other benchmark programs did not change beyond noise.
    pthreadpool_task_1d_t task = fn;  // same signature: void (*)(void*, size_t)
    pthreadpool_parallelize_1d(pool_, task, ctx, chunks, PTHREADPOOL_FLAG_YIELD_WORKERS);
  }

  void* native() override { return pool_; }

 private:
  pthreadpool_t pool_;
};

}  // namespace

std::unique_ptr<Pool> make_pool(std::size_t threads) {
  pthreadpool_t p = pthreadpool_create(threads);
  if (!p) return nullptr;
  return std::unique_ptr<Pool>(new PthreadPool(p));
}

}  // namespace threadpool
}  // namespace pteron
