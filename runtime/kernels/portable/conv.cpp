// SPDX-License-Identifier: BSD-3-Clause
// conv.cpp - portable aten::convolution.out: direct convolution over 1, 2
// or 3 spatial dims, grouped and depthwise included, and transposed
// convolution (output padding, groups, dilation).
//
// Loop order: for each (batch, output channel) an accumulator plane is
// filled with the bias, then every (input channel, kernel tap) adds
// weight * input over the output positions that tap reaches. That is the
// minimal N*Cout*Cin/groups*K*OutSpatial multiply-adds, with the innermost
// loop running along the output row. Floating inputs accumulate in double;
// integral inputs accumulate modulo 2^64 (as the fixed-width ATen result
// wraps), so no signed overflow happens. A transposed convolution scatters
// instead: every (input channel, kernel tap, input position) adds
// weight * input to the output position it reaches. float16 / bfloat16 accumulate in
// double too and round once per output element; their bias may be of the
// input's dtype, float32 or float64.
#include <cstdint>
#include <type_traits>

#include "kernel_util.h"
#include "conv_checks.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// Geometry in three spatial slots (D, H, W); unused leading slots have
// size 1, stride 0 and a trivial kernel.
using Geometry = kern::ConvGeometry;

template <typename T>
using Acc = std::conditional_t<kern::is_float_type_v<T>, double, uint64_t>;

template <typename T>
inline Acc<T> widen(T v) {
  if constexpr (kern::is_float_type_v<T>)
    return static_cast<double>(v);
  else
    return static_cast<uint64_t>(static_cast<int64_t>(v));
}

template <typename T>
inline T narrow(Acc<T> v) {
  if constexpr (kern::is_float_type_v<T>)
    return static_cast<T>(v);
  else
    return static_cast<T>(static_cast<int64_t>(v));
}

// Output channel oc's bias in the accumulator type (zero without bias).
template <typename T, typename B>
Acc<T> bias_value(const Geometry& g, const B* bias, int64_t oc) {
  if (!bias) return Acc<T>{};
  if constexpr (kern::is_float_type_v<T>)
    return static_cast<double>(bias[oc * g.bs]);
  else
    return widen<T>(static_cast<T>(bias[oc * g.bs]));
}

// Rounds one output plane's accumulators (dense, D x H x W) into `o`, the
// plane's first element in the output, along the output's strides.
template <typename T>
void store_plane(const Geometry& g, const Acc<T>* acc, T* o) {
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const Acc<T>* arow = acc + (od * g.out[1] + oh) * g.out[2];
      T* orow = o + od * g.os_s[0] + oh * g.os_s[1];
      for (int64_t ow = 0; ow < g.out[2]; ++ow) orow[ow * g.os_s[2]] = narrow<T>(arow[ow]);
    }
}

template <typename T, typename B>
void conv_typed(const Geometry& g, const T* in, const T* w, const B* bias, T* out, Acc<T>* acc) {
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t cout_g = g.Cout / g.groups;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t oc = 0; oc < g.Cout; ++oc) {
      const int64_t grp = oc / cout_g;
      const Acc<T> b0 = bias_value<T, B>(g, bias, oc);
      for (int64_t i = 0; i < plane; ++i) acc[i] = b0;
      for (int64_t icg = 0; icg < g.Cin_g; ++icg) {
        const int64_t ic = grp * g.Cin_g + icg;
        const T* in_c = in + n * g.is_n + ic * g.is_c;
        const T* w_c = w + oc * g.ws_o + icg * g.ws_i;
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const Acc<T> wv = widen<T>(w_c[kd * g.ws_s[0] + kh * g.ws_s[1] + kw * g.ws_s[2]]);
              // Output columns whose input column 0 <= iw < W.
              const int64_t shift = kw * g.dil[2] - g.pad[2];
              int64_t lo = 0;
              if (shift < 0) lo = (-shift + g.stride[2] - 1) / g.stride[2];
              int64_t hi = g.in[2] - shift <= 0 ? 0 : (g.in[2] - shift - 1) / g.stride[2] + 1;
              if (hi > g.out[2]) hi = g.out[2];
              if (lo >= hi) continue;
              for (int64_t od = 0; od < g.out[0]; ++od) {
                const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                  const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
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
      store_plane<T>(g, acc, out + n * g.os_n + oc * g.os_c);
    }
  }
}

// The transposed form: out[n, oc, o] = bias[oc] + sum over the group's input
// channels ic, taps t and input positions i with o = i * stride - pad +
// t * dil of weight[ic, oc % Cout_g, t] * input[n, ic, i].
template <typename T, typename B>
void conv_transposed_typed(const Geometry& g, const T* in, const T* w, const B* bias, T* out,
                           Acc<T>* acc) {
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t oc = 0; oc < g.Cout; ++oc) {
      const int64_t grp = oc / g.Cout_g, ocg = oc % g.Cout_g;
      const Acc<T> b0 = bias_value<T, B>(g, bias, oc);
      for (int64_t i = 0; i < plane; ++i) acc[i] = b0;
      for (int64_t icg = 0; icg < g.Cin_g; ++icg) {
        const int64_t ic = grp * g.Cin_g + icg;
        const T* in_c = in + n * g.is_n + ic * g.is_c;
        const T* w_c = w + ic * g.ws_o + ocg * g.ws_i;
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const Acc<T> wv = widen<T>(w_c[kd * g.ws_s[0] + kh * g.ws_s[1] + kw * g.ws_s[2]]);
              for (int64_t id = 0; id < g.in[0]; ++id) {
                const int64_t od = id * g.stride[0] - g.pad[0] + kd * g.dil[0];
                if (od < 0 || od >= g.out[0]) continue;
                for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                  const int64_t oh = ih * g.stride[1] - g.pad[1] + kh * g.dil[1];
                  if (oh < 0 || oh >= g.out[1]) continue;
                  const T* row = in_c + id * g.is_s[0] + ih * g.is_s[1];
                  Acc<T>* arow = acc + (od * g.out[1] + oh) * g.out[2];
                  for (int64_t iw = 0; iw < g.in[2]; ++iw) {
                    const int64_t ow = iw * g.stride[2] - g.pad[2] + kw * g.dil[2];
                    if (ow < 0 || ow >= g.out[2]) continue;
                    arow[ow] += wv * widen<T>(row[iw * g.is_s[2]]);
                  }
                }
              }
            }
      }
      store_plane<T>(g, acc, out + n * g.os_n + oc * g.os_c);
    }
  }
}

template <typename T, typename B>
void run_conv(const Geometry& g, const T* in, const T* w, const B* bias, T* out, Acc<T>* acc) {
  if (g.transposed)
    conv_transposed_typed<T, B>(g, in, w, bias, out, acc);
  else
    conv_typed<T, B>(g, in, w, bias, out, acc);
}

// convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//   SymInt[] padding, SymInt[] dilation, bool transposed,
//   SymInt[] output_padding, SymInt groups, *, Tensor(a!) out)
int32_t convolution_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::convolution.out"};
  kern::ConvOperands c;
  PTERON_CHECK_OK(kern::read_convolution(a, /*float32_only=*/false, &c, /*allow_transposed=*/true));
  const pteron_tensor *input = c.input, *weight = c.weight, *bias = c.bias;
  pteron_tensor* out = c.out;
  const Geometry& g = c.g;
  const int32_t dt = input->dtype;
  if (pteron::kern::numel(out) == 0) return PTERON_OK;
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  void* scratch = pteron_kernel_scratch(ctx, static_cast<size_t>(plane) * 8);
  if (!scratch)
    return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY,
                "%s: no scratch memory for a %lld-element accumulator", a.op, (long long)plane);
  pteron::kern::dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = static_cast<const T*>(input->data);
      const T* w = static_cast<const T*>(weight->data);
      T* o = static_cast<T*>(out->data);
      Acc<T>* acc = static_cast<Acc<T>*>(scratch);
      if (!bias) {
        run_conv<T, T>(g, in, w, nullptr, o, acc);
      } else if (bias->dtype == PTERON_DTYPE_FLOAT64) {
        if constexpr (kern::is_float_type_v<T>)
          run_conv<T, double>(g, in, w, static_cast<const double*>(bias->data), o, acc);
      } else if (bias->dtype == PTERON_DTYPE_FLOAT32) {
        if constexpr (kern::is_float_type_v<T>)
          run_conv<T, float>(g, in, w, static_cast<const float*>(bias->data), o, acc);
      } else {
        run_conv<T, T>(g, in, w, static_cast<const T*>(bias->data), o, acc);
      }
    }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::convolution", "out", nullptr, convolution_out,
                         PTERON_KERNEL_PRIORITY, 0})
