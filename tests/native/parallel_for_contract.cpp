// SPDX-License-Identifier: BSD-3-Clause
// parallel_for_contract.cpp - checks the contract of pteron_parallel_for with
// the threadpool component installed (pteron/kernel.h, pteron/threadpool.h):
//  - the sub-ranges of every call exactly cover [begin, end): each index is
//    visited exactly once, each sub-range is at least `grain` long where the
//    range allows it, and the call returns only when all are done;
//  - the same holds with two application threads calling at once, with
//    nested calls (which run serially on the calling thread), and while
//    another thread changes the thread count;
//  - the thread count API and its errors;
//  - the wake hint (pteron_parallel_wake) changes none of it.
// With `--hog N` it first starts N threads that only burn CPU (as other busy
// processes would) and checks the coverage parts only (sweeps, nesting, two
// application threads), not how many threads took part.
// Prints "parallel_for contract: OK" and exits 0, or names the first failure
// and exits 1. Built and run by tests/test_threadpool.py.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "pteron/kernel.h"
#include "pteron/threadpool.h"

namespace {

std::atomic<int> g_failures{0};

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                        \
      std::fprintf(stderr, "\n");                               \
      g_failures.fetch_add(1);                                  \
    }                                                           \
  } while (0)

// Records every sub-range of one parallel_for call.
struct Coverage {
  int64_t begin, end, grain;
  std::vector<std::atomic<uint32_t>> hits;
  std::atomic<int64_t> calls{0}, short_calls{0}, bad_bounds{0};
  std::mutex mu;
  std::set<std::thread::id> threads;
  int sleep_us = 0;

  Coverage(int64_t b, int64_t e, int64_t g)
      : begin(b), end(e), grain(g), hits(static_cast<size_t>(e > b ? e - b : 0)) {}

  static void fn(void* user, int64_t b, int64_t e) {
    Coverage& c = *static_cast<Coverage*>(user);
    c.calls.fetch_add(1);
    if (b < c.begin || e > c.end || b >= e) {
      c.bad_bounds.fetch_add(1);
      return;
    }
    if (e - b < c.grain) c.short_calls.fetch_add(1);
    for (int64_t i = b; i < e; ++i) c.hits[static_cast<size_t>(i - c.begin)].fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(c.mu);
      c.threads.insert(std::this_thread::get_id());
    }
    if (c.sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(c.sleep_us));
  }

  // Every index exactly once; every sub-range >= grain when the range is at
  // least `grain` long (else exactly one call).
  void verify(const char* what) {
    CHECK(bad_bounds.load() == 0, "%s [%lld,%lld) grain %lld: %lld sub-ranges out of bounds", what,
          (long long)begin, (long long)end, (long long)grain, (long long)bad_bounds.load());
    int64_t n = end - begin;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t h = hits[static_cast<size_t>(i)].load();
      if (h != 1) {
        CHECK(false, "%s [%lld,%lld) grain %lld: index %lld visited %u times", what,
              (long long)begin, (long long)end, (long long)grain, (long long)(begin + i), h);
        break;
      }
    }
    int64_t g = grain < 1 ? 1 : grain;
    if (n >= g) {
      CHECK(short_calls.load() == 0,
            "%s [%lld,%lld) grain %lld: %lld sub-ranges shorter than grain", what, (long long)begin,
            (long long)end, (long long)grain, (long long)short_calls.load());
    } else if (n > 0) {
      CHECK(calls.load() == 1, "%s: a range shorter than its grain was split (%lld calls)", what,
            (long long)calls.load());
    }
    if (n <= 0)
      CHECK(calls.load() == 0, "%s: empty range [%lld,%lld) called fn", what, (long long)begin,
            (long long)end);
  }
};

void one_call(int64_t b, int64_t e, int64_t g, const char* what) {
  Coverage c(b, e, g);
  pteron_parallel_for(b, e, g, &Coverage::fn, &c);
  c.verify(what);  // parallel_for returned: every sub-range must be done
}

// Many ranges and grains, from the calling thread.
void sweep(unsigned seed, int rounds, const char* what) {
  const int64_t sizes[] = {0, 1, 2, 3, 7, 64, 65, 1000, 100003};
  const int64_t grains[] = {-5, 0, 1, 3, 100, 5000, 200000};
  const int64_t begins[] = {0, -17, 5, INT64_C(1) << 40};
  uint32_t x = seed;
  for (int r = 0; r < rounds; ++r)
    for (int64_t n : sizes)
      for (int64_t g : grains) {
        x = x * 1664525u + 1013904223u;
        int64_t b = begins[(x >> 16) % 4];
        one_call(b, b + n, g, what);
      }
  // A range longer than INT64_MAX: one sub-range, the whole of it.
  std::atomic<int> whole_calls{0};
  pteron_parallel_for(
      INT64_MIN, INT64_MAX, 1,
      [](void* user, int64_t b, int64_t e) {
        static_cast<std::atomic<int>*>(user)->fetch_add(b == INT64_MIN && e == INT64_MAX ? 1 : 100);
      },
      &whole_calls);
  CHECK(whole_calls.load() == 1, "%s: [INT64_MIN, INT64_MAX) not passed whole (%d)", what,
        whole_calls.load());
  Coverage reversed(10, 3, 1);
  pteron_parallel_for(10, 3, 1, &Coverage::fn, &reversed);
  CHECK(reversed.calls.load() == 0, "%s: begin > end called fn", what);
}

// Nested: every outer sub-range runs an inner parallel_for, which must run
// serially on the same thread and still cover its range exactly once.
struct Nested {
  std::vector<std::atomic<uint32_t>> hits;  // outer x inner
  std::atomic<int64_t> inner_calls{0}, foreign_thread{0};
  int64_t inner_n;
  Nested(int64_t outer, int64_t inner) : hits(static_cast<size_t>(outer * inner)), inner_n(inner) {}
};
struct InnerCtx {
  Nested* nest;
  int64_t row;
  std::thread::id owner;
};
void inner_fn(void* user, int64_t b, int64_t e) {
  InnerCtx& c = *static_cast<InnerCtx*>(user);
  c.nest->inner_calls.fetch_add(1);
  if (std::this_thread::get_id() != c.owner) c.nest->foreign_thread.fetch_add(1);
  for (int64_t i = b; i < e; ++i)
    c.nest->hits[static_cast<size_t>(c.row * c.nest->inner_n + i)].fetch_add(1);
}
void outer_fn(void* user, int64_t b, int64_t e) {
  Nested& n = *static_cast<Nested*>(user);
  for (int64_t row = b; row < e; ++row) {
    InnerCtx c{&n, row, std::this_thread::get_id()};
    pteron_parallel_for(0, n.inner_n, 3, &inner_fn, &c);
  }
  // Changing the pool from inside a chunk would wait for itself: refused.
  if (b == 0)
    CHECK(pteron_threadpool_set_num_threads(2) == PTERON_ERROR_INVALID_ARGUMENT,
          "set_num_threads inside a chunk was not refused");
}
void nested(const char* what) {
  const int64_t outer = 64, inner = 1000;
  Nested n(outer, inner);
  pteron_parallel_for(0, outer, 1, &outer_fn, &n);
  bool once = true;
  for (auto& h : n.hits) once = once && h.load() == 1;
  CHECK(once, "%s: nested parallel_for did not visit every index exactly once", what);
  CHECK(n.inner_calls.load() == outer, "%s: nested calls were split (%lld inner calls for %lld)",
        what, (long long)n.inner_calls.load(), (long long)outer);
  CHECK(n.foreign_thread.load() == 0, "%s: a nested call ran on another thread", what);
}

// With work that takes time, more than one thread takes part.
void uses_threads(size_t expected, const char* what) {
  Coverage c(0, 64, 1);
  c.sleep_us = 2000;
  pteron_parallel_for(0, 64, 1, &Coverage::fn, &c);
  c.verify(what);
  size_t used = c.threads.size();
  if (expected <= 1) {
    CHECK(used == 1, "%s: a 1-thread pool ran on %zu threads", what, used);
  } else {
    CHECK(used >= 2 && used <= expected, "%s: %zu threads took part, pool has %zu", what, used,
          expected);
  }
}

// Two application threads at once (two methods executing concurrently).
void two_callers(int seed) {
  std::thread a([seed] {
    sweep(seed + 10, 2, "thread A");
    nested("thread A");
  });
  std::thread b([seed] {
    sweep(seed + 20, 2, "thread B");
    nested("thread B");
  });
  a.join();
  b.join();
}

// The wake hint (pteron_parallel_wake): from inside chunks it returns at once
// and the nested calls stay serial.
void wake_fn(void* user, int64_t b, int64_t e) {
  pteron_parallel_wake();
  Coverage::fn(user, b, e);
}

// The wake hint before calls, with the workers asleep before and after it
// (woken, they poll, find no job and sleep again), from inside chunks, and
// from a third thread while two callers sweep: every index is still visited
// once, the workers still take part, and nothing waits.
void woken(size_t threads, const char* what) {
  for (int r = 0; r < 3; ++r) {
    pteron_parallel_wake();
    sweep(50 + r, 1, what);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the workers sleep
    pteron_parallel_wake();
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // woken, asleep again
    uses_threads(threads, what);
  }
  Coverage c(0, 4096, 16);
  pteron_parallel_for(0, 4096, 16, &wake_fn, &c);
  c.verify(what);
  std::atomic<bool> done{false};
  std::thread waker([&] {
    while (!done.load()) pteron_parallel_wake();
  });
  two_callers(300);
  done.store(true);
  waker.join();
}

// Coverage while `hogs` other threads keep every core busy.
int hogged(int hogs) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> burners;
  for (int i = 0; i < hogs; ++i)
    burners.emplace_back([&stop] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  std::printf("implementation=%s threads=%zu hogs=%d\n", pteron_threadpool_implementation(),
              pteron_threadpool_num_threads(), hogs);
  for (int r = 0; r < 3; ++r) {
    pteron_parallel_wake();
    sweep(100 + r, 1, "hogged");
    nested("hogged");
  }
  two_callers(200);
  stop.store(true);
  for (std::thread& t : burners) t.join();
  if (g_failures.load()) {
    std::fprintf(stderr, "parallel_for contract: %d failures\n", g_failures.load());
    return 1;
  }
  std::printf("parallel_for contract: OK\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--hog") == 0) return hogged(std::atoi(argv[2]));
  if (argc != 1) {
    std::fprintf(stderr, "usage: parallel_for_contract [--hog N]\n");
    return 2;
  }
  pteron_parallel_wake();  // before the pool exists: nothing to wake, and no pool is made
  const size_t initial = pteron_threadpool_num_threads();
  CHECK(initial >= 1, "num_threads() = %zu", initial);
  CHECK(pteron_parallel_threads() == (int32_t)initial, "runtime reports %d threads, pool %zu",
        pteron_parallel_threads(), initial);
  std::printf("implementation=%s threads=%zu\n", pteron_threadpool_implementation(), initial);
  const bool is_pthreadpool = std::strcmp(pteron_threadpool_implementation(), "pthreadpool") == 0;
  CHECK((pteron_threadpool_pthreadpool() != nullptr) == is_pthreadpool,
        "pthreadpool_t %p with the %s pool", pteron_threadpool_pthreadpool(),
        pteron_threadpool_implementation());

  // Errors.
  CHECK(pteron_threadpool_set_num_threads(PTERON_THREADPOOL_MAX_THREADS + 1) ==
            PTERON_ERROR_INVALID_ARGUMENT,
        "too many threads accepted");
  CHECK(pteron_threadpool_num_threads() == initial, "a refused change changed the count");

  // One thread, then several.
  sweep(1, 1, "initial pool");
  uses_threads(initial, "initial pool");
  nested("initial pool");

  CHECK(pteron_threadpool_set_num_threads(1) == PTERON_OK, "set 1");
  CHECK(pteron_parallel_threads() == 1, "runtime reports %d after set 1",
        pteron_parallel_threads());
  sweep(2, 1, "1 thread");
  uses_threads(1, "1 thread");

  CHECK(pteron_threadpool_set_num_threads(4) == PTERON_OK, "set 4");
  CHECK(pteron_threadpool_num_threads() == 4, "num_threads %zu after set 4",
        pteron_threadpool_num_threads());
  CHECK(pteron_parallel_threads() == 4, "runtime reports %d after set 4",
        pteron_parallel_threads());
  CHECK((pteron_threadpool_pthreadpool() != nullptr) == is_pthreadpool,
        "pthreadpool_t after set 4");
  sweep(3, 1, "4 threads");
  uses_threads(4, "4 threads");
  nested("4 threads");
  woken(4, "woken, 4 threads");

  two_callers(0);

  // Two threads calling while a third keeps replacing the pool.
  {
    std::atomic<bool> done{false};
    std::thread changer([&] {
      size_t counts[] = {2, 3, 1, 4, 0};
      int i = 0;
      while (!done.load()) {
        CHECK(pteron_threadpool_set_num_threads(counts[i++ % 5]) == PTERON_OK, "set during calls");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    std::thread a([] { sweep(30, 2, "resized A"); });
    std::thread b([] { sweep(40, 2, "resized B"); });
    a.join();
    b.join();
    done.store(true);
    changer.join();
  }

  // 0 = the default (hardware threads).
  CHECK(pteron_threadpool_set_num_threads(0) == PTERON_OK, "set 0");
  unsigned hw = std::thread::hardware_concurrency();
  size_t want = hw ? (hw > PTERON_THREADPOOL_MAX_THREADS ? PTERON_THREADPOOL_MAX_THREADS : hw) : 1;
  CHECK(pteron_threadpool_num_threads() == want, "set 0 gave %zu threads, want %zu",
        pteron_threadpool_num_threads(), want);

  if (g_failures.load()) {
    std::fprintf(stderr, "parallel_for contract: %d failures\n", g_failures.load());
    return 1;
  }
  std::printf("parallel_for contract: OK\n");
  return 0;
}
