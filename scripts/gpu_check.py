#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The GPU check (scripts/gpu_check.sh run): on a machine with an NVIDIA GPU and
driver, runs the CUDA-lowered programs through the carried linux-cu134 build
(build-gpu/prefix) and prints one table. Needs python3 with numpy; PyTorch with
CUDA for the benchmark's eager side. Never part of CI.

    python3 scripts/gpu_check.py [--payload build-gpu] [--fake-driver DIR]

Rows:
  - every program of tests/cuda and build-gpu/programs (a small CNN, a small ViT,
    the decoder, the benchmark's block): MATCH or MISMATCH against eager, with
    the driver's default JIT policy, with CUDA_DISABLE_PTX_JIT=1 (the fatbin's
    SASS must serve this GPU) and with CUDA_FORCE_PTX_JIT=1 (the PTX JIT: runs on
    a driver at least as new as the train, else the clear "PTX too new" error);
  - the benchmark: 2 x Linear(4096) at batch 1024 and the transformer block,
    pteron's CUDA against eager PyTorch CUDA on the same GPU: medians and the
    ratio pteron / eager.
--fake-driver DIR runs the same flow against tests/cuda/fake_cuda.cpp's
libcuda.so.1 (its device is the CPU), skipping the benchmark: a check of this
script on a machine without a GPU.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))


def run(cmd, env=None, timeout=300):
    try:
        return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"timeout after {timeout} s")
    except OSError as e:  # no such program
        return subprocess.CompletedProcess(cmd, 127, "", str(e))


def programs(payload: Path):
    """(folder, manifest entry) of every program to run."""
    out = []
    for folder in (REPO / "tests" / "cuda", payload / "programs"):
        m = folder / "manifest.json"
        if not m.exists():
            continue
        for e in json.loads(m.read_text())["fixtures"]:
            if "PteronCudaBackend" in e["delegates"] and (folder / e["file"]).exists():
                out.append((folder, e))
    return out


def check(pteron_run, folder, e, env, tmp):
    """'MATCH', 'MISMATCH (max err ...)' or 'ERROR [code] message'."""
    m = e["methods"]["forward"]
    odir = Path(tempfile.mkdtemp(dir=tmp))
    args = [pteron_run, folder / e["file"], "--output-dir", odir]
    for i in m["inputs"]:
        args += ["--input", folder / i]
    r = run(args, env=env)
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        msg = re.sub(r"^pteron-run: error: (delegate \d+ \(\w+\) failed to initialise: )?", "", msg)
        return "ERROR " + msg.replace("PteronCudaBackend: ", "")[:240]
    worst = 0.0
    for k, exp in enumerate(m["expected"]):
        want = np.load(folder / exp)
        got = np.load(odir / f"output_{k}.npy")
        if got.shape != want.shape:
            return f"MISMATCH (output {k} shape {got.shape}, eager {want.shape})"
        if np.issubdtype(want.dtype, np.floating):
            err = np.abs(got.astype(np.float64) - want) - e["atol"] - e["rtol"] * np.abs(want)
            worst = max(worst, float(np.max(err, initial=-1.0)))
        elif not np.array_equal(got, want):
            return f"MISMATCH (output {k})"
    return "MATCH" if worst <= 0 else f"MISMATCH (beyond tolerance by {worst:.3g})"


def median_ms(stderr):
    m = re.search(r"median time per execution: ([0-9.]+) ms", stderr)
    return float(m.group(1)) if m else None


def bench(pteron_run, payload, env, tmp):
    """Rows (name, pteron ms, eager ms, ratio)."""
    import gpu_programs
    import torch

    rows = []
    dev = torch.device("cuda")
    progs = payload / "programs"
    # 2 x Linear(4096), batch 1024: the weights filled in as gpu_programs.weights() makes them.
    pte = bytearray(gzip.decompress((progs / "mlp4096.pte.gz").read_bytes()))
    layout = json.loads((progs / "mlp4096.json").read_text())
    for name, at in layout.items():
        raw = gpu_programs.weights(name, tuple(at["shape"])).tobytes()
        pte[at["offset"]:at["offset"] + len(raw)] = raw
    mlp_pte = Path(tmp) / "mlp4096.pte"
    mlp_pte.write_bytes(bytes(pte))
    x = np.cos(np.arange(1024 * 4096) * 0.37).astype(np.float32).reshape(1024, 4096)
    xin = Path(tmp) / "mlp_x.npy"
    np.save(xin, x)
    mlp = gpu_programs.Mlp().eval().to(dev)
    with torch.no_grad():
        for name, shape in gpu_programs.MLP_SHAPES.items():
            mlp.get_parameter(name).copy_(torch.from_numpy(gpu_programs.weights(name, shape)))
    block = gpu_programs.fill(gpu_programs.Block()).eval()
    bx = np.load(progs / "block512.forward.input_0.npy")
    for name, prog, inp, module, tx in (
            ("2 x Linear(4096), batch 1024", mlp_pte, xin, mlp, torch.from_numpy(x)),
            ("transformer block (dim 512, 64 tokens)", progs / "block512.pte",
             progs / "block512.forward.input_0.npy", block.to(dev), torch.from_numpy(bx))):
        r = run([pteron_run, prog, "--input", inp, "--iterations", "30"], env=env, timeout=600)
        ours = median_ms(r.stderr) if r.returncode == 0 else None
        tx = tx.to(dev)
        times = []
        with torch.no_grad():
            for i in range(40):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                y = module(tx)
                torch.cuda.synchronize()
                if i >= 10:
                    times.append((time.perf_counter() - t0) * 1e3)
        eager = statistics.median(times)
        rows.append((name, ours, eager, (ours / eager) if ours else None,
                     "" if r.returncode == 0 else (r.stderr.strip().splitlines() or [""])[-1][:120]))
        del y
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--payload", type=Path, default=REPO / "build-gpu")
    ap.add_argument("--pteron-run", type=Path, default=None)
    ap.add_argument("--fake-driver", type=Path, default=None)
    args = ap.parse_args(argv)
    pteron_run = args.pteron_run or args.payload / "prefix" / "bin" / "pteron-run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_")}
    if args.fake_driver:
        env["LD_LIBRARY_PATH"] = str(args.fake_driver)
    print(f"pteron GPU check: {pteron_run}")
    try:
        import torch
        if torch.cuda.is_available():
            print(f"GPU: {torch.cuda.get_device_name(0)}, compute capability "
                  f"{'.'.join(map(str, torch.cuda.get_device_capability(0)))}; "
                  f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}")
    except ImportError:
        torch = None
    smi = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], timeout=30)
    if smi.returncode == 0:
        print(f"driver: {smi.stdout.strip()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for folder, e in programs(args.payload):
            res = []
            for mode, extra in (("default", {}), ("CUDA_DISABLE_PTX_JIT=1", {"CUDA_DISABLE_PTX_JIT": "1"}),
                                ("CUDA_FORCE_PTX_JIT=1", {"CUDA_FORCE_PTX_JIT": "1"})):
                res.append(check(pteron_run, folder, e, dict(env, **extra), tmp))
            rows.append((e["name"], *res))
        print()
        print("| program | default | CUDA_DISABLE_PTX_JIT=1 | CUDA_FORCE_PTX_JIT=1 |")
        print("|---|---|---|---|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        ok = all(r[1] == "MATCH" and r[2] == "MATCH" for r in rows) and rows
        forced = [r[3] for r in rows]
        # On a driver older than the train the forced JIT must fail with the clear error.
        forced_ok = all(f == "MATCH" or "PTX" in f for f in forced)
        if not args.fake_driver and torch is not None and torch.cuda.is_available():
            print()
            print("| benchmark | pteron CUDA ms | eager PyTorch CUDA ms | ratio pteron/eager |")
            print("|---|---|---|---|")
            for name, ours, eager, ratio, err in bench(pteron_run, args.payload, env, tmp):
                print(f"| {name} | {ours if ours is not None else 'ERROR ' + err} | {eager:.3f} | "
                      f"{ratio:.3g} |" if ratio else f"| {name} | ERROR {err} | {eager:.3f} | - |")
    print()
    print("gpu_check: " + ("PASS" if ok and forced_ok else "FAIL"))
    return 0 if ok and forced_ok else 1


if __name__ == "__main__":
    sys.exit(main())
