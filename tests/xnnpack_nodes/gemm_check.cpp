// SPDX-License-Identifier: BSD-3-Clause
// gemm_check.cpp - runtime/cpu/include/pteron_cpu/gemm.h against a double-precision reference, built and
// run by tests/test_xnnpack_linear.py (test_packed_gemm_matches_a_reference_at_every_level)
// against the build's libpteron_cpu.a, at the level PTERON_ISA selects.
//
// Shapes: M, N, K around the microkernel sizes (1-row, 6-row, 14-row blocks; 16-column
// panels) and K = 0 (bias only); B as K x N and as N x K; with and without bias; strides
// past the row width (the columns beyond N must stay untouched); a fused clamp, and a NaN in A
// that must reach the output; every third case with A mapped per column first
// (gemm_packed_pre); every other case with a residual added to the output (GemmAct::res, with
// and without its clamp, with a dense and a strided C). pteron_parallel_for is replaced by a driver that runs the tiles
// one by one in reverse order, with 3 "threads" for the tile split (M = 50 to 200 with a small
// B: the split by rows, with and without N split too). Then the indirect GEMM
// (rows as pointers to K segments, plus an offset; split and serial in turn) on M, N, segment
// counts and lengths around the block sizes, half of them with a residual. Then nhwc.h's 2-D transpose.
// Prints "<level>: <cases> cases, <indirect> indirect, <transposes> transposes, <bad> bad"; exits 1 if any output is off.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "pteron_cpu/gemm.h"
#include "pteron_cpu/nhwc.h"
#include "pteron/kernel.h"

extern "C" void pteron_parallel_for(int64_t begin, int64_t end, int64_t, pteron_range_fn fn,
                                    void* user) {
  for (int64_t i = end - 1; i >= begin; --i) fn(user, i, i + 1);
}
extern "C" int32_t pteron_parallel_threads(void) { return 3; }

int main() {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  int bad = 0, cases = 0;
  const float lo = -0.5f, hi = 0.7f;
  for (int m : {1, 2, 5, 6, 7, 13, 14, 15, 29, 50, 100, 200})
    for (int n : {1, 3, 15, 16, 17, 33, 130})
      for (int k : {0, 1, 3, 17, 64, 600})
        for (int nk = 0; nk < 2; ++nk) {
          const bool with_res = (m + k + nk) % 2 == 0;
          const bool res_clamp = with_res && n % 2 == 1;
          const int lda = k + 2, ldc = with_res && k % 2 == 1 ? n : n + 3, ldr = n + (m % 2) * 2;
          const bool with_bias = (m + n + k) % 2 == 1;
          std::vector<float> a(static_cast<size_t>(m * lda));
          std::vector<float> b(static_cast<size_t>(k * n + 1));
          std::vector<float> bias(static_cast<size_t>(n));
          std::vector<float> c(size_t(m * ldc), 7.0f);
          for (float& x : a) x = u(rng);
          for (float& x : b) x = u(rng);
          for (float& x : bias) x = u(rng);
          const bool nan_row = k > 0 && m > 3;
          if (nan_row) a[size_t(3 * lda)] = std::nanf("");
          pteron_cpu::PackedWeights w;
          if (!w.pack(k, n, b.data(), nk ? k : n, nk == 1, with_bias ? bias.data() : nullptr)) {
            std::printf("pack failed\n");
            return 1;
          }
          // Every third case maps A per column first (gemm_packed_pre: a 1x1 depthwise
          // convolution and its clamp fused), into a clamp of its own.
          const bool with_pre = (m + n + k + nk) % 3 == 0;
          std::vector<float> scale(static_cast<size_t>(k)), shift(static_cast<size_t>(k));
          for (float& x : scale) x = u(rng) * 2.0f;
          for (float& x : shift) x = u(rng);
          pteron_cpu::GemmPre pre;
          pre.scale = scale.data(), pre.shift = shift.data(), pre.lo = -0.3f, pre.hi = 0.9f;
          std::vector<float> res(size_t(m * ldr));
          for (float& x : res) x = u(rng);
          pteron_cpu::GemmAct act;
          if (with_res) {
            act.res = res.data(), act.ldr = ldr;
            if (res_clamp) act.res_lo = -0.2f, act.res_hi = 1.1f;
          }
          if (!with_pre) {
            pteron_cpu::gemm_packed(m, a.data(), lda, w, c.data(), ldc, lo, hi, act);
          } else if (!pteron_cpu::gemm_packed_pre(m, a.data(), lda, pre, w, c.data(), ldc, lo,
                                                  hi, act)) {
            std::printf("gemm_packed_pre: out of memory\n");
            return 1;
          }
          auto a_at = [&](int i, int p) -> double {
            const float x = a[size_t(i * lda + p)];
            if (!with_pre) return x;
            return std::fmin(std::fmax(double(x * scale[size_t(p)] + shift[size_t(p)]), -0.3),
                             0.9);
          };
          ++cases;
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < ldc; ++j) {
              const float got = c[size_t(i * ldc + j)];
              bool ok;
              if (j >= n) {
                ok = got == 7.0f;
              } else if (nan_row && i == 3) {
                ok = std::isnan(got);
              } else {
                double s = with_bias ? bias[size_t(j)] : 0.0, sabs = std::fabs(s);
                for (int p = 0; p < k; ++p) {
                  const double t = a_at(i, p) *
                                   (nk ? b[size_t(j * k + p)] : b[size_t(p * n + j)]);
                  s += t;
                  sabs += std::fabs(t);
                }
                double want = std::fmin(std::fmax(s, double(lo)), double(hi));
                if (with_res) want += res[size_t(i * ldr + j)];
                if (res_clamp) want = std::fmin(std::fmax(want, -0.2), 1.1);
                // float32 sums of k terms: rounding grows with the sum of the terms' magnitudes.
                ok = std::fabs(got - want) <= 1e-5 + 1e-5 * std::fabs(want) + 1e-6 * sabs;
              }
              if (!ok && bad++ < 5)
                std::printf("m %d n %d k %d nk %d: C[%d, %d] = %g\n", m, n, k, nk, i, j, got);
            }
        }
  // gemm_packed_indirect_serial: each row's K values as segs segments of seglen floats taken
  // from shuffled places of one pool (a convolution's rows point into its input), N x K B.
  int icases = 0;
  for (int m : {1, 5, 6, 7, 14, 15, 29})
    for (int n : {3, 16, 24, 33})
      for (int segs : {1, 3, 7})
        for (int seglen : {1, 3, 9, 16}) {
          const int k = segs * seglen, pool = 37 * 16;
          std::vector<float> src(static_cast<size_t>(pool)), b(static_cast<size_t>(k * n)),
              bias(static_cast<size_t>(n));
          for (float& x : src) x = u(rng);
          for (float& x : b) x = u(rng);
          for (float& x : bias) x = u(rng);
          std::vector<const float*> rows(static_cast<size_t>(m * segs));
          for (size_t e = 0; e < rows.size(); ++e)
            rows[e] = src.data() + (e * 131 + 7) % size_t(pool - seglen - 10);
          const int ldc = n + 1;
          std::vector<float> c(size_t(m * ldc), 7.0f);
          pteron_cpu::PackedWeights w;
          if (!w.pack(k, n, b.data(), k, true, bias.data())) {
            std::printf("pack failed\n");
            return 1;
          }
          const int aoff = icases % 3 * 5;  // a group's first channel
          const bool with_res = icases % 4 < 2;
          std::vector<float> res(size_t(m * n));
          for (float& x : res) x = u(rng);
          pteron_cpu::GemmAct act;
          if (with_res) act.res = res.data(), act.ldr = n;
          if (icases % 2 == 0)  // the tile split of 3 "threads", or the calling thread only
            pteron_cpu::gemm_packed_indirect(m, segs, seglen, rows.data(), aoff, w, c.data(), ldc,
                                             lo, hi, act);
          else
            pteron_cpu::gemm_packed_indirect_serial(m, segs, seglen, rows.data(), aoff, w, c.data(),
                                                    ldc, lo, hi, act);
          ++icases;
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < ldc; ++j) {
              const float got = c[size_t(i * ldc + j)];
              bool ok;
              if (j >= n) {
                ok = got == 7.0f;
              } else {
                double s = bias[size_t(j)];
                for (int sg = 0; sg < segs; ++sg)
                  for (int q = 0; q < seglen; ++q)
                    s += double(rows[size_t(i * segs + sg)][aoff + q]) *
                         b[size_t(j * k + sg * seglen + q)];
                double want = std::fmin(std::fmax(s, double(lo)), double(hi));
                if (with_res) want += res[size_t(i * n + j)];
                ok = std::fabs(got - want) <= 1e-5 + 1e-5 * std::fabs(want);
              }
              if (!ok && bad++ < 5)
                std::printf("indirect m %d n %d segs %d seglen %d: C[%d, %d] = %g\n", m, n, segs,
                            seglen, i, j, got);
            }
        }
  // The 2-D transpose (nhwc.h, NhwcOps::transpose): rows and columns around the 8 x 8 and 4 x 4
  // blocks and the 2- and 3-row interleave, dense and strided outputs; the slots between output
  // rows must stay untouched.
  int tcases = 0;
  const auto transpose = pteron_cpu::nhwc_ops().transpose;
  for (int rows : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 33})
    for (int cols : {1, 3, 4, 5, 7, 8, 9, 31, 64, 65})
      for (int gap : {0, 3}) {
        const int in_rs = cols + 2, out_rs = rows + gap;
        std::vector<float> in(size_t(rows * in_rs));
        for (float& v : in) v = u(rng);
        std::vector<float> out(size_t(cols * out_rs + 4), 7.0f);
        transpose(in.data(), in_rs, out.data(), out_rs, rows, cols);
        ++tcases;
        for (int i = 0; i < int(out.size()); ++i) {
          const int c = i / out_rs, r = i % out_rs;
          const float want = (c < cols && r < rows) ? in[size_t(r * in_rs + c)] : 7.0f;
          if (out[size_t(i)] != want && bad++ < 5)
            std::printf("transpose rows %d cols %d out_rs %d: out[%d] = %g, want %g\n", rows, cols,
                        out_rs, i, out[size_t(i)], want);
        }
      }
  std::printf("%s: %d cases, %d indirect, %d transposes, %d bad\n", pteron_cpu::gemm_kernels().name,
              cases, icases, tcases, bad);
  return bad != 0;
}
