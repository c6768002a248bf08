// conv.cpp - portable aten::convolution.out: direct convolution over 1, 2
// or 3 spatial dims, grouped and depthwise included; transposed convolution
// is not supported.
//
// Loop order: for each (batch, output channel) an accumulator plane is
// filled with the bias, then every (input channel, kernel tap) adds
// weight * input over the output positions that tap reaches. That is the
// minimal N*Cout*Cin/groups*K*OutSpatial multiply-adds, with the innermost
// loop running along the output row. Floating inputs accumulate in double;
// integral inputs accumulate modulo 2^64 (as the fixed-width ATen result
// wraps), so no signed overflow happens.
#include <cstdint>
#include <type_traits>

#include "kernel_util.h"
#include "kernels_b_util.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kb = pteron::kern::kb;

// Geometry in three spatial slots (D, H, W); unused leading slots have
// size 1, stride 0 and a trivial kernel.
struct Geometry {
  int64_t N = 0, C = 0, Cout = 0, Cin_g = 0, groups = 0;
  int64_t in[3], k[3], out[3], stride[3], pad[3], dil[3];
  int64_t is_n, is_c, is_s[3];  // input strides
  int64_t ws_o, ws_i, ws_s[3];  // weight strides
  int64_t os_n, os_c, os_s[3];  // out strides
  int64_t bs;                   // bias stride
};

template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
inline Acc<T> widen(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<double>(v);
  else
    return static_cast<uint64_t>(static_cast<int64_t>(v));
}

template <typename T>
inline T narrow(Acc<T> v) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(v);
  else
    return static_cast<T>(static_cast<int64_t>(v));
}

template <typename T, typename B>
void conv_typed(const Geometry& g, const T* in, const T* w, const B* bias,
                T* out, Acc<T>* acc) {
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t cout_g = g.Cout / g.groups;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t oc = 0; oc < g.Cout; ++oc) {
      const int64_t grp = oc / cout_g;
      Acc<T> b0{};
      if (bias) {
        if constexpr (std::is_floating_point_v<T>)
          b0 = static_cast<double>(bias[oc * g.bs]);
        else
          b0 = widen<T>(static_cast<T>(bias[oc * g.bs]));
      }
      for (int64_t i = 0; i < plane; ++i) acc[i] = b0;
      for (int64_t icg = 0; icg < g.Cin_g; ++icg) {
        const int64_t ic = grp * g.Cin_g + icg;
        const T* in_c = in + n * g.is_n + ic * g.is_c;
        const T* w_c = w + oc * g.ws_o + icg * g.ws_i;
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const Acc<T> wv = widen<T>(
                  w_c[kd * g.ws_s[0] + kh * g.ws_s[1] + kw * g.ws_s[2]]);
              // Output columns whose input column 0 <= iw < W.
              const int64_t shift = kw * g.dil[2] - g.pad[2];
              int64_t lo = 0;
              if (shift < 0) lo = (-shift + g.stride[2] - 1) / g.stride[2];
              int64_t hi = g.in[2] - shift <= 0
                               ? 0
                               : (g.in[2] - shift - 1) / g.stride[2] + 1;
              if (hi > g.out[2]) hi = g.out[2];
              if (lo >= hi) continue;
              for (int64_t od = 0; od < g.out[0]; ++od) {
                const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                  const int64_t ih =
                      oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  const T* row = in_c + id * g.is_s[0] + ih * g.is_s[1];
                  Acc<T>* arow = acc + (od * g.out[1] + oh) * g.out[2];
                  const int64_t step = g.stride[2] * g.is_s[2];
                  int64_t off = (lo * g.stride[2] + shift) * g.is_s[2];
                  for (int64_t ow = lo; ow < hi; ++ow, off += step)
                    arow[ow] += wv * widen<T>(row[off]);
                }
              }
            }
      }
      T* o = out + n * g.os_n + oc * g.os_c;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const Acc<T>* arow = acc + (od * g.out[1] + oh) * g.out[2];
          T* orow = o + od * g.os_s[0] + oh * g.os_s[1];
          for (int64_t ow = 0; ow < g.out[2]; ++ow)
            orow[ow * g.os_s[2]] = narrow<T>(arow[ow]);
        }
    }
  }
}

// convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//   SymInt[] padding, SymInt[] dilation, bool transposed,
//   SymInt[] output_padding, SymInt groups, *, Tensor(a!) out)
int32_t convolution_out(pteron_kernel_context* ctx, pteron_value* const* args,
                        size_t n) {
  Args a{ctx, args, n, "aten::convolution.out"};
  PTERON_CHECK_OK(kb::arity(a, 10));
  pteron_tensor *input = nullptr, *weight = nullptr, *bias = nullptr;
  pteron_tensor* out = nullptr;
  bool transposed = false;
  int64_t groups = 0;
  PTERON_CHECK_OK(kb::tensor_arg(a, 0, "input", &input));
  PTERON_CHECK_OK(kb::tensor_arg(a, 1, "weight", &weight));
  PTERON_CHECK_OK(kb::opt_tensor_arg(a, 2, "bias", &bias));
  PTERON_CHECK_OK(a.boolean(6, "transposed", &transposed));
  PTERON_CHECK_OK(a.integer(8, "groups", &groups));
  PTERON_CHECK_OK(a.tensor(9, "out", &out));
  if (transposed)
    return fail(ctx, PTERON_ERROR_NOT_SUPPORTED,
                "%s: transposed convolution is not supported by the portable "
                "kernel",
                a.op);
  const int32_t rank = input->dim;
  if (rank < 3 || rank > 5)
    return fail(ctx, PTERON_ERROR_NOT_SUPPORTED,
                "%s: input must have rank 3, 4 or 5 (batched 1-D, 2-D or 3-D "
                "convolution), got rank %d",
                a.op, (int)rank);
  if (weight->dim != rank)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: expected %d-dimensional input for %d-dimensional weight, "
                "got a %d-dimensional input",
                a.op, (int)weight->dim, (int)weight->dim, (int)rank);
  const int32_t S = rank - 2;
  const int32_t dt = input->dtype;
  if (!pteron::kern::is_supported(dt) || dt == PTERON_DTYPE_BOOL)
    return pteron::kern::unsupported_dtype(ctx, a.op, "input", dt);
  if (weight->dtype != dt)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: weight dtype %s differs from input dtype %s", a.op,
                pteron::kern::dtype_name(weight->dtype),
                pteron::kern::dtype_name(dt));
  if (out->dtype != dt)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: out dtype %s differs from input dtype %s", a.op,
                pteron::kern::dtype_name(out->dtype),
                pteron::kern::dtype_name(dt));
  if (bias) {
    const bool ok = pteron::kern::is_floating(dt)
                        ? (bias->dtype == PTERON_DTYPE_FLOAT32 ||
                           bias->dtype == PTERON_DTYPE_FLOAT64)
                        : bias->dtype == dt;
    if (!ok)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: bias dtype %s does not fit input dtype %s", a.op,
                  pteron::kern::dtype_name(bias->dtype),
                  pteron::kern::dtype_name(dt));
  }

  int64_t stride[3], pad[3], dil[3], opad[3];
  PTERON_CHECK_OK(kb::spatial_params(a, 3, "stride", S, 1, stride));
  PTERON_CHECK_OK(kb::spatial_params(a, 4, "padding", S, 0, pad));
  PTERON_CHECK_OK(kb::spatial_params(a, 5, "dilation", S, 1, dil));
  PTERON_CHECK_OK(kb::spatial_params(a, 7, "output_padding", S, 0, opad));

  Geometry g{};
  g.N = input->sizes[0];
  g.C = input->sizes[1];
  g.Cout = weight->sizes[0];
  g.Cin_g = weight->sizes[1];
  g.groups = groups;
  if (groups <= 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: groups must be positive, got %lld", a.op,
                (long long)groups);
  if (g.Cout % groups != 0)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: given groups=%lld, weight dim 0 (%lld) must be divisible "
                "by groups",
                a.op, (long long)groups, (long long)g.Cout);
  if (g.Cin_g == 0 ? g.C != 0 : (g.C % g.Cin_g != 0 || g.C / g.Cin_g != groups))
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: given groups=%lld and weight of %lld input channels per "
                "group, input has %lld channels (expected groups * %lld)",
                a.op, (long long)groups, (long long)g.Cin_g, (long long)g.C,
                (long long)g.Cin_g);
  if (bias && (bias->dim != 1 || bias->sizes[0] != g.Cout))
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: expected bias to be 1-dimensional with %lld elements",
                a.op, (long long)g.Cout);
  g.is_n = input->strides[0];
  g.is_c = input->strides[1];
  g.ws_o = weight->strides[0];
  g.ws_i = weight->strides[1];
  g.bs = bias ? bias->strides[0] : 0;
  int64_t out_sizes[5] = {g.N, g.Cout, 1, 1, 1};
  for (int32_t s = 0; s < 3; ++s) {
    const int32_t j = s - (3 - S);  // spatial index in the tensor, or < 0
    if (j < 0) {
      g.in[s] = g.k[s] = g.out[s] = g.stride[s] = g.dil[s] = 1;
      g.pad[s] = 0;
      g.is_s[s] = g.ws_s[s] = 0;
      continue;
    }
    g.in[s] = input->sizes[2 + j];
    g.k[s] = weight->sizes[2 + j];
    g.stride[s] = stride[j];
    g.pad[s] = pad[j];
    g.dil[s] = dil[j];
    g.is_s[s] = input->strides[2 + j];
    g.ws_s[s] = weight->strides[2 + j];
    if (g.k[s] <= 0)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: weight spatial dim %d has size %lld", a.op, (int)j,
                  (long long)g.k[s]);
    // Sizes and parameters are bounded (storage, <= 2^31), so these products
    // stay far inside int64.
    if (g.k[s] - 1 > (int64_t{1} << 40))
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: kernel too large",
                  a.op);
    const int64_t padded = g.in[s] + 2 * g.pad[s];
    const int64_t extent = g.dil[s] * (g.k[s] - 1) + 1;
    if (padded < extent)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: padded input size %lld in spatial dim %d is smaller "
                  "than the dilated kernel size %lld",
                  a.op, (long long)padded, (int)j, (long long)extent);
    g.out[s] = (padded - extent) / g.stride[s] + 1;
    out_sizes[2 + j] = g.out[s];
  }
  PTERON_CHECK_OK(kb::resize_out(a, out, "out", out_sizes, rank));
  g.os_n = out->strides[0];
  g.os_c = out->strides[1];
  for (int32_t s = 0; s < 3; ++s) {
    const int32_t j = s - (3 - S);
    g.os_s[s] = j < 0 ? 0 : out->strides[2 + j];
  }
  if (pteron::kern::numel(out) == 0) return PTERON_OK;
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  void* scratch = pteron_kernel_scratch(ctx, static_cast<size_t>(plane) * 8);
  if (!scratch)
    return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY,
                "%s: no scratch memory for a %lld-element accumulator", a.op,
                (long long)plane);
  pteron::kern::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = static_cast<const T*>(input->data);
      const T* w = static_cast<const T*>(weight->data);
      T* o = static_cast<T*>(out->data);
      Acc<T>* acc = static_cast<Acc<T>*>(scratch);
      if (!bias) {
        conv_typed<T, T>(g, in, w, nullptr, o, acc);
      } else if (bias->dtype == PTERON_DTYPE_FLOAT64) {
        if constexpr (std::is_floating_point_v<T>)
          conv_typed<T, double>(g, in, w, static_cast<const double*>(bias->data), o, acc);
      } else if (bias->dtype == PTERON_DTYPE_FLOAT32) {
        if constexpr (std::is_floating_point_v<T>)
          conv_typed<T, float>(g, in, w, static_cast<const float*>(bias->data), o, acc);
      } else {
        conv_typed<T, T>(g, in, w, static_cast<const T*>(bias->data), o, acc);
      }
    }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::convolution", "out", nullptr, convolution_out, PTERON_KERNEL_PRIORITY, 0})
