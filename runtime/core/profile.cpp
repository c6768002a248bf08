// SPDX-License-Identifier: BSD-3-Clause
// profile.cpp - the profiling C API (pteron.h, "Profiling"), the delegates'
// side of it (kernel.h, "profiling") and the ETDump writer.
//
// The ETDump file is a size-prefixed flatbuffer of schema/etdump.fbs,
// identifier "ED00": one RunData block named "Default" with method load's
// events, then one named "Execute" per recorded execute, as upstream's
// runtime writes them (its Inspector reads the blocks by these names).
#include "profile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#if defined(_WIN32)
#include <windows.h>
#endif

#include "etdump_generated.h"
#include "method.h"

namespace pteron {

int32_t Profile::intern(const char* s) {
  if (!s) return -1;
  auto it = index.find(s);
  if (it != index.end()) return it->second;
  const int32_t id = static_cast<int32_t>(strings.size());
  strings.emplace_back(s);
  index.emplace(strings.back(), id);
  return id;
}

void Profile::clear() {
  events.clear();
  runs = 0;
}

namespace {

// The ETDump bytes of `p`'s events.
std::vector<uint8_t> etdump_bytes(const Profile& p) {
  flatbuffers::FlatBufferBuilder b(4096);
  auto event = [&](const ProfileEvent& e) {
    auto name = e.name >= 0 ? b.CreateString(p.strings[size_t(e.name)])
                            : flatbuffers::Offset<flatbuffers::String>();
    auto dname = e.debug_name >= 0 ? b.CreateString(p.strings[size_t(e.debug_name)])
                                   : flatbuffers::Offset<flatbuffers::String>();
    // A named delegate event is written by its name alone, as upstream's XNNPACK delegate
    // writes its operators (the Inspector shows the integer id instead of the name when both
    // are set); an unnamed one by its integer id.
    const int32_t id = e.debug_name >= 0 ? -1 : e.debug_id;
    auto pe = etdump::CreateProfileEvent(b, name, e.chain, e.instruction, id, dname, 0, e.start_ns,
                                         e.end_ns);
    return etdump::CreateEvent(b, pe);
  };
  std::vector<flatbuffers::Offset<etdump::RunData>> runs;
  auto block = [&](const char* block_name, const ProfileEvent* first, const ProfileEvent* last) {
    std::vector<flatbuffers::Offset<etdump::Event>> evs;
    for (const ProfileEvent* e = first; e != last; ++e) evs.push_back(event(*e));
    auto n = b.CreateString(block_name);
    auto v = b.CreateVector(evs);
    std::vector<flatbuffers::Offset<etdump::Allocator>> none;
    runs.push_back(etdump::CreateRunData(b, n, -1, b.CreateVector(none), v));
  };
  block("Default", p.load.data(), p.load.data() + p.load.size());
  size_t i = 0;
  while (i < p.events.size()) {
    size_t j = i;
    while (j < p.events.size() && p.events[j].run == p.events[i].run) ++j;
    block("Execute", p.events.data() + i, p.events.data() + j);
    i = j;
  }
  auto root = etdump::CreateETDump(b, 0, b.CreateVector(runs));
  b.FinishSizePrefixed(root, etdump::ETDumpIdentifier());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

FILE* open_for_writing(const char* path) {
#if defined(_WIN32)
  int wn = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, nullptr, 0);
  if (wn <= 0) return nullptr;
  std::wstring w(static_cast<size_t>(wn), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, path, -1, &w[0], wn);
  return _wfopen(w.c_str(), L"wb");
#else
  return std::fopen(path, "wb");
#endif
}

}  // namespace
}  // namespace pteron

using pteron::error;
using pteron::to_c;

extern "C" {

pteron_status* pteron_method_set_profiling(pteron_method* m, int32_t enabled) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  m->profile.on = enabled != 0;
  return nullptr;
}

size_t pteron_method_profile_event_count(const pteron_method* m) {
  if (!m) return 0;
  std::lock_guard<std::mutex> lock(m->call_mutex);
  return m->profile.load.size() + m->profile.events.size();
}

pteron_status* pteron_method_profile_event(const pteron_method* m, size_t index,
                                           pteron_profile_event* out) {
  if (!m || !out) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method or out is NULL"));
  if (out->struct_size < sizeof(pteron_profile_event))
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                      "pteron_profile_event struct_size %u is below %zu", out->struct_size,
                      sizeof(pteron_profile_event)));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  const pteron::Profile& p = m->profile;
  const size_t n = p.load.size() + p.events.size();
  if (index >= n)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                      "profile event %zu of method '%s' does not exist (it has %zu)", index,
                      m->name.c_str(), n));
  const pteron::ProfileEvent& e =
      index < p.load.size() ? p.load[index] : p.events[index - p.load.size()];
  const uint32_t size = out->struct_size;
  std::memset(out, 0, sizeof *out);
  out->struct_size = size;
  out->run = e.run;
  out->name = e.name >= 0 ? p.strings[size_t(e.name)].c_str() : nullptr;
  out->chain_index = e.chain;
  out->instruction_id = e.instruction;
  out->delegate_debug_id = e.debug_id;
  out->delegate_debug_name = e.debug_name >= 0 ? p.strings[size_t(e.debug_name)].c_str() : nullptr;
  out->start_ns = e.start_ns;
  out->end_ns = e.end_ns;
  return nullptr;
}

void pteron_method_profile_clear(pteron_method* m) {
  if (!m) return;
  std::lock_guard<std::mutex> lock(m->call_mutex);
  m->profile.clear();
}

pteron_status* pteron_method_write_etdump(const pteron_method* m, const char* path) {
  if (!m || !path) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method or path is NULL"));
  std::vector<uint8_t> bytes;
  {
    std::lock_guard<std::mutex> lock(m->call_mutex);
    bytes = pteron::etdump_bytes(m->profile);
  }
  FILE* f = pteron::open_for_writing(path);
  if (!f)
    return to_c(error(PTERON_ERROR_IO, "cannot write ETDump file '%s': %s", path,
                      std::strerror(errno)));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed)
    return to_c(error(PTERON_ERROR_IO, "cannot write ETDump file '%s': %s", path,
                      std::strerror(errno)));
  return nullptr;
}

int32_t pteron_profiling_enabled(const pteron_kernel_context* ctx) {
  return ctx && ctx->profile ? 1 : 0;
}

uint64_t pteron_profile_clock_ns(void) { return pteron::profile_clock_ns(); }

int32_t pteron_profile_delegate_event(pteron_kernel_context* ctx, const char* name,
                                      int32_t debug_id, uint64_t start_ns, uint64_t end_ns) {
  if (!ctx || end_ns < start_ns) return PTERON_ERROR_INVALID_ARGUMENT;
  pteron::Profile* p = ctx->profile;
  if (!p) return PTERON_OK;
  p->events.push_back(
      {p->runs, -1, p->chain, p->instruction, debug_id, p->intern(name), start_ns, end_ns});
  return PTERON_OK;
}

}  // extern "C"
