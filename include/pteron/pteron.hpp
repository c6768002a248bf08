// SPDX-License-Identifier: BSD-3-Clause
// pteron/pteron.hpp - header-only C++ layer over the C API in pteron.h.
//
// It compiles inside the consumer, with the consumer's own C++ runtime
// configuration (Debug/Release CRT, _GLIBCXX_DEBUG): every std::string and
// std::vector below is created and destroyed on the consumer's side; only the
// C API's plain types cross into the DLL. So a Debug application may use a
// Release pteron and the other way round.
//
// Errors become pteron::Error exceptions carrying the error code and the
// runtime's message. Handles are move-only RAII objects.
//
// Thread-safety: as the C API: a Program may be shared across threads; calls
// on one Method from several threads are serialised, but a sequence of them
// (inputs, execute, outputs) is not atomic: give each thread its own Method.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "pteron/pteron.h"

namespace pteron {

// An error from the runtime: code() is a pteron_error value.
class Error : public std::runtime_error {
 public:
  Error(int32_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int32_t code() const noexcept { return code_; }
  const char* code_name() const noexcept { return pteron_error_name(code_); }

 private:
  int32_t code_;
};

namespace detail {
// Converts a status into an exception (releasing it); no-op for success.
inline void check(pteron_status* s) {
  if (!s) return;
  int32_t code = pteron_status_code(s);
  std::string msg = pteron_status_message(s);
  pteron_status_release(s);
  throw Error(code, msg);
}
}  // namespace detail

// Description of an input or output (copied out of the C struct).
struct ValueInfo {
  int32_t tag = PTERON_VALUE_NONE;  // pteron_value_tag
  int32_t dtype = -1;               // pteron_dtype, tensors
  int32_t dynamism = PTERON_SHAPE_STATIC;
  std::vector<int64_t> sizes;  // current sizes
  std::vector<int64_t> bound;  // upper bound of each dim
  std::vector<uint8_t> dim_order;
  size_t nbytes = 0;  // bytes of the current sizes
  double scalar = 0;  // Int/Double/Bool values (an Int above 2^53 in magnitude rounded)

  bool is_tensor() const { return tag == PTERON_VALUE_TENSOR; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
};

inline ValueInfo to_value_info(const pteron_value_info& c) {
  ValueInfo v;
  v.tag = c.tag;
  v.dtype = c.dtype;
  v.dynamism = c.dynamism;
  v.sizes.assign(c.sizes, c.sizes + c.dim);
  v.bound.assign(c.bound, c.bound + c.dim);
  v.dim_order.assign(c.dim_order, c.dim_order + c.dim);
  v.nbytes = c.nbytes;
  v.scalar = c.scalar;
  return v;
}

class Method;

// A loaded program (.pte). Cheap to share: copies add a reference.
class Program {
 public:
  // Memory-maps and verifies the file at `utf8_path`.
  static Program load_file(const std::string& utf8_path) {
    pteron_program* p = nullptr;
    detail::check(pteron_program_load_file(utf8_path.c_str(), &p));
    return Program(p);
  }
  // Copies and verifies `size` bytes.
  static Program load_memory(const void* data, size_t size) {
    pteron_program* p = nullptr;
    detail::check(pteron_program_load_memory(data, size, &p));
    return Program(p);
  }
  // Memory-maps and verifies the program at `utf8_path` and its external
  // data file (.ptd) at `utf8_data_path`; tensors the program keeps outside
  // are found there by name at method load (pteron_program_load_file_with_data
  // says what is looked up and the errors).
  static Program load_file(const std::string& utf8_path, const std::string& utf8_data_path) {
    pteron_program* p = nullptr;
    detail::check(
        pteron_program_load_file_with_data(utf8_path.c_str(), utf8_data_path.c_str(), &p));
    return Program(p);
  }
  // Copies and verifies a program and its data file from memory.
  static Program load_memory(const void* data, size_t size, const void* data_file,
                             size_t data_size) {
    pteron_program* p = nullptr;
    detail::check(pteron_program_load_memory_with_data(data, size, data_file, data_size, &p));
    return Program(p);
  }

  // Whether the program was loaded with a data file.
  bool has_data_file() const { return pteron_program_has_data_file(p_.get()) != 0; }

  std::vector<std::string> method_names() const {
    std::vector<std::string> names;
    size_t n = pteron_program_method_count(p_.get());
    for (size_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      detail::check(pteron_program_method_name(p_.get(), i, &name));
      names.emplace_back(name);
    }
    return names;
  }

  // Byte sizes of method `name`'s planned buffers.
  std::vector<int64_t> planned_buffer_sizes(const std::string& name) const {
    size_t count = 0;
    detail::check(pteron_program_planned_buffer_sizes(p_.get(), name.c_str(), nullptr, 0, &count));
    std::vector<int64_t> sizes(count);
    detail::check(pteron_program_planned_buffer_sizes(p_.get(), name.c_str(), sizes.data(),
                                                      sizes.size(), &count));
    return sizes;
  }

  // Loads method `name` (see pteron_method_load for the errors).
  // `planned` [optional]: caller-owned planned buffers.
  inline Method load_method(const std::string& name,
                            const std::vector<pteron_buffer>& planned = {}) const;

  pteron_program* get() const { return p_.get(); }

 private:
  struct Release {
    void operator()(pteron_program* p) const { pteron_program_release(p); }
  };
  explicit Program(pteron_program* p) : p_(p, Release{}) {}
  std::shared_ptr<pteron_program> p_;
};

// One loaded method instance. Move-only.
class Method {
 public:
  Method(Method&& o) noexcept : m_(o.m_) { o.m_ = nullptr; }
  Method& operator=(Method&& o) noexcept {
    if (this != &o) {
      pteron_method_release(m_);
      m_ = o.m_;
      o.m_ = nullptr;
    }
    return *this;
  }
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;
  ~Method() { pteron_method_release(m_); }

  size_t input_count() const { return pteron_method_input_count(m_); }
  size_t output_count() const { return pteron_method_output_count(m_); }

  ValueInfo input_info(size_t i) const {
    pteron_value_info c;
    detail::check(pteron_method_input_info(m_, i, &c));
    return to_value_info(c);
  }
  ValueInfo output_info(size_t i) const {
    pteron_value_info c;
    detail::check(pteron_method_output_info(m_, i, &c));
    return to_value_info(c);
  }

  // Copies contiguous row-major `data` (nbytes) into tensor input i.
  void set_input(size_t i, int32_t dtype, const std::vector<int64_t>& sizes, const void* data,
                 size_t nbytes) {
    detail::check(pteron_method_set_input(m_, i, dtype, sizes.data(),
                                          static_cast<int32_t>(sizes.size()), data, nbytes));
  }
  // Typed convenience: float/int32/int64/uint8/bool vectors.
  template <typename T>
  void set_input(size_t i, const std::vector<int64_t>& sizes, const std::vector<T>& values) {
    static_assert(dtype_of<T>() >= 0, "set_input: no pteron dtype for this element type");
    set_input(i, dtype_of<T>(), sizes, values.data(), values.size() * sizeof(T));
  }
  // std::vector<bool> has no contiguous storage: copied to one byte per element.
  void set_input(size_t i, const std::vector<int64_t>& sizes, const std::vector<bool>& values) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    set_input(i, PTERON_DTYPE_BOOL, sizes, bytes.data(), bytes.size());
  }
  void set_input_scalar(size_t i, double v) {
    detail::check(pteron_method_set_input_scalar(m_, i, v));
  }
  void set_input_int(size_t i, int64_t v) { detail::check(pteron_method_set_input_int(m_, i, v)); }
  // Int or Bool output i, exactly.
  int64_t output_int(size_t i) const {
    int64_t v = 0;
    detail::check(pteron_method_output_int(m_, i, &v));
    return v;
  }

  void execute() { detail::check(pteron_method_execute(m_)); }

  // Profiling (pteron.h, "Profiling"): record the next executes' instruction and delegate
  // node timings, read them, and write them as an ETDump file upstream's Inspector reads.
  void set_profiling(bool on) { detail::check(pteron_method_set_profiling(m_, on ? 1 : 0)); }
  std::vector<pteron_profile_event> profile_events() const {
    std::vector<pteron_profile_event> out(pteron_method_profile_event_count(m_));
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].struct_size = sizeof(pteron_profile_event);
      detail::check(pteron_method_profile_event(m_, i, &out[i]));
    }
    return out;
  }
  void clear_profile() { pteron_method_profile_clear(m_); }
  void write_etdump(const std::string& path) const {
    detail::check(pteron_method_write_etdump(m_, path.c_str()));
  }

  // Output i as contiguous row-major bytes.
  std::vector<unsigned char> output_bytes(size_t i) const {
    ValueInfo info = output_info(i);
    std::vector<unsigned char> bytes(info.nbytes);
    detail::check(pteron_method_copy_output(m_, i, bytes.data(), bytes.size()));
    return bytes;
  }
  // Output i as a typed vector (T = float, double, int32_t, int64_t, uint8_t
  // or bool); throws Error(PTERON_ERROR_INVALID_ARGUMENT) naming both dtypes
  // if T does not match the output's dtype.
  template <typename T>
  std::vector<T> output(size_t i) const {
    static_assert(dtype_of<T>() >= 0, "output: no pteron dtype for this element type");
    ValueInfo info = output_info(i);
    check_output_dtype(i, info, dtype_of<T>());
    if constexpr (std::is_same<T, bool>::value) {
      std::vector<unsigned char> bytes = output_bytes(i);
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> v(info.nbytes / sizeof(T));
      detail::check(pteron_method_copy_output(m_, i, v.data(), v.size() * sizeof(T)));
      return v;
    }
  }

  pteron_method* get() const { return m_; }

  // The pteron_dtype of a C++ element type; -1 for types without one.
  // std::complex<float> / <double> are complex64 / complex128: the standard
  // lays them out as pteron does, real part then imaginary part.
  template <typename T>
  static constexpr int32_t dtype_of() {
    return std::is_same<T, float>::value                  ? PTERON_DTYPE_FLOAT32
           : std::is_same<T, double>::value               ? PTERON_DTYPE_FLOAT64
           : std::is_same<T, std::complex<float>>::value  ? PTERON_DTYPE_COMPLEX64
           : std::is_same<T, std::complex<double>>::value ? PTERON_DTYPE_COMPLEX128
           : std::is_same<T, int32_t>::value              ? PTERON_DTYPE_INT32
           : std::is_same<T, int64_t>::value              ? PTERON_DTYPE_INT64
           : std::is_same<T, uint8_t>::value              ? PTERON_DTYPE_UINT8
           : std::is_same<T, bool>::value                 ? PTERON_DTYPE_BOOL
                                                          : -1;
  }

 private:
  static void check_output_dtype(size_t i, const ValueInfo& info, int32_t want) {
    if (info.dtype != want)
      throw Error(PTERON_ERROR_INVALID_ARGUMENT, "output " + std::to_string(i) + " has dtype " +
                                                     pteron_dtype_name(info.dtype) + ", not " +
                                                     pteron_dtype_name(want));
  }
  friend class Program;
  explicit Method(pteron_method* m) : m_(m) {}
  pteron_method* m_;
};

inline Method Program::load_method(const std::string& name,
                                   const std::vector<pteron_buffer>& planned) const {
  pteron_method_options opts;
  std::memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.planned_buffers = planned.empty() ? nullptr : planned.data();
  opts.num_planned_buffers = planned.size();
  pteron_method* m = nullptr;
  detail::check(pteron_method_load(p_.get(), name.c_str(), &opts, &m));
  return Method(m);
}

// One entry of the kernel registry.
struct KernelInfo {
  std::string name, overload, key, library;
  int32_t priority = 0;
  bool selected = false;
  std::string qualified() const { return overload.empty() ? name : name + "." + overload; }
};

inline std::vector<KernelInfo> registered_kernels() {
  std::vector<KernelInfo> out;
  size_t n = pteron_kernel_count();
  for (size_t i = 0; i < n; ++i) {
    pteron_kernel_info c;
    detail::check(pteron_kernel_get(i, &c));
    out.push_back(KernelInfo{c.name, c.overload, c.key, c.library, c.priority, c.selected != 0});
  }
  return out;
}

struct BackendInfo {
  std::string id, library;
  bool available = false;
};

inline std::vector<BackendInfo> registered_backends() {
  std::vector<BackendInfo> out;
  size_t n = pteron_backend_count();
  for (size_t i = 0; i < n; ++i) {
    pteron_backend_info c;
    detail::check(pteron_backend_get(i, &c));
    out.push_back(BackendInfo{c.id, c.library, c.available != 0});
  }
  return out;
}

// "float32", "int64", ...; "unknown" outside pteron_dtype (pteron_dtype_name).
inline const char* dtype_name(int32_t d) { return pteron_dtype_name(d); }

}  // namespace pteron
