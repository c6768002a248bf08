// SPDX-License-Identifier: BSD-3-Clause
// internal.h - runtime internals shared by runtime/core/*.cpp. Never installed.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "flat_tensor_generated.h"
#include "program_generated.h"
#include "pteron/kernel.h"
#include "pteron/pteron.h"

namespace pteron {
struct Profile;  // profile.h
}

// The opaque handles of the C API.
struct pteron_status {
  int32_t code;
  std::string message;
};

struct pteron_kernel_context {
  int32_t code = PTERON_OK;
  std::string message;
  std::vector<unsigned char> scratch;              // grown on demand, never shrunk
  const struct pteron_program* program = nullptr;  // for named data (delegate init)
  // Test-only (pteron_testing_backend_init): programs whose named data a
  // backend's init reads when `program` is NULL, searched in order.
  std::vector<const struct pteron_program*> named_data_programs;
  // The method's profile while it is recorded (profile.h), else NULL: where a
  // delegate's pteron_profile_delegate_event goes.
  pteron::Profile* profile = nullptr;
};

namespace pteron {

// An error code plus message; code 0 = success.
struct Status {
  int32_t code = PTERON_OK;
  std::string message;
  bool ok() const { return code == PTERON_OK; }
  static Status Ok() { return {}; }
};

// Messages are formatted by the C library's vsnprintf. MinGW's libstdc++
// selects MinGW's C99 printf (__USE_MINGW_ANSI_STDIO), so %zu and %lld work
// there too; gcc must check them as gnu_printf, not as msvcrt's printf.
#if defined(__MINGW32__)
#define PTERON_PRINTF_LIKE(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__)
#define PTERON_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PTERON_PRINTF_LIKE(f, a)
#endif

Status error(int32_t code, const char* fmt, ...) PTERON_PRINTF_LIKE(2, 3);

std::string format(const char* fmt, ...) PTERON_PRINTF_LIKE(1, 2);

// Turns a Status into a C API status (NULL for success).
pteron_status* to_c(Status s);

// Bytes of a program file: a copy-on-write file mapping or an owned copy.
class Bytes {
 public:
  virtual ~Bytes() = default;
  virtual const uint8_t* data() const = 0;
  virtual uint8_t* mutable_data() = 0;
  virtual size_t size() const = 0;
};
// `what` names the file in messages ("program", "data").
Status map_file(const char* utf8_path, std::unique_ptr<Bytes>* out, const char* what = "program");
Status copy_bytes(const void* data, size_t size, std::unique_ptr<Bytes>* out);

// Element size of a dtype, 0 if unknown to the format.
size_t element_size(int32_t dtype);
const char* dtype_name(int32_t dtype);
// `s` safe to put in a one-line message: bytes outside printable ASCII
// (newlines, control characters, invalid or non-ASCII UTF-8), the backslash and
// the single quote (messages quote names in '...') as \xNN.
// For names read from a program (operators, delegate ids, methods).
std::string printable(const std::string& s);

// Multiplies with overflow detection; false on overflow or negative input.
bool checked_mul(int64_t a, int64_t b, int64_t* out);

// ---- tensors ----

// Element strides of `t` from its sizes and dim order: the innermost dim
// (last in dim_order) has stride 1; a 0-sized dim counts as 1.
void compute_strides(pteron_tensor* t);
int64_t tensor_numel(const pteron_tensor& t);
// Bool storage must hold 0 or 1 (kernels read it as C++ bool). A program's
// constants or a caller's input may hold other bytes: normalise them. The
// program's bytes are a private copy-on-write mapping or our own copy.
void normalize_bools(void* data, size_t n);

// ---- registries ----

struct KernelEntry {
  std::string name, overload, key, library;
  pteron_kernel_fn fn;
  int32_t priority;
};

// Best kernel for name/overload and the call's kernel key (resolve.cpp's
// kernel_key(); the rule is documented in pteron/kernel.h); nullptr if none.
pteron_kernel_fn find_kernel(const std::string& name, const std::string& overload,
                             const std::string& key);

struct BackendEntry {
  pteron_backend_interface iface;
  std::string id, library;
};
// Copy of the backend registered under `id`; false if none.
bool find_backend(const std::string& id, BackendEntry* out);

struct GraphPassEntry {
  pteron_graph_pass pass;
  std::string name, library;
};
// The registered graph passes, in registration order.
std::vector<GraphPassEntry> graph_passes();

}  // namespace pteron

// ---- external data file (.ptd) ----

namespace pteron {

// A verified external data file (FlatTensor format, schema/flat_tensor.fbs):
// its bytes, its flatbuffer root and where its segments start. Every entry's
// segment range was checked at load.
struct DataFile {
  std::unique_ptr<Bytes> bytes;
  const ft::FlatTensor* root = nullptr;
  uint64_t segment_base = 0;
  std::string name;  // the path, or "data buffer", for messages

  // The entry under `key`, or nullptr.
  const ft::NamedData* find(const char* key) const;
  // The validated bytes of entry `e`.
  Status entry_bytes(const ft::NamedData* e, const uint8_t** data, size_t* size) const;
};

// Checks the header, the flatbuffer and every segment range of a .ptd.
Status load_data_file(std::unique_ptr<Bytes> bytes, const std::string& name,
                      std::unique_ptr<DataFile>* out);

}  // namespace pteron

// ---- program ----

struct pteron_program {
  std::atomic<int> refs{1};
  std::unique_ptr<pteron::Bytes> bytes;
  const pteron::fb::Program* root = nullptr;
  size_t program_size = 0;    // bytes of the flatbuffer
  uint64_t segment_base = 0;  // start of segment data (0 if none)
  bool has_segments = false;
  std::unique_ptr<pteron::DataFile> data_file;  // the .ptd loaded with it, or null

  // Validated byte range of segment `index`.
  pteron::Status segment(uint32_t index, const uint8_t** data, size_t* size) const;
  // Validated constant data for data_buffer_idx (> 0), `nbytes` long.
  pteron::Status constant(uint32_t buffer_idx, size_t nbytes, const uint8_t** data) const;
  // Validated initial state of a mutable buffer: entry `buffer_idx` (> 0) of
  // mutable data segment `segments_idx`, at least `nbytes` long.
  pteron::Status mutable_data(uint64_t segments_idx, uint32_t buffer_idx, size_t nbytes,
                              const uint8_t** data) const;
  // Named data by key: the program's own named data, then the data file's.
  pteron::Status named_data(const char* key, const uint8_t** data, size_t* size) const;
  const pteron::fb::ExecutionPlan* plan(const char* name) const;
};

pteron::Status load_program(std::unique_ptr<pteron::Bytes> bytes, pteron_program** out);
