// SPDX-License-Identifier: BSD-3-Clause
// cache.cpp - kernels_llm: the KV-cache updates and the fallback copy of upstream ExecuTorch
// 1.5.1's extension/llm/custom_ops (schemas from its custom_ops.py and the registered
// llama:: library; semantics from its Python validation and op_update_cache.cpp):
//
//   llama::update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out)
//     cache[b, start_pos + s, h, d] = value[b, s, h, d]
//   llama::update_cache_with_indices.out(value, cache, SymInt start_pos, Tensor indices, *, out)
//     cache[b, indices[b, s], h, d] = value[b, s, h, d]   (start_pos unused, as upstream)
//   llama::fallback.out(Tensor input, *, Tensor(a!) output)
//     output = input (same shape and dtype)
//
//  value  [B, S, H, D], any dtype; cache [B, max_seq_len, H, D], value's dtype (a float cache,
//         or the int8 values and float32 scales of upstream's quantized KV cache, which it
//         updates with these same operators).
//  indices  [B, S] int64, each in [0, max_seq_len).
//  out    upstream's placeholder ([1] in its exported programs): left as it is.
// Errors (nothing is written): a rank or size mismatch (PTERON_ERROR_SHAPE_MISMATCH), a dtype
// mismatch (PTERON_ERROR_INVALID_ARGUMENT), start_pos < 0 or start_pos + S past
// max_seq_len, or an index out of range (PTERON_ERROR_INVALID_ARGUMENT, naming the position
// and the cache's length) - upstream's runtime reads and writes out of range for a negative
// start_pos.
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "llm_util.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

int32_t check_value_and_cache(const Args& a, const pteron_tensor* value,
                              const pteron_tensor* cache) {
  if (value->dim != 4 || cache->dim != 4)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: value and cache must be rank 4 ([batch, seq, heads, head_dim]), got ranks "
                "%d and %d", a.op, static_cast<int>(value->dim), static_cast<int>(cache->dim));
  if (value->dtype != cache->dtype)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: value has dtype %s but cache has %s", a.op, kern::dtype_name(value->dtype),
                kern::dtype_name(cache->dtype));
  static const char* const kDims[4] = {"batch", "sequence", "heads", "head_dim"};
  for (int i : {0, 2, 3})
    if (value->sizes[i] != cache->sizes[i])
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: value's %s size %lld differs from the cache's %lld (value [B, S, H, D], "
                  "cache [B, max_seq_len, H, D])", a.op, kDims[i],
                  static_cast<long long>(value->sizes[i]),
                  static_cast<long long>(cache->sizes[i]));
  return PTERON_OK;
}

// Copies value row (b, s) (H x D elements) into cache row (b, pos).
void copy_token(const pteron_tensor* value, pteron_tensor* cache, int64_t b, int64_t s,
                int64_t pos) {
  const size_t es = kern::dtype_size(value->dtype);
  const int64_t H = value->sizes[2], D = value->sizes[3];
  const auto* src = static_cast<const uint8_t*>(value->data);
  auto* dst = static_cast<uint8_t*>(cache->data);
  for (int64_t h = 0; h < H; ++h) {
    const int64_t vo = b * value->strides[0] + s * value->strides[1] + h * value->strides[2];
    const int64_t co = b * cache->strides[0] + pos * cache->strides[1] + h * cache->strides[2];
    if (value->strides[3] == 1 && cache->strides[3] == 1) {
      std::memmove(dst + co * es, src + vo * es, static_cast<size_t>(D) * es);
      continue;
    }
    for (int64_t d = 0; d < D; ++d)
      std::memmove(dst + (co + d * cache->strides[3]) * es, src + (vo + d * value->strides[3]) * es,
                   es);
  }
}

int32_t update_cache(const Args& a, bool with_indices) {
  PTERON_CHECK_OK(a.arity(with_indices ? 5 : 4));
  pteron_tensor *value = nullptr, *cache = nullptr, *indices = nullptr, *out = nullptr;
  int64_t start_pos = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "value", &value));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "cache", &cache));
  PTERON_CHECK_OK(a.integer(2, "start_pos", &start_pos));
  if (with_indices) PTERON_CHECK_OK(kern::tensor_arg(a, 3, "indices", &indices));
  PTERON_CHECK_OK(kern::tensor_arg(a, with_indices ? 4 : 3, "out", &out));
  PTERON_CHECK_OK(check_value_and_cache(a, value, cache));
  const int64_t B = value->sizes[0], S = value->sizes[1], max_len = cache->sizes[1];
  if (!with_indices) {
    if (start_pos < 0 || start_pos >= max_len || S > max_len - start_pos)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: start_pos %lld with %lld new positions does not fit the cache's %lld "
                  "positions (needs 0 <= start_pos and start_pos + seq_len <= %lld)", a.op,
                  static_cast<long long>(start_pos), static_cast<long long>(S),
                  static_cast<long long>(max_len), static_cast<long long>(max_len));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) copy_token(value, cache, b, s, start_pos + s);
    return PTERON_OK;
  }
  if (indices->dtype != PTERON_DTYPE_INT64)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: indices has dtype %s (int64 expected)",
                a.op, kern::dtype_name(indices->dtype));
  if (indices->dim != 2 || indices->sizes[0] != B || indices->sizes[1] != S)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: indices must be [batch, seq_len] = [%lld, %lld] like value", a.op,
                static_cast<long long>(B), static_cast<long long>(S));
  const auto* idx = static_cast<const int64_t*>(indices->data);
  for (int64_t b = 0; b < B; ++b)  // every index checked before anything is written
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = idx[b * indices->strides[0] + s * indices->strides[1]];
      if (p < 0 || p >= max_len)
        return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: indices[%lld, %lld] = %lld is outside the cache's %lld positions", a.op,
                    static_cast<long long>(b), static_cast<long long>(s),
                    static_cast<long long>(p), static_cast<long long>(max_len));
    }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      copy_token(value, cache, b, s, idx[b * indices->strides[0] + s * indices->strides[1]]);
  return PTERON_OK;
}

int32_t fallback(const Args& a) {
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *in = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "output", &out));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, out, "output", in->dtype));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "output", out, in->sizes, in->dim));
  return kern::copy_tensor(a, in, kern::view_of(in), out, /*accept_half=*/true);
}

int32_t update_cache_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return update_cache(Args{ctx, args, n, "llama::update_cache.out"}, false);
}
int32_t update_cache_with_indices_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                      size_t n) {
  return update_cache(Args{ctx, args, n, "llama::update_cache_with_indices.out"}, true);
}
int32_t fallback_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return fallback(Args{ctx, args, n, "llama::fallback.out"});
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"llama::update_cache", "out", nullptr, update_cache_out, PTERON_KERNEL_PRIORITY, 0},
    {"llama::update_cache_with_indices", "out", nullptr, update_cache_with_indices_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"llama::fallback", "out", nullptr, fallback_out, PTERON_KERNEL_PRIORITY, 0})
