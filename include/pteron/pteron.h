// SPDX-License-Identifier: BSD-3-Clause
/* pteron/pteron.h - the runtime's C API (pteron.dll / libpteron.so).
 *
 * Load an ExecuTorch program (.pte, ExecuTorch 1.5.x format), load one of its
 * methods, set inputs, execute, read outputs.
 *
 * Conventions (ONNX Runtime's pattern):
 *  - Every object is an opaque handle. Every *_release() accepts NULL.
 *  - Every fallible call returns a pteron_status*: NULL means success; a
 *    non-NULL status holds an error code (pteron_error, in pteron/types.h)
 *    and a UTF-8 message naming what failed. Release it with
 *    pteron_status_release().
 *  - Dtypes, value tags, shape dynamism and PTERON_MAX_DIM come from
 *    pteron/types.h. The ABI for kernel libraries and delegates
 *    (pteron/kernel.h) is not part of this API and is not included here.
 *  - Only plain C types cross this boundary, so a consumer built with any
 *    C/C++ runtime configuration (Debug or Release CRT, _GLIBCXX_DEBUG) may
 *    use any build of the library.
 *  - Parameters are annotated [in], [out], [optional].
 *
 * Thread-safety: a pteron_program may be shared by threads (loading methods
 * from it concurrently is safe). Calls on one pteron_method from several
 * threads are serialised: input/output info, set_input, execute and
 * copy_output each wait for the call in flight on that method, so its state
 * is never torn. A sequence of calls (set inputs, execute, copy outputs) is
 * not atomic: threads that each need their own results use their own
 * method instances (one program can back any number). Releasing a method
 * while another thread calls it is an error of the caller. Registry
 * functions may be called from any thread.
 *
 * Ownership: a method keeps its program alive; releasing the program while
 * methods exist is allowed (the last release frees it).
 */
#ifndef PTERON_PTERON_H
#define PTERON_PTERON_H

#include <stddef.h>
#include <stdint.h>

#include "pteron/export.h"
#include "pteron/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this C API. (Kernel libraries and delegates have their own
 * version, PTERON_ABI_VERSION in pteron/kernel.h.) */
#define PTERON_API_VERSION 1u

typedef struct pteron_status pteron_status;
typedef struct pteron_program pteron_program;
typedef struct pteron_method pteron_method;

/* ---- status ------------------------------------------------------------- */

/* Error code of `s` (PTERON_OK for NULL). */
PTERON_API int32_t pteron_status_code(const pteron_status* s);
/* Message of `s` (UTF-8, "" for NULL). Valid until the status is released. */
PTERON_API const char* pteron_status_message(const pteron_status* s);
/* Frees `s` [optional]. */
PTERON_API void pteron_status_release(pteron_status* s);
/* Short name of an error code, e.g. "missing_operator". */
PTERON_API const char* pteron_error_name(int32_t code);

/* ---- version ------------------------------------------------------------ */

/* Runtime version "MAJOR.MINOR.PATCH" (static string). */
PTERON_API const char* pteron_version(void);
/* The kernel ABI version the runtime was built with (PTERON_ABI_VERSION of
 * pteron/kernel.h): the version a component must register with. */
PTERON_API uint32_t pteron_abi_version(void);

/* ---- program ------------------------------------------------------------ */

/* Loads a program from a file. `path` is UTF-8 on every platform. The file is
 * memory-mapped copy-on-write (mmap on Linux, a file mapping on Windows) and
 * verified: file identifier "ET12", extended header, flatbuffer structure,
 * every segment range. Errors: PTERON_ERROR_IO (cannot open/map, naming the
 * path), PTERON_ERROR_INVALID_PROGRAM (malformed, naming what).
 * The mapping is read until the program and its methods are released, and
 * what was verified is not copied: the file must not change meanwhile (the
 * contract of every memory-mapped loader, upstream's MmapDataLoader's too).
 * Writing into it or truncating it (`cp new.pte model.pte` onto the same
 * file) makes later reads see unverified bytes, or a SIGBUS on Linux.
 * Replace a program in use by renaming a new file over it (rename() on
 * POSIX, MoveFileEx on Windows, where the mapping also blocks writes), or
 * load it with pteron_program_load_memory, which keeps its own copy. */
PTERON_API pteron_status* pteron_program_load_file(const char* path /*[in]*/,
                                                   pteron_program** out /*[out]*/);
/* Loads a program from `size` bytes at `data`; the bytes are copied, so the
 * caller may free them on return. Same checks and errors as above. */
PTERON_API pteron_status* pteron_program_load_memory(const void* data /*[in]*/, size_t size,
                                                     pteron_program** out /*[out]*/);
/* Loads a program together with its external data file (.ptd), as upstream
 * ExecuTorch 1.5 writes it when constants are exported outside the program
 * (ExecutorchBackendConfig(external_constants=True), then
 * ExecutorchProgramManager.write_tensor_data_to_file). Format facts come from
 * upstream's extension/flat_tensor/serialize/flat_tensor.fbs, restated in
 * pteron's runtime/core/schema/flat_tensor.fbs: file identifier "FT01", a
 * "FH01" header at offset 8, a flatbuffer of entries (key, segment, tensor
 * layout), then the segments.
 *
 * `path` and `data_path` are UTF-8; both files are memory-mapped
 * copy-on-write and verified here (identifier, header, flatbuffer, every
 * entry's segment range). `data_path` NULL: the same as
 * pteron_program_load_file.
 *
 * What is looked up, and when: at method load, every tensor the program
 * marks as external (extra_tensor_info.location EXTERNAL) is found in the data
 * file under its fully qualified name (e.g. "l1.weight"). The entry's dtype,
 * sizes and dim order must equal the tensor's. A constant then points into
 * the data file; a memory-planned one (a mutable weight) is copied into its
 * planned memory. Delegates asking for named data (pteron_named_data_get,
 * pteron/kernel.h) get the program's own entry, else the data file's.
 * Errors, at this call: PTERON_ERROR_IO (cannot open/map either file, naming
 * it), PTERON_ERROR_INVALID_PROGRAM (either file malformed: the message names
 * the data file and what is wrong), PTERON_ERROR_NOT_SUPPORTED (a data file
 * format version other than 0). At method load: PTERON_ERROR_NOT_FOUND naming
 * the tensor and its key when the program was loaded without a data file or
 * the data file has no such key; PTERON_ERROR_INVALID_PROGRAM when the
 * entry's layout or size differs from the tensor's. */
PTERON_API pteron_status* pteron_program_load_file_with_data(const char* path /*[in]*/,
                                                             const char* data_path /*[optional]*/,
                                                             pteron_program** out /*[out]*/);
/* The same from memory: `size` program bytes at `data` and `data_size` data
 * file bytes at `data_file` [optional: NULL and 0 for none]. Both are copied,
 * so the caller may free them on return. PTERON_ERROR_INVALID_ARGUMENT when
 * `data_file` is NULL with a nonzero `data_size`. */
PTERON_API pteron_status* pteron_program_load_memory_with_data(const void* data /*[in]*/,
                                                               size_t size,
                                                               const void* data_file /*[optional]*/,
                                                               size_t data_size,
                                                               pteron_program** out /*[out]*/);
/* 1 if `p` was loaded with a data file, else 0 (also for NULL). */
PTERON_API int32_t pteron_program_has_data_file(const pteron_program* p);
/* Drops the caller's reference [optional]. */
PTERON_API void pteron_program_release(pteron_program* p);

/* Number of methods (execution plans). */
PTERON_API size_t pteron_program_method_count(const pteron_program* p);
/* Name of method `index` (< method_count). The string lives as long as the
 * program. Error: PTERON_ERROR_NOT_FOUND for a bad index. */
PTERON_API pteron_status* pteron_program_method_name(const pteron_program* p, size_t index,
                                                     const char** name /*[out]*/);
/* Byte sizes of the memory-planned buffers of method `name`, for callers that
 * supply planned memory. Writes min(count, capacity) sizes to `sizes`
 * [optional if capacity is 0] and the total count to *count. */
PTERON_API pteron_status* pteron_program_planned_buffer_sizes(const pteron_program* p,
                                                              const char* method_name,
                                                              int64_t* sizes, size_t capacity,
                                                              size_t* count /*[out]*/);

/* ---- method ------------------------------------------------------------- */

/* A caller-supplied memory block. */
typedef struct pteron_buffer {
  void* data;  /* at least 16-byte aligned */
  size_t size; /* bytes */
} pteron_buffer;

/* Options of pteron_method_load. Zero-initialise, then set struct_size. */
typedef struct pteron_method_options {
  uint32_t struct_size; /* sizeof(pteron_method_options); first, always */
  uint32_t reserved0;
  /* Planned memory supplied by the caller [optional]: one buffer per planned
   * buffer of the method, in order, each at least as large as
   * pteron_program_planned_buffer_sizes() says. Default (NULL, 0): the
   * runtime allocates planned memory itself. The caller keeps the buffers
   * alive and unused by others while the method lives. */
  const pteron_buffer* planned_buffers;
  size_t num_planned_buffers;
  /* Memory budget [optional; read when struct_size covers it]: the most
   * bytes the runtime allocates for the method's tensors, summed over the
   * planned buffers it allocates itself (not supplied ones) and the tensors
   * it owns (neither constant nor planned, at their upper-bound size).
   * 0: no limit. A program declares these sizes, and a few bytes can declare
   * terabytes: an application that loads programs it does not trust sets a
   * budget, and a method over it is refused with PTERON_ERROR_OUT_OF_MEMORY,
   * naming the buffer or value, before that block is allocated. Delegates'
   * own memory is not counted, nor that of graph passes' regions (kernel.h). */
  uint64_t max_allocated_bytes;
} pteron_method_options;

/* Loads method `name`: builds its values, places every tensor (constant,
 * planned or runtime-owned), resolves every operator in the kernel registry
 * and every delegate in the backend registry, and initialises delegates.
 * A mutable buffer exported with its initial state (upstream's
 * InitializedMutableBufferPass: data_buffer_idx and allocation_info both set)
 * gets that state copied from the program's mutable data segment into its
 * planned memory (the caller's, when supplied) by every load: each method
 * instance starts from the initial state and keeps its own state across
 * executes, as upstream's runtime does. A buffer exported without it starts
 * zeroed in runtime-allocated memory, or as the caller left supplied memory.
 * A method that could not run fails here, not at execute:
 *  - PTERON_ERROR_MISSING_OPERATOR: the message lists every missing operator
 *    ("aten::erfinv.out, aten::atan2.out").
 *  - PTERON_ERROR_MISSING_DELEGATE: the message names the backend id(s).
 *  - PTERON_ERROR_NOT_FOUND: no method of that name.
 *  - PTERON_ERROR_INVALID_PROGRAM: an index, size or type is inconsistent
 *    (e.g. an initial state outside its mutable data segment or shorter than
 *    its tensor, naming the value).
 *  - PTERON_ERROR_NOT_FOUND also when a tensor's external data is missing
 *    (see pteron_program_load_file_with_data), naming the key.
 * `options` may be NULL. */
PTERON_API pteron_status* pteron_method_load(pteron_program* p, const char* name /*[in]*/,
                                             const pteron_method_options* options /*[optional]*/,
                                             pteron_method** out /*[out]*/);
/* [optional] */
PTERON_API void pteron_method_release(pteron_method* m);

PTERON_API size_t pteron_method_input_count(const pteron_method* m);
PTERON_API size_t pteron_method_output_count(const pteron_method* m);

/* Description of one input or output value. For tensors: dtype, current
 * sizes, per-dim upper bounds (== sizes for static shapes), dim order and,
 * for outputs after execute, a pointer to the data in its storage order
 * (valid until the next execute or release). For Int/Double/Bool values:
 * tag and `scalar` (as double: an Int above 2^53 in magnitude is rounded;
 * pteron_method_output_int gives an Int output exactly). */
typedef struct pteron_value_info {
  int32_t tag;      /* pteron_value_tag */
  int32_t dtype;    /* pteron_dtype (tensors) */
  int32_t dim;      /* rank (tensors) */
  int32_t dynamism; /* pteron_shape_dynamism (tensors) */
  int64_t sizes[PTERON_MAX_DIM];
  int64_t bound[PTERON_MAX_DIM];
  uint8_t dim_order[PTERON_MAX_DIM];
  const void* data; /* tensors; may be NULL before execute */
  size_t nbytes;    /* bytes of the current sizes */
  double scalar;    /* Int/Double/Bool values */
} pteron_value_info;

PTERON_API pteron_status* pteron_method_input_info(const pteron_method* m, size_t index,
                                                   pteron_value_info* info /*[out]*/);
PTERON_API pteron_status* pteron_method_output_info(const pteron_method* m, size_t index,
                                                    pteron_value_info* info /*[out]*/);

/* Sets tensor input `index` by copying `nbytes` bytes from `data`
 * (contiguous, row-major) with the given dtype and sizes[0..dim).
 * Errors (PTERON_ERROR_INVALID_ARGUMENT / _SHAPE_MISMATCH) name the input
 * and the value: wrong dtype, wrong rank, a static dim that differs, a
 * dynamic dim beyond its upper bound, nbytes not matching the sizes. */
PTERON_API pteron_status* pteron_method_set_input(pteron_method* m, size_t index, int32_t dtype,
                                                  const int64_t* sizes, int32_t dim,
                                                  const void* data, size_t nbytes);
/* Sets an Int, Double or Bool input. The exporter specialises a method on
 * the value of a scalar input, so only that value is accepted; anything else
 * is PTERON_ERROR_INVALID_ARGUMENT naming both values. An Int input accepts
 * only a whole double that equals it exactly (use pteron_method_set_input_int
 * for values above 2^53 in magnitude). */
PTERON_API pteron_status* pteron_method_set_input_scalar(pteron_method* m, size_t index,
                                                         double value);
/* The value of Int or Bool output `index` (Bool: 0 or 1), exactly. Errors
 * (PTERON_ERROR_INVALID_ARGUMENT): the output is another kind of value; the
 * method has not executed. */
PTERON_API pteron_status* pteron_method_output_int(const pteron_method* m, size_t index,
                                                   int64_t* value /*[out]*/);
/* Sets an Int input exactly (a Double or Bool input compares the value as a
 * double); errors as pteron_method_set_input_scalar. */
PTERON_API pteron_status* pteron_method_set_input_int(pteron_method* m, size_t index,
                                                      int64_t value);

/* Runs the method's chains. Every tensor input must have been set once
 * (inputs keep their values between executions). A kernel or delegate
 * failure returns its code with "instruction N (operator): message". */
PTERON_API pteron_status* pteron_method_execute(pteron_method* m);

/* Copies tensor output `index` into `dst` (`capacity` bytes) as contiguous
 * row-major data, whatever its dim order (bool: one byte per element, 0/1).
 * Errors (PTERON_ERROR_INVALID_ARGUMENT): capacity smaller than the output's
 * bytes; the output is not a tensor; the method has not executed
 * successfully since it was loaded, or its last execute failed (the output
 * would be stale or half-written). PTERON_ERROR_NOT_FOUND: index out of
 * range. */
PTERON_API pteron_status* pteron_method_copy_output(const pteron_method* m, size_t index, void* dst,
                                                    size_t capacity);

/* ---- profiling ----------------------------------------------------------
 * Per-instruction and per-delegate-node timings of one method, and the
 * ETDump file upstream ExecuTorch's devtools read (executorch.devtools
 * .Inspector; format facts from upstream 1.5.1's etdump_schema_flatcc.fbs).
 * Off by default; while on, every execute records:
 *  - "Method::execute": the whole execute (chain_index -1);
 *  - per kernel call, "OPERATOR_CALL" (the instruction) and
 *    "native_call_<name>.<overload>" (the kernel alone), with the
 *    instruction's chain_index and instruction_id (its index in the chain);
 *  - per delegate call, "DELEGATE_CALL", and the delegate's own events
 *    (name NULL, delegate_debug_name or delegate_debug_id set: kernel.h,
 *    pteron_profile_delegate_event). XnnpackBackend reports each node.
 * Method load is always timed ("Program::load_method", "Method::init", in
 * run -1). Times are nanoseconds of a monotonic clock. Recording costs two
 * clock reads per event and about 64 bytes per event, kept until
 * pteron_method_profile_clear or release. */
typedef struct pteron_profile_event {
  uint32_t struct_size;              /* sizeof(pteron_profile_event); set by the caller */
  int32_t run;                       /* execute index since profiling began or was cleared;
                                        -1: method load */
  const char* name;                  /* NULL for a delegate's own event; valid while the
                                        method lives and is not cleared */
  int32_t chain_index;               /* -1: not an instruction's */
  int32_t instruction_id;            /* index in the chain; -1: none */
  int32_t delegate_debug_id;         /* -1: none */
  int32_t reserved0;
  const char* delegate_debug_name;   /* NULL: none */
  uint64_t start_ns, end_ns;
} pteron_profile_event;

/* Turns recording on (nonzero) or off for the next executes. Turning it on
 * again keeps what was recorded. */
PTERON_API pteron_status* pteron_method_set_profiling(pteron_method* m, int32_t enabled);
/* The events recorded so far, load included: their count, and one of them.
 * Errors: PTERON_ERROR_INVALID_ARGUMENT (NULL, index out of range, or
 * out->struct_size below sizeof(pteron_profile_event)). */
PTERON_API size_t pteron_method_profile_event_count(const pteron_method* m);
PTERON_API pteron_status* pteron_method_profile_event(const pteron_method* m, size_t index,
                                                      pteron_profile_event* out /*[out]*/);
/* Forgets the executes' events (load's stay); runs count from 0 again. */
PTERON_API void pteron_method_profile_clear(pteron_method* m);
/* Writes the events as an ETDump file at `path` (UTF-8): one "Default" block
 * for method load, one "Execute" block per execute, as upstream's runtime
 * writes them. Errors: PTERON_ERROR_INVALID_ARGUMENT (NULL),
 * PTERON_ERROR_IO (the file cannot be written; names the path and
 * the cause). */
PTERON_API pteron_status* pteron_method_write_etdump(const pteron_method* m,
                                                     const char* path /*[in]*/);

/* ---- registries --------------------------------------------------------- */

typedef struct pteron_kernel_info {
  const char* name;     /* "aten::add" */
  const char* overload; /* "out" */
  const char* key;      /* "" for a generic kernel, "dtype=6" for one specialised
                           for float32 (the kernel key, see pteron/kernel.h) */
  const char* library;  /* registering library, e.g. "kernels_portable" */
  int32_t priority;
  int32_t selected; /* 1 if this entry wins lookups for its name/overload/key */
} pteron_kernel_info;

/* Number of registered kernel entries (every library's, winners and not). */
PTERON_API size_t pteron_kernel_count(void);
/* Entry `index`; strings live as long as the process. */
PTERON_API pteron_status* pteron_kernel_get(size_t index, pteron_kernel_info* info /*[out]*/);

typedef struct pteron_backend_info {
  const char* id;
  const char* library;
  int32_t available;
  int32_t reserved0;
} pteron_backend_info;

PTERON_API size_t pteron_backend_count(void);
PTERON_API pteron_status* pteron_backend_get(size_t index, pteron_backend_info* info /*[out]*/);

/* Registrations the runtime refused for an ABI version mismatch, in the
 * order they happened, each a message naming the library and both versions
 * (the runtime also wrote it to stderr). `index` < count; NULL otherwise;
 * the string lives as long as the process. Registrations refused for a
 * NULL argument are not kept (only the register call's return value says
 * so). */
PTERON_API size_t pteron_registration_error_count(void);
PTERON_API const char* pteron_registration_error(size_t index);

/* Anchor of the runtime component (docs/architecture.md, "Windows (PE) and its ELF counterpart").
 */
PTERON_API int pteron_anchor_runtime(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTERON_PTERON_H */
