// SPDX-License-Identifier: BSD-3-Clause
// pool_std.cpp - pteron's own std::thread pool: the process default on every
// target (PTERON_THREADPOOL_IMPL=auto or std). Same contract as the pthreadpool
// one (pool.h): the caller works too, one job at a time, every chunk index
// claimed exactly once.
//
// Built for the fine-grained calls of a delegate (100+ parallel_for calls per
// inference, often tens of microseconds each) on machines shared with other
// busy processes:
//  - chunks are dealt in contiguous shares, one per thread, and claimed one
//    index at a time (threadpool.cpp makes them small); a thread done with
//    its share takes the others' from their ends, so a worker that is
//    descheduled holds at most the one chunk it is running (Job, below);
//  - the caller starts claiming at once and never waits for a worker that has
//    not claimed anything: a worker still waking up finds the job done (or
//    closed) and goes back to waiting. The caller waits only for workers that
//    are inside the job (spinning briefly, then sleeping on a condition
//    variable so a descheduled worker can have its core);
//  - an idle worker polls for at most kSpin (with the CPU's pause hint), then
//    sleeps on a condition variable. A polling worker picks up the next call
//    without a wake-up; a sleeping one costs the caller one notify (only when
//    some worker sleeps);
//  - wake() (pteron_parallel_wake, called as each execute begins) wakes the
//    sleepers ahead of the first job, so they poll while the caller copies
//    the inputs (only if a job ran since the last wake(): a program that
//    never splits its work keeps its workers asleep). Measured on a 2-vCPU
//    Zen 3 VM: MobileNetV2's first node (its input transpose) took 79-98 us
//    per call at 2 threads without it, 52-57 us with it
//    (PTERON_XNNPACK_PROFILE=1, 3 runs each).
// Why: Debian's 2021 pthreadpool makes the caller wait, in every call, until
// every worker has woken up and checked in, even when the caller has done all
// the work itself; with two busy processes on 2 cores a woken worker may wait
// a scheduler slice (milliseconds) for a core, so each call cost about that
// (bench/README.md, "Thread pool").
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
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

// How long an idle worker polls for the next job (with the CPU's pause hint)
// before it sleeps, and how long the caller polls for workers still inside its
// job before it sleeps. Measured on a shared 2-core VM (bench/README.md,
// "Thread pool"): polling lets a worker join back-to-back calls of tens of
// microseconds (a futex wake-up took longer than that there), while longer
// polling, or yielding the core while polling, made 2-thread runs slower when
// the cores were oversubscribed. The caller polls longer than a worker: at
// 10 us it went to sleep at the end of 16 % of efficientnet_b0's jobs and
// paid a wake-up each time; at 50 us, under 1 %. Build-time macros, for such
// measurements.
#ifndef PTERON_POOL_SPIN_US
#define PTERON_POOL_SPIN_US 20
#endif
#ifndef PTERON_POOL_CALLER_SPIN_US
#define PTERON_POOL_CALLER_SPIN_US 50
#endif
constexpr std::chrono::microseconds kSpin{PTERON_POOL_SPIN_US};
constexpr std::chrono::microseconds kCallerSpin{PTERON_POOL_CALLER_SPIN_US};

// One thread's share of a job's chunk indices, [begin, end) packed into one
// word (begin in the high half) so that the owner (claiming from the front)
// and a thief (claiming from the back) each take an index with one CAS.
struct alignas(64) Share {
  std::atomic<std::uint64_t> range{0};
};

inline std::uint64_t pack(std::uint64_t begin, std::uint64_t end) { return begin << 32 | end; }

// One parallel job; lives on the caller's stack for the duration of run().
// Chunk indices are dealt out in contiguous shares, one per thread (the
// caller's first): thread t owns [t * chunks / T, (t + 1) * chunks / T).
// Why: consecutive nodes of a delegate split tensors the same way, so a
// thread mostly reads what it wrote in the node before, from its own cache;
// with one shared counter, which thread got which rows was random per call,
// and a 2-thread run spent its time moving cache lines between the cores
// (an element-wise node of efficientnet_b0 took 4x longer at 2 threads than
// at 1). A thread that finishes its share takes the rest of the others'
// from their ends, so a late or descheduled thread still holds at most the
// one chunk it is running.
struct Job {
  ChunkFn fn;
  void* ctx;
  Share* shares;
  std::size_t nshares;
};

// Claims one index from the front (own share) or the back (another's).
inline bool claim(Share& sh, bool front, std::size_t* index) {
  std::uint64_t v = sh.range.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint64_t b = v >> 32, e = v & 0xffffffffu;
    if (b >= e) return false;
    const std::uint64_t next = front ? pack(b + 1, e) : pack(b, e - 1);
    if (sh.range.compare_exchange_weak(v, next, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
      *index = static_cast<std::size_t>(front ? b : e - 1);
      return true;
    }
  }
}

// Runs chunks until none is left unclaimed: thread `self`'s share first,
// then the others', each from its end.
void work_on(Job& job, std::size_t self) noexcept {
  std::size_t i;
  if (self < job.nshares)
    while (claim(job.shares[self], true, &i)) job.fn(job.ctx, i);
  for (std::size_t k = 1; k < job.nshares; ++k) {
    Share& other = job.shares[(self + k) % job.nshares];
    while (claim(other, false, &i)) job.fn(job.ctx, i);
  }
}

// Polls `done` with the pause hint until it returns true or `limit` has
// passed. Returns done()'s last value.
template <typename Done>
bool poll(Done done, std::chrono::microseconds limit) {
  const Clock::time_point start = Clock::now();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    if (i % 64 == 0 && Clock::now() - start >= limit) return done();
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
      shares_.reset(new Share[workers + 1]);
      workers_.reserve(workers);
      for (std::size_t i = 0; i < workers; ++i)
        workers_.emplace_back([this, i] { worker_main(i + 1); });
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
    if (workers_.empty() || chunks <= 1) {
      for (std::size_t i = 0; i < chunks; ++i) fn(ctx, i);
      return;
    }
    std::lock_guard<std::mutex> turn(run_mu_);  // one job at a time
    job_since_wake_.store(true, std::memory_order_relaxed);
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.shares = shares_.get();
    job.nshares = threads();
    for (std::size_t t = 0; t < job.nshares; ++t)
      job.shares[t].range.store(pack(t * chunks / job.nshares, (t + 1) * chunks / job.nshares),
                                std::memory_order_relaxed);
    // Publish. The seq_cst pair (generation_ bumped, then sleepers_ read)
    // against the worker's (sleepers_ bumped, then generation_ read) means
    // either the worker sees the job or the caller sees the sleeper.
    job_.store(&job, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(mu_); }  // a sleeper is now waiting or sees the job
      wake_.notify_all();
    }
    work_on(job, 0);  // returns when every chunk has been claimed
    // Close the job, then wait for the workers inside it (and only those: a
    // worker that enters later reads job_ == nullptr). seq_cst: a worker
    // bumps active_ before reading job_, the caller clears job_ before reading
    // active_, so one of the two sees the other.
    job_.store(nullptr, std::memory_order_seq_cst);
    if (poll([this] { return active_.load(std::memory_order_seq_cst) == 0; }, kCallerSpin)) return;
    std::unique_lock<std::mutex> lock(mu_);
    caller_waiting_.store(true, std::memory_order_seq_cst);
    done_.wait(lock, [this] { return active_.load(std::memory_order_seq_cst) == 0; });
    caller_waiting_.store(false, std::memory_order_relaxed);
  }

  // Wakes the sleeping workers, if any, so that they poll (kSpin) for the job
  // the caller is about to start; a polling worker is left alone.
  // Only while jobs come: a wake with no job since the previous one (a
  // program whose nodes are all too small to split) disarms it until the next
  // job, so such a program does not keep a worker polling and the caller
  // notifying at every call.
  void wake() override {
    if (!job_since_wake_.exchange(false, std::memory_order_relaxed)) return;
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pokes_.fetch_add(1, std::memory_order_relaxed);
    }
    wake_.notify_all();
  }

  void* native() override { return nullptr; }

 private:
  // Waits until generation_ differs from `seen` or the pool stops; returns
  // the generation seen.
  // A wake() also ends the sleep (the caller then sees seen again, and
  // worker_main finds no job and polls once more before sleeping).
  std::uint64_t wait_for_job(std::uint64_t seen) {
    auto changed = [&] {
      return generation_.load(std::memory_order_seq_cst) != seen ||
             stopping_.load(std::memory_order_relaxed);
    };
    if (!poll(changed, kSpin)) {
      std::unique_lock<std::mutex> lock(mu_);
      const std::uint64_t pokes = pokes_.load(std::memory_order_relaxed);  // under mu_
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock,
                 [&] { return changed() || pokes_.load(std::memory_order_relaxed) != pokes; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    return generation_.load(std::memory_order_acquire);
  }

  void worker_main(std::size_t self) noexcept {
    std::uint64_t seen = 0;
    for (;;) {
      seen = wait_for_job(seen);
      if (stopping_.load(std::memory_order_acquire)) return;
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (Job* job = job_.load(std::memory_order_seq_cst)) work_on(*job, self);
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
  std::unique_ptr<Share[]> shares_;  // one per thread, reused by every job
  std::mutex run_mu_;  // held by the caller of run() for the whole job
  std::mutex mu_;      // for the condition variables only
  std::condition_variable wake_, done_;
  std::atomic<Job*> job_{nullptr};            // the open job, or nullptr
  std::atomic<std::uint64_t> generation_{0};  // bumped for every job
  std::atomic<std::size_t> active_{0};        // workers inside the current job
  std::atomic<std::size_t> sleepers_{0};      // workers asleep on wake_
  std::atomic<std::uint64_t> pokes_{0};       // wake() calls that found a sleeper (under mu_)
  std::atomic<bool> job_since_wake_{true};    // a job ran since the last wake() (arms it)
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
