// SPDX-License-Identifier: BSD-3-Clause
// pteron-run: load a .pte program, run one method on .npy inputs, write the
// outputs as .npy files and report the median time per execution.
//
// Usage: pteron-run MODEL.pte [--data FILE.ptd] [--method NAME] [--input FILE.npy]...
//                   [--output-dir DIR] [--iterations N] [--list-operators]
// --data loads the program's external data file (.ptd) with it. The method's
// state (mutable buffers) persists across the N executions of --iterations;
// the outputs reported are those of the last one.
// --list-operators prints the registered kernels and backends and exits 0;
// with MODEL.pte and no --input it also loads the method (every operator and
// delegate resolved, else exit 1 naming them) and runs nothing.
// Paths are UTF-8 throughout; on Windows the arguments are read as UTF-16
// (GetCommandLineW) and converted, so no path passes through the ANSI code page.
// Exit status: 0 on success, 1 on any error (one message on stderr), 2 on a
// usage error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <string>
#include <vector>

#include "npy.h"
#include "pteron/pteron.hpp"

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <shellapi.h>  // CommandLineToArgvW (shell32, linked by default by MinGW and MSVC)
#endif

// Calls the anchor of every registration-only component the build has, so the
// linker keeps each library (ELF --as-needed and PE both drop a library nothing
// references). Generated from cmake/components.json (pteron_keep_components).
extern "C" int pteron_keep_components(void);

namespace {

const char kUsage[] =
    "usage: pteron-run MODEL.pte [--data FILE.ptd] [--method NAME] [--input FILE.npy]...\n"
    "                  [--output-dir DIR] [--iterations N] [--list-operators]\n"
    "       (after \"--\", an argument is MODEL.pte even if it starts with '-')\n"
    "bfloat16: an input takes a float32 .npy (rounded to nearest even) or ml_dtypes'\n"
    "bfloat16 .npy ('<V2'); an output is written as float32 (exact).\n";

int fail(const std::string& msg) {
  std::fprintf(stderr, "pteron-run: error: %s\n", msg.c_str());
  return 1;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

template <typename T>
void summarize(const unsigned char* p, size_t n, double* mn, double* mx, double* mean) {
  const T* v = reinterpret_cast<const T*>(p);
  double s = 0;
  *mn = n ? double(v[0]) : 0;
  *mx = *mn;
  for (size_t i = 0; i < n; ++i) {
    double x = double(v[i]);
    *mn = std::min(*mn, x);
    *mx = std::max(*mx, x);
    s += x;
  }
  *mean = n ? s / double(n) : 0;
}

// The program's arguments as UTF-8. On Windows `argv` is in the ANSI code
// page, which cannot hold most file names (a CJK or emoji folder becomes '?'):
// the arguments are taken from the UTF-16 command line instead.
std::vector<std::string> utf8_arguments(int argc, char** argv) {
  std::vector<std::string> args;
#if defined(_WIN32)
  int wargc = 0;
  wchar_t** wargv = CommandLineToArgvW(GetCommandLineW(), &wargc);
  if (wargv) {
    for (int i = 0; i < wargc; ++i) {
      const int n = WideCharToMultiByte(CP_UTF8, 0, wargv[i], -1, nullptr, 0, nullptr, nullptr);
      std::string a(n > 0 ? static_cast<size_t>(n) : 1u, '\0');
      if (n > 0) WideCharToMultiByte(CP_UTF8, 0, wargv[i], -1, &a[0], n, nullptr, nullptr);
      a.resize(a.size() - 1);  // the terminating NUL
      args.push_back(std::move(a));
    }
    LocalFree(wargv);
    return args;
  }
#endif
  for (int i = 0; i < argc; ++i) args.emplace_back(argv[i]);
  return args;
}

struct Options {
  std::string model, data, method = "forward", out_dir;
  std::vector<std::string> inputs;
  long iterations = 1;
  bool list_ops = false;
};

// Reads the command line into `o`. Returns -1 to go on, else the exit code
// (0 for --help, 2 for a usage error, the usage printed).
int parse_arguments(const std::vector<std::string>& args, Options* o) {
  const int nargs = static_cast<int>(args.size());
  bool options_done = false;  // after "--" every argument is the program
  for (int i = 1; i < nargs; ++i) {
    const std::string& a = args[i];
    if (options_done || a == "--") {
      if (a == "--" && !options_done) {
        options_done = true;
        continue;
      }
      if (!o->model.empty()) {
        std::fprintf(stderr, "pteron-run: unexpected argument '%s'\n%s", a.c_str(), kUsage);
        return 2;
      }
      o->model = a;
      continue;
    }
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= nargs || args[i + 1].empty()) {
        std::fprintf(stderr, "pteron-run: %s needs a value\n%s", what, kUsage);
        std::exit(2);
      }
      return args[++i].c_str();
    };
    if (a == "--method")
      o->method = next("--method");
    else if (a == "--data")
      o->data = next("--data");
    else if (a == "--input")
      o->inputs.push_back(next("--input"));
    else if (a == "--output-dir")
      o->out_dir = next("--output-dir");
    else if (a == "--iterations") {
      char* end = nullptr;
      const char* v = next("--iterations");
      errno = 0;
      o->iterations = std::strtol(v, &end, 10);
      if (!(v[0] >= '0' && v[0] <= '9') || !end || *end || errno == ERANGE || o->iterations < 1 ||
          o->iterations > 1000000) {
        std::fprintf(stderr,
                     "pteron-run: --iterations needs an integer from 1 to 1000000, got '%s'\n%s", v,
                     kUsage);
        return 2;
      }
    } else if (a == "--list-operators")
      o->list_ops = true;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "pteron-run: unknown option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    } else if (o->model.empty())
      o->model = a;
    else {
      std::fprintf(stderr, "pteron-run: unexpected argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (o->model.empty() && !o->data.empty()) {
    std::fprintf(stderr, "pteron-run: --data needs MODEL.pte\n%s", kUsage);
    return 2;
  }
  if (o->model.empty() && (!o->inputs.empty() || !o->out_dir.empty())) {
    std::fprintf(stderr, "pteron-run: --input and --output-dir need MODEL.pte\n%s", kUsage);
    return 2;
  }
  return -1;
}

// The program of `o`, with its data file when --data names one.
pteron::Program load_program(const Options& o) {
  return o.data.empty() ? pteron::Program::load_file(o.model)
                        : pteron::Program::load_file(o.model, o.data);
}

// --list-operators: every registered kernel and backend. With a program and
// no inputs, also checks that the method loads (every operator and delegate
// resolved) and stops there. Returns -1 when inputs are given (run them).
int list_operators(const Options& o) {
  for (const pteron::KernelInfo& k : pteron::registered_kernels())
    std::printf("%-50s %-20s %s%s\n", k.qualified().c_str(), k.library.c_str(),
                k.key.empty() ? "" : ("key=" + k.key + " ").c_str(),
                k.selected ? "(selected)" : "(overridden)");
  for (const pteron::BackendInfo& b : pteron::registered_backends())
    std::printf("backend %-42s %s\n", b.id.c_str(), b.library.c_str());
  if (o.model.empty()) return 0;
  if (!o.inputs.empty()) return -1;
  pteron::Program program = load_program(o);
  pteron::Method m = program.load_method(o.method);
  std::printf("method '%s' loads: %zu input(s), %zu output(s)\n", o.method.c_str(), m.input_count(),
              m.output_count());
  return 0;
}

// The value of a 0-d .npy given for a scalar input; false for a dtype a
// scalar cannot come from (int64 is set exactly by set_inputs, not here).
bool scalar_from_npy(const pteron_tools::NpyArray& a, double* v) {
  switch (a.dtype) {
    case PTERON_DTYPE_FLOAT32: {
      float f;
      std::memcpy(&f, a.data.data(), 4);
      *v = f;
      return true;
    }
    case PTERON_DTYPE_FLOAT64: std::memcpy(v, a.data.data(), 8); return true;
    case PTERON_DTYPE_INT32: {
      int32_t x;
      std::memcpy(&x, a.data.data(), 4);
      *v = x;
      return true;
    }
    case PTERON_DTYPE_BOOL: *v = a.data[0] ? 1 : 0; return true;
    default: return false;
  }
}

// Reads each input file and sets it on the method; "" or the error.
std::string set_inputs(pteron::Method& m, const Options& o) {
  if (o.inputs.size() != m.input_count())
    return "method '" + o.method + "' takes " + std::to_string(m.input_count()) + " input(s), " +
           std::to_string(o.inputs.size()) + " given";
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    pteron_tools::NpyArray a;
    std::string err = pteron_tools::npy_read(o.inputs[i], &a);
    if (!err.empty()) return err;
    pteron::ValueInfo info = m.input_info(i);
    if (!info.is_tensor()) {
      if (info.tag != PTERON_VALUE_INT && info.tag != PTERON_VALUE_DOUBLE &&
          info.tag != PTERON_VALUE_BOOL)
        return "input " + std::to_string(i) + " is declared as " +
               pteron_value_tag_name(info.tag) +
               ", which pteron-run cannot set (it sets tensors and Int, Double or Bool "
               "scalars)";
      if (a.shape.size() != 0)
        return "input " + std::to_string(i) + " is a scalar; give a 0-d .npy";
      if (a.dtype == PTERON_DTYPE_INT64) {  // exact, past 2^53 too (a double would round)
        int64_t x;
        std::memcpy(&x, a.data.data(), 8);
        m.set_input_int(i, x);
        continue;
      }
      double v = 0;
      if (!scalar_from_npy(a, &v))
        return "input " + std::to_string(i) + ": unsupported scalar dtype";
      m.set_input_scalar(i, v);
      continue;
    }
    if (info.dtype == PTERON_DTYPE_BFLOAT16 && a.dtype == PTERON_DTYPE_FLOAT32) {
      // numpy has no bfloat16: a float32 file is rounded to it (nearest even), as torch's
      // .to(torch.bfloat16) rounds
      std::vector<unsigned char> h(a.data.size() / 2);
      for (size_t k = 0; k < h.size() / 2; ++k) {
        float f;
        std::memcpy(&f, a.data.data() + 4 * k, 4);
        const uint16_t v = pteron_tools::float_to_bfloat16(f);
        std::memcpy(h.data() + 2 * k, &v, 2);
      }
      a.dtype = PTERON_DTYPE_BFLOAT16;
      a.data = std::move(h);
    }
    try {
      m.set_input(i, a.dtype, a.shape, a.data.data(), a.data.size());
    } catch (const pteron::Error& e) {
      return std::string(e.what()) + " (from '" + o.inputs[i] + "')";
    }
  }
  return "";
}

// Prints a summary line per output and writes DIR/output_<i>.npy when an
// output directory is given; "" or the error.
std::string report_outputs(pteron::Method& m, const std::string& out_dir) {
  for (size_t o = 0; o < m.output_count(); ++o) {
    pteron::ValueInfo info = m.output_info(o);
    if (!info.is_tensor()) {
      if (info.tag == PTERON_VALUE_INT)
        std::printf("output %zu: int %lld\n", o, (long long)m.output_int(o));
      else if (info.tag == PTERON_VALUE_BOOL)
        std::printf("output %zu: bool %s\n", o, info.scalar != 0 ? "True" : "False");
      else if (info.tag == PTERON_VALUE_DOUBLE)
        std::printf("output %zu: double %.17g\n", o, info.scalar);
      else
        std::printf("output %zu: %s (no value to print)\n", o, pteron_value_tag_name(info.tag));
      continue;
    }
    std::vector<unsigned char> bytes = m.output_bytes(o);
    double mn = 0, mx = 0, mean = 0;
    size_t n = static_cast<size_t>(info.numel());
    int32_t file_dtype = info.dtype;
    bool summarized = true;
    if (info.dtype == PTERON_DTYPE_BFLOAT16 || info.dtype == PTERON_DTYPE_FLOAT16) {
      // Widened to float32, exactly: the summary's values; bfloat16 is also written so (numpy
      // has no bfloat16), float16 as numpy's own float16.
      std::vector<unsigned char> wide(4 * n);
      for (size_t k = 0; k < n; ++k) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * k, 2);
        const float f = info.dtype == PTERON_DTYPE_BFLOAT16 ? pteron_tools::bfloat16_to_float(h)
                                                            : pteron_tools::float16_to_float(h);
        std::memcpy(wide.data() + 4 * k, &f, 4);
      }
      summarize<float>(wide.data(), n, &mn, &mx, &mean);
      if (info.dtype == PTERON_DTYPE_BFLOAT16) {
        bytes = std::move(wide);
        file_dtype = PTERON_DTYPE_FLOAT32;
      }
    }
    switch (info.dtype) {
      case PTERON_DTYPE_FLOAT32: summarize<float>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_FLOAT64: summarize<double>(bytes.data(), n, &mn, &mx, &mean); break;
      // complex: over the real and imaginary parts together
      case PTERON_DTYPE_COMPLEX64: summarize<float>(bytes.data(), 2 * n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_COMPLEX128: summarize<double>(bytes.data(), 2 * n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_INT32: summarize<int32_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_INT64: summarize<int64_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_INT16: summarize<int16_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_INT8: summarize<int8_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_UINT16: summarize<uint16_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_UINT32: summarize<uint32_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_UINT64: summarize<uint64_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_UINT8:
      case PTERON_DTYPE_BOOL: summarize<uint8_t>(bytes.data(), n, &mn, &mx, &mean); break;
      case PTERON_DTYPE_BFLOAT16:
      case PTERON_DTYPE_FLOAT16: break;  // summarized above
      default: summarized = false; break;  // quantized codes: no numeric summary
    }
    const char* note =
        file_dtype != info.dtype && !out_dir.empty() ? " (written as float32)" : "";
    if (summarized)
      std::printf("output %zu: %s %s min %.6g max %.6g mean %.6g%s\n", o,
                  pteron::dtype_name(info.dtype), shape_str(info.sizes).c_str(), mn, mx, mean,
                  note);
    else
      std::printf("output %zu: %s %s\n", o, pteron::dtype_name(info.dtype),
                  shape_str(info.sizes).c_str());
    if (!out_dir.empty()) {
      pteron_tools::NpyArray a;
      a.dtype = file_dtype;
      a.shape = info.sizes;
      a.data = std::move(bytes);
      std::string path = out_dir + "/output_" + std::to_string(o) + ".npy";
      std::string err = pteron_tools::npy_write(path, a);
      if (!err.empty()) return err;
    }
  }
  return "";
}

// Loads the method, sets its inputs, runs it o.iterations times and reports
// the outputs and the median time; the exit code.
int run(const Options& o) {
  if (!o.out_dir.empty()) {
    // Created up front (with its parents), so a bad directory fails before
    // the model runs.
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::u8path(o.out_dir);
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
      return fail("cannot use output directory '" + o.out_dir +
                  "': " + (ec ? ec.message() : std::string("not a directory")));
  }
  pteron::Program program = load_program(o);
  pteron::Method m = program.load_method(o.method);
  std::string err = set_inputs(m, o);
  if (!err.empty()) return fail(err);
  std::vector<double> times;
  for (long it = 0; it < o.iterations; ++it) {
    auto t0 = std::chrono::steady_clock::now();
    m.execute();
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  err = report_outputs(m, o.out_dir);
  if (!err.empty()) return fail(err);
  std::sort(times.begin(), times.end());
  std::printf("median time per execution: %.3f ms over %zu iteration(s)\n", times[times.size() / 2],
              times.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  (void)pteron_keep_components();
  Options o;
  const int parsed = parse_arguments(utf8_arguments(argc, argv), &o);
  if (parsed >= 0) return parsed;
  try {
    if (o.list_ops) {
      const int listed = list_operators(o);
      if (listed >= 0) return listed;
    }
    if (o.model.empty()) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    return run(o);
  } catch (const pteron::Error& e) {
    return fail(std::string(e.what()) + " [" + e.code_name() + "]");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
