// SPDX-License-Identifier: BSD-3-Clause
// nhwc.cpp - the drivers of nhwc.h, compiled at the baseline ISA: the table of the chosen
// level, the split of each node's work over pteron_parallel_for (output rows, pixels or
// element ranges, each chunk at least kGrainWork multiply-adds or elements so that a small
// tensor stays on the calling thread), and the shape walking of broadcasting binaries.
#include "pteron_cpu/nhwc.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "pteron_cpu/gemm.h"
#include "pteron_cpu/isa.h"
#include "pteron/kernel.h"

namespace pteron_cpu {

namespace {

// The least work (about one multiply-add or element each) worth a chunk of its own: a
// parallel_for costs a few microseconds.
constexpr int64_t kGrainWork = 32768;
// The same for a dense element-wise node (one or two reads and a write per element, memory
// bound): smaller, so that a tensor the node before split between the threads is also split
// here, each thread reading what it wrote. Serial, a 28 x 28 x 32 Add at 2 threads took
// 11 us against 5.5 at 1 (half of its inputs in the other core's cache).
constexpr int64_t kGrainElementwise = 8192;

const NhwcOps* table_for(int level) {
#if defined(PTERON_CPU_HAVE_X86_ISAS)
  if (level == 2) return nhwc_ops_avx512();
  if (level == 1) return nhwc_ops_avx2();
#endif
  (void)level;
  return nhwc_ops_baseline();
}

bool has_range(float lo, float hi) {
  return lo != -std::numeric_limits<float>::infinity() ||
         hi != std::numeric_limits<float>::infinity();
}

template <typename F>
void parallel(int64_t n, int64_t grain, F& f) {
  pteron_parallel_for(
      0, n, grain, [](void* u, int64_t b, int64_t e) { (*static_cast<F*>(u))(b, e); }, &f);
}

}  // namespace

int64_t grain_for(int64_t work_per_item) {
  if (work_per_item <= 0) return 1 << 30;
  const int64_t g = kGrainWork / work_per_item;
  return g < 1 ? 1 : g;
}

const NhwcOps& nhwc_ops() {
  static const NhwcOps* chosen = table_for(isa_level());
  return *chosen;
}

// ---- depthwise convolution --------------------------------------------------------------------

namespace {

// Depth multiplier above 1: output channel o reads input channel o / m. Plain loops (the
// exporter emits it for Conv2d(groups=C, out_channels=m*C), rare in real models).
void dw_multiplier_row(const DwConv2d& p, const float* const* rows, float* out) {
  const int64_t oc = p.ic * p.m;
  const bool clamp = has_range(p.lo, p.hi);
  for (int64_t ox = 0; ox < p.ow; ++ox) {
    float* o = out + ox * oc;
    for (int64_t j = 0; j < oc; ++j) o[j] = p.bias[j];
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pl + kx * p.dw;
        if (ix < 0 || ix >= p.iw) continue;
        const float* s = rows[ky] + ix * p.ic;
        const float* w = p.w + (ky * p.kw + kx) * oc;
        for (int64_t i = 0; i < p.ic; ++i)
          for (int64_t k = 0; k < p.m; ++k) o[i * p.m + k] += w[i * p.m + k] * s[i];
      }
    }
    if (clamp)
      for (int64_t j = 0; j < oc; ++j) {
        float v = o[j];
        v = v < p.lo ? p.lo : v;
        o[j] = v > p.hi ? p.hi : v;
      }
  }
}

// One output row of p from the input rows its window covers (rows[ky], ky < p.kh), then the
// activation.
void dw_output_row(const DwConv2d& p, const float* const* rows, float* orow) {
  const NhwcOps& k = nhwc_ops();
  const int64_t oc = p.ic * p.m;
  if (p.m != 1) {
    dw_multiplier_row(p, rows, orow);
  } else {
    DwRow d;
    d.rows = rows;
    d.iw = p.iw;
    d.c = p.ic;
    d.ow = p.ow;
    d.kh = p.kh;
    d.kw = p.kw;
    d.sw = p.sw;
    d.dw = p.dw;
    d.pl = p.pl;
    d.w = p.w;
    d.bias = p.bias;
    d.out = orow;
    d.lo = p.lo;
    d.hi = p.hi;
    d.clamp = has_range(p.lo, p.hi);
    k.dw_row(d);
  }
  if (p.act) k.unary(p.act_op, orow, orow, p.ow * oc, 0.0f, 0.0f);
}

}  // namespace

void depthwise_conv2d(const DwConv2d& p, const float* in, float* out, const float* zeros) {
  const int64_t oc = p.ic * p.m;
  const int64_t rows_total = p.n * p.oh;
  if (p.kh > kMaxWindowRows) return;
  auto body = [&](int64_t b, int64_t e) {
    const float* rows[kMaxWindowRows];
    for (int64_t r = b; r < e; ++r) {
      const int64_t img = r / p.oh, oy = r % p.oh;
      const float* base = in + img * p.ih * p.iw * p.ic;
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        const int64_t iy = oy * p.sh - p.pt + ky * p.dh;
        rows[ky] = (iy >= 0 && iy < p.ih) ? base + iy * p.iw * p.ic : zeros;
      }
      dw_output_row(p, rows, out + r * p.ow * oc);
    }
  };
  parallel(rows_total, grain_for(p.ow * oc * p.kh * p.kw), body);
}

namespace {

// A thread's ring of expanded rows (expand_depthwise_conv2d) and, after it, 2 pixels of scratch:
// kept between calls, it grows to the largest (kernel_h x width + 2) x channels the thread has
// seen.
thread_local std::vector<float> t_expand_ring;

// Which input rows the thread's ring holds, and for which call and range: a thread that goes on
// with the output rows right after the ones it did last in the same call (the thread pool deals
// each thread a contiguous share of chunks, claimed in order) keeps them; any other range starts
// afresh.
struct ExpandRing {
  uint64_t call = 0;      // ExpandJob::call the ring was filled for (0: none)
  int64_t next_row = -1;  // the output row after the last one this thread computed
  int64_t held[kMaxWindowRows];  // slot s holds input row held[s], image-major (-1: nothing)
};
thread_local ExpandRing t_expand_held;
std::atomic<uint64_t> g_expand_calls{0};

struct ExpandJob {
  const ExpandDepthwise* p;
  const float* x;
  float* out;
  const float* zeros;
  int64_t rows_total;
  int64_t pixels, mr;  // the expansion's M (n x ih x iw) and the GEMM's row block
  uint64_t call;       // this call's number (g_expand_calls), for ExpandRing
  std::atomic<bool> failed{false};
};

// The expansion of pixels [p0, p1) (image-major, p1 - p0 <= iw) into dst (ldc = channels), each
// pixel by the microkernel the unfused 1x1 convolution gives it, so the bits are the same:
// gemm_packed runs all `pixels` rows in blocks of mr from pixel 0 and the one-row microkernel
// (which sums in another order) only on a last block of one pixel; a range of mr * k + 1 pixels
// here goes as mr * k - 1 and 2, and a lone pixel (iw of 1 or 2) is computed beside its
// neighbour into the scratch and copied.
void expand_pixels(const ExpandJob& j, int64_t p0, int64_t p1, float* dst, float* scratch) {
  const DwConv2d& d = j.p->dw;
  const PackedWeights& w = *j.p->w;
  const int64_t cin = w.k();
  auto gemm = [&](int64_t q0, int64_t q1, float* c) {
    gemm_packed_serial(q1 - q0, j.x + q0 * cin, cin, w, c, d.ic, j.p->lo, j.p->hi, j.p->act);
  };
  const bool last_alone = p1 == j.pixels && j.pixels % j.mr == 1;
  const int64_t e = last_alone ? p1 - 1 : p1;
  const int64_t len = e - p0;
  if (len == 1) {
    const int64_t a = p0 > 0 ? p0 - 1 : p0;  // a pair of rows, p0 one of them
    gemm(a, a + 2, scratch);
    std::memcpy(dst, scratch + (p0 - a) * d.ic, size_t(d.ic) * sizeof(float));
  } else if (len % j.mr == 1) {
    gemm(p0, e - 2, dst);
    gemm(e - 2, e, dst + (e - 2 - p0) * d.ic);
  } else if (len > 0) {
    gemm(p0, e, dst);
  }
  if (last_alone) gemm(e, p1, dst + (e - p0) * d.ic);
}

// Output rows [b, e) of ExpandJob (image-major), computed with the thread's own ring. Input row
// iy of an image is held in slot iy % kh: the kh rows one output row reads are consecutive
// (dilation 1), so they never share a slot; a slot records which image's row it holds.
void expand_rows(void* user, int64_t b, int64_t e) {
  ExpandJob& j = *static_cast<ExpandJob*>(user);
  const DwConv2d& d = j.p->dw;
  const int64_t row = d.iw * d.ic;
  const size_t need = size_t(d.kh) * size_t(row) + 2 * size_t(d.ic);
  ExpandRing& st = t_expand_held;
  if (t_expand_ring.size() < need) {
    st.call = 0;
    try {
      t_expand_ring.resize(need);
    } catch (const std::bad_alloc&) {
      j.failed.store(true, std::memory_order_relaxed);
      return;
    }
  }
  if (st.call != j.call || st.next_row != b) {
    st.call = j.call;
    for (int64_t s = 0; s < d.kh; ++s) st.held[s] = -1;
  }
  st.next_row = e;
  float* ring = t_expand_ring.data();
  float* scratch = ring + d.kh * row;
  const float* rows[kMaxWindowRows];
  for (int64_t r = b; r < e; ++r) {
    const int64_t img = r / d.oh, oy = r % d.oh;
    for (int64_t ky = 0; ky < d.kh; ++ky) {
      const int64_t iy = oy * d.sh - d.pt + ky;
      if (iy < 0 || iy >= d.ih) {
        rows[ky] = j.zeros;
        continue;
      }
      const int64_t slot = iy % d.kh, in_row = img * d.ih + iy;
      float* dst = ring + slot * row;
      if (st.held[slot] != in_row) {
        expand_pixels(j, in_row * d.iw, (in_row + 1) * d.iw, dst, scratch);
        st.held[slot] = in_row;
      }
      rows[ky] = dst;
    }
    dw_output_row(d, rows, j.out + r * d.ow * d.ic);
  }
}

}  // namespace

bool expand_depthwise_conv2d(const ExpandDepthwise& p, const float* x, float* out,
                             const float* zeros) {
  const DwConv2d& d = p.dw;
  if (!p.w || p.w->n() != d.ic || d.m != 1 || d.dh != 1 || d.kh < 1 || d.kh > kMaxWindowRows)
    return true;  // not this function's case (the caller checked it): nothing to do
  ExpandJob j;
  j.p = &p, j.x = x, j.out = out, j.zeros = zeros;
  j.rows_total = d.n * d.oh;
  j.pixels = d.n * d.ih * d.iw;
  j.mr = std::max<int64_t>(1, gemm_rows_per_block());
  if (j.rows_total <= 0 || j.pixels <= 0) return true;
  j.call = g_expand_calls.fetch_add(1, std::memory_order_relaxed) + 1;
  // Split by output rows as any node (pteron_parallel_for's chunks, a contiguous share per
  // thread): a thread computes again only the kh - stride input rows above a range that does
  // not follow its previous one (its share's first, or one taken from another thread's share).
  pteron_parallel_for(0, j.rows_total, 1, &expand_rows, &j);
  return !j.failed.load(std::memory_order_relaxed);
}

// ---- pooling ----------------------------------------------------------------------------------

namespace {

void pool2d(const Pool2d& p, const float* in, float* out, bool max) {
  const NhwcOps& k = nhwc_ops();
  auto body = [&](int64_t b, int64_t e) {
    const float* rows[kMaxWindowRows];
    for (int64_t r = b; r < e; ++r) {
      const int64_t img = r / p.oh, oy = r % p.oh;
      const float* base = in + img * p.ih * p.iw * p.c;
      const int64_t kh = p.kh < kMaxWindowRows ? p.kh : kMaxWindowRows;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = oy * p.sh - p.pt + ky * p.dh;
        rows[ky] = (iy >= 0 && iy < p.ih) ? base + iy * p.iw * p.c : nullptr;
      }
      PoolRow q;
      q.rows = rows;
      q.iw = p.iw;
      q.c = p.c;
      q.ow = p.ow;
      q.kh = kh;
      q.kw = p.kw;
      q.sw = p.sw;
      q.dw = p.dw;
      q.pl = p.pl;
      q.out = out + r * p.ow * p.c;
      q.lo = p.lo;
      q.hi = p.hi;
      q.clamp = has_range(p.lo, p.hi);
      if (max)
        k.max_pool_row(q);
      else
        k.avg_pool_row(q);
    }
  };
  parallel(p.n * p.oh, grain_for(p.ow * p.c * p.kh * p.kw), body);
}

}  // namespace

void max_pool2d(const Pool2d& p, const float* in, float* out) { pool2d(p, in, out, true); }
void avg_pool2d(const Pool2d& p, const float* in, float* out) { pool2d(p, in, out, false); }

int64_t global_avg_pool2d_parts(int64_t hw, int64_t c) {
  constexpr int64_t kMaxParts = 8;
  const int64_t parts = hw * c / kGrainWork;  // at least kGrainWork elements a part
  return parts < 1 ? 1 : parts > kMaxParts ? kMaxParts : parts > hw ? hw : parts;
}

void global_avg_pool2d(int64_t n, int64_t hw, int64_t c, const float* in, float* out, float lo,
                       float hi, float* partial) {
  const NhwcOps& k = nhwc_ops();
  static constexpr int64_t kCb = 64;  // channels summed in registers at a time (static: for MSVC)
  const int64_t blocks = (c + kCb - 1) / kCb;
  const bool clamp = has_range(lo, hi);
  const float scale = 1.0f / static_cast<float>(hw);  // hw == 0: 0 * inf = NaN
  const int64_t parts = global_avg_pool2d_parts(hw, c);
  // Sums pixels [p0, p1) of image img, every channel, into dst[c].
  auto sum_range = [&](int64_t img, int64_t p0, int64_t p1, float* dst) {
    float acc[kCb];
    for (int64_t c0 = 0; c0 < c; c0 += kCb) {
      const int64_t len = c - c0 < kCb ? c - c0 : kCb;
      for (int64_t j = 0; j < len; ++j) acc[j] = 0.0f;
      k.sum_pixels(in + (img * hw + p0) * c + c0, p1 - p0, c, len, acc);
      for (int64_t j = 0; j < len; ++j) dst[c0 + j] = acc[j];
    }
  };
  if (parts == 1) {  // small: (image, channel block) items, each over every pixel
    auto body = [&](int64_t b, int64_t e) {
      float acc[kCb];
      for (int64_t t = b; t < e; ++t) {
        const int64_t img = t / blocks, c0 = (t % blocks) * kCb;
        const int64_t len = c - c0 < kCb ? c - c0 : kCb;
        for (int64_t j = 0; j < len; ++j) acc[j] = 0.0f;
        k.sum_pixels(in + img * hw * c + c0, hw, c, len, acc);
        float* o = out + img * c + c0;
        for (int64_t j = 0; j < len; ++j) o[j] = acc[j] * scale;
        if (clamp) k.clamp(o, len, lo, hi);
      }
    };
    parallel(n * blocks, grain_for(hw * (c < kCb ? c : kCb)), body);
    return;
  }
  // (image, part) items, then the parts of each image added in order.
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / parts, part = t % parts;
      sum_range(img, hw * part / parts, hw * (part + 1) / parts, partial + t * c);
    }
  };
  parallel(n * parts, 1, body);
  for (int64_t img = 0; img < n; ++img) {
    float* o = out + img * c;
    const float* p = partial + img * parts * c;
    for (int64_t j = 0; j < c; ++j) o[j] = p[j];
    for (int64_t q = 1; q < parts; ++q)
      for (int64_t j = 0; j < c; ++j) o[j] += p[q * c + j];
    for (int64_t j = 0; j < c; ++j) o[j] *= scale;
    if (clamp) k.clamp(o, c, lo, hi);
  }
}

// ---- resize -----------------------------------------------------------------------------------

namespace {

// PyTorch's area_pixel_compute_source_index and its neighbours (upsample_bilinear2d).
void source_index(int64_t in, int64_t out, bool align_corners, int64_t dst, int64_t* i0,
                  int64_t* i1, float* lambda) {
  float src;
  if (align_corners) {
    const float scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    src = scale * static_cast<float>(dst);
  } else {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    src = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
    if (src < 0.0f) src = 0.0f;
  }
  int64_t a = static_cast<int64_t>(src);
  if (a > in - 1) a = in - 1;
  *i0 = a;
  *i1 = a < in - 1 ? a + 1 : a;
  *lambda = src - static_cast<float>(a);
}

}  // namespace

void resize_bilinear(int64_t n, int64_t ih, int64_t iw, int64_t c, int64_t oh, int64_t ow,
                     bool align_corners, const float* in, float* out, int64_t* index,
                     float* weight) {
  if (n * oh * ow * c == 0) return;
  int64_t* x0 = index;
  int64_t* x1 = index + ow;
  for (int64_t ox = 0; ox < ow; ++ox)
    source_index(iw, ow, align_corners, ox, &x0[ox], &x1[ox], &weight[ox]);
  const NhwcOps& k = nhwc_ops();
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t img = r / oh, oy = r % oh;
      int64_t y0, y1;
      float ly;
      source_index(ih, oh, align_corners, oy, &y0, &y1, &ly);
      const float* base = in + img * ih * iw * c;
      BilinearRow q;
      q.r0 = base + y0 * iw * c;
      q.r1 = base + y1 * iw * c;
      q.ly = ly;
      q.c = c;
      q.ow = ow;
      q.x0 = x0;
      q.x1 = x1;
      q.lx = weight;
      q.out = out + r * ow * c;
      k.bilinear_row(q);
    }
  };
  parallel(n * oh, grain_for(ow * c * 4), body);
}

// ---- binary -----------------------------------------------------------------------------------

void binary_broadcast(NBinary op, const float* a, const int64_t* as, int ar, const float* b,
                      const int64_t* bs, int br, float* out, const int64_t* os, int orank, float lo,
                      float hi) {
  const NhwcOps& k = nhwc_ops();
  const bool clamp = has_range(lo, hi);
  int64_t total = 1;
  for (int i = 0; i < orank; ++i) total *= os[i];
  if (total == 0) return;
  int64_t na = 1, nb = 1;
  for (int i = 0; i < ar; ++i) na *= as[i];
  for (int i = 0; i < br; ++i) nb *= bs[i];
  // Flat cases: same element count as the output on a side means that side is dense over it.
  if ((na == total || na == 1) && (nb == total || nb == 1)) {
    const NMode mode = na == total ? (nb == total ? NMode::VV : NMode::VS) : NMode::SV;
    if (na == 1 && nb == 1) {
      k.binary(op, NMode::VV, a, b, out, 1, lo, hi, clamp);
      return;
    }
    auto body = [&](int64_t s, int64_t e) {
      const float* pa = mode == NMode::SV ? a : a + s;
      const float* pb = mode == NMode::VS ? b : b + s;
      k.binary(op, mode, pa, pb, out + s, e - s, lo, hi, clamp);
    };
    parallel(total, kGrainElementwise, body);
    return;
  }
  // General: dims aligned from the right, each side's stride 0 where it broadcasts; adjacent
  // dims merged where both sides keep their pattern; the innermost merged dim is the run of one
  // kernel call (VV, VS or SV), the rest walked as rows.
  constexpr int kMax = kMaxRank;
  int64_t dim[kMax], sa[kMax], sb[kMax];
  int nd = 0;
  {
    int64_t ta[kMax], tb[kMax];
    for (int i = 0; i < orank; ++i) {
      const int ia = i - (orank - ar), ib = i - (orank - br);
      ta[i] = ia >= 0 ? as[ia] : 1;
      tb[i] = ib >= 0 ? bs[ib] : 1;
    }
    int64_t stride_a = 1, stride_b = 1;
    int64_t rsa[kMax], rsb[kMax];
    for (int i = orank - 1; i >= 0; --i) {
      rsa[i] = ta[i] == 1 ? 0 : stride_a;
      rsb[i] = tb[i] == 1 ? 0 : stride_b;
      stride_a *= ta[i];
      stride_b *= tb[i];
    }
    // Merge from the inside out: dims i and the current merged one fuse when each side is
    // either broadcast in both or contiguous across both.
    for (int i = orank - 1; i >= 0; --i) {
      if (os[i] == 1) continue;
      if (nd > 0) {
        const int j = nd - 1;
        const bool a_ok =
            (rsa[i] == 0 && sa[j] == 0) || (rsa[i] != 0 && sa[j] != 0 && rsa[i] == sa[j] * dim[j]);
        const bool b_ok =
            (rsb[i] == 0 && sb[j] == 0) || (rsb[i] != 0 && sb[j] != 0 && rsb[i] == sb[j] * dim[j]);
        if (a_ok && b_ok) {
          dim[j] *= os[i];
          continue;
        }
      }
      dim[nd] = os[i];
      sa[nd] = rsa[i];
      sb[nd] = rsb[i];
      ++nd;
    }
  }
  // dim[0] is innermost. Its run: VV when both contiguous, else one side is one value.
  const int64_t run = dim[0];
  NMode mode = NMode::VV;
  if (sa[0] == 0 && sb[0] != 0) mode = NMode::SV;
  if (sb[0] == 0 && sa[0] != 0) mode = NMode::VS;
  const int64_t rows = total / run;
  // Rows walk dims 1.. (dim 1 the fastest): each stretch of rows along dim 1 is one
  // binary_rows call with that dim's strides.
  auto body = [&](int64_t s, int64_t e) {
    int64_t idx[kMax] = {0};
    int64_t r = s;
    int64_t oa = 0, ob = 0;
    for (int d = 1; d < nd; ++d) {
      idx[d] = r % dim[d];
      r /= dim[d];
      oa += idx[d] * sa[d];
      ob += idx[d] * sb[d];
    }
    const int64_t d1 = nd > 1 ? dim[1] : 1;
    const int64_t sa1 = nd > 1 ? sa[1] : 0, sb1 = nd > 1 ? sb[1] : 0;
    int64_t row = s;
    while (row < e) {
      const int64_t i1 = nd > 1 ? idx[1] : 0;
      const int64_t len = e - row < d1 - i1 ? e - row : d1 - i1;
      k.binary_rows(op, mode, a + oa, sa1, b + ob, sb1, out + row * run, len, run, lo, hi, clamp);
      row += len;
      if (nd <= 1) break;
      // Advance dim 1 by len (to its end or to e), carrying into the outer dims.
      oa += len * sa1;
      ob += len * sb1;
      idx[1] += len;
      if (idx[1] < d1) continue;
      oa -= sa1 * d1;
      ob -= sb1 * d1;
      idx[1] = 0;
      for (int d = 2; d < nd; ++d) {
        oa += sa[d];
        ob += sb[d];
        if (++idx[d] < dim[d]) break;
        oa -= sa[d] * dim[d];
        ob -= sb[d] * dim[d];
        idx[d] = 0;
      }
    }
  };
  parallel(rows, grain_for(run), body);
}

void prelu(const float* x, const float* slope, float* out, int64_t pixels, int64_t c, float lo,
           float hi) {
  const NhwcOps& k = nhwc_ops();
  const bool clamp = has_range(lo, hi);
  auto body = [&](int64_t b, int64_t e) {
    k.prelu(x + b * c, slope, out + b * c, e - b, c, lo, hi, clamp);
  };
  parallel(pixels, grain_for(c), body);
}

// ---- unary, softmax ---------------------------------------------------------------------------

void unary(NUnary op, const float* x, float* out, int64_t n, float p0, float p1, float lo,
           float hi) {
  const NhwcOps& k = nhwc_ops();
  const bool clamp = has_range(lo, hi);
  // Transcendental functions cost tens of cycles an element: smaller chunks.
  const bool heavy = op == NUnary::Exp || op == NUnary::Log || op == NUnary::Sin ||
                     op == NUnary::Cos || op == NUnary::Sigmoid || op == NUnary::Tanh ||
                     op == NUnary::Gelu || op == NUnary::Elu || op == NUnary::Silu;
  auto body = [&](int64_t b, int64_t e) {
    k.unary(op, x + b, out + b, e - b, p0, p1);
    if (clamp) k.clamp(out + b, e - b, lo, hi);
  };
  parallel(n, heavy ? kGrainWork / 8 : kGrainWork, body);
}

void softmax(const float* x, float* out, int64_t rows, int64_t len, float lo, float hi) {
  const NhwcOps& k = nhwc_ops();
  const bool clamp = has_range(lo, hi);
  auto body = [&](int64_t b, int64_t e) {
    k.softmax_rows(x + b * len, out + b * len, e - b, len);
    if (clamp) k.clamp(out + b * len, (e - b) * len, lo, hi);
  };
  parallel(rows, grain_for(len * 8), body);
}

}  // namespace pteron_cpu
