// SPDX-License-Identifier: BSD-3-Clause
// pool_std.cpp - pteron's own std::thread pool: the process default on every
// target (PTERON_THREADPOOL_IMPL=auto or std). Same contract as the pthreadpool
// one (pool.h): the caller works too, one job at a time, every chunk index
// claimed exactly once.
//
// Built for the fine-grained calls of a delegate (100+ parallel_for calls per
// inference, often tens of microseconds each) on machines shared with other
// busy processes:
//  - chunks are claimed dynamically, one index at a time, by the caller and
//    the workers alike (threadpool.cpp makes them small), so a worker that is
//    descheduled holds at most the one chunk it is running;
//  - the caller starts claiming at once and never waits for a worker that has
//    not claimed anything: a worker still waking up finds the job done (or
//    closed) and goes back to waiting. The caller waits only for workers that
//    are inside the job (spinning briefly, then sleeping on a condition
//    variable so a descheduled worker can have its core);
//  - an idle worker spins for at most kSpin (with the CPU's pause hint),
//    yielding after the first part of it, then sleeps on a condition variable.
//    A spinning worker picks up the next call without a wake-up; a sleeping
//    one costs the caller one notify (only when some worker sleeps).
// Why: Debian's 2021 pthreadpool makes the caller wait, in every call, until
// every worker has woken up and checked in, even when the caller has done all
// the work itself; with two busy processes on 2 cores a woken worker may wait
// a scheduler slice (milliseconds) for a core, so each call cost about that
// (bench/README.md, "Thread pool").
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#include <immintrin.h>
#define PTERON_POOL_PAUSE() _mm_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define PTERON_POOL_PAUSE() __asm__ __volatile__("yield")
#else
#define PTERON_POOL_PAUSE() ((void)0)
#endif

#include "pool.h"

namespace pteron {
namespace threadpool {

const char* const kImplementation = "std";

namespace {

using Clock = std::chrono::steady_clock;

// How long an idle worker polls for the next job before it sleeps, and how
// long of that it spins on the pause hint before it starts yielding its core.
constexpr std::chrono::microseconds kSpin{50};
constexpr std::chrono::microseconds kSpinPauseOnly{10};
// How long the caller polls for workers still inside its job before sleeping.
constexpr std::chrono::microseconds kCallerSpin{20};

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

// Polls `done` until it returns true or `limit` has passed: pause hints for
// the first `pause_only`, then yields. Returns done()'s last value.
template <typename Done>
bool poll(Done done, std::chrono::microseconds limit, std::chrono::microseconds pause_only) {
  const Clock::time_point start = Clock::now();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    if (i % 64 == 0) {
      const Clock::duration spent = Clock::now() - start;
      if (spent >= limit) return done();
      if (spent >= pause_only) {
        std::this_thread::yield();
        continue;
      }
    }
    PTERON_POOL_PAUSE();
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
    // Publish. The seq_cst pair (generation_ bumped, then sleepers_ read)
    // against the worker's (sleepers_ bumped, then generation_ read) means
    // either the worker sees the job or the caller sees the sleeper.
    job_.store(&job, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(mu_); }  // a sleeper is now waiting or sees the job
      wake_.notify_all();
    }
    work_on(job);  // returns when every chunk has been claimed
    // Close the job, then wait for the workers inside it (and only those: a
    // worker that enters later reads job_ == nullptr). seq_cst: a worker
    // bumps active_ before reading job_, the caller clears job_ before reading
    // active_, so one of the two sees the other.
    job_.store(nullptr, std::memory_order_seq_cst);
    if (poll([this] { return active_.load(std::memory_order_seq_cst) == 0; }, kCallerSpin,
             kCallerSpin))
      return;
    std::unique_lock<std::mutex> lock(mu_);
    caller_waiting_.store(true, std::memory_order_seq_cst);
    done_.wait(lock, [this] { return active_.load(std::memory_order_seq_cst) == 0; });
    caller_waiting_.store(false, std::memory_order_relaxed);
  }

  void* native() override { return nullptr; }

 private:
  // Waits until generation_ differs from `seen` or the pool stops; returns
  // the generation seen.
  std::uint64_t wait_for_job(std::uint64_t seen) {
    auto changed = [&] {
      return generation_.load(std::memory_order_seq_cst) != seen ||
             stopping_.load(std::memory_order_relaxed);
    };
    if (!poll(changed, kSpin, kSpinPauseOnly)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, changed);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    return generation_.load(std::memory_order_acquire);
  }

  void worker_main() noexcept {
    std::uint64_t seen = 0;
    for (;;) {
      seen = wait_for_job(seen);
      if (stopping_.load(std::memory_order_acquire)) return;
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (Job* job = job_.load(std::memory_order_seq_cst)) work_on(*job);
      if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          caller_waiting_.load(std::memory_order_seq_cst)) {
        { std::lock_guard<std::mutex> lock(mu_); }  // the caller is now waiting or sees 0
        done_.notify_one();
      }
    }
  }

  void stop() noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_.store(true, std::memory_order_seq_cst);
    }
    wake_.notify_all();
    for (std::thread& t : workers_)
      if (t.joinable()) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // held by the caller of run() for the whole job
  std::mutex mu_;      // for the condition variables only
  std::condition_variable wake_, done_;
  std::atomic<Job*> job_{nullptr};            // the open job, or nullptr
  std::atomic<std::uint64_t> generation_{0};  // bumped for every job
  std::atomic<std::size_t> active_{0};        // workers inside the current job
  std::atomic<std::size_t> sleepers_{0};      // workers asleep on wake_
  std::atomic<bool> caller_waiting_{false};   // the caller sleeps on done_
  std::atomic<bool> stopping_{false};
};

}  // namespace

std::unique_ptr<Pool> make_pool(std::size_t threads) {
  std::unique_ptr<StdPool> p(new (std::nothrow) StdPool);
  if (!p || !p->start(threads > 1 ? threads - 1 : 0)) return nullptr;
  return p;
}

}  // namespace threadpool
}  // namespace pteron
