// SPDX-License-Identifier: BSD-3-Clause
// data_file.cpp - the reader of external data files (.ptd, the FlatTensor
// format of schema/flat_tensor.fbs), loaded together with a program.
//
// Reading order, as for a program: bytes -> identifier "FT01" and header
// "FH01" checks -> flatbuffers Verifier over the flatbuffer part -> every
// entry's segment range. Method load then finds tensors in it by key
// (method_load.cpp) and delegates find their named data (resolve.cpp).
#include <cstring>
#include <new>

#include "internal.h"

namespace pteron {
namespace {

uint32_t read_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t read_u64(const uint8_t* p) {
  return uint64_t(read_u32(p)) | uint64_t(read_u32(p + 4)) << 32;
}

// Header fields after the identifier (upstream's FlatTensorHeader): magic,
// length, then four u64. 40 bytes is the length upstream 1.5.1 writes.
constexpr size_t kHeaderOffset = 8;
constexpr uint32_t kHeaderMinLength = 40;

}  // namespace

const ft::NamedData* DataFile::find(const char* key) const {
  const auto* nd = root->named_data();
  if (!nd || !key) return nullptr;
  for (uint32_t i = 0; i < nd->size(); ++i) {
    const ft::NamedData* e = nd->Get(i);
    if (e && e->key() && std::strcmp(e->key()->c_str(), key) == 0) return e;
  }
  return nullptr;
}

Status DataFile::entry_bytes(const ft::NamedData* e, const uint8_t** data, size_t* size) const {
  const auto* segs = root->segments();
  const char* key = e->key() ? e->key()->c_str() : "";
  if (!segs || e->segment_index() >= segs->size())
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "data file %s: entry '%s' refers to segment %u, the file has %u segments",
                 name.c_str(), printable(key).c_str(), e->segment_index(),
                 segs ? segs->size() : 0u);
  const ft::DataSegment* s = segs->Get(e->segment_index());
  // Ranges were checked at load; checked again so no caller can read past the end.
  const uint64_t total = bytes->size(), off = s->offset(), n = s->size();
  if (segment_base > total || off > total - segment_base || n > total - segment_base - off)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "data file %s: segment %u (offset %llu, size %llu) lies outside the file "
                 "(%llu bytes)",
                 name.c_str(), e->segment_index(), (unsigned long long)off, (unsigned long long)n,
                 (unsigned long long)total);
  *data = bytes->data() + segment_base + off;
  *size = static_cast<size_t>(n);
  return Status::Ok();
}

Status load_data_file(std::unique_ptr<Bytes> bytes, const std::string& name,
                      std::unique_ptr<DataFile>* out) {
  const uint8_t* d = bytes->data();
  const size_t n = bytes->size();
  const char* nm = name.c_str();
  if (n < kHeaderOffset + kHeaderMinLength)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "data file %s is truncated: %zu bytes, a .ptd file has at least %u", nm, n,
                 unsigned(kHeaderOffset + kHeaderMinLength));
  if (std::memcmp(d + 4, "FT01", 4) != 0) {
    char id[5];
    for (int i = 0; i < 4; ++i) id[i] = (d[4 + i] >= 32 && d[4 + i] < 127) ? char(d[4 + i]) : '?';
    id[4] = 0;
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "data file %s is not an ExecuTorch data file (.ptd): file identifier is '%s', "
                 "expected 'FT01'",
                 nm, id);
  }
  const uint8_t* h = d + kHeaderOffset;
  if (std::memcmp(h, "FH01", 4) != 0)
    return error(PTERON_ERROR_INVALID_PROGRAM, "data file %s has no 'FH01' header at offset 8", nm);
  const uint32_t len = read_u32(h + 4);
  if (len < kHeaderMinLength || len > n - kHeaderOffset)
    return error(PTERON_ERROR_INVALID_PROGRAM, "data file %s: header length %u is invalid", nm,
                 len);
  // fb_off is the length of the header as inserted (padded): the flatbuffer,
  // header included, occupies [0, fb_off + fb_size).
  const uint64_t fb_off = read_u64(h + 8), fb_size = read_u64(h + 16);
  const uint64_t seg_base = read_u64(h + 24), seg_size = read_u64(h + 32);
  if (fb_off < len || fb_off > n || fb_size > n - fb_off || fb_size == 0)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "data file %s: flatbuffer (%llu bytes at offset %llu) lies outside the file "
                 "(%zu bytes): truncated?",
                 nm, (unsigned long long)fb_size, (unsigned long long)fb_off, n);
  const uint64_t fb_end = fb_off + fb_size;
  if (seg_base < fb_end || seg_base > n || seg_size > n - seg_base)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "data file %s: segment data (%llu bytes at offset %llu) lies outside the file "
                 "(%zu bytes): truncated?",
                 nm, (unsigned long long)seg_size, (unsigned long long)seg_base, n);
  if (reinterpret_cast<uintptr_t>(d) % 16 != 0)
    return error(PTERON_ERROR_INTERNAL, "data file %s: bytes are not 16-byte aligned", nm);
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 64;
  opts.max_tables = 10000000;
  opts.check_alignment = true;
  flatbuffers::Verifier verifier(d, static_cast<size_t>(fb_end), opts);
  if (!ft::VerifyFlatTensorBuffer(verifier))
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "data file %s: flatbuffer failed verification (%llu bytes): corrupt or truncated",
                 nm, (unsigned long long)fb_end);
  const ft::FlatTensor* root = ft::GetFlatTensor(d);
  if (root->version() != 0)
    return error(PTERON_ERROR_NOT_SUPPORTED,
                 "data file %s has format version %u; pteron reads version 0 (ExecuTorch 1.5)", nm,
                 root->version());
  auto f = std::unique_ptr<DataFile>(new (std::nothrow) DataFile);
  if (!f) return error(PTERON_ERROR_OUT_OF_MEMORY, "cannot allocate a data file");
  f->root = root;
  f->segment_base = seg_base;
  f->name = name;
  // Every segment must lie inside the segment data.
  if (const auto* segs = root->segments()) {
    for (uint32_t i = 0; i < segs->size(); ++i) {
      const uint64_t off = segs->Get(i)->offset(), sz = segs->Get(i)->size();
      if (off > seg_size || sz > seg_size - off)
        return error(PTERON_ERROR_INVALID_PROGRAM,
                     "data file %s: segment %u (offset %llu, size %llu) lies outside its segment "
                     "data (%llu bytes)",
                     nm, i, (unsigned long long)off, (unsigned long long)sz,
                     (unsigned long long)seg_size);
    }
  }
  if (const auto* nd = root->named_data()) {
    const uint32_t nsegs = root->segments() ? root->segments()->size() : 0u;
    for (uint32_t i = 0; i < nd->size(); ++i) {
      const ft::NamedData* e = nd->Get(i);
      if (!e->key())
        return error(PTERON_ERROR_INVALID_PROGRAM, "data file %s: entry %u has no key", nm, i);
      if (e->segment_index() >= nsegs)
        return error(PTERON_ERROR_INVALID_PROGRAM,
                     "data file %s: entry '%s' refers to segment %u, the file has %u segments", nm,
                     printable(e->key()->str()).c_str(), e->segment_index(), nsegs);
    }
  }
  f->bytes = std::move(bytes);
  *out = std::move(f);
  return Status::Ok();
}

}  // namespace pteron
