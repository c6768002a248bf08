// SPDX-License-Identifier: BSD-3-Clause
/* pteron/kernel.h - the C ABI between the runtime and the libraries that
 * extend it: kernel libraries (operators) and delegates (backends).
 *
 * Everything here is plain C: fixed-layout structs, pointer + size pairs and
 * int32 error codes. No C++ standard-library object and no allocation that
 * must be freed on the other side ever crosses it, so a library built with a
 * different C++ runtime configuration (Debug/Release CRT, _GLIBCXX_DEBUG)
 * cannot corrupt the runtime's memory through it.
 *
 * Thread-safety: registration functions may be called from any thread
 * (typically from a library's load-time initializer); they lock. Kernel
 * functions are called by the thread executing a method instance.
 */
#ifndef PTERON_KERNEL_H
#define PTERON_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "pteron/export.h"
#include "pteron/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version of this header. A kernel library or delegate passes the value it
 * was compiled with when it registers; the runtime refuses a mismatch and
 * names both versions. Bump on any change to a struct or function below. */
#define PTERON_ABI_VERSION 1u

/* A dense tensor. Owned by the runtime; kernels read it, write `data`, and
 * change sizes only through pteron_tensor_resize().
 *  - sizes[0..dim): current sizes, in the logical (NCHW...) order.
 *  - dim_order[0..dim): memory order of the logical dims, outermost first
 *    (0,1,2,3 = contiguous; 0,2,3,1 = channels-last).
 *  - strides[0..dim): element strides of each logical dim, derived from sizes
 *    and dim_order (no views: storage is always dense).
 *  - data: element storage, `capacity_bytes` bytes long. NULL only for a
 *    tensor with no storage yet (an unset input).
 *  - bound[0..dim): the upper bound of each dim (equal to sizes for static). */
typedef struct pteron_tensor {
  int32_t dtype;    /* pteron_dtype */
  int32_t dim;      /* 0 .. PTERON_MAX_DIM */
  int32_t dynamism; /* pteron_shape_dynamism */
  int32_t reserved0;
  int64_t sizes[PTERON_MAX_DIM];
  int64_t strides[PTERON_MAX_DIM];
  int64_t bound[PTERON_MAX_DIM];
  uint8_t dim_order[PTERON_MAX_DIM];
  void* data;
  int64_t capacity_bytes;
} pteron_tensor;

/* One argument of an operator (ExecuTorch's EValue). Lists point into
 * runtime-owned storage valid for the duration of the call. In an optional
 * tensor list, absent entries are NULL. */
typedef struct pteron_value {
  int32_t tag; /* pteron_value_tag */
  int32_t reserved0;
  union {
    int64_t i;
    double d;
    int64_t b; /* 0 or 1 */
    pteron_tensor* tensor;
    struct {
      const char* data;
      size_t size;
    } string;
    struct {
      const int64_t* data;
      size_t size;
    } int_list;
    struct {
      const double* data;
      size_t size;
    } double_list;
    struct {
      const uint8_t* data;
      size_t size;
    } bool_list;
    struct {
      pteron_tensor* const* data;
      size_t size;
    } tensor_list;
  } u;
} pteron_value;

/* Per-call context the runtime passes to a kernel or delegate. Opaque. */
typedef struct pteron_kernel_context pteron_kernel_context;

/* A kernel: `args` are the operator's arguments in schema order, out
 * arguments last (ExecuTorch's out-variant calling convention). Returns
 * PTERON_OK, or an error code after pteron_kernel_fail(). */
typedef int32_t (*pteron_kernel_fn)(pteron_kernel_context* ctx, pteron_value* const* args,
                                    size_t num_args);

/* Records a failure with a message (copied; may be NULL) and returns `code`,
 * so a kernel can `return pteron_kernel_fail(ctx, code, "...")`. The runtime
 * prefixes the operator name and instruction index. */
PTERON_API int32_t pteron_kernel_fail(pteron_kernel_context* ctx, int32_t code,
                                      const char* message);

/* Sets `t`'s sizes to sizes[0..dim) and recomputes strides, keeping its
 * dim order. Static tensors accept only their own sizes; bounded tensors
 * accept sizes whose byte size fits their storage. Returns
 * PTERON_ERROR_SHAPE_MISMATCH otherwise (after recording a message). */
PTERON_API int32_t pteron_tensor_resize(pteron_kernel_context* ctx, pteron_tensor* t,
                                        const int64_t* sizes, int32_t dim);

/* Scratch memory for the current call: at least `bytes` bytes, 64-byte
 * aligned, valid until the kernel returns. NULL (with a recorded
 * PTERON_ERROR_OUT_OF_MEMORY) if it cannot be had. */
PTERON_API void* pteron_kernel_scratch(pteron_kernel_context* ctx, size_t bytes);

/* Work-splitting hook. Calls fn(user, b, e) over sub-ranges that exactly
 * cover [begin, end), each at least `grain` long where possible, possibly
 * concurrently. Serial until a thread pool installs itself with
 * pteron_set_parallel_backend(). fn must not throw. */
typedef void (*pteron_range_fn)(void* user, int64_t begin, int64_t end);
PTERON_API void pteron_parallel_for(int64_t begin, int64_t end, int64_t grain, pteron_range_fn fn,
                                    void* user);

/* A hint that parallel work follows soon: the installed backend's `wake`
 * (below) may wake its idle workers so that they are polling when the next
 * pteron_parallel_for comes. Never waits; does nothing without a backend or
 * a hook. The runtime calls it as each execute begins; a delegate or kernel
 * may call it before serial work that ends in a parallel call. */
PTERON_API void pteron_parallel_wake(void);

/* A parallel backend (installed by the threadpool component). `run` must
 * behave as pteron_parallel_for. `threads` reports its worker count.
 * `wake` (may be NULL, and is absent from a backend whose struct_size ends
 * before it) implements pteron_parallel_wake: it must not wait. The runtime
 * calls it as an execute begins, before it copies the inputs into place, so
 * a sleeping worker's wake-up (tens of microseconds in a VM) overlaps that
 * copy instead of delaying the first parallel node. */
typedef struct pteron_parallel_backend {
  uint32_t struct_size; /* sizeof(pteron_parallel_backend) */
  void (*run)(int64_t begin, int64_t end, int64_t grain, pteron_range_fn fn, void* user);
  int32_t (*threads)(void);
  void (*wake)(void);
} pteron_parallel_backend;
PTERON_API int32_t pteron_set_parallel_backend(uint32_t abi_version,
                                               const pteron_parallel_backend* b);
/* pteron_parallel_threads() (pteron/types.h) says how many threads
 * pteron_parallel_for may use. */

/* ---- kernel registration ------------------------------------------------ */

/* The kernel key: how the runtime picks one kernel for a kernel call.
 *
 * At method load the runtime builds one key per kernel call of the program:
 * the key of the dtype of the call's first tensor argument, in the
 * operator's argument order (out arguments count: they come last), that is
 * pteron_kernel_key_for_dtype(that dtype); the empty string when no argument
 * is a tensor. The dim order and every other argument play no part. Among
 * the kernels registered under the call's operator name and overload:
 *  1. a kernel whose key equals the call's key wins over a generic one (key
 *     NULL or ""); a kernel with any other key is never picked;
 *  2. among those left, the higher `priority` wins; at equal priority the
 *     one registered first.
 * No kernel left: method load fails with PTERON_ERROR_MISSING_OPERATOR. */

/* The key of a kernel specialised for tensors of `dtype`: "dtype=" and the
 * dtype's number in decimal ("dtype=6" for PTERON_DTYPE_FLOAT32). Defined for
 * every scalar type of the program format (runtime/core/schema/program.fbs),
 * NULL for any other value. The string is static. A kernel library passes it
 * as pteron_kernel_registration.key; the runtime builds the key of a kernel
 * call with this same function. */
PTERON_API const char* pteron_kernel_key_for_dtype(int32_t dtype);

/* One kernel. `name` is the operator as the program names it ("aten::add"),
 * `overload` its overload ("out", "Scalar_out"). `key` is NULL or "" for a
 * generic kernel (one that checks the dtypes it accepts itself), or
 * pteron_kernel_key_for_dtype(d) for a kernel specialised for calls whose
 * first tensor argument has dtype d (see "The kernel key" above). When two
 * libraries provide the same name/overload/key, the higher `priority` wins
 * regardless of load order (portable 0, optimized 100). */
typedef struct pteron_kernel_registration {
  const char* name;
  const char* overload;
  const char* key;
  pteron_kernel_fn fn;
  int32_t priority;
  int32_t reserved0;
} pteron_kernel_registration;

/* Registers `count` kernels on behalf of `library` (a short name shown by
 * the registry listing, e.g. "kernels_portable"). Strings are copied.
 * The runtime itself registers the prim operators that upstream's exporter
 * emits outside any kernel library (aten::sym_size.int, aten::sym_numel,
 * aten::_local_scalar_dense, executorch_prim::*) as library "runtime"
 * (runtime/core/prim_ops.cpp); kernel libraries need not provide them.
 * Registering the same kernel (same library, name, overload, key) twice is a
 * no-op; an entry whose name, overload or fn is NULL is skipped.
 * Errors (nothing is registered):
 *  - PTERON_ERROR_ABI_MISMATCH: `abi_version` is not the runtime's
 *    PTERON_ABI_VERSION. The runtime also writes a message naming the
 *    library and both versions to stderr and keeps it; an application reads
 *    the kept messages with pteron_registration_error_count() and
 *    pteron_registration_error() (pteron/pteron.h).
 *  - PTERON_ERROR_INVALID_ARGUMENT: `kernels` is NULL while `count` is not
 *    0 (not kept: only the return value says so). */
PTERON_API int32_t pteron_register_kernels(uint32_t abi_version, const char* library,
                                           const pteron_kernel_registration* kernels, size_t count);

/* ---- backend (delegate) registration ------------------------------------ */

/* A compile spec of a delegate call (key, raw bytes), as in the program. */
typedef struct pteron_compile_spec {
  const char* key;
  const uint8_t* value;
  size_t value_size;
} pteron_compile_spec;

/* Looks up the program's named data: the `named_data` table of the program
 * flatbuffer (runtime/core/schema/program.fbs), each entry a key (the exporter's
 * string, e.g. the hex digest of a weight) and a segment of raw bytes.
 * Only valid inside a backend's `init`, with the context it was given.
 * On success *data / *size (bytes) point into the program's memory and stay
 * valid while the program lives; no alignment beyond the segment's is
 * promised. Errors: PTERON_ERROR_INVALID_ARGUMENT (a NULL argument),
 * PTERON_ERROR_NOT_FOUND (no such key, or called outside `init`),
 * PTERON_ERROR_INVALID_PROGRAM (the entry's segment lies outside the file). */
PTERON_API int32_t pteron_named_data_get(pteron_kernel_context* ctx, const char* key,
                                         const void** data, size_t* size);

/* A delegate. `init` turns the processed blob into a handle (it must copy
 * what it keeps past init unless it keeps only named data, which lives as
 * long as the program). `processed` is at least 16-byte aligned. `execute` receives the DelegateCall's arguments.
 * `destroy` accepts NULL. */
typedef struct pteron_backend_interface {
  uint32_t struct_size; /* sizeof(pteron_backend_interface) */
  const char* id;       /* as the program names it, e.g. "XnnpackBackend" */
  int32_t (*is_available)(void);
  int32_t (*init)(pteron_kernel_context* ctx, const void* processed, size_t processed_size,
                  const pteron_compile_spec* specs, size_t num_specs, void** handle);
  int32_t (*execute)(pteron_kernel_context* ctx, void* handle, pteron_value* const* args,
                     size_t num_args);
  void (*destroy)(void* handle);
} pteron_backend_interface;

/* Registers a backend on behalf of `library`. The interface struct is
 * copied; its strings must stay valid while the library is loaded.
 * Registering the same id twice is a no-op (the first registration stays).
 * Errors (nothing is registered):
 *  - PTERON_ERROR_ABI_MISMATCH: as for pteron_register_kernels, the message
 *    is written to stderr and kept for pteron_registration_error();
 *  - PTERON_ERROR_INVALID_ARGUMENT: `b` or its id, init or execute is NULL,
 *    or b->struct_size is below sizeof(pteron_backend_interface) (not
 *    kept). */
PTERON_API int32_t pteron_register_backend(uint32_t abi_version, const char* library,
                                           const pteron_backend_interface* b);

/* ---- graph passes (method-load rewrites) -------------------------------- */

/* A kernel library may rewrite a method's chains when the method loads: a
 * graph pass sees one chain at a time (pteron_graph) and may replace a run of
 * its kernel calls by one region, a function that computes what the run
 * computes (batch norms folded into convolutions, activations fused, NHWC
 * layout inside the run, weights repacked once). The runtime:
 *  - runs the passes registered when the method loads, in registration order,
 *    on every chain without jumps or moves, unless the environment variable
 *    PTERON_GRAPH_OPT is "0" (then no pass runs);
 *  - at execute, calls the region instead of the run's first instruction and
 *    skips the rest of the run. A region that returns PTERON_REGION_DECLINED
 *    (shapes it was not built for) has written nothing: the runtime then runs
 *    the original instructions, so their results and errors are the
 *    program's. Any other non-zero code fails the execute like a kernel's;
 *  - with profiling on, records a region as one OPERATOR_CALL event at the
 *    run's first instruction, named "native_call_" and the region's name.
 * A pass must keep every value the program can observe: a method output, and
 * every value an instruction outside the run reads
 * (pteron_graph_uses_outside), holds after the region what the run would
 * have left in it, within the pass's stated tolerance. */
typedef struct pteron_graph pteron_graph;

#define PTERON_REGION_DECLINED (-1)
typedef int32_t (*pteron_region_fn)(pteron_kernel_context* ctx, void* state);

typedef struct pteron_graph_pass {
  uint32_t struct_size; /* sizeof(pteron_graph_pass) */
  const char* name;     /* shown in diagnostics, e.g. "kernels_optimized.nhwc" */
  /* Inspects `g` and calls pteron_graph_replace for each run it rewrites.
   * Returns PTERON_OK, or an error code that fails the method load. */
  int32_t (*run)(pteron_graph* g);
} pteron_graph_pass;

/* Registers a pass on behalf of `library` (registering a name twice is a
 * no-op). PTERON_ERROR_ABI_MISMATCH or PTERON_ERROR_INVALID_ARGUMENT. */
PTERON_API int32_t pteron_register_graph_pass(uint32_t abi_version, const char* library,
                                              const pteron_graph_pass* pass);

/* Number of instructions in the chain. */
PTERON_API size_t pteron_graph_size(const pteron_graph* g);
/* Instruction i's operator ("aten::convolution") and overload ("out"), or
 * NULL when i is not a kernel call (a delegate call, a free) or out of range. */
PTERON_API const char* pteron_graph_operator(const pteron_graph* g, size_t i, const char** overload);
/* Instruction i's argument count, and argument j (the method's value: the
 * same pointer the kernel is called with; NULL when out of range). */
PTERON_API size_t pteron_graph_num_args(const pteron_graph* g, size_t i);
PTERON_API pteron_value* pteron_graph_arg(const pteron_graph* g, size_t i, size_t j);

/* Item j of a tensor list value (as a value of the method), or NULL (not a
 * list, out of range, or an absent optional item). */
PTERON_API pteron_value* pteron_graph_list_item(const pteron_graph* g, const pteron_value* list,
                                                size_t j);

/* What the runtime knows of a value (bits of pteron_graph_value_flags). */
#define PTERON_GRAPH_CONSTANT 1u /* a tensor whose data lies in the program or data file */
#define PTERON_GRAPH_INPUT 2u    /* a method input */
#define PTERON_GRAPH_OUTPUT 4u   /* a method output */
#define PTERON_GRAPH_COMPUTED 8u /* an Int a runtime operator writes at execute (sym_size...) */
#define PTERON_GRAPH_DYNAMIC 16u /* a tensor whose shape may change (dynamism not static) */
/* Flags of `v`, with the bits of the Int items when `v` is an int list. */
PTERON_API uint32_t pteron_graph_value_flags(const pteron_graph* g, const pteron_value* v);
/* How many argument slots name `v` among the method's instructions outside
 * [first, first + count) of this chain (other chains included), plus one
 * when `v` is a method output; the same is added for every view of `v`: a
 * tensor value on the same storage that no kernel call writes (the memory
 * plan's views, as upstream's exporter makes for view_copy). */
PTERON_API size_t pteron_graph_uses_outside(const pteron_graph* g, const pteron_value* v,
                                            size_t first, size_t count);
/* Replaces instructions [first, first + count) by region `run` with `state`
 * (`name`: copied, for profiles and diagnostics). The runtime owns `state`
 * from this call on, success or not, and calls destroy(state) (when not NULL)
 * as the method is destroyed. PTERON_ERROR_INVALID_ARGUMENT when the range
 * is empty, out of the chain, overlaps an earlier region or holds an
 * instruction other than a kernel call or a free. */
PTERON_API int32_t pteron_graph_replace(pteron_graph* g, size_t first, size_t count,
                                        const char* name, pteron_region_fn run, void* state,
                                        void (*destroy)(void* state));

/* ---- profiling ------------------------------------------------------------ */

/* A delegate's own timings, for the application's profile (pteron.h,
 * "Profiling"): while the method it runs in is profiled, a backend's
 * `execute` may report each node it runs as one event, which the runtime
 * files under the current DelegateCall (its chain and instruction) and
 * writes into the method's ETDump as upstream's delegates write theirs.
 *  - pteron_profiling_enabled(ctx): nonzero while the method that called
 *    this `execute` (or kernel) is profiled; a delegate reads no clock when
 *    it is 0.
 *  - pteron_profile_clock_ns(): the profile's clock, nanoseconds of a
 *    monotonic clock (std::chrono::steady_clock), the unit of every event.
 *  - pteron_profile_delegate_event: one span [start_ns, end_ns] of the
 *    delegate. `name` (may be NULL) is the node's name as the delegate spells
 *    it, written as the event's delegate_debug_id_str (for example
 *    "Convolution 3x3 #4"); `debug_id` is the node's integer id as the
 *    program's delegate blob gives it (the XNNPACK schema's debug handle), or
 *    -1 for none; the ETDump holds it as delegate_debug_id_int when `name` is
 *    NULL (a named event is written by its name, as upstream's XNNPACK
 *    delegate writes its operators). The name is copied.
 *    Call it from the thread that called `execute` (not from a
 *    pteron_parallel_for worker). Returns PTERON_ERROR_INVALID_ARGUMENT for a
 *    NULL ctx or end before start; does nothing and returns PTERON_OK when
 *    profiling is off. */
PTERON_API int32_t pteron_profiling_enabled(const pteron_kernel_context* ctx);
PTERON_API uint64_t pteron_profile_clock_ns(void);
PTERON_API int32_t pteron_profile_delegate_event(pteron_kernel_context* ctx, const char* name,
                                                 int32_t debug_id, uint64_t start_ns,
                                                 uint64_t end_ns);

/* ---- diagnostics --------------------------------------------------------- */

/* Writes `message` and a newline to stderr the first time `key` is given in
 * this process, whichever component library gives it: a setting that two
 * components read (PTERON_ISA: kernels_optimized and backend_xnnpack each
 * hold a copy of the CPU kernels) is reported once. Control bytes in the message (a quoted
 * value with a line break or an escape sequence) are written as \xNN, so the warning is one
 * line. Thread-safe. Returns 1
 * when the message was written, 0 when the key was seen before or an argument
 * is NULL. */
PTERON_API int32_t pteron_warn_once(const char* key, const char* message);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTERON_KERNEL_H */
