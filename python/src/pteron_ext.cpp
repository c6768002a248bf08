// SPDX-License-Identifier: BSD-3-Clause
// pteron_ext.cpp - pteron._pteron, the nanobind extension of the Python module: a thin layer
// over the runtime's C API (include/pteron/pteron.h), linked against the runtime shared library
// (libpteron.so / pteron.dll) and never a copy of it. The pythonic API (pteron.Program,
// pteron.Method, the error classes, the input checks) is python/pteron/_runtime.py; this file
// only moves handles, arrays and errors across.
//
// Errors: a failed pteron_status becomes the exception that the Python layer's factory
// (set_error_factory, called once at import) makes from (code, message), so every error is a
// pteron.Error subclass carrying the runtime's message.
// Threads: program load, method load and execute release the GIL (files are read by the
// Python layer, which hands the bytes over). Calls on one Method are serialised here (Method::mu);
// the runtime allows different methods on different threads.
// At interpreter exit, a daemon thread still inside one of those calls stays there instead of
// taking the GIL back (see Unlocked).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>  // also vector<vector<int64_t>>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#endif

#include "pteron/kernel.h"  // pteron_parallel_for: a serial method runs inside one chunk
#include "pteron/pteron.h"

// numpy's C API, for the per-call path only (arrays in and out without a DLPack or buffer
// round trip); import_array at module load. Built against numpy 2.x headers, which serve
// numpy 1.x and 2.x at run time.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pteron_ext_ARRAY_API
#include <numpy/arrayobject.h>

namespace nb = nanobind;

namespace {

// The Python layer's factory: (code, message) -> exception instance. Kept for the process's
// lifetime (never released: the interpreter may be finalising when the module goes).
nb::object* g_error_factory = nullptr;

// The message may quote a program's own bytes (an operator or method name), which need not be
// UTF-8: they are decoded with backslash escapes, as Program.method_names does.
[[noreturn]] void raise(int32_t code, const std::string& message) {
  if (g_error_factory) {
    PyObject* text = PyUnicode_DecodeUTF8(message.data(), Py_ssize_t(message.size()),
                                          "backslashreplace");
    if (!text) throw nb::python_error();
    nb::object exc = (*g_error_factory)(code, nb::steal<nb::str>(text));
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    throw nb::python_error();
  }
  throw std::runtime_error(std::string(pteron_error_name(code)) + ": " + message);
}

// Raises the status's error (and releases it); returns if s is NULL (success).
void check(pteron_status* s) {
  if (!s) return;
  const int32_t code = pteron_status_code(s);
  const char* m = pteron_status_message(s);
  std::string message = m ? m : "";
  pteron_status_release(s);
  if (code == PTERON_OK) return;
  raise(code, message);
}

struct Program {
  pteron_program* p = nullptr;
  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() { pteron_program_release(p); }
};

struct Method {
  pteron_method* m = nullptr;
  // Per input, set once by the Python layer (set_call_info): the dtype code (-1: a number) and
  // the static shape a matching array is passed with unchecked (empty: always prepared).
  std::vector<int32_t> codes;
  std::vector<std::vector<int64_t>> static_shapes;
  // Runs serially on the calling thread (Program.load_method(num_threads=1)): execute runs as
  // the one chunk of a pteron_parallel_for over a range of one element. pteron/threadpool.h:
  // a range not longer than its grain is one chunk on the calling thread, and a parallel_for
  // called from inside a chunk runs serially on the thread that called it. So every parallel
  // operator and delegate node of this method stays on this thread, and the pool stays free
  // for other methods.
  bool serial = false;
  // A thread cap for its calls (Program.load_method(num_threads=N), N > 1; 0: none): the
  // executing thread's pteron_threadpool_set_thread_cap for the duration of execute.
  size_t thread_cap = 0;
  // Serialises calls (call()): taken without the GIL (its holder may be waiting for the GIL),
  // and let go by a daemon thread that Unlocked holds at exit, so that a later call from the
  // main thread (an atexit handler) still gets it.
  std::mutex mu;
  Method() = default;
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;
  ~Method() { pteron_method_release(m); }
};

// The GIL released around a native call, as nb::gil_scoped_release does, but safe at interpreter
// exit. Before 3.14, CPython ends a thread that asks for the GIL once finalisation has begun
// (pthread_exit: a forced unwind), and an unwind through a destructor, or through nanobind's
// catch (...), is std::terminate ("terminate called without an active exception", exit status
// 134). Only daemon threads (threading's view: also threads threading did not start) can still
// be running then: the non-daemon ones were joined, and the main thread finalises. So:
//  - the module's atexit function (at_exit; atexit runs before finalisation) raises
//    g_exit->exiting, then waits, without the GIL, for the threads already taking the GIL back;
//  - from then on a daemon thread whose call ends never takes the GIL back: it sleeps until
//    the process ends, as CPython 3.14 does with such threads itself.
// The main thread and non-daemon threads are never held: a call made by an atexit handler, a
// __del__ at finalisation or a thread an atexit handler joins runs and returns as usual.
struct ExitState {
  std::mutex mu;
  std::condition_variable cv;
  bool exiting = false;  // guarded by mu
  int returning = 0;     // threads taking the GIL back (guarded by mu)
};
// Never freed. A forked child starts from a fresh one (the parent's may be locked by a thread
// the child has not got, and count threads it has not got).
ExitState* g_exit = new ExitState;
nb::object* g_threads_active = nullptr;  // threading._active (ident -> Thread), kept for good
#if !defined(_WIN32)
void exit_state_after_fork() { g_exit = new ExitState; }
#endif

#if defined(Py_LIMITED_API) && Py_LIMITED_API < 0x030D0000
// The stable ABI of 3.12 (PTERON_PYTHON_STABLE_ABI) has no finalization query: Py_IsFinalizing
// joined it in 3.13, and 3.12 exports _Py_IsFinalizing outside it. Either is looked up once in
// the library that holds the running interpreter's own functions; neither found reads as "not
// finalizing" (the state before this check existed).
int (*finalizing_fn())() {
  static int (*const fn)() = [] {
    const char* names[] = {"Py_IsFinalizing", "_Py_IsFinalizing"};
    void* f = nullptr;
#if defined(_WIN32)
    HMODULE h = nullptr;  // python3XY.dll: the one whose PyLong_FromLong this module imports
    if (GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                               GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           reinterpret_cast<LPCWSTR>(&PyLong_FromLong), &h))
      for (const char* n : names)
        if (!f) f = reinterpret_cast<void*>(GetProcAddress(h, n));
#else
    for (const char* n : names)
      if (!f) f = dlsym(RTLD_DEFAULT, n);
#endif
    return reinterpret_cast<int (*)()>(f);
  }();
  return fn;
}
#endif

bool interpreter_finalizing() {
#if defined(Py_LIMITED_API) && Py_LIMITED_API < 0x030D0000
  int (*fn)() = finalizing_fn();
  return fn && fn() != 0;
#elif PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Whether the calling thread is a daemon thread, asked once per thread (the GIL held), without
// running Python code (a daemon thread may be ended inside it at exit): its threading.Thread in
// threading._active, attribute _daemonic (an instance attribute: no code runs). A thread that
// threading does not know (started by _thread or by C) counts as one, as threading's dummy
// threads do.
bool is_daemon_thread() {
  thread_local int daemon = -1;
  if (daemon < 0) {
    daemon = 1;
    if (g_threads_active) {
      PyObject* ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
      PyObject* t = ident ? PyDict_GetItemWithError(g_threads_active->ptr(), ident) : nullptr;
      Py_XDECREF(ident);
      PyObject* d = t ? PyObject_GetAttrString(t, "_daemonic") : nullptr;
      const int truth = d ? PyObject_IsTrue(d) : -1;
      Py_XDECREF(d);
      if (PyErr_Occurred()) PyErr_Clear();
      if (t && truth == 0) daemon = 0;
    }
  }
  return daemon == 1;
}

class Unlocked {
 public:
  // held: a mutex the thread holds (or takes inside the region), let go if the thread is held.
  explicit Unlocked(std::mutex* held = nullptr)
      : daemon_(is_daemon_thread()), held_(held), state_(PyEval_SaveThread()) {}
  ~Unlocked() {
    bool hold;
    ExitState* e = g_exit;
    {
      std::lock_guard<std::mutex> g(e->mu);
      hold = daemon_ && (e->exiting || interpreter_finalizing());
      if (!hold) ++e->returning;
    }
    if (hold) {
      if (held_) held_->unlock();
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    PyEval_RestoreThread(state_);
    {
      std::lock_guard<std::mutex> g(e->mu);
      --e->returning;
    }
    e->cv.notify_all();
  }
  Unlocked(const Unlocked&) = delete;
  Unlocked& operator=(const Unlocked&) = delete;

 private:
  bool daemon_;
  std::mutex* held_;
  PyThreadState* state_;
};

// Registered with atexit at the extension's import. Waits at most 10 s: a thread taking the GIL
// back has it as soon as this one lets go of it.
void at_exit() {
  // Declared first, so the GIL is taken back after lk is released: a thread that holds the
  // GIL and waits for g_exit->mu cannot deadlock with this one.
  nb::gil_scoped_release unlocked;
  ExitState* e = g_exit;
  std::unique_lock<std::mutex> lk(e->mu);
  e->exiting = true;
  e->cv.wait_for(lk, std::chrono::seconds(10), [e] { return e->returning == 0; });
}

using Bytes = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// (tag, dtype, dynamism, sizes, bounds, dim_order, nbytes, scalar) of one value.
using Info = std::tuple<int32_t, int32_t, int32_t, std::vector<int64_t>, std::vector<int64_t>,
                        std::vector<int64_t>, size_t, double>;

Info to_tuple(const pteron_value_info& v) {
  const int32_t dim = v.tag == PTERON_VALUE_TENSOR ? v.dim : 0;
  std::vector<int64_t> sizes(v.sizes, v.sizes + dim), bound(v.bound, v.bound + dim);
  std::vector<int64_t> order(v.dim_order, v.dim_order + dim);
  return Info(v.tag, v.dtype, v.dynamism, sizes, bound, order, v.nbytes, v.scalar);
}

std::unique_ptr<Program> load_bytes(Bytes data, std::optional<Bytes> data_file) {
  std::unique_ptr<Program> prog(new Program);
  pteron_status* s;
  {
    Unlocked unlocked;
    s = pteron_program_load_memory_with_data(data.data(), data.size(),
                                             data_file ? data_file->data() : nullptr,
                                             data_file ? data_file->size() : 0, &prog->p);
  }
  check(s);
  return prog;
}

std::vector<nb::bytes> method_names(const Program& prog) {
  std::vector<nb::bytes> names;
  const size_t n = pteron_program_method_count(prog.p);
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    check(pteron_program_method_name(prog.p, i, &name));
    names.emplace_back(name ? name : "");  // bytes: the Python layer decodes them
  }
  return names;
}

// max_allocated_bytes: pteron_method_options.max_allocated_bytes (0: no budget).
std::unique_ptr<Method> load_method(Program& prog, nb::bytes name, uint64_t max_allocated_bytes) {
  std::unique_ptr<Method> m(new Method);
  const std::string n(name.c_str(), name.size());
  pteron_method_options opts;
  std::memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.max_allocated_bytes = max_allocated_bytes;
  pteron_status* s;
  {
    Unlocked unlocked;
    s = pteron_method_load(prog.p, n.c_str(), &opts, &m->m);
  }
  check(s);
  return m;
}

Info input_info(const Method& m, size_t i) {
  pteron_value_info v;
  std::memset(&v, 0, sizeof v);
  check(pteron_method_input_info(m.m, i, &v));
  return to_tuple(v);
}

Info output_info(const Method& m, size_t i) {
  pteron_value_info v;
  std::memset(&v, 0, sizeof v);
  check(pteron_method_output_info(m.m, i, &v));
  return to_tuple(v);
}

void set_input_scalar(Method& m, size_t i, double value) {
  check(pteron_method_set_input_scalar(m.m, i, value));
}

// The threadpool component's pteron_threadpool_set_thread_cap (pteron/threadpool.h), which the
// Python layer hands over from the library it loaded (the extension links the runtime only).
size_t (*g_set_thread_cap)(size_t) = nullptr;

struct SerialExecute {
  pteron_method* m;
  pteron_status* s;
};

void execute_chunk(void* user, int64_t, int64_t) {
  SerialExecute* job = static_cast<SerialExecute*>(user);
  job->s = pteron_method_execute(job->m);
}

void execute(Method& m) {
  pteron_status* s;
  {
    Unlocked unlocked(&m.mu);  // called with m.mu held (call())
    if (m.serial) {
      SerialExecute job{m.m, nullptr};
      pteron_parallel_for(0, 1, 1, &execute_chunk, &job);
      s = job.s;
    } else if (m.thread_cap > 0 && g_set_thread_cap) {
      const size_t previous = g_set_thread_cap(m.thread_cap);
      s = pteron_method_execute(m.m);
      g_set_thread_cap(previous);
    } else {
      s = pteron_method_execute(m.m);
    }
  }
  check(s);
}

// numpy's type number of ml_dtypes.bfloat16, registered by the Python layer when ml_dtypes
// is installed (set_bfloat16_type); -1 without it.
int g_bf16_type = -1;

// numpy's type number of a pteron_dtype, or -1 (bfloat16 without ml_dtypes, quantized).
int npy_type(int32_t code) {
  switch (code) {
    case 15: return g_bf16_type;
    case 0: return NPY_UINT8;
    case 1: return NPY_INT8;
    case 2: return NPY_INT16;
    case 3: return NPY_INT32;
    case 4: return NPY_INT64;
    case 5: return NPY_FLOAT16;
    case 6: return NPY_FLOAT32;
    case 7: return NPY_FLOAT64;
    case 9: return NPY_COMPLEX64;
    case 10: return NPY_COMPLEX128;
    case 11: return NPY_BOOL;
    case 27: return NPY_UINT16;
    case 28: return NPY_UINT32;
    case 29: return NPY_UINT64;
    default: return -1;
  }
}

// x is a C-contiguous, native-order numpy array of pteron dtype `code` and at most
// PTERON_MAX_DIM dims, of exactly `shape` when that is given.
// A bfloat16 input prepared by the Python layer may also come as its bits, a uint16 array
// (bits_ok: a DLPack bfloat16 tensor without ml_dtypes).
bool ready(PyObject* x, int32_t code, const std::vector<int64_t>* shape, bool bits_ok = false) {
  if (!PyArray_Check(x)) return false;
  PyArrayObject* a = reinterpret_cast<PyArrayObject*>(x);
  const int t = PyArray_TYPE(a);
  const bool type_ok = (t == npy_type(code) && t >= 0) ||
                       (bits_ok && code == PTERON_DTYPE_BFLOAT16 && t == NPY_UINT16);
  if (!type_ok || !PyArray_IS_C_CONTIGUOUS(a) ||
      !PyArray_ISNOTSWAPPED(a) || PyArray_NDIM(a) > PTERON_MAX_DIM)
    return false;
  if (!shape) return true;
  if (size_t(PyArray_NDIM(a)) != shape->size()) return false;
  for (int d = 0; d < PyArray_NDIM(a); ++d)
    if (PyArray_DIM(a, d) != (*shape)[size_t(d)]) return false;
  return true;
}

// DLPack's dtype of a pteron_dtype (the quantized codes and complex32 have none).
nb::dlpack::dtype dlpack_dtype(int32_t code) {
  using C = nb::dlpack::dtype_code;
  auto dt = [](C c, int bits) { return nb::dlpack::dtype{uint8_t(c), uint8_t(bits), 1}; };
  switch (code) {
    case 0: return dt(C::UInt, 8);
    case 1: return dt(C::Int, 8);
    case 2: return dt(C::Int, 16);
    case 3: return dt(C::Int, 32);
    case 4: return dt(C::Int, 64);
    case 5: return dt(C::Float, 16);
    case 6: return dt(C::Float, 32);
    case 7: return dt(C::Float, 64);
    case 9: return dt(C::Complex, 64);
    case 10: return dt(C::Complex, 128);
    case 11: return dt(C::Bool, 8);
    case 15: return dt(C::Bfloat, 16);
    case 27: return dt(C::UInt, 16);
    case 28: return dt(C::UInt, 32);
    case 29: return dt(C::UInt, 64);
    default:
      raise(PTERON_ERROR_NOT_SUPPORTED,
            "dtype " + std::to_string(code) + " has no DLPack equivalent");
  }
}

// A DLPack tensor (nanobind's array-API object: __dlpack__, __dlpack_device__) of dtype v.dtype and sizes v.sizes over the C-contiguous numpy array `arr`
// (kept alive as its owner).
nb::object to_dlpack(nb::object arr, const pteron_value_info& v) {
  size_t shape[PTERON_MAX_DIM];
  for (int32_t d = 0; d < v.dim; ++d) shape[d] = size_t(v.sizes[d]);
  nb::ndarray<nb::array_api> nd(PyArray_DATA(reinterpret_cast<PyArrayObject*>(arr.ptr())),
                                size_t(v.dim), shape, arr, nullptr, dlpack_dtype(v.dtype),
                                nb::device::cpu::value);
  return nd.cast();
}

// A CPU DLPack tensor (a torch tensor) as a read-only numpy array over the same memory, which
// keeps `keep` (the tensor) alive: (array, is_bfloat16). A bfloat16 tensor comes as its bits
// (uint16), which numpy can hold; the Python layer relabels them.
nb::tuple dlpack_view(nb::ndarray<nb::ro, nb::device::cpu> a, nb::object keep) {
  nb::dlpack::dtype dt = a.dtype();
  const bool bf16 = dt.code == uint8_t(nb::dlpack::dtype_code::Bfloat) && dt.bits == 16;
  if (bf16) dt = nb::dtype<uint16_t>();
  std::vector<size_t> shape(a.ndim());
  std::vector<int64_t> strides(a.ndim());
  for (size_t d = 0; d < a.ndim(); ++d) {
    shape[d] = a.shape(d);
    strides[d] = a.stride(d);
  }
  nb::ndarray<nb::numpy, nb::ro> view(a.data(), a.ndim(), shape.data(), keep, strides.data(), dt,
                                      nb::device::cpu::value);
  return nb::make_tuple(view.cast(), bf16);
}

// One call: every input set, the method executed with the GIL released, every output copied
// into a new C-contiguous numpy array (a Python number for a scalar output) that owns its
// memory; None, with nothing set, when an input is not ready as it is (prepared false). Input i
// is ready when m.codes[i] >= 0 and it is a C-contiguous CPU array of that dtype whose shape is
// m.static_shapes[i] (when that is not empty). With prepared true, every input comes from the
// Python layer's checks and conversion (Method._prepare): an array of dtype codes[i], or a
// number for an int, bool or double input (codes[i] < 0).
// With as_dlpack, each tensor output is instead a DLPack tensor (nanobind's ndarray: __dlpack__,
// __dlpack_device__) over that same new array, which it keeps alive: torch.from_dlpack shares
// its memory, and a bfloat16 output stays bfloat16 with or without ml_dtypes.
nb::object call(Method& m, nb::tuple inputs, bool prepared, bool as_dlpack) {
  const size_t n = inputs.size();
  const std::vector<int32_t>& codes = m.codes;
  const std::vector<std::vector<int64_t>>& static_shapes = m.static_shapes;
  if (codes.size() != n || static_shapes.size() != n)
    raise(PTERON_ERROR_INVALID_ARGUMENT, "call: one dtype code and shape per input");
  // Python code never runs from here on: a daemon thread ended inside it at interpreter exit
  // would unwind through these frames. So an input that is not ready as it is sends the whole
  // call back to the Python layer, which prepares every input and calls again.
  if (!prepared)
    for (size_t i = 0; i < n; ++i)
      if (codes[i] < 0 || static_shapes[i].empty() ||
          !ready(inputs[i].ptr(), codes[i], &static_shapes[i]))
        return nb::none();
  std::unique_lock<std::mutex> serial(m.mu, std::try_to_lock);
  if (!serial.owns_lock()) {
    Unlocked waiting(&m.mu);  // m.mu is taken inside: let go if this thread is held
    serial.lock();
  }
  for (size_t i = 0; i < n; ++i) {
    PyObject* x = inputs[i].ptr();
    if (codes[i] < 0) {
      // A prepared number: a Python int for an int input (checked to fit int64: set exactly),
      // a float otherwise.
      if (PyLong_CheckExact(x))
        check(pteron_method_set_input_int(m.m, i, nb::cast<int64_t>(nb::handle(x))));
      else
        set_input_scalar(m, i, nb::cast<double>(nb::handle(x)));
      continue;
    }
    if (prepared && !ready(x, codes[i], nullptr, true))  // unprepared ones were checked above
      raise(PTERON_ERROR_INTERNAL, "input " + std::to_string(i) + ": not prepared");
    PyArrayObject* a = reinterpret_cast<PyArrayObject*>(x);
    int64_t sizes[PTERON_MAX_DIM];
    for (int d = 0; d < PyArray_NDIM(a); ++d) sizes[d] = int64_t(PyArray_DIM(a, d));
    check(pteron_method_set_input(m.m, i, codes[i], sizes, PyArray_NDIM(a), PyArray_DATA(a),
                                  size_t(PyArray_NBYTES(a))));
  }
  execute(m);
  nb::list out;
  const size_t outs = pteron_method_output_count(m.m);
  for (size_t i = 0; i < outs; ++i) {
    pteron_value_info v;
    std::memset(&v, 0, sizeof v);
    check(pteron_method_output_info(m.m, i, &v));
    if (v.tag != PTERON_VALUE_TENSOR) {
      switch (v.tag) {
        case PTERON_VALUE_INT:
        case PTERON_VALUE_BOOL: {
          int64_t iv = 0;
          check(pteron_method_output_int(m.m, i, &iv));
          if (v.tag == PTERON_VALUE_INT) out.append(nb::int_(iv));
          else out.append(nb::bool_(iv != 0));
          break;
        }
        case PTERON_VALUE_DOUBLE: out.append(nb::float_(v.scalar)); break;
        case PTERON_VALUE_NONE: out.append(nb::none()); break;
        default:  // the C API reads out tensors and numbers only
          raise(PTERON_ERROR_NOT_SUPPORTED,
                "output " + std::to_string(i) + " is a " + pteron_value_tag_name(v.tag) +
                    " value, which pteron cannot return (only tensors, int, bool, double and "
                    "None outputs)");
      }
      continue;
    }
    const bool bf16 = v.dtype == PTERON_DTYPE_BFLOAT16;
    npy_intp dims[PTERON_MAX_DIM];
    for (int32_t d = 0; d < v.dim; ++d) dims[d] = npy_intp(v.sizes[d]);
    if (bf16 && !as_dlpack && g_bf16_type < 0) {
      // numpy has no bfloat16 and ml_dtypes is not installed: the output widened to float32
      // (exact), as pteron-run writes it
      PyObject* arr = PyArray_SimpleNew(v.dim, dims, NPY_FLOAT32);
      if (!arr) throw nb::python_error();
      nb::object owned = nb::steal(arr);
      PyArrayObject* o = reinterpret_cast<PyArrayObject*>(arr);
      const size_t count = size_t(PyArray_SIZE(o));
      std::vector<uint16_t> bits(count);
      check(pteron_method_copy_output(m.m, i, bits.data(), count * 2));
      float* dst = static_cast<float*>(PyArray_DATA(o));
      for (size_t e = 0; e < count; ++e) {
        const uint32_t u = uint32_t(bits[e]) << 16;
        std::memcpy(dst + e, &u, 4);
      }
      out.append(owned);
      continue;
    }
    // A DLPack bfloat16 output is held by a uint16 array (its bits) and labelled bfloat16.
    const int t = bf16 && as_dlpack ? int(NPY_UINT16) : npy_type(v.dtype);
    if (t < 0)
      raise(PTERON_ERROR_NOT_SUPPORTED, "output " + std::to_string(i) + ": dtype " +
                                            std::to_string(v.dtype) + " has no numpy equivalent");
    PyObject* arr = PyArray_SimpleNew(v.dim, dims, t);
    if (!arr) throw nb::python_error();
    nb::object owned = nb::steal(arr);
    PyArrayObject* o = reinterpret_cast<PyArrayObject*>(arr);
    check(pteron_method_copy_output(m.m, i, PyArray_DATA(o), size_t(PyArray_NBYTES(o))));
    out.append(as_dlpack ? to_dlpack(owned, v) : owned);
  }
  return out;
}

// Registered kernels: (name, overload, key, library, priority, selected).
std::vector<std::tuple<std::string, std::string, std::string, std::string, int32_t, bool>>
kernels() {
  std::vector<std::tuple<std::string, std::string, std::string, std::string, int32_t, bool>> out;
  const size_t n = pteron_kernel_count();
  for (size_t i = 0; i < n; ++i) {
    pteron_kernel_info k;
    std::memset(&k, 0, sizeof k);
    check(pteron_kernel_get(i, &k));
    out.emplace_back(k.name ? k.name : "", k.overload ? k.overload : "", k.key ? k.key : "",
                     k.library ? k.library : "", k.priority, k.selected != 0);
  }
  return out;
}

// Registered backends: (id, library, available).
std::vector<std::tuple<std::string, std::string, bool>> backends() {
  std::vector<std::tuple<std::string, std::string, bool>> out;
  const size_t n = pteron_backend_count();
  for (size_t i = 0; i < n; ++i) {
    pteron_backend_info b;
    std::memset(&b, 0, sizeof b);
    check(pteron_backend_get(i, &b));
    out.emplace_back(b.id ? b.id : "", b.library ? b.library : "", b.available != 0);
  }
  return out;
}

std::vector<std::string> registration_errors() {
  std::vector<std::string> out;
  const size_t n = pteron_registration_error_count();
  for (size_t i = 0; i < n; ++i) {
    const char* e = pteron_registration_error(i);
    out.emplace_back(e ? e : "");
  }
  return out;
}

// The file of the runtime library this extension is linked against (UTF-8): the folder the
// Python layer loads the components from.
std::string runtime_library_path() {
#if defined(_WIN32)
  HMODULE h = nullptr;
  if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                              GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          reinterpret_cast<LPCWSTR>(&pteron_version), &h))
    return std::string();
  std::wstring w(32768, L'\0');
  const DWORD n = GetModuleFileNameW(h, &w[0], DWORD(w.size()));
  if (n == 0) return std::string();
  const int len = WideCharToMultiByte(CP_UTF8, 0, w.data(), int(n), nullptr, 0, nullptr, nullptr);
  std::string out(size_t(len), '\0');
  WideCharToMultiByte(CP_UTF8, 0, w.data(), int(n), &out[0], len, nullptr, nullptr);
  return out;
#else
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&pteron_version), &info) == 0 || !info.dli_fname)
    return std::string();
  return info.dli_fname;
#endif
}

}  // namespace

// The method's recorded events as tuples (run, name, chain_index, instruction_id,
// delegate_debug_id, delegate_debug_name, start_ns, end_ns); None for a missing name.
nb::list profile_events(Method& x) {
  nb::list out;
  const size_t n = pteron_method_profile_event_count(x.m);
  for (size_t i = 0; i < n; ++i) {
    pteron_profile_event e{};
    e.struct_size = sizeof e;
    check(pteron_method_profile_event(x.m, i, &e));
    nb::object name = e.name ? nb::object(nb::str(e.name)) : nb::none();
    nb::object dname =
        e.delegate_debug_name ? nb::object(nb::str(e.delegate_debug_name)) : nb::none();
    out.append(nb::make_tuple(e.run, name, e.chain_index, e.instruction_id, e.delegate_debug_id,
                              dname, e.start_ns, e.end_ns));
  }
  return out;
}

NB_MODULE(_pteron, m) {
  if (_import_array() < 0) throw nb::python_error();
  if (!g_threads_active) {
    g_threads_active = new nb::object(nb::module_::import_("threading").attr("_active"));
#if !defined(_WIN32)
    pthread_atfork(nullptr, nullptr, &exit_state_after_fork);
#endif
  }
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&at_exit));
  // Objects that daemon threads still hold at exit (see Unlocked) are not leaks to report.
  nb::set_leak_warnings(false);
  m.doc() =
      "pteron's native layer (the runtime's C API). Use the pteron package's API "
      "(pteron.Program, pteron.Method), not this module.";
  m.def("set_error_factory", [](nb::object f) {
    if (!g_error_factory) g_error_factory = new nb::object();
    *g_error_factory = std::move(f);
  });
  m.def("version", [] { return std::string(pteron_version()); });
  m.def("abi_version", [] { return pteron_abi_version(); });
  m.def("error_name", [](int32_t code) { return std::string(pteron_error_name(code)); });
  m.def("runtime_library_path", &runtime_library_path);
  m.def("parallel_threads", [] { return pteron_parallel_threads(); });
  m.def("kernels", &kernels);
  m.def("set_bfloat16_type", [](int t) { g_bf16_type = t; }, nb::arg("type_num"),
        "Registers numpy's type number of ml_dtypes.bfloat16 (-1: none).");
  m.def("dlpack_view", &dlpack_view, nb::arg("tensor"), nb::arg("keep"));
  m.def(
      "set_thread_cap_function",
      [](uintptr_t address) {
        g_set_thread_cap = reinterpret_cast<size_t (*)(size_t)>(address);
      },
      nb::arg("address"),
      "Registers the address of the threadpool library's pteron_threadpool_set_thread_cap.");
  m.def("backends", &backends);
  m.def("registration_errors", &registration_errors);

  nb::class_<Program>(m, "ProgramHandle")
      .def_static("load_bytes", &load_bytes, nb::arg("data"), nb::arg("data_file").none())
      .def("method_names", &method_names)
      .def("has_data_file", [](const Program& p) { return pteron_program_has_data_file(p.p) != 0; })
      .def("load_method", &load_method, nb::arg("name"), nb::arg("max_allocated_bytes") = 0);

  nb::class_<Method>(m, "MethodHandle")
      .def("input_count", [](const Method& x) { return pteron_method_input_count(x.m); })
      .def("output_count", [](const Method& x) { return pteron_method_output_count(x.m); })
      .def("input_info", &input_info)
      .def("output_info", &output_info)
      .def("set_call_info",
           [](Method& x, std::vector<int32_t> codes, std::vector<std::vector<int64_t>> shapes) {
             x.codes = std::move(codes);
             x.static_shapes = std::move(shapes);
           })
      .def("set_serial", [](Method& x, bool serial) { x.serial = serial; }, nb::arg("serial"))
      .def("set_thread_cap", [](Method& x, size_t n) { x.thread_cap = n; }, nb::arg("n"))
      .def("call", &call, nb::arg("inputs"), nb::arg("prepared"), nb::arg("as_dlpack") = false)
      // Profiling (pteron.h, "Profiling"). Not under Method::mu, which a caller takes without
      // the GIL: the runtime serialises these calls on the method itself.
      .def("set_profiling",
           [](Method& x, bool on) {
             check(pteron_method_set_profiling(x.m, on ? 1 : 0));
           },
           nb::arg("on"))
      .def("profile_events", &profile_events)
      .def("clear_profile",
           [](Method& x) {
             pteron_method_profile_clear(x.m);
           })
      .def("write_etdump",
           [](Method& x, const std::string& path) {
             check(pteron_method_write_etdump(x.m, path.c_str()));
           },
           nb::arg("path"));
}
