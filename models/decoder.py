# SPDX-License-Identifier: BSD-3-Clause
"""A small Llama-style decoder of pteron's own writing, for the zoo and for
tests/test_decoder.py: token embedding, LAYERS blocks of (RMSNorm, causal
multi-head attention with rotary position embedding, RMSNorm, SwiGLU MLP),
a final RMSNorm and an output projection to VOCAB logits.

Its KV cache lives in registered buffers (k_cache_<l>, v_cache_<l>, shape
[1, HEADS, MAX_SEQ, HEAD_DIM], float32) written in place at the positions the
caller passes (slice assignment, which the exporter emits as aten::index_put_),
so the state persists across calls of `forward` as in upstream's LLM exports.
Attention reads the whole cache under a causal mask (a cache position p is seen
by the query at position q when p <= q), so slots not yet written never count.

forward(tokens, input_pos):
    tokens     int64 [1, T]   token ids in [0, VOCAB)
    input_pos  int64 [T]      the cache positions of those tokens, in [0, MAX_SEQ)
    returns    float32 [1, T, VOCAB] logits

The exported programs take one token per call (T = 1): a prompt is fed token
by token, then each greedy token is fed back. Exported with upstream's
InitializedMutableBufferPass over the cache buffers (CACHE_PATTERNS), so the
cache starts at a known value (zeros) and that state is in the program.

Random weights from a fixed seed (SEED); torch only, nothing from torchvision.
"""
from __future__ import annotations

import math
from typing import List, Sequence, Tuple

import torch
from torch import nn

VOCAB = 256
DIM = 64
LAYERS = 2
HEADS = 4
HEAD_DIM = DIM // HEADS
HIDDEN = 128
MAX_SEQ = 32
SEED = 20261201
ROPE_THETA = 10000.0
EPS = 1e-5
# Buffer names that the initial-state pass marks (substrings of the names).
CACHE_PATTERNS = ["k_cache", "v_cache"]


class RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, layer: int):
        super().__init__()
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wk = nn.Linear(DIM, DIM, bias=False)
        self.wv = nn.Linear(DIM, DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.k_name = f"k_cache_{layer}"
        self.v_name = f"v_cache_{layer}"
        self.register_buffer(self.k_name, torch.zeros(1, HEADS, MAX_SEQ, HEAD_DIM))
        self.register_buffer(self.v_name, torch.zeros(1, HEADS, MAX_SEQ, HEAD_DIM))

    def forward(self, x, cos, sin, input_pos, mask):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)  # [1, H, T, D]
        k = self.wk(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        v = self.wv(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k_cache = getattr(self, self.k_name)
        v_cache = getattr(self, self.v_name)
        k_cache[:, :, input_pos] = k  # in place: the cache persists across calls
        v_cache[:, :, input_pos] = v
        scores = torch.matmul(q, k_cache.transpose(2, 3)) / math.sqrt(HEAD_DIM)  # [1, H, T, S]
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
        att = torch.softmax(scores, dim=-1)
        out = torch.matmul(att, v_cache)  # [1, H, T, D]
        return self.wo(out.transpose(1, 2).reshape(b, t, DIM))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(DIM, HIDDEN, bias=False)
        self.w3 = nn.Linear(DIM, HIDDEN, bias=False)
        self.w2 = nn.Linear(HIDDEN, DIM, bias=False)

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))  # SwiGLU


class Block(nn.Module):
    def __init__(self, layer: int):
        super().__init__()
        self.attn_norm = RMSNorm(DIM)
        self.attn = Attention(layer)
        self.mlp_norm = RMSNorm(DIM)
        self.mlp = MLP()

    def forward(self, x, cos, sin, input_pos, mask):
        h = x + self.attn(self.attn_norm(x), cos, sin, input_pos, mask)
        return h + self.mlp(self.mlp_norm(h))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([Block(i) for i in range(LAYERS)])
        self.norm = RMSNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)
        inv = 1.0 / (ROPE_THETA ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
        ang = torch.outer(torch.arange(MAX_SEQ, dtype=torch.float32), inv)  # [S, D/2]
        ang = torch.cat((ang, ang), dim=-1)  # [S, D], the rotate_half layout
        self.register_buffer("rope_cos", ang.cos())
        self.register_buffer("rope_sin", ang.sin())
        self.register_buffer("positions", torch.arange(MAX_SEQ, dtype=torch.int64))

    def forward(self, tokens, input_pos):
        x = self.embed(tokens)  # [1, T, DIM]
        cos = self.rope_cos[input_pos].unsqueeze(0).unsqueeze(0)  # [1, 1, T, D]
        sin = self.rope_sin[input_pos].unsqueeze(0).unsqueeze(0)
        mask = self.positions.unsqueeze(0) <= input_pos.unsqueeze(1)  # [T, S] causal
        for layer in self.layers:
            x = layer(x, cos, sin, input_pos, mask)
        return self.output(self.norm(x))


def build() -> Tuple[nn.Module, Tuple[torch.Tensor, ...]]:
    """(the decoder in eval mode with random weights from SEED and an empty
    cache, example inputs: one token at position 0)."""
    torch.manual_seed(SEED)
    m = Decoder()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (0.5 / math.sqrt(p.shape[-1])))
    for p in m.parameters():
        p.requires_grad_(False)  # the cache is written in place: no autograd
    m.eval()
    return m, (torch.tensor([[1]], dtype=torch.int64), torch.tensor([0], dtype=torch.int64))


def reset_cache(m: nn.Module) -> None:
    for name, b in m.named_buffers():
        if any(p in name for p in CACHE_PATTERNS):
            b.zero_()


def greedy(step, prompt: Sequence[int], n_new: int) -> Tuple[List[int], List[torch.Tensor]]:
    """Feeds `prompt` one token per call of step(tokens [1, 1], input_pos [1]) ->
    logits [1, 1, VOCAB], then n_new greedy tokens. Returns (every token fed or
    produced: prompt + n_new, the logits of every call)."""
    tokens = list(prompt)
    logits = []
    for pos in range(len(prompt) + n_new - 1):
        out = step(torch.tensor([[tokens[pos]]], dtype=torch.int64),
                   torch.tensor([pos], dtype=torch.int64))
        logits.append(out)
        if pos + 1 >= len(tokens):
            tokens.append(int(out.reshape(-1).argmax()))
    return tokens, logits


def backend_config() -> dict:
    """ExecutorchBackendConfig keyword arguments that export the cache with its
    initial state (for fixture_writer.export_program(backend_config=...)).
    The state exported is the buffers' value at export time: export a module
    fresh from build() (or after reset_cache), not one that eager has run."""
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    return {"passes": [InitializedMutableBufferPass(CACHE_PATTERNS)]}


def export(xnnpack: bool = False) -> bytes:
    """The .pte bytes of the decoder (one token per call), its cache buffers
    exported with their initial state; lowered with XnnpackPartitioner when
    `xnnpack` (it takes the linear layers)."""
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    m, example = build()
    ep = torch.export.export(m, example)
    partitioner = None
    if xnnpack:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        partitioner = [XnnpackPartitioner()]
    edge = to_edge_transform_and_lower(ep, partitioner=partitioner)
    return bytes(edge.to_executorch(ExecutorchBackendConfig(**backend_config())).buffer)
