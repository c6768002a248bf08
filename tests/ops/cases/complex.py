# SPDX-License-Identifier: BSD-3-Clause
"""Cases of aten::view_as_real_copy.out, the one portable operator that takes
complex tensors: complex64 and complex128 inputs of several ranks (0-d,
zero-size, 4-D), read as interleaved (real, imaginary) pairs
(tests/ops/opcase.py)."""
import torch

from opcase import OpProgram, case

C64, C128 = torch.complex64, torch.complex128


def programs():
    g = torch.Generator().manual_seed(29)

    def c(*shape, dtype=C64):
        real = torch.float32 if dtype == C64 else torch.float64
        re = torch.randn(shape, generator=g).to(real)
        im = torch.randn(shape, generator=g).to(real)
        return torch.complex(re, im)

    def f(x):
        return torch.view_as_real(x)

    return [
        OpProgram(
            "view_as_real_copy_out", "aten::view_as_real_copy.out",
            {
                "c64_2d": case(f, c(3, 4)),
                "c128_3d": case(f, c(2, 3, 5, dtype=C128)),
                "c64_0d": case(f, c()),
                "c64_zero_size": case(f, c(0, 3)),
                "c128_4d": case(f, c(2, 1, 3, 2, dtype=C128)),
            },
            rtol=0, atol=0,
            notes="complex in, its component dtype out with a trailing dim of 2 "
                  "(real, imaginary); exact: the kernel only moves bytes"),
    ]
