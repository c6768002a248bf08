// SPDX-License-Identifier: BSD-3-Clause
// pool_std.cpp - the Pool over std::thread, for targets without pthreadpool
// (the offline MinGW build). Same contract as the pthreadpool one: the caller
// works too, one job at a time, every chunk index claimed exactly once.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "pool.h"

namespace pteron {
namespace threadpool {

const char* const kImplementation = "std";

namespace {

// One parallel job; lives on the caller's stack for the duration of run().
struct Job {
  ChunkFn fn;
  void* ctx;
  std::size_t chunks;
  std::atomic<std::size_t> next{0};  // next unclaimed chunk index
};

void work_on(Job& job) noexcept {
  for (;;) {
    std::size_t i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.chunks) return;
    job.fn(job.ctx, i);
  }
}

class StdPool final : public Pool {
 public:
  StdPool() = default;
  StdPool(const StdPool&) = delete;
  StdPool& operator=(const StdPool&) = delete;

  // Starts `workers` threads; false (with none left running) if the system
  // refused one.
  bool start(std::size_t workers) {
    try {
      workers_.reserve(workers);
      for (std::size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_main(); });
    } catch (const std::system_error&) {
      stop();
      return false;
    } catch (const std::bad_alloc&) {
      stop();
      return false;
    }
    return true;
  }

  ~StdPool() override { stop(); }

  std::size_t threads() const override { return workers_.size() + 1; }

  void run(std::size_t chunks, ChunkFn fn, void* ctx) override {
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.chunks = chunks;
    if (workers_.empty() || chunks <= 1) {
      work_on(job);
      return;
    }
    std::lock_guard<std::mutex> turn(run_mu_);  // one job at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    work_on(job);  // returns when every chunk has been claimed
    // Close the job to late workers, then wait for those inside it. A worker
    // that has not woken up yet is not waited for (it will find no job).
    std::unique_lock<std::mutex> lock(mu_);
    job_ = nullptr;
    done_.wait(lock, [&] { return active_ == 0; });
  }

  void* native() override { return nullptr; }

 private:
  void worker_main() noexcept {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      Job* job = job_;
      if (!job) continue;  // woke up after the job was closed
      ++active_;
      lock.unlock();
      work_on(*job);
      lock.lock();
      if (--active_ == 0 && !job_) done_.notify_one();
    }
  }

  void stop() noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_)
      if (t.joinable()) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // held by the caller of run() for the whole job
  std::mutex mu_;      // guards the fields below
  std::condition_variable wake_, done_;
  Job* job_ = nullptr;            // the open job, or nullptr
  std::uint64_t generation_ = 0;  // bumped for every job
  std::size_t active_ = 0;        // workers inside the current job
  bool stopping_ = false;
};

}  // namespace

std::unique_ptr<Pool> make_pool(std::size_t threads) {
  std::unique_ptr<StdPool> p(new (std::nothrow) StdPool);
  if (!p || !p->start(threads > 1 ? threads - 1 : 0)) return nullptr;
  return p;
}

}  // namespace threadpool
}  // namespace pteron
