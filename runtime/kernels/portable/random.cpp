// SPDX-License-Identifier: BSD-3-Clause
// random.cpp - portable random operators: aten::rand.out (uniform on
// [0, 1)), randn.out (standard normal) and native_dropout.out (a Bernoulli
// keep mask with probability 1 - p, kept values scaled by 1 / (1 - p)).
//
// The generator is splitmix64 over one process-wide atomic counter, seeded
// once from std::random_device and the clock, so concurrent calls never
// share a draw and need no lock. The values follow the distributions, not
// PyTorch's generator streams: tests check them statistically.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>

#include "kernel_util.h"
#include "arg_reading.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

std::atomic<uint64_t>& rng_counter() {
  static std::atomic<uint64_t> counter{[] {
    std::random_device rd;
    const uint64_t t =
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd()) ^ t;
  }()};
  return counter;
}

// A block of `n` consecutive counter values, mixed by splitmix64.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t n) : state(rng_counter().fetch_add(n * 0x9E3779B97F4A7C15ull)) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform on [0, 1) for float storage: 24 random bits, so rounding never
  // gives 1.
  float uniform_f() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  // Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

// The one dtype rule of this file: float32 or float64 outs.
bool is_random_dtype(int32_t d) { return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT64; }

// rand.out / randn.out(SymInt[] size, *, Tensor(a!) out)
template <bool Normal>
int32_t random_fill_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, Normal ? "aten::randn.out" : "aten::rand.out"};
  PTERON_CHECK_OK(a.arity(2));
  const int64_t* size = nullptr;
  size_t nd = 0;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(a.int_list(0, "size", &size, &nd));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  if (!is_random_dtype(out->dtype)) return kern::unsupported_dtype(ctx, a.op, "out", out->dtype);
  if (nd > PTERON_MAX_DIM || (nd > 0 && !size))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size has %zu dims (at most %d)", a.op, nd,
                (int)PTERON_MAX_DIM);
  // Strides are products of sizes even when one size is 0: bound the
  // product of the nonzero ones.
  int64_t prod = 1;
  for (size_t i = 0; i < nd; ++i) {
    if (size[i] <= 0) continue;
    if (prod > INT64_MAX / 16 / size[i])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size is too large", a.op);
    prod *= size[i];
  }
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, size, static_cast<int32_t>(nd)));
  const int64_t count = kern::numel(out);
  if (count == 0) return PTERON_OK;
  Rng rng(static_cast<uint64_t>(count) * 2);
  const bool f32 = out->dtype == PTERON_DTYPE_FLOAT32;
  kern::for_each_offset(kern::view_of(out), [&](int64_t off) {
    if (Normal) {
      const double v = rng.normal();
      if (f32)
        static_cast<float*>(out->data)[off] = static_cast<float>(v);
      else
        static_cast<double*>(out->data)[off] = v;
    } else if (f32) {
      static_cast<float*>(out->data)[off] = rng.uniform_f();
    } else {
      static_cast<double*>(out->data)[off] = rng.uniform();
    }
  });
  return PTERON_OK;
}

// native_dropout.out(Tensor input, float p, bool? train, *, Tensor(a!) out0,
//   Tensor(b!) out1): out0 = input * mask / (1 - p), out1 = mask (bool).
//   train false: out0 = input, mask all true.
int32_t native_dropout_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::native_dropout.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *in = nullptr, *out0 = nullptr, *out1 = nullptr;
  double p = 0;
  bool train = true;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &in));
  PTERON_CHECK_OK(a.real(1, "p", &p));
  if (!a.is_none(2)) PTERON_CHECK_OK(a.boolean(2, "train", &train));
  PTERON_CHECK_OK(a.tensor(3, "out0", &out0));
  PTERON_CHECK_OK(a.tensor(4, "out1", &out1));
  if (!is_random_dtype(in->dtype)) return kern::unsupported_dtype(ctx, a.op, "input", in->dtype);
  if (out0->dtype != in->dtype)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out0 dtype %s differs from input dtype %s",
                a.op, kern::dtype_name(out0->dtype), kern::dtype_name(in->dtype));
  if (out1->dtype != PTERON_DTYPE_BOOL)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out1 (the mask) must be bool, got %s",
                a.op, kern::dtype_name(out1->dtype));
  if (!(p >= 0 && p <= 1))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dropout probability has to be between 0 and 1, but got %g", a.op, p);
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out1", out1, in));
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out0", out0, in->sizes, in->dim));
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out1", out1, in->sizes, in->dim));
  const int64_t count = kern::numel(in);
  if (count == 0) return PTERON_OK;
  const double keep = 1.0 - p;
  const double scale = keep > 0 ? 1.0 / keep : 0.0;
  Rng rng(static_cast<uint64_t>(count));
  const kern::View vi = kern::view_of(in), vo = kern::view_of(out0), vm = kern::view_of(out1);
  uint8_t* mask = static_cast<uint8_t*>(out1->data);
  // The mask first (in logical order), then the scaled values.
  kern::for_each_offset(
      vm, [&](int64_t off) { mask[off] = (!train || (keep > 0 && rng.uniform() < keep)) ? 1 : 0; });
  kern::zip_offsets(vi, vo, [&](int64_t si, int64_t so) {
    if (in->dtype == PTERON_DTYPE_FLOAT32) {
      static_cast<float*>(out0->data)[so] = static_cast<const float*>(in->data)[si];
    } else {
      static_cast<double*>(out0->data)[so] = static_cast<const double*>(in->data)[si];
    }
  });
  if (!train) return PTERON_OK;
  kern::zip_offsets(vm, vo, [&](int64_t sm, int64_t so) {
    if (in->dtype == PTERON_DTYPE_FLOAT32) {
      float& y = static_cast<float*>(out0->data)[so];
      y = mask[sm] ? static_cast<float>(static_cast<double>(y) * scale) : 0.0f;
    } else {
      double& y = static_cast<double*>(out0->data)[so];
      y = mask[sm] ? y * scale : 0.0;
    }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::rand", "out", nullptr, random_fill_out<false>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::randn", "out", nullptr, random_fill_out<true>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::native_dropout", "out", nullptr, native_dropout_out, PTERON_KERNEL_PRIORITY, 0})
