// SPDX-License-Identifier: BSD-3-Clause
// program.cpp - data loaders and the program reader.
//
// Reading order: bytes (file mapping or copy) -> header checks (identifier,
// extended header) -> flatbuffers Verifier over the flatbuffer part ->
// segment table checks. Everything a method later reads through the program
// (segments, constants, named data) is range-checked again at use.
#include <cstdlib>
#include <cstring>
#include <new>

#include "internal.h"

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace pteron {
namespace {

// Owned copy, 64-byte aligned.
class OwnedBytes final : public Bytes {
 public:
  explicit OwnedBytes(size_t n) : raw_(static_cast<uint8_t*>(std::malloc(n + 64))), size_(n) {
    if (raw_) {
      uintptr_t p = reinterpret_cast<uintptr_t>(raw_);
      aligned_ = reinterpret_cast<uint8_t*>((p + 63) & ~static_cast<uintptr_t>(63));
    }
  }
  ~OwnedBytes() override { std::free(raw_); }
  bool ok() const { return raw_ != nullptr; }
  const uint8_t* data() const override { return aligned_; }
  uint8_t* mutable_data() override { return aligned_; }
  size_t size() const override { return size_; }

 private:
  uint8_t* raw_;
  uint8_t* aligned_ = nullptr;
  size_t size_;
};

#if defined(_WIN32)
class MappedBytes final : public Bytes {
 public:
  MappedBytes(HANDLE file, HANDLE mapping, uint8_t* view, size_t n)
      : file_(file), mapping_(mapping), view_(view), size_(n) {}
  ~MappedBytes() override {
    UnmapViewOfFile(view_);
    CloseHandle(mapping_);
    CloseHandle(file_);
  }
  const uint8_t* data() const override { return view_; }
  uint8_t* mutable_data() override { return view_; }
  size_t size() const override { return size_; }

 private:
  HANDLE file_, mapping_;
  uint8_t* view_;
  size_t size_;
};
#else
class MappedBytes final : public Bytes {
 public:
  MappedBytes(void* p, size_t n) : p_(static_cast<uint8_t*>(p)), size_(n) {}
  ~MappedBytes() override { munmap(p_, size_); }
  const uint8_t* data() const override { return p_; }
  uint8_t* mutable_data() override { return p_; }
  size_t size() const override { return size_; }

 private:
  uint8_t* p_;
  size_t size_;
};
#endif

uint32_t read_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t read_u64(const uint8_t* p) {
  return uint64_t(read_u32(p)) | uint64_t(read_u32(p + 4)) << 32;
}

// The flatbuffers verifier checks only the 4-byte length field of a vector
// for alignment. The runtime (and kernels, for DoubleList items) read 8-byte
// elements in place, so every vector of 8-byte scalars must be 8-aligned.
template <typename T>
bool aligned_vector(const flatbuffers::Vector<T>* v) {
  return !v || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

Status check_wide_vectors(const fb::Program* root) {
  auto bad = [](const char* what) {
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s is not aligned to its 8-byte elements", what);
  };
  if (root->constant_segment() && !aligned_vector(root->constant_segment()->offsets()))
    return bad("constant segment offsets vector");
  if (const auto* mds = root->mutable_data_segments())
    for (uint32_t i = 0; i < mds->size(); ++i)
      if (!aligned_vector(mds->Get(i)->offsets()))
        return bad("mutable data segment offsets vector");
  const auto* plans = root->execution_plan();
  for (uint32_t e = 0; plans && e < plans->size(); ++e) {
    const fb::ExecutionPlan* plan = plans->Get(e);
    if (!aligned_vector(plan->non_const_buffer_sizes())) return bad("planned buffer sizes vector");
    const auto* vals = plan->values();
    for (uint32_t i = 0; vals && i < vals->size(); ++i) {
      const fb::EValue* ev = vals->Get(i);
      if (const fb::IntList* il = ev->val_as_IntList())
        if (!aligned_vector(il->items())) return bad("IntList items vector");
      if (const fb::DoubleList* dl = ev->val_as_DoubleList())
        if (!aligned_vector(dl->items())) return bad("DoubleList items vector");
    }
  }
  return Status::Ok();
}

}  // namespace

Status copy_bytes(const void* data, size_t size, std::unique_ptr<Bytes>* out) {
  if (!data && size) return error(PTERON_ERROR_INVALID_ARGUMENT, "program data is NULL");
  auto b = std::unique_ptr<OwnedBytes>(new (std::nothrow) OwnedBytes(size));
  if (!b || !b->ok())
    return error(PTERON_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes for the program", size);
  if (size) std::memcpy(b->mutable_data(), data, size);
  *out = std::move(b);
  return Status::Ok();
}

#if defined(_WIN32)
// The system's text for a Windows error code, without the trailing newline.
std::string windows_error_text(DWORD code) {
  char buf[256] = {0};
  DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr,
                           code, 0, buf, sizeof buf, nullptr);
  while (n > 0 &&
         (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '.'))
    buf[--n] = '\0';
  return n ? std::string(buf, n) : std::string("unknown error");
}
#endif

Status map_file(const char* path, std::unique_ptr<Bytes>* out, const char* what) {
  if (!path) return error(PTERON_ERROR_INVALID_ARGUMENT, "%s path is NULL", what);
#if defined(_WIN32)
  int wn = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, nullptr, 0);
  if (wn <= 0) return error(PTERON_ERROR_INVALID_ARGUMENT, "path is not valid UTF-8: %s", path);
  std::wstring wpath(static_cast<size_t>(wn), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, path, -1, &wpath[0], wn);
  const DWORD attrs = GetFileAttributesW(wpath.c_str());
  if (attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY))
    return error(PTERON_ERROR_IO, "%s path '%s' is not a regular file", what, path);
  HANDLE f = CreateFileW(wpath.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                         FILE_ATTRIBUTE_NORMAL, nullptr);
  if (f == INVALID_HANDLE_VALUE) {
    const DWORD code = GetLastError();
    return error(PTERON_ERROR_IO, "cannot open %s file '%s': %s (Windows error %lu)", what, path,
                 windows_error_text(code).c_str(), code);
  }
  LARGE_INTEGER sz;
  if (!GetFileSizeEx(f, &sz)) {
    CloseHandle(f);
    return error(PTERON_ERROR_IO, "cannot read the size of '%s'", path);
  }
  if (sz.QuadPart == 0) {
    CloseHandle(f);
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s file '%s' is empty", what, path);
  }
  HANDLE m = CreateFileMappingW(f, nullptr, PAGE_WRITECOPY, 0, 0, nullptr);
  if (!m) {
    CloseHandle(f);
    return error(PTERON_ERROR_IO, "cannot map %s file '%s'", what, path);
  }
  void* v = MapViewOfFile(m, FILE_MAP_COPY, 0, 0, 0);
  if (!v) {
    CloseHandle(m);
    CloseHandle(f);
    return error(PTERON_ERROR_IO, "cannot map %s file '%s'", what, path);
  }
  out->reset(new MappedBytes(f, m, static_cast<uint8_t*>(v), static_cast<size_t>(sz.QuadPart)));
  return Status::Ok();
#else
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // before fstat could refuse it. It has no effect on regular files.
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return error(PTERON_ERROR_IO, "cannot open %s file '%s': %s", what, path, std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(PTERON_ERROR_IO, "%s path '%s' is not a regular file", what, path);
  }
  if (st.st_size == 0) {
    ::close(fd);
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s file '%s' is empty", what, path);
  }
  // Copy-on-write: a kernel that writes a constant never touches the file.
  void* p =
      mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    return error(PTERON_ERROR_IO, "cannot map %s file '%s': %s", what, path, std::strerror(errno));
  out->reset(new MappedBytes(p, static_cast<size_t>(st.st_size)));
  return Status::Ok();
#endif
}

}  // namespace pteron

using namespace pteron;

Status pteron_program::segment(uint32_t index, const uint8_t** data, size_t* size) const {
  const auto* segs = root->segments();
  if (!segs || index >= segs->size())
    return error(PTERON_ERROR_INVALID_PROGRAM, "segment index %u out of range (%u segments)", index,
                 segs ? segs->size() : 0u);
  const fb::DataSegment* s = segs->Get(index);
  if (!s) return error(PTERON_ERROR_INVALID_PROGRAM, "segment %u is missing", index);
  uint64_t off = s->offset(), n = s->size(), total = bytes->size();
  if (!has_segments && n == 0) {
    // A program without segment data may still list empty segments.
    *data = bytes->data() + program_size;
    *size = 0;
    return Status::Ok();
  }
  if (!has_segments || segment_base > total || off > total - segment_base ||
      n > total - segment_base - off)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "segment %u (offset %llu, size %llu) lies outside the file (%llu bytes)", index,
                 (unsigned long long)off, (unsigned long long)n, (unsigned long long)total);
  *data = bytes->data() + segment_base + off;
  *size = static_cast<size_t>(n);
  return Status::Ok();
}

Status pteron_program::constant(uint32_t idx, size_t nbytes, const uint8_t** data) const {
  const fb::SubsegmentOffsets* cs = root->constant_segment();
  if (cs && cs->offsets() && cs->offsets()->size() > 0) {
    const uint8_t* seg;
    size_t seg_size;
    Status s = segment(cs->segment_index(), &seg, &seg_size);
    if (!s.ok()) return error(s.code, "constant segment: %s", s.message.c_str());
    if (idx >= cs->offsets()->size())
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "constant buffer index %u out of range (%u constants)", idx,
                   cs->offsets()->size());
    uint64_t off = cs->offsets()->Get(idx);
    if (off > seg_size || nbytes > seg_size - off)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "constant %u (offset %llu, %zu bytes) lies outside the constant segment "
                   "(%zu bytes)",
                   idx, (unsigned long long)off, nbytes, seg_size);
    *data = seg + off;
    return Status::Ok();
  }
  const auto* cb = root->constant_buffer();
  if (!cb || idx >= cb->size())
    return error(PTERON_ERROR_INVALID_PROGRAM, "constant buffer index %u out of range (%u buffers)",
                 idx, cb ? cb->size() : 0u);
  const fb::Buffer* b = cb->Get(idx);
  if (!b || !b->storage() || b->storage()->size() < nbytes)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "inline constant buffer %u holds %u bytes, tensor needs %zu", idx,
                 (b && b->storage()) ? b->storage()->size() : 0u, nbytes);
  *data = b->storage()->data();
  return Status::Ok();
}

Status pteron_program::mutable_data(uint64_t segs_idx, uint32_t idx, size_t nbytes,
                                    const uint8_t** data) const {
  const auto* mds = root->mutable_data_segments();
  if (!mds || segs_idx >= mds->size())
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "initial state %u is in mutable data segment %llu, the program has %u", idx,
                 (unsigned long long)segs_idx, mds ? mds->size() : 0u);
  const fb::SubsegmentOffsets* so = mds->Get(static_cast<uint32_t>(segs_idx));
  const auto* offs = so->offsets();
  if (!offs || idx >= offs->size())
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "initial state index %u out of range (mutable data segment %llu holds %u)", idx,
                 (unsigned long long)segs_idx, offs ? offs->size() : 0u);
  const uint8_t* seg;
  size_t seg_size;
  Status s = segment(so->segment_index(), &seg, &seg_size);
  if (!s.ok()) return error(s.code, "mutable data segment: %s", s.message.c_str());
  // Entry idx spans up to the next entry's offset, the last one up to the
  // end of the segment (upstream writes them back to back, unpadded).
  const uint64_t off = offs->Get(idx);
  const uint64_t end = idx + 1 < offs->size() ? offs->Get(idx + 1) : seg_size;
  if (off > seg_size || end > seg_size || end < off)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "initial state %u (offset %llu) lies outside its mutable data segment "
                 "(%zu bytes)",
                 idx, (unsigned long long)off, seg_size);
  if (end - off < nbytes)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "initial state %u holds %llu bytes, the tensor needs %zu", idx,
                 (unsigned long long)(end - off), nbytes);
  *data = seg + off;
  return Status::Ok();
}

Status pteron_program::named_data(const char* key, const uint8_t** data, size_t* size) const {
  const auto* nd = root->named_data();
  if (nd && key) {
    for (uint32_t i = 0; i < nd->size(); ++i) {
      const fb::NamedData* e = nd->Get(i);
      if (e && e->key() && std::strcmp(e->key()->c_str(), key) == 0)
        return segment(e->segment_index(), data, size);
    }
  }
  if (data_file && key)
    if (const ft::NamedData* e = data_file->find(key)) return data_file->entry_bytes(e, data, size);
  return error(PTERON_ERROR_NOT_FOUND, "no named data with key '%s'%s", key ? key : "(null)",
               data_file ? " in the program or its data file" : "");
}

const fb::ExecutionPlan* pteron_program::plan(const char* name) const {
  const auto* plans = root->execution_plan();
  if (!plans || !name) return nullptr;
  for (uint32_t i = 0; i < plans->size(); ++i) {
    const fb::ExecutionPlan* p = plans->Get(i);
    if (p && p->name() && std::strcmp(p->name()->c_str(), name) == 0) return p;
  }
  return nullptr;
}

Status load_program(std::unique_ptr<Bytes> bytes, pteron_program** out) {
  const uint8_t* d = bytes->data();
  const size_t n = bytes->size();
  if (n < 8)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "program is truncated: %zu bytes, a .pte file has at least 8", n);
  if (std::memcmp(d + 4, "ET12", 4) != 0) {
    char id[5];
    for (int i = 0; i < 4; ++i) id[i] = (d[4 + i] >= 32 && d[4 + i] < 127) ? char(d[4 + i]) : '?';
    id[4] = 0;
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "not an ExecuTorch program: file identifier is '%s', expected 'ET12'", id);
  }
  size_t program_size = n;
  uint64_t segment_base = 0;
  bool has_segments = false;
  if (n >= 12 && std::memcmp(d + 8, "eh00", 4) == 0) {
    if (n < 32)
      return error(PTERON_ERROR_INVALID_PROGRAM, "extended header is truncated (%zu bytes)", n);
    uint32_t len = read_u32(d + 12);
    if (len < 24 || len > n - 8)
      return error(PTERON_ERROR_INVALID_PROGRAM, "extended header length %u is invalid", len);
    uint64_t psize = read_u64(d + 16);
    uint64_t base = read_u64(d + 24);
    if (psize < 8 + len || psize > n)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "extended header declares a %llu-byte program, the file has %zu bytes "
                   "(truncated?)",
                   (unsigned long long)psize, n);
    if (base != 0) {
      if (base < psize || base > n)
        return error(PTERON_ERROR_INVALID_PROGRAM,
                     "segment base offset %llu lies outside the file (%zu bytes)",
                     (unsigned long long)base, n);
      if (len >= 32) {
        uint64_t seg_size = read_u64(d + 32);
        if (seg_size > n - base)
          return error(PTERON_ERROR_INVALID_PROGRAM,
                       "segment data (%llu bytes at offset %llu) extends past the end of the "
                       "file (%zu bytes): truncated?",
                       (unsigned long long)seg_size, (unsigned long long)base, n);
      }
      has_segments = true;
    }
    program_size = static_cast<size_t>(psize);
    segment_base = base;
  }
  if (reinterpret_cast<uintptr_t>(d) % 16 != 0) {
    // Flatbuffer alignment guarantees need an aligned base; copy if not.
    return error(PTERON_ERROR_INTERNAL, "program bytes are not 16-byte aligned");
  }
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 128;
  opts.max_tables = 50000000;
  opts.check_alignment = true;
  flatbuffers::Verifier verifier(d, program_size, opts);
  if (!fb::VerifyProgramBuffer(verifier))
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "program flatbuffer failed verification (%zu bytes): corrupt or truncated",
                 program_size);
  const fb::Program* root = fb::GetProgram(d);
  if (!root->execution_plan() || root->execution_plan()->size() == 0)
    return error(PTERON_ERROR_INVALID_PROGRAM, "program has no execution plan (method)");
  {
    Status s = check_wide_vectors(root);
    if (!s.ok()) return s;
  }
  auto* p = new (std::nothrow) pteron_program;
  if (!p) return error(PTERON_ERROR_OUT_OF_MEMORY, "cannot allocate a program");
  p->bytes = std::move(bytes);
  p->root = root;
  p->program_size = program_size;
  p->segment_base = segment_base;
  p->has_segments = has_segments;
  // Check every segment range once, up front.
  if (root->segments()) {
    for (uint32_t i = 0; i < root->segments()->size(); ++i) {
      const uint8_t* sd;
      size_t ss;
      Status s = p->segment(i, &sd, &ss);
      if (!s.ok()) {
        delete p;
        return s;
      }
    }
  }
  *out = p;
  return Status::Ok();
}

extern "C" {

pteron_status* pteron_program_load_file(const char* path, pteron_program** out) {
  if (!out) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "out is NULL"));
  *out = nullptr;
  std::unique_ptr<Bytes> b;
  Status s = map_file(path, &b);
  if (!s.ok()) return to_c(s);
  if (reinterpret_cast<uintptr_t>(b->data()) % 16 != 0) {
    std::unique_ptr<Bytes> c;
    s = copy_bytes(b->data(), b->size(), &c);
    if (!s.ok()) return to_c(s);
    b = std::move(c);
  }
  s = load_program(std::move(b), out);
  if (!s.ok() && path) s.message += std::string(" [") + path + "]";
  return to_c(s);
}

pteron_status* pteron_program_load_memory(const void* data, size_t size, pteron_program** out) {
  if (!out) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "out is NULL"));
  *out = nullptr;
  std::unique_ptr<Bytes> b;
  Status s = copy_bytes(data, size, &b);
  if (!s.ok()) return to_c(s);
  return to_c(load_program(std::move(b), out));
}

// Attaches data file bytes `b` (named `name`) to the loaded program *out;
// releases the program on failure.
static pteron_status* attach_data(std::unique_ptr<Bytes> b, const std::string& name,
                                  pteron_program** out) {
  std::unique_ptr<DataFile> f;
  Status s = load_data_file(std::move(b), name, &f);
  if (!s.ok()) {
    pteron_program_release(*out);
    *out = nullptr;
    return to_c(s);
  }
  (*out)->data_file = std::move(f);
  return nullptr;
}

pteron_status* pteron_program_load_file_with_data(const char* path, const char* data_path,
                                                  pteron_program** out) {
  if (!out) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "out is NULL"));
  *out = nullptr;
  pteron_status* st = pteron_program_load_file(path, out);
  if (st || !data_path) return st;
  std::unique_ptr<Bytes> b;
  Status s = map_file(data_path, &b, "data");
  if (s.ok() && reinterpret_cast<uintptr_t>(b->data()) % 16 != 0) {
    std::unique_ptr<Bytes> c;
    s = copy_bytes(b->data(), b->size(), &c);
    b = std::move(c);
  }
  if (!s.ok()) {
    pteron_program_release(*out);
    *out = nullptr;
    return to_c(s);
  }
  return attach_data(std::move(b), std::string("'") + data_path + "'", out);
}

pteron_status* pteron_program_load_memory_with_data(const void* data, size_t size,
                                                    const void* data_file, size_t data_size,
                                                    pteron_program** out) {
  if (!out) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "out is NULL"));
  *out = nullptr;
  if (!data_file && data_size)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "data file bytes are NULL"));
  pteron_status* st = pteron_program_load_memory(data, size, out);
  if (st || !data_file) return st;
  std::unique_ptr<Bytes> b;
  Status s = copy_bytes(data_file, data_size, &b);
  if (!s.ok()) {
    pteron_program_release(*out);
    *out = nullptr;
    return to_c(s);
  }
  return attach_data(std::move(b), "(data buffer)", out);
}

int32_t pteron_program_has_data_file(const pteron_program* p) {
  return (p && p->data_file) ? 1 : 0;
}

void pteron_program_release(pteron_program* p) {
  if (p && p->refs.fetch_sub(1) == 1) delete p;
}

size_t pteron_program_method_count(const pteron_program* p) {
  return (p && p->root->execution_plan()) ? p->root->execution_plan()->size() : 0;
}

pteron_status* pteron_program_method_name(const pteron_program* p, size_t index,
                                          const char** name) {
  if (!p || !name) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "program or name is NULL"));
  size_t n = pteron_program_method_count(p);
  if (index >= n)
    return to_c(
        error(PTERON_ERROR_NOT_FOUND, "method index %zu out of range (%zu methods)", index, n));
  const fb::ExecutionPlan* plan = p->root->execution_plan()->Get(static_cast<uint32_t>(index));
  *name = (plan && plan->name()) ? plan->name()->c_str() : "";
  return nullptr;
}

pteron_status* pteron_program_planned_buffer_sizes(const pteron_program* p, const char* method_name,
                                                   int64_t* sizes, size_t capacity, size_t* count) {
  if (!p || !count) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "program or count is NULL"));
  const fb::ExecutionPlan* plan = p->plan(method_name);
  if (!plan)
    return to_c(error(PTERON_ERROR_NOT_FOUND, "program has no method '%s'",
                      method_name ? method_name : "(null)"));
  const auto* b = plan->non_const_buffer_sizes();
  size_t n = (b && b->size() > 0) ? b->size() - 1 : 0;  // entry 0 is reserved
  *count = n;
  for (size_t i = 0; i < n && i < capacity && sizes; ++i)
    sizes[i] = b->Get(static_cast<uint32_t>(i + 1));
  return nullptr;
}

}  // extern "C"
