# SPDX-License-Identifier: BSD-3-Clause
"""Upstream's recommended LLM exports run unchanged: programs made by upstream's own
export_llama (models/export_llm.py; committed in models/fixtures/llama/: a tiny Llama-3-shaped
decoder, 4 query heads over 2 KV heads, with the KV cache and upstream's custom SDPA) in its
recommended configurations: float32 without a delegate, 8da4w with XNNPACK, 8da4w with XNNPACK
and the int8 KV cache, 8da4w with --xnnpack-extended-ops (reshapes over the dynamic sequence
length inside XNNPACK), and bfloat16 without a delegate (-d bf16: aten::linear in bfloat16). Each case (a prompt of 1, 5 or the longest prefill of 31
tokens at position 0, decode steps at positions 0, 16 and 31, a 3-token chunk at 16) runs on a
freshly loaded program through pteron-run and must give upstream's runtime's logits within
float32 rounding."""
import json
import os

import numpy as np
import pytest

from conftest import REPO, build_dir, run

F = REPO / "models" / "fixtures" / "llama"
MANIFEST = json.loads((F / "manifest.json").read_text())


def tolerance(prog):
    """float32 programs: float32 rounding. The bfloat16 one: each layer's activations are
    rounded to bfloat16 (2^-8 relative) where the two runtimes' sums differ in order and width
    (pteron's linear sums in double, upstream's in float32), over 2 layers."""
    return 3e-2 if prog["config"] == "bf16_portable" else 1e-5


def params():
    for p in MANIFEST["programs"]:
        for k in range(len(p["cases"])):
            yield pytest.param(p, k, id=f"{p['name']}-{k}")


@pytest.mark.parametrize("prog,k", list(params()))
def test_logits_match_upstreams_runtime(prog, k, tmp_path):
    c = prog["cases"][k]
    e = {k2: v for k2, v in os.environ.items() if k2 not in ("PTERON_ISA", "PTERON_NUM_THREADS")}
    r = run([build_dir() / "pteron-run", F / prog["file"], "--input", F / c["tokens"],
             "--input", F / c["pos"], "--output-dir", tmp_path], timeout=120, env=e)
    assert r.returncode == 0, f"{prog['name']} case {k}: {r.stdout[-2000:]}{r.stderr[-2000:]}"
    got, want = np.load(tmp_path / "output_0.npy"), np.load(F / c["logits"])
    assert got.shape == want.shape == (1, prog["vocab_size"]), (got.shape, want.shape)
    err = float(np.abs(got - want).max())
    assert err <= tolerance(prog) * max(1.0, float(np.abs(want).max())), (
        f"{prog['name']} case {k} (seq {c['seq_len']} at {c['start_pos']}): max |pteron - "
        f"upstream| {err}")


def test_the_programs_are_upstreams_recommended_configurations():
    configs = {p["config"]: p for p in MANIFEST["programs"]}
    assert set(configs) == {"fp32_portable", "8da4w_xnnpack", "8da4w_qkv_xnnpack",
                            "8da4w_xnnpack_extended", "bf16_portable"}, configs
    assert "--quantize_kv_cache" in configs["8da4w_qkv_xnnpack"]["flags"]
    for p in MANIFEST["programs"]:
        lens = {(c["seq_len"], c["start_pos"]) for c in p["cases"]}
        assert (1, 0) in lens and (p["max_seq_len"] - 1, 0) in lens, lens
        assert (1, p["max_seq_len"] - 1) in lens, lens


@pytest.mark.parametrize("config,op", [("fp32_portable", "llama::custom_sdpa.out"),
                                       ("fp32_portable", "llama::update_cache.out"),
                                       ("8da4w_qkv_xnnpack", "llama::custom_quantized_sdpa.out")])
def test_the_programs_use_upstreams_custom_operators(config, op):
    p = next(p for p in MANIFEST["programs"] if p["config"] == config)
    r = run([build_dir() / "pteron-run", "--list-operators", F / p["file"]], timeout=60)
    assert r.returncode == 0, r.stderr
    assert op in r.stdout, r.stdout


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512", "avx512vnni"])
def test_8da4w_logits_at_every_isa_level(isa, threads, tmp_path):
    """The 8da4w programs' linear layers run on the int4 GEMM (runtime/cpu/include/pteron_cpu/q4gemm.h),
    one microkernel per level: each level, at 1 and 2 threads, gives upstream's logits."""
    from isa_check import missing_for
    if missing_for(isa):
        pytest.skip(f"this CPU lacks {sorted(missing_for(isa))} for PTERON_ISA={isa}")
    env = {k2: v for k2, v in os.environ.items() if k2 not in ("PTERON_ISA", "PTERON_NUM_THREADS")}
    env.update(PTERON_NUM_THREADS=threads, PTERON_XNNPACK_DEBUG="1")
    if isa != "avx512vnni":  # the widest level is the default; PTERON_ISA=avx512 turns VNNI off
        env["PTERON_ISA"] = isa
    for prog in MANIFEST["programs"]:
        if "8da4w" not in prog["config"]:
            continue
        for k, c in enumerate(prog["cases"]):
            out = tmp_path / f"{prog['name']}-{k}"
            r = run([build_dir() / "pteron-run", F / prog["file"], "--input", F / c["tokens"],
                     "--input", F / c["pos"], "--output-dir", out], timeout=120, env=env)
            assert r.returncode == 0, r.stderr[-2000:]
            assert f"4-bit weights, {isa}" in r.stderr, (isa, r.stderr[-3000:])
            got, want = np.load(out / "output_0.npy"), np.load(F / c["logits"])
            err = float(np.abs(got - want).max())
            assert err <= 1e-5 * max(1.0, float(np.abs(want).max())), (prog["name"], k, isa, err)
