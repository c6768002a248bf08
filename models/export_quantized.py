# SPDX-License-Identifier: BSD-3-Clause
"""The quantized fixtures (models/fixtures/quantized/): small models quantized by upstream's own
PT2E flow (prepare_pt2e -> calibrate -> convert_pt2e, with XNNPACKQuantizer), each exported
twice: as a portable program (quantize / dequantize operators around float ones, which
kernels_quantized and kernels_portable run) and lowered to XNNPACK.

    .venv-export/bin/python models/export_quantized.py [--out models/fixtures/quantized]

Also, through torchao's quantize_, an MLP with 4-bit groupwise weights (XNNPACK-lowered only).

Writes NAME.pte, NAME.forward.input_0.npy, NAME.forward.expected_0.npy (eager PyTorch's output of
the converted model) and manifest.json (per program: its configuration, operators, and
`quantum`: one quantum of the expected output's range over 8 bits; `upstream_error`: the max
abs error against eager of upstream's own runtime on the same program and input. Their
comparison bound in tests/test_quantized_programs.py is max(quantum, 4 * upstream_error)). Random weights, fixed seeds; every file is a few KB.
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


class WideMLP(nn.Module):
    """An MLP whose layers take 64 features (4-bit groups of 32 need 32 | K)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 64), nn.Linear(64, 16)

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


class Block(nn.Module):
    """A pre-norm transformer block: attention (4 heads over 64 features) and a GELU MLP."""

    def __init__(self, d=64, heads=4, ff=128):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(
            2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class InvRes(nn.Module):
    """MobileNetV2's inverted residual blocks, small: a stem convolution, then 1x1 expand, 3x3
    depthwise (24 channels: not a multiple of 16), 1x1 project and the residual Add; then a
    block with a 5x5 depthwise of stride 2 (40 channels); ReLU6 after each expand and depthwise
    convolution."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.exp1, self.proj1 = nn.Conv2d(8, 24, 1), nn.Conv2d(24, 8, 1)
        self.dw1 = nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.exp2, self.proj2 = nn.Conv2d(8, 40, 1), nn.Conv2d(40, 16, 1)
        self.dw2 = nn.Conv2d(40, 40, 5, stride=2, padding=2, groups=40)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        relu6 = nn.functional.relu6
        y = relu6(self.stem(x))
        y = y + self.proj1(relu6(self.dw1(relu6(self.exp1(y)))))
        y = self.proj2(relu6(self.dw2(relu6(self.exp2(y)))))
        return self.fc(y.mean(dim=(2, 3)))


CONFIGS = {
    # name: (model class, input shape, per_channel, dynamic)
    "qmlp_static_per_tensor": (MLP, (4, 16), False, False),
    "qmlp_static_per_channel": (MLP, (4, 16), True, False),
    # dynamic activations (choose_qparams per tensor at run time), per-channel int8 weights
    "qmlp_dynamic": (MLP, (4, 16), True, True),
    "qcnn_static_per_channel": (CNN, (1, 3, 8, 8), True, False),
    # dynamic activations into convolutions: upstream's exporter declares the Convert's QDInt8
    # output NCHW after an NHWC input (backends/xnnpack/src/passes/transpose.cpp, fix_dynamic_convert_shapes); batch 2
    "qcnn_dynamic": (CNN, (2, 3, 8, 8), True, True),
    # the transformer block: its linear layers dynamic-quantized, and all of it static
    "qblock_dynamic": (Block, (1, 16, 64), True, True),
    "qblock_static_per_channel": (Block, (1, 16, 64), True, False),
    # depthwise convolutions and a residual Add between int8 nodes (8-bit codes in XnnpackBackend)
    "qinvres_static_per_channel": (InvRes, (1, 3, 20, 20), True, False),
}

# torchao's own flow (quantize_, not PT2E): dynamic int8 activations with 4-bit weights in
# groups of 32 (upstream's XNNPACK lowering needs a multiple of 32), which upstream's XNNPACK lowering writes as QBInt4 values. XNNPACK-lowered only:
# upstream's exporter cannot make the portable program (no out variants of torchao::
# quantize_affine and its siblings).
TORCHAO_CONFIGS = {
    "qmlp_dynamic_4bit": (WideMLP, (4, 64), 32),
}


def quantize_4bit(model, group_size):
    from torchao.quantization import quantize_
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_api import Int8DynamicActivationIntxWeightConfig
    quantize_(model, Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(group_size)))
    return model


def op_name(target):
    """An operator's name as it stays from run to run (a Python function has no address in it)."""
    if isinstance(target, torch._ops.OpOverload) or not hasattr(target, "__name__"):
        return str(target)
    return f"{getattr(target, '__module__', None) or 'builtins'}.{target.__name__}"


def upstream_error(pte, x, want):
    """Max abs error of upstream's own runtime (executorch.runtime, its portable, quantized and
    XNNPACK kernels) against eager: the reference bound of tests/test_quantized_programs.py."""
    from executorch.runtime import Runtime
    method = Runtime.get().load_program(pte).load_method("forward")
    return float((method.execute([x])[0] - want).abs().max())


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
    from torchao.quantization.pt2e import allow_exported_model_train_eval
    # .eval() on the result (the fixture writer calls it) switches the exported graph's mode
    # the supported way instead of raising.
    return allow_exported_model_train_eval(convert_pt2e(prepared))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    a.out.mkdir(parents=True, exist_ok=True)
    manifest = {"generator": "models/export_quantized.py", "torch": torch.__version__,
                "programs": []}
    jobs = [(name, cls, shape, per_channel, dynamic, None)
            for name, (cls, shape, per_channel, dynamic) in CONFIGS.items()]
    jobs += [(name, cls, shape, True, True, group)
             for name, (cls, shape, group) in TORCHAO_CONFIGS.items()]
    for i, (name, cls, shape, per_channel, dynamic, group) in enumerate(jobs):
        torch.manual_seed(100 + i)
        model = cls().eval()
        x = torch.randn(shape, generator=torch.Generator().manual_seed(200 + i))
        if group is None:
            converted = quantize(model, x, per_channel, dynamic)
        else:
            converted = quantize_4bit(model, group)
        want = converted(x).detach()
        for lowered in ((False, True) if group is None else (True,)):
            prog = name + ("_xnnpack" if lowered else "")
            et = to_edge_transform_and_lower(
                export(converted, (x,)),
                partitioner=[XnnpackPartitioner()] if lowered else []).to_executorch()
            (a.out / f"{prog}.pte").write_bytes(et.buffer)
            np.save(a.out / f"{prog}.forward.input_0.npy", x.numpy())
            np.save(a.out / f"{prog}.forward.expected_0.npy", want.numpy())
            ops = Counter(op_name(n.target) for n in et.exported_program().graph.nodes
                          if n.op == "call_function" and "alloc" not in str(n.target))
            manifest["programs"].append({
                "name": prog, "file": f"{prog}.pte", "xnnpack": lowered,
                "per_channel": per_channel, "dynamic": dynamic,
                "weight_bits": 4 if group else 8,
                "operators": sorted(ops),
                "quantum": float((want.max() - want.min()) / 255.0),
                "upstream_error": upstream_error(et.buffer, x, want),
            })
            print(prog, dict(ops))
    (a.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
