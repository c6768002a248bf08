# SPDX-License-Identifier: BSD-3-Clause
"""The contract of the per-operator test programs (tests/ops/).

A case group is a module tests/ops/cases/<group>.py with a function
`programs() -> list[OpProgram]`. Each OpProgram is ONE small program for ONE
operator overload (`operator`, e.g. "aten::exp.out"); its cases (dtypes,
broadcast, zero-size, channels-last, negative dims, scalar arguments ...) are
its methods, one method a case. tests/ops/export.py exports every program of
a group with upstream's exporter through the one fixture writer
(models/fixture_writer.py) into tests/ops/programs/<group>/ with eager
PyTorch's outputs and a manifest keyed by the exporter's version;
tests/test_ops.py runs every method of every program and compares it with
eager, and checks that the program really calls `operator`.

Development-only, like the fixture writer: it imports torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from fixture_writer import MethodSpec


class Fn(nn.Module):
    """A module whose forward is `fn(*inputs)`: one operator call, written as
    eager PyTorch writes it (torch.exp(x), torch.ops.aten.flip(x, [0]) ...)."""

    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


@dataclass
class OpProgram:
    """One operator overload and its cases.
    name: file stem under tests/ops/programs/<group>/ ("exp_out");
    operator: the operator the program must call, as the program names it,
        "<namespace>::<name>.<overload>" ("aten::exp.out");
    cases: {method name: MethodSpec}; the method name says the case
        ("f32_broadcast", "i64_zero_size", "f32_channels_last", "neg_dim");
    preserve_ops: torch ops the exporter must not decompose
        (EdgeCompileConfig(preserve_ops=...)), e.g. [torch.ops.aten.rsub.Scalar];
    skip_dim_order: export without the dim-order ops (EdgeCompileConfig
        (_skip_dim_order=True)), for aten operators the exporter otherwise
        replaces with a dim_order_ops:: variant (aten::empty.out);
    rtol/atol: float tolerance of the comparison (integers and bools: exact);
    notes: what the cases prove, for the manifest;
    rewrites: for an operator the exporter never emits (aten::_conj_physical on
        real tensors), fixture_writer.rewrite_operators() rewrites applied to the
        exported program; the cases then give the eager module (MethodSpec.eager);
    backend_config: ExecutorchBackendConfig keyword arguments for to_executorch(),
        e.g. {"run_reinplace_pass": True} for the in-place aten::index_put_."""
    name: str
    operator: str
    cases: Dict[str, MethodSpec]
    preserve_ops: Sequence[object] = ()
    skip_dim_order: bool = False
    rtol: float = 1e-5
    atol: float = 1e-6
    notes: str = ""
    rewrites: Sequence[Tuple[str, str, Sequence[int]]] = ()
    backend_config: Optional[Dict[str, object]] = None


def case(fn: Callable[..., object], *inputs: torch.Tensor) -> MethodSpec:
    """A method that calls `fn` on `inputs` (the committed inputs)."""
    return MethodSpec(Fn(fn), tuple(inputs))


def random_maker(g: torch.Generator) -> Callable[..., torch.Tensor]:
    """r(*shape, dtype=float32) drawing from g: normal floats, 0/1 bools,
    uint8 in [0, 20), other integers in [-9, 10)."""

    def r(*shape, dtype=torch.float32):
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=g).to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).to(torch.bool)
        if dtype == torch.uint8:
            return torch.randint(0, 20, shape, generator=g).to(dtype)
        return torch.randint(-9, 10, shape, generator=g).to(dtype)

    return r


HALVES = (("f16", torch.float16), ("bf16", torch.bfloat16))


def per_half(name: str, operator: str, make: Callable[[torch.dtype], Dict[str, MethodSpec]],
             **kw) -> OpProgram:
    """One program of float16 and bfloat16 cases: make(dtype) -> {case suffix:
    MethodSpec}, called for each half type; the cases are named TAG_SUFFIX (TAG
    alone for an empty suffix), TAG being f16 or bf16. kw: OpProgram's fields."""
    cases = {}
    for tag, dt in HALVES:
        for suffix, spec in make(dt).items():
            cases[f"{tag}_{suffix}" if suffix else tag] = spec
    return OpProgram(name, operator, cases, **kw)


def channels_last(t: torch.Tensor) -> torch.Tensor:
    """`t` (4-D) in channels-last dim order, as the exporter sees it."""
    return t.contiguous(memory_format=torch.channels_last)
