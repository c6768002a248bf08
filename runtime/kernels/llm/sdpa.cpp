// SPDX-License-Identifier: BSD-3-Clause
// sdpa.cpp - kernels_llm: attention over a KV cache, the llama:: operators of upstream
// ExecuTorch 1.5.1's extension/llm/custom_ops (schemas from its registered llama:: library,
// semantics from its custom_ops.py validation, its Python references and op_sdpa.cpp):
//
//   llama::custom_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos,
//       Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None,
//       *, Tensor(a!) out)
//   llama::sdpa_with_kv_cache.out(query, key, value, Tensor(a!) key_cache,
//       Tensor(b!) value_cache, SymInt start_pos, SymInt seq_len, attn_mask, drpout_p,
//       is_causal, scale, *, out)       = update_cache of key and value, then custom_sdpa
//   llama::custom_quantized_sdpa.out(query, key, value, start_pos, attn_mask, drpout_p,
//       is_causal, scale, Tensor? q_zero_points, Tensor? q_scales, k_zero_points, k_scales,
//       v_zero_points, v_scales, bool is_seq_at_dim_2=False, *, out)
//
// Shapes (custom_sdpa): query [B, S, Hq, D]; key and value the caches [B, L, Hkv, D]
// (L = max_seq_len) with Hq a multiple of Hkv (grouped-query attention: query head h reads
// cache head h / (Hq / Hkv)); out [B, S, Hq, D]. custom_quantized_sdpa takes the same layout,
// or [B, H, S, D] for all three when is_seq_at_dim_2.
// What it computes: the scores scale * q.k (scale: default 1 / sqrt(D)), softmax over them
// weighting the values. Without attn_mask, query row s sits at position start_pos + s and
// attends to cache positions [0, start_pos + S): all of them, or with is_causal only
// [0, start_pos + s]; start_pos + S must fit in L. With attn_mask (a float additive mask
// [S, L], never with is_causal: upstream's ring-buffer and sliding-window caches) every row
// attends to all L positions plus mask[s, n], and start_pos is not used. drpout_p is ignored
// (no dropout at inference, as upstream).
// dtypes: custom_sdpa and sdpa_with_kv_cache take float32, float16 or bfloat16 (all three
// tensors, the caches and out alike; computed in float32, rounded once at the end).
// custom_quantized_sdpa: int8 query, key and value with per-token float32 scales and int8 zero
// points of shape [..., 1] (value = (q - zero_point) * scale, upstream's dequantize_per_token),
// out float32.
// The work: tiles of (batch, cache head, block of query rows) over the thread pool; one tile
// holds every query head of its cache head, so each key and value row is read once per tile
// (pteron_cpu's AttnTile, isa.h).
// Errors: start_pos < 0, start_pos + S past max_seq_len, attn_mask with is_causal, mismatched
// shapes or dtypes: a named error (PTERON_ERROR_INVALID_ARGUMENT / _SHAPE_MISMATCH /
// _UNSUPPORTED_DTYPE), never a read outside the cache.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "pteron_cpu/isa.h"
#include "llm_util.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
using pteron_llm::View4;
namespace kern = pteron::kern;

constexpr int64_t kQueryBlock = 32;  // query positions per tile

// Per-token int8 dequantization: element (b, s, h, d) = (q - zp(b, s, h)) * scale(b, s, h).
struct Quant {
  View4 zp, scale;  // [.., 1] tensors seen in the values' layout
};

struct Operand {
  View4 t;
  const Quant* quant = nullptr;  // int8 values, or null
};

void load_row(const Operand& o, int64_t b, int64_t s, int64_t h, float* dst) {
  if (!o.quant) {
    pteron_llm::load_row(o.t, b, s, h, dst);
    return;
  }
  const int64_t base = o.t.offset(b, s, h), D = o.t.size[3], sd = o.t.stride[3];
  const float zp = kern::load<float>(o.quant->zp.data, o.quant->zp.dtype, o.quant->zp.offset(b, s, h));
  const float sc =
      kern::load<float>(o.quant->scale.data, o.quant->scale.dtype, o.quant->scale.offset(b, s, h));
  const auto* p = static_cast<const int8_t*>(o.t.data) + base;
  for (int64_t i = 0; i < D; ++i) dst[i] = (static_cast<float>(p[i * sd]) - zp) * sc;
}

// A float32 cache whose rows can be read in place.
bool direct(const Operand& o) { return !o.quant && o.t.dtype == PTERON_DTYPE_FLOAT32 && o.t.stride[3] == 1; }

struct Problem {
  Operand q, k, v;
  View4 out;
  int64_t start_pos = 0;
  bool causal = false;
  const pteron_tensor* mask = nullptr;
  float scale = 1.0f;
};

// The attention itself, after every check.
int32_t attend(const Args& a, const Problem& p) {
  const int64_t B = p.q.t.size[0], S = p.q.t.size[1], Hq = p.q.t.size[2], D = p.q.t.size[3];
  const int64_t Hkv = p.k.t.size[2], reps = Hq / Hkv;
  const int64_t keys = p.mask ? p.k.t.size[1] : p.start_pos + S;
  const int64_t nqb = (S + kQueryBlock - 1) / kQueryBlock;
  const pteron_cpu::IsaOps& ops = pteron_cpu::ops();
  // The mask as float32 rows [S, keys] (copied once when it is not float32 with unit stride).
  std::vector<float> mask_copy;
  const float* mask = nullptr;
  int64_t ldm = 0;
  if (p.mask) {
    if (p.mask->dtype == PTERON_DTYPE_FLOAT32 && p.mask->strides[1] == 1) {
      mask = static_cast<const float*>(p.mask->data);
      ldm = p.mask->strides[0];
    } else {
      mask_copy.resize(static_cast<size_t>(S * keys));
      for (int64_t s = 0; s < S; ++s)
        for (int64_t n = 0; n < keys; ++n)
          mask_copy[s * keys + n] = kern::load<float>(
              p.mask->data, p.mask->dtype, s * p.mask->strides[0] + n * p.mask->strides[1]);
      mask = mask_copy.data();
      ldm = keys;
    }
  }
  bool oom = false;
  kern::parallel_for(0, B * Hkv * nqb, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> buf;
    std::vector<int64_t> visible;
    try {
      const int64_t rows_max = kQueryBlock * reps;
      const int64_t kv_rows = (direct(p.k) && direct(p.v)) ? 0 : keys;
      buf.resize(static_cast<size_t>(2 * rows_max * D + rows_max * (pteron_cpu::kAttnKeyBlock + D + 2) +
                                     2 * kv_rows * D));
      visible.resize(static_cast<size_t>(rows_max));
    } catch (...) {
      oom = true;
      return;
    }
    float* qrows = buf.data();
    float* orows = qrows + kQueryBlock * reps * D;
    float* scratch = orows + kQueryBlock * reps * D;
    float* kbuf = scratch + kQueryBlock * reps * (pteron_cpu::kAttnKeyBlock + D + 2);
    float* vbuf = kbuf + (direct(p.k) && direct(p.v) ? 0 : keys * D);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (Hkv * nqb), g = (t / nqb) % Hkv, s0 = (t % nqb) * kQueryBlock;
      const int64_t s1 = std::min(S, s0 + kQueryBlock), ns = s1 - s0;
      const int64_t last = p.causal ? std::min(keys, p.start_pos + s1) : keys;
      pteron_cpu::AttnTile tile;
      tile.d = D;
      tile.keys = keys;
      tile.scale = p.scale;
      tile.scratch = scratch;
      if (direct(p.k) && direct(p.v)) {
        tile.k = static_cast<const float*>(p.k.t.data) + p.k.t.offset(b, 0, g);
        tile.ldk = p.k.t.stride[1];
        tile.v = static_cast<const float*>(p.v.t.data) + p.v.t.offset(b, 0, g);
        tile.ldv = p.v.t.stride[1];
      } else {  // rows [0, last) of this cache head, as float32
        for (int64_t n = 0; n < last; ++n) {
          load_row(p.k, b, n, g, kbuf + n * D);
          load_row(p.v, b, n, g, vbuf + n * D);
        }
        tile.k = kbuf;
        tile.ldk = D;
        tile.v = vbuf;
        tile.ldv = D;
      }
      if (!mask) {
        // One tile: row r = (s - s0) * reps + j is query head g * reps + j at position s.
        for (int64_t s = s0; s < s1; ++s)
          for (int64_t j = 0; j < reps; ++j) {
            const int64_t r = (s - s0) * reps + j;
            load_row(p.q, b, s, g * reps + j, qrows + r * D);
            visible[r] = p.causal ? std::min(keys, p.start_pos + s + 1) : keys;
          }
        tile.rows = ns * reps;
        tile.q = qrows;
        tile.ldq = D;
        tile.visible = visible.data();
        tile.out = orows;
        tile.ldo = D;
        ops.attention_tile(tile);
        for (int64_t s = s0; s < s1; ++s)
          for (int64_t j = 0; j < reps; ++j)
            pteron_llm::store_row(p.out, b, s, g * reps + j, orows + ((s - s0) * reps + j) * D);
        continue;
      }
      // With a mask (never causal): one tile per query head, its rows the positions s0..s1,
      // so mask row s is at mask + s * ldm.
      for (int64_t j = 0; j < reps; ++j) {
        for (int64_t s = s0; s < s1; ++s) load_row(p.q, b, s, g * reps + j, qrows + (s - s0) * D);
        tile.rows = ns;
        tile.q = qrows;
        tile.ldq = D;
        tile.visible = nullptr;
        tile.mask = mask + s0 * ldm;
        tile.ldm = ldm;
        tile.out = orows;
        tile.ldo = D;
        ops.attention_tile(tile);
        for (int64_t s = s0; s < s1; ++s)
          pteron_llm::store_row(p.out, b, s, g * reps + j, orows + (s - s0) * D);
      }
    }
  });
  if (oom)
    return fail(a.ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: no memory for the attention's buffers",
                a.op);
  return PTERON_OK;
}

// Reads attn_mask, drpout_p, is_causal and scale (arguments i .. i + 3) and checks what does
// not depend on the dtypes.
int32_t read_options(const Args& a, size_t i, Problem* p) {
  pteron_tensor* mask = nullptr;
  double dropout = 0.0;
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, i, "attn_mask", &mask));
  PTERON_CHECK_OK(a.real(i + 1, "drpout_p", &dropout));
  PTERON_CHECK_OK(a.boolean(i + 2, "is_causal", &p->causal));
  if (!a.is_none(i + 3)) {
    double scale = 0.0;
    PTERON_CHECK_OK(a.real(i + 3, "scale", &scale));
    p->scale = static_cast<float>(scale);
  } else {
    p->scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p->q.t.size[3])));
  }
  if (mask && kern::numel(mask) == 0) mask = nullptr;  // an empty mask is no mask (upstream)
  if (mask && p->causal)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: attn_mask and is_causal cannot both be set", a.op);
  p->mask = mask;
  return PTERON_OK;
}

// The shape checks shared by every variant, once q, k, v, start_pos and the mask are read.
int32_t check_problem(const Args& a, const Problem& p) {
  const View4 &q = p.q.t, &k = p.k.t, &v = p.v.t;
  for (int i = 0; i < 4; ++i)
    if (k.size[i] != v.size[i])
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: key and value caches differ in size (dim %d: %lld and %lld)", a.op, i,
                  static_cast<long long>(k.size[i]), static_cast<long long>(v.size[i]));
  if (q.size[0] != k.size[0])
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: query batch %lld, cache batch %lld",
                a.op, static_cast<long long>(q.size[0]), static_cast<long long>(k.size[0]));
  if (q.size[3] != k.size[3])
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: query head_dim %lld differs from the cache's %lld", a.op,
                static_cast<long long>(q.size[3]), static_cast<long long>(k.size[3]));
  if (k.size[2] <= 0 || q.size[2] % k.size[2] != 0)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: %lld query heads are not a multiple of the cache's %lld heads", a.op,
                static_cast<long long>(q.size[2]), static_cast<long long>(k.size[2]));
  const int64_t S = q.size[1], max_len = k.size[1];
  if (!p.mask && (p.start_pos < 0 || p.start_pos > max_len || S > max_len - p.start_pos))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: start_pos %lld with %lld query positions does not fit the cache's %lld "
                "positions (needs 0 <= start_pos and start_pos + seq_len <= %lld)", a.op,
                static_cast<long long>(p.start_pos), static_cast<long long>(S),
                static_cast<long long>(max_len), static_cast<long long>(max_len));
  if (p.mask) {
    const int32_t md = p.mask->dtype;
    if (md != PTERON_DTYPE_FLOAT32 && md != PTERON_DTYPE_FLOAT16 && md != PTERON_DTYPE_BFLOAT16)
      return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                  "%s: attn_mask has dtype %s (an additive float mask: float32, float16 or "
                  "bfloat16)", a.op, kern::dtype_name(md));
    if (p.mask->dim != 2 || p.mask->sizes[0] != S || p.mask->sizes[1] != max_len)
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: attn_mask must be [seq_len, max_seq_len] = [%lld, %lld]", a.op,
                  static_cast<long long>(S), static_cast<long long>(max_len));
  }
  return PTERON_OK;
}

int32_t rank4(const Args& a, const pteron_tensor* t, const char* name) {
  if (t->dim != 4)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: %s has rank %d, expected 4", a.op, name,
                static_cast<int>(t->dim));
  return PTERON_OK;
}

bool float_dtype(int32_t d) {
  return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT16 || d == PTERON_DTYPE_BFLOAT16;
}

// Checks custom_sdpa's float operands (query q, caches kc and vc, out) and reads its options
// (arguments opts .. opts + 3) into *p. Writes nothing.
int32_t float_problem(const Args& a, pteron_tensor* q, pteron_tensor* kc, pteron_tensor* vc,
                      int64_t start_pos, size_t opts, pteron_tensor* out, Problem* p) {
  PTERON_CHECK_OK(rank4(a, q, "query"));
  PTERON_CHECK_OK(rank4(a, kc, "key cache"));
  PTERON_CHECK_OK(rank4(a, vc, "value cache"));
  if (!float_dtype(q->dtype))
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: query has dtype %s (float32, float16 or bfloat16)", a.op,
                kern::dtype_name(q->dtype));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, kc, "key cache", q->dtype));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, vc, "value cache", q->dtype));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, out, "out", q->dtype));
  p->q.t = pteron_llm::view4(q);
  p->k.t = pteron_llm::view4(kc);
  p->v.t = pteron_llm::view4(vc);
  p->start_pos = start_pos;
  PTERON_CHECK_OK(read_options(a, opts, p));
  PTERON_CHECK_OK(check_problem(a, *p));
  return kern::reject_alias(a.ctx, a.op, "out", out, q);
}

// out takes the query's shape (seq_at_dim_2: its layout), then the attention runs.
int32_t resize_and_attend(const Args& a, Problem* p, const pteron_tensor* q, pteron_tensor* out,
                          bool seq_at_dim_2 = false) {
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, q->sizes, q->dim));
  p->out = pteron_llm::view4(out, seq_at_dim_2);
  return attend(a, *p);
}

int32_t custom_sdpa(const Args& a) {
  PTERON_CHECK_OK(a.arity(9));
  pteron_tensor *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr;
  int64_t start_pos = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "query", &q));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "key", &k));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "value", &v));
  PTERON_CHECK_OK(a.integer(3, "start_pos", &start_pos));
  PTERON_CHECK_OK(kern::tensor_arg(a, 8, "out", &out));
  Problem p;
  PTERON_CHECK_OK(float_problem(a, q, k, v, start_pos, 4, out, &p));
  return resize_and_attend(a, &p, q, out);
}

// Writes rows [start_pos, start_pos + S) of `cache` from `x` ([B, S, H, D], same dtype).
void write_cache(const pteron_tensor* x, pteron_tensor* cache, int64_t start_pos) {
  const View4 src = pteron_llm::view4(x), dst = pteron_llm::view4(cache);
  std::vector<float> row(static_cast<size_t>(src.size[3]));
  for (int64_t b = 0; b < src.size[0]; ++b)
    for (int64_t s = 0; s < src.size[1]; ++s)
      for (int64_t h = 0; h < src.size[2]; ++h) {
        pteron_llm::load_row(src, b, s, h, row.data());
        pteron_llm::store_row(dst, b, start_pos + s, h, row.data());
      }
}

int32_t sdpa_with_kv_cache(const Args& a) {
  PTERON_CHECK_OK(a.arity(12));
  pteron_tensor *q = nullptr, *k = nullptr, *v = nullptr, *kc = nullptr, *vc = nullptr,
                *out = nullptr;
  int64_t start_pos = 0, seq_len = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "query", &q));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "key", &k));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "value", &v));
  PTERON_CHECK_OK(kern::tensor_arg(a, 3, "key_cache", &kc));
  PTERON_CHECK_OK(kern::tensor_arg(a, 4, "value_cache", &vc));
  PTERON_CHECK_OK(a.integer(5, "start_pos", &start_pos));
  PTERON_CHECK_OK(a.integer(6, "seq_len", &seq_len));
  PTERON_CHECK_OK(kern::tensor_arg(a, 11, "out", &out));
  (void)seq_len;  // upstream passes it and uses the query's own length
  // Everything is checked before the caches change: the attention's checks on the caches as
  // they are (same shapes), and the new rows', then the rows are written and it runs.
  Problem p;
  PTERON_CHECK_OK(float_problem(a, q, kc, vc, start_pos, 7, out, &p));
  for (const pteron_tensor* x : {k, v}) {
    PTERON_CHECK_OK(rank4(a, x, x == k ? "key" : "value"));
    PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, x, x == k ? "key" : "value", q->dtype));
    if (x->sizes[0] != kc->sizes[0] || x->sizes[1] != q->sizes[1] ||
        x->sizes[2] != kc->sizes[2] || x->sizes[3] != kc->sizes[3])
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: key and value must be [batch, seq_len, cache heads, head_dim] = "
                  "[%lld, %lld, %lld, %lld]", a.op, static_cast<long long>(kc->sizes[0]),
                  static_cast<long long>(q->sizes[1]), static_cast<long long>(kc->sizes[2]),
                  static_cast<long long>(kc->sizes[3]));
  }
  write_cache(k, kc, start_pos);
  write_cache(v, vc, start_pos);
  return resize_and_attend(a, &p, q, out);
}

int32_t quant_params(const Args& a, size_t i, const char* zp_name, const char* sc_name,
                     const pteron_tensor* x, bool seq2, Quant* qp) {
  pteron_tensor *zp = nullptr, *sc = nullptr;
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, i, zp_name, &zp));
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, i + 1, sc_name, &sc));
  if (!zp || !sc)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: %s and %s must be given", a.op,
                zp_name, sc_name);
  if (zp->dtype != PTERON_DTYPE_INT8)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: %s has dtype %s (int8 expected)",
                a.op, zp_name, kern::dtype_name(zp->dtype));
  if (sc->dtype != PTERON_DTYPE_FLOAT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: %s has dtype %s (float32 expected)",
                a.op, sc_name, kern::dtype_name(sc->dtype));
  for (const pteron_tensor* t : {zp, sc}) {
    bool ok = t->dim == 4 && t->sizes[3] == 1;
    for (int d = 0; ok && d < 3; ++d) ok = t->sizes[d] == x->sizes[d];
    if (!ok)
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: %s and %s must have the values' shape with a last size of 1", a.op,
                  zp_name, sc_name);
  }
  qp->zp = pteron_llm::view4(zp, seq2);
  qp->scale = pteron_llm::view4(sc, seq2);
  return PTERON_OK;
}

int32_t custom_quantized_sdpa(const Args& a) {
  PTERON_CHECK_OK(a.arity(16));
  pteron_tensor *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr;
  int64_t start_pos = 0;
  bool seq2 = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "query", &q));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "key", &k));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "value", &v));
  PTERON_CHECK_OK(a.integer(3, "start_pos", &start_pos));
  PTERON_CHECK_OK(a.boolean(14, "is_seq_at_dim_2", &seq2));
  PTERON_CHECK_OK(kern::tensor_arg(a, 15, "out", &out));
  PTERON_CHECK_OK(rank4(a, q, "query"));
  PTERON_CHECK_OK(rank4(a, k, "key"));
  PTERON_CHECK_OK(rank4(a, v, "value"));
  for (const pteron_tensor* t : {q, k, v})
    if (t->dtype != PTERON_DTYPE_INT8)
      return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                  "%s: query, key and value must be int8 (got %s)", a.op,
                  kern::dtype_name(t->dtype));
  if (out->dtype != PTERON_DTYPE_FLOAT32)
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: out has dtype %s (float32 expected)",
                a.op, kern::dtype_name(out->dtype));
  Quant qq, kq, vq;
  PTERON_CHECK_OK(quant_params(a, 8, "q_zero_points", "q_scales", q, seq2, &qq));
  PTERON_CHECK_OK(quant_params(a, 10, "k_zero_points", "k_scales", k, seq2, &kq));
  PTERON_CHECK_OK(quant_params(a, 12, "v_zero_points", "v_scales", v, seq2, &vq));
  Problem p;
  p.q = {pteron_llm::view4(q, seq2), &qq};
  p.k = {pteron_llm::view4(k, seq2), &kq};
  p.v = {pteron_llm::view4(v, seq2), &vq};
  p.start_pos = start_pos;
  PTERON_CHECK_OK(read_options(a, 4, &p));
  PTERON_CHECK_OK(check_problem(a, p));
  return resize_and_attend(a, &p, q, out, seq2);
}

int32_t custom_sdpa_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return custom_sdpa(Args{ctx, args, n, "llama::custom_sdpa.out"});
}
int32_t sdpa_with_kv_cache_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return sdpa_with_kv_cache(Args{ctx, args, n, "llama::sdpa_with_kv_cache.out"});
}
int32_t custom_quantized_sdpa_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                  size_t n) {
  return custom_quantized_sdpa(Args{ctx, args, n, "llama::custom_quantized_sdpa.out"});
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"llama::custom_sdpa", "out", nullptr, custom_sdpa_out, PTERON_KERNEL_PRIORITY, 0},
    {"llama::sdpa_with_kv_cache", "out", nullptr, sdpa_with_kv_cache_out, PTERON_KERNEL_PRIORITY,
     0},
    {"llama::custom_quantized_sdpa", "out", nullptr, custom_quantized_sdpa_out,
     PTERON_KERNEL_PRIORITY, 0})
