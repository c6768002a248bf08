// SPDX-License-Identifier: BSD-3-Clause
/* pteron/threadpool.h - the process's one thread pool (pteron_threadpool.dll /
 * libpteron_threadpool.so).
 *
 * Loading this library is enough to make the runtime's pteron_parallel_for()
 * parallel: a load-time initializer installs the pool as the runtime's
 * parallel backend (pteron_set_parallel_backend in pteron/kernel.h). The
 * workers themselves are started on first use, not while the library loads.
 *
 * The pool is pteron's own std::thread pool on every target (the build
 * option PTERON_THREADPOOL_IMPL=auto or std): the caller works too, idle
 * workers spin briefly (yielding) and then sleep, chunks are claimed one at a
 * time, and the caller never waits for a worker that has not started a chunk,
 * so a 2-thread run does not collapse when other processes keep the cores
 * busy. A build with PTERON_THREADPOOL_IMPL=pthreadpool uses pthreadpool
 * instead, and the XNNPACK delegate then shares it through
 * pteron_threadpool_pthreadpool(); with the std pool that returns NULL and
 * the XNNPACK library's own runtimes run single-threaded.
 *
 * Thread count. At load it is taken from the environment variable
 * PTERON_NUM_THREADS: a decimal integer in 1..PTERON_THREADPOOL_MAX_THREADS.
 * Any other value is ignored with a one-line warning on stderr. Without a
 * valid value it is the number of hardware threads (at least 1, at most
 * PTERON_THREADPOOL_MAX_THREADS). pteron_threadpool_set_num_threads() changes
 * it later. The count includes the calling thread, which works too:
 * N threads = the caller + N-1 workers.
 *
 * Behaviour of a parallel_for through this pool:
 *  - [begin, end) is split into at most 8 chunks per thread, each at least
 *    `grain` long (one chunk, on the calling thread, when the range is not
 *    longer than `grain` or the pool has 1 thread). Chunks go to whichever
 *    thread asks first, so which thread runs which chunk is not fixed.
 *  - Calls from several threads at once are safe; they take turns on the
 *    pool (each call gets every thread while it runs).
 *  - A parallel_for called from inside a chunk (nested) runs serially on the
 *    thread that called it, so it can never wait for itself.
 *
 * Process exit: on Linux and other ELF platforms the pool is uninstalled from
 * the runtime and destroyed (its workers joined) by the library's static
 * destructor. On Windows the pool is never destroyed at process exit, because
 * Windows has already terminated its workers by then; it is only uninstalled.
 *
 * Errors are pteron_error codes (pteron/types.h); 0 is success.
 */
#ifndef PTERON_THREADPOOL_H
#define PTERON_THREADPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "pteron/export.h"

/* Exported by the threadpool component, imported by everyone else. */
#if defined(PTERON_BUILDING_THREADPOOL)
#define PTERON_THREADPOOL_API PTERON_DLL_EXPORT
#else
#define PTERON_THREADPOOL_API PTERON_DLL_IMPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Largest thread count accepted from PTERON_NUM_THREADS or the API. */
#define PTERON_THREADPOOL_MAX_THREADS 1024u

/* Replaces the pool with one of `n` threads (the caller included).
 * `n` = 0 selects the default: the number of hardware threads.
 * The new pool is created before the old one is destroyed, so on failure the
 * old pool stays in place. Waits for parallel_for calls in flight on other
 * threads to finish first.
 * Thread-safety: may be called from any thread, but not from inside a
 * parallel_for chunk.
 * Errors:
 *  - PTERON_ERROR_INVALID_ARGUMENT: n > PTERON_THREADPOOL_MAX_THREADS, or
 *    called from inside a parallel_for chunk (it would wait for itself);
 *  - PTERON_ERROR_OUT_OF_MEMORY: the threads could not be created.
 * A pthreadpool_t obtained from pteron_threadpool_pthreadpool() before this
 * call is invalid after it. */
PTERON_THREADPOOL_API int32_t pteron_threadpool_set_num_threads(size_t n);

/* Number of threads the pool runs a parallel_for on (the caller included;
 * >= 1). Thread-safe. */
PTERON_THREADPOOL_API size_t pteron_threadpool_num_threads(void);

/* Caps the threads that run the chunks of the parallel_for calls made from
 * the calling thread: at most `n` at once (the caller included), for this
 * thread only, until the next call. 0 removes the cap; a cap at or above the
 * pool's size changes nothing; 1 makes those calls serial on this thread.
 * Under a cap of n < the pool's size a call is split into at most n chunks.
 * It does not resize the pool: parallel_for calls from other threads still
 * use all of it (an application gives one method fewer threads by capping
 * the thread that executes it, as pteron's Python module does for
 * Program.load_method(num_threads=N)). Work a library runs on the
 * pthreadpool_t of pteron_threadpool_pthreadpool() is not capped.
 * Returns the calling thread's previous cap. Thread-safe (the cap is the
 * calling thread's own). */
PTERON_THREADPOOL_API size_t pteron_threadpool_set_thread_cap(size_t n);

/* The pool as a pthreadpool_t, for libraries that take one (the XNNPACK
 * delegate), so the process keeps one pool. Creates the pool if it has not
 * been used yet. Returns NULL when this build uses the std::thread pool
 * (then pass NULL to such libraries: they run single-threaded), or when the
 * pool could not be created.
 * The pointer stays valid until the next pteron_threadpool_set_num_threads()
 * or process exit; do not destroy it. Calls on it take turns with
 * parallel_for (pthreadpool runs one job at a time).
 * Thread-safe; do not call it from inside a parallel_for chunk. */
PTERON_THREADPOOL_API void* pteron_threadpool_pthreadpool(void);

/* "pthreadpool" or "std": which pool this build uses (static string). */
PTERON_THREADPOOL_API const char* pteron_threadpool_implementation(void);

/* Anchor of the threadpool component (docs/architecture.md, "Windows (PE) and its ELF
 * counterpart"). */
PTERON_THREADPOOL_API int pteron_anchor_threadpool(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTERON_THREADPOOL_H */
