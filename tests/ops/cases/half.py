# SPDX-License-Identifier: BSD-3-Clause
"""float16 and bfloat16 cases of the operators whose portable kernels take
them (runtime/kernels/common/half.h; upstream's portable kernels accept both
for these operators). Each program's cases run the operator on float16 and on
bfloat16 inputs (and mixed with other dtypes: promotion), expected outputs from
eager PyTorch. The casts program checks the conversions themselves bit for bit:
float16 and bfloat16 bit patterns of every exponent to float32, float32 values
at the rounding edges (ties, subnormals, overflow, NaN, infinities) and random
float32 bit patterns to both types."""
import torch

import opcase
from opcase import OpProgram, case, channels_last

F16, BF16 = torch.float16, torch.bfloat16
aten = torch.ops.aten

# Results are computed in float and rounded once, as eager PyTorch does; an
# accumulation (sums, softmax) may differ from eager's by one unit in the last
# place of bfloat16 (2^-8 relative).
RTOL, ATOL = 1e-2, 1e-3


def programs():
    g = torch.Generator().manual_seed(12)

    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    def small(*shape, dtype=torch.float32):
        """Values in {-1.5, -1, ..., 1.5}: comparisons see ties."""
        return (torch.randint(-3, 4, shape, generator=g).to(torch.float32) / 2).to(dtype)

    def per_half(name, operator, make, **kw):
        kw.setdefault("rtol", RTOL)
        kw.setdefault("atol", ATOL)
        return opcase.per_half(name, operator, make, **kw)

    progs = []

    # ---- binary arithmetic --------------------------------------------------------
    progs += [
        per_half("add_out", "aten::add.out", lambda dt: {
            "broadcast_alpha": case(lambda a, b: torch.add(a, b, alpha=2), r(2, 3, dtype=dt),
                                    r(3, dtype=dt)),
            "channels_last": case(lambda a, b: a + b, channels_last(r(1, 3, 2, 2, dtype=dt)),
                                  channels_last(r(1, 3, 2, 2, dtype=dt))),
            "zero_size": case(lambda a, b: a + b, r(0, 3, dtype=dt), r(3, dtype=dt)),
            "f32_promote": case(lambda a, b: a + b, r(2, 3, dtype=dt), r(2, 3)),
            "i64_promote": case(lambda a, b: a + b, r(2, 3, dtype=dt),
                                torch.randint(-4, 5, (2, 3), generator=g)),
        }, notes="broadcast, alpha, channels-last, zero-size, promotion with float32 and int64"),
        OpProgram("add_out_f16_bf16", "aten::add.out", {
            "f16_bf16_to_f32": case(lambda a, b: a + b, r(4, dtype=F16), r(4, dtype=BF16)),
        }, rtol=RTOL, atol=ATOL, notes="float16 + bfloat16 promotes to float32, as in PyTorch"),
        per_half("sub_out", "aten::sub.out", lambda dt: {
            "broadcast_alpha": case(lambda a, b: torch.sub(a, b, alpha=3), r(2, 1, dtype=dt),
                                    r(1, 4, dtype=dt)),
        }),
        per_half("mul_out", "aten::mul.out", lambda dt: {
            "broadcast": case(lambda a, b: a * b, r(3, 1, 2, dtype=dt), r(4, 1, dtype=dt)),
            "scalar": case(lambda a: a * 1.5, r(5, dtype=dt)),
        }),
        per_half("div_out", "aten::div.out", lambda dt: {
            "": case(lambda a, b: a / b, r(2, 3, dtype=dt), r(2, 3, dtype=dt)),
            "by_zero": case(lambda a, b: a / b, r(4, dtype=dt), torch.zeros(4, dtype=dt)),
        }),
        per_half("div_out_mode", "aten::div.out_mode", lambda dt: {
            "floor": case(lambda a, b: torch.div(a, b, rounding_mode="floor"),
                          r(6, dtype=dt) * 4, r(6, dtype=dt)),
            "trunc": case(lambda a, b: torch.div(a, b, rounding_mode="trunc"),
                          r(6, dtype=dt) * 4, r(6, dtype=dt)),
        }),
    ]

    # ---- activations ----------------------------------------------------------------
    progs += [
        per_half("relu_out", "aten::relu.out", lambda dt: {
            "": case(torch.relu, r(4, 5, dtype=dt)),
            "channels_last": case(torch.relu, channels_last(r(1, 2, 3, 3, dtype=dt))),
        }),
        per_half("clamp_out", "aten::clamp.out", lambda dt: {
            "both": case(lambda x: torch.clamp(x, -0.3, 0.7), r(3, 4, dtype=dt)),
            "min_only": case(lambda x: torch.clamp(x, min=0.1), r(6, dtype=dt)),
        }),
        per_half("clamp_tensor_out", "aten::clamp.Tensor_out", lambda dt: {
            "broadcast": case(lambda x, lo, hi: torch.clamp(x, lo, hi), r(3, 4, dtype=dt),
                              r(4, dtype=dt) - 1, r(3, 1, dtype=dt) + 1),
        }),
        per_half("hardtanh_out", "aten::hardtanh.out", lambda dt: {
            "": case(lambda x: torch.nn.functional.hardtanh(x, -0.5, 0.5), r(8, dtype=dt)),
        }),
        per_half("sigmoid_out", "aten::sigmoid.out", lambda dt: {
            "": case(torch.sigmoid, r(2, 5, dtype=dt) * 3),
        }),
        per_half("tanh_out", "aten::tanh.out", lambda dt: {
            "": case(torch.tanh, r(2, 5, dtype=dt) * 2),
        }),
        per_half("gelu_out", "aten::gelu.out", lambda dt: {
            "erf": case(torch.nn.functional.gelu, r(7, dtype=dt) * 2),
            "tanh": case(lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
                         r(7, dtype=dt) * 2),
        }),
        per_half("hardswish_out", "aten::hardswish.out", lambda dt: {
            "": case(torch.nn.functional.hardswish, r(9, dtype=dt) * 4),
        }, preserve_ops=[aten.hardswish.default]),
        per_half("softmax_out", "aten::_softmax.out", lambda dt: {
            "last_dim": case(lambda x: torch.softmax(x, -1), r(3, 7, dtype=dt)),
            "dim0_channels_last": case(lambda x: torch.softmax(x, 1),
                                       channels_last(r(2, 3, 2, 2, dtype=dt))),
        }),
        per_half("log_softmax_out", "aten::_log_softmax.out", lambda dt: {
            "": case(lambda x: torch.log_softmax(x, -2), r(4, 3, dtype=dt)),
        }),
    ]

    # ---- comparisons, logical, where --------------------------------------------------
    for nm, fn in (("eq", torch.eq), ("ne", torch.ne), ("gt", torch.gt), ("lt", torch.lt),
                   ("ge", torch.ge), ("le", torch.le)):
        progs.append(per_half(f"{nm}_tensor_out", f"aten::{nm}.Tensor_out",
                              lambda dt, fn=fn: {
                                  "broadcast": case(fn, small(3, 4, dtype=dt), small(4, dtype=dt)),
                              }))
        # 0.1 is no float16 / bfloat16 value: it is rounded to self's type first
        progs.append(per_half(f"{nm}_scalar_out", f"aten::{nm}.Scalar_out",
                              lambda dt, fn=fn: {
                                  "": case(lambda x, fn=fn: fn(x, 0.1),
                                           torch.tensor([0.0996, 0.1, 0.1001, -1.0, 2.0],
                                                        dtype=dt)),
                              }))
    progs += [
        per_half("logical_not_out", "aten::logical_not.out", lambda dt: {
            "": case(torch.logical_not, small(2, 5, dtype=dt)),
        }),
        per_half("any_out", "aten::any.out", lambda dt: {
            "": case(lambda x: torch.any(x, dim=1), small(3, 4, dtype=dt)),
        }),
        per_half("any_dims_out", "aten::any.dims_out", lambda dt: {
            "": case(lambda x: torch.any(x, dim=(0, -1)), small(3, 4, 2, dtype=dt)),
        }),
        per_half("any_all_out", "aten::any.all_out", lambda dt: {
            "": case(torch.any, torch.zeros(2, 3, dtype=dt)),
        }),
        per_half("where_self_out", "aten::where.self_out", lambda dt: {
            "broadcast": case(lambda c, a, b: torch.where(c, a, b), small(3, 1) > 0,
                              r(3, 4, dtype=dt), r(4, dtype=dt)),
            "f32_promote": case(lambda c, a, b: torch.where(c, a, b), small(5) > 0,
                                r(5, dtype=dt), r(5)),
        }),
    ]

    # ---- reductions -----------------------------------------------------------------
    progs += [
        per_half("mean_out", "aten::mean.out", lambda dt: {
            "dim_keepdim": case(lambda x: torch.mean(x, dim=1, keepdim=True), r(3, 8, dtype=dt)),
            "neg_dims": case(lambda x: torch.mean(x, dim=(-1, -2)),
                             channels_last(r(2, 3, 4, 4, dtype=dt))),
        }),
        per_half("sum_intlist_out", "aten::sum.IntList_out", lambda dt: {
            "dim": case(lambda x: torch.sum(x, dim=0), r(6, 5, dtype=dt)),
            "to_f32": case(lambda x: torch.sum(x, dim=-1, dtype=torch.float32), r(3, 9, dtype=dt)),
        }, atol=1e-2),
        per_half("amax_out", "aten::amax.out", lambda dt: {
            "": case(lambda x: torch.amax(x, dim=-1), r(4, 6, dtype=dt)),
        }),
        per_half("max_dim_max", "aten::max.dim_max", lambda dt: {
            "": case(lambda x: tuple(torch.max(x, dim=1)), small(4, 5, dtype=dt)),
        }),
        per_half("argmax_out", "aten::argmax.out", lambda dt: {
            "": case(lambda x: torch.argmax(x, dim=0), small(5, 3, dtype=dt)),
        }),
        per_half("cumsum_out", "aten::cumsum.out", lambda dt: {
            "": case(lambda x: torch.cumsum(x, dim=-1), r(2, 6, dtype=dt)),
        }, atol=1e-2),
    ]

    # ---- fills ----------------------------------------------------------------------
    progs += [
        per_half("full_like_out", "aten::full_like.out", lambda dt: {
            "": case(lambda x: torch.full_like(x, 0.1), r(2, 3, dtype=dt)),
        }),
        per_half("zeros_like_out", "aten::zeros_like.out", lambda dt: {
            "": case(lambda x: aten.zeros_like.default(x), r(3, 2, dtype=dt)),
        }, preserve_ops=[aten.zeros_like.default]),
    ]

    # ---- copies (exact) -------------------------------------------------------------
    exact = {"rtol": 0.0, "atol": 0.0}
    progs += [
        per_half("permute_copy_out", "aten::permute_copy.out", lambda dt: {
            "": case(lambda x: aten.permute_copy.default(x, [2, 0, 1]), r(2, 3, 4, dtype=dt)),
        }, **exact),
        per_half("view_copy_out", "aten::view_copy.out", lambda dt: {
            "": case(lambda x: aten.view_copy.default(x, [3, -1]), r(2, 6, dtype=dt)),
        }, **exact),
        per_half("expand_copy_out", "aten::expand_copy.out", lambda dt: {
            "": case(lambda x: aten.expand_copy.default(x, [3, 2, 4]), r(2, 1, dtype=dt)),
        }, **exact),
        per_half("unsqueeze_copy_out", "aten::unsqueeze_copy.out", lambda dt: {
            "": case(lambda x: aten.unsqueeze_copy.default(x, -1), r(2, 3, dtype=dt)),
        }, **exact),
        per_half("squeeze_copy_dims_out", "aten::squeeze_copy.dims_out", lambda dt: {
            "": case(lambda x: aten.squeeze_copy.dims(x, [0, 2]), r(1, 3, 1, 2, dtype=dt)),
        }, **exact),
        per_half("select_copy_int_out", "aten::select_copy.int_out", lambda dt: {
            "": case(lambda x: aten.select_copy.int(x, 1, -1), r(2, 3, 4, dtype=dt)),
        }, **exact),
        per_half("slice_copy_tensor_out", "aten::slice_copy.Tensor_out", lambda dt: {
            "": case(lambda x: aten.slice_copy.Tensor(x, 1, 1, 5, 2), r(2, 6, dtype=dt)),
        }, **exact),
        per_half("cat_out", "aten::cat.out", lambda dt: {
            "": case(lambda a, b: torch.cat([a, b], dim=-1), r(2, 3, dtype=dt), r(2, 1, dtype=dt)),
            "dim0": case(lambda a, b: torch.cat([a, b]), r(1, 3, dtype=dt), r(2, 3, dtype=dt)),
        }, **exact),
        per_half("clone_dim_order_out", "dim_order_ops::_clone_dim_order.out", lambda dt: {
            "": case(lambda x: x.clone(), r(3, 4, dtype=dt)),
        }, **exact),
    ]

    # ---- casts: the conversions themselves, bit for bit ---------------------------------
    # every 7th float16 bit pattern (both signs, every exponent: subnormals,
    # infinities, NaNs) and every 61st bfloat16 one
    some_f16 = torch.arange(0, 1 << 16, 7, dtype=torch.int32).to(torch.int16).view(F16)
    some_bf16 = torch.arange(0, 1 << 16, 61, dtype=torch.int32).to(torch.int16).view(BF16)
    h = float(2 ** -24)
    edges = torch.tensor([
        0.0, -0.0, 1.0, -2.5, 65504.0, 65519.99, 65520.0, -65520.0, 1e6, float("inf"),
        float("-inf"), float("nan"), 6.1035156e-05, 6.0975552e-05, h, h / 2, h * 0.50001,
        h * 1.5, h * 2.5, 2049.0, 2051.0, 2050.0, 1.0009765625 + 2 ** -11, 1.0 + 2 ** -11,
        1.0 + 3 * 2 ** -11, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -8 + 2 ** -20,
        3.3895314e38, 3.4e38, 1e-40, -1e-45, 9.2e-41,
    ], dtype=torch.float32)
    rand_f32 = torch.randint(-(1 << 31), 1 << 31, (4096,), generator=g,
                             dtype=torch.int64).to(torch.int32).view(torch.float32)
    progs.append(OpProgram("to_dim_order_copy_out", "dim_order_ops::_to_dim_order_copy.out", {
        "f16_bits_to_f32": case(lambda x: x.to(torch.float32), some_f16),
        "bf16_bits_to_f32": case(lambda x: x.to(torch.float32), some_bf16),
        "f32_edges_to_f16": case(lambda x: x.to(F16), edges),
        "f32_edges_to_bf16": case(lambda x: x.to(BF16), edges),
        "f32_random_bits_to_f16": case(lambda x: x.to(F16), rand_f32),
        "f32_random_bits_to_bf16": case(lambda x: x.to(BF16), rand_f32),
        "f64_to_f16": case(lambda x: x.to(F16), torch.tensor([1.0 + 2 ** -11 + 2 ** -40,
                                                                 1e300, -1e-300, 0.1],
                                                                dtype=torch.float64)),
        "f16_to_bf16": case(lambda x: x.to(BF16), r(16, dtype=F16)),
        "bf16_to_f16": case(lambda x: x.to(F16), (r(16) * 100).to(BF16)),
        "i64_to_f16": case(lambda x: x.to(F16), torch.tensor([0, 1, -3, 2049, 65519, 70000])),
        "f16_to_i32": case(lambda x: x.to(torch.int32), (r(8) * 50).to(F16)),
        "bf16_to_u8": case(lambda x: x.to(torch.uint8), (r(8).abs() * 50).to(BF16)),
        "f16_to_bool": case(lambda x: x.to(torch.bool), small(8, dtype=F16)),
        "bool_to_bf16": case(lambda x: x.to(BF16), small(8) > 0),
        "f16_channels_last_to_f32": case(lambda x: x.to(torch.float32),
                                         channels_last(r(1, 3, 2, 2, dtype=F16))),
    }, rtol=0.0, atol=0.0, notes="exact: 9363 float16 and 1075 bfloat16 bit patterns to "
                                 "float32, float32 values at the rounding edges and 4096 random "
                                 "float32 bit patterns to both"))
    return progs
