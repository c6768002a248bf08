// SPDX-License-Identifier: BSD-3-Clause
// registry.cpp - the process's one kernel registry and one backend registry,
// and the parallel_for hook. Kernel and delegate libraries register here
// through the C ABI in pteron/kernel.h when they load.
//
// Lookup is a plain linear scan at method load (never per execution).
// Libraries are never unloaded by the registry; their entries live as long
// as the process.
#include <cstddef>
#include <deque>
#include <mutex>
#include <set>

#include "internal.h"

namespace pteron {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<KernelEntry> kernels;  // deque: stable addresses for listing
  std::deque<BackendEntry> backends;
  std::deque<GraphPassEntry> passes;
  std::deque<std::string> refused;
  std::set<std::string> warned;  // pteron_warn_once's keys
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: libraries may register late
  return *r;
}

bool same_kernel(const KernelEntry& a, const char* name, const char* overload, const char* key) {
  return a.name == name && a.overload == overload && a.key == key;
}

bool abi_ok(uint32_t abi_version, const char* library, const char* what) {
  if (abi_version == PTERON_ABI_VERSION) return true;
  std::string msg =
      format("pteron: refused %s of '%s': incompatible ABI version (component: %u, runtime: %u)",
             what, library ? library : "?", abi_version, PTERON_ABI_VERSION);
  std::fprintf(stderr, "%s\n", msg.c_str());
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().refused.push_back(std::move(msg));
  return false;
}

}  // namespace

// A keyed kernel is picked only for calls whose key equals its own; it beats
// a generic kernel (key ""); then the higher priority, then the earlier.
pteron_kernel_fn find_kernel(const std::string& name, const std::string& overload,
                             const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const KernelEntry* best = nullptr;
  bool best_keyed = false;
  for (const KernelEntry& e : r.kernels) {
    if (e.name != name || e.overload != overload) continue;
    bool keyed = !e.key.empty();
    if (keyed && e.key != key) continue;
    // A matching specialisation beats a generic kernel; then priority.
    if (!best || (keyed && !best_keyed) || (keyed == best_keyed && e.priority > best->priority)) {
      best = &e;
      best_keyed = keyed;
    }
  }
  return best ? best->fn : nullptr;
}

bool find_backend(const std::string& id, BackendEntry* out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const BackendEntry& b : r.backends)
    if (b.id == id) {
      *out = b;
      return true;
    }
  return false;
}

std::vector<GraphPassEntry> graph_passes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return std::vector<GraphPassEntry>(r.passes.begin(), r.passes.end());
}

}  // namespace pteron

using namespace pteron;

extern "C" {

int32_t pteron_register_kernels(uint32_t abi_version, const char* library,
                                const pteron_kernel_registration* kernels, size_t count) {
  if (!abi_ok(abi_version, library, "kernel registration")) return PTERON_ERROR_ABI_MISMATCH;
  if (!kernels && count) return PTERON_ERROR_INVALID_ARGUMENT;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const char* lib = library ? library : "unnamed";
  for (size_t i = 0; i < count; ++i) {
    const pteron_kernel_registration& k = kernels[i];
    if (!k.name || !k.overload || !k.fn) continue;
    const char* key = k.key ? k.key : "";
    bool dup = false;
    for (const KernelEntry& e : r.kernels)
      if (e.library == lib && same_kernel(e, k.name, k.overload, key)) dup = true;
    if (dup) continue;  // registering twice is a no-op
    r.kernels.push_back(KernelEntry{k.name, k.overload, key, lib, k.fn, k.priority});
  }
  return PTERON_OK;
}

int32_t pteron_register_backend(uint32_t abi_version, const char* library,
                                const pteron_backend_interface* b) {
  if (!abi_ok(abi_version, library, "backend registration")) return PTERON_ERROR_ABI_MISMATCH;
  if (!b || !b->id || b->struct_size < sizeof(pteron_backend_interface) || !b->init || !b->execute)
    return PTERON_ERROR_INVALID_ARGUMENT;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const BackendEntry& e : r.backends)
    if (e.id == b->id) return PTERON_OK;  // already registered: no-op
  r.backends.push_back(BackendEntry{*b, b->id, library ? library : "unnamed"});
  return PTERON_OK;
}

int32_t pteron_register_graph_pass(uint32_t abi_version, const char* library,
                                   const pteron_graph_pass* p) {
  if (!abi_ok(abi_version, library, "graph pass registration")) return PTERON_ERROR_ABI_MISMATCH;
  if (!p || !p->name || !p->run || p->struct_size < sizeof(pteron_graph_pass))
    return PTERON_ERROR_INVALID_ARGUMENT;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const GraphPassEntry& e : r.passes)
    if (e.name == p->name) return PTERON_OK;  // already registered: no-op
  r.passes.push_back(GraphPassEntry{*p, p->name, library ? library : "unnamed"});
  return PTERON_OK;
}

const char* pteron_kernel_key_for_dtype(int32_t dtype) {
  // One static string per scalar type of the format, built on first use.
  static constexpr int32_t kLast = static_cast<int32_t>(fb::ScalarType::MAX);
  static const std::vector<std::string>* keys = [] {
    auto* k = new std::vector<std::string>(kLast + 1);  // never destroyed, as the registry
    for (int32_t d = 0; d <= kLast; ++d)
      if (element_size(d) != 0) (*k)[d] = format("dtype=%d", d);
    return k;
  }();
  if (dtype < 0 || dtype > kLast || (*keys)[dtype].empty()) return nullptr;
  return (*keys)[dtype].c_str();
}

size_t pteron_kernel_count(void) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.kernels.size();
}

pteron_status* pteron_kernel_get(size_t index, pteron_kernel_info* info) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!info) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "info is NULL"));
  if (index >= r.kernels.size())
    return to_c(error(PTERON_ERROR_NOT_FOUND, "kernel index %zu out of range (%zu kernels)", index,
                      r.kernels.size()));
  const KernelEntry& e = r.kernels[index];
  bool selected = true;
  for (const KernelEntry& o : r.kernels)
    if (&o != &e && same_kernel(o, e.name.c_str(), e.overload.c_str(), e.key.c_str()) &&
        (o.priority > e.priority || (o.priority == e.priority && &o < &e)))
      selected = false;
  info->name = e.name.c_str();
  info->overload = e.overload.c_str();
  info->key = e.key.c_str();
  info->library = e.library.c_str();
  info->priority = e.priority;
  info->selected = selected ? 1 : 0;
  return nullptr;
}

size_t pteron_backend_count(void) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.backends.size();
}

pteron_status* pteron_backend_get(size_t index, pteron_backend_info* info) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!info) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "info is NULL"));
  if (index >= r.backends.size())
    return to_c(error(PTERON_ERROR_NOT_FOUND, "backend index %zu out of range (%zu backends)",
                      index, r.backends.size()));
  const BackendEntry& b = r.backends[index];
  info->id = b.id.c_str();
  info->library = b.library.c_str();
  info->available = b.iface.is_available ? b.iface.is_available() : 1;
  info->reserved0 = 0;
  return nullptr;
}

size_t pteron_registration_error_count(void) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.refused.size();
}

const char* pteron_registration_error(size_t index) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return index < r.refused.size() ? r.refused[index].c_str() : nullptr;
}

int32_t pteron_warn_once(const char* key, const char* message) {
  if (!key || !message) return 0;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.warned.insert(key).second) return 0;
  // One line whatever the message quotes (an environment variable's value): control bytes
  // as \xNN, so nothing reaches the terminal as a line break or an escape sequence.
  std::string line;
  for (const char* c = message; *c; ++c) {
    const unsigned char b = static_cast<unsigned char>(*c);
    if (b < 0x20 || b == 0x7f)
      line += format("\\x%02x", b);
    else
      line += *c;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  return 1;
}

// ---- parallel_for ----

static std::atomic<const pteron_parallel_backend*> g_parallel{nullptr};

void pteron_parallel_for(int64_t begin, int64_t end, int64_t grain, pteron_range_fn fn,
                         void* user) {
  if (!fn || end <= begin) return;
  const pteron_parallel_backend* b = g_parallel.load(std::memory_order_acquire);
  if (b && b->run) {
    b->run(begin, end, grain, fn, user);
    return;
  }
  fn(user, begin, end);
}

int32_t pteron_set_parallel_backend(uint32_t abi_version, const pteron_parallel_backend* b) {
  if (!abi_ok(abi_version, "threadpool", "parallel backend")) return PTERON_ERROR_ABI_MISMATCH;
  // A backend from before `wake` ends at `threads` (the struct only grows).
  if (b && b->struct_size < offsetof(pteron_parallel_backend, wake))
    return PTERON_ERROR_INVALID_ARGUMENT;
  g_parallel.store(b, std::memory_order_release);
  return PTERON_OK;
}

void pteron_parallel_wake(void) {
  const pteron_parallel_backend* b = g_parallel.load(std::memory_order_acquire);
  if (b && b->struct_size >= offsetof(pteron_parallel_backend, wake) + sizeof(b->wake) && b->wake)
    b->wake();
}

int32_t pteron_parallel_threads(void) {
  const pteron_parallel_backend* b = g_parallel.load(std::memory_order_acquire);
  return (b && b->threads) ? b->threads() : 1;
}

}  // extern "C"
