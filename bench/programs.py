#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Exports the benchmark programs that are too big to commit (run by bench/run.py
with the exporter's environment .venv-export, which has torch and executorch).

    .venv-export/bin/python bench/programs.py OUT_DIR [NAME ...]

Written through the project's one fixture writer (models/fixture_writer.py):
OUT_DIR/<name>.pte, OUT_DIR/<name>.forward.input_0.npy, .expected_0.npy and
OUT_DIR/manifest.json (2 x Linear(1024), a MobileNet-v1-like CNN, both
portable and XNNPACK-lowered; torchvision's MobileNetV2 XNNPACK-lowered; the
quantized MLP and transformer block, both ways),
whose entries add to the writer's the description, the
FLOPs per execution and the eager output's sum. A program whose file exists and
whose entry was made by this same exporter version and the same text of this
script and of the writer is kept. NAMEs limit the export to those programs.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "models"))

import fixture_writer as fw  # noqa: E402


class MLP1024(nn.Module):
    """2 x Linear(1024) with a ReLU between: two [256,1024]x[1024,1024] GEMMs."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(1024, 1024)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6())


class MobileNetLike(nn.Module):
    """MobileNet v1 layout at width 0.5: a strided 3x3 stem, 13 depthwise-separable
    blocks (depthwise 3x3 + BatchNorm + ReLU6, pointwise 1x1 + BatchNorm + ReLU6),
    global average pool, a 1000-way Linear. Plain PyTorch modules."""

    def __init__(self, width: float = 0.5) -> None:
        super().__init__()
        c = lambda n: int(n * width)  # noqa: E731
        plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + \
               [(1024, 2), (1024, 1)]
        layers = [conv_bn(3, c(32), 3, 2)]
        cin = c(32)
        for cout, stride in plan:
            layers += [conv_bn(cin, cin, 3, stride, groups=cin), conv_bn(cin, c(cout), 1, 1)]
            cin = c(cout)
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, 1000)

    def forward(self, x):
        x = self.features(x)
        return self.fc(x.mean(dim=(2, 3)))


def flops_of(model: nn.Module, x: torch.Tensor) -> int:
    """2 x multiply-accumulates of every Conv2d and Linear (the GEMM-like work)."""
    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Conv2d):
            k = mod.kernel_size[0] * mod.kernel_size[1] * (mod.in_channels // mod.groups)
            total[0] += 2 * out.numel() * k
        elif isinstance(mod, nn.Linear):
            total[0] += 2 * out.numel() * mod.in_features
    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(x)
    for h in hs:
        h.remove()
    return total[0]


def quantized(name: str):
    """The quantized programs: (float model, input, description, per_channel, dynamic), to be
    quantized by upstream's PT2E flow (models/export_quantized.py's quantize())."""
    from export_quantized import Block  # models/: the quantized fixtures' transformer block
    if name.startswith("qmlp1024"):
        return (MLP1024().eval(), torch.randn(256, 1024),
                "2 x Linear(1024) + ReLU, batch 256, PT2E static int8 (per-channel weights)",
                True, False)
    return (Block(d=256, heads=4, ff=1024).eval(), torch.randn(1, 128, 256),
            "transformer block (d 256, 4 heads, MLP 1024, 128 tokens), linear layers PT2E "
            "dynamic int8 (per-token activations, per-channel weights)", True, True)


def make(name: str):
    torch.manual_seed(0)
    if name.startswith("q"):
        return quantized(name)[:3]
    if name.startswith("mlp1024"):
        m = MLP1024().eval()
        x = torch.randn(256, 1024)
        desc = "2 x Linear(1024) + ReLU, batch 256"
    elif name.startswith("mobilenet_v2"):
        # torchvision's MobileNetV2 (the first program), its own
        # initialisation (offline: no pretrained weights), 1x3x224x224.
        from zoo import _torchvision  # models/zoo.py: torchvision without its compiled ops
        m = _torchvision().models.mobilenet_v2(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        desc = "torchvision MobileNetV2 (random weights), 1x3x224x224"
    else:
        m = MobileNetLike().eval()
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                n = mod.num_features
                with torch.no_grad():
                    mod.running_mean.copy_(torch.randn(n) * 0.1)
                    mod.running_var.copy_(torch.rand(n) + 0.5)
        x = torch.randn(1, 3, 224, 224)
        desc = "MobileNet-v1-like CNN (width 0.5), 1x3x224x224"
    return m, x, desc


# mobilenet_v2 only XNNPACK-lowered: upstream's portable convolutions take seconds.
# The quantized ones (issue 15's benchmark; quantized MobileNetV2 is the zoo's
# mobilenet_v2_int8): both variants each.
NAMES = ["mlp1024_portable", "mlp1024_xnnpack", "mobilenet_portable", "mobilenet_xnnpack",
         "mobilenet_v2_xnnpack", "qmlp1024_portable", "qmlp1024_xnnpack",
         "qblock_dynamic_portable", "qblock_dynamic_xnnpack"]


def export_one(name: str, out: Path) -> dict:
    m, x, desc = make(name)
    flops = flops_of(m, x)
    if name.startswith("q"):
        from export_quantized import quantize
        _, _, _, per_channel, dynamic = quantized(name)
        m = quantize(m, x, per_channel, dynamic)
    methods = {"forward": fw.MethodSpec(m, (x,))}
    expected = fw.eager_reference(methods)
    pte = fw.export_program(methods, xnnpack=name.endswith("_xnnpack"))
    entry = fw.write_fixture(out, name, pte, methods, expected)
    entry.update({"description": desc, "flops": flops, "gemm_heavy": True,
                  "eager_out0_sum": float(expected["forward"][0][0].double().sum())})
    return entry


def main(argv) -> int:
    warnings.filterwarnings("ignore")
    out = Path(argv[1])
    only = argv[2:]
    out.mkdir(parents=True, exist_ok=True)
    stamp = fw.source_stamp(Path(__file__))
    kept = fw.kept_entries(out, stamp)
    entries = []
    for name in NAMES:
        if only and name not in only:
            continue
        e = kept.get(name)
        if not e:
            print(f"exporting {name}", flush=True)
            e = export_one(name, out)
            e["stamp"] = stamp
        entries.append(e)
        fw.write_manifest(out, "bench/programs.py", entries +
                          [k for n, k in kept.items() if n not in {x["name"] for x in entries}])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
