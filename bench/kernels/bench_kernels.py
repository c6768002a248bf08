#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kernels_optimized against kernels_portable, operator by operator, on the
shapes real models give them (torchvision classifiers, segmentation heads),
one thread. A benchmark, not a test: it prints a table (bench/kernels/README.md).

    /work/exportenv/bin/python bench/kernels/bench_kernels.py [--build-dir build]
        [--iterations 30] [--only NAME ...] [--json out.json]

Each operator is a one-operator program exported on first use with
--exporter (torch + executorch; default: this interpreter) into
<build-dir>/bench/kernels/ (never committed). Each measurement runs in its
own process (ctypes, tests/capi.py) with only the kernel libraries it names:
  portable   kernels_portable alone
  optimized  kernels_portable + kernels_optimized (optimized wins by priority;
             a row marked "not registered" is an operator left to portable)
at every ISA level the CPU has (PTERON_ISA), no thread pool (one thread).
Times are the median, min and max of --iterations executions after 3 warm-up
runs (wall clock, perf_counter), stdout and stderr of every timed process
going to a pipe. The speed-up column is portable median / optimized median.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from kernel_worker import WORKER_PROLOGUE, run_worker_script  # noqa: E402
LEVELS = ["baseline", "avx2", "avx512"]

# name: (python expression of the forward body over x (and y), input shapes,
#        what the expression exports to)
CASES = {
    "exp": ("torch.exp(x)", [(1, 64, 112, 112)], "exp.out"),
    "sigmoid": ("torch.sigmoid(x)", [(1, 64, 112, 112)], "sigmoid.out"),
    "tanh": ("torch.tanh(x)", [(1, 64, 112, 112)], "tanh.out"),
    "gelu": ("F.gelu(x)", [(1, 64, 112, 112)], "gelu.out (erf)"),
    "gelu_tanh": ("F.gelu(x, approximate='tanh')", [(1, 64, 112, 112)], "gelu.out (tanh)"),
    "neg": ("torch.neg(x)", [(1, 64, 112, 112)], "neg.out"),
    "sqrt": ("torch.sqrt(x)", [(1, 64, 112, 112)], "sqrt.out (x >= 0)"),
    "rsqrt": ("torch.rsqrt(x)", [(1, 64, 112, 112)], "rsqrt.out (x > 0)"),
    "relu6": ("F.relu6(x)", [(1, 64, 112, 112)], "hardtanh.out"),
    "clamp": ("torch.clamp(x, -1.0, 2.0)", [(1, 64, 112, 112)], "clamp.out"),
    "pow2": ("x.pow(2)", [(1, 64, 112, 112)], "pow.Tensor_Scalar_out, exponent 2"),
    "pow15": ("x.pow(1.5)", [(1, 64, 112, 112)], "pow.Tensor_Scalar_out, exponent 1.5"),
    "div": ("x / y", [(1, 64, 112, 112), (1, 64, 112, 112)], "div.out"),
    "div_channel": ("x / y", [(1, 64, 112, 112), (1, 64, 1, 1)], "div.out (per channel)"),
    "maxpool": ("F.max_pool2d(x, 3, 2, 1)", [(1, 64, 112, 112)],
                "max_pool2d_with_indices.out 3x3/2 pad 1"),
    "avgpool": ("F.avg_pool2d(x, 2, 2)", [(1, 128, 56, 56)], "avg_pool2d.out 2x2/2"),
    "avgpool3": ("F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)", [(1, 64, 56, 56)],
                 "avg_pool2d.out 3x3/1 pad 1"),
    # (adaptive_avg_pool2d to 1x1 exports as mean.dim: the "mean" cases)
    "adaptive": ("F.adaptive_avg_pool2d(x, (7, 7))", [(1, 512, 14, 14)],
                 "_adaptive_avg_pool2d.out 14x14 -> 7x7"),
    "mean_hw": ("x.mean(dim=(-2, -1), keepdim=True)", [(1, 2048, 7, 7)],
                "mean.out over H, W (global pooling)"),
    "mean_hw_big": ("x.mean(dim=(-2, -1))", [(1, 256, 28, 28)], "mean.out over H, W"),
    "bilinear": ("F.interpolate(x, size=(224, 224), mode='bilinear', align_corners=False)",
                 [(1, 40, 28, 28)], "upsample_bilinear2d.vec 28->224"),
    "bilinear_ac": ("F.interpolate(x, size=(224, 224), mode='bilinear', align_corners=True)",
                    [(1, 40, 28, 28)], "upsample_bilinear2d.vec 28->224 align_corners"),
    "nearest": ("F.interpolate(x, scale_factor=2.0, mode='nearest')", [(1, 64, 56, 56)],
                "upsample_nearest2d.vec x2"),
    "cat_channels": ("torch.cat((x, y), dim=1)", [(1, 128, 28, 28), (1, 32, 28, 28)],
                     "cat.out along C (DenseNet)"),
    "cat_rotary": ("torch.cat((x, y), dim=-1)", [(1, 32, 64, 64), (1, 32, 64, 64)],
                   "cat.out along the last dim (rotary halves)"),
    "batchnorm": ("self.bn(x)", [(1, 256, 28, 28)], "_native_batch_norm_legit_no_training.out"),
    "groupnorm": ("self.gn(x)", [(1, 32, 56, 56)], "native_group_norm.out, 8 groups"),
}

EXPORT_SCRIPT = r'''
import json, sys
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import export
from executorch.exir import to_edge_transform_and_lower
out, cases = sys.argv[1], json.loads(sys.argv[2])
torch.manual_seed(0)
for name, (expr, shapes, _) in cases.items():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(256).eval()
            self.bn.running_var.uniform_(0.5, 2.0)
            self.gn = nn.GroupNorm(8, 32)
        def forward(self, x, y=None):
            return eval(expr)
    xs = []
    for s in shapes:
        t = torch.randn(*s)
        if name in ("sqrt", "rsqrt", "pow15") or len(xs) == 1:
            t = t.abs() + 0.1
        xs.append(t)
    prog = to_edge_transform_and_lower(export(M().eval(), tuple(xs))).to_executorch()
    open(f"{out}/{name}.pte", "wb").write(prog.buffer)
    for i, t in enumerate(xs):
        np.save(f"{out}/{name}.input_{i}.npy", t.numpy())
'''

WORKER = WORKER_PROLOGUE + r'''
selected = sorted({k["library"] for k in rt.kernels() if k["selected"] and
                   k["name"] in cfg["ops"]})
m = rt.load_file(cfg["program"]).load_method("forward")
for i, p in enumerate(cfg["inputs"]):
    m.set_input(i, np.load(p))
if cfg.get("accuracy_out"):
    m.execute()
    np.save(cfg["accuracy_out"], m.output(0))
    print("RESULT {}")
    sys.exit(0)
for _ in range(3):
    m.execute()
times = []
for _ in range(cfg["iterations"]):
    t0 = time.perf_counter()
    m.execute()
    times.append(time.perf_counter() - t0)
rt.lib.pteron_parallel_threads.restype = ctypes.c_int32
print("RESULT " + json.dumps({"isa": isa, "median_s": statistics.median(times),
                              "min_s": min(times), "max_s": max(times),
                              "threads": rt.lib.pteron_parallel_threads(),
                              "selected": selected}))
'''


def cpu_levels():
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    f = set(flags.group(1).split()) if flags else set()
    levels = ["baseline"]
    if {"avx2", "fma"} <= f:
        levels.append("avx2")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma"} <= f:
        levels.append("avx512")
    return (model.group(1).strip() if model else "unknown"), levels


def program_ops(pte: Path):
    """The operator names of a program (pteron's reader through ctypes would
    need a method load; the flatbuffer strings are enough for a label)."""
    data = pte.read_bytes()
    return sorted({m.decode() for m in re.findall(rb"aten::[a-z_0-9]+", data)})


def run_worker(bdir: Path, out: Path, name: str, libs, env_extra, iterations, inputs=None,
               accuracy_out=None):
    inputs = inputs or sorted(str(p) for p in out.glob(f"{name}.input_*.npy"))
    ops = program_ops(out / f"{name}.pte")
    cfg = {"build_dir": str(bdir), "program": str(out / f"{name}.pte"), "inputs": inputs,
           "libs": list(libs), "iterations": iterations, "ops": ops,
           "accuracy_out": str(accuracy_out) if accuracy_out else None}
    return run_worker_script(WORKER, cfg, env_extra, 1800, f"{name} {libs}")


# Accuracy of the vectorised transcendental functions: case -> (input range,
# float64 reference). Every float32 of the range's grid goes through the
# program (1x64x112x112 = 802816 points).
ACCURACY = {
    "exp": ((-87.0, 88.0), lambda t: t.exp()),
    "sigmoid": ((-30.0, 30.0), lambda t: t.sigmoid()),
    "tanh": ((-12.0, 12.0), lambda t: t.tanh()),
    "gelu": ((-10.0, 10.0), lambda t: 0.5 * t * (1 + torch.special.erf(t / 2 ** 0.5))),
    "gelu_tanh": ((-10.0, 10.0),
                  lambda t: 0.5 * t * (1 + torch.tanh((2 / torch.pi) ** 0.5 *
                                                      (t + 0.044715 * t ** 3)))),
}


def accuracy(bdir: Path, out: Path, levels):
    """Max error of each optimized function (and of kernels_portable's libm
    path) against a float64 reference on a dense grid: absolute, relative
    and in float32 ulps of the reference, both where |ref| > 1e-3 (below it
    gelu's 1 + erf(x) cancels in any float32 evaluation, libm's included)."""
    global torch
    import numpy as np
    import torch
    print("\naccuracy against float64 (max abs error, max rel error, max ulp):")
    for name, ((lo, hi), ref_fn) in ACCURACY.items():
        if not (out / f"{name}.pte").exists():
            continue
        x = np.linspace(lo, hi, 1 * 64 * 112 * 112, dtype=np.float32).reshape(1, 64, 112, 112)
        xin = out / f"{name}.acc_input.npy"
        np.save(xin, x)
        ref = ref_fn(torch.from_numpy(x).double()).numpy()
        row = f"  {name:<10} [{lo:g}, {hi:g}]"
        for tag, libs, env in [("portable", ["kernels_portable"], {})] + [
                (lv, ["kernels_portable", "kernels_optimized"], {"PTERON_ISA": lv})
                for lv in levels]:
            res = out / f"{name}.acc_{tag}.npy"
            run_worker(bdir, out, name, libs, env, 0, inputs=[str(xin)], accuracy_out=res)
            y = np.load(res).astype(np.float64)
            err = np.abs(y - ref)
            big = np.abs(ref) > 1e-3  # below: 1 + erf(x) cancels in float32 anyway
            ulp = np.spacing(np.abs(ref[big]).astype(np.float32)).astype(np.float64)
            row += (f"  {tag}: {err.max():.2e} / {(err[big] / np.abs(ref[big])).max():.2e}"
                    f" / {(err[big] / ulp).max():.1f}")
        print(row, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", type=Path,
                    default=Path(os.environ.get("PTERON_BUILD_DIR", REPO / "build")))
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--exporter", default=sys.executable)
    ap.add_argument("--only", nargs="*", help="case names (default: all)")
    ap.add_argument("--levels", nargs="*", help="ISA levels (default: all the CPU has)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--accuracy", action="store_true",
                    help="also measure the error of exp/sigmoid/tanh/gelu against float64")
    args = ap.parse_args()
    bdir = args.build_dir.resolve()
    out = bdir / "bench" / "kernels"
    out.mkdir(parents=True, exist_ok=True)
    cases = {k: v for k, v in CASES.items() if not args.only or k in args.only}
    missing = {k: v for k, v in cases.items() if not (out / f"{k}.pte").exists()}
    if missing:
        print(f"exporting {len(missing)} programs into {out} ...", flush=True)
        subprocess.run([args.exporter, "-c", EXPORT_SCRIPT, str(out), json.dumps(missing)],
                       check=True, timeout=3600)
    model, levels = cpu_levels()
    if args.levels:
        levels = [lv for lv in levels if lv in args.levels]
    print(f"CPU: {model}; ISA levels: {', '.join(levels)}; one thread; "
          f"{args.iterations} iterations, times in ms (median [min-max])")
    head = f"{'case':<13} {'operator':<44} {'portable':>22}"
    for lv in levels:
        head += f" {('opt ' + lv):>22} {'x':>5}"
    print(head)
    results = {"cpu": model, "levels": levels, "cases": {}}
    for name, (_, shapes, label) in cases.items():
        p = run_worker(bdir, out, name, ["kernels_portable"], {}, args.iterations)
        row = f"{name:<13} {label:<44} {fmt(p):>22}"
        rec = {"label": label, "shapes": shapes, "portable": p}
        for lv in levels:
            o = run_worker(bdir, out, name, ["kernels_portable", "kernels_optimized"],
                           {"PTERON_ISA": lv}, args.iterations)
            assert o["isa"] == lv, o
            row += f" {fmt(o):>22} {p['median_s'] / o['median_s']:>5.1f}"
            rec[lv] = o
        if "kernels_optimized" not in o["selected"]:
            row += "  (not registered: portable ran)"
        print(row, flush=True)
        results["cases"][name] = rec
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.accuracy:
        accuracy(bdir, out, levels)
    return 0


def fmt(r):
    return f"{r['median_s'] * 1e3:.3f} [{r['min_s'] * 1e3:.3f}-{r['max_s'] * 1e3:.3f}]"


if __name__ == "__main__":
    raise SystemExit(main())
