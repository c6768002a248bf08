#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The LLM row: prefill and decode tokens per second of a program made by upstream's
export_llama, pteron against upstream's runtime, side by side in one run.

    python3 bench/llm.py --stage DIR [--python .venv-export/bin/python] [--pte FILE]
                         [--rounds 4] [--prompt 64] [--decode 48] [--threads 1 2]

--stage: a folder holding the package `pteron` with its built extension (tests/conftest.py's
`stage`, or the README's Python quick start). --pte: the program; by default the stories110M
shape (dim 768, 12 layers, 12 heads, vocabulary 32000, 128 positions), 8da4w with XNNPACK and
the custom SDPA, exported by models/export_llm.py --model stories110m into
~/.cache/pteron/llm/ when missing (random weights, several minutes).

Both sides run the same loop in child processes of --python (upstream's wheel): one prefill
call with a --prompt token prompt at position 0, then --decode decode calls of one token each,
greedy, no stop token. pteron: pteron.llm.Generator (its Python loop, numpy argmax). Upstream:
its Python bindings (`_load_for_executorch` with the custom operators' kernels loaded), the
same loop written with torch.argmax, threads set by `_unsafe_reset_threadpool`. Each child
does one warm-up generation, then the timed one. Rounds alternate the order (ABBA). Reported:
median tokens per second of each side, the ratio pteron / upstream of decode and prefill speed
(above 1: pteron faster) as the median of the per-round ratios with min-max, the CPU, and the
fraction of the memory-bandwidth limit: bytes of weights read per decoded token (the program's
size less the embedding table, of which a token reads one row) times tokens per second, over
the copy bandwidth numpy measures on this machine (a 1 GiB array, read and written).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ratio_summary(ratios) -> str:
    """The per-round ratios' median with their min-max (each round's two sides ran back to
    back: a paired comparison, as bench/run.py reports)."""
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"

CHILD = r"""
import json, sys, time
side, pte, prompt_len, decode, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5])
import numpy as np
prompt = [1] + [int(t) for t in np.random.default_rng(0).integers(3, 1000, prompt_len - 1)]
if side == "pteron":
    import pteron, pteron.llm
    pteron.set_num_threads(threads)
    gen = pteron.llm.Generator(pte)
    def once():
        r = gen.generate(prompt, decode + 1, stop_tokens=[])
        return r.prefill_seconds, r.decode_seconds, len(r.tokens) - 1
    isa = None
    try:
        from pteron import _runtime
        lib = _runtime._loaded["kernels_optimized"][1]
        import ctypes
        lib.pteron_kernels_optimized_isa.restype = ctypes.c_char_p
        isa = lib.pteron_kernels_optimized_isa().decode()
    except Exception:
        pass
else:
    import torch
    from executorch.extension.llm.custom_ops import custom_ops  # noqa
    from executorch.kernels import quantized  # noqa
    from executorch.extension.pybindings.portable_lib import (_load_for_executorch,
                                                             _unsafe_reset_threadpool)
    _unsafe_reset_threadpool(threads)
    m = _load_for_executorch(pte)
    isa = None
    def once():
        t0 = time.perf_counter()
        logits = m.forward([torch.tensor([prompt], dtype=torch.int64),
                            torch.tensor([0], dtype=torch.int64)])[0]
        t1 = time.perf_counter()
        pos = len(prompt)
        tok = int(torch.argmax(logits.reshape(-1)))
        for _ in range(decode):
            logits = m.forward([torch.tensor([[tok]], dtype=torch.int64),
                                torch.tensor([pos], dtype=torch.int64)])[0]
            tok = int(torch.argmax(logits.reshape(-1)))
            pos += 1
        return t1 - t0, time.perf_counter() - t1, decode
once()
p, d, n = once()
print(json.dumps({"prefill_tps": len(prompt) / p, "decode_tps": n / d, "isa": isa}))
"""

BANDWIDTH = r"""
import json, time, numpy as np
a = np.ones(1 << 28, dtype=np.float32)  # 1 GiB
b = np.empty_like(a)
best = 0.0
for _ in range(5):
    t = time.perf_counter(); np.copyto(b, a); t = time.perf_counter() - t
    best = max(best, 2 * a.nbytes / t)
print(json.dumps({"bytes_per_second": best}))
"""


def child(py, stage, code, args, timeout=3600):
    env = dict(os.environ, PYTHONPATH=str(stage))
    env.pop("PTERON_NUM_THREADS", None)
    r = subprocess.run([str(py), "-c", code, *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    if r.returncode != 0:
        raise SystemExit(f"child failed ({args[:1]}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def default_pte(py) -> Path:
    d = Path.home() / ".cache" / "pteron" / "llm"
    pte = d / "stories110m_8da4w_xnnpack.pte"
    if not pte.exists():
        print(f"exporting {pte.name} with upstream's export_llama (several minutes)", flush=True)
        subprocess.run([str(py), str(REPO / "models" / "export_llm.py"), "--model", "stories110m",
                        "--configs", "8da4w_xnnpack", "--no-cases", "--out", str(d)],
                       check=True, timeout=7200)
    return pte


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", required=True, type=Path)
    ap.add_argument("--python", type=Path, default=REPO / ".venv-export" / "bin" / "python")
    ap.add_argument("--pte", type=Path)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--decode", type=int, default=48)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--dim", type=int, default=768, help="model dim (the embedding's row)")
    ap.add_argument("--vocab", type=int, default=32000)
    a = ap.parse_args(argv)
    pte = a.pte or default_pte(a.python)
    bw = child(a.python, a.stage, BANDWIDTH, [])["bytes_per_second"]
    weight_bytes = pte.stat().st_size - a.vocab * a.dim * 4  # the float32 embedding table
    print(f"CPU: {cpu_model()}; copy bandwidth {bw / 1e9:.1f} GB/s; program {pte.name} "
          f"({pte.stat().st_size / 1e6:.1f} MB, about {weight_bytes / 1e6:.1f} MB of weights "
          "read per decoded token)", flush=True)
    rows = []
    for t in a.threads:
        res = {"pteron": [], "upstream": []}
        isa = None
        for r in range(a.rounds):
            order = ["pteron", "upstream"] if r % 2 == 0 else ["upstream", "pteron"]
            for side in order:
                out = child(a.python, a.stage, CHILD, [side, pte, a.prompt, a.decode, t])
                res[side].append(out)
                isa = isa or out.get("isa")
        dec = [p["decode_tps"] / u["decode_tps"] for p, u in zip(res["pteron"], res["upstream"])]
        pre = [p["prefill_tps"] / u["prefill_tps"] for p, u in zip(res["pteron"], res["upstream"])]
        med = {s: {k: statistics.median(x[k] for x in res[s]) for k in ("prefill_tps", "decode_tps")}
               for s in res}
        rows.append((t, med, ratio_summary(dec), ratio_summary(pre), isa))
    print()
    print(f"| threads | pteron decode tok/s | upstream decode tok/s | decode speed-up "
          f"(pteron/upstream, median [min-max]) | pteron prefill tok/s | upstream prefill tok/s "
          f"| prefill speed-up | pteron decode, fraction of bandwidth limit |")
    print("|---|---|---|---|---|---|---|---|")
    for t, med, dec, pre, isa in rows:
        frac = med["pteron"]["decode_tps"] * weight_bytes / bw
        print(f"| {t} | {med['pteron']['decode_tps']:.1f} | {med['upstream']['decode_tps']:.1f} "
              f"| {dec} | {med['pteron']['prefill_tps']:.1f} | {med['upstream']['prefill_tps']:.1f}"
              f" | {pre} | {frac:.2f} |")
    print(f"\npteron's ISA path (kernels_optimized): {rows[0][4]}; {a.rounds} ABBA rounds, prompt "
          f"{a.prompt} tokens, {a.decode} decoded tokens per run")


if __name__ == "__main__":
    main()
