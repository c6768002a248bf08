// SPDX-License-Identifier: BSD-3-Clause
// grid_distance.cpp - portable sampling and distance operators:
// aten::grid_sampler_2d.out, _cdist_forward.out and _pdist_forward.out.
// float32 and float64, computed in double, any dim order.
//
// grid_sampler_2d follows ATen's rules: grid values in [-1, 1] map to pixel
// centres ((g + 1) * size - 1) / 2, or to corners (g + 1) / 2 * (size - 1)
// with align_corners; padding 0 = zeros, 1 = border (clamp), 2 = reflection;
// modes 0 = bilinear, 1 = nearest (round half to even), 2 = bicubic
// (A = -0.75, padding applied per tap). The distances are
// (sum |a - b|^p)^(1/p), with p = 0 counting differing coordinates and
// p = inf taking the largest difference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernel_util.h"
#include "arg_reading.h"
#include "tensor_checks.h"

#include "real_access.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// float32 or float64 only, computed in double (real_access.h).
using pteron::kern::real::is_float_dtype;
using pteron::kern::real::load;
using pteron::kern::real::store;

// ---- grid_sampler_2d.out(Tensor input, Tensor grid, int interpolation_mode,
//   int padding_mode, bool align_corners, *, Tensor(a!) out) ----------------

double unnormalize(double g, int64_t size, bool align_corners) {
  return align_corners ? (g + 1) / 2 * static_cast<double>(size - 1)
                       : ((g + 1) * static_cast<double>(size) - 1) / 2;
}

// Reflects x into [twice_low / 2, twice_high / 2].
double reflect(double x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  const double lo = static_cast<double>(twice_low) / 2;
  const double span = static_cast<double>(twice_high - twice_low) / 2;
  x = std::fabs(x - lo);
  const double extra = std::fmod(x, span);
  const double flips = std::floor(x / span);
  return std::fmod(flips, 2.0) == 0 ? extra + lo : span - extra + lo;
}

double clip(double x, int64_t size) {
  return std::min(static_cast<double>(size - 1), std::max(x, 0.0));
}

// Applies the padding mode to an unnormalised coordinate.
double pad_coord(double x, int64_t size, int64_t padding, bool align_corners) {
  if (padding == 1) return clip(x, size);
  if (padding == 2) {
    x = align_corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1);
    return clip(x, size);
  }
  return x;
}

double cubic_near(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
double cubic_far(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

int32_t grid_sampler_2d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::grid_sampler_2d.out"};
  PTERON_CHECK_OK(a.arity(6));
  pteron_tensor *in = nullptr, *grid = nullptr, *out = nullptr;
  int64_t mode = 0, padding = 0;
  bool align = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "grid", &grid));
  PTERON_CHECK_OK(a.integer(2, "interpolation_mode", &mode));
  PTERON_CHECK_OK(a.integer(3, "padding_mode", &padding));
  PTERON_CHECK_OK(a.boolean(4, "align_corners", &align));
  PTERON_CHECK_OK(a.tensor(5, "out", &out));
  if (!is_float_dtype(in->dtype)) return kern::unsupported_dtype(ctx, a.op, "input", in->dtype);
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, grid, "grid", in->dtype));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, out, "out", in->dtype));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, in, grid));
  if (mode < 0 || mode > 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: interpolation_mode %lld is not 0 (bilinear), 1 (nearest) or 2 (bicubic)", a.op,
                (long long)mode);
  if (padding < 0 || padding > 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: padding_mode %lld is not 0 (zeros), 1 (border) or 2 (reflection)", a.op,
                (long long)padding);
  if (in->dim != 4 || grid->dim != 4 || grid->sizes[3] != 2 || grid->sizes[0] != in->sizes[0])
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: expected input (N, C, H, W) and grid (N, H_out, W_out, 2) with the same N",
                a.op);
  const int64_t N = in->sizes[0], C = in->sizes[1], H = in->sizes[2], W = in->sizes[3];
  const int64_t Ho = grid->sizes[1], Wo = grid->sizes[2];
  if (H == 0 || W == 0)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: input has an empty spatial dim", a.op);
  const int64_t sizes[4] = {N, C, Ho, Wo};
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, 4));
  const int64_t* is = in->strides;
  const int64_t* gs = grid->strides;
  const int64_t* os = out->strides;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t h = 0; h < Ho; ++h)
      for (int64_t w = 0; w < Wo; ++w) {
        const int64_t g0 = b * gs[0] + h * gs[1] + w * gs[2];
        const double gx = load(grid, g0), gy = load(grid, g0 + gs[3]);
        const double ix = unnormalize(gx, W, align), iy = unnormalize(gy, H, align);
        for (int64_t c = 0; c < C; ++c) {
          const int64_t base = b * is[0] + c * is[1];
          // A tap at whole-number coordinates (any double: NaN and far
          // values read as outside).
          auto at = [&](double y, double x) -> double {
            if (!(y >= 0 && y < static_cast<double>(H) && x >= 0 && x < static_cast<double>(W)))
              return 0.0;
            return load(in,
                        base + static_cast<int64_t>(y) * is[2] + static_cast<int64_t>(x) * is[3]);
          };
          double v = 0;
          if (mode == 2) {
            const double fx = std::floor(ix), fy = std::floor(iy);
            const double tx = ix - fx, ty = iy - fy;
            const double A = -0.75;
            const double wx[4] = {cubic_far(tx + 1, A), cubic_near(tx, A), cubic_near(1 - tx, A),
                                  cubic_far(2 - tx, A)};
            const double wy[4] = {cubic_far(ty + 1, A), cubic_near(ty, A), cubic_near(1 - ty, A),
                                  cubic_far(2 - ty, A)};
            for (int i = 0; i < 4; ++i) {
              double row = 0;
              const double yy = pad_coord(fy - 1 + i, H, padding, align);
              for (int j = 0; j < 4; ++j) {
                const double xx = pad_coord(fx - 1 + j, W, padding, align);
                row += wx[j] * at(yy, xx);  // padded taps are whole numbers again
              }
              v += wy[i] * row;
            }
          } else {
            const double px = pad_coord(ix, W, padding, align);
            const double py = pad_coord(iy, H, padding, align);
            if (mode == 1) {
              v = at(std::nearbyint(py), std::nearbyint(px));
            } else {
              const double fx = std::floor(px), fy = std::floor(py);
              const double tx = px - fx, ty = py - fy;
              v = at(fy, fx) * (1 - tx) * (1 - ty) + at(fy, fx + 1) * tx * (1 - ty) +
                  at(fy + 1, fx) * (1 - tx) * ty + at(fy + 1, fx + 1) * tx * ty;
            }
          }
          store(out, b * os[0] + c * os[1] + h * os[2] + w * os[3], v);
        }
      }
  return PTERON_OK;
}

// ---- distances --------------------------------------------------------------

// The p-norm distance of two rows of M values (offsets and strides).
double row_distance(const pteron_tensor* x, int64_t xo, int64_t xs, const pteron_tensor* y,
                    int64_t yo, int64_t ys, int64_t M, double p) {
  double acc = 0;
  if (p == 0) {
    for (int64_t k = 0; k < M; ++k) acc += load(x, xo + k * xs) != load(y, yo + k * ys) ? 1 : 0;
    return acc;
  }
  if (std::isinf(p)) {
    for (int64_t k = 0; k < M; ++k)
      acc = std::max(acc, std::fabs(load(x, xo + k * xs) - load(y, yo + k * ys)));
    return acc;
  }
  for (int64_t k = 0; k < M; ++k) {
    const double d = std::fabs(load(x, xo + k * xs) - load(y, yo + k * ys));
    acc += p == 1 ? d : p == 2 ? d * d : std::pow(d, p);
  }
  return p == 1 ? acc : p == 2 ? std::sqrt(acc) : std::pow(acc, 1 / p);
}

// _cdist_forward.out(Tensor x1, Tensor x2, float p, int? compute_mode, *,
//   Tensor(a!) out): x1 [*, P, M], x2 [*, R, M] (batch dims broadcast)
//   -> out [*, P, R].
int32_t cdist_forward_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::_cdist_forward.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *x1 = nullptr, *x2 = nullptr, *out = nullptr;
  double p = 2;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "x1", &x1));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "x2", &x2));
  PTERON_CHECK_OK(a.real(2, "p", &p));
  if (!a.is_none(3)) {
    int64_t mode = 0;
    PTERON_CHECK_OK(a.integer(3, "compute_mode", &mode));
  }
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  if (!is_float_dtype(x1->dtype)) return kern::unsupported_dtype(ctx, a.op, "x1", x1->dtype);
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, x2, "x2", x1->dtype));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, out, "out", x1->dtype));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, x1, x2));
  if (!(p >= 0))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: p must be a non-negative value, got %g",
                a.op, p);
  if (x1->dim < 2 || x2->dim < 2 || x1->sizes[x1->dim - 1] != x2->sizes[x2->dim - 1])
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: x1 and x2 must be at least 2-D with the same number of columns", a.op);
  // Broadcast the batch dims.
  const int32_t b1 = x1->dim - 2, b2 = x2->dim - 2;
  const int32_t nb = std::max(b1, b2);
  int64_t bs[PTERON_MAX_DIM], st1[PTERON_MAX_DIM], st2[PTERON_MAX_DIM];
  for (int32_t i = 0; i < nb; ++i) {
    const int32_t i1 = b1 - nb + i, i2 = b2 - nb + i;
    const int64_t s1 = i1 >= 0 ? x1->sizes[i1] : 1, s2 = i2 >= 0 ? x2->sizes[i2] : 1;
    if (s1 != s2 && s1 != 1 && s2 != 1) return kern::broadcast_error(ctx, a.op, x1, x2);
    bs[i] = s1 == 1 ? s2 : s1;
    st1[i] = (i1 >= 0 && s1 != 1) ? x1->strides[i1] : 0;
    st2[i] = (i2 >= 0 && s2 != 1) ? x2->strides[i2] : 0;
  }
  const int64_t P = x1->sizes[b1], R = x2->sizes[b2], M = x1->sizes[x1->dim - 1];
  int64_t osz[PTERON_MAX_DIM];
  for (int32_t i = 0; i < nb; ++i) osz[i] = bs[i];
  osz[nb] = P;
  osz[nb + 1] = R;
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, osz, nb + 2));
  int64_t total = 1;
  for (int32_t i = 0; i < nb; ++i) total *= bs[i];
  if (total == 0 || P == 0 || R == 0) return PTERON_OK;
  int64_t idx[PTERON_MAX_DIM] = {0};
  for (int64_t t = 0; t < total; ++t) {
    int64_t o1 = 0, o2 = 0, oo = 0;
    for (int32_t i = 0; i < nb; ++i) {
      o1 += idx[i] * st1[i];
      o2 += idx[i] * st2[i];
      oo += idx[i] * out->strides[i];
    }
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < R; ++j)
        store(out, oo + i * out->strides[nb] + j * out->strides[nb + 1],
              row_distance(x1, o1 + i * x1->strides[b1], x1->strides[b1 + 1], x2,
                           o2 + j * x2->strides[b2], x2->strides[b2 + 1], M, p));
    for (int32_t i = nb - 1; i >= 0; --i) {
      if (++idx[i] < bs[i]) break;
      idx[i] = 0;
    }
  }
  return PTERON_OK;
}

// _pdist_forward.out(Tensor self, float p=2., *, Tensor(a!) out): self [N, M]
//   -> out [N * (N - 1) / 2], the rows i < j in order.
int32_t pdist_forward_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::_pdist_forward.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *x = nullptr, *out = nullptr;
  double p = 2;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &x));
  PTERON_CHECK_OK(a.real(1, "p", &p));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (!is_float_dtype(x->dtype)) return kern::unsupported_dtype(ctx, a.op, "self", x->dtype);
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, out, "out", x->dtype));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, x));
  if (!(p >= 0))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: p must be a non-negative value, got %g",
                a.op, p);
  if (x->dim != 2)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: self must be 2-D, got rank %d", a.op,
                (int)x->dim);
  const int64_t N = x->sizes[0], M = x->sizes[1];
  const int64_t count = N > 1 ? N * (N - 1) / 2 : 0;
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, &count, 1));
  int64_t k = 0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = i + 1; j < N; ++j, ++k)
      store(out, k * out->strides[0],
            row_distance(x, i * x->strides[0], x->strides[1], x, j * x->strides[0], x->strides[1],
                         M, p));
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::grid_sampler_2d", "out", nullptr, grid_sampler_2d_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_cdist_forward", "out", nullptr, cdist_forward_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_pdist_forward", "out", nullptr, pdist_forward_out, PTERON_KERNEL_PRIORITY, 0})
