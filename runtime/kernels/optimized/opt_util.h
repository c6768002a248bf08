// SPDX-License-Identifier: BSD-3-Clause
// opt_util.h - helpers shared by kernels_optimized's operator sources
// (header-only, private to the library, compiled at the baseline ISA only:
// isa_kernels.cpp must never include it).
//
// Registration convention: every kernel here is registered with the key
// PTERON_OPT_KEY, the runtime's key for a float32 first tensor argument
// (pteron_kernel_key_for_dtype(PTERON_DTYPE_FLOAT32)), so the registry picks it only when
// the operator's first tensor argument is float32; every other dtype falls back to
// kernels_portable's generic kernel. Inside, a kernel still checks every
// other argument, because a float32 first argument says nothing about them.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "pteron_cpu/isa.h"
#include "kernel_util.h"

// kernels_optimized's own helpers; the CPU kernel library's names (pteron_cpu,
// runtime/cpu) are visible through this namespace.
namespace pteron_opt {
using namespace ::pteron_cpu;

// The registry key of every kernel in this library: the runtime's own key
// for a float32 first tensor argument (pteron_kernel_key_for_dtype, the one
// function that builds keys; pteron/kernel.h, "The kernel key"). The
// registration tables are filled when the library loads, after the runtime.
#define PTERON_OPT_KEY (pteron_kernel_key_for_dtype(PTERON_DTYPE_FLOAT32))

// ---- parallelism ------------------------------------------------------------

using pteron::kern::parallel_for;  // kernel_util.h

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- strided views ----------------------------------------------------------

// A float32 matrix as a GEMM operand (see Gemm below).
struct Operand {
  const float* p = nullptr;
  int64_t ld = 0;
  bool trans = false;
};

// Views the rows x cols matrix whose element (i, j) is at p[i*rs + j*cs] as
// a GEMM operand. False when neither stride is a unit stride (then the
// caller packs it).
inline bool as_operand(const float* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                       Operand* o) {
  o->p = p;
  if (cols <= 1 || cs == 1) {
    o->trans = false;
    o->ld = rows <= 1 ? (cols > 1 ? cols : 1) : rs;
    if (o->ld < cols) return false;  // cannot happen for dense storage
    return true;
  }
  if (rows <= 1 || rs == 1) {
    o->trans = true;
    o->ld = cols <= 1 ? (rows > 1 ? rows : 1) : cs;
    if (o->ld < rows) return false;
    return true;
  }
  return false;
}

// The transpose of an operand view (same storage).
inline Operand transposed(Operand o) {
  o.trans = !o.trans;
  return o;
}

using pteron::kern::collapse;  // kernel_util.h

// dst[...] = src[...] over an n-d index space with separate element strides.
inline void copy_strided(const float* src, const int64_t* src_st, float* dst, const int64_t* dst_st,
                         const int64_t* sizes, int32_t dim) {
  int64_t total = 1;
  for (int32_t i = 0; i < dim; ++i) total *= sizes[i];
  if (total == 0) return;
  if (dim == 0) {
    dst[0] = src[0];
    return;
  }
  int64_t idx[PTERON_MAX_DIM] = {0};
  int64_t so = 0, dof = 0;
  const int32_t last = dim - 1;
  const int64_t inner = sizes[last];
  for (int64_t n = 0; n < total; n += inner) {
    for (int64_t j = 0; j < inner; ++j) dst[dof + j * dst_st[last]] = src[so + j * src_st[last]];
    for (int32_t i = last - 1; i >= 0; --i) {
      ++idx[i];
      so += src_st[i];
      dof += dst_st[i];
      if (idx[i] < sizes[i]) break;
      so -= src_st[i] * idx[i];
      dof -= dst_st[i] * idx[i];
      idx[i] = 0;
    }
  }
}

// Row-major strides of a dense tensor of these sizes.
inline void dense_strides(const int64_t* sizes, int32_t dim, int64_t* st) {
  int64_t s = 1;
  for (int32_t i = dim - 1; i >= 0; --i) {
    st[i] = s;
    s *= sizes[i] > 0 ? sizes[i] : 1;
  }
}

// Carves 64-byte aligned float regions out of one scratch request (the
// runtime hands out one scratch buffer per kernel call).
class ScratchPlan {
 public:
  // Reserves `count` floats; returns the region's index.
  size_t add(int64_t count) {
    size_t idx = n_;
    offsets_[n_++] = total_;
    total_ += (static_cast<size_t>(count > 0 ? count : 0) * sizeof(float) + 63) & ~size_t(63);
    return idx;
  }
  // Acquires the memory (one pteron_kernel_scratch call). Returns false
  // (after the runtime recorded OUT_OF_MEMORY) if it cannot.
  bool acquire(pteron_kernel_context* ctx) {
    if (total_ == 0) return true;
    base_ = static_cast<unsigned char*>(pteron_kernel_scratch(ctx, total_));
    return base_ != nullptr;
  }
  float* get(size_t idx) const { return reinterpret_cast<float*>(base_ + offsets_[idx]); }

 private:
  size_t offsets_[8] = {};
  size_t n_ = 0;
  size_t total_ = 0;
  unsigned char* base_ = nullptr;
};

// ---- strided iteration ------------------------------------------------------

// Up to two inputs (b nullable) and the out tensor, as element strides over
// a shared iteration space of out's shape.
struct Iter {
  int32_t nd = 0;
  int64_t size[PTERON_MAX_DIM];
  int64_t so[PTERON_MAX_DIM], sa[PTERON_MAX_DIM], sb[PTERON_MAX_DIM];
};

// Orders out's dims outermost first by its strides, drops size-1 dims and
// merges neighbours that every operand walks contiguously.
inline void make_iter(const pteron_tensor* out, const int64_t* sa, const int64_t* sb, Iter* it) {
  int32_t order[PTERON_MAX_DIM];
  int32_t n = 0;
  for (int32_t i = 0; i < out->dim; ++i)
    if (out->sizes[i] != 1) order[n++] = i;
  // stable insertion sort by descending out stride
  for (int32_t i = 1; i < n; ++i) {
    const int32_t d = order[i];
    int32_t j = i - 1;
    while (j >= 0 && out->strides[order[j]] < out->strides[d]) {
      order[j + 1] = order[j];
      --j;
    }
    order[j + 1] = d;
  }
  it->nd = 0;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t d = order[i];
    it->size[it->nd] = out->sizes[d];
    it->so[it->nd] = out->strides[d];
    it->sa[it->nd] = sa[d];
    it->sb[it->nd] = sb[d];
    ++it->nd;
  }
  // Merge from the inside out: dim k-1 (outer) folds into dim k (inner) when
  // every stride of the outer dim equals inner stride * inner size.
  int32_t w = it->nd - 1;
  for (int32_t k = it->nd - 2; k >= 0; --k) {
    const int64_t in_sz = it->size[w];
    if (it->so[k] == it->so[w] * in_sz && it->sa[k] == it->sa[w] * in_sz &&
        it->sb[k] == it->sb[w] * in_sz) {
      it->size[w] *= it->size[k];
    } else {
      --w;
      it->size[w] = it->size[k];
      it->so[w] = it->so[k];
      it->sa[w] = it->sa[k];
      it->sb[w] = it->sb[k];
    }
  }
  if (it->nd > 0) {
    // Kept dims occupy [w, nd); shift them to the front.
    const int32_t kept = it->nd - w;
    for (int32_t i = 0; i < kept; ++i) {
      it->size[i] = it->size[w + i];
      it->so[i] = it->so[w + i];
      it->sa[i] = it->sa[w + i];
      it->sb[i] = it->sb[w + i];
    }
    it->nd = kept;
  }
  if (it->nd == 0) {  // a single element
    it->nd = 1;
    it->size[0] = 1;
    it->so[0] = it->sa[0] = it->sb[0] = 0;
  }
}

// Calls run(out_off, a_off, b_off, len) over runs of the innermost dim that
// cover flat positions [begin, end) of the iteration space.
template <typename Run>
inline void for_runs(const Iter& it, int64_t begin, int64_t end, Run&& run) {
  const int32_t last = it.nd - 1;
  const int64_t L = it.size[last];
  int64_t outer = begin / L, j = begin % L;
  int64_t idx[PTERON_MAX_DIM] = {0};
  int64_t oo = 0, oa = 0, ob = 0;
  for (int32_t d = last - 1; d >= 0; --d) {
    idx[d] = outer % it.size[d];
    outer /= it.size[d];
    oo += idx[d] * it.so[d];
    oa += idx[d] * it.sa[d];
    ob += idx[d] * it.sb[d];
  }
  int64_t i = begin;
  while (i < end) {
    const int64_t len = L - j < end - i ? L - j : end - i;
    run(oo + j * it.so[last], oa + j * it.sa[last], ob + j * it.sb[last], len);
    i += len;
    j = 0;
    for (int32_t d = last - 1; d >= 0; --d) {
      ++idx[d];
      oo += it.so[d];
      oa += it.sa[d];
      ob += it.sb[d];
      if (idx[d] < it.size[d]) break;
      oo -= it.so[d] * idx[d];
      oa -= it.sa[d] * idx[d];
      ob -= it.sb[d] * idx[d];
      idx[d] = 0;
    }
  }
}

// ---- GEMM driver ------------------------------------------------------------

// `batches` products g, each operand of batch b offset by b * its batch
// stride (elements). Splits batches, rows and columns into about as many
// equal tasks as the thread pool has threads; small products run inline.
struct BatchedGemm {
  Gemm g;
  int64_t batches = 1;
  int64_t a_bs = 0, b_bs = 0, c_bs = 0, bias_bs = 0;
};

inline Gemm sub_gemm(const BatchedGemm& bg, int64_t b, int64_t m0, int64_t m1, int64_t n0,
                     int64_t n1) {
  Gemm g = bg.g;
  g.m = m1 - m0;
  g.n = n1 - n0;
  g.a = bg.g.a + b * bg.a_bs + (bg.g.a_trans ? m0 : m0 * bg.g.lda);
  g.b = bg.g.b + b * bg.b_bs + (bg.g.b_trans ? n0 * bg.g.ldb : n0);
  g.c = bg.g.c + b * bg.c_bs + m0 * bg.g.ldc + n0;
  if (bg.g.bias) g.bias = bg.g.bias + b * bg.bias_bs + m0 * bg.g.bias_rs + n0 * bg.g.bias_cs;
  return g;
}

// Returns PTERON_OK, or OUT_OF_MEMORY (recorded) if Eigen could not allocate.
inline int32_t run_gemm(pteron_kernel_context* ctx, const char* op, const BatchedGemm& bg) {
  const Gemm& g = bg.g;
  if (bg.batches <= 0 || g.m <= 0 || g.n <= 0) return PTERON_OK;
  const IsaOps& isa = ops();
  const int64_t threads = pteron_parallel_threads();
  const double macs = double(bg.batches) * double(g.m) * double(g.n) * double(g.k > 0 ? g.k : 1);
  bool ok = true;
  if (threads <= 1 || macs < 262144.0) {
    for (int64_t b = 0; b < bg.batches && ok; ++b) ok = isa.sgemm(sub_gemm(bg, b, 0, g.m, 0, g.n));
  } else {
    // Tasks: every batch entry, each split into mparts x nparts blocks so
    // that there are at least `threads` tasks where the shapes allow.
    int64_t per = bg.batches >= threads ? 1 : ceil_div(threads, bg.batches);
    int64_t mparts = 1, nparts = 1;
    if (per > 1) {
      const int64_t mmax = g.m / 16 > 1 ? g.m / 16 : 1;
      const int64_t nmax = g.n / 64 > 1 ? g.n / 64 : 1;
      if (g.m >= g.n) {
        mparts = per < mmax ? per : mmax;
        nparts = ceil_div(per, mparts);
        if (nparts > nmax) nparts = nmax;
      } else {
        nparts = per < nmax ? per : nmax;
        mparts = ceil_div(per, nparts);
        if (mparts > mmax) mparts = mmax;
      }
    }
    const int64_t tasks = bg.batches * mparts * nparts;
    std::atomic<bool> failed{false};
    parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / (mparts * nparts);
        const int64_t r = t % (mparts * nparts);
        const int64_t mi = r / nparts, ni = r % nparts;
        const int64_t m0 = mi * g.m / mparts, m1 = (mi + 1) * g.m / mparts;
        const int64_t n0 = ni * g.n / nparts, n1 = (ni + 1) * g.n / nparts;
        if (m1 > m0 && n1 > n0 && !isa.sgemm(sub_gemm(bg, b, m0, m1, n0, n1)))
          failed.store(true, std::memory_order_relaxed);
      }
    });
    ok = !failed.load();
  }
  if (!ok)
    return pteron::kern::fail(ctx, PTERON_ERROR_OUT_OF_MEMORY,
                              "%s: cannot allocate the GEMM packing buffers", op);
  return PTERON_OK;
}

}  // namespace pteron_opt
