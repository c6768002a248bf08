// SPDX-License-Identifier: BSD-3-Clause
// pteron-fuzz: malformed-program robustness driver.
//
// Builds malformed variants of one .pte program in memory and runs each
// through the C API in this one process: pteron_program_load_memory, then for
// every method pteron_method_load (NULL options), set inputs, execute once,
// copy the outputs, release everything. Every variant must end with success
// or an error status; a crash, an abort or a sanitizer report is a bug, and
// so is a variant that runs longer than --timeout-s (a watchdog thread then
// prints "TIMEOUT variant <name>" to stderr and exits 3).
//
// Usage:
//   pteron-fuzz MODEL.pte [--method NAME --input a.npy ...]... [--flips N]
//               [--fields N] [--seed S] [--timeout-s 10] [--no-execute] [--verbose]
//               [--self-test hang|asan|ubsan]
//   pteron-fuzz --backends   (prints the delegates registered in this build)
// Inputs given after a --method belong to that method. Methods of the
// program without inputs are still loaded and executed (and fail, unset).
//
// Variant classes (structural ones come first, then the random flips):
//   truncation      0, 8, size/2 and size-1 bytes
//   identifier      bytes 4..8 changed
//   root_offset     bytes 0..4 zeroed
//   value_index     a KernelCall/DelegateCall argument, a plan input, a plan
//                   output, an IntList item, a TensorList item out of range
//   segment_offset  a DataSegment offset beyond the file, the extended
//                   header's segment base offset beyond the file, a constant
//                   segment offsets entry beyond its segment
//   flip_program    1-4 random bytes changed inside the flatbuffer part
//   flip_any        1-4 random bytes changed anywhere in the file
//   flip_blob       1-4 random bytes changed inside an XNNPACK delegate blob's
//                   header or graph flatbuffer (every 4th flip, in place of a
//                   flip_any, when the program holds such a blob)
//   field           1-2 schema fields changed through the mutable API (tensor
//                   sizes, dim order, dtype, placement, scalars, list items,
//                   instruction operands, planned sizes, segment ranges) to
//                   boundary values: these pass the flatbuffer verifier, so
//                   they reach method load and execute (--fields N, default
//                   half of --flips)
//
// --self-test proves the checks that a clean run cannot show: "hang" runs a
// variant that sleeps past the timeout (expect exit 3 and TIMEOUT), "asan"
// reads past a heap block and "ubsan" overflows a signed integer (expect a
// sanitizer report, so the build really is sanitized).
//
// Output: one line per class, "class=<name> variants=V errors=E ok=K
// load_errors=L method_errors=M exec_errors=X set_input_errors=I", then
// "variants=V ok=K errors=E". Exit status: 0 when every variant ended with
// success or an error; 2 usage / setup error; 3 timeout; 4 an error status
// with an empty message or an unknown error code.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npy.h"
#include "program_generated.h"
#include "pteron/export.h"
#include "pteron/pteron.h"

// Sanitizer runtimes call this back before they end the process, so a report
// names the variant that caused it. Weak: absent without sanitizers.
#if defined(__GNUC__) && !defined(_WIN32)
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));
#define PTERON_FUZZ_HAVE_DEATH_CALLBACK 1
#endif

// Calls the anchor of every registration-only component the build has
// (generated from cmake/components.json by pteron_keep_components): with a
// delegate built, its programs load and run through it (and their blobs are
// fuzzed).
extern "C" int pteron_keep_components(void);

namespace {

namespace fb = pteron::fb;
using Bytes = std::vector<uint8_t>;

const char kUsage[] =
    "usage: pteron-fuzz MODEL.pte [--method NAME --input FILE.npy ...]... [--flips N] [--fields "
    "N]\n"
    "                   [--seed S] [--timeout-s SECONDS] [--no-execute] [--verbose]\n"
    "                   [--self-test hang|asan|ubsan]\n";

// ---- watchdog ---------------------------------------------------------------

struct Watchdog {
  std::mutex mu;
  std::string name;         // variant being run
  int64_t started_ms = -1;  // -1: idle
  double timeout_s = 10.0;
  std::atomic<bool> stop{false};
  std::thread th;

  static int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  }
  void begin(const std::string& n) {
    std::lock_guard<std::mutex> g(mu);
    name = n;
    started_ms = now_ms();
  }
  void end() {
    std::lock_guard<std::mutex> g(mu);
    started_ms = -1;
  }
  void start() {
    th = std::thread([this] {
      while (!stop.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::lock_guard<std::mutex> g(mu);
        if (started_ms >= 0 && double(now_ms() - started_ms) > timeout_s * 1000.0) {
          std::fprintf(stderr, "TIMEOUT variant %s (more than %g s)\n", name.c_str(), timeout_s);
          std::fflush(stderr);
          std::fflush(stdout);
          std::_Exit(3);
        }
      }
    });
  }
  void finish() {
    stop.store(true);
    if (th.joinable()) th.join();
  }
};

// ---- statuses ---------------------------------------------------------------

std::string g_variant;  // for messages
char g_variant_c[512];  // the same, for the sanitizer death callback

void set_variant(const std::string& name) {
  g_variant = name;
  std::snprintf(g_variant_c, sizeof g_variant_c, "%s", name.c_str());
}

void on_sanitizer_death() {
  std::fprintf(stderr, "pteron-fuzz: sanitizer report while running variant %s\n", g_variant_c);
}

}  // namespace

#if defined(__GNUC__) && !defined(_WIN32)
// UBSan calls this (a weak hook in its runtime) after each report.
extern "C" void __ubsan_on_report(void) { on_sanitizer_death(); }
#endif

namespace {

// Checks a status: NULL -> PTERON_OK; otherwise the code must be a known
// pteron_error and the message non-empty (else exit 4). Releases it.
int32_t take(pteron_status* s, const char* call, bool verbose) {
  if (!s) return PTERON_OK;
  int32_t code = pteron_status_code(s);
  const char* msg = pteron_status_message(s);
  if (code < PTERON_ERROR_INVALID_ARGUMENT || code > PTERON_ERROR_DELEGATE_FAILED) {
    std::fprintf(stderr, "BADSTATUS variant %s: %s returned unknown error code %d (%s)\n",
                 g_variant.c_str(), call, code, msg ? msg : "(null)");
    std::fflush(stderr);
    std::_Exit(4);
  }
  if (!msg || !*msg) {
    std::fprintf(stderr, "BADSTATUS variant %s: %s returned error %d (%s) with an empty message\n",
                 g_variant.c_str(), call, code, pteron_error_name(code));
    std::fflush(stderr);
    std::_Exit(4);
  }
  if (verbose) std::printf("  %s: %s: [%d] %s\n", g_variant.c_str(), call, code, msg);
  pteron_status_release(s);
  return code;
}

// ---- running one variant ----------------------------------------------------

enum class Outcome { Ok, LoadError, MethodError, ExecError };

struct MethodInputs {
  std::string name;
  std::vector<pteron_tools::NpyArray> inputs;
};

struct Counts {
  int variants = 0, ok = 0, load = 0, method = 0, exec = 0, set_input = 0;
  int errors() const { return load + method + exec; }
};

double scalar_of(const pteron_tools::NpyArray& a) {
  if (a.data.empty()) return 0;
  const unsigned char* p = a.data.data();
  switch (a.dtype) {
    case PTERON_DTYPE_FLOAT32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case PTERON_DTYPE_FLOAT64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case PTERON_DTYPE_INT64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return double(x);
    }
    case PTERON_DTYPE_INT32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case PTERON_DTYPE_BOOL: return p[0] ? 1 : 0;
    default: return 0;
  }
}

Outcome run_variant(const Bytes& data, const std::vector<MethodInputs>& known, bool execute,
                    bool verbose, int* set_input_errors) {
  pteron_program* prog = nullptr;
  if (take(pteron_program_load_memory(data.data(), data.size(), &prog), "program_load_memory",
           verbose) != PTERON_OK) {
    if (prog) {
      std::fprintf(stderr, "BADSTATUS variant %s: failed load left a program\n", g_variant.c_str());
      std::_Exit(4);
    }
    return Outcome::LoadError;
  }
  if (!prog) {
    std::fprintf(stderr, "BADSTATUS variant %s: load succeeded without a program\n",
                 g_variant.c_str());
    std::_Exit(4);
  }
  Outcome worst = Outcome::Ok;
  auto note = [&](Outcome o) {
    if (worst == Outcome::Ok || (o == Outcome::MethodError && worst == Outcome::ExecError))
      worst = o;
  };
  size_t nm = pteron_program_method_count(prog);
  for (size_t i = 0; i < nm; ++i) {
    const char* name = nullptr;
    if (take(pteron_program_method_name(prog, i, &name), "program_method_name", verbose) !=
        PTERON_OK) {
      note(Outcome::MethodError);
      continue;
    }
    std::string mname = name ? name : "";
    size_t nbuf = 0;
    (void)take(pteron_program_planned_buffer_sizes(prog, mname.c_str(), nullptr, 0, &nbuf),
               "program_planned_buffer_sizes", verbose);
    pteron_method* m = nullptr;
    if (take(pteron_method_load(prog, mname.c_str(), nullptr, &m), "method_load", verbose) !=
        PTERON_OK) {
      note(Outcome::MethodError);
      continue;
    }
    if (execute) {
      const MethodInputs* mi = nullptr;
      for (const MethodInputs& k : known)
        if (k.name == mname) mi = &k;
      size_t nin = pteron_method_input_count(m);
      for (size_t j = 0; mi && j < nin && j < mi->inputs.size(); ++j) {
        const pteron_tools::NpyArray& a = mi->inputs[j];
        pteron_value_info info;
        if (take(pteron_method_input_info(m, j, &info), "method_input_info", verbose) !=
            PTERON_OK) {
          ++*set_input_errors;
          continue;
        }
        pteron_status* s;
        if (info.tag == PTERON_VALUE_TENSOR)
          s = pteron_method_set_input(m, j, a.dtype, a.shape.data(),
                                      static_cast<int32_t>(a.shape.size()), a.data.data(),
                                      a.data.size());
        else
          s = pteron_method_set_input_scalar(m, j, scalar_of(a));
        if (take(s, "method_set_input", verbose) != PTERON_OK) ++*set_input_errors;
      }
      if (take(pteron_method_execute(m), "method_execute", verbose) != PTERON_OK) {
        note(Outcome::ExecError);
      } else {
        size_t nout = pteron_method_output_count(m);
        for (size_t j = 0; j < nout; ++j) {
          pteron_value_info info;
          if (take(pteron_method_output_info(m, j, &info), "method_output_info", verbose) !=
              PTERON_OK)
            continue;
          if (info.tag != PTERON_VALUE_TENSOR || info.nbytes > (size_t(1) << 30)) continue;
          std::vector<unsigned char> buf(info.nbytes ? info.nbytes : 1);
          (void)take(pteron_method_copy_output(m, j, buf.data(), info.nbytes), "method_copy_output",
                     verbose);
        }
      }
    }
    pteron_method_release(m);
  }
  pteron_program_release(prog);
  return worst;
}

// ---- building variants ------------------------------------------------------

struct Variant {
  std::string cls, name;
  Bytes data;
};

uint32_t rd32(const Bytes& b, size_t o) {
  return uint32_t(b[o]) | uint32_t(b[o + 1]) << 8 | uint32_t(b[o + 2]) << 16 |
         uint32_t(b[o + 3]) << 24;
}
uint64_t rd64(const Bytes& b, size_t o) {
  return uint64_t(rd32(b, o)) | uint64_t(rd32(b, o + 4)) << 32;
}
void wr64(Bytes& b, size_t o, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[o + i] = uint8_t(v >> (8 * i));
}

bool has_ext_header(const Bytes& b) { return b.size() >= 32 && std::memcmp(&b[8], "eh00", 4) == 0; }

// Size of the flatbuffer part (the extended header's program size, or the file).
size_t program_part(const Bytes& b) {
  if (has_ext_header(b)) {
    uint64_t ps = rd64(b, 16);
    if (ps >= 8 && ps <= b.size()) return static_cast<size_t>(ps);
  }
  return b.size();
}

// A 16-byte aligned mutable copy of `src` for the generated mutable API.
struct Aligned {
  std::vector<uint64_t> store;  // 8-byte aligned; new[] of this size is 16-aligned in practice
  size_t n;
  explicit Aligned(const Bytes& src) : store((src.size() + 15) / 8 + 2), n(src.size()) {
    std::memcpy(ptr(), src.data(), n);
  }
  uint8_t* ptr() {
    uintptr_t p = reinterpret_cast<uintptr_t>(store.data());
    return reinterpret_cast<uint8_t*>((p + 15) & ~uintptr_t(15));
  }
  Bytes bytes() { return Bytes(ptr(), ptr() + n); }
};

const int32_t kHugeIndex = 0x3fffffff;

// The value-index variants, made through the generated mutable API.
void value_index_variants(const Bytes& orig, std::vector<Variant>* out) {
  auto make = [&](const std::string& name, auto mutate) {
    Aligned a(orig);
    fb::Program* p = fb::GetMutableProgram(a.ptr());
    if (!p || !p->mutable_execution_plan() || p->mutable_execution_plan()->size() == 0) return;
    fb::ExecutionPlan* plan = p->mutable_execution_plan()->GetMutableObject(0);
    if (plan && mutate(plan)) out->push_back({"value_index", name, a.bytes()});
  };
  // An argument of the first KernelCall / DelegateCall that has arguments.
  for (int32_t bad : {kHugeIndex, -7}) {
    make(bad < 0 ? "instruction_arg_negative" : "instruction_arg", [bad](fb::ExecutionPlan* plan) {
      auto* chains = plan->mutable_chains();
      for (uint32_t c = 0; chains && c < chains->size(); ++c) {
        auto* ins = chains->GetMutableObject(c)->mutable_instructions();
        for (uint32_t k = 0; ins && k < ins->size(); ++k) {
          fb::Instruction* in = ins->GetMutableObject(k);
          flatbuffers::Vector<int32_t>* args = nullptr;
          if (in->instr_args_type() == fb::InstructionArguments::KernelCall)
            args = static_cast<fb::KernelCall*>(in->mutable_instr_args())->mutable_args();
          else if (in->instr_args_type() == fb::InstructionArguments::DelegateCall)
            args = static_cast<fb::DelegateCall*>(in->mutable_instr_args())->mutable_args();
          if (args && args->size() > 0) {
            args->Mutate(args->size() - 1, bad);
            return true;
          }
        }
      }
      return false;
    });
  }
  make("plan_input", [](fb::ExecutionPlan* plan) {
    auto* v = plan->mutable_inputs();
    if (!v || v->size() == 0) return false;
    v->Mutate(0, kHugeIndex);
    return true;
  });
  make("plan_output", [](fb::ExecutionPlan* plan) {
    auto* v = plan->mutable_outputs();
    if (!v || v->size() == 0) return false;
    v->Mutate(v->size() - 1, kHugeIndex);
    return true;
  });
  make("int_list_item", [](fb::ExecutionPlan* plan) {
    auto* vals = plan->mutable_values();
    for (uint32_t i = 0; vals && i < vals->size(); ++i) {
      fb::EValue* ev = vals->GetMutableObject(i);
      if (ev->val_type() != fb::KernelTypes::IntList) continue;
      auto* items = static_cast<fb::IntList*>(ev->mutable_val())->mutable_items();
      if (!items || items->size() == 0) continue;
      items->Mutate(0, int64_t(1) << 40);
      return true;
    }
    return false;
  });
  make("tensor_list_item", [](fb::ExecutionPlan* plan) {
    auto* vals = plan->mutable_values();
    for (uint32_t i = 0; vals && i < vals->size(); ++i) {
      fb::EValue* ev = vals->GetMutableObject(i);
      flatbuffers::Vector<int32_t>* items = nullptr;
      if (ev->val_type() == fb::KernelTypes::TensorList)
        items = static_cast<fb::TensorList*>(ev->mutable_val())->mutable_items();
      else if (ev->val_type() == fb::KernelTypes::OptionalTensorList)
        items = static_cast<fb::OptionalTensorList*>(ev->mutable_val())->mutable_items();
      if (!items || items->size() == 0) continue;
      items->Mutate(0, kHugeIndex);
      return true;
    }
    return false;
  });
}

// The segment-offset variants.
void segment_variants(const Bytes& orig, std::vector<Variant>* out) {
  const uint64_t beyond = uint64_t(orig.size()) + 4096;
  {
    // Every DataSegment whose offset is stored (an offset of 0 may be left
    // out of the flatbuffer as the default, and then cannot be mutated in
    // place): one variant each, up to 4.
    Aligned probe(orig);
    const fb::Program* p = fb::GetProgram(probe.ptr());
    uint32_t nseg = (p && p->segments()) ? p->segments()->size() : 0;
    int made = 0;
    for (uint32_t s = 0; s < nseg && made < 4; ++s) {
      Aligned a(orig);
      fb::DataSegment* ds = fb::GetMutableProgram(a.ptr())->mutable_segments()->GetMutableObject(s);
      bool ok = ds->mutate_offset(beyond);
      if (ok) {
        out->push_back(
            {"segment_offset", "data_segment_" + std::to_string(s) + "_offset", a.bytes()});
        ++made;
      } else if (ds->mutate_size(beyond)) {
        // Offset 0 not stored: push the segment's end past the file instead.
        out->push_back(
            {"segment_offset", "data_segment_" + std::to_string(s) + "_size", a.bytes()});
        ++made;
      }
    }
  }
  if (has_ext_header(orig)) {
    Bytes b = orig;
    wr64(b, 24, beyond);
    out->push_back({"segment_offset", "header_segment_base", b});
    b = orig;
    wr64(b, 24, ~uint64_t(0) - 7);
    out->push_back({"segment_offset", "header_segment_base_max", b});
  }
  {
    // A constant_segment offsets entry that a constant tensor of plan 0 uses.
    Aligned a(orig);
    fb::Program* p = fb::GetMutableProgram(a.ptr());
    fb::SubsegmentOffsets* cs = p->mutable_constant_segment();
    if (cs && cs->mutable_offsets() && cs->mutable_offsets()->size() > 1 && p->execution_plan()) {
      uint32_t used = 0;
      for (uint32_t e = 0; e < p->execution_plan()->size() && !used; ++e) {
        const auto* vals = p->execution_plan()->Get(e)->values();
        for (uint32_t i = 0; vals && i < vals->size() && !used; ++i) {
          const fb::Tensor* t = vals->Get(i)->val_as_Tensor();
          if (t && t->data_buffer_idx() > 0 && !t->allocation_info() &&
              t->data_buffer_idx() < cs->offsets()->size())
            used = t->data_buffer_idx();
        }
      }
      if (used) {
        cs->mutable_offsets()->Mutate(used, beyond);
        out->push_back({"segment_offset", "constant_offset_" + std::to_string(used), a.bytes()});
      }
    }
  }
}

std::vector<Variant> structural_variants(const Bytes& orig) {
  std::vector<Variant> v;
  const size_t n = orig.size();
  for (size_t len : {size_t(0), size_t(8), n / 2, n ? n - 1 : 0}) {
    if (len > n) continue;
    v.push_back(
        {"truncation", "truncate_" + std::to_string(len), Bytes(orig.begin(), orig.begin() + len)});
  }
  if (n >= 8) {
    Bytes b = orig;
    std::memcpy(&b[4], "XT13", 4);
    v.push_back({"identifier", "identifier_XT13", b});
    b = orig;
    std::memcpy(&b[4], "ET11", 4);
    v.push_back({"identifier", "identifier_ET11", b});
    b = orig;
    std::memset(&b[0], 0, 4);
    v.push_back({"root_offset", "root_offset_zero", b});
  }
  value_index_variants(orig, &v);
  segment_variants(orig, &v);
  return v;
}

// ---- field mutations: one schema field changed through the mutable API ----

// A value for an integer field currently holding `cur`, where `n` is the size
// of whatever the field indexes or counts: boundaries, neighbours, extremes.
int64_t pick_int(std::mt19937& rng, int64_t cur, int64_t n) {
  // Wrapping arithmetic: `cur` and `n` may hold anything a mutation left.
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  const uint64_t c = static_cast<uint64_t>(cur);
  n = std::min<int64_t>(std::max<int64_t>(n, 0), int64_t(1) << 40);
  switch (std::uniform_int_distribution<int>(0, 11)(rng)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: return wrap(c + 1);
    case 4: return wrap(c - 1);
    case 5: return n;
    case 6: return n - 1;
    case 7: return n + 1;
    case 8: return std::numeric_limits<int32_t>::max();
    case 9: return std::numeric_limits<int32_t>::min();
    case 10: return wrap(c * 2 + 1);
    default: return std::uniform_int_distribution<int64_t>(-(n + 2), 2 * n + 2)(rng);
  }
}
template <typename T>
T pick_as(std::mt19937& rng, int64_t cur, int64_t n) {
  return static_cast<T>(pick_int(rng, cur, n));
}

template <typename V>
uint32_t pick_index(std::mt19937& rng, const V* v) {
  return std::uniform_int_distribution<uint32_t>(0, v->size() - 1)(rng);
}

// One random mutation of plan `plan` (or of the program). Each mutator
// returns false if the field it chose is absent (flatbuffers cannot add a
// field in place).
struct FieldMutator {
  fb::Program* prog;
  fb::ExecutionPlan* plan;
  std::mt19937& rng;
  std::string* what;
  decltype(plan->mutable_values()) vals = plan->mutable_values();
  int64_t nvals = vals ? vals->size() : 0;

  fb::EValue* random_value() {
    return nvals ? vals->GetMutableObject(pick_index(rng, vals)) : nullptr;
  }
  fb::Instruction* random_instruction() {
    auto* chains = plan->mutable_chains();
    if (!chains || chains->size() == 0) return nullptr;
    auto* ins = chains->GetMutableObject(pick_index(rng, chains))->mutable_instructions();
    if (!ins || ins->size() == 0) return nullptr;
    return ins->GetMutableObject(pick_index(rng, ins));
  }

  // A tensor field (most programs are tensors).
  bool tensor_field() {
    fb::EValue* ev = random_value();
    if (!ev || ev->val_type() != fb::KernelTypes::Tensor || !ev->mutable_val()) return false;
    auto* t = static_cast<fb::Tensor*>(ev->mutable_val());
    int64_t dim = t->sizes() ? t->sizes()->size() : 0;
    switch (std::uniform_int_distribution<int>(0, 7)(rng)) {
      case 0: {
        auto* sz = t->mutable_sizes();
        if (!sz || sz->size() == 0) return false;
        uint32_t k = pick_index(rng, sz);
        sz->Mutate(k, pick_as<int32_t>(rng, sz->Get(k), 1 << 20));
        *what = "tensor_size";
        return true;
      }
      case 1: {
        auto* o = t->mutable_dim_order();
        if (!o || o->size() == 0) return false;
        uint32_t k = pick_index(rng, o);
        o->Mutate(k, pick_as<uint8_t>(rng, o->Get(k), dim));
        *what = "tensor_dim_order";
        return true;
      }
      case 2:
        *what = "tensor_scalar_type";
        return t->mutate_scalar_type(
            static_cast<fb::ScalarType>(std::uniform_int_distribution<int>(-2, 31)(rng)));
      case 3:
        *what = "tensor_data_buffer_idx";
        return t->mutate_data_buffer_idx(pick_as<uint32_t>(rng, t->data_buffer_idx(), 64));
      case 4: {
        fb::AllocationDetails* a = t->mutable_allocation_info();
        if (!a) return false;
        *what = "tensor_memory_id";
        return a->mutate_memory_id(pick_as<uint32_t>(rng, a->memory_id(), 4));
      }
      case 5: {
        fb::AllocationDetails* a = t->mutable_allocation_info();
        if (!a) return false;
        *what = "tensor_memory_offset";
        int64_t bsz = 1 << 16;
        if (plan->non_const_buffer_sizes() && plan->non_const_buffer_sizes()->size() > 1)
          bsz = plan->non_const_buffer_sizes()->Get(1);
        return std::uniform_int_distribution<int>(0, 3)(rng) == 0
                   ? a->mutate_memory_offset_high(
                         pick_as<uint32_t>(rng, a->memory_offset_high(), 2))
                   : a->mutate_memory_offset_low(
                         pick_as<uint32_t>(rng, a->memory_offset_low(), bsz));
      }
      case 6:
        *what = "tensor_shape_dynamism";
        return t->mutate_shape_dynamism(
            static_cast<fb::TensorShapeDynamism>(std::uniform_int_distribution<int>(0, 3)(rng)));
      default:
        *what = "tensor_storage_offset";
        return t->mutate_storage_offset(pick_as<int32_t>(rng, t->storage_offset(), 64));
    }
  }

  // A scalar value.
  bool scalar_value() {
    fb::EValue* ev = random_value();
    if (!ev || !ev->mutable_val()) return false;
    *what = "scalar";
    if (ev->val_type() == fb::KernelTypes::Int) {
      auto* v = static_cast<fb::Int*>(ev->mutable_val());
      int64_t x = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                      ? (std::uniform_int_distribution<int>(0, 1)(rng)
                             ? std::numeric_limits<int64_t>::max()
                             : std::numeric_limits<int64_t>::min())
                      : pick_int(rng, v->int_val(), 64);
      return v->mutate_int_val(x);
    }
    if (ev->val_type() == fb::KernelTypes::Double) {
      const double c[] = {0.0,
                          -1.0,
                          1e308,
                          -1e308,
                          std::numeric_limits<double>::quiet_NaN(),
                          std::numeric_limits<double>::infinity(),
                          1e-310};
      return static_cast<fb::Double*>(ev->mutable_val())
          ->mutate_double_val(c[std::uniform_int_distribution<int>(0, 6)(rng)]);
    }
    if (ev->val_type() == fb::KernelTypes::Bool) {
      auto* b = static_cast<fb::Bool*>(ev->mutable_val());
      return b->mutate_bool_val(!b->bool_val());
    }
    return false;
  }

  // A list item.
  bool list_item() {
    fb::EValue* ev = random_value();
    if (!ev || !ev->mutable_val()) return false;
    *what = "list_item";
    if (ev->val_type() == fb::KernelTypes::IntList) {
      auto* it = static_cast<fb::IntList*>(ev->mutable_val())->mutable_items();
      if (!it || it->size() == 0) return false;
      uint32_t k = pick_index(rng, it);
      it->Mutate(k, pick_int(rng, it->Get(k), nvals));
      return true;
    }
    flatbuffers::Vector<int32_t>* it = nullptr;
    if (ev->val_type() == fb::KernelTypes::TensorList)
      it = static_cast<fb::TensorList*>(ev->mutable_val())->mutable_items();
    else if (ev->val_type() == fb::KernelTypes::OptionalTensorList)
      it = static_cast<fb::OptionalTensorList*>(ev->mutable_val())->mutable_items();
    if (!it || it->size() == 0) return false;
    uint32_t k = pick_index(rng, it);
    it->Mutate(k, pick_as<int32_t>(rng, it->Get(k), nvals));
    return true;
  }

  // An instruction field.
  bool instruction_field() {
    fb::Instruction* in = random_instruction();
    if (!in || !in->mutable_instr_args()) return false;
    void* a = in->mutable_instr_args();
    *what = "instruction";
    switch (in->instr_args_type()) {
      case fb::InstructionArguments::KernelCall: {
        auto* kc = static_cast<fb::KernelCall*>(a);
        auto* args = kc->mutable_args();
        if (args && args->size() && std::uniform_int_distribution<int>(0, 2)(rng)) {
          uint32_t k = pick_index(rng, args);
          args->Mutate(k, pick_as<int32_t>(rng, args->Get(k), nvals));
          return true;
        }
        int64_t nops = plan->operators() ? plan->operators()->size() : 0;
        return kc->mutate_op_index(pick_as<int32_t>(rng, kc->op_index(), nops));
      }
      case fb::InstructionArguments::DelegateCall: {
        auto* dc = static_cast<fb::DelegateCall*>(a);
        auto* args = dc->mutable_args();
        if (!args || args->size() == 0) return false;
        uint32_t k = pick_index(rng, args);
        args->Mutate(k, pick_as<int32_t>(rng, args->Get(k), nvals));
        return true;
      }
      case fb::InstructionArguments::MoveCall: {
        auto* mc = static_cast<fb::MoveCall*>(a);
        return std::uniform_int_distribution<int>(0, 1)(rng)
                   ? mc->mutate_move_from(pick_as<int32_t>(rng, mc->move_from(), nvals))
                   : mc->mutate_move_to(pick_as<int32_t>(rng, mc->move_to(), nvals));
      }
      case fb::InstructionArguments::JumpFalseCall: {
        auto* jc = static_cast<fb::JumpFalseCall*>(a);
        return std::uniform_int_distribution<int>(0, 1)(rng)
                   ? jc->mutate_cond_value_index(
                         pick_as<int32_t>(rng, jc->cond_value_index(), nvals))
                   : jc->mutate_destination_instruction(
                         pick_as<int32_t>(rng, jc->destination_instruction(), 8));
      }
      case fb::InstructionArguments::FreeCall: {
        auto* fc = static_cast<fb::FreeCall*>(a);
        return fc->mutate_value_index(pick_as<int32_t>(rng, fc->value_index(), nvals));
      }
      default: return false;
    }
  }

  // Plan inputs / outputs.
  bool plan_io() {
    auto* v = std::uniform_int_distribution<int>(0, 1)(rng) ? plan->mutable_inputs()
                                                            : plan->mutable_outputs();
    if (!v || v->size() == 0) return false;
    uint32_t k = pick_index(rng, v);
    v->Mutate(k, pick_as<int32_t>(rng, v->Get(k), nvals));
    *what = "plan_io";
    return true;
  }

  // A planned buffer size.
  bool planned_buffer_size() {
    auto* b = plan->mutable_non_const_buffer_sizes();
    if (!b || b->size() == 0) return false;
    uint32_t k = pick_index(rng, b);
    int64_t cur = b->Get(k);
    const int64_t c[] = {0,
                         1,
                         int64_t(uint64_t(cur) - 1),
                         cur / 2,
                         int64_t(uint64_t(cur) - 16),
                         int64_t(0 - uint64_t(cur)),
                         int64_t(1) << 62};
    b->Mutate(k, c[std::uniform_int_distribution<int>(0, 6)(rng)]);
    *what = "planned_buffer_size";
    return true;
  }

  // A constant segment offset.
  bool constant_segment_offset() {
    fb::SubsegmentOffsets* cs = prog->mutable_constant_segment();
    if (!cs) return false;
    *what = "constant_segment";
    auto* o = cs->mutable_offsets();
    if (o && o->size() > 0 && std::uniform_int_distribution<int>(0, 3)(rng)) {
      uint32_t k = pick_index(rng, o);
      uint64_t cur = o->Get(k);
      const uint64_t c[] = {0, cur + 1, cur + 4, cur - 4, cur + 16, cur - 16, ~uint64_t(0)};
      o->Mutate(k, c[std::uniform_int_distribution<int>(0, 6)(rng)]);
      return true;
    }
    return cs->mutate_segment_index(pick_as<uint32_t>(rng, cs->segment_index(), 4));
  }

  // A data segment.
  bool data_segment() {
    auto* segs = prog->mutable_segments();
    if (!segs || segs->size() == 0) return false;
    fb::DataSegment* ds = segs->GetMutableObject(pick_index(rng, segs));
    *what = "data_segment";
    const int64_t d[] = {1, -1, 16, -16, 4096};
    int64_t delta = d[std::uniform_int_distribution<int>(0, 4)(rng)];
    return std::uniform_int_distribution<int>(0, 1)(rng)
               ? ds->mutate_offset(ds->offset() + static_cast<uint64_t>(delta))
               : ds->mutate_size(ds->size() + static_cast<uint64_t>(delta));
  }

  // A delegate's data reference.
  bool delegate_ref() {
    auto* dels = plan->mutable_delegates();
    if (!dels || dels->size() == 0) return false;
    fb::BackendDelegateDataReference* r =
        dels->GetMutableObject(pick_index(rng, dels))->mutable_processed();
    if (!r) return false;
    *what = "delegate_ref";
    return r->mutate_index(pick_as<uint32_t>(rng, r->index(), 4));
  }
};

bool mutate_one(fb::Program* prog, fb::ExecutionPlan* plan, std::mt19937& rng, std::string* what) {
  FieldMutator m{prog, plan, rng, what};
  switch (std::uniform_int_distribution<int>(0, 15)(rng)) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4: return m.tensor_field();  // a tensor field (most programs are tensors)
    case 5: return m.scalar_value();  // a scalar value
    case 6:
    case 7: return m.list_item();  // a list item
    case 8:
    case 9:
    case 10: return m.instruction_field();        // an instruction field
    case 11: return m.plan_io();                  // plan inputs / outputs
    case 12: return m.planned_buffer_size();      // a planned buffer size
    case 13: return m.constant_segment_offset();  // a constant segment offset
    case 14: return m.data_segment();             // a data segment
    default: return m.delegate_ref();             // a delegate's data reference
  }
}

Variant field_variant(const Bytes& orig, std::mt19937& rng, int i) {
  Aligned a(orig);
  fb::Program* prog = fb::GetMutableProgram(a.ptr());
  auto* plans = prog->mutable_execution_plan();
  std::string what = "none";
  int changed = 0;
  int want = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? 2 : 1;
  for (int tries = 0; tries < 64 && changed < want && plans && plans->size(); ++tries) {
    fb::ExecutionPlan* plan = plans->GetMutableObject(pick_index(rng, plans));
    std::string w;
    if (mutate_one(prog, plan, rng, &w)) {
      what = changed ? what + "+" + w : w;
      ++changed;
    }
  }
  return Variant{"field", "field_" + std::to_string(i) + "@" + what, a.bytes()};
}

// [begin, end) of the header and graph flatbuffer of every XNNPACK blob
// ("XH00" at offset 4 of the blob) in the file.
std::vector<std::pair<size_t, size_t>> xnnpack_blobs(const Bytes& b) {
  std::vector<std::pair<size_t, size_t>> r;
  for (size_t i = 4; i + 26 <= b.size(); ++i) {
    if (std::memcmp(&b[i], "XH00", 4) != 0) continue;
    const size_t start = i - 4;
    const uint64_t fo = rd32(b, start + 10), fs = rd32(b, start + 14);
    if (fo + fs <= b.size() - start && fs > 0) r.push_back({start + 4, size_t(start + fo + fs)});
  }
  return r;
}

Variant flip_variant(const Bytes& orig, std::mt19937& rng, int i, bool program_only,
                     const std::pair<size_t, size_t>* blob = nullptr) {
  Variant v;
  v.cls = blob ? "flip_blob" : program_only ? "flip_program" : "flip_any";
  v.data = orig;
  size_t lo = blob ? blob->first : 0;
  size_t hi = blob ? blob->second : program_only ? program_part(orig) : orig.size();
  int nflips = std::uniform_int_distribution<int>(1, 4)(rng);
  std::string where;
  for (int k = 0; k < nflips && hi > lo; ++k) {
    size_t pos = std::uniform_int_distribution<size_t>(lo, hi - 1)(rng);
    uint8_t x = static_cast<uint8_t>(std::uniform_int_distribution<int>(1, 255)(rng));
    v.data[pos] ^= x;  // never a no-op
    where += (k ? "," : "") + std::to_string(pos);
  }
  v.name = "flip_" + std::to_string(i) + "@" + where;
  return v;
}

// Deliberate faults for --self-test (kept out of the optimiser's sight).
volatile int g_sink;
int self_test(const std::string& what, Watchdog* dog) {
  if (what == "hang") {
    dog->begin("self_test_hang");
    std::this_thread::sleep_for(std::chrono::duration<double>(dog->timeout_s * 3 + 1));
    dog->end();
    std::fprintf(stderr, "pteron-fuzz: self-test hang was not caught by the watchdog\n");
    return 1;
  }
  if (what == "asan") {
    set_variant("self_test_asan");
    volatile int n = 8;
    int* p = new int[n];
    g_sink = p[n];  // one past the end
    delete[] p;
    std::fprintf(stderr, "pteron-fuzz: self-test asan was not caught\n");
    return 1;
  }
  if (what == "ubsan") {
    set_variant("self_test_ubsan");
    volatile int x = 0x7fffffff;
    g_sink = x + g_sink + 1;  // signed overflow
    std::fprintf(stderr, "pteron-fuzz: self-test ubsan was not caught\n");
    return 1;
  }
  std::fprintf(stderr, "pteron-fuzz: unknown --self-test '%s'\n", what.c_str());
  return 2;
}

bool read_file(const std::string& path, Bytes* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  (void)pteron_keep_components();
  if (argc == 2 && std::strcmp(argv[1], "--backends") == 0) {
    // The delegates registered in this process, from the registry itself.
    std::string ids;
    for (size_t i = 0; i < pteron_backend_count(); ++i) {
      pteron_backend_info info;
      if (pteron_status* s = pteron_backend_get(i, &info)) {
        pteron_status_release(s);
        continue;
      }
      ids += (ids.empty() ? "" : ",") + std::string(info.id);
    }
    std::printf("backends=%s\n", ids.c_str());
    return 0;
  }
#if defined(PTERON_FUZZ_HAVE_DEATH_CALLBACK)
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
#endif
  std::string model;
  std::vector<MethodInputs> methods;
  long flips = 1000;
  long fields = -1;  // default: half of --flips
  unsigned long seed = 1;
  double timeout_s = 10.0;
  bool execute = true, verbose = false;
  std::string self;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "pteron-fuzz: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--method") {
      methods.push_back({next(), {}});
    } else if (a == "--input") {
      std::string path = next();
      if (methods.empty()) methods.push_back({"forward", {}});
      pteron_tools::NpyArray arr;
      std::string err = pteron_tools::npy_read(path, &arr);
      if (!err.empty()) {
        std::fprintf(stderr, "pteron-fuzz: %s\n", err.c_str());
        return 2;
      }
      methods.back().inputs.push_back(std::move(arr));
    } else if (a == "--flips") {
      flips = std::strtol(next().c_str(), nullptr, 10);
    } else if (a == "--fields") {
      fields = std::strtol(next().c_str(), nullptr, 10);
    } else if (a == "--seed") {
      seed = std::strtoul(next().c_str(), nullptr, 10);
    } else if (a == "--timeout-s") {
      timeout_s = std::strtod(next().c_str(), nullptr);
    } else if (a == "--no-execute") {
      execute = false;
    } else if (a == "--self-test") {
      self = next();
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "pteron-fuzz: unknown option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    } else if (model.empty()) {
      model = a;
    } else {
      std::fprintf(stderr, "pteron-fuzz: unexpected argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (!self.empty()) {
    Watchdog dog;
    dog.timeout_s = timeout_s > 0 ? timeout_s : 1.0;
    dog.start();
    int rc = self_test(self, &dog);
    dog.finish();
    return rc;
  }
  if (model.empty() || flips < 0 || timeout_s <= 0) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  Bytes orig;
  if (!read_file(model, &orig) || orig.size() < 32) {
    std::fprintf(stderr, "pteron-fuzz: cannot read '%s' (or it is shorter than 32 bytes)\n",
                 model.c_str());
    return 2;
  }
  {
    // The unmodified program must at least load (else the fixture is wrong).
    pteron_program* p = nullptr;
    pteron_status* s = pteron_program_load_memory(orig.data(), orig.size(), &p);
    if (s) {
      std::fprintf(stderr, "pteron-fuzz: the unmodified program does not load: %s\n",
                   pteron_status_message(s));
      pteron_status_release(s);
      return 2;
    }
    pteron_program_release(p);
  }

  Watchdog dog;
  dog.timeout_s = timeout_s;
  dog.start();

  std::vector<std::string> order;
  std::map<std::string, Counts> per_class;
  Counts total;
  auto run = [&](const Variant& v) {
    set_variant(v.name);
    if (per_class.find(v.cls) == per_class.end()) order.push_back(v.cls);
    Counts& c = per_class[v.cls];
    int set_errs = 0;
    dog.begin(v.name);
    Outcome o = run_variant(v.data, methods, execute, verbose, &set_errs);
    dog.end();
    for (Counts* k : {&c, &total}) {
      if (k == &total && v.cls == "original") continue;  // the reference, not a variant
      ++k->variants;
      k->set_input += set_errs;
      switch (o) {
        case Outcome::Ok: ++k->ok; break;
        case Outcome::LoadError: ++k->load; break;
        case Outcome::MethodError: ++k->method; break;
        case Outcome::ExecError: ++k->exec; break;
      }
    }
    if (verbose)
      std::printf("variant %s class=%s outcome=%d\n", v.name.c_str(), v.cls.c_str(), int(o));
  };

  auto t0 = std::chrono::steady_clock::now();
  // The unmodified program, as a reference outcome (class "original").
  run(Variant{"original", "original", orig});
  for (const Variant& v : structural_variants(orig)) run(v);
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  const std::vector<std::pair<size_t, size_t>> blobs = xnnpack_blobs(orig);
  for (long i = 0; i < flips; ++i) {
    // Half the flips inside the flatbuffer part, so structure is hit too;
    // every 4th inside a delegate blob when there is one.
    bool program_only = (i % 2) == 0;
    const std::pair<size_t, size_t>* blob =
        (i % 4 == 3 && !blobs.empty()) ? &blobs[size_t(i / 4) % blobs.size()] : nullptr;
    run(flip_variant(orig, rng, static_cast<int>(i), program_only, blob));
  }
  if (fields < 0) fields = flips / 2;
  std::mt19937 rng_fields(static_cast<std::mt19937::result_type>(seed) ^ 0x9e3779b9u);
  for (long i = 0; i < fields; ++i) run(field_variant(orig, rng_fields, static_cast<int>(i)));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  dog.finish();

  for (const std::string& cls : order) {
    const Counts& c = per_class[cls];
    std::printf(
        "class=%s variants=%d errors=%d ok=%d load_errors=%d method_errors=%d exec_errors=%d "
        "set_input_errors=%d\n",
        cls.c_str(), c.variants, c.errors(), c.ok, c.load, c.method, c.exec, c.set_input);
  }
  std::printf("variants=%d ok=%d errors=%d seconds=%.2f\n", total.variants, total.ok,
              total.errors(), secs);
  return 0;
}
