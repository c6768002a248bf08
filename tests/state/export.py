#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the programs of what real exports carry (issue 12, item 6) and the
Llama-style decoder (models/decoder.py), with eager PyTorch's outputs and
upstream's runtime outputs (executorch.runtime) over several calls:

    accumulator.pte           mutable buffers (float32 [2, 3] and int64 [1]) exported
                              with their initial state (InitializedMutableBufferPass),
                              updated in place by every call
    accumulator.npz           inputs [CALLS, 2, 3], eager outputs per call
    external.pte, external.ptd  a 2-layer MLP whose weights live in the data file
                              (ExecutorchBackendConfig(external_constants=True))
    external.npz              input, eager output
    external_state.pte/.ptd   the accumulator with external constants: its
                              initialised buffers and its weight go to the data file
    external_state.npz        as accumulator.npz
    external_xnnpack.pte/.ptd the MLP lowered to XNNPACK, its delegate's weights
                              tagged into the data file (upstream's
                              delegate_external_constants_pass_unlifted): named data
                              under sha256 keys, no tensor layout
    external_xnnpack.npz      input, eager output
    decoder.pte, decoder_xnnpack.pte  the decoder, portable and XNNPACK-lowered
    decoder.npz, decoder_xnnpack.npz  greedy tokens, eager and upstream logits per call
    manifest.json             keyed by the exporter's version (torch, executorch)

Development-only (needs torch and executorch); tests/test_state.py and
tests/test_decoder.py only read what it writes. Entries already exported by
this exporter version are kept unless --force.

Usage: /work/exportenv/bin/python tests/state/export.py [--force] [--only NAME...]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))

import decoder  # noqa: E402
import fixture_writer as fw  # noqa: E402

CALLS = 4
PROMPT = [1, 2, 3, 4]
NEW_TOKENS = 12


class Accumulator(nn.Module):
    """acc += x * w; count += 1; returns (acc * 2, count): both buffers start
    non-zero, so a runtime that drops the initial state gives other numbers."""

    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.arange(6, dtype=torch.float32).reshape(2, 3) + 1.0)
        self.register_buffer("count", torch.tensor([7], dtype=torch.int64))
        self.w = nn.Parameter(torch.tensor([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]]),
                              requires_grad=False)

    def forward(self, x):
        self.acc.add_(x * self.w)
        self.count.add_(1)
        return self.acc * 2.0, self.count.clone()


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.l1 = nn.Linear(4, 8)
        self.l2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def _export(module, inputs, **config):
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    ep = torch.export.export(module, inputs)
    return to_edge_transform_and_lower(ep).to_executorch(ExecutorchBackendConfig(**config))


def _ptd_bytes(et) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        et.write_tensor_data_to_file(d)
        files = list(Path(d).glob("*.ptd"))
        assert len(files) == 1, files
        return files[0].read_bytes()


def _calls_inputs():
    g = torch.Generator().manual_seed(5)
    return [torch.randn(2, 3, generator=g) for _ in range(CALLS)]


def _eager_calls(module, xs):
    outs = []
    with torch.no_grad():
        for x in xs:
            outs.append([o.clone() for o in module(x)])
    return outs


def export_accumulator(name: str, external: bool) -> dict:
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
    xs = _calls_inputs()
    eager = _eager_calls(Accumulator(), xs)
    cfg = {"passes": [InitializedMutableBufferPass(["acc", "count"])]}
    if external:
        cfg["external_constants"] = True
    et = _export(Accumulator(), (xs[0],), **cfg)
    (HERE / f"{name}.pte").write_bytes(bytes(et.buffer))
    files = [f"{name}.pte"]
    if external:
        (HERE / f"{name}.ptd").write_bytes(_ptd_bytes(et))
        files.append(f"{name}.ptd")
    np.savez(HERE / f"{name}.npz", inputs=np.stack([x.numpy() for x in xs]),
             expected_0=np.stack([e[0].numpy() for e in eager]),
             expected_1=np.stack([e[1].numpy() for e in eager]))
    return {"name": name, "files": files + [f"{name}.npz"], "calls": CALLS}


def export_malformed() -> dict:
    """Variants of accumulator.pte whose initial state is broken, written with
    upstream's serializer: an entry index out of range, a stored state
    shorter than its tensor, a mutable data segment index out of range."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    from executorch.exir.schema import ExtraTensorInfo
    src = (HERE / "accumulator.pte").read_bytes()
    files = []

    def acc_tensor(f):
        plan = f.program.execution_plan[0]
        return next(v.val for v in plan.values if type(v.val).__name__ == "Tensor"
                    and v.val.allocation_info is not None and v.val.data_buffer_idx == 1)

    for variant in ("bad_index", "short_state", "bad_segments_idx"):
        f = deserialize_pte_binary(src)
        t = acc_tensor(f)
        if variant == "bad_index":
            t.data_buffer_idx = 99
        elif variant == "short_state":
            f.mutable_data[1].storage = bytes(f.mutable_data[1].storage)[:8]
        else:
            t.extra_tensor_info = ExtraTensorInfo(mutable_data_segments_idx=3)
        fn = f"accumulator_{variant}.pte"
        (HERE / fn).write_bytes(bytes(serialize_pte_binary(f)))
        files.append(fn)
    return {"name": "accumulator_malformed", "files": files}


def export_external() -> dict:
    m = Mlp().eval()
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        want = m(x)
    et = _export(m, (x,), external_constants=True)
    (HERE / "external.pte").write_bytes(bytes(et.buffer))
    (HERE / "external.ptd").write_bytes(_ptd_bytes(et))
    np.savez(HERE / "external.npz", input=x.numpy(), expected=want.numpy())
    return {"name": "external", "files": ["external.pte", "external.ptd", "external.npz"],
            "keys": ["l1.weight", "l1.bias", "l2.weight", "l2.bias"]}


def export_external_xnnpack() -> dict:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.passes.external_constants_pass import (
        delegate_external_constants_pass_unlifted,
    )
    m = Mlp().eval()
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        want = m(x)
    gm = torch.export.export(m, (x,)).module()
    delegate_external_constants_pass_unlifted(gm, gen_tag_fn=lambda node: "mlp_weights")
    ep = torch.export.export(gm, (x,))
    et = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    (HERE / "external_xnnpack.pte").write_bytes(bytes(et.buffer))
    (HERE / "external_xnnpack.ptd").write_bytes(_ptd_bytes(et))
    np.savez(HERE / "external_xnnpack.npz", input=x.numpy(), expected=want.numpy())
    return {"name": "external_xnnpack",
            "files": ["external_xnnpack.pte", "external_xnnpack.ptd", "external_xnnpack.npz"]}


def export_decoder(xnnpack: bool) -> dict:
    from executorch.runtime import Runtime
    name = "decoder_xnnpack" if xnnpack else "decoder"
    m, _ = decoder.build()
    with torch.no_grad():
        tokens, eager = decoder.greedy(lambda t, p: m(t, p), PROMPT, NEW_TOKENS)
    pte = decoder.export(xnnpack=xnnpack)
    (HERE / f"{name}.pte").write_bytes(pte)
    # Upstream's runtime on the same program, fed the eager tokens (teacher
    # forcing), so its logits line up with eager's call by call.
    method = Runtime.get().load_program(pte).load_method("forward")
    upstream = []
    for pos in range(len(tokens) - 1):
        upstream.append(method.execute((torch.tensor([[tokens[pos]]]),
                                        torch.tensor([pos])))[0].clone())
    up_tokens = PROMPT + [int(u.reshape(-1).argmax()) for u in upstream[len(PROMPT) - 1:]]
    assert up_tokens == tokens, (up_tokens, tokens)
    gaps = []
    for e in eager:
        top = e.reshape(-1).sort(descending=True).values
        gaps.append(float(top[0] - top[1]))
    # A greedy token decided by less than this could flip on rounding alone.
    assert min(gaps[len(PROMPT) - 1:]) > 1e-3, gaps
    np.savez(HERE / f"{name}.npz", tokens=np.array(tokens, dtype=np.int64),
             eager=np.stack([e.numpy() for e in eager]),
             upstream=np.stack([u.numpy() for u in upstream]))
    return {"name": name, "files": [f"{name}.pte", f"{name}.npz"], "prompt": PROMPT,
            "new_tokens": NEW_TOKENS, "size_bytes": len(pte),
            "min_top2_gap": min(gaps[len(PROMPT) - 1:])}


EXPORTS = {
    "accumulator": lambda: export_accumulator("accumulator", external=False),
    "accumulator_malformed": export_malformed,
    "external_state": lambda: export_accumulator("external_state", external=True),
    "external": export_external,
    "external_xnnpack": export_external_xnnpack,
    "decoder": lambda: export_decoder(False),
    "decoder_xnnpack": lambda: export_decoder(True),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    versions = fw.exporter_versions()
    mpath = HERE / "manifest.json"
    old = json.loads(mpath.read_text()) if mpath.exists() else {}
    same = all(old.get(k) == v for k, v in versions.items())
    entries = {e["name"]: e for e in old.get("programs", [])} if same else {}
    for name, fn in EXPORTS.items():
        if a.only and name not in a.only:
            continue
        if name in entries and not a.force and all((HERE / f).exists()
                                                     for f in entries[name]["files"]):
            continue
        print(f"exporting {name}", flush=True)
        entries[name] = fn()
    manifest = {"generator": "tests/state/export.py", **versions,
                "programs": [entries[n] for n in EXPORTS if n in entries]}
    mpath.write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
