# SPDX-License-Identifier: BSD-3-Clause
"""Exports the per-operator programs of kernels_llm (models/fixtures/llm/): small programs
that call upstream ExecuTorch 1.5.1's llama:: custom operators (extension/llm/custom_ops) the
way its LLM exporter does, with a dynamic sequence length and start position where the
operator takes them, and runs each case through upstream's own runtime (its Python
bindings, portable_lib, with the custom operators' kernels loaded) and through eager PyTorch.

Per program NAME (models/fixture_writer.py's layout): NAME.pte, NAME.forward[.caseK].input_*.npy,
NAME.forward[.caseK].expected_*.npy (eager: upstream's ATen kernels of the same operators), and
NAME.forward[.caseK].upstream_*.npy (upstream's runtime); manifest.json adds per case
"upstream" (its files) or "upstream_error" (what upstream's runtime said), and per program a
float64 "reference_error": the largest difference of eager from a plain float64 PyTorch
computation of the same attention (scaled_dot_product_attention over the dequantized cache)
or of the same gated delta recurrence (token by token, both outputs), so the fixtures check
upstream's kernels too.

    .venv-export/bin/python models/export_llm_ops.py [--out models/fixtures/llm]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture_writer as fw  # noqa: E402
from fixture_writer import MethodSpec  # noqa: E402

from executorch.extension.llm.custom_ops import custom_ops  # noqa: E402,F401  (llama:: ops)
from executorch.extension.llm.custom_ops import op_fallback  # noqa: E402,F401  (llama::fallback)

torch.manual_seed(20261207)


def pos_of(pos: torch.Tensor, max_len: int, seq_len) -> int:
    """start_pos from a [1] int64 input, bounded as export_llama bounds it."""
    p = pos[0].item()
    torch._check(p >= 0)
    torch._check(p < max_len)
    torch._check(p + seq_len <= max_len)
    return p


class Sdpa(nn.Module):
    """custom_sdpa over caches given as inputs: q [B, S, Hq, D], caches [B, L, Hkv, D]."""

    def __init__(self, causal=True, scale=None, masked=False):
        super().__init__()
        self.causal, self.scale, self.masked = causal, scale, masked

    def forward(self, q, kc, vc, pos, *mask):
        p = pos_of(pos, kc.size(1), q.size(1))
        return torch.ops.llama.custom_sdpa(q, kc, vc, p, mask[0] if self.masked else None, 0.0,
                                           self.causal, self.scale)


class SdpaWithKvCache(nn.Module):
    """sdpa_with_kv_cache with the caches as buffers (state that starts at zero)."""

    def __init__(self, b, L, hkv, d):
        super().__init__()
        self.register_buffer("kc", torch.zeros(b, L, hkv, d))
        self.register_buffer("vc", torch.zeros(b, L, hkv, d))

    def forward(self, q, k, v, pos):
        p = pos_of(pos, self.kc.size(1), q.size(1))
        return torch.ops.llama.sdpa_with_kv_cache(q, k, v, self.kc, self.vc, p, q.size(1), None,
                                                  0.0, True, None)


class UpdateCache(nn.Module):
    """update_cache / update_cache_with_indices into a buffer cache; returns the cache."""

    def __init__(self, shape, dtype, indices=False):
        super().__init__()
        self.register_buffer("cache", torch.zeros(shape, dtype=dtype))
        self.indices = indices

    def forward(self, value, where):
        if self.indices:
            torch.ops.llama.update_cache_with_indices(value, self.cache, 0, where)
        else:
            p = pos_of(where, self.cache.size(1), value.size(1))
            torch.ops.llama.update_cache(value, self.cache, p)
        return self.cache.clone()


class QuantizedSdpa(nn.Module):
    def __init__(self, seq_at_dim_2):
        super().__init__()
        self.seq2 = seq_at_dim_2

    def forward(self, q, k, v, qs, qz, ks, kz, vs, vz, pos):
        sdim = 2 if self.seq2 else 1
        p = pos_of(pos, k.size(sdim), q.size(sdim))
        return torch.ops.llama.custom_quantized_sdpa(q, k, v, p, None, 0.0, True, None, qz, qs,
                                                     kz, ks, vz, vs, self.seq2)


class Hadamard(nn.Module):
    def forward(self, x):
        return torch.ops.llama.fast_hadamard_transform(x)


class Fallback(nn.Module):
    def forward(self, x):
        return torch.ops.llama.fallback(x * 2.0)


class GatedDelta(nn.Module):
    """gated_delta_rule (or its older name channelwise_gated_delta_rule): returns the output
    and the final state."""

    def __init__(self, alias=False):
        super().__init__()
        self.op = (torch.ops.llama.channelwise_gated_delta_rule if alias
                   else torch.ops.llama.gated_delta_rule)

    def forward(self, q, k, v, decay, beta, state):
        return self.op(q, k, v, decay, beta, state)


def ref_sdpa(q, k, v, p, causal=True, scale=None, mask=None):
    """float64 attention with upstream's semantics, [B, S, H, D] layout."""
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    S, n = q.size(2), (k.size(2) if mask is not None else p + q.size(2))
    k, v = k[:, :, :n], v[:, :, :n]
    reps = q.size(1) // k.size(1)
    k, v = k.repeat_interleave(reps, 1), v.repeat_interleave(reps, 1)
    if causal:
        mask = torch.full((S, n), float("-inf"), dtype=torch.float64).triu(p + 1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else
                                         mask.double(), scale=scale)
    return out.transpose(1, 2)


def quant_per_token(x):
    """int8 values, float32 scales and int8 zero points per token (last dim)."""
    lo, hi = x.amin(-1, keepdim=True), x.amax(-1, keepdim=True)
    scale = ((hi - lo) / 255.0).clamp(min=1e-6)
    zp = (-128 - torch.round(lo / scale)).clamp(-128, 127)
    q = torch.clamp(torch.round(x / scale) + zp, -128, 127).to(torch.int8)
    return q, scale.float(), zp.to(torch.int8)


def dequant(q, s, z):
    return (q.double() - z.double()) * s.double()


def pos(p):
    return torch.tensor([p], dtype=torch.int64)


def gdr_inputs(b, hq, h, T, kd, vd, channelwise=True):
    """query [B, Hq, T, K], key [B, H, T, K], value [B, H, T, V], decay [B, H, T(, K)] in (0, 1),
    beta [B, H, T] in (0, 1), initial state [B, H, K, V]; query and key L2-normalised per token
    as gated delta networks feed them (which keeps the recurrence stable)."""
    q = F.normalize(torch.randn(b, hq, T, kd), dim=-1)
    k = F.normalize(torch.randn(b, h, T, kd), dim=-1)
    v = torch.randn(b, h, T, vd)
    decay = torch.rand(b, h, T, kd) * 0.5 + 0.5 if channelwise else torch.rand(b, h, T) * 0.5 + 0.5
    beta = torch.sigmoid(torch.randn(b, h, T))
    return q, k, v, decay, beta, torch.randn(b, h, kd, vd)


def ref_gdr(x):
    """float64 gated delta rule, token by token: (output [B, Hq, T, V], final state)."""
    q, k, v, decay, beta, state = (t.double() for t in x)
    if decay.dim() == 3:
        decay = decay.unsqueeze(-1).expand_as(k)
    reps = q.size(1) // k.size(1)
    out = q.new_zeros(*q.shape[:3], v.size(3))
    for t in range(q.size(2)):
        state = state * decay[:, :, t, :, None]
        delta = (v[:, :, t] - torch.einsum("bhk,bhkv->bhv", k[:, :, t], state)) * beta[:, :, t, None]
        state = state + k[:, :, t, :, None] * delta[:, :, None, :]
        out[:, :, t] = torch.einsum("bhk,bhkv->bhv", q[:, :, t],
                                    state.repeat_interleave(reps, dim=1))
    return out, state


def sdpa_inputs(b, S, hq, hkv, d, L, p, dtype=torch.float32, masked=False):
    x = (torch.randn(b, S, hq, d).to(dtype), torch.randn(b, L, hkv, d).to(dtype),
         torch.randn(b, L, hkv, d).to(dtype), pos(p))
    if masked:  # [S, L]: with a mask every cache position is a key
        m = torch.randn(S, L) * 2
        m[torch.rand(S, L) < 0.3] = float("-inf")
        m[:, 0] = 0.0  # every row sees a key
        x = x + (m.to(dtype),)
    return x


def q_inputs(b, S, h, hkv, d, L, p, seq2):
    q, k, v = torch.randn(b, S, h, d), torch.randn(b, L, hkv, d), torch.randn(b, L, hkv, d)
    if seq2:
        q, k, v = (t.transpose(1, 2).contiguous() for t in (q, k, v))
    (qq, qs, qz), (kq, ks, kz), (vq, vs, vz) = (quant_per_token(t) for t in (q, k, v))
    return (qq, kq, vq, qs, qz, ks, kz, vs, vz, pos(p))


def programs():
    """(name, module, inputs, dynamic_shapes, cases, reference(inputs) -> outputs, proves)."""
    s = Dim("seq", min=1, max=24)
    progs = []
    # Grouped-query causal attention: 8 query heads over 2 cache heads.
    progs.append(("custom_sdpa_gqa", Sdpa(), sdpa_inputs(1, 3, 8, 2, 16, 24, 4),
                  ({1: s}, None, None, None),
                  [sdpa_inputs(1, S, 8, 2, 16, 24, p) for S, p in
                   [(1, 0), (1, 11), (1, 23), (6, 0), (6, 9), (24, 0), (5, 19)]],
                  lambda x: ref_sdpa(*x), "custom_sdpa, causal, grouped-query heads (8 over 2), "
                  "start positions 0, middle and last, sequence lengths 1 to the cache's 24"))
    # More keys than one attention key block (256) and more rows than one query block (32).
    s2 = Dim("seq", min=1, max=64)
    progs.append(("custom_sdpa_long", Sdpa(), sdpa_inputs(1, 40, 6, 2, 32, 300, 250),
                  ({1: s2}, None, None, None),
                  [sdpa_inputs(1, S, 6, 2, 32, 300, p) for S, p in
                   [(1, 0), (1, 299), (33, 0), (64, 236), (7, 256)]],
                  lambda x: ref_sdpa(*x), "custom_sdpa over 300 cache positions: several key "
                  "blocks and query blocks, 3 query heads per cache head"))
    # Non-causal with an additive mask and an explicit scale, batch 2, one head per cache head.
    s3 = Dim("seq", min=1, max=16)
    progs.append(("custom_sdpa_masked", Sdpa(causal=False, scale=0.3, masked=True),
                  sdpa_inputs(2, 4, 4, 4, 8, 16, 3, masked=True),
                  ({1: s3}, None, None, None, ({0: s3},)),
                  [sdpa_inputs(2, S, 4, 4, 8, 16, p, masked=True) for S, p in
                   [(1, 0), (1, 15), (5, 6), (16, 0)]],
                  lambda x: ref_sdpa(*x[:4], causal=False, scale=0.3, mask=x[4]),
                  "custom_sdpa with attn_mask (an additive float mask [S, max_seq_len] with -inf "
                  "entries: every cache position a key), is_causal False, scale 0.3, batch 2"))
    for dt, nm in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        progs.append((f"custom_sdpa_{nm}", Sdpa(), sdpa_inputs(1, 2, 4, 2, 16, 12, 3, dt),
                      ({1: Dim("seq", min=1, max=12)}, None, None, None),
                      [sdpa_inputs(1, S, 4, 2, 16, 12, p, dt) for S, p in [(1, 0), (1, 11), (12, 0)]],
                      lambda x: ref_sdpa(*x), f"custom_sdpa in {dt}"))
    s4 = Dim("seq", min=1, max=20)
    progs.append(("sdpa_with_kv_cache", SdpaWithKvCache(1, 20, 2, 8),
                  (torch.randn(1, 3, 4, 8), torch.randn(1, 3, 2, 8), torch.randn(1, 3, 2, 8),
                   pos(0)),
                  ({1: s4}, {1: s4}, {1: s4}, None),
                  [(torch.randn(1, S, 4, 8), torch.randn(1, S, 2, 8), torch.randn(1, S, 2, 8),
                    pos(p)) for S, p in [(1, 0), (1, 19), (4, 7), (20, 0)]],
                  None, "sdpa_with_kv_cache: the caches written, then attended (fresh, zero "
                  "caches per load)"))
    s5 = Dim("seq", min=1, max=10)
    progs.append(("update_cache", UpdateCache((1, 10, 2, 4), torch.float32),
                  (torch.randn(1, 2, 2, 4), pos(3)), ({1: s5}, None),
                  [(torch.randn(1, S, 2, 4), pos(p)) for S, p in [(1, 0), (1, 9), (10, 0), (4, 6)]],
                  None, "update_cache of a float32 cache at positions 0, middle and last"))
    progs.append(("update_cache_int8", UpdateCache((1, 10, 2, 4), torch.int8),
                  (torch.randint(-128, 127, (1, 2, 2, 4), dtype=torch.int8), pos(3)),
                  ({1: s5}, None),
                  [(torch.randint(-128, 127, (1, S, 2, 4), dtype=torch.int8), pos(p))
                   for S, p in [(1, 9), (5, 5)]],
                  None, "update_cache of an int8 cache (upstream's quantized KV cache)"))
    progs.append(("update_cache_with_indices", UpdateCache((2, 8, 2, 4), torch.float32, True),
                  (torch.randn(2, 3, 2, 4), torch.tensor([[5, 0, 7], [1, 2, 3]])),
                  ({1: s5.__class__("seq", min=1, max=8)} if False else None, None),
                  [], None, "update_cache_with_indices: per-batch scattered positions"))
    for seq2 in (False, True):
        progs.append((f"custom_quantized_sdpa{'_seq2' if seq2 else ''}", QuantizedSdpa(seq2),
                      q_inputs(1, 3, 4, 2, 8, 16, 2, seq2), None,
                      [q_inputs(1, 3, 4, 2, 8, 16, p, seq2) for p in (0, 13)],
                      (lambda sq: lambda x: ref_quant(x, sq))(seq2),
                      "custom_quantized_sdpa: int8 query, key and value with per-token scales "
                      f"and zero points, causal, grouped heads, is_seq_at_dim_2={seq2}"))
    progs.append(("fast_hadamard_transform", Hadamard(), (torch.randn(3, 64),), None, [], None,
                  "fast_hadamard_transform over 64 values"))
    progs.append(("fast_hadamard_transform_3d", Hadamard(), (torch.randn(2, 4, 128),), None, [],
                  None, "fast_hadamard_transform over 128 values, rank 3"))
    progs.append(("fast_hadamard_transform_f16", Hadamard(), (torch.randn(4, 32).half(),), None,
                  [], None, "fast_hadamard_transform in float16"))
    progs.append(("fallback", Fallback(), (torch.randn(2, 3),), None, [], None,
                  "llama::fallback (a copy)"))
    # The gated delta rule: T is dim 2 of query, key, value, decay and beta (not the state).
    # Lengths 1 (upstream's decode route), a few, and past upstream's 32-token prefill chunk.
    def gdr_dyn(mx):
        t = Dim("tokens", min=1, max=mx)
        return ({2: t}, {2: t}, {2: t}, {2: t}, {2: t}, None)
    progs.append(("gated_delta_rule", GatedDelta(), gdr_inputs(2, 4, 2, 5, 8, 6),
                  gdr_dyn(48), [gdr_inputs(2, 4, 2, T, 8, 6) for T in (1, 3, 33, 48)],
                  ref_gdr, "gated_delta_rule with a channelwise decay [B, H, T, K], 2 query "
                  "heads per state head, batch 2, 1 to 48 tokens (upstream's decode route and "
                  "its chunked prefill over more than one chunk)"))
    progs.append(("gated_delta_rule_scalar", GatedDelta(),
                  gdr_inputs(1, 6, 2, 4, 16, 8, channelwise=False), gdr_dyn(40),
                  [gdr_inputs(1, 6, 2, T, 16, 8, channelwise=False) for T in (1, 7, 40)],
                  ref_gdr, "gated_delta_rule with one decay per token [B, H, T], 3 query heads "
                  "per state head, 1 to 40 tokens"))
    progs.append(("channelwise_gated_delta_rule", GatedDelta(alias=True),
                  gdr_inputs(1, 3, 3, 6, 4, 5), gdr_dyn(16),
                  [gdr_inputs(1, 3, 3, T, 4, 5) for T in (1, 16)],
                  ref_gdr, "channelwise_gated_delta_rule (upstream's deprecated name of the same "
                  "operator), one query head per state head"))
    return progs


# Exporter options per program: llama::fallback is kept as it is (to_edge would decompose it
# into the copy it is), as a partitioner that leaves it to the CPU would.
EXPORT_KW = {"fallback": {"preserve_ops": [torch.ops.llama.fallback.default]}}


def ref_quant(x, seq2):
    qq, kq, vq, qs, qz, ks, kz, vs, vz, p = x
    q, k, v = dequant(qq, qs, qz), dequant(kq, ks, kz), dequant(vq, vs, vz)
    if seq2:
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    out = ref_sdpa(q, k, v, int(p[0]))
    return out.transpose(1, 2) if seq2 else out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).resolve().parent / "fixtures" / "llm")
    a = ap.parse_args()
    entries = []
    for name, module, inputs, dyn, cases, ref, proves in programs():
        methods = {"forward": MethodSpec(module, tuple(inputs), dyn, list(cases))}
        expected = fw.eager_reference(methods)
        # Eager mutates buffers: a fresh (zero) state per case, as a fresh program load has.
        for b in module.buffers():
            b.zero_()
        pte = fw.export_program(methods, **EXPORT_KW.get(name, {}))
        entry = fw.write_fixture(a.out, name, pte, methods, expected)
        m = entry["methods"]["forward"]
        all_inputs = [inputs] + list(cases)
        slots = [m] + m.get("cases", [])
        worst = 0.0
        fw.record_upstream(a.out, name, pte, entry)  # each case on a fresh load
        for k, x in enumerate(all_inputs):
            if ref is not None:
                want = ref(x)
                for i, w in enumerate(want if isinstance(want, tuple) else (want,)):
                    worst = max(worst, float((expected["forward"][k][i].double() - w).abs().max()))
        entry["reference_error"] = worst if ref is not None else None
        entry["proves"] = proves
        entries.append(entry)
        ups = [("error: " + s["upstream_error"]) if "upstream_error" in s else "ok" for s in slots]
        print(f"{name}: {len(pte)} bytes, {entry['operators']}, upstream {ups}, "
              f"eager vs float64 reference {entry['reference_error']}", flush=True)
    fw.write_manifest(a.out, "models/export_llm_ops.py", entries)


if __name__ == "__main__":
    main()
