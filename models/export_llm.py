# SPDX-License-Identifier: BSD-3-Clause
"""Exports decoder-only LLM programs with upstream ExecuTorch 1.5.1's own LLM exporter
(`python -m executorch.examples.models.llama.export_llama`) in the configurations it
recommends, with seeded random weights, and records upstream's runtime on them.

Configurations (each with the KV cache and upstream's custom SDPA, -kv --use_sdpa_with_kv_cache,
and metadata BOS 1, EOS 2):
    fp32_portable         float32, no delegate (llama::update_cache, llama::custom_sdpa)
    8da4w_xnnpack         8-bit dynamic activations, 4-bit groupwise weights, XNNPACK
    8da4w_qkv_xnnpack     the same with the int8 KV cache (--quantize_kv_cache:
                          llama::custom_quantized_sdpa)
    8da4w_xnnpack_extended  8da4w with --xnnpack-extended-ops: more of the graph in XNNPACK,
                          its reshapes over the dynamic sequence length
    bf16_portable         bfloat16 weights and activations (-d bf16), no delegate: aten::linear
                          and llama::custom_sdpa in bfloat16
Models:
    tiny        dim 64, 2 layers, 4 heads over 2 KV heads, vocabulary 256, 32 positions: the
                committed fixtures (models/fixtures/llama/, with upstream's logits per case)
    stories110m dim 768, 12 layers, 12 heads, vocabulary 32000, 128 positions: the benchmark's
                LLM row (bench/llm.py), exported on demand into a cache folder

For each program the manifest lists its flags, methods and cases: a token sequence fed at a
start position of a freshly loaded program, with upstream's logits (its Python runtime with the
custom operators' kernels loaded) saved as NAME.caseK.logits.npy.

    .venv-export/bin/python models/export_llm.py [--model tiny] [--out models/fixtures/llama]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

MODELS = {
    "tiny": {"params": {"dim": 64, "multiple_of": 32, "n_heads": 4, "n_kv_heads": 2,
                        "n_layers": 2, "norm_eps": 1e-5, "vocab_size": 256,
                        "rope_theta": 10000.0},
             "max_seq_len": 32},
    "stories110m": {"params": {"dim": 768, "multiple_of": 32, "n_heads": 12, "n_layers": 12,
                               "norm_eps": 1e-5, "vocab_size": 32000},
                    "max_seq_len": 128},
}
CONFIGS = {
    "fp32_portable": [],
    "8da4w_xnnpack": ["-X", "-qmode", "8da4w", "--group_size", "32"],
    "8da4w_qkv_xnnpack": ["-X", "-qmode", "8da4w", "--group_size", "32", "--quantize_kv_cache"],
    "8da4w_xnnpack_extended": ["-X", "-qmode", "8da4w", "--group_size", "32",
                               "--xnnpack-extended-ops"],
    "bf16_portable": ["-d", "bf16"],
}
METADATA = {"get_bos_id": 1, "get_eos_ids": [2]}


def checkpoint(model: str, folder: Path) -> tuple:
    """params.json and a checkpoint of seeded random weights (normal, std 0.02; embeddings 1.0)
    in the layout upstream's exporter reads (its own Transformer's state dict)."""
    import torch
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    spec = MODELS[model]
    params = folder / "params.json"
    params.write_text(json.dumps(spec["params"]))
    torch.manual_seed(20261207)
    m = construct_transformer(ModelArgs(**spec["params"], max_seq_len=spec["max_seq_len"],
                                        max_context_len=spec["max_seq_len"]))
    sd = {k: v for k, v in m.state_dict().items()
          if not any(s in k for s in ("cache", "mask", "freqs"))}
    with torch.no_grad():
        for k, v in sd.items():
            if v.dim() == 2:
                v.normal_(0.0, 1.0 if "emb" in k else 0.02)
    ckpt = folder / "checkpoint.pth"
    torch.save(sd, ckpt)
    return params, ckpt


def export(model: str, config: str, out: Path, work: Path, params: Path, ckpt: Path) -> Path:
    seq = MODELS[model]["max_seq_len"]
    pte = out / f"{model}_{config}.pte"
    cmd = [sys.executable, "-m", "executorch.examples.models.llama.export_llama",
           "--model", "llama3", "--params", str(params), "--checkpoint", str(ckpt),
           "-kv", "--use_sdpa_with_kv_cache",
           "--max_seq_length", str(seq), "--max_context_length", str(seq),
           "--metadata", json.dumps(METADATA), "--output_name", str(pte)] + \
        (CONFIGS[config] if "-d" in CONFIGS[config] else ["-d", "fp32"] + CONFIGS[config])
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0 or not pte.exists():
        raise SystemExit(f"export_llama {config} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return pte


def upstream_logits(pte: Path, tokens: np.ndarray, pos: int) -> np.ndarray:
    import torch
    from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401
    from executorch.extension.pybindings.portable_lib import _load_for_executorch
    from executorch.kernels import quantized  # noqa: F401

    m = _load_for_executorch(str(pte))
    out = m.forward([torch.from_numpy(tokens), torch.tensor([pos], dtype=torch.int64)])[0]
    return out.float().numpy()  # a bfloat16 program's logits widened (exact)


def upstream_generate(pte: Path, prompt, max_new: int, max_context: int, eos) -> tuple:
    """Upstream's runtime in the loop pteron.llm runs (one prefill call, then one decode call
    per token at the next position; greedy: the first of equal maxima, as torch.argmax; stop
    at an EOS id, after max_new tokens or at the context's end): (tokens, logits per step)."""
    import torch
    from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401
    from executorch.extension.pybindings.portable_lib import _load_for_executorch
    from executorch.kernels import quantized  # noqa: F401

    m = _load_for_executorch(str(pte))
    seq = list(prompt)
    logits = m.forward([torch.tensor([seq], dtype=torch.int64),
                        torch.tensor([0], dtype=torch.int64)])[0].reshape(-1)
    toks, steps = [], []
    while True:
        steps.append(logits.float().numpy().copy())
        t = int(torch.argmax(logits))
        toks.append(t)
        seq.append(t)
        if t in eos or len(toks) >= max_new or len(seq) >= max_context:
            break
        logits = m.forward([torch.tensor([[t]], dtype=torch.int64),
                            torch.tensor([len(seq) - 1], dtype=torch.int64)])[0].reshape(-1)
    return toks, np.stack(steps)


def write_tokenizer(out: Path, vocab: int) -> Path:
    """tokenizer.json for the tiny model (Hugging Face tokenizers' format, written directly):
    a word-level vocabulary of <unk>, <s> (BOS, 1), </s> (EOS, 2) and vocab - 3 made-up
    syllable words, split on whitespace, decoded joined by spaces."""
    syl = ["ka", "lo", "mi", "ne", "tu", "ra", "so", "vi", "de", "pa", "ri", "go", "ze", "bu",
           "fa", "hi"]
    words = [a + b for a in syl for b in syl][:vocab - 3]
    vocab_map = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab_map.update({w: i + 3 for i, w in enumerate(words)})
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for t, i in list(vocab_map.items())[:3]]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
           "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
           "post_processor": None, "decoder": None,
           "model": {"type": "WordLevel", "vocab": vocab_map, "unk_token": "<unk>"}}
    p = out / "tokenizer.json"
    p.write_text(json.dumps(tok, indent=0) + "\n")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="tiny")
    ap.add_argument("--configs", nargs="*", choices=sorted(CONFIGS), default=sorted(CONFIGS))
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).resolve().parent / "fixtures" / "llama")
    ap.add_argument("--no-cases", action="store_true", help="export only (the benchmark)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    seq = MODELS[a.model]["max_seq_len"]
    vocab = MODELS[a.model]["params"]["vocab_size"]
    programs = []
    with tempfile.TemporaryDirectory() as tmp:
        params, ckpt = checkpoint(a.model, Path(tmp))
        for config in a.configs:
            pte = export(a.model, config, a.out, Path(tmp), params, ckpt)
            name = pte.stem
            entry = {"name": name, "file": pte.name, "model": a.model, "config": config,
                     "flags": CONFIGS[config], "size_bytes": pte.stat().st_size,
                     "max_seq_len": seq, "vocab_size": vocab, "metadata": METADATA, "cases": []}
            # prompts of 1 token and of the longest prefill (max_seq_len - 1), and decode steps
            # at the first, a middle and the last position
            for k, (S, pos) in enumerate([(5, 0), (1, 0), (seq - 1, 0), (1, seq // 2),
                                          (1, seq - 1), (3, seq // 2)] if not a.no_cases else []):
                tokens = np.random.default_rng(1000 + k).integers(0, vocab, (1, S)).astype(np.int64)
                logits = upstream_logits(pte, tokens, pos)
                base = f"{name}.case{k}"
                np.save(a.out / f"{base}.tokens.npy", tokens)
                np.save(a.out / f"{base}.pos.npy", np.array([pos], np.int64))
                np.save(a.out / f"{base}.logits.npy", logits)
                entry["cases"].append({"tokens": f"{base}.tokens.npy", "pos": f"{base}.pos.npy",
                                       "logits": f"{base}.logits.npy", "seq_len": S,
                                       "start_pos": pos})
            # greedy generations: after BOS + 4 tokens, after BOS alone, and after the longest
            # prompt (the context then holds one more token)
            entry["generations"] = []
            for k, n in enumerate([5, 1, seq - 1] if not a.no_cases else []):
                rng = np.random.default_rng(2000 + k)
                prompt = [METADATA["get_bos_id"]] + [int(t) for t in
                                                     rng.integers(3, vocab, n - 1)]
                toks, steps = upstream_generate(pte, prompt, 24, seq, METADATA["get_eos_ids"])
                fn = f"{name}.gen{k}.logits.npy"
                np.save(a.out / fn, steps.astype(np.float32))
                entry["generations"].append({"prompt": prompt, "tokens": toks, "logits": fn,
                                             "max_new_tokens": 24})
            programs.append(entry)
            print(f"{name}: {entry['size_bytes']} bytes, {len(entry['cases'])} cases", flush=True)
    if not a.no_cases:
        write_tokenizer(a.out, vocab)
        # the programs of the configurations not exported now stay as they were
        old = a.out / "manifest.json"
        if old.exists():
            kept = [p for p in json.loads(old.read_text())["programs"]
                    if p["config"] not in a.configs and p["model"] == a.model]
            programs = kept + programs
        from importlib.metadata import version
        (a.out / "manifest.json").write_text(json.dumps(
            {"generator": "models/export_llm.py", "executorch": version("executorch"),
             "torch": version("torch"), "programs": programs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
