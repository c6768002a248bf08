// SPDX-License-Identifier: BSD-3-Clause
// pteron-bench: pteron's side of the side-by-side benchmark. A consumer of the
// pteron Conan package (runtime, kernels_portable, kernels_optimized,
// threadpool, and backend_xnnpack when the package has it), measured exactly
// like bench/peer: same arguments, same inputs, same BENCH_RESULT line.
//
// Usage: pteron-bench MODEL.pte [--method NAME] [--input FILE.npy]... [--warmup N]
//                     [--iterations N] [--threads N]
// --threads N sets the pool size (PTERON_NUM_THREADS does the same; 0 = default).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pteron/kernels_optimized.h"
#include "pteron/pteron.hpp"
#include "pteron/threadpool.h"

#include "../common/bench_common.h"

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "pteron-bench: error: %s\n", msg.c_str());
  return 1;
}

bool dtype_of(const std::string& descr, int32_t* t) {
  struct M {
    const char* d;
    int32_t t;
  };
  static const M map[] = {{"<f4", PTERON_DTYPE_FLOAT32}, {"<f8", PTERON_DTYPE_FLOAT64},
                          {"<i8", PTERON_DTYPE_INT64},   {"<i4", PTERON_DTYPE_INT32},
                          {"<i2", PTERON_DTYPE_INT16},   {"|i1", PTERON_DTYPE_INT8},
                          {"|u1", PTERON_DTYPE_UINT8},   {"|b1", PTERON_DTYPE_BOOL}};
  for (const M& m : map)
    if (descr == m.d) {
      *t = m.t;
      return true;
    }
  return false;
}

size_t element_size(int32_t t) {
  switch (t) {
    case PTERON_DTYPE_FLOAT64:
    case PTERON_DTYPE_INT64: return 8;
    case PTERON_DTYPE_FLOAT32:
    case PTERON_DTYPE_INT32: return 4;
    case PTERON_DTYPE_INT16: return 2;
    default: return 1;
  }
}

template <typename T>
void fill(unsigned char* p, size_t n, bool integral) {
  T* v = reinterpret_cast<T*>(p);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(bench::fill_value(i, integral));
}

template <typename T>
double sum_as(const std::vector<unsigned char>& b) {
  double s = 0;
  const T* p = reinterpret_cast<const T*>(b.data());
  for (size_t i = 0; i < b.size() / sizeof(T); ++i) s += double(p[i]);
  return s;
}

struct Input {
  bool scalar = false;
  double value = 0;
  int32_t dtype = PTERON_DTYPE_FLOAT32;
  std::vector<int64_t> sizes;
  std::vector<unsigned char> data;
};

}  // namespace

int main(int argc, char** argv) {
  bench::Args args;
  std::string usage = bench::parse_args(argc, argv, &args);
  if (!usage.empty()) {
    std::fprintf(
        stderr,
        "pteron-bench: %s\nusage: pteron-bench MODEL.pte [--method NAME] [--input FILE.npy]... "
        "[--warmup N] [--iterations N] [--threads N]\n",
        usage.c_str());
    return 2;
  }
  if (args.threads > 0 && pteron_threadpool_set_num_threads(size_t(args.threads)) != 0)
    return fail("cannot set " + std::to_string(args.threads) + " threads");
  long threads = long(pteron_threadpool_num_threads());
  try {
    auto t0 = std::chrono::steady_clock::now();
    pteron::Program program = pteron::Program::load_file(args.model);
    pteron::Method m = program.load_method(args.method);
    double load_ms = bench::ms_since(t0);

    size_t n_in = m.input_count();
    if (!args.inputs.empty() && args.inputs.size() != n_in)
      return fail("method '" + args.method + "' takes " + std::to_string(n_in) + " input(s), " +
                  std::to_string(args.inputs.size()) + " given");
    std::vector<Input> inputs(n_in);
    for (size_t i = 0; i < n_in; ++i) {
      pteron::ValueInfo info = m.input_info(i);
      Input& in = inputs[i];
      in.scalar = !info.is_tensor();
      if (!args.inputs.empty()) {
        bench::Npy npy;
        std::string e = bench::read_npy(args.inputs[i], &npy);
        if (!e.empty()) return fail(e);
        if (!dtype_of(npy.descr, &in.dtype))
          return fail("'" + args.inputs[i] + "': unsupported dtype " + npy.descr);
        in.sizes = npy.shape;
        in.data = std::move(npy.data);
        if (in.scalar) {
          switch (in.dtype) {
            case PTERON_DTYPE_FLOAT32: {
              float f;
              std::memcpy(&f, in.data.data(), 4);
              in.value = f;
              break;
            }
            case PTERON_DTYPE_FLOAT64: std::memcpy(&in.value, in.data.data(), 8); break;
            case PTERON_DTYPE_INT64: {
              int64_t x;
              std::memcpy(&x, in.data.data(), 8);
              in.value = double(x);
              break;
            }
            case PTERON_DTYPE_BOOL: in.value = in.data[0] ? 1 : 0; break;
            default: return fail("input " + std::to_string(i) + ": unsupported scalar dtype");
          }
        }
      } else if (in.scalar) {
        in.value = info.scalar;
      } else {
        in.dtype = info.dtype;
        in.sizes = info.sizes;
        size_t n = size_t(info.numel());
        in.data.resize(n * element_size(in.dtype));
        bool integral = !(in.dtype == PTERON_DTYPE_FLOAT32 || in.dtype == PTERON_DTYPE_FLOAT64);
        switch (in.dtype) {
          case PTERON_DTYPE_FLOAT32: fill<float>(in.data.data(), n, false); break;
          case PTERON_DTYPE_FLOAT64: fill<double>(in.data.data(), n, false); break;
          case PTERON_DTYPE_INT64: fill<int64_t>(in.data.data(), n, integral); break;
          case PTERON_DTYPE_INT32: fill<int32_t>(in.data.data(), n, integral); break;
          default: fill<uint8_t>(in.data.data(), n, integral); break;
        }
      }
    }
    // Inputs are set before every execution, outside the timed region, as the
    // peer must do (its memory plan may reuse an input's memory).
    auto set_inputs = [&]() {
      for (size_t i = 0; i < n_in; ++i) {
        if (inputs[i].scalar)
          m.set_input_scalar(i, inputs[i].value);
        else
          m.set_input(i, inputs[i].dtype, inputs[i].sizes, inputs[i].data.data(),
                      inputs[i].data.size());
      }
    };
    for (long w = 0; w < args.warmup; ++w) {
      set_inputs();
      m.execute();
    }
    std::vector<double> times;
    for (long it = 0; it < args.iterations; ++it) {
      set_inputs();
      auto s = std::chrono::steady_clock::now();
      m.execute();
      times.push_back(bench::ms_since(s));
    }
    double out0 = 0;
    long long numel0 = 0;
    if (m.output_count() > 0 && m.output_info(0).is_tensor()) {
      pteron::ValueInfo info = m.output_info(0);
      std::vector<unsigned char> b = m.output_bytes(0);
      numel0 = info.numel();
      switch (info.dtype) {
        case PTERON_DTYPE_FLOAT32: out0 = sum_as<float>(b); break;
        case PTERON_DTYPE_FLOAT64: out0 = sum_as<double>(b); break;
        case PTERON_DTYPE_INT64: out0 = sum_as<int64_t>(b); break;
        case PTERON_DTYPE_INT32: out0 = sum_as<int32_t>(b); break;
        case PTERON_DTYPE_BOOL:
        case PTERON_DTYPE_UINT8: out0 = sum_as<uint8_t>(b); break;
        default: break;
      }
    }
    // Which ISA path kernels_optimized (and the delegate's own kernels, which
    // share pteron_cpu's dispatch) ran, and which pool.
    const std::string extra = std::string("\"isa\": \"") + pteron_kernels_optimized_isa() +
                              "\", \"threadpool\": \"" + pteron_threadpool_implementation() + "\"";
    bench::print_result("pteron", load_ms, times, threads, out0, numel0, extra);
  } catch (const pteron::Error& e) {
    return fail(std::string(e.what()) + " [" + e.code_name() + "]");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
