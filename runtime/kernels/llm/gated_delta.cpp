// SPDX-License-Identifier: BSD-3-Clause
// gated_delta.cpp - kernels_llm: the gated delta rule, the linear-attention recurrence of
// upstream ExecuTorch 1.5.1's extension/llm/custom_ops (schema from its registered llama::
// library; shapes and dtypes from custom_ops.py's validation and meta function; the
// recurrence from the Python reference in its test_gated_delta.py):
//
//   llama::gated_delta_rule.out(Tensor query, Tensor key, Tensor value, Tensor decay,
//       Tensor beta, Tensor initial_state, *, Tensor(a!) out, Tensor(b!) final_state_out)
//       -> (Tensor(a!), Tensor(b!))
//   llama::channelwise_gated_delta_rule.out(...)   the same operator under its older name
//
// Shapes (B batch, T tokens, Hq query heads, H state heads, K key size, V value size):
//   query [B, Hq, T, K], Hq a multiple of H; key [B, H, T, K]; value [B, H, T, V];
//   decay [B, H, T, K] (one factor per key channel) or [B, H, T] (one per token);
//   beta [B, H, T]; initial_state [B, H, K, V];
//   out [B, Hq, T, V] and final_state_out [B, H, K, V] (both resized).
// What it computes, per (batch, state head) with S = initial_state[b, h] (K x V) and for each
// token t in order (decay is already exponentiated; a 3-D decay applies to every row of S):
//   S[i, :]  *= decay[b, h, t, i]
//   delta     = beta[b, h, t] * (value[b, h, t, :] - key[b, h, t, :] . S)
//   S        += outer(key[b, h, t, :], delta)
//   out[b, q, t, :] = query[b, q, t, :] . S   for the query heads q of this state head
//                                             (q / (Hq / H) == h)
// and final_state_out[b, h] = S after the last token; initial_state is not changed.
// dtypes: float32 only, every tensor (upstream's too); any layout (strides are followed).
// Upstream runs sequences longer than one token as a chunked (matrix) form of the same
// recurrence; pteron steps through the tokens, which agrees within float32 rounding.
// Errors, before anything is written: a rank, size or head-count mismatch
// (PTERON_ERROR_SHAPE_MISMATCH naming the tensor and the shape it needs), a dtype other than
// float32 (PTERON_ERROR_UNSUPPORTED_DTYPE), out or final_state_out sharing memory with an
// input or with each other (PTERON_ERROR_INVALID_PROGRAM; upstream refuses
// final_state_out overlapping initial_state).
#include <cstdint>
#include <string>
#include <vector>

#include "llm_util.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// A float32 tensor of rank 3 or 4 read through its strides: at(i0, i1, i2) is the first
// element of that row (a rank-4 row's elements st[3] apart).
struct F32 {
  const float* p = nullptr;
  int64_t st[4] = {0, 0, 0, 0};
  explicit F32(const pteron_tensor* t) : p(static_cast<const float*>(t->data)) {
    for (int32_t d = 0; d < t->dim && d < 4; ++d) st[d] = t->strides[d];
  }
  const float* at(int64_t a, int64_t b, int64_t c) const {
    return p + a * st[0] + b * st[1] + c * st[2];
  }
};

std::string shape_text(const int64_t* s, int n) {
  std::string r = "[";
  for (int i = 0; i < n; ++i) {
    if (i) r += ", ";
    r += std::to_string(static_cast<long long>(s[i]));
  }
  return r + "]";
}

int32_t expect_shape(const Args& a, const pteron_tensor* t, const char* name, const int64_t* want,
                     int rank, const char* layout) {
  bool ok = t->dim == rank;
  for (int i = 0; ok && i < rank; ++i) ok = t->sizes[i] == want[i];
  if (ok) return PTERON_OK;
  return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: %s has shape %s but must be %s = %s",
              a.op, name, shape_text(t->sizes, t->dim).c_str(), layout,
              shape_text(want, rank).c_str());
}

// The bytes a (checked) tensor can touch: [first, last).
struct Span {
  uintptr_t first = 0, last = 0;
};
Span span_of(const pteron_tensor* t) {
  Span s;
  if (kern::numel(t) == 0) return s;
  int64_t max_off = 0;
  for (int32_t d = 0; d < t->dim; ++d) max_off += (t->sizes[d] - 1) * t->strides[d];
  s.first = reinterpret_cast<uintptr_t>(t->data);
  s.last = s.first + static_cast<uintptr_t>(max_off + 1) * kern::dtype_size(t->dtype);
  return s;
}
bool overlap(const pteron_tensor* x, const pteron_tensor* y) {
  const Span a = span_of(x), b = span_of(y);
  return a.first < a.last && b.first < b.last && a.first < b.last && b.first < a.last;
}

int32_t gated_delta_rule(const Args& a) {
  PTERON_CHECK_OK(a.arity(8));
  static const char* const kNames[8] = {"query", "key",           "value", "decay",
                                        "beta",  "initial_state", "out",   "final_state_out"};
  pteron_tensor* t[8] = {};
  for (size_t i = 0; i < 8; ++i) PTERON_CHECK_OK(kern::tensor_arg(a, i, kNames[i], &t[i]));
  pteron_tensor *query = t[0], *key = t[1], *value = t[2], *decay = t[3], *beta = t[4],
                *init = t[5], *out = t[6], *fin = t[7];
  for (int i = 0; i < 8; ++i)
    if (t[i]->dtype != PTERON_DTYPE_FLOAT32)
      return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: %s has dtype %s (float32 only)",
                  a.op, kNames[i], kern::dtype_name(t[i]->dtype));
  if (key->dim != 4)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: key has rank %d, expected 4 ([batch, heads, tokens, key_dim])", a.op,
                static_cast<int>(key->dim));
  if (value->dim != 4 || query->dim != 4)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: query and value must be rank 4 ([batch, heads, tokens, dim]), got ranks "
                "%d and %d", a.op, static_cast<int>(query->dim), static_cast<int>(value->dim));
  const int64_t B = key->sizes[0], H = key->sizes[1], T = key->sizes[2], K = key->sizes[3];
  const int64_t Hq = query->sizes[1], V = value->sizes[3];
  if (H <= 0 || Hq % H != 0)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: %lld query heads are not a multiple of the %lld key (state) heads", a.op,
                static_cast<long long>(Hq), static_cast<long long>(H));
  const int64_t q_shape[4] = {B, Hq, T, K}, v_shape[4] = {B, H, T, V}, d_shape[4] = {B, H, T, K},
                s_shape[4] = {B, H, K, V}, o_shape[4] = {B, Hq, T, V};
  PTERON_CHECK_OK(expect_shape(a, query, "query", q_shape, 4,
                               "[batch, query heads, tokens, key_dim] (key's batch, tokens and "
                               "key_dim)"));
  PTERON_CHECK_OK(expect_shape(a, value, "value", v_shape, 4,
                               "[batch, heads, tokens, value_dim] (key's first three sizes)"));
  if (decay->dim == 4)
    PTERON_CHECK_OK(expect_shape(a, decay, "decay", d_shape, 4, "key's shape (channelwise)"));
  else if (decay->dim == 3)
    PTERON_CHECK_OK(expect_shape(a, decay, "decay", d_shape, 3,
                                 "[batch, heads, tokens] (one gate per token)"));
  else
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: decay has rank %d; it must be %s (channelwise) or %s (one per token)", a.op,
                static_cast<int>(decay->dim), shape_text(d_shape, 4).c_str(),
                shape_text(d_shape, 3).c_str());
  PTERON_CHECK_OK(expect_shape(a, beta, "beta", d_shape, 3, "[batch, heads, tokens]"));
  PTERON_CHECK_OK(expect_shape(a, init, "initial_state", s_shape, 4,
                               "[batch, heads, key_dim, value_dim]"));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, o_shape, 4));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "final_state_out", fin, s_shape, 4));
  for (int o = 6; o < 8; ++o)
    for (int i = 0; i < 8; ++i)
      if (i != o && !(o == 7 && i == 6) && overlap(t[o], t[i]))
        return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: %s must not overlap %s", a.op,
                    kNames[o], kNames[i]);

  const int64_t reps = Hq / H;
  const bool channelwise = decay->dim == 4;
  const F32 q(query), k(key), v(value), g(decay), bt(beta), s0(init);
  auto* o_data = static_cast<float*>(out->data);
  auto* f_data = static_cast<float*>(fin->data);
  bool oom = false;
  kern::parallel_for(0, B * H, 1, [&](int64_t w0, int64_t w1) {
    std::vector<float> buf;
    try {
      buf.resize(static_cast<size_t>(K * V + 2 * K + 2 * V + reps * (K + V)));
    } catch (...) {
      oom = true;
      return;
    }
    float* S = buf.data();     // K x V, row i the key channel
    float* kt = S + K * V;     // the token's key
    float* dt = kt + K;        // its decay per key channel
    float* vt = dt + K;        // its value, then delta
    float* pred = vt + V;      // key . S
    float* qt = pred + V;      // reps query rows
    float* ot = qt + reps * K;  // reps output rows
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / H, h = w % H;
      for (int64_t i = 0; i < K; ++i) {
        const float* src = s0.at(b, h, i);
        for (int64_t j = 0; j < V; ++j) S[i * V + j] = src[j * s0.st[3]];
      }
      for (int64_t tok = 0; tok < T; ++tok) {
        const float* kp = k.at(b, h, tok);
        const float* vp = v.at(b, h, tok);
        for (int64_t i = 0; i < K; ++i) kt[i] = kp[i * k.st[3]];
        for (int64_t j = 0; j < V; ++j) vt[j] = vp[j * v.st[3]];
        if (channelwise) {
          const float* gp = g.at(b, h, tok);
          for (int64_t i = 0; i < K; ++i) dt[i] = gp[i * g.st[3]];
        } else {
          const float gs = *g.at(b, h, tok);
          for (int64_t i = 0; i < K; ++i) dt[i] = gs;
        }
        const float beta_t = *bt.at(b, h, tok);
        // Decay the state and read the value it predicts for this key.
        for (int64_t j = 0; j < V; ++j) pred[j] = 0.0f;
        for (int64_t i = 0; i < K; ++i) {
          float* row = S + i * V;
          const float di = dt[i], ki = kt[i];
          for (int64_t j = 0; j < V; ++j) {
            row[j] *= di;
            pred[j] += row[j] * ki;
          }
        }
        for (int64_t j = 0; j < V; ++j) vt[j] = (vt[j] - pred[j]) * beta_t;  // delta
        // Write the correction into the state and read it with every query head of the group.
        for (int64_t r = 0; r < reps; ++r) {
          const float* qp = q.at(b, h * reps + r, tok);
          for (int64_t i = 0; i < K; ++i) qt[r * K + i] = qp[i * q.st[3]];
          for (int64_t j = 0; j < V; ++j) ot[r * V + j] = 0.0f;
        }
        for (int64_t i = 0; i < K; ++i) {
          float* row = S + i * V;
          const float ki = kt[i];
          for (int64_t j = 0; j < V; ++j) row[j] += ki * vt[j];
          for (int64_t r = 0; r < reps; ++r) {
            const float qi = qt[r * K + i];
            float* orow = ot + r * V;
            for (int64_t j = 0; j < V; ++j) orow[j] += row[j] * qi;
          }
        }
        for (int64_t r = 0; r < reps; ++r) {
          float* dst = o_data + b * out->strides[0] + (h * reps + r) * out->strides[1] +
                       tok * out->strides[2];
          for (int64_t j = 0; j < V; ++j) dst[j * out->strides[3]] = ot[r * V + j];
        }
      }
      for (int64_t i = 0; i < K; ++i) {
        float* dst = f_data + b * fin->strides[0] + h * fin->strides[1] + i * fin->strides[2];
        for (int64_t j = 0; j < V; ++j) dst[j * fin->strides[3]] = S[i * V + j];
      }
    }
  });
  if (oom)
    return fail(a.ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: no memory for the state buffer", a.op);
  return PTERON_OK;
}

int32_t gated_delta_rule_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return gated_delta_rule(Args{ctx, args, n, "llama::gated_delta_rule.out"});
}
int32_t channelwise_gated_delta_rule_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                         size_t n) {
  return gated_delta_rule(Args{ctx, args, n, "llama::channelwise_gated_delta_rule.out"});
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"llama::gated_delta_rule", "out", nullptr, gated_delta_rule_out, PTERON_KERNEL_PRIORITY, 0},
    {"llama::channelwise_gated_delta_rule", "out", nullptr, channelwise_gated_delta_rule_out,
     PTERON_KERNEL_PRIORITY, 0})
