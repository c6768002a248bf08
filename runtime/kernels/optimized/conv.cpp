// SPDX-License-Identifier: BSD-3-Clause
// conv.cpp - optimized float32 aten::convolution.out (1-D, 2-D and 3-D,
// grouped, strided, padded, dilated, and transposed with output padding).
//
// Three paths:
//  - depthwise-like (one input channel per group, 1-D or 2-D): a direct
//    kernel per output plane (isa_kernels.cpp, depthwise_plane);
//  - everything else: im2col + GEMM. For each (batch, group, tile of output
//    positions) the input patches of the tile are gathered into a
//    [Cin/groups * kernel, tile] matrix (skipped for 1x1 stride-1 unpadded
//    convolutions, whose input already is that matrix), and
//    out[group's channels, tile] = W_group @ patches + bias runs on the
//    ISA-dispatched Eigen GEMM. An NCHW output is written in place; a
//    channels-last output is written in place as its transpose;
//  - transposed: GEMM + col2im. For each (batch, group, block of the
//    group's output channels, tile of input positions) the product
//    cols[(oc, tap), tile] = W_group^T @ input[Cin_g, tile] runs on the same
//    GEMM, and col2im adds every column into the output position its
//    (input position, tap) reaches. The output channels are filled with the
//    bias first; a task owns its output channels, so no two tasks add into
//    the same element.
// Tasks (batch x group x tile) are spread over the thread pool in as many
// chunks as there are threads, each chunk with its own patch buffer.
#include <cstdint>
#include <cstring>

#include "conv_checks.h"
#include "strided_views.h"
#include "tensor_checks.h"
#include "opt_util.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

// Geometry in three spatial slots (D, H, W); unused leading slots have
// size 1 and stride 0.
// The checked sizes and strides, plus the GEMM view of them.
struct Geometry : ConvGeometry {
  int64_t P = 0;  // output positions per plane
  int64_t K = 0;  // Cin_g * kernel taps
};

// Gathers the patches of output positions [p0, p1) into col (row-major,
// K rows of p1 - p0). `in` points at the group's first input channel of one
// batch entry.
void im2col(const Geometry& g, const float* in, int64_t p0, int64_t p1, float* col) {
  const int64_t width = p1 - p0;
  const int64_t ow_n = g.out[2], oh_n = g.out[1];
  int64_t row = 0;
  for (int64_t icg = 0; icg < g.Cin_g; ++icg) {
    const float* in_c = in + icg * g.is_c;
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, ++row) {
          float* dst = col + row * width;
          const int64_t shift = kw * g.dil[2] - g.pad[2];
          int64_t lo, hi;
          valid_range(ow_n, g.in[2], g.stride[2], shift, &lo, &hi);
          // Walk the tile one output row (fixed od, oh) at a time.
          int64_t p = p0;
          while (p < p1) {
            const int64_t ow0 = p % ow_n;
            const int64_t rest = p / ow_n;
            const int64_t oh = rest % oh_n, od = rest / oh_n;
            int64_t seg = ow_n - ow0;
            if (seg > p1 - p) seg = p1 - p;
            float* d = dst + (p - p0);
            const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
            const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
              std::memset(d, 0, static_cast<size_t>(seg) * sizeof(float));
            } else {
              const float* src = in_c + id * g.is_s[0] + ih * g.is_s[1];
              const int64_t a = lo > ow0 ? lo : ow0;
              const int64_t b = hi < ow0 + seg ? hi : ow0 + seg;
              int64_t ow = ow0;
              for (; ow < a && ow < ow0 + seg; ++ow) d[ow - ow0] = 0.0f;
              if (g.stride[2] == 1 && g.is_s[2] == 1) {
                if (b > a)
                  std::memcpy(d + (a - ow0), src + a + shift,
                              static_cast<size_t>(b - a) * sizeof(float));
                ow = b > a ? b : ow;
              } else {
                const int64_t step = g.stride[2] * g.is_s[2];
                int64_t off = (ow * g.stride[2] + shift) * g.is_s[2];
                for (; ow < b; ++ow, off += step) d[ow - ow0] = src[off];
              }
              for (; ow < ow0 + seg; ++ow) d[ow - ow0] = 0.0f;
            }
            p += seg;
          }
        }
  }
}

int32_t conv_direct_depthwise(const Geometry& g, const float* in, const float* w, const float* bias,
                              float* out) {
  const IsaOps& isa = ops();
  const int64_t planes = g.N * g.Cout;
  const int64_t work = g.P * g.k[1] * g.k[2];
  const int64_t grain = work > 0 ? (32768 + work - 1) / work : planes;
  parallel_for(0, planes, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.Cout, oc = t % g.Cout;
      const int64_t ic = oc / g.Cout_g;  // Cin_g == 1
      DwPlane p;
      p.in = in + n * g.is_n + ic * g.is_c;
      p.ih = g.in[1];
      p.iw = g.in[2];
      p.is_h = g.is_s[1];
      p.is_w = g.is_s[2];
      p.w = w + oc * g.ws_o;
      p.kh = g.k[1];
      p.kw = g.k[2];
      p.ws_h = g.ws_s[1];
      p.ws_w = g.ws_s[2];
      p.bias = bias ? bias[oc] : 0.0f;
      p.out = out + n * g.os_n + oc * g.os_c;
      p.oh = g.out[1];
      p.ow = g.out[2];
      p.os_h = g.os_s[1];
      p.os_w = g.os_s[2];
      p.sh = g.stride[1];
      p.sw = g.stride[2];
      p.ph = g.pad[1];
      p.pw = g.pad[2];
      p.dh = g.dil[1];
      p.dw = g.dil[2];
      isa.depthwise_plane(p);
    }
  });
  return PTERON_OK;
}

// The weight's data, or (when !flat) a dense copy of it in `buf`, whose
// dim-0 stride `packed_rs` is then stored in *rs.
const float* weight_rows(const pteron_tensor* weight, bool flat, float* buf, int64_t packed_rs,
                         int64_t* rs) {
  const float* wp = static_cast<const float*>(weight->data);
  if (flat) return wp;
  int64_t dense[PTERON_MAX_DIM];
  dense_strides(weight->sizes, weight->dim, dense);
  copy_strided(wp, weight->strides, buf, dense, weight->sizes, weight->dim);
  *rs = packed_rs;
  return buf;
}

// Runs run_chunk over [0, chunks) (inline for one chunk, else on the thread
// pool); OUT_OF_MEMORY (recorded) when a chunk set `failed`.
template <typename F>
int32_t run_chunks(pteron_kernel_context* ctx, const char* op, int64_t chunks,
                   const std::atomic<bool>& failed, F& run_chunk) {
  if (chunks == 1)
    run_chunk(0, 1);
  else
    parallel_for(0, chunks, 1, run_chunk);
  if (failed.load())
    return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: cannot allocate the GEMM packing buffers",
                op);
  return PTERON_OK;
}

// How the output planes of one batch entry are addressed as a matrix:
// [Cout, P] with unit position stride (NCHW), [P, Cout] with unit channel
// stride (channels-last), or neither (computed in scratch, then scattered).
enum class OutLayout { Rows, Cols, Scratch };

// The im2col + GEMM path's decisions, made before the one scratch request.
struct GemmPlan {
  bool w_flat = false;  // weight usable in place as [Cout, K]
  OutLayout layout = OutLayout::Scratch;
  int64_t os_p = 0;        // output stride of a flattened position
  bool pointwise = false;  // 1x1, stride 1, unpadded: no im2col
  int64_t is_p = 0;        // input stride of a flattened position
  int64_t tile = 1, tiles = 1, tasks = 0, chunks = 1, per_chunk = 0;
  size_t w_region = 0, chunk_region = 0;
};

void plan_gemm(const Geometry& g, const pteron_tensor* weight, const pteron_tensor* input,
               const pteron_tensor* out, ScratchPlan* scratch, GemmPlan* p) {
  // Weight as [Cout, K]: in place when (icg, kd, kh, kw) collapse to one
  // unit stride, else packed.
  int64_t wk = 0, wk_st = 0;
  p->w_flat = collapse(weight, 1, weight->dim, &wk, &wk_st) && (wk_st == 1 || wk <= 1);
  int64_t np = 0;
  const bool out_flat = collapse(out, 2, out->dim, &np, &p->os_p);
  if (out_flat && (p->os_p == 1 || g.P <= 1))
    p->layout = OutLayout::Rows;
  else if (out_flat && (g.os_c == 1 || g.Cout_g <= 1))
    p->layout = OutLayout::Cols;
  else
    p->layout = OutLayout::Scratch;
  p->pointwise = true;
  for (int s = 0; s < 3; ++s)
    p->pointwise = p->pointwise && g.k[s] == 1 && g.stride[s] == 1 && g.pad[s] == 0;
  if (p->pointwise)
    p->pointwise = collapse(input, 2, input->dim, &np, &p->is_p) &&
                   (p->is_p == 1 || g.is_c == 1 || g.P <= 1 || g.Cin_g <= 1);

  const int64_t threads = pteron_parallel_threads();
  const int64_t ng = g.N * g.groups;
  // Tile width: a patch buffer of about 256 KiB, and enough tiles to feed
  // every thread when batch x groups alone does not.
  int64_t tile = (int64_t{1} << 16) / (g.K > 0 ? g.K : 1);
  if (tile < 64) tile = 64;
  if (threads > 1 && ng < threads) {
    const int64_t want = ceil_div(g.P, ceil_div(threads, ng));
    if (want < tile) tile = want < 16 ? 16 : want;
  }
  if (tile > g.P) tile = g.P;
  if (tile < 1) tile = 1;
  p->tile = tile;
  p->tiles = ceil_div(g.P, tile);
  p->tasks = ng * p->tiles;
  p->chunks = threads > 1 ? (threads < p->tasks ? threads : p->tasks) : 1;
  // Small convolutions run inline.
  if (double(g.N) * double(g.Cout) * double(g.P) * double(g.K) < 262144.0) p->chunks = 1;
  if (p->chunks < 1) p->chunks = 1;
  p->per_chunk =
      (p->pointwise ? 0 : g.K * tile) + (p->layout == OutLayout::Scratch ? g.Cout_g * tile : 0);
  p->w_region = scratch->add(p->w_flat ? 0 : g.Cout * g.K);
  p->chunk_region = scratch->add(p->per_chunk * p->chunks);
}

int32_t conv_gemm(pteron_kernel_context* ctx, const char* op, const Geometry& g, const GemmPlan& pl,
                  const ScratchPlan& scratch, const pteron_tensor* weight, const float* in,
                  const float* bias, float* out) {
  // The weight as rows of K (its dim-0 stride, or K once packed).
  int64_t w_rs = g.ws_o;
  const float* wp = weight_rows(weight, pl.w_flat, scratch.get(pl.w_region), g.K, &w_rs);
  float* chunk_mem = scratch.get(pl.chunk_region);
  const int64_t tile = pl.tile, tiles = pl.tiles, tasks = pl.tasks, chunks = pl.chunks;
  const int64_t os_p = pl.os_p, is_p = pl.is_p;

  const IsaOps& isa = ops();
  std::atomic<bool> failed{false};
  auto run_chunk = [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* col = chunk_mem + c * pl.per_chunk;
      float* cbuf = col + (pl.pointwise ? 0 : g.K * tile);
      const int64_t t0 = c * tasks / chunks, t1 = (c + 1) * tasks / chunks;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / (g.groups * tiles);
        const int64_t grp = (t / tiles) % g.groups;
        const int64_t p0 = (t % tiles) * tile;
        const int64_t p1 = p0 + tile < g.P ? p0 + tile : g.P;
        const int64_t width = p1 - p0;
        const float* in_g = in + n * g.is_n + grp * g.Cin_g * g.is_c;
        Operand patches;  // [K, width]
        if (pl.pointwise) {
          as_operand(in_g + p0 * is_p, g.Cin_g, width, g.is_c, is_p, &patches);
        } else {
          im2col(g, in_g, p0, p1, col);
          patches.p = col;
          patches.ld = width;
          patches.trans = false;
        }
        Operand wg;  // [Cout_g, K]
        as_operand(wp + grp * g.Cout_g * w_rs, g.Cout_g, g.K, w_rs, 1, &wg);
        float* o = out + n * g.os_n + grp * g.Cout_g * g.os_c;
        Gemm gm;
        gm.k = g.K;
        gm.alpha = 1.0f;
        gm.beta = bias ? 1.0f : 0.0f;
        gm.bias = bias ? bias + grp * g.Cout_g : nullptr;
        if (pl.layout == OutLayout::Cols) {
          // out^T [width, Cout_g] = patches^T @ W^T
          const Operand a = transposed(patches), b = transposed(wg);
          gm.m = width;
          gm.n = g.Cout_g;
          gm.a = a.p;
          gm.lda = a.ld;
          gm.a_trans = a.trans;
          gm.b = b.p;
          gm.ldb = b.ld;
          gm.b_trans = b.trans;
          gm.c = o + p0 * os_p;
          gm.ldc = width <= 1 ? g.Cout_g : os_p;
          gm.bias_rs = 0;
          gm.bias_cs = 1;
        } else {
          gm.m = g.Cout_g;
          gm.n = width;
          gm.a = wg.p;
          gm.lda = wg.ld;
          gm.a_trans = wg.trans;
          gm.b = patches.p;
          gm.ldb = patches.ld;
          gm.b_trans = patches.trans;
          gm.bias_rs = 1;
          gm.bias_cs = 0;
          if (pl.layout == OutLayout::Rows) {
            gm.c = o + (g.P <= 1 ? 0 : p0 * os_p);
            gm.ldc = g.Cout_g <= 1 ? width : g.os_c;
          } else {
            gm.c = cbuf;
            gm.ldc = width;
          }
        }
        if (!isa.sgemm(gm)) {
          failed.store(true, std::memory_order_relaxed);
          return;
        }
        if (pl.layout == OutLayout::Scratch) {
          // Scatter [Cout_g, width] to the output positions p0 .. p1.
          for (int64_t oc = 0; oc < g.Cout_g; ++oc)
            for (int64_t p = p0; p < p1; ++p) {
              const int64_t ow = p % g.out[2], rest = p / g.out[2];
              const int64_t oh = rest % g.out[1], od = rest / g.out[1];
              o[oc * g.os_c + od * g.os_s[0] + oh * g.os_s[1] + ow * g.os_s[2]] =
                  cbuf[oc * width + (p - p0)];
            }
        }
      }
    }
  };
  return run_chunks(ctx, op, chunks, failed, run_chunk);
}

// ---- transposed convolution -------------------------------------------------

// The GEMM + col2im path's decisions, made before the one scratch request.
struct TransPlan {
  int64_t T = 0;         // kernel taps
  int64_t P = 0;         // input positions per plane
  bool w_flat = false;   // weight usable in place: (oc, tap) at unit stride
  bool in_flat = false;  // input positions collapse to one stride is_p
  int64_t is_p = 0;
  int64_t blocks = 1, block = 0;  // output channels of a group per task
  int64_t tile = 1, tiles = 1, tasks = 0, chunks = 1, per_chunk = 0;
  size_t w_region = 0, chunk_region = 0;
};

void plan_transposed(const Geometry& g, const pteron_tensor* weight, const pteron_tensor* input,
                     ScratchPlan* scratch, TransPlan* p) {
  p->T = g.k[0] * g.k[1] * g.k[2];
  p->P = g.in[0] * g.in[1] * g.in[2];
  int64_t wk = 0, wk_st = 0;
  p->w_flat = collapse(weight, 1, weight->dim, &wk, &wk_st) && (wk_st == 1 || wk <= 1);
  int64_t np = 0;
  p->in_flat = collapse(input, 2, input->dim, &np, &p->is_p) &&
               (p->is_p == 1 || g.is_c == 1 || p->P <= 1 || g.Cin_g <= 1);
  const int64_t threads = pteron_parallel_threads();
  const int64_t ng = g.N * g.groups;
  p->blocks = 1;
  if (threads > 1 && ng < threads) p->blocks = ceil_div(threads, ng);
  if (p->blocks > g.Cout_g) p->blocks = g.Cout_g > 0 ? g.Cout_g : 1;
  p->block = ceil_div(g.Cout_g, p->blocks);
  p->blocks = g.Cout_g > 0 ? ceil_div(g.Cout_g, p->block) : 1;
  // Tile width: a column buffer of about 256 KiB.
  const int64_t rows = p->block * p->T;
  int64_t tile = (int64_t{1} << 16) / (rows > 0 ? rows : 1);
  if (tile < 64) tile = 64;
  if (tile > p->P) tile = p->P;
  if (tile < 1) tile = 1;
  p->tile = tile;
  p->tiles = ceil_div(p->P, tile);
  p->tasks = ng * p->blocks;
  p->chunks = threads > 1 ? (threads < p->tasks ? threads : p->tasks) : 1;
  if (double(g.N) * double(g.Cout) * double(p->P) * double(g.Cin_g) * double(p->T) < 262144.0)
    p->chunks = 1;
  if (p->chunks < 1) p->chunks = 1;
  p->per_chunk = rows * tile + (p->in_flat ? 0 : g.Cin_g * tile);
  p->w_region = scratch->add(p->w_flat ? 0 : g.C * g.Cout_g * p->T);
  p->chunk_region = scratch->add(p->per_chunk * p->chunks);
}

// Copies input positions [p0, p1) of Cin_g channels (from `in`, the group's
// first channel of one batch entry) into buf as [Cin_g, p1 - p0].
void gather_positions(const Geometry& g, const float* in, int64_t p0, int64_t p1, float* buf) {
  const int64_t width = p1 - p0;
  for (int64_t icg = 0; icg < g.Cin_g; ++icg) {
    const float* in_c = in + icg * g.is_c;
    float* d = buf + icg * width;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t iw = p % g.in[2], rest = p / g.in[2];
      const int64_t ih = rest % g.in[1], id = rest / g.in[1];
      d[p - p0] = in_c[id * g.is_s[0] + ih * g.is_s[1] + iw * g.is_s[2]];
    }
  }
}

// Adds cols[(oc, tap), p - p0] (oc in [0, noc), relative to `out`, the
// block's first output channel of one batch entry) into the output position
// that input position p and the tap reach.
void col2im_add(const Geometry& g, int64_t T, const float* cols, int64_t noc, int64_t p0,
                int64_t p1, float* out) {
  const int64_t width = p1 - p0;
  for (int64_t oc = 0; oc < noc; ++oc) {
    float* out_c = out + oc * g.os_c;
    int64_t t = 0;
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, ++t) {
          const float* src = cols + (oc * T + t) * width;
          // Input columns iw with 0 <= iw * stride - pad + kw * dil < out.
          const int64_t shift = kw * g.dil[2] - g.pad[2];
          int64_t lo = 0;
          if (shift < 0) lo = (-shift + g.stride[2] - 1) / g.stride[2];
          int64_t hi = g.out[2] - shift <= 0 ? 0 : (g.out[2] - shift - 1) / g.stride[2] + 1;
          if (hi > g.in[2]) hi = g.in[2];
          int64_t p = p0;
          while (p < p1) {
            const int64_t iw0 = p % g.in[2], rest = p / g.in[2];
            const int64_t ih = rest % g.in[1], id = rest / g.in[1];
            int64_t seg = g.in[2] - iw0;
            if (seg > p1 - p) seg = p1 - p;
            const int64_t od = id * g.stride[0] - g.pad[0] + kd * g.dil[0];
            const int64_t oh = ih * g.stride[1] - g.pad[1] + kh * g.dil[1];
            if (od >= 0 && od < g.out[0] && oh >= 0 && oh < g.out[1]) {
              float* row = out_c + od * g.os_s[0] + oh * g.os_s[1];
              const int64_t a = lo > iw0 ? lo : iw0;
              const int64_t b = hi < iw0 + seg ? hi : iw0 + seg;
              const float* s = src + (p - p0) - iw0;
              const int64_t step = g.stride[2] * g.os_s[2];
              int64_t off = (a * g.stride[2] + shift) * g.os_s[2];
              for (int64_t iw = a; iw < b; ++iw, off += step) row[off] += s[iw];
            }
            p += seg;
          }
        }
  }
}

int32_t conv_transposed(pteron_kernel_context* ctx, const char* op, const Geometry& g,
                        const TransPlan& pl, const ScratchPlan& scratch,
                        const pteron_tensor* weight, const float* in, const float* bias,
                        float* out) {
  // The weight as rows of (output channel, tap), one per input channel.
  int64_t w_rs = g.ws_o;
  const float* wp =
      weight_rows(weight, pl.w_flat, scratch.get(pl.w_region), g.Cout_g * pl.T, &w_rs);
  float* chunk_mem = scratch.get(pl.chunk_region);
  const int64_t T = pl.T, P = pl.P, tile = pl.tile, tasks = pl.tasks, chunks = pl.chunks;
  const IsaOps& isa = ops();
  std::atomic<bool> failed{false};
  auto run_chunk = [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* cols = chunk_mem + c * pl.per_chunk;
      float* ibuf = cols + pl.block * T * tile;
      const int64_t t0 = c * tasks / chunks, t1 = (c + 1) * tasks / chunks;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / (g.groups * pl.blocks);
        const int64_t grp = (t / pl.blocks) % g.groups;
        const int64_t oc0 = (t % pl.blocks) * pl.block;
        const int64_t oc1 = oc0 + pl.block < g.Cout_g ? oc0 + pl.block : g.Cout_g;
        if (oc1 <= oc0) continue;
        float* o = out + n * g.os_n + (grp * g.Cout_g + oc0) * g.os_c;
        // The block's output channels start at their bias (or zero).
        for (int64_t oc = oc0; oc < oc1; ++oc) {
          const float b0 = bias ? bias[grp * g.Cout_g + oc] : 0.0f;
          float* oc_p = o + (oc - oc0) * g.os_c;
          for (int64_t od = 0; od < g.out[0]; ++od)
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
              float* row = oc_p + od * g.os_s[0] + oh * g.os_s[1];
              for (int64_t ow = 0; ow < g.out[2]; ++ow) row[ow * g.os_s[2]] = b0;
            }
        }
        const float* in_g = in + n * g.is_n + grp * g.Cin_g * g.is_c;
        for (int64_t p0 = 0; p0 < P; p0 += tile) {
          const int64_t p1 = p0 + tile < P ? p0 + tile : P;
          const int64_t width = p1 - p0;
          Operand x;  // [Cin_g, width]
          if (!pl.in_flat ||
              !as_operand(in_g + p0 * pl.is_p, g.Cin_g, width, g.is_c, pl.is_p, &x)) {
            gather_positions(g, in_g, p0, p1, ibuf);
            x.p = ibuf;
            x.ld = width;
            x.trans = false;
          }
          // A = W_group^T restricted to the block: [(oc1 - oc0) * T, Cin_g],
          // element (r, ic) at wp[(grp * Cin_g + ic) * w_rs + oc0 * T + r].
          Gemm gm;
          gm.m = (oc1 - oc0) * T;
          gm.n = width;
          gm.k = g.Cin_g;
          gm.a = wp + grp * g.Cin_g * w_rs + oc0 * T;
          gm.lda = g.Cin_g <= 1 ? gm.m : w_rs;
          gm.a_trans = true;
          gm.b = x.p;
          gm.ldb = x.ld;
          gm.b_trans = x.trans;
          gm.c = cols;
          gm.ldc = width;
          gm.alpha = 1.0f;
          gm.beta = 0.0f;
          if (!isa.sgemm(gm)) {
            failed.store(true, std::memory_order_relaxed);
            return;
          }
          col2im_add(g, T, cols, oc1 - oc0, p0, p1, o);
        }
      }
    }
  };
  return run_chunks(ctx, op, chunks, failed, run_chunk);
}

// convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//   SymInt[] padding, SymInt[] dilation, bool transposed,
//   SymInt[] output_padding, SymInt groups, *, Tensor(a!) out)
int32_t convolution_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::convolution.out";
  Args a{ctx, args, n, op};
  ConvOperands c;
  PTERON_CHECK_OK(read_convolution(a, /*float32_only=*/true, &c, /*allow_transposed=*/true));
  const pteron_tensor *input = c.input, *weight = c.weight, *bias = c.bias;
  pteron_tensor* out = c.out;
  Geometry g;
  static_cast<ConvGeometry&>(g) = c.g;
  const int32_t S = g.S;
  g.P = g.out[0] * g.out[1] * g.out[2];
  g.K = g.Cin_g * g.k[0] * g.k[1] * g.k[2];
  if (numel(out) == 0) return PTERON_OK;

  const float* in = static_cast<const float*>(input->data);
  const float* w = static_cast<const float*>(weight->data);
  float* o = static_cast<float*>(out->data);
  const bool direct = !g.transposed && g.Cin_g == 1 && S <= 2;
  // One scratch request: the bias as dense float32 when it is float64 or
  // strided, and the GEMM path's weight copy and patch buffers.
  ScratchPlan scratch;
  const bool bias_copy =
      bias && !(bias->dtype == PTERON_DTYPE_FLOAT32 && (bias->strides[0] == 1 || g.Cout <= 1));
  const size_t ib = scratch.add(bias_copy ? g.Cout : 0);
  GemmPlan plan;
  TransPlan tplan;
  if (g.transposed)
    plan_transposed(g, weight, input, &scratch, &tplan);
  else if (!direct)
    plan_gemm(g, weight, input, out, &scratch, &plan);
  if (!scratch.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
  const float* bv = bias ? static_cast<const float*>(bias->data) : nullptr;
  if (bias_copy) {
    float* d = scratch.get(ib);
    for (int64_t c = 0; c < g.Cout; ++c)
      d[c] = load<float>(bias->data, bias->dtype, c * bias->strides[0]);
    bv = d;
  }
  if (g.transposed) return conv_transposed(ctx, op, g, tplan, scratch, weight, in, bv, o);
  if (direct) return conv_direct_depthwise(g, in, w, bv, o);
  return conv_gemm(ctx, op, g, plan, scratch, weight, in, bv, o);
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::convolution", "out", PTERON_OPT_KEY, convolution_out,
                         PTERON_KERNEL_PRIORITY, 0})
