// SPDX-License-Identifier: BSD-3-Clause
// peer-bench: the upstream side of pteron's side-by-side benchmark. Loads a
// .pte with upstream ExecuTorch's C++ runtime (the shared libraries of the
// executorch wheel), sets inputs from .npy files or a fixed fill, runs warm-up
// executions and then timed ones, and prints the load-and-init time and every
// execution time (bench/common/bench_common.h, BENCH_RESULT line).
//
// Usage: peer-bench MODEL.pte [--method NAME] [--input FILE.npy]... [--warmup N]
//                   [--iterations N] [--threads N]
// --threads N resizes upstream's shared thread pool (0 = its default).
// Exit status: 0, 1 on an error (one "peer-bench: error:" line on stderr), 2 on
// a usage error.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <executorch/extension/data_loader/mmap_data_loader.h>
#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#include "../common/bench_common.h"

// The wheel's libexecutorch_threadpool.so exports the pool (its dynamic
// symbols: get_threadpool(), ThreadPool::_unsafe_reset_threadpool(unsigned int),
// ThreadPool::get_thread_count() const) but 1.5.1 installs no header declaring
// them, only threadpool_guard.h. These declarations name those exported
// functions; the class is only ever used through the pointer the library gives.
namespace executorch::extension::threadpool {
class ThreadPool {
 public:
  size_t get_thread_count() const;
  bool _unsafe_reset_threadpool(uint32_t num_threads);
};
ThreadPool* get_threadpool();
}  // namespace executorch::extension::threadpool

namespace {

using executorch::aten::ScalarType;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::Tag;

int fail(const std::string& msg) {
  std::fprintf(stderr, "peer-bench: error: %s\n", msg.c_str());
  return 1;
}

std::string err(const char* what, Error e) {
  return std::string(what) + " failed: " + executorch::runtime::to_string(e);
}

bool scalar_type_of(const std::string& descr, ScalarType* t) {
  struct M {
    const char* d;
    ScalarType t;
  };
  static const M map[] = {{"<f4", ScalarType::Float}, {"<f8", ScalarType::Double},
                          {"<i8", ScalarType::Long},  {"<i4", ScalarType::Int},
                          {"<i2", ScalarType::Short}, {"|i1", ScalarType::Char},
                          {"|u1", ScalarType::Byte},  {"|b1", ScalarType::Bool}};
  for (const M& m : map)
    if (descr == m.d) {
      *t = m.t;
      return true;
    }
  return false;
}

size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Double:
    case ScalarType::Long: return 8;
    case ScalarType::Float:
    case ScalarType::Int: return 4;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    default: return 1;
  }
}

// One input tensor's storage; kept alive until the process ends because a
// non-planned input is aliased, not copied.
struct InputTensor {
  std::vector<executorch::aten::SizesType> sizes;
  std::vector<executorch::aten::DimOrderType> dim_order;
  std::vector<executorch::aten::StridesType> strides;
  std::vector<unsigned char> data;
  std::unique_ptr<executorch::aten::TensorImpl> impl;
};

template <typename T>
void fill(unsigned char* p, size_t n, bool integral) {
  T* v = reinterpret_cast<T*>(p);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(bench::fill_value(i, integral));
}

double sum_of(const executorch::aten::Tensor& t) {
  double s = 0;
  size_t n = size_t(t.numel());
  switch (t.scalar_type()) {
    case ScalarType::Float: {
      const float* p = t.const_data_ptr<float>();
      for (size_t i = 0; i < n; ++i) s += p[i];
      break;
    }
    case ScalarType::Double: {
      const double* p = t.const_data_ptr<double>();
      for (size_t i = 0; i < n; ++i) s += p[i];
      break;
    }
    case ScalarType::Long: {
      const int64_t* p = t.const_data_ptr<int64_t>();
      for (size_t i = 0; i < n; ++i) s += double(p[i]);
      break;
    }
    case ScalarType::Int: {
      const int32_t* p = t.const_data_ptr<int32_t>();
      for (size_t i = 0; i < n; ++i) s += p[i];
      break;
    }
    case ScalarType::Bool:
    case ScalarType::Byte: {
      const uint8_t* p = t.const_data_ptr<uint8_t>();
      for (size_t i = 0; i < n; ++i) s += p[i];
      break;
    }
    default: break;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Args args;
  std::string usage = bench::parse_args(argc, argv, &args);
  if (!usage.empty()) {
    std::fprintf(
        stderr,
        "peer-bench: %s\nusage: peer-bench MODEL.pte [--method NAME] [--input FILE.npy]... "
        "[--warmup N] [--iterations N] [--threads N]\n",
        usage.c_str());
    return 2;
  }
  executorch::runtime::runtime_init();
  namespace tp = executorch::extension::threadpool;
  if (args.threads > 0) tp::get_threadpool()->_unsafe_reset_threadpool(uint32_t(args.threads));
  long threads = long(tp::get_threadpool()->get_thread_count());

  // Load and init: program header and flatbuffer, method meta, planned
  // buffers, method load (kernel lookup, delegate init).
  auto t0 = std::chrono::steady_clock::now();
  auto loader = executorch::extension::MmapDataLoader::from(
      args.model.c_str(), executorch::extension::MmapDataLoader::MlockConfig::NoMlock);
  if (!loader.ok()) return fail(err(("opening '" + args.model + "'").c_str(), loader.error()));
  auto program = executorch::runtime::Program::load(&loader.get());
  if (!program.ok()) return fail(err("Program::load", program.error()));
  auto meta = program->method_meta(args.method.c_str());
  if (!meta.ok()) return fail(err(("method_meta('" + args.method + "')").c_str(), meta.error()));
  std::vector<std::vector<uint8_t>> planned(meta->num_memory_planned_buffers());
  std::vector<executorch::runtime::Span<uint8_t>> spans;
  for (size_t i = 0; i < planned.size(); ++i) {
    planned[i].resize(size_t(meta->memory_planned_buffer_size(i).get()));
    spans.emplace_back(planned[i].data(), planned[i].size());
  }
  executorch::runtime::HierarchicalAllocator planned_memory({spans.data(), spans.size()});
  executorch::extension::MallocMemoryAllocator method_allocator, temp_allocator;
  executorch::runtime::MemoryManager memory(&method_allocator, &planned_memory, &temp_allocator);
  auto method = program->load_method(args.method.c_str(), &memory);
  if (!method.ok())
    return fail(err(("load_method('" + args.method + "')").c_str(), method.error()));
  double load_ms = bench::ms_since(t0);

  size_t n_in = meta->num_inputs();
  if (!args.inputs.empty() && args.inputs.size() != n_in)
    return fail("method '" + args.method + "' takes " + std::to_string(n_in) + " input(s), " +
                std::to_string(args.inputs.size()) + " given");
  std::vector<InputTensor> tensors(n_in);
  std::vector<EValue> values(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    Tag tag = meta->input_tag(i).get();
    bench::Npy npy;
    bool from_file = !args.inputs.empty();
    if (from_file) {
      std::string e = bench::read_npy(args.inputs[i], &npy);
      if (!e.empty()) return fail(e);
    }
    if (tag != Tag::Tensor) {
      double v = 0;
      if (from_file) {
        if (npy.descr == "<f4") {
          float f;
          std::memcpy(&f, npy.data.data(), 4);
          v = f;
        } else if (npy.descr == "<f8")
          std::memcpy(&v, npy.data.data(), 8);
        else if (npy.descr == "<i8") {
          int64_t x;
          std::memcpy(&x, npy.data.data(), 8);
          v = double(x);
        } else if (npy.descr == "|b1")
          v = npy.data[0] ? 1 : 0;
        else
          return fail("input " + std::to_string(i) + ": unsupported scalar dtype " + npy.descr);
      }
      EValue ev;
      if (tag == Tag::Int)
        ev = EValue(int64_t(v));
      else if (tag == Tag::Double)
        ev = EValue(v);
      else if (tag == Tag::Bool)
        ev = EValue(v != 0);
      else
        return fail("input " + std::to_string(i) + ": unsupported input kind");
      values[i] = ev;
      continue;
    }
    auto info = meta->input_tensor_meta(i).get();
    InputTensor& t = tensors[i];
    ScalarType st = info.scalar_type();
    if (from_file) {
      if (!scalar_type_of(npy.descr, &st))
        return fail("'" + args.inputs[i] + "': unsupported dtype " + npy.descr);
      for (int64_t s : npy.shape) t.sizes.push_back(executorch::aten::SizesType(s));
      t.data = std::move(npy.data);
    } else {
      size_t n = 1;
      for (int32_t s : info.sizes()) {
        t.sizes.push_back(s);
        n *= size_t(s);
      }
      t.data.resize(n * element_size(st));
      bool integral = !(st == ScalarType::Float || st == ScalarType::Double);
      switch (st) {
        case ScalarType::Float: fill<float>(t.data.data(), n, false); break;
        case ScalarType::Double: fill<double>(t.data.data(), n, false); break;
        case ScalarType::Long: fill<int64_t>(t.data.data(), n, integral); break;
        case ScalarType::Int: fill<int32_t>(t.data.data(), n, integral); break;
        default: fill<uint8_t>(t.data.data(), n, integral); break;
      }
    }
    size_t dim = t.sizes.size();
    t.dim_order.resize(dim);
    t.strides.resize(dim);
    for (size_t d = 0; d < dim; ++d) t.dim_order[d] = executorch::aten::DimOrderType(d);
    int64_t stride = 1;
    for (size_t d = dim; d-- > 0;) {
      t.strides[d] = executorch::aten::StridesType(stride);
      stride *= t.sizes[d];
    }
    t.impl = std::make_unique<executorch::aten::TensorImpl>(
        st, ssize_t(dim), t.sizes.data(), t.data.data(), t.dim_order.data(), t.strides.data());
    values[i] = EValue(executorch::aten::Tensor(t.impl.get()));
  }
  // Inputs are set again before every execution, outside the timed region:
  // the memory plan may reuse an input's planned memory for later values.
  auto set_inputs = [&]() -> Error {
    for (size_t i = 0; i < n_in; ++i) {
      Error e = method->set_input(values[i], i);
      if (e != Error::Ok) return e;
    }
    return Error::Ok;
  };

  for (long w = 0; w < args.warmup; ++w) {
    Error e = set_inputs();
    if (e != Error::Ok) return fail(err("set_input", e));
    e = method->execute();
    if (e != Error::Ok) return fail(err("execute", e));
  }
  std::vector<double> times;
  for (long it = 0; it < args.iterations; ++it) {
    Error e = set_inputs();
    if (e != Error::Ok) return fail(err("set_input", e));
    auto s = std::chrono::steady_clock::now();
    e = method->execute();
    times.push_back(bench::ms_since(s));
    if (e != Error::Ok) return fail(err("execute", e));
  }
  double out0 = 0;
  long long numel0 = 0;
  if (method->outputs_size() > 0 && method->get_output(0).isTensor()) {
    const auto& t = method->get_output(0).toTensor();
    out0 = sum_of(t);
    numel0 = t.numel();
  }
  bench::print_result("peer", load_ms, times, threads, out0, numel0);
  return 0;
}
