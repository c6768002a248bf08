# SPDX-License-Identifier: BSD-3-Clause
"""Cases of operators kernels_portable has had from the start; they prove the
per-operator programs end to end (tests/ops/opcase.py)."""
import torch

from opcase import OpProgram, case, channels_last


def programs():
    g = torch.Generator().manual_seed(0)

    def r(*shape, dtype=torch.float32):
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=g).to(dtype)
        return torch.randint(-5, 6, shape, generator=g).to(dtype)

    return [
        OpProgram("add_out", "aten::add.out", {
            "f32_broadcast": case(lambda a, b: torch.add(a, b, alpha=2), r(2, 3), r(3)),
            "i64_f32_promote": case(lambda a, b: a + b, r(2, 3, dtype=torch.int64), r(2, 1)),
            "f32_zero_size": case(lambda a, b: a + b, r(0, 3), r(3)),
            "f32_channels_last": case(lambda a, b: a + b, channels_last(r(1, 3, 2, 2)),
                                      channels_last(r(1, 3, 2, 2))),
        }, notes="broadcast, alpha, int64+float32 promotion, zero-size, channels-last"),
        OpProgram("relu_out", "aten::relu.out", {
            "f32": case(torch.relu, r(4, 5)),
            "i32": case(torch.relu, r(7, dtype=torch.int32)),
        }),
    ]
