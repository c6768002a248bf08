# SPDX-License-Identifier: BSD-3-Clause
"""Cases of the element-wise binary operators beyond add/sub/mul/div (atan2,
bitwise and shifts, floor_divide, fmod, remainder, pow, maximum, minimum,
logical_*, rsub) and of the creation operators (full, zeros, ones, empty,
scalar_tensor, fill, masked_fill, arange): dtypes PyTorch allows for each,
mixed-dtype promotion, broadcast, zero-size, channels-last and Python scalar
arguments (int, float, bool)."""
import torch

from opcase import OpProgram, case, channels_last

A = torch.ops.aten


def programs():
    g = torch.Generator().manual_seed(12)

    def r(*shape, dtype=torch.float32, lo=-5, hi=6):
        if dtype.is_floating_point:
            return torch.randn(shape, generator=g).to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).bool()
        return torch.randint(lo, hi, shape, generator=g).to(dtype)

    def nonzero(*shape, dtype=torch.int32):
        """Integer divisors without zero, both signs (uint8: 1..5)."""
        if dtype == torch.uint8:
            return torch.randint(1, 6, shape, generator=g).to(dtype)
        t = torch.randint(1, 4, shape, generator=g)
        sign = torch.randint(0, 2, shape, generator=g) * 2 - 1
        return (t * sign).to(dtype)

    def pos(*shape, dtype=torch.float32):
        return (torch.rand(*shape, generator=g) * 3 + 0.1).to(dtype)

    i32, i64, u8, f64, bl = torch.int32, torch.int64, torch.uint8, torch.float64, torch.bool
    progs = []

    # ---- atan2 -----------------------------------------------------------------------
    progs.append(OpProgram("atan2_out", "aten::atan2.out", {
        "f32_broadcast": case(torch.atan2, r(2, 3), r(3)),
        "f64": case(torch.atan2, r(4, dtype=f64), r(4, dtype=f64)),
        "i32_i64_to_f32": case(torch.atan2, r(2, 3, dtype=i32), r(2, 3, dtype=i64)),
        "bool": case(torch.atan2, r(5, dtype=bl), r(5, dtype=bl)),
        "f32_zero_dim_f64": case(torch.atan2, r(2, 3), r(dtype=f64)),
        "f32_zero_size": case(torch.atan2, r(0, 3), r(3)),
        "f32_channels_last": case(torch.atan2, channels_last(r(1, 3, 2, 2)),
                                  channels_last(r(1, 3, 2, 2))),
    }, notes="float32 result for integer/bool operands; zero-dim tensors do not promote"))

    # ---- bitwise and / or / xor --------------------------------------------------------
    for name, fn in (("and", torch.bitwise_and), ("or", torch.bitwise_or),
                     ("xor", torch.bitwise_xor)):
        progs.append(OpProgram(f"bitwise_{name}_tensor_out", f"aten::bitwise_{name}.Tensor_out", {
            "i32": case(fn, r(2, 3, dtype=i32, lo=-100, hi=100), r(2, 3, dtype=i32, lo=-100,
                                                                    hi=100)),
            "i64_i32_broadcast": case(fn, r(2, 3, dtype=i64, lo=-1000, hi=1000),
                                      r(3, dtype=i32, lo=-1000, hi=1000)),
            "u8": case(fn, r(6, dtype=u8, lo=0, hi=256), r(6, dtype=u8, lo=0, hi=256)),
            "bool": case(fn, r(2, 3, dtype=bl), r(2, 3, dtype=bl)),
            "bool_u8_promote": case(fn, r(4, dtype=bl), r(4, dtype=u8, lo=0, hi=256)),
            "i32_zero_size": case(fn, r(0, 3, dtype=i32), r(3, dtype=i32)),
            "i32_channels_last": case(fn, channels_last(r(1, 3, 2, 2, dtype=i32, lo=0, hi=64)),
                                      r(1, 3, 2, 2, dtype=i32, lo=0, hi=64)),
        }, notes="integers and bool, promotion, broadcast, zero-size, channels-last"))
        progs.append(OpProgram(f"bitwise_{name}_scalar_out", f"aten::bitwise_{name}.Scalar_out", {
            "i64_int": case(lambda a, fn=fn: fn(a, 6), r(2, 3, dtype=i64, lo=-50, hi=50)),
            "i32_neg_int": case(lambda a, fn=fn: fn(a, -4), r(5, dtype=i32, lo=-50, hi=50)),
            "u8_int": case(lambda a, fn=fn: fn(a, 12), r(5, dtype=u8, lo=0, hi=256)),
            "bool_true": case(lambda a, fn=fn: fn(a, True), r(5, dtype=bl)),
            "bool_int_to_i64": case(lambda a, fn=fn: fn(a, 3), r(5, dtype=bl)),
            "i32_channels_last": case(lambda a, fn=fn: fn(a, 5),
                                      channels_last(r(1, 3, 2, 2, dtype=i32, lo=0, hi=64))),
        }, notes="int/bool scalars; a bool tensor with an int scalar gives int64"))

    # ---- shifts ---------------------------------------------------------------------
    counts32 = torch.tensor([-1, 0, 1, 5, 30, 31, 32, 40], dtype=i32)
    vals32 = torch.tensor([3, -7, 1, -1, 5, -9, 100, -100], dtype=i32)
    counts64 = torch.tensor([0, 1, 62, 63, 64, 65, -3, 7], dtype=i64)
    vals64 = torch.tensor([1, -1, 3, -5, 7, -9, 11, -13], dtype=i64)
    for name, op in (("left", A.bitwise_left_shift), ("right", A.bitwise_right_shift)):
        tt, ts = op.Tensor, op.Tensor_Scalar
        progs.append(OpProgram(f"bitwise_{name}_shift_tensor_out",
                               f"aten::bitwise_{name}_shift.Tensor_out", {
            "i32_out_of_range_counts": case(tt, vals32, counts32),
            "i64_out_of_range_counts": case(tt, vals64, counts64),
            "u8": case(tt, torch.tensor([255, 1, 128, 7, 9], dtype=u8),
                       torch.tensor([1, 7, 8, 200, 2], dtype=u8)),
            "i8_negative": case(tt, torch.tensor([-128, 127, -5, -1], dtype=torch.int8),
                                torch.tensor([1, 1, 1, 8], dtype=torch.int8)),
            "u8_i32_promote_broadcast": case(tt, r(2, 3, dtype=u8, lo=0, hi=256),
                                             torch.tensor([1, 3, 9], dtype=i32)),
            "i32_zero_size": case(tt, r(0, 3, dtype=i32), r(3, dtype=i32, lo=0, hi=4)),
            "i32_channels_last": case(tt, channels_last(r(1, 3, 2, 2, dtype=i32)),
                                      channels_last(r(1, 3, 2, 2, dtype=i32, lo=0, hi=5))),
        }, preserve_ops=[tt], notes="negative counts and counts >= the bit width, sign fill"))
        progs.append(OpProgram(f"bitwise_{name}_shift_tensor_scalar_out",
                               f"aten::bitwise_{name}_shift.Tensor_Scalar_out", {
            "i32_3": case(lambda a, ts=ts: ts(a, 3), vals32),
            "i32_40": case(lambda a, ts=ts: ts(a, 40), vals32),
            "i64_63": case(lambda a, ts=ts: ts(a, 63), vals64),
            "u8_9": case(lambda a, ts=ts: ts(a, 9), r(5, dtype=u8, lo=0, hi=256)),
            "bool_int_to_i64": case(lambda a, ts=ts: ts(a, 1), r(5, dtype=bl)),
            "i32_channels_last": case(lambda a, ts=ts: ts(a, 2),
                                      channels_last(r(1, 3, 2, 2, dtype=i32))),
        }, preserve_ops=[ts], notes="scalar counts beyond the bit width; bool tensor -> int64"))

    # ---- floor_divide, fmod, remainder ------------------------------------------------
    divs = (("floor_divide", torch.floor_divide), ("fmod", torch.fmod),
            ("remainder", torch.remainder))
    for name, fn in divs:
        tensor_cases = {
            "f32_broadcast": case(fn, r(2, 3) * 4, pos(3) * torch.tensor([1., -1., 1.])),
            "f64": case(fn, r(6, dtype=f64) * 4, r(6, dtype=f64)),
            "i32_signs": case(fn, r(2, 4, dtype=i32, lo=-20, hi=20), nonzero(2, 4)),
            "i64_f32_promote": case(fn, r(2, 3, dtype=i64, lo=-20, hi=20), r(2, 3)),
            "u8": case(fn, r(6, dtype=u8, lo=0, hi=256), nonzero(6, dtype=u8)),
            "i64_zero_dim_i32": case(fn, r(2, 3, dtype=i64, lo=-20, hi=20),
                                     torch.tensor(-3, dtype=i32)),
            "f32_zero_size": case(fn, r(0, 3), pos(3)),
            "f32_channels_last": case(fn, channels_last(r(1, 3, 2, 2) * 4),
                                      channels_last(pos(1, 3, 2, 2))),
        }
        if name == "floor_divide":
            op_name, prog_name, preserve = "aten::floor_divide.out", "floor_divide_out", \
                [A.floor_divide.default]
        else:
            op_name, prog_name, preserve = f"aten::{name}.Tensor_out", f"{name}_tensor_out", []
        progs.append(OpProgram(prog_name, op_name, tensor_cases, preserve_ops=preserve,
                               notes="Python (remainder, floor_divide) vs C (fmod) signs"))
        if name == "floor_divide":
            continue
        progs.append(OpProgram(f"{name}_scalar_out", f"aten::{name}.Scalar_out", {
            "f32_float": case(lambda a, fn=fn: fn(a, 1.5), r(2, 3) * 4),
            "f32_neg_float": case(lambda a, fn=fn: fn(a, -1.5), r(2, 3) * 4),
            "i32_int": case(lambda a, fn=fn: fn(a, 3), r(2, 4, dtype=i32, lo=-20, hi=20)),
            "i32_neg_int": case(lambda a, fn=fn: fn(a, -3), r(2, 4, dtype=i32, lo=-20, hi=20)),
            "i64_float_to_f32": case(lambda a, fn=fn: fn(a, 2.5), r(6, dtype=i64, lo=-20, hi=20)),
            "u8_int": case(lambda a, fn=fn: fn(a, 7), r(6, dtype=u8, lo=0, hi=256)),
            "bool_int_to_i64": case(lambda a, fn=fn: fn(a, 2), r(5, dtype=bl)),
            "f32_channels_last": case(lambda a, fn=fn: fn(a, 0.75),
                                      channels_last(r(1, 3, 2, 2) * 4)),
        }, notes="int/float scalars of both signs; an int tensor with a float scalar -> float32"))

    # ---- pow -----------------------------------------------------------------------
    progs.append(OpProgram("pow_tensor_tensor_out", "aten::pow.Tensor_Tensor_out", {
        "f32_broadcast": case(torch.pow, pos(2, 3), r(3)),
        "f64": case(torch.pow, pos(5, dtype=f64), r(5, dtype=f64)),
        "i64_negative_exponents": case(torch.pow, torch.tensor([1, -1, 2, 0, -1, 3, -2, 0]),
                                       torch.tensor([-1, -3, -2, -1, -2, 4, 3, 0])),
        "i32_wraps": case(torch.pow, torch.tensor([3, -3, 7], dtype=i32),
                          torch.tensor([21, 21, 13], dtype=i32)),
        "u8": case(torch.pow, torch.tensor([3, 2, 0, 5], dtype=u8),
                   torch.tensor([5, 9, 0, 3], dtype=u8)),
        "i32_f32_promote": case(torch.pow, r(2, 3, dtype=i32, lo=1, hi=5), r(2, 3)),
        "f32_zero_size": case(torch.pow, pos(0, 3), r(3)),
        "f32_channels_last": case(torch.pow, channels_last(pos(1, 3, 2, 2)),
                                  channels_last(r(1, 3, 2, 2))),
    }, notes="integer pow wraps; negative integer exponents give 0 except for bases 1 and -1"))
    progs.append(OpProgram("pow_tensor_scalar_out", "aten::pow.Tensor_Scalar_out", {
        "f32_2": case(lambda a: torch.pow(a, 2), r(2, 3)),
        "f32_half": case(lambda a: torch.pow(a, 0.5), pos(2, 3)),
        "f32_neg_int": case(lambda a: torch.pow(a, -2), pos(2, 3)),
        "f64_3": case(lambda a: torch.pow(a, 3), r(5, dtype=f64)),
        "i32_3": case(lambda a: torch.pow(a, 3), r(2, 3, dtype=i32)),
        "u8_2": case(lambda a: torch.pow(a, 2), r(5, dtype=u8, lo=0, hi=256)),
        "bool_int_to_i64": case(lambda a: torch.pow(a, 2), r(5, dtype=bl)),
        "i64_float_to_f32": case(lambda a: torch.pow(a, 1.5), r(5, dtype=i64, lo=0, hi=9)),
        "i32_bool_exponent": case(lambda a: torch.pow(a, True), r(5, dtype=i32)),
        "f32_channels_last": case(lambda a: torch.pow(a, 3), channels_last(r(1, 3, 2, 2))),
    }, notes="int, float and bool exponents; an int tensor with a float exponent -> float32"))
    progs.append(OpProgram("pow_scalar_out", "aten::pow.Scalar_out", {
        "float_f32": case(lambda e: torch.pow(2.0, e), r(2, 3)),
        "int_i64_negative_exponents": case(lambda e: torch.pow(2, e),
                                           torch.tensor([-2, -1, 0, 1, 5, 62])),
        "neg_int_i32": case(lambda e: torch.pow(-3, e), r(6, dtype=i32, lo=0, hi=8)),
        "int_bool_to_i64": case(lambda e: torch.pow(2, e), r(5, dtype=bl)),
        "float_i32_to_f32": case(lambda e: torch.pow(2.5, e), r(6, dtype=i32)),
        "float_f64": case(lambda e: torch.pow(1.5, e), r(5, dtype=f64)),
        "float_zero_size": case(lambda e: torch.pow(2.0, e), r(0, 2)),
        "float_channels_last": case(lambda e: torch.pow(0.5, e), channels_last(r(1, 3, 2, 2))),
    }, notes="a scalar base: its kind lifts the exponent's category only"))

    # ---- maximum / minimum --------------------------------------------------------
    nan = float("nan")
    for name, fn in (("maximum", torch.maximum), ("minimum", torch.minimum)):
        progs.append(OpProgram(f"{name}_out", f"aten::{name}.out", {
            "f32_broadcast": case(fn, r(2, 3), r(3)),
            "f32_nan": case(fn, torch.tensor([nan, 1., -2., nan]), torch.tensor([0., nan, 3., nan])),
            "f64": case(fn, r(5, dtype=f64), r(5, dtype=f64)),
            "i32": case(fn, r(2, 3, dtype=i32), r(2, 3, dtype=i32)),
            "u8": case(fn, r(6, dtype=u8, lo=0, hi=256), r(6, dtype=u8, lo=0, hi=256)),
            "bool": case(fn, r(6, dtype=bl), r(6, dtype=bl)),
            "i64_f32_promote": case(fn, r(2, 3, dtype=i64), r(2, 3)),
            "bool_i32_promote": case(fn, r(4, dtype=bl), r(4, dtype=i32)),
            "f32_zero_size": case(fn, r(0, 3), r(3)),
            "f32_channels_last": case(fn, channels_last(r(1, 3, 2, 2)), r(1, 3, 2, 2)),
        }, notes="NaN propagates; bool operands; promotion"))

    # ---- logical_and / or / xor ----------------------------------------------------
    for name, fn in (("and", torch.logical_and), ("or", torch.logical_or),
                     ("xor", torch.logical_xor)):
        progs.append(OpProgram(f"logical_{name}_out", f"aten::logical_{name}.out", {
            "bool": case(fn, r(2, 3, dtype=bl), r(2, 3, dtype=bl)),
            "f32_i32_mixed": case(fn, torch.tensor([0., 1.5, nan, -0., 2.]),
                                  torch.tensor([3, 0, 1, 1, 0], dtype=i32)),
            "u8_broadcast": case(fn, r(2, 3, dtype=u8, lo=0, hi=3), r(3, dtype=u8, lo=0, hi=3)),
            "i64_zero_size": case(fn, r(0, 3, dtype=i64), r(3, dtype=i64)),
            "f32_channels_last": case(fn, channels_last(r(1, 3, 2, 2, dtype=torch.float32) > 0),
                                      channels_last(r(1, 3, 2, 2) > 0)),
        }, notes="operands read as nonzero, any dtypes; bool result"))

    # ---- rsub.Scalar ----------------------------------------------------------------
    progs.append(OpProgram("rsub_scalar_out", "aten::rsub.Scalar_out", {
        "f32": case(lambda a: torch.rsub(a, 2.0), r(2, 3)),
        "f32_alpha": case(lambda a: torch.rsub(a, 1, alpha=0.5), r(2, 3)),
        "i32_alpha": case(lambda a: torch.rsub(a, 3, alpha=2), r(2, 3, dtype=i32)),
        "i64_float_to_f32": case(lambda a: torch.rsub(a, 1.5), r(5, dtype=i64)),
        "u8_wraps": case(lambda a: torch.rsub(a, 1), r(5, dtype=u8, lo=0, hi=256)),
        "f64": case(lambda a: torch.rsub(a, -4), r(5, dtype=f64)),
        "f32_zero_size": case(lambda a: torch.rsub(a, 1.0), r(0, 3)),
        "f32_channels_last": case(lambda a: torch.rsub(a, 1.0), channels_last(r(1, 3, 2, 2))),
    }, preserve_ops=[A.rsub.Scalar], notes="other - alpha * self; int/float scalars and alpha"))

    # ---- masked_fill ----------------------------------------------------------------
    def mf(value):
        return lambda a, m: a.masked_fill(m, value)

    progs.append(OpProgram("masked_fill_scalar_out", "aten::masked_fill.Scalar_out", {
        "f32_float": case(mf(2.5), r(2, 3), r(2, 3, dtype=bl)),
        "f32_mask_broadcast": case(mf(-1.0), r(2, 3), r(3, dtype=bl)),
        "f32_self_broadcast": case(mf(7.0), r(3), r(2, 3, dtype=bl)),
        "i32_int": case(mf(9), r(2, 3, dtype=i32), r(2, 3, dtype=bl)),
        "i32_float_truncates": case(mf(1.5), r(2, 3, dtype=i32), r(2, 3, dtype=bl)),
        "u8_neg_int_wraps": case(mf(-1), r(5, dtype=u8, lo=0, hi=256), r(5, dtype=bl)),
        "bool_true": case(mf(True), r(5, dtype=bl), r(5, dtype=bl)),
        "f64_int": case(mf(3), r(5, dtype=f64), r(5, dtype=bl)),
        "f32_zero_size": case(mf(1.0), r(0, 3), r(0, 3, dtype=bl)),
        "f32_channels_last": case(mf(0.0), channels_last(r(1, 3, 2, 2)),
                                  channels_last(r(1, 3, 2, 2, dtype=bl))),
    }, preserve_ops=[A.masked_fill.Scalar], notes="value converted to self's dtype; broadcast"))

    # ---- fill ---------------------------------------------------------------------
    progs.append(OpProgram("fill_scalar_out", "aten::fill.Scalar_out", {
        "f32_float": case(lambda a: A.fill.Scalar(a, 2.5), r(2, 3)),
        "i64_int": case(lambda a: A.fill.Scalar(a, -7), r(2, 3, dtype=i64)),
        "i32_float_truncates": case(lambda a: A.fill.Scalar(a, 3.9), r(4, dtype=i32)),
        "u8_neg_int_wraps": case(lambda a: A.fill.Scalar(a, -2), r(4, dtype=u8, lo=0, hi=9)),
        "bool_int": case(lambda a: A.fill.Scalar(a, 1), r(4, dtype=bl)),
        "f64_bool": case(lambda a: A.fill.Scalar(a, True), r(4, dtype=f64)),
        "f32_zero_size": case(lambda a: A.fill.Scalar(a, 1.0), r(0, 3)),
        "f32_channels_last": case(lambda a: A.fill.Scalar(a, 4.0), channels_last(r(1, 3, 2, 2))),
    }, preserve_ops=[A.fill.Scalar], notes="self's shape and dtype; int/float/bool values"))
    progs.append(OpProgram("fill_tensor_out", "aten::fill.Tensor_out", {
        "f32_f64_value": case(A.fill.Tensor, r(2, 3), torch.tensor(1.25, dtype=f64)),
        "i32_f32_value_truncates": case(A.fill.Tensor, r(2, 3, dtype=i32), torch.tensor(2.7)),
        "u8_i64_value_wraps": case(A.fill.Tensor, r(4, dtype=u8, lo=0, hi=9), torch.tensor(300)),
        "bool_i32_value": case(A.fill.Tensor, r(4, dtype=bl), torch.tensor(5, dtype=i32)),
        "f32_zero_size": case(A.fill.Tensor, r(0, 3), torch.tensor(1.0)),
        "f32_channels_last": case(A.fill.Tensor, channels_last(r(1, 3, 2, 2)), torch.tensor(-3.)),
    }, preserve_ops=[A.fill.Tensor], notes="a zero-dim value tensor of any dtype"))

    # ---- scalar_tensor, full, zeros, ones, empty ------------------------------------------
    progs.append(OpProgram("scalar_tensor_out", "aten::scalar_tensor.out", {
        "float": case(lambda: torch.scalar_tensor(3.5)),
        "int_default_f32": case(lambda: torch.scalar_tensor(-2)),
        "int_i32": case(lambda: torch.scalar_tensor(7, dtype=i32)),
        "float_i64_truncates": case(lambda: torch.scalar_tensor(-2.75, dtype=i64)),
        "bool": case(lambda: torch.scalar_tensor(True, dtype=bl)),
        "float_f64": case(lambda: torch.scalar_tensor(0.1, dtype=f64)),
    }, notes="zero-dim out in the requested dtype"))
    progs.append(OpProgram("full_out", "aten::full.out", {
        "f32": case(lambda: torch.full((2, 3), 1.5)),
        "i64_int": case(lambda: torch.full((3, 1, 2), 7)),
        "bool": case(lambda: torch.full((4,), True)),
        "i32_float_truncates": case(lambda: torch.full((2, 2), 1.5, dtype=i32)),
        "u8_neg_int_wraps": case(lambda: torch.full((3,), -1, dtype=u8)),
        "f64": case(lambda: torch.full((2, 2), -0.25, dtype=f64)),
        "f32_zero_size": case(lambda: torch.full((0, 3), 2.0)),
        "f32_rank0": case(lambda: torch.full((), 4.0)),
    }, notes="sizes, dtypes, zero-size, rank 0"))
    for name, fn, op in (("zeros", torch.zeros, A.zeros.default),
                         ("ones", torch.ones, A.ones.default)):
        progs.append(OpProgram(f"{name}_out", f"aten::{name}.out", {
            "f32": case(lambda fn=fn: fn(2, 3)),
            "i32": case(lambda fn=fn: fn(4, dtype=i32)),
            "i64": case(lambda fn=fn: fn(2, 1, 3, dtype=i64)),
            "bool": case(lambda fn=fn: fn(3, dtype=bl)),
            "u8": case(lambda fn=fn: fn(2, 2, dtype=u8)),
            "f64": case(lambda fn=fn: fn(3, dtype=f64)),
            "f32_zero_size": case(lambda fn=fn: fn(0, 4)),
        }, preserve_ops=[op], notes="sizes and dtypes"))

    # empty.out's contents are unspecified (as in PyTorch): its cases compare
    # zero-size outputs (shape and dtype only) or feed it to where() with an
    # all-true condition, so its values never reach an output. The exporter
    # emits dim_order_ops::_empty_dim_order.out for torch.empty unless the
    # dim-order ops are skipped.
    every = torch.ones(2, 3, dtype=bl)
    progs.append(OpProgram("empty_out", "aten::empty.out", {
        "f32_zero_size": case(lambda: torch.empty(0, 3)),
        "f64_zero_size_rank3": case(lambda: torch.empty(2, 0, 4, dtype=f64)),
        "f32_values_unused": case(lambda m, x: torch.where(m, x, torch.empty(2, 3)), every,
                                  r(2, 3)),
        "i32_values_unused": case(lambda m, x: torch.where(m, x, torch.empty(3, dtype=i32)),
                                  every, r(2, 3, dtype=i32)),
    }, skip_dim_order=True, notes="shape and dtype only: the contents are unspecified"))

    # ---- arange ---------------------------------------------------------------------
    progs.append(OpProgram("arange_out", "aten::arange.out", {
        "int_i64": case(lambda: torch.arange(5)),
        "float_f32": case(lambda: torch.arange(3.5)),
        "int_f64": case(lambda: torch.arange(4, dtype=f64)),
        "int_i32": case(lambda: torch.arange(6, dtype=i32)),
        "int_u8": case(lambda: torch.arange(7, dtype=u8)),
        "float_i64_truncates": case(lambda: torch.arange(5.5, dtype=i64)),
        "float_i32_counts_in_double": case(lambda: torch.arange(5.5, dtype=i32)),
        "zero_size": case(lambda: torch.arange(0)),
    }, preserve_ops=[A.arange.default], notes="PyTorch's size rule: int64 counts in int64"))
    progs.append(OpProgram("arange_start_out", "aten::arange.start_out", {
        "int_step": case(lambda: torch.arange(1, 10, 2)),
        "negative_step": case(lambda: torch.arange(10, 0, -3)),
        "float_step": case(lambda: torch.arange(0, 1, 0.1)),
        "float_negative_step": case(lambda: torch.arange(1, -1, -0.25)),
        "f64": case(lambda: torch.arange(-1, 1, 0.3, dtype=f64)),
        "i32_float_bounds": case(lambda: torch.arange(0.5, 5.5, 1, dtype=i32)),
        "i8_wraps": case(lambda: torch.arange(0, 300, 100, dtype=torch.int8)),
        "u8_negative_step": case(lambda: torch.arange(5, 0, -1, dtype=u8)),
        "empty_range": case(lambda: torch.arange(3, 3)),
    }, preserve_ops=[A.arange.start_step], notes="int/float steps of both signs, dtypes"))
    return progs
