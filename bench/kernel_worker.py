# SPDX-License-Identifier: BSD-3-Clause
"""What the kernel benchmarks (bench/kernels/bench_kernels.py,
bench/gemm/bench_gemm.py) share: the start of their worker scripts and the
way a parent runs one.

A worker is a python script run with `python -c SCRIPT TESTS_DIR CFG_JSON`
in its own process, so that only the kernel libraries it names are loaded.
WORKER_PROLOGUE opens the runtime (tests/capi.py) with cfg["libs"] from
cfg["build_dir"] and sets `isa` to kernels_optimized's ISA level (None
without it); the script goes on from there and prints one line
"RESULT <json>"."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WORKER_PROLOGUE = r'''
import ctypes, json, statistics, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[1])
import capi
cfg = json.loads(sys.argv[2])
rt = capi.Runtime(Path(cfg["build_dir"]), kernel_libs=tuple(cfg["libs"]))
isa = None
if "kernels_optimized" in cfg["libs"]:
    name = "pteron_kernels_optimized.dll" if sys.platform == "win32" else "libpteron_kernels_optimized.so"
    lib = ctypes.CDLL(str(Path(cfg["build_dir"]) / name))
    lib.pteron_kernels_optimized_isa.restype = ctypes.c_char_p
    isa = lib.pteron_kernels_optimized_isa().decode()
'''


def run_worker_script(script: str, cfg: dict, env_extra: dict, timeout: float, what: str) -> dict:
    """Runs `script` (WORKER_PROLOGUE + the rest) on cfg with the environment
    less PTERON_ISA / PTERON_NUM_THREADS, plus env_extra; returns its RESULT
    object. Exits (SystemExit naming `what`, with the worker's output) when
    the worker fails or prints no RESULT line."""
    env = {k: v for k, v in os.environ.items() if k not in ("PTERON_ISA", "PTERON_NUM_THREADS")}
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", script, str(REPO / "tests"), json.dumps(cfg)],
                       capture_output=True, text=True, env=env, timeout=timeout)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if r.returncode != 0 or not line:
        raise SystemExit(f"worker {what} failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(line[len("RESULT "):])
