// SPDX-License-Identifier: BSD-3-Clause
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

// The program format's scalar types (schema/program.fbs) and their sizes.
// pteron_dtype (pteron/types.h) names a subset with the same numbers.
size_t element_size(int32_t d) {
  using T = fb::ScalarType;
  if (d < INT8_MIN || d > INT8_MAX) return 0;  // ScalarType is a byte
  switch (static_cast<T>(d)) {
    case T::BYTE:
    case T::CHAR:
    case T::BOOL:
    case T::QINT8:
    case T::QUINT8:
    case T::QUINT4X2:
    case T::QUINT2X4:
    case T::FLOAT8E5M2:
    case T::FLOAT8E4M3FN:
    case T::FLOAT8E5M2FNUZ:
    case T::FLOAT8E4M3FNUZ: return 1;
    case T::SHORT:
    case T::HALF:
    case T::BFLOAT16:
    case T::BITS16:
    case T::UINT16: return 2;
    case T::INT:
    case T::FLOAT:
    case T::QINT32:
    case T::UINT32: return 4;
    case T::LONG:
    case T::DOUBLE:
    case T::COMPLEXFLOAT:
    case T::UINT64: return 8;
    case T::COMPLEXDOUBLE: return 16;
    default: return 0;
  }
}

#define PTERON_SAME_NUMBER(dtype, scalar_type)                                         \
  static_assert(PTERON_DTYPE_##dtype == static_cast<int>(fb::ScalarType::scalar_type), \
                "pteron_dtype " #dtype " differs from the format's ScalarType " #scalar_type)
PTERON_SAME_NUMBER(UINT8, BYTE);
PTERON_SAME_NUMBER(INT8, CHAR);
PTERON_SAME_NUMBER(INT16, SHORT);
PTERON_SAME_NUMBER(INT32, INT);
PTERON_SAME_NUMBER(INT64, LONG);
PTERON_SAME_NUMBER(FLOAT16, HALF);
PTERON_SAME_NUMBER(FLOAT32, FLOAT);
PTERON_SAME_NUMBER(FLOAT64, DOUBLE);
PTERON_SAME_NUMBER(COMPLEX64, COMPLEXFLOAT);
PTERON_SAME_NUMBER(COMPLEX128, COMPLEXDOUBLE);
PTERON_SAME_NUMBER(BOOL, BOOL);
PTERON_SAME_NUMBER(QINT8, QINT8);
PTERON_SAME_NUMBER(QUINT8, QUINT8);
PTERON_SAME_NUMBER(QINT32, QINT32);
PTERON_SAME_NUMBER(BFLOAT16, BFLOAT16);
PTERON_SAME_NUMBER(UINT16, UINT16);
PTERON_SAME_NUMBER(UINT32, UINT32);
PTERON_SAME_NUMBER(UINT64, UINT64);
#undef PTERON_SAME_NUMBER

const char* dtype_name(int32_t d) { return pteron_dtype_name(d); }

std::string printable(const std::string& s) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {  // quotable between '...'
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
    case PTERON_DTYPE_COMPLEX64: return "complex64";
    case PTERON_DTYPE_COMPLEX128: return "complex128";
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

extern "C" PTERON_API const char* pteron_value_tag_name(int32_t tag) {
  switch (tag) {
    case PTERON_VALUE_NONE: return "None";
    case PTERON_VALUE_INT: return "Int";
    case PTERON_VALUE_BOOL: return "Bool";
    case PTERON_VALUE_DOUBLE: return "Double";
    case PTERON_VALUE_TENSOR: return "Tensor";
    case PTERON_VALUE_STRING: return "String";
    case PTERON_VALUE_INT_LIST: return "IntList";
    case PTERON_VALUE_DOUBLE_LIST: return "DoubleList";
    case PTERON_VALUE_BOOL_LIST: return "BoolList";
    case PTERON_VALUE_TENSOR_LIST: return "TensorList";
    case PTERON_VALUE_OPTIONAL_TENSOR_LIST: return "OptionalTensorList";
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

void compute_strides(pteron_tensor* t) {
  int64_t s = 1;
  for (int32_t k = t->dim - 1; k >= 0; --k) {
    int d = t->dim_order[k];
    t->strides[d] = s;
    s *= t->sizes[d] > 0 ? t->sizes[d] : 1;
  }
}

int64_t tensor_numel(const pteron_tensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.dim; ++i) n *= t.sizes[i];
  return n;
}

void normalize_bools(void* data, size_t n) {
  unsigned char* b = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < n; ++i)
    if (b[i] > 1) b[i] = 1;
}

}  // namespace pteron

using pteron::Status;

extern "C" {

int32_t pteron_status_code(const pteron_status* s) { return s ? s->code : PTERON_OK; }
const char* pteron_status_message(const pteron_status* s) { return s ? s->message.c_str() : ""; }
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

int32_t pteron_tensor_resize(pteron_kernel_context* ctx, pteron_tensor* t, const int64_t* sizes,
                             int32_t dim) {
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
      return pteron_kernel_fail(
          ctx, PTERON_ERROR_SHAPE_MISMATCH,
          pteron::format("invalid size %lld at dim %d", (long long)sizes[i], i).c_str());
  }
  if (t->dynamism == PTERON_SHAPE_STATIC) {
    for (int32_t i = 0; i < dim; ++i)
      if (sizes[i] != t->sizes[i])
        return pteron_kernel_fail(
            ctx, PTERON_ERROR_SHAPE_MISMATCH,
            pteron::format("static tensor has size %lld at dim %d, result needs %lld",
                           (long long)t->sizes[i], i, (long long)sizes[i])
                .c_str());
    return PTERON_OK;
  }
  int64_t bytes = 0;
  if (!pteron::checked_mul(n, (int64_t)pteron::element_size(t->dtype), &bytes) ||
      bytes > t->capacity_bytes)
    return pteron_kernel_fail(
        ctx, PTERON_ERROR_SHAPE_MISMATCH,
        pteron::format(
            "result of %lld elements exceeds the tensor's planned capacity of %lld bytes",
            (long long)n, (long long)t->capacity_bytes)
            .c_str());
  for (int32_t i = 0; i < dim; ++i) t->sizes[i] = sizes[i];
  pteron::compute_strides(t);
  return PTERON_OK;
}

}  // extern "C"
