// SPDX-License-Identifier: BSD-3-Clause
// conv_checks.h - reading and checking aten::convolution.out's arguments,
// shared by kernels_portable and kernels_optimized so both accept the same
// programs and report the same errors.
//
// Signature (PyTorch native_functions.yaml): convolution.out(Tensor input,
// Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
// SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups,
// *, Tensor(a!) out). Shapes: input [N, C, *spatial] (1-3 spatial dims),
// weight [Cout, C/groups, *kernel], bias [Cout], out [N, Cout, *out_spatial]
// with out = (in + 2*pad - dil*(k-1) - 1) / stride + 1 per spatial dim.
// Transposed (the gradient of a convolution with respect to its input, as
// PyTorch defines it): weight [C, Cout/groups, *kernel] and out = (in - 1) *
// stride - 2*pad + dil*(k-1) + output_padding + 1, output_padding smaller
// than the stride or the dilation.
#pragma once

#include <cstdint>

#include "kernel_util.h"
#include "arg_reading.h"
#include "tensor_checks.h"

namespace pteron::kern {

// Sizes and element strides of one convolution. Spatial arrays always have
// 3 entries: the S real spatial dims are the last S, leading unused ones are
// size 1 / stride 0.
struct ConvGeometry {
  int32_t S = 0;  // spatial dims: 1, 2 or 3
  int64_t N = 0, C = 0, Cout = 0, Cin_g = 0, Cout_g = 0, groups = 0;
  int64_t in[3], k[3], out[3], stride[3], pad[3], dil[3];
  int64_t is_n, is_c, is_s[3];  // input strides
  int64_t ws_o, ws_i, ws_s[3];  // weight strides
  int64_t os_n, os_c, os_s[3];  // out strides
  int64_t bs;                   // bias stride (0 without bias)
  // Transposed: ws_o is the stride of weight dim 0 (input channels), ws_i of
  // weight dim 1 (output channels within a group).
  bool transposed = false;
};

struct ConvOperands {
  pteron_tensor *input = nullptr, *weight = nullptr, *bias = nullptr, *out = nullptr;
  ConvGeometry g;
};

// Reads and checks the arguments, resizes `out` and fills `c`.
// float32_only: the caller computes float32 only (other dtypes give
// PTERON_ERROR_UNSUPPORTED_DTYPE); otherwise any supported dtype but bool,
// float16 and bfloat16 included.
// allow_transposed: the caller computes transposed convolutions too (else
// they give PTERON_ERROR_NOT_SUPPORTED).
// Errors: PTERON_ERROR_NOT_SUPPORTED (transposed where not allowed, rank not
// 3-5), PTERON_ERROR_SHAPE_MISMATCH, PTERON_ERROR_INVALID_ARGUMENT (dtypes,
// groups, output padding), each naming the operator and the sizes.
inline int32_t read_convolution(const Args& a, bool float32_only, ConvOperands* c,
                                bool allow_transposed = false) {
  pteron_kernel_context* ctx = a.ctx;
  PTERON_CHECK_OK(a.arity(10));
  bool transposed = false;
  int64_t groups = 0;
  PTERON_CHECK_OK(tensor_arg(a, 0, "input", &c->input));
  PTERON_CHECK_OK(tensor_arg(a, 1, "weight", &c->weight));
  PTERON_CHECK_OK(opt_tensor_arg(a, 2, "bias", &c->bias));
  PTERON_CHECK_OK(a.boolean(6, "transposed", &transposed));
  PTERON_CHECK_OK(a.integer(8, "groups", &groups));
  PTERON_CHECK_OK(a.tensor(9, "out", &c->out));
  const pteron_tensor *input = c->input, *weight = c->weight, *bias = c->bias;
  pteron_tensor* out = c->out;
  if (transposed && !allow_transposed)
    return fail(ctx, PTERON_ERROR_NOT_SUPPORTED, "%s: transposed convolution is not supported",
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
  if (float32_only ? dt != PTERON_DTYPE_FLOAT32
                   : (!is_supported_half(dt) || dt == PTERON_DTYPE_BOOL))
    return unsupported_dtype(ctx, a.op, "input", dt);
  if (weight->dtype != dt)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: weight dtype %s differs from input dtype %s", a.op, dtype_name(weight->dtype),
                dtype_name(dt));
  if (out->dtype != dt)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out dtype %s differs from input dtype %s",
                a.op, dtype_name(out->dtype), dtype_name(dt));
  if (bias) {
    const bool ok = is_floating(dt) ? (bias->dtype == PTERON_DTYPE_FLOAT32 ||
                                       bias->dtype == PTERON_DTYPE_FLOAT64 || bias->dtype == dt)
                                    : bias->dtype == dt;
    if (!ok)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: bias dtype %s does not fit input dtype %s", a.op, dtype_name(bias->dtype),
                  dtype_name(dt));
  }

  int64_t stride[3], pad[3], dil[3], opad[3];
  PTERON_CHECK_OK(spatial_params(a, 3, "stride", S, 1, stride));
  PTERON_CHECK_OK(spatial_params(a, 4, "padding", S, 0, pad));
  PTERON_CHECK_OK(spatial_params(a, 5, "dilation", S, 1, dil));
  PTERON_CHECK_OK(spatial_params(a, 7, "output_padding", S, 0, opad));

  ConvGeometry& g = c->g;
  g = ConvGeometry{};
  g.S = S;
  g.N = input->sizes[0];
  g.C = input->sizes[1];
  g.groups = groups;
  g.transposed = transposed;
  if (groups <= 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: groups must be positive, got %lld", a.op,
                (long long)groups);
  if (transposed) {
    if (weight->sizes[0] != g.C)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: transposed convolution: weight dim 0 (%lld) must equal the input's "
                  "channels (%lld)",
                  a.op, (long long)weight->sizes[0], (long long)g.C);
    if (g.C % groups != 0)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: given groups=%lld, the input's %lld channels must be divisible by groups",
                  a.op, (long long)groups, (long long)g.C);
    g.Cin_g = g.C / groups;
    g.Cout_g = weight->sizes[1];
    g.Cout = g.Cout_g * groups;
  } else {
    g.Cout = weight->sizes[0];
    g.Cin_g = weight->sizes[1];
  }
  if (!transposed && g.Cout % groups != 0)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: given groups=%lld, weight dim 0 (%lld) must be divisible by groups", a.op,
                (long long)groups, (long long)g.Cout);
  if (!transposed && (g.Cin_g == 0 ? g.C != 0 : (g.C % g.Cin_g != 0 || g.C / g.Cin_g != groups)))
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: given groups=%lld and weight of %lld input channels per "
                "group, input has %lld channels (expected groups * %lld)",
                a.op, (long long)groups, (long long)g.Cin_g, (long long)g.C, (long long)g.Cin_g);
  if (bias && (bias->dim != 1 || bias->sizes[0] != g.Cout))
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: expected bias to be 1-dimensional with %lld elements", a.op,
                (long long)g.Cout);
  g.Cout_g = g.Cout / groups;
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
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: weight spatial dim %d has size %lld", a.op,
                  (int)j, (long long)g.k[s]);
    // Sizes and parameters are bounded (storage, <= 2^31), so these products
    // stay far inside int64.
    if (g.k[s] - 1 > (int64_t{1} << 40))
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: kernel too large", a.op);
    const int64_t padded = g.in[s] + 2 * g.pad[s];
    const int64_t extent = g.dil[s] * (g.k[s] - 1) + 1;
    if (transposed) {
      if (opad[j] < 0 || (opad[j] >= g.stride[s] && opad[j] >= g.dil[s]))
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: output padding %lld in spatial dim %d must be non-negative and smaller "
                    "than either stride (%lld) or dilation (%lld)",
                    a.op, (long long)opad[j], (int)j, (long long)g.stride[s], (long long)g.dil[s]);
      g.out[s] = (g.in[s] - 1) * g.stride[s] - 2 * g.pad[s] + extent + opad[j];
      if (g.out[s] <= 0)
        return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                    "%s: transposed convolution: output size %lld in spatial dim %d is not "
                    "positive",
                    a.op, (long long)g.out[s], (int)j);
      out_sizes[2 + j] = g.out[s];
      continue;
    }
    if (padded < extent)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: padded input size %lld in spatial dim %d is smaller "
                  "than the dilated kernel size %lld",
                  a.op, (long long)padded, (int)j, (long long)extent);
    g.out[s] = (padded - extent) / g.stride[s] + 1;
    out_sizes[2 + j] = g.out[s];
  }
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out", out, out_sizes, rank));
  g.os_n = out->strides[0];
  g.os_c = out->strides[1];
  for (int32_t s = 0; s < 3; ++s) {
    const int32_t j = s - (3 - S);
    g.os_s[s] = j < 0 ? 0 : out->strides[2 + j];
  }
  return PTERON_OK;
}

}  // namespace pteron::kern
