#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The model zoo: real architectures (torchvision's), exported on demand with
upstream's exporter, each as a portable program and as an XNNPACK-lowered one.

    $PTERON_EXPORT_PYTHON models/zoo.py list [--json]
    $PTERON_EXPORT_PYTHON models/zoo.py export [--ci | --all | NAME ...] [--cache DIR]

`list` needs no torch: this module imports torch, torchvision and executorch
only inside the builders and the exporter, so tests can read ZOO without them.
`export` prints, per model, one line `NAME FOLDER` (the model's cache folder).

Every model is built with random weights from a fixed seed (weights=None,
torch.manual_seed(0); BatchNorm statistics calibrated on random images, see
_calibrated), in eval mode, and fed one random input (1x3x224x224
float32 unless its entry says otherwise). Each is exported twice through
models/fixture_writer.py (torch.export, then
to_edge_transform_and_lower(...).to_executorch()): `portable` and `xnnpack`
(XnnpackPartitioner). A model's folder holds, for VARIANT in portable, xnnpack:
    NAME_VARIANT.pte
    NAME_VARIANT.forward.input_0.npy      the input
    NAME_VARIANT.forward.expected_<i>.npy eager PyTorch's outputs (computed before export)
    NAME_VARIANT.forward.upstream_<i>.npy upstream's runtime (executorch.runtime.Runtime)
                                          on the same program and input
    manifest.json                         the writer's manifest, whose entries add
                                          family, params, variant, upstream, stamp,
                                          export_s and upstream_s
Cache: $PTERON_ZOO_CACHE (default ~/.cache/pteron/zoo) / KEY / NAME, where KEY names
the exporter (torch and executorch versions) and a hash of the text of this file
and of the writer (fixture_writer.source_stamp). A model whose folder holds a
manifest with that key is not exported again.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
VARIANTS = ("portable", "xnnpack")


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry. `build()` returns (module in eval mode, example inputs).
    `backend_config()`, where set, gives ExecutorchBackendConfig keyword
    arguments for the export (the decoder's initial-state pass); such a model
    holds state, so its program is exported from a module fresh from build(),
    not from the one that eager ran."""
    name: str
    family: str
    build: Callable[[], Tuple[object, tuple]]
    ci: bool
    note: str = ""
    backend_config: Optional[Callable[[], dict]] = None


def _torchvision():
    """torchvision's model definitions, without its compiled operators.

    PyPI's torchvision 0.28 wheel is a CUDA build. With the CPU torch its
    compiled library (torchvision::nms, roi_align, ...) does not load, and
    torchvision/_meta_registrations.py, imported by `import torchvision`,
    registers fake kernels for those operators and fails ("operator
    torchvision::nms does not exist"). No model here uses those operators, so
    an empty module object is put in sys.modules under that one name before the
    first import: Python then takes it as already imported and never runs the
    file. Nothing else of torchvision is changed."""
    import types

    name = "torchvision._meta_registrations"
    if "torchvision" not in sys.modules:
        sys.modules.setdefault(name, types.ModuleType(name))
    import torchvision

    return torchvision


def _image(h: int = 224, w: int = 224):
    import torch

    return (torch.randn(1, 3, h, w),)


def _calibrated(m):
    """The module in eval mode, its BatchNorm running statistics set from one
    training-mode forward pass on random images (momentum None: the batch's own
    statistics). torchvision's random initialization leaves mean 0, variance 1,
    and deep nets then shrink their activations layer after layer (MobileNet v3's
    logits come out near 1e-15): calibrated, every normalized activation has
    about unit scale, so the outputs compared are of order 1."""
    import torch
    from torch import nn

    bns = [mod for mod in m.modules() if isinstance(mod, nn.modules.batchnorm._BatchNorm)]
    if bns:
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None
        m.train()
        with torch.no_grad():
            m(torch.randn(2, 3, 224, 224))
    return m.eval()


def _classifier(fn_name: str, **kw):
    def build():
        import torch

        tv = _torchvision()
        torch.manual_seed(0)
        m = _calibrated(getattr(tv.models, fn_name)(weights=None, **kw))
        return m, _image()
    return build


def _segmentation(fn_name: str):
    def build():
        import torch
        from torch import nn

        tv = _torchvision()

        class OutOnly(nn.Module):
            """Torchvision's segmentation models return {"out": logits}; the program
            returns that tensor (N x classes x H x W)."""

            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)["out"]

        torch.manual_seed(0)
        inner = getattr(tv.models.segmentation, fn_name)(weights=None, weights_backbone=None)
        return _calibrated(OutOnly(inner)), _image()
    return build


def _small_vit():
    import torch

    tv = _torchvision()
    torch.manual_seed(0)
    m = tv.models.vision_transformer.VisionTransformer(
        image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768,
        num_classes=1000).eval()
    # torchvision zero-initializes the classification head (all logits would be 0):
    # random weights there too, of the scale of the others.
    torch.nn.init.normal_(m.heads.head.weight, std=192 ** -0.5)
    torch.nn.init.normal_(m.heads.head.bias, std=0.1)
    return m, _image()


def _quantized_classifier(fn_name: str):
    """A classifier quantized by upstream's PT2E flow, static per-channel int8
    (models/export_quantized.py's quantize(): XNNPACKQuantizer, 16 random
    calibration images). The converted module is what eager runs and what is
    exported, portable and XNNPACK-lowered."""
    def build():
        sys.path.insert(0, str(HERE))
        import export_quantized

        m, x = _classifier(fn_name)()
        return export_quantized.quantize(m, x[0], per_channel=True, dynamic=False), x
    return build


ZOO: List[ZooModel] = [
    ZooModel("mobilenet_v3_small", "depthwise", _classifier("mobilenet_v3_small"), False),
    ZooModel("resnet18", "residual", _classifier("resnet18"), True),
    ZooModel("shufflenet_v2_x0_5", "channel-shuffle", _classifier("shufflenet_v2_x0_5"), True),
    ZooModel("efficientnet_b0", "squeeze-excite", _classifier("efficientnet_b0"), True),
    ZooModel("densenet121", "dense-concat", _classifier("densenet121"), False),
    ZooModel("squeezenet1_1", "fire/other", _classifier("squeezenet1_1"), False),
    ZooModel("mnasnet0_5", "depthwise", _classifier("mnasnet0_5"), False),
    ZooModel("regnet_y_400mf", "squeeze-excite", _classifier("regnet_y_400mf"), False),
    ZooModel("swin_t", "attention", _classifier("swin_t"), False),
    ZooModel("lraspp_mobilenet_v3_large", "segmentation", _segmentation("lraspp_mobilenet_v3_large"),
             False, note="output: the model's 'out' (1x21x224x224)"),
    ZooModel("vit_tiny4", "vision-transformer", _small_vit, True,
             note="torchvision VisionTransformer: 224px, patch 16, 4 layers, 3 heads, hidden 192"),
    ZooModel("mobilenet_v2_int8", "quantized", _quantized_classifier("mobilenet_v2"), False,
             note="PT2E static per-channel int8 (XNNPACKQuantizer); the bound has a floor of "
                  "one quantum of the output's range"),
    ZooModel("resnet18_int8", "quantized", _quantized_classifier("resnet18"), False,
             note="PT2E static per-channel int8 (XNNPACKQuantizer)"),
]


def _decoder():
    sys.path.insert(0, str(HERE))
    import decoder

    return decoder


ZOO.append(ZooModel(
    "llama_decoder", "decoder", lambda: _decoder().build(), False,
    note="models/decoder.py: RMSNorm, rotary embedding, causal attention, SwiGLU; KV cache in "
         "mutable buffers with an initial state; one token per call (tests/test_decoder.py "
         "checks the tokens over several calls)",
    backend_config=lambda: _decoder().backend_config()))


def by_name(name: str) -> ZooModel:
    for m in ZOO:
        if m.name == name:
            return m
    raise KeyError(f"no zoo model named {name!r} (models/zoo.py list)")


def cache_root() -> Path:
    return Path(os.environ.get("PTERON_ZOO_CACHE", Path.home() / ".cache" / "pteron" / "zoo"))


# ---- export (needs torch and executorch) ------------------------------------------

def _writer():
    sys.path.insert(0, str(HERE))
    import fixture_writer as fw

    return fw


def cache_key(fw) -> Tuple[str, str]:
    """(folder name, stamp): the exporter's versions and the hash of this file and the writer."""
    v = fw.exporter_versions()
    stamp = fw.source_stamp(Path(__file__))
    return f"torch-{v['torch']}_executorch-{v['executorch']}_{stamp}", stamp


def upstream_outputs(pte: bytes, inputs) -> list:
    """Upstream's runtime (executorch.runtime.Runtime) on the program, method forward."""
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(pte).load_method("forward")
    return list(method.execute(list(inputs)))


def export_model(model: ZooModel, root: Optional[Path] = None) -> Path:
    """The model's cache folder, exported into it unless it is already there."""
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    fw = _writer()
    key, stamp = cache_key(fw)
    out = (root or cache_root()) / key / model.name
    names = [f"{model.name}_{v}" for v in VARIANTS]
    kept = fw.kept_entries(out, stamp)
    if all(n in kept for n in names):
        return out
    module, inputs = model.build()
    params = sum(p.numel() for p in module.parameters())
    methods = {"forward": fw.MethodSpec(module, tuple(inputs))}
    expected = fw.eager_reference(methods)
    entries = []
    for variant, name in zip(VARIANTS, names):
        t0 = time.monotonic()
        if model.backend_config is None:
            pte = fw.export_program(methods, xnnpack=variant == "xnnpack")
        else:
            fresh = {"forward": fw.MethodSpec(model.build()[0], tuple(inputs))}
            pte = fw.export_program(fresh, xnnpack=variant == "xnnpack",
                                    backend_config=model.backend_config())
        export_s = time.monotonic() - t0
        entry = fw.write_fixture(out, name, pte, methods, expected)
        t0 = time.monotonic()
        with torch.no_grad():
            ups = upstream_outputs(pte, inputs)
        upstream_s = time.monotonic() - t0
        files = []
        for i, t in enumerate(ups):
            fn = f"{name}.forward.upstream_{i}.npy"
            fw.save_tensor(out / fn, t)
            files.append(fn)
        entry.update({"model": model.name, "family": model.family, "variant": variant,
                      "params": params, "upstream": files, "stamp": stamp,
                      "export_s": round(export_s, 2), "upstream_s": round(upstream_s, 3)})
        entries.append(entry)
    fw.write_manifest(out, "models/zoo.py", entries)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="the zoo's models (no torch needed)")
    ls.add_argument("--json", action="store_true")
    ex = sub.add_parser("export", help="export models into the cache (kept when cached)")
    ex.add_argument("names", nargs="*")
    ex.add_argument("--ci", action="store_true", help="the CI set")
    ex.add_argument("--all", action="store_true", help="every model")
    ex.add_argument("--cache", type=Path, help="the cache folder (default $PTERON_ZOO_CACHE or "
                    "~/.cache/pteron/zoo)")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        rows = [{"name": m.name, "family": m.family, "ci": m.ci, "note": m.note} for m in ZOO]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['name']:28} {r['family']:20} {'ci' if r['ci'] else '  '} {r['note']}")
        return 0
    if args.all + args.ci + bool(args.names) > 1:
        ap.error("name models, or give --ci, or --all: one of the three")
    if args.all:
        models = list(ZOO)
    elif args.ci:
        models = [m for m in ZOO if m.ci]
    else:
        try:
            models = [by_name(n) for n in args.names]
        except KeyError as e:
            print(f"zoo.py: {e.args[0]}", file=sys.stderr)
            return 2
        if not models:
            ap.error("name models, or give --ci or --all")
    for m in models:
        folder = export_model(m, args.cache)
        print(f"{m.name} {folder}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
