#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Programs pteron had not seen (issue 43's round of unseen programs, 31 of them): exported with
upstream ExecuTorch's own exporters (torch.export + to_edge_transform_and_lower, portable and
XNNPACK, PT2E int8, export_llama with other flags) with seeded random weights, run in eager
PyTorch, upstream's runtime (pybindings) and pteron-run. The programs are not committed: this
script makes them again.

    .venv-export/bin/python models/export_unseen.py export [NAME ...]
    .venv-export/bin/python models/export_unseen.py compare

Folders: OUT = $PTERON_UNSEEN_DIR or ~/.cache/pteron/unseen; pteron-run = $PTERON_RUN or the
Linux build's (build-conan/linux-cu134/build/Release/pteron-run).

`export` writes OUT/NAME.pte, OUT/NAME.c<k>.in<i>.npy (inputs of case k), .eager<i>.npy,
.up<i>.npy (upstream) and OUT/NAME.json (how exported, upstream's status per case).
`compare` runs pteron-run on every case and writes REPORT.md.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("PTERON_UNSEEN_DIR", Path.home() / ".cache" / "pteron" / "unseen"))
HERE = OUT
PTERON = os.environ.get("PTERON_RUN",
                        str(REPO / "build-conan" / "linux-cu134" / "build" / "Release" / "pteron-run"))

# --------------------------------------------------------------------------------------------
# models (torch imported lazily so `compare` is quick)
# --------------------------------------------------------------------------------------------


def models():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class GRUModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(16, 32, num_layers=2, batch_first=True)
            self.head = nn.Linear(32, 8)

        def forward(self, x, h0):
            y, h = self.gru(x, h0)
            return self.head(y), h

    class LSTMModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(12, 24, num_layers=1, batch_first=True, bidirectional=True)
            self.head = nn.Linear(48, 6)

        def forward(self, x):
            y, (h, c) = self.lstm(x)
            return self.head(y).log_softmax(-1), h, c

    class AudioConv1d(nn.Module):
        """wav2vec-like feature encoder: conv1d stacks with stride, GroupNorm, GELU, then
        projection; dynamic time length."""
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv1d(1, 32, 10, stride=5)
            self.gn = nn.GroupNorm(32, 32)
            self.c2 = nn.Conv1d(32, 32, 3, stride=2)
            self.c3 = nn.Conv1d(32, 48, 2, stride=2)
            self.ln = nn.LayerNorm(48)
            self.proj = nn.Linear(48, 40)

        def forward(self, wav):
            x = F.gelu(self.gn(self.c1(wav)))
            x = F.gelu(self.c2(x))
            x = F.gelu(self.c3(x))
            x = self.ln(x.transpose(1, 2))
            return self.proj(x)

    class WhisperBlock(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.ln1 = nn.LayerNorm(d)
            self.q = nn.Linear(d, d)
            self.k = nn.Linear(d, d, bias=False)
            self.v = nn.Linear(d, d)
            self.o = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x):
            B, T, D = x.shape
            y = self.ln1(x)
            q = self.q(y).view(B, T, self.h, -1).transpose(1, 2)
            k = self.k(y).view(B, T, self.h, -1).transpose(1, 2)
            v = self.v(y).view(B, T, self.h, -1).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v)
            x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class WhisperEncoder(nn.Module):
        def __init__(self, n_mels=20, d=64, T=40):
            super().__init__()
            self.conv1 = nn.Conv1d(n_mels, d, 3, padding=1)
            self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
            pos = torch.arange(T // 2)[:, None] * torch.exp(
                -math.log(10000) * torch.arange(d // 2)[None] / (d // 2 - 1))
            self.register_buffer("pos", torch.cat([pos.sin(), pos.cos()], 1))
            self.blocks = nn.ModuleList([WhisperBlock(d, 4) for _ in range(2)])
            self.ln = nn.LayerNorm(d)

        def forward(self, mel):
            x = F.gelu(self.conv1(mel))
            x = F.gelu(self.conv2(x)).permute(0, 2, 1)
            x = x + self.pos
            for b in self.blocks:
                x = b(x)
            return self.ln(x)

    def rel_bucket(rp, bidirectional, num_buckets=8, max_distance=16):
        rb = torch.zeros_like(rp)
        if bidirectional:
            num_buckets //= 2
            rb = rb + (rp > 0).to(torch.long) * num_buckets
            rp = torch.abs(rp)
        else:
            rp = -torch.min(rp, torch.zeros_like(rp))
        max_exact = num_buckets // 2
        is_small = rp < max_exact
        large = max_exact + (torch.log(rp.float() / max_exact) / math.log(max_distance / max_exact)
                             * (num_buckets - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return rb + torch.where(is_small, rp, large)

    class T5Norm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(1 + 0.1 * torch.randn(d))

        def forward(self, x):
            return self.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    class T5Attn(nn.Module):
        def __init__(self, d, h, bias, bidir):
            super().__init__()
            self.h, self.bidir = h, bidir
            self.q = nn.Linear(d, d, bias=False)
            self.k = nn.Linear(d, d, bias=False)
            self.v = nn.Linear(d, d, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.rel = nn.Embedding(8, h) if bias else None

        def forward(self, x, kv=None, mask=None):
            B, Tq, D = x.shape
            kv = x if kv is None else kv
            Tk = kv.shape[1]
            q = self.q(x).view(B, Tq, self.h, -1).transpose(1, 2)
            k = self.k(kv).view(B, Tk, self.h, -1).transpose(1, 2)
            v = self.v(kv).view(B, Tk, self.h, -1).transpose(1, 2)
            s = q @ k.transpose(-1, -2)
            if self.rel is not None:
                ctx = torch.arange(Tq)[:, None]
                mem = torch.arange(Tk)[None, :]
                bucket = rel_bucket(mem - ctx, self.bidir)
                s = s + self.rel(bucket).permute(2, 0, 1).unsqueeze(0)
            if mask is not None:
                s = s + mask
            a = torch.softmax(s.float(), -1).type_as(s) @ v
            return self.o(a.transpose(1, 2).reshape(B, Tq, D))

    class T5EncDec(nn.Module):
        def __init__(self, vocab=50, d=32, h=4):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.enc_n1, self.enc_att = T5Norm(d), T5Attn(d, h, True, True)
            self.enc_n2, self.enc_ff1, self.enc_ff2 = T5Norm(d), nn.Linear(d, 64, bias=False), nn.Linear(64, d, bias=False)
            self.enc_nf = T5Norm(d)
            self.dec_n1, self.dec_att = T5Norm(d), T5Attn(d, h, True, False)
            self.dec_n2, self.dec_x = T5Norm(d), T5Attn(d, h, False, True)
            self.dec_n3, self.dec_ff1, self.dec_ff2 = T5Norm(d), nn.Linear(d, 64, bias=False), nn.Linear(64, d, bias=False)
            self.dec_nf = T5Norm(d)
            self.lm = nn.Linear(d, vocab, bias=False)

        def forward(self, src, tgt):
            x = self.emb(src)
            x = x + self.enc_att(self.enc_n1(x))
            x = x + self.enc_ff2(F.relu(self.enc_ff1(self.enc_n2(x))))
            mem = self.enc_nf(x)
            y = self.emb(tgt)
            T = tgt.shape[1]
            causal = torch.triu(torch.full((T, T), float("-inf")), 1)
            y = y + self.dec_att(self.dec_n1(y), mask=causal)
            y = y + self.dec_x(self.dec_n2(y), kv=mem)
            y = y + self.dec_ff2(F.relu(self.dec_ff1(self.dec_n3(y))))
            return self.lm(self.dec_nf(y) * (32 ** -0.5))

    class UNetBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU())
            self.e2 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.GroupNorm(8, 32), nn.SiLU())
            self.e3 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU())
            self.up3 = nn.ConvTranspose2d(32, 32, 2, stride=2)
            self.d2 = nn.Sequential(nn.Conv2d(64, 16, 3, padding=1), nn.SiLU())
            self.d1 = nn.Sequential(nn.Conv2d(32, 8, 3, padding=1), nn.Hardswish())
            self.out = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            s1 = self.e1(x)
            s2 = self.e2(s1)
            b = self.e3(s2)
            y = torch.cat([self.up3(b), s2], 1)
            y = self.d2(y)
            y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
            y = torch.cat([y, s1], 1)
            y = self.d1(y)
            z = F.interpolate(y, scale_factor=0.5, mode="nearest")
            return self.out(y), F.interpolate(z, size=(x.shape[2], x.shape[3]), mode="nearest")

    class ViT(nn.Module):
        def __init__(self, d=48):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, stride=4)
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, 17, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, 4, 96, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, 10)

        def forward(self, img):
            x = self.patch(img).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
            x = self.enc(x)
            return self.head(self.norm(x[:, 0]))

    class HalfMix(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 16, 3, padding=1)
            self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
            self.ln = nn.LayerNorm(16)
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 16)

        def forward(self, x):
            y = F.relu(self.conv(x))
            y = self.dw(y) + y
            y = y.flatten(2).transpose(1, 2)          # B, HW, 16
            y = self.ln(y)
            att = torch.softmax(y @ y.transpose(1, 2) * 0.25, -1)
            y = att @ y
            return torch.sigmoid(self.fc2(F.gelu(self.fc1(y))))

    class BF16Mix(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.ln = nn.LayerNorm(8)
            self.fc = nn.Linear(8, 12)
            self.fc2 = nn.Linear(12, 5)

        def forward(self, x):
            y = F.silu(self.conv(x)).mean((2, 3))
            y = self.ln(y)
            y = torch.tanh(self.fc(y))
            return torch.log_softmax(self.fc2(y), -1), y.cumsum(-1), (y * y).sum(-1)

    class CondModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 8)
            self.b = nn.Linear(8, 8)

        def forward(self, x, flag):
            def t(x, flag):
                inner = torch.cond(x.mean() > 0, lambda x: torch.relu(self.a(x)) * 2,
                                   lambda x: torch.tanh(self.b(x)), (x,))
                return inner + 1, x.sum(0)
            def f(x, flag):
                return self.b(x).exp() * 0.1, x.amax(0)
            return torch.cond(flag, t, f, (x, flag))

    class EncDecMethods(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 16))
            self.dec = nn.Linear(16, 10)

    class Enc(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m.enc(x)

    class Dec(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, z, scale):
            return torch.softmax(self.m.dec(z) * scale, -1)

    class QConv1d(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv1d(8, 16, 5, padding=2)
            self.c2 = nn.Conv1d(16, 16, 3, padding=1, groups=4)
            self.fc = nn.Linear(16, 12)

        def forward(self, x):
            y = F.relu(self.c1(x))
            y = F.hardtanh(self.c2(y) + y, -1.0, 2.0)
            y = F.adaptive_avg_pool1d(y, 1).squeeze(-1)
            return self.fc(y)

    class TokMLP(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 64)
            self.fc2 = nn.Linear(64, d)
            self.out = nn.Linear(d, 7)

        def forward(self, x):  # B, S, d
            y = x + self.fc2(F.relu(self.fc1(self.ln(x))))
            return self.out(y)

    class Dyn2Attn(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h = h
            self.ln = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.o = nn.Linear(d, d)
            self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))

        def forward(self, x):
            B, S, D = x.shape
            q, k, v = self.qkv(self.ln(x)).chunk(3, -1)
            q = q.reshape(B, S, self.h, D // self.h).permute(0, 2, 1, 3)
            k = k.reshape(B, S, self.h, D // self.h).permute(0, 2, 3, 1)
            v = v.reshape(B, S, self.h, D // self.h).permute(0, 2, 1, 3)
            a = torch.softmax((q @ k) * (D // self.h) ** -0.5, -1) @ v
            x = x + self.o(a.permute(0, 2, 1, 3).reshape(B, S, D))
            x = x + self.ff(x)
            return x.mean(1), x

    class MiscOps(nn.Module):
        """Less common operators: pixel_shuffle, reflect/replicate pad, flip, roll, topk,
        gather, scatter_add, var, logsumexp, atan2, erf, remainder, masked_fill, tril, repeat,
        instance norm, grid_sample, cumprod, index_put."""
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 8, 3, padding=1)
            self.inorm = nn.InstanceNorm2d(2, affine=True)

        def forward(self, x, idx):
            y = F.pixel_shuffle(self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect")), 2)  # 1,2,2H+4..
            y = self.inorm(F.pad(y, (0, 1, 2, 0), mode="replicate"))
            y = torch.flip(y, [3]) + torch.roll(y, 3, 2)
            v, i = torch.topk(y.flatten(1), 5, -1)
            g = torch.gather(y.flatten(1), 1, idx)
            sc = torch.zeros(1, 16).scatter_add(1, idx % 16, g)
            var = y.var(-1, unbiased=True)
            lse = torch.logsumexp(y, -1)
            at = torch.atan2(y, y.roll(1, -1) + 0.1)
            er = torch.erf(y) + torch.remainder(y * 3, 1.7)
            m = y.masked_fill(y > 0.5, -1.0).tril(-1)
            rep = y[:, :, :2, :3].repeat(1, 2, 2, 1)
            theta = torch.tensor([[[0.9, 0.1, 0.05], [-0.1, 0.8, -0.02]]])
            grid = F.affine_grid(theta, [1, 2, 6, 5], align_corners=False)
            gs = F.grid_sample(y, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
            cp = torch.cumsum(torch.sigmoid(y[0, 0]), 1).exp()
            ip = y[0, 0].clone()
            ip[0] = 3.0
            return v, i, g, sc, var, lse, at, er, m, rep, gs, cp, ip

    return dict(MiscOps=MiscOps, GRUModel=GRUModel, LSTMModel=LSTMModel, AudioConv1d=AudioConv1d,
                WhisperEncoder=WhisperEncoder, T5EncDec=T5EncDec, UNetBlock=UNetBlock, ViT=ViT,
                HalfMix=HalfMix, BF16Mix=BF16Mix, CondModel=CondModel,
                EncDecMethods=EncDecMethods, Enc=Enc, Dec=Dec, QConv1d=QConv1d, TokMLP=TokMLP,
                Dyn2Attn=Dyn2Attn)


def rnd(seed, *shape, dtype=None):
    import torch
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g) if dtype is None else torch.randn(*shape, generator=g).to(dtype)


def specs():
    """name -> dict(build=fn()->module, how, example, cases, dynamic_shapes, ...)."""
    import torch
    from torch.export import Dim
    M = models()
    S = {}

    def add(name, cls, how, example, cases, dyn=None, seed=0, dtype=None, note=""):
        S[name] = dict(cls=cls, how=how, example=example, cases=cases, dyn=dyn, seed=seed,
                       dtype=dtype, note=note)

    add("gru2_portable", "GRUModel", "portable", (rnd(1, 2, 10, 16), rnd(2, 2, 2, 32) * 0.5),
        [(rnd(3, 2, 10, 16), rnd(4, 2, 2, 32) * 0.5)])
    add("gru2_xnnpack", "GRUModel", "xnnpack", (rnd(1, 2, 10, 16), rnd(2, 2, 2, 32) * 0.5),
        [(rnd(3, 2, 10, 16), rnd(4, 2, 2, 32) * 0.5)])
    add("bilstm_xnnpack", "LSTMModel", "xnnpack", (rnd(5, 1, 9, 12),), [(rnd(6, 1, 9, 12),)])
    T = Dim.AUTO(min=200, max=4000)
    add("audio_conv1d_dynT_xnnpack", "AudioConv1d", "xnnpack", (rnd(7, 1, 1, 800),),
        [(rnd(8, 1, 1, 800),), (rnd(9, 1, 1, 401),), (rnd(10, 1, 1, 3999),)],
        dyn=({2: T},))
    add("audio_conv1d_dynT_portable", "AudioConv1d", "portable", (rnd(7, 1, 1, 800),),
        [(rnd(9, 1, 1, 401),), (rnd(10, 1, 1, 2017),)], dyn=({2: T},))
    add("whisper_enc_xnnpack", "WhisperEncoder", "xnnpack", (rnd(11, 1, 20, 40),), [(rnd(12, 1, 20, 40),)])
    src = torch.randint(0, 50, (1, 12), generator=torch.Generator().manual_seed(13))
    tgt = torch.randint(0, 50, (1, 7), generator=torch.Generator().manual_seed(14))
    add("t5_encdec_relbias_portable", "T5EncDec", "portable", (src, tgt), [(src, tgt)])
    add("t5_encdec_relbias_xnnpack", "T5EncDec", "xnnpack", (src, tgt), [(src, tgt)])
    add("unet_up_skip_xnnpack", "UNetBlock", "xnnpack", (rnd(15, 1, 3, 32, 32),), [(rnd(16, 1, 3, 32, 32),)])
    add("unet_up_skip_portable", "UNetBlock", "portable", (rnd(15, 1, 3, 32, 32),), [(rnd(16, 1, 3, 32, 32),)])
    B = Dim("B", min=1, max=8)
    add("vit_dynbatch_xnnpack", "ViT", "xnnpack", (rnd(17, 2, 3, 16, 16),),
        [(rnd(18, 3, 3, 16, 16),), (rnd(19, 1, 3, 16, 16),)], dyn=({0: B},))
    add("fp16_mix_xnnpack", "HalfMix", "xnnpack", (rnd(20, 1, 4, 6, 6, dtype=torch.float16),),
        [(rnd(21, 1, 4, 6, 6, dtype=torch.float16),)], dtype=torch.float16)
    add("bf16_mix_portable", "BF16Mix", "portable", (rnd(22, 2, 3, 8, 8, dtype=torch.bfloat16),),
        [(rnd(23, 2, 3, 8, 8, dtype=torch.bfloat16),)], dtype=torch.bfloat16)
    add("cond_nested_boolinput_portable", "CondModel", "portable",
        (rnd(24, 3, 8), torch.tensor(True)),
        [(rnd(25, 3, 8) + 1, torch.tensor(True)), (rnd(25, 3, 8) - 1, torch.tensor(True)),
         (rnd(26, 3, 8), torch.tensor(False))])
    add("multimethod_encdec_xnnpack", "EncDecMethods", "multimethod_xnnpack", None, None)
    BT = Dim("BT", min=1, max=64)
    add("q8_static_conv1d_xnnpack", "QConv1d", "pt2e_static_xnnpack", (rnd(27, 2, 8, 20),),
        [(rnd(28, 2, 8, 20),)])
    add("q8_static_conv1d_portable", "QConv1d", "pt2e_static_portable", (rnd(27, 2, 8, 20),),
        [(rnd(28, 2, 8, 20),)])
    Bq, Sq = Dim("Bq", min=1, max=4), Dim("Sq", min=1, max=32)
    add("q8_dynamic_linear_dyn2_xnnpack", "TokMLP", "pt2e_dynamic_xnnpack", (rnd(29, 2, 5, 32),),
        [(rnd(30, 2, 5, 32),), (rnd(31, 1, 17, 32),), (rnd(32, 4, 3, 32),)], dyn=({0: Bq, 1: Sq},))
    Bd, Sd = Dim("Bd", min=1, max=4), Dim("Sd", min=2, max=32)
    add("attn_dyn2_xnnpack", "Dyn2Attn", "xnnpack", (rnd(33, 2, 9, 32),),
        [(rnd(34, 2, 9, 32),), (rnd(35, 1, 17, 32),), (rnd(36, 4, 3, 32),)], dyn=({0: Bd, 1: Sd},))
    idx = torch.tensor([[0, 5, 17, 40, 3, 3, 70]])
    add("misc_ops_portable", "MiscOps", "portable", (rnd(41, 1, 2, 5, 6), idx),
        [(rnd(42, 1, 2, 5, 6), idx)])
    add("whisper_enc_portable", "WhisperEncoder", "portable", (rnd(11, 1, 20, 40),), [(rnd(12, 1, 20, 40),)])
    h, w = Dim("h", min=2, max=16), Dim("w", min=2, max=16)
    add("unet_dynHW_xnnpack", "UNetBlock", "xnnpack", (rnd(37, 1, 3, 32, 24),),
        [(rnd(38, 1, 3, 32, 24),), (rnd(39, 1, 3, 16, 40),), (rnd(40, 1, 3, 8, 8),)],
        dyn=({2: 4 * h, 3: 4 * w},))
    return S, M


# --------------------------------------------------------------------------------------------
# LLM programs (upstream's export_llama)
# --------------------------------------------------------------------------------------------

LLM_PARAMS = {"dim": 64, "multiple_of": 32, "n_heads": 8, "n_kv_heads": 2, "n_layers": 2,
              "norm_eps": 1e-5, "vocab_size": 300, "rope_theta": 500000.0}
LLM_PARAMS_MHA = dict(LLM_PARAMS, n_kv_heads=8, vocab_size=128, n_layers=1)
LLMS = {
    # name: (params, max_seq, max_ctx, flags)
    "llm_kv_nosdpa_fp32": (LLM_PARAMS, 24, 24, ["-kv"]),
    "llm_kv_nosdpa_fulllogits_xnnpack": (LLM_PARAMS_MHA, 16, 16, ["-kv", "-X", "--generate_full_logits"]),
    "llm_gqa4_8da4w_qkv_xnnpack": (LLM_PARAMS, 24, 24, ["-kv", "--use_sdpa_with_kv_cache", "-X", "-qmode", "8da4w",
                                                         "-G", "32", "--quantize_kv_cache"]),
    "llm_emb4_32_portable": (LLM_PARAMS, 24, 24, ["-kv", "--use_sdpa_with_kv_cache", "-E", "4,32"]),
    "llm_emb8_0_8da4w_xnnpack": (LLM_PARAMS, 24, 24, ["-kv", "--use_sdpa_with_kv_cache", "-E", "8,0", "-X",
                                                       "-qmode", "8da4w", "-G", "32"]),
    "llm_ctx48_seq16_xnnpack": (LLM_PARAMS, 16, 48, ["-kv", "--use_sdpa_with_kv_cache", "-X"]),
    "llm_bf16_portable": (LLM_PARAMS, 24, 24, ["-kv", "--use_sdpa_with_kv_cache", "-d", "bf16"]),
    "llm_nokv_int8wo_portable": (LLM_PARAMS, 16, 16, ["-qmode", "int8"]),
    "llm_pt2e_dyn_xnnpack": (LLM_PARAMS, 24, 24, ["-kv", "--use_sdpa_with_kv_cache", "-X",
                                                   "--pt2e_quantize", "xnnpack_dynamic"]),
}


def llm_checkpoint(params, seq, ctx, folder: Path):
    import torch
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs
    p = folder / "params.json"
    p.write_text(json.dumps(params))
    torch.manual_seed(1234)
    m = construct_transformer(ModelArgs(**params, max_seq_len=seq, max_context_len=ctx))
    sd = {k: v for k, v in m.state_dict().items()
          if not any(s in k for s in ("cache", "mask", "freqs"))}
    with torch.no_grad():
        for k, v in sd.items():
            if v.dim() == 2:
                v.normal_(0.0, 1.0 if "emb" in k else 0.05)
            elif v.dim() == 1:
                v.copy_(1 + 0.1 * torch.randn_like(v))
    ck = folder / "checkpoint.pth"
    torch.save(sd, ck)
    return p, ck, sd


def llm_eager(params, seq, ctx, sd, flags, tokens, pos):
    import torch
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs
    kv = "-kv" in flags
    m = construct_transformer(ModelArgs(**params, max_seq_len=seq, max_context_len=ctx,
                                        use_kv_cache=kv, enable_dynamic_shape=True,
                                        generate_full_logits="--generate_full_logits" in flags))
    m.load_state_dict(sd, strict=False)
    m.eval()
    with torch.no_grad():
        if kv:
            out = m(torch.from_numpy(tokens), {"input_pos": torch.from_numpy(pos)})
        else:
            out = m(torch.from_numpy(tokens))
    if isinstance(out, tuple):
        out = out[0]
    return out.float().numpy()


def export_llm(name):
    import torch
    params, seq, ctx, flags = LLMS[name]
    info = {"name": name, "how": "export_llama " + " ".join(flags) +
            f" --max_seq_length {seq} --max_context_length {ctx}; params {json.dumps(params)}",
            "cases": [], "kind": "llm"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        p, ck, sd = llm_checkpoint(params, seq, ctx, tmp)
        pte = OUT / f"{name}.pte"
        cmd = [sys.executable, "-m", "executorch.examples.models.llama.export_llama", "--model", "llama3",
               "--params", str(p), "--checkpoint", str(ck), "--max_seq_length", str(seq),
               "--max_context_length", str(ctx), "--metadata", json.dumps({"get_bos_id": 1, "get_eos_ids": [2]}),
               "--output_name", str(pte)] + flags
        if "-d" not in flags:
            cmd += ["-d", "fp32"]
        t0 = time.time()
        r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=1800)
        info["export_s"] = round(time.time() - t0, 1)
        if r.returncode != 0 or not pte.exists():
            info["export_error"] = (r.stdout[-1500:] + r.stderr[-2500:])
            return info
        kv = "-kv" in flags
        vocab = params["vocab_size"]
        cases = [(5, 0), (1, 0), (seq - 1, 0), (1, 7), (1, ctx - 1), (3, 4)] if kv else [(5, 0), (seq - 1, 0), (1, 0)]
        if ctx > seq:
            cases.append((seq - 1, ctx - seq + 1))   # the longest prefill at the end of the context
        from executorch.extension.llm.custom_ops import custom_ops  # noqa
        from executorch.kernels import quantized  # noqa
        from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer
        buf = pte.read_bytes()
        for k, (S, pos) in enumerate(cases):
            tokens = np.random.default_rng(100 + k).integers(0, vocab, (1, S)).astype(np.int64)
            posa = np.array([pos], np.int64)
            ins = [tokens, posa] if kv else [tokens]
            c = {"desc": f"S={S} pos={pos}" if kv else f"S={S}", "n_in": len(ins)}
            for i, a in enumerate(ins):
                np.save(OUT / f"{name}.c{k}.in{i}.npy", a)
            e = llm_eager(params, seq, ctx, sd, flags, tokens, posa)
            np.save(OUT / f"{name}.c{k}.eager0.npy", e)
            c["n_eager"] = 1
            try:
                m = _load_for_executorch_from_buffer(buf)
                outs = m.forward([torch.from_numpy(a) for a in ins])
                for i, o in enumerate(outs):
                    np.save(OUT / f"{name}.c{k}.up{i}.npy", o.float().numpy())
                c["upstream"] = "ok"
                c["n_up"] = len(outs)
            except Exception as ex:  # noqa
                c["upstream"] = "error: " + str(ex)[-300:]
            info["cases"].append(c)
    return info


# --------------------------------------------------------------------------------------------
# export of the hand-written models
# --------------------------------------------------------------------------------------------


def flat(o):
    import torch
    if isinstance(o, torch.Tensor):
        return [o]
    r = []
    for x in o:
        r += flat(x)
    return r


def to_np(t):
    import torch
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.detach().numpy()


def export_one(name):
    import torch
    from torch.export import export
    from executorch.exir import to_edge_transform_and_lower, EdgeCompileConfig
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer
    import executorch.kernels.quantized  # noqa

    S, M = specs()
    sp = S[name]
    torch.manual_seed(sp["seed"])
    info = {"name": name, "how": "", "cases": [], "kind": "nn"}
    how = sp["how"]

    if how == "multimethod_xnnpack":
        base = M["EncDecMethods"]().eval()
        enc, dec = M["Enc"](base).eval(), M["Dec"](base).eval()
        Bm = torch.export.Dim("Bm", min=1, max=16)
        eps = {"encode": export(enc, (rnd(40, 3, 10),), dynamic_shapes=({0: Bm},)),
               "decode": export(dec, (rnd(41, 3, 16), torch.tensor([1.5])), dynamic_shapes=({0: Bm}, None))}
        info["how"] = "torch.export x2 (dynamic batch) -> to_edge_transform_and_lower({encode, decode}, XnnpackPartitioner)"
        prog = to_edge_transform_and_lower(eps, partitioner=[XnnpackPartitioner()]).to_executorch()
        buf = prog.buffer
        (OUT / f"{name}.pte").write_bytes(buf)
        cases = [("encode", enc, (rnd(42, 5, 10),)), ("decode", dec, (rnd(43, 2, 16), torch.tensor([0.7])))]
        for k, (meth, mod, ins) in enumerate(cases):
            _record(name, k, info, ins, flat(mod(*ins)), buf, meth)
        return info

    model = getattr(M, "get", M.get)(sp["cls"])()
    model.eval()
    if sp["dtype"] is not None:
        model = model.to(sp["dtype"])
    ex = sp["example"]
    dyn = sp["dyn"]
    parts = []
    if how.startswith("pt2e"):
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer, get_symmetric_quantization_config)
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        dynamic = "dynamic" in how
        q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic))
        prepared = prepare_pt2e(export(model, ex, dynamic_shapes=dyn).module(), q)
        for s in range(4):
            prepared(*[rnd(500 + s, *t.shape) for t in ex])
        model_q = convert_pt2e(prepared)
        ep = export(model_q, ex, dynamic_shapes=dyn)
        eager_mod = model_q
        parts.append(f"PT2E XNNPACKQuantizer(per-channel, {'dynamic' if dynamic else 'static'}) int8")
    else:
        ep = export(model, ex, dynamic_shapes=dyn)
        eager_mod = model
    part = [XnnpackPartitioner()] if "xnnpack" in how else []
    parts.append("torch.export" + (f" dynamic {dyn}" if dyn else "") +
                 " -> to_edge_transform_and_lower" + (" + XnnpackPartitioner" if part else " (portable)"))
    if sp["dtype"] is not None:
        parts.append(str(sp["dtype"]))
    info["how"] = "; ".join(parts)
    prog = to_edge_transform_and_lower(ep, partitioner=part,
                                       compile_config=EdgeCompileConfig(_check_ir_validity=False) if "cond" in name else None
                                       ).to_executorch()
    buf = prog.buffer
    (OUT / f"{name}.pte").write_bytes(buf)
    for k, ins in enumerate(sp["cases"]):
        with torch.no_grad():
            eo = flat(eager_mod(*ins))
        _record(name, k, info, ins, eo, buf, "forward")
    return info


def _record(name, k, info, ins, eager_outs, buf, method):
    import torch
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer
    c = {"method": method, "n_in": len(ins), "desc": " ".join(
        f"{tuple(t.shape)}{str(t.dtype).replace('torch.', '')}" for t in ins)}
    for i, t in enumerate(ins):
        np.save(OUT / f"{name}.c{k}.in{i}.npy", to_np(t))
    for i, t in enumerate(eager_outs):
        np.save(OUT / f"{name}.c{k}.eager{i}.npy", to_np(t))
    c["n_eager"] = len(eager_outs)
    try:
        m = _load_for_executorch_from_buffer(buf)
        outs = m.run_method(method, tuple(ins))
        for i, t in enumerate(outs):
            np.save(OUT / f"{name}.c{k}.up{i}.npy", to_np(t))
        c["upstream"] = "ok"
        c["n_up"] = len(outs)
    except Exception as ex:  # noqa
        c["upstream"] = "error: " + str(ex)[-300:]
    info["cases"].append(c)


def cmd_export(names):
    OUT.mkdir(parents=True, exist_ok=True)
    S, _ = specs()
    allnames = list(S) + list(LLMS)
    for n in names or allnames:
        t0 = time.time()
        try:
            info = export_llm(n) if n in LLMS else export_one(n)
        except Exception as ex:  # noqa
            info = {"name": n, "how": S[n]["how"] if n in S else "", "cases": [],
                    "export_error": traceback.format_exc()[-3000:]}
        info["total_s"] = round(time.time() - t0, 1)
        (OUT / f"{n}.json").write_text(json.dumps(info, indent=1))
        print(n, "export_error" if "export_error" in info else "ok",
              [c.get("upstream") for c in info["cases"]], info["total_s"], "s", flush=True)


# --------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------


def rel(a, b):
    if a.shape != b.shape:
        return float("inf"), f"shape {a.shape} vs {b.shape}"
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    fin = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)) or not np.array_equal(a[~fin], b[~fin]):
        return float("inf"), "non-finite mismatch"
    if not fin.any():
        return 0.0, ""
    d = np.abs(a[fin] - b[fin]).max()
    scale = max(np.abs(b[fin]).max(), 1e-12)
    return d / scale, ""


def cmd_compare():
    rows = []
    details = []
    for j in sorted(OUT.glob("*.json")):
        info = json.loads(j.read_text())
        name = info["name"]
        if "export_error" in info:
            rows.append((name, info["how"], "export failed", "-", "-", "-"))
            details.append(f"### {name}: export failed\n```\n{info['export_error'][-1500:]}\n```")
            continue
        for k, c in enumerate(info["cases"]):
            ins = [str(OUT / f"{name}.c{k}.in{i}.npy") for i in range(c["n_in"])]
            od = OUT / f"pt_{name}.c{k}"
            od.mkdir(exist_ok=True)
            for f in od.glob("*.npy"):
                f.unlink()
            cmd = [PTERON, str(OUT / f"{name}.pte")]
            if c.get("method", "forward") != "forward":
                cmd += ["--method", c["method"]]
            for p in ins:
                cmd += ["--input", p]
            cmd += ["--output-dir", str(od)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            up = c["upstream"]
            if r.returncode != 0:
                msg = (r.stderr.strip() or r.stdout.strip())[-600:]
                pt = f"error (rc {r.returncode})"
                rows.append((name, info["how"], f"{c['desc']}", up, pt + ": " + msg.splitlines()[-1][:200] if msg else pt, "-"))
                details.append(f"### {name} case {k} ({c['desc']}): pteron error\n`{' '.join(cmd)}`\n```\n{msg}\n```")
                continue
            n_pt = len(list(od.glob("output_*.npy")))
            pto = [np.load(od / f"output_{i}.npy") for i in range(n_pt)]
            d_up, d_e = [], []
            note = ""
            if up == "ok":
                ups = [np.load(OUT / f"{name}.c{k}.up{i}.npy") for i in range(c["n_up"])]
                if len(ups) != len(pto):
                    note += f" outputs {len(pto)} vs upstream {len(ups)}"
                for a, b in zip(pto, ups):
                    v, n = rel(a, b)
                    d_up.append(v)
                    note += (" " + n) if n else ""
            eag = [np.load(OUT / f"{name}.c{k}.eager{i}.npy") for i in range(c["n_eager"])]
            for a, b in zip(pto, eag):
                v, n = rel(a, b)
                d_e.append(v)
            fu = f"{max(d_up):.2e}" if d_up else "-"
            fe = f"{max(d_e):.2e}" if d_e else "-"
            rows.append((name, info["how"], c["desc"], up if up == "ok" else up[:120], "ok" + note, f"{fu} | {fe}"))
    hdr = ("| program | how exported | case (inputs) | upstream | pteron | max rel \\|pteron-upstream\\| | max rel \\|pteron-eager\\| |\n"
           "|---|---|---|---|---|---|---|\n")
    lines = [f"| {a} | {b} | {c} | {d} | {e} | {f} |" for a, b, c, d, e, f in rows]
    text = ("# pteron on unseen programs\n\nRelative = max|a-b| / max|reference| per output, max over outputs. "
            "For quantized / float16 / bfloat16 programs the eager column includes the quantization or "
            "rounding error of the program itself (eager runs the un-lowered model).\n\n" + hdr + "\n".join(lines) +
            "\n\n## Details\n\n" + "\n\n".join(details) + "\n")
    (HERE / "REPORT_raw.md").write_text(text)
    print(text)


if __name__ == "__main__":
    if sys.argv[1] == "export":
        cmd_export(sys.argv[2:])
    else:
        cmd_compare()
