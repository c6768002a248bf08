// common.cpp - status objects, formatting, dtype facts.
#include <cstdlib>
#include <cstring>

#include "internal.h"

namespace pteron {

static std::string vformat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return fmt;
  std::string s(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(&s[0], s.size(), fmt, ap);
  s.resize(static_cast<size_t>(n));
  return s;
}

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

Status error(int32_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Status s{code, vformat(fmt, ap)};
  va_end(ap);
  return s;
}

pteron_status* to_c(Status s) {
  if (s.ok()) return nullptr;
  return new (std::nothrow) pteron_status{s.code, std::move(s.message)};
}

size_t element_size(int32_t d) {
  switch (d) {
    case 0: case 1: case 11: case 12: case 13: case 16: case 17:
    case 23: case 24: case 25: case 26: return 1;
    case 2: case 5: case 15: case 22: case 27: return 2;
    case 3: case 6: case 14: case 28: return 4;
    case 4: case 7: case 29: return 8;
    default: return 0;
  }
}

const char* dtype_name(int32_t d) { return pteron_dtype_name(d); }

std::string printable(const std::string& s) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace pteron

extern "C" PTERON_API const char* pteron_dtype_name(int32_t d) {
  switch (d) {
    case PTERON_DTYPE_UINT8: return "uint8";
    case PTERON_DTYPE_INT8: return "int8";
    case PTERON_DTYPE_INT16: return "int16";
    case PTERON_DTYPE_INT32: return "int32";
    case PTERON_DTYPE_INT64: return "int64";
    case PTERON_DTYPE_FLOAT16: return "float16";
    case PTERON_DTYPE_FLOAT32: return "float32";
    case PTERON_DTYPE_FLOAT64: return "float64";
    case PTERON_DTYPE_BOOL: return "bool";
    case PTERON_DTYPE_QINT8: return "qint8";
    case PTERON_DTYPE_QUINT8: return "quint8";
    case PTERON_DTYPE_QINT32: return "qint32";
    case PTERON_DTYPE_BFLOAT16: return "bfloat16";
    case PTERON_DTYPE_UINT16: return "uint16";
    case PTERON_DTYPE_UINT32: return "uint32";
    case PTERON_DTYPE_UINT64: return "uint64";
    default: return "unknown";
  }
}

namespace pteron {

bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  if (a != 0 && b > INT64_MAX / a) return false;
  *out = a * b;
  return true;
}

}  // namespace pteron

using pteron::Status;

extern "C" {

int32_t pteron_status_code(const pteron_status* s) { return s ? s->code : PTERON_OK; }
const char* pteron_status_message(const pteron_status* s) {
  return s ? s->message.c_str() : "";
}
void pteron_status_release(pteron_status* s) { delete s; }

const char* pteron_error_name(int32_t code) {
  switch (code) {
    case PTERON_OK: return "ok";
    case PTERON_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case PTERON_ERROR_INVALID_PROGRAM: return "invalid_program";
    case PTERON_ERROR_NOT_FOUND: return "not_found";
    case PTERON_ERROR_MISSING_OPERATOR: return "missing_operator";
    case PTERON_ERROR_MISSING_DELEGATE: return "missing_delegate";
    case PTERON_ERROR_UNSUPPORTED_DTYPE: return "unsupported_dtype";
    case PTERON_ERROR_SHAPE_MISMATCH: return "shape_mismatch";
    case PTERON_ERROR_OUT_OF_MEMORY: return "out_of_memory";
    case PTERON_ERROR_IO: return "io";
    case PTERON_ERROR_INTERNAL: return "internal";
    case PTERON_ERROR_ABI_MISMATCH: return "abi_mismatch";
    case PTERON_ERROR_NOT_SUPPORTED: return "not_supported";
    case PTERON_ERROR_KERNEL_FAILED: return "kernel_failed";
    case PTERON_ERROR_DELEGATE_FAILED: return "delegate_failed";
    default: return "unknown";
  }
}

#ifndef PTERON_VERSION_STRING
#define PTERON_VERSION_STRING "0.0.0"
#endif
const char* pteron_version(void) { return PTERON_VERSION_STRING; }
uint32_t pteron_abi_version(void) { return PTERON_ABI_VERSION; }

int32_t pteron_kernel_fail(pteron_kernel_context* ctx, int32_t code, const char* message) {
  if (code == PTERON_OK) code = PTERON_ERROR_KERNEL_FAILED;
  if (ctx) {
    ctx->code = code;
    ctx->message = message ? message : "";
  }
  return code;
}

void* pteron_kernel_scratch(pteron_kernel_context* ctx, size_t bytes) {
  if (!ctx) return nullptr;
  const size_t need = bytes + 64;
  if (need < bytes) {
    pteron_kernel_fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, "scratch request too large");
    return nullptr;
  }
  if (ctx->scratch.size() < need) {
    try {
      ctx->scratch.resize(need);
    } catch (...) {
      pteron_kernel_fail(ctx, PTERON_ERROR_OUT_OF_MEMORY,
                         pteron::format("cannot allocate %zu bytes of scratch", bytes).c_str());
      return nullptr;
    }
  }
  uintptr_t p = reinterpret_cast<uintptr_t>(ctx->scratch.data());
  p = (p + 63) & ~static_cast<uintptr_t>(63);
  return reinterpret_cast<void*>(p);
}

int32_t pteron_tensor_resize(pteron_kernel_context* ctx, pteron_tensor* t,
                             const int64_t* sizes, int32_t dim) {
  if (!t || (dim > 0 && !sizes) || dim < 0 || dim > PTERON_MAX_DIM)
    return pteron_kernel_fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                              pteron::format("cannot resize a tensor to rank %d", dim).c_str());
  if (dim != t->dim)
    return pteron_kernel_fail(
        ctx, PTERON_ERROR_SHAPE_MISMATCH,
        pteron::format("cannot resize a rank-%d tensor to rank %d", t->dim, dim).c_str());
  int64_t n = 1;
  for (int32_t i = 0; i < dim; ++i) {
    if (sizes[i] < 0 || !pteron::checked_mul(n, sizes[i], &n))
      return pteron_kernel_fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                                pteron::format("invalid size %lld at dim %d",
                                               (long long)sizes[i], i).c_str());
  }
  if (t->dynamism == PTERON_SHAPE_STATIC) {
    for (int32_t i = 0; i < dim; ++i)
      if (sizes[i] != t->sizes[i])
        return pteron_kernel_fail(
            ctx, PTERON_ERROR_SHAPE_MISMATCH,
            pteron::format("static tensor has size %lld at dim %d, result needs %lld",
                           (long long)t->sizes[i], i, (long long)sizes[i]).c_str());
    return PTERON_OK;
  }
  int64_t bytes = 0;
  if (!pteron::checked_mul(n, (int64_t)pteron::element_size(t->dtype), &bytes) ||
      bytes > t->capacity_bytes)
    return pteron_kernel_fail(
        ctx, PTERON_ERROR_SHAPE_MISMATCH,
        pteron::format("result of %lld elements exceeds the tensor's planned capacity of %lld bytes",
                       (long long)n, (long long)t->capacity_bytes).c_str());
  for (int32_t i = 0; i < dim; ++i) t->sizes[i] = sizes[i];
  // strides from dim order: innermost (last in dim_order) has stride 1
  int64_t s = 1;
  for (int32_t k = dim - 1; k >= 0; --k) {
    int d = t->dim_order[k];
    t->strides[d] = s;
    s *= t->sizes[d] > 0 ? t->sizes[d] : 1;
  }
  return PTERON_OK;
}

}  // extern "C"
