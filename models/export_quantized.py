# SPDX-License-Identifier: BSD-3-Clause
"""The quantized fixtures (models/fixtures/quantized/): small models quantized by upstream's own
PT2E flow (prepare_pt2e -> calibrate -> convert_pt2e, with XNNPACKQuantizer), each exported
twice: as a portable program (quantize / dequantize operators around float ones, which
kernels_quantized and kernels_portable run) and lowered to XNNPACK.

    .venv-export/bin/python models/export_quantized.py [--out models/fixtures/quantized]

Writes NAME.pte, NAME.forward.input_0.npy, NAME.forward.expected_0.npy (eager PyTorch's output of
the converted model) and manifest.json (per program: its configuration, operators, and
`quantum`: one quantum of the expected output's range over 8 bits, the comparison bound of
tests/test_quantized_programs.py). Random weights, fixed seeds; every file is a few KB.
"""
import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np
import torch
import executorch.kernels.quantized  # noqa: F401  (out variants of quantized_decomposed::)
from torch import nn
from torch.export import export

OUT = Path(__file__).resolve().parent / "fixtures" / "quantized"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        y = torch.relu(self.conv2(y))
        return self.fc(y.mean(dim=(2, 3)))


CONFIGS = {
    # name: (model class, input shape, per_channel, dynamic)
    "qmlp_static_per_tensor": (MLP, (4, 16), False, False),
    "qmlp_static_per_channel": (MLP, (4, 16), True, False),
    # dynamic activations (choose_qparams per tensor at run time), per-channel int8 weights
    "qmlp_dynamic": (MLP, (4, 16), True, True),
    "qcnn_static_per_channel": (CNN, (1, 3, 8, 8), True, False),
}


def quantize(model, x, per_channel, dynamic):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    q = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=per_channel, is_dynamic=dynamic))
    prepared = prepare_pt2e(export(model, (x,)).module(), q)
    g = torch.Generator().manual_seed(1)
    for _ in range(16):
        prepared(torch.randn(x.shape, generator=g))
    return convert_pt2e(prepared)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    a.out.mkdir(parents=True, exist_ok=True)
    manifest = {"generator": "models/export_quantized.py", "torch": torch.__version__,
                "programs": []}
    for i, (name, (cls, shape, per_channel, dynamic)) in enumerate(CONFIGS.items()):
        torch.manual_seed(100 + i)
        model = cls().eval()
        x = torch.randn(shape, generator=torch.Generator().manual_seed(200 + i))
        converted = quantize(model, x, per_channel, dynamic)
        want = converted(x).detach()
        for lowered in (False, True):
            prog = name + ("_xnnpack" if lowered else "")
            et = to_edge_transform_and_lower(
                export(converted, (x,)),
                partitioner=[XnnpackPartitioner()] if lowered else []).to_executorch()
            (a.out / f"{prog}.pte").write_bytes(et.buffer)
            np.save(a.out / f"{prog}.forward.input_0.npy", x.numpy())
            np.save(a.out / f"{prog}.forward.expected_0.npy", want.numpy())
            ops = Counter(str(n.target) for n in et.exported_program().graph.nodes
                          if n.op == "call_function" and "alloc" not in str(n.target))
            manifest["programs"].append({
                "name": prog, "file": f"{prog}.pte", "xnnpack": lowered,
                "per_channel": per_channel, "dynamic": dynamic,
                "operators": sorted(ops),
                "quantum": float((want.max() - want.min()) / 255.0),
            })
            print(prog, dict(ops))
    (a.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
