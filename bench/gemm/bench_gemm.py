#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""GFLOP/s of kernels_optimized's addmm on the 2 x Linear(1024) MLP shape,
batch 256 ([256, 1024] x [1024, 1024]), single thread, per ISA level this CPU
has, against the CPU's peak; plus the whole MLP program with portable and
optimized kernels. A benchmark, not a test: it prints a table.

    /opt/pteron-dev/bin/python bench/gemm/bench_gemm.py [--build-dir build] [--iterations 20]

The two programs are exported on first use with /opt/pteron-dev/bin/python
(torch + executorch; override with --exporter) into <build-dir>/bench/gemm/
(8 MB of weights each: never committed):
  addmm1024.pte  one aten::addmm.out: x[256,1024] @ w[1024,1024] + b
  mlp1024.pte    nn.Linear(1024,1024) -> ReLU -> nn.Linear(1024,1024) at batch 256,
                 as upstream's portable program (permute_copy + addmm per layer)
  fc1024_xnnpack.pte, mlp1024_xnnpack.pte
                 one Linear(1024, 1024) and the MLP, lowered to XNNPACK (upstream
                 XnnpackPartitioner): the delegate's FullyConnected node, run by pteron's own
                 packed GEMM (runtime/cpu/include/pteron_cpu/gemm.h, PTERON_XNNPACK_USE_LIBRARY=none) and
                 by the linked XNNPACK library, at 1 and 2 threads

Each measurement runs in its own process (ctypes, tests/capi.py) with only
the kernel libraries it names, PTERON_ISA set to the level, and no thread
pool (single thread) unless stated. Times are medians of --iterations
executions after 3 warm-up runs; stdout and stderr of every timed process go
to a pipe (same redirection for both sides of a comparison).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))
from kernel_worker import WORKER_PROLOGUE, run_worker_script  # noqa: E402

M, K, N = 256, 1024, 1024
GEMM_FLOP = 2.0 * M * K * N
LEVELS = ["baseline", "avx2", "avx512"]
# FP32 FLOPs per cycle per core. The AVX-512 figure assumes two 512-bit FMA
# units (parts with one have half).
FLOPS_PER_CYCLE = {
    "baseline": 4 * 2,     # SSE: 4 lanes, one mul + one add per cycle, no FMA
    "avx2": 8 * 2 * 2,     # 8 lanes x FMA (2 FLOPs) x 2 FMA ports
    "avx512": 16 * 2 * 2,  # 16 lanes x FMA x 2 FMA ports
}
UPSTREAM_PORTABLE_S = 1.8        # upstream ExecuTorch 1.5.1, portable program (NOTES.md)

EXPORT_SCRIPT = r'''
import sys, torch
from torch import nn
from torch.export import export
from executorch.exir import to_edge_transform_and_lower
out = sys.argv[1]
torch.manual_seed(0)
class Addmm(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(1024, 1024) * 0.03)
        self.b = nn.Parameter(torch.randn(1024))
    def forward(self, x):
        return torch.addmm(self.b, x, self.w)
mlp = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
x = (torch.randn(256, 1024),)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
fc = nn.Linear(1024, 1024)
for name, mod, part in (("addmm1024", Addmm(), None), ("mlp1024", mlp, None),
                        ("fc1024_xnnpack", fc, [XnnpackPartitioner()]),
                        ("mlp1024_xnnpack", mlp, [XnnpackPartitioner()])):
    mod.eval()
    prog = to_edge_transform_and_lower(export(mod, x), partitioner=part).to_executorch()
    open(f"{out}/{name}.pte", "wb").write(prog.buffer)
'''

# resnet18's 3x3 and 7x7 convolutions in a chain (conv + folded batch norm + ReLU, fused into
# the XNNPACK Conv2d's output range): the stem on a 112x112 input (so its 56x56 output feeds
# layer1 without the max pool), then layer1..layer4's 3x3 convolutions with their strides; the
# residual adds and the 1x1 downsample convolutions are left out (element-wise nodes are not
# this benchmark's subject). Input [1, 3, 112, 112].
RESNET_SCRIPT = r'''
import sys, torch
from torch import nn
from torch.export import export
from executorch.exir import to_edge_transform_and_lower
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
torch.manual_seed(0)
layers = [nn.Conv2d(3, 64, 7, 2, 3), nn.ReLU()]
cin = 64
for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
    for i in range(4):
        layers += [nn.Conv2d(cin, cout, 3, stride if i == 0 else 1, 1), nn.ReLU()]
        cin = cout
m = nn.Sequential(*layers).eval()
x = (torch.randn(1, 3, 112, 112),)
prog = to_edge_transform_and_lower(export(m, x), partitioner=[XnnpackPartitioner()]).to_executorch()
open(sys.argv[1], "wb").write(prog.buffer)
flops = 0
h = w = 112
for l in layers:
    if isinstance(l, nn.Conv2d):
        h = (h + 2 * l.padding[0] - l.kernel_size[0]) // l.stride[0] + 1
        w = (w + 2 * l.padding[1] - l.kernel_size[1]) // l.stride[1] + 1
        flops += 2 * h * w * l.out_channels * l.in_channels * l.kernel_size[0] * l.kernel_size[1]
print(flops)
'''

WORKER = WORKER_PROLOGUE + r'''
m = rt.load_file(cfg["program"]).load_method("forward")
x = np.random.default_rng(0).standard_normal(cfg.get("shape", (256, 1024))).astype(np.float32)
m.set_input(0, x)
for _ in range(cfg["warmup"]):
    m.execute()
times, cpu = [], []
for _ in range(cfg["iterations"]):
    c0 = time.process_time(); t0 = time.perf_counter()
    m.execute()
    times.append(time.perf_counter() - t0); cpu.append(time.process_time() - c0)
rt.lib.pteron_parallel_threads.restype = ctypes.c_int32
print("RESULT " + json.dumps({"isa": isa, "median_s": statistics.median(times),
                              "min_s": min(times), "cpu_s": statistics.median(cpu),
                              "threads": rt.lib.pteron_parallel_threads()}))
'''


def cpu_info():
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    mhz = [float(v) for v in re.findall(r"^cpu MHz\s*:\s*([\d.]+)$", text, re.M)]
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    return {
        "model": model.group(1).strip() if model else "unknown",
        "ghz": (max(mhz) / 1000.0) if mhz else None,
        "cores": os.cpu_count() or 1,
        "flags": set(flags.group(1).split()) if flags else set(),
    }


def run_worker(build_dir: Path, program: Path, libs, env_extra, iterations, warmup=3,
               shape=(M, K)):
    cfg = {"build_dir": str(build_dir), "program": str(program), "libs": list(libs),
           "iterations": iterations, "warmup": warmup, "shape": list(shape)}
    return run_worker_script(WORKER, cfg, env_extra, 3600, f"{program.name} {list(libs)}")


def run_pteron_run(build_dir: Path, program: Path, iterations: int):
    exe = build_dir / ("pteron-run.exe" if sys.platform == "win32" else "pteron-run")
    if not exe.exists():
        return None
    x = program.parent / "input_256x1024.npy"
    if not x.exists():
        import numpy as np
        np.save(x, np.random.default_rng(0).standard_normal((M, K), dtype=np.float32))
    r = subprocess.run([str(exe), str(program), "--input", str(x), "--iterations", str(iterations)],
                       capture_output=True, text=True, timeout=3600)
    m = re.search(r"median time per execution:?\s*([\d.]+)\s*(ms|s|us)", r.stdout)
    if r.returncode != 0 or not m:
        return {"error": (r.stdout + r.stderr)[-500:]}
    v = float(m.group(1)) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[m.group(2)]
    return {"median_s": v}


def bench_xnnpack(bdir, levels, ghz, iterations, results, fc_x, mlp_x, resnet=None,
                  only_levels=None):
    print(f"XNNPACK FullyConnected [{M},{K}] x [{K},{N}] + bias ({GEMM_FLOP / 1e9:.3f} GFLOP) and "
          f"the XNNPACK-lowered MLP ({2 * GEMM_FLOP / 1e9:.3f} GFLOP):")
    print(f"  {'program':18s} {'kernel':22s} {'threads':>7s} {'wall ms':>8s} {'cpu ms':>8s} "
          f"{'GFLOP/s':>8s} {'GFLOP/cpu-s':>12s} {'% of core peak':>15s}")
    results["xnnpack"] = {}
    has_pool = (bdir / ("pteron_threadpool.dll" if sys.platform == "win32"
                        else "libpteron_threadpool.so")).exists()
    if only_levels:
        levels = [lvl for lvl in levels if lvl in only_levels]
    sides = [(f"pteron gemm {lvl}", {"PTERON_XNNPACK_USE_LIBRARY": "none", "PTERON_ISA": lvl},
              lvl) for lvl in levels] + [("XNNPACK library", {}, levels[-1])]
    progs = [(fc_x, GEMM_FLOP, (M, K)), (mlp_x, 2 * GEMM_FLOP, (M, K))]
    if resnet:
        progs.append((resnet[0], resnet[1], (1, 3, 112, 112)))
    for prog, flop, shape in progs:
        for label, env, lvl in sides:
            for threads in ((1, 2) if has_pool else (1,)):
                libs = ["kernels_portable", "kernels_optimized", "backend_xnnpack"]
                if has_pool:
                    libs.append("threadpool")
                e = dict(env, PTERON_NUM_THREADS=str(threads))
                r = run_worker(bdir, prog, libs, e, iterations, shape=shape)
                g = flop / r["median_s"] / 1e9
                peak = ghz * FLOPS_PER_CYCLE[lvl] * threads if ghz else float("nan")
                results["xnnpack"][f"{prog.stem} {label} {threads}t"] = {
                    "wall_ms": r["median_s"] * 1e3, "cpu_ms": r["cpu_s"] * 1e3,
                    "gflops_wall": g, "peak_gflops": peak}
                gc = flop / r["cpu_s"] / 1e9 if r["cpu_s"] > 0 else float("nan")
                results["xnnpack"][f"{prog.stem} {label} {threads}t"]["gflops_per_cpu_s"] = gc
                print(f"  {prog.stem:18s} {label:22s} {threads:7d} {r['median_s'] * 1e3:8.2f} "
                      f"{r['cpu_s'] * 1e3:8.2f} {g:8.1f} {gc:12.1f} {100 * g / peak:14.1f}%")
    print("  (GFLOP/s from wall time, % of the peak of the threads used at that ISA level;"
          " GFLOP/cpu-s per CPU-second of the process, all threads: what a busy machine does"
          " not inflate)")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", type=Path,
                    default=Path(os.environ.get("PTERON_BUILD_DIR", REPO / "build")))
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--exporter", default="/opt/pteron-dev/bin/python")
    ap.add_argument("--skip-portable", action="store_true",
                    help="skip the (slow) portable-kernel runs of the MLP")
    ap.add_argument("--ghz", type=float,
                    help="core clock for the peak (default: /proc/cpuinfo 'cpu MHz', which in a "
                         "VM is usually the nominal clock, not the turbo clock the core runs at)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--levels", nargs="*", help="only these ISA levels of pteron's GEMM")
    ap.add_argument("--resnet-convs", action="store_true",
                    help="also resnet18's 3x3 / 7x7 convolutions as one XNNPACK-lowered chain")
    ap.add_argument("--xnnpack-only", action="store_true",
                    help="only the XNNPACK-lowered programs (pteron's GEMM vs the library)")
    args = ap.parse_args()
    bdir = args.build_dir.resolve()
    out = bdir / "bench" / "gemm"
    out.mkdir(parents=True, exist_ok=True)
    addmm, mlp = out / "addmm1024.pte", out / "mlp1024.pte"
    fc_x, mlp_x = out / "fc1024_xnnpack.pte", out / "mlp1024_xnnpack.pte"
    if not all(p.exists() for p in (addmm, mlp, fc_x, mlp_x)):
        print(f"exporting the benchmark programs into {out} with {args.exporter} ...", flush=True)
        subprocess.run([args.exporter, "-c", EXPORT_SCRIPT, str(out)], check=True,
                       capture_output=True, timeout=1800)

    cpu = cpu_info()
    best = run_worker(bdir, addmm, ["kernels_portable", "kernels_optimized"], {}, 1, 0)["isa"]
    levels = LEVELS[: LEVELS.index(best) + 1]
    ghz = args.ghz or cpu["ghz"]
    src = "--ghz" if args.ghz else "/proc/cpuinfo 'cpu MHz', highest listed; turbo not counted"
    print(f"CPU: {cpu['model']}, {cpu['cores']} logical CPUs, {ghz} GHz ({src})")
    print(f"peak FP32 per core = GHz x FLOPs/cycle (baseline SSE {FLOPS_PER_CYCLE['baseline']}, "
          f"AVX2+FMA {FLOPS_PER_CYCLE['avx2']}, AVX-512 {FLOPS_PER_CYCLE['avx512']}: two FMA "
          f"units assumed); whole-chip peak = that x {cpu['cores']}")
    print()
    results = {"cpu": {k: v for k, v in cpu.items() if k != "flags"}, "addmm": {}, "mlp": {}}
    resnet = None
    if args.resnet_convs:
        rpath = out / "resnet18_convs_xnnpack.pte"
        flop_file = out / "resnet18_convs_xnnpack.flops"
        if not (rpath.exists() and flop_file.exists()):
            r = subprocess.run([args.exporter, "-c", RESNET_SCRIPT, str(rpath)], check=True,
                               capture_output=True, text=True, timeout=1800)
            flop_file.write_text(r.stdout.strip().splitlines()[-1] + "\n")
        resnet = (rpath, float(flop_file.read_text()))
    if args.xnnpack_only:
        bench_xnnpack(bdir, levels, ghz, args.iterations, results, fc_x, mlp_x, resnet,
                      args.levels)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
        return 0
    print(f"addmm [{M},{K}] x [{K},{N}] + bias, one thread ({GEMM_FLOP / 1e9:.3f} GFLOP per call):")
    print(f"  {'ISA':9s} {'wall ms':>8s} {'cpu ms':>8s} {'GFLOP/s':>8s} {'(by cpu)':>9s} "
          f"{'core peak':>10s} {'% of core':>10s} {'% of chip':>10s}")
    for level in levels:
        r = run_worker(bdir, addmm, ["kernels_portable", "kernels_optimized"],
                       {"PTERON_ISA": level}, args.iterations)
        assert r["isa"] == level and r["threads"] == 1
        gflops = GEMM_FLOP / r["median_s"] / 1e9
        gflops_cpu = GEMM_FLOP / r["cpu_s"] / 1e9 if r["cpu_s"] > 0 else float("nan")
        peak = ghz * FLOPS_PER_CYCLE[level] if ghz else float("nan")
        results["addmm"][level] = {"wall_ms": r["median_s"] * 1e3, "cpu_ms": r["cpu_s"] * 1e3,
                                   "gflops_wall": gflops, "gflops_cpu": gflops_cpu,
                                   "core_peak_gflops": peak}
        print(f"  {level:9s} {r['median_s'] * 1e3:8.2f} {r['cpu_s'] * 1e3:8.2f} {gflops:8.1f} "
              f"{gflops_cpu:9.1f} {peak:10.1f} {100 * gflops_cpu / peak:9.1f}% "
              f"{100 * gflops_cpu / (peak * cpu['cores']):9.1f}%")
    print("  (% of peak from the CPU-time figure: the process's own CPU time per execution,"
          " which a busy machine does not inflate)")
    print()
    bench_xnnpack(bdir, levels, ghz, args.iterations, results, fc_x, mlp_x, resnet)
    mlp_flop = 2 * GEMM_FLOP
    print(f"2 x Linear(1024) MLP, batch 256 (portable program: permute_copy + addmm per layer, relu; "
          f"{mlp_flop / 1e9:.3f} GFLOP):")
    rows = []
    for level in levels:
        r = run_worker(bdir, mlp, ["kernels_portable", "kernels_optimized"],
                       {"PTERON_ISA": level}, args.iterations)
        rows.append((f"optimized {level}, 1 thread", r))
    if (bdir / ("pteron_threadpool.dll" if sys.platform == "win32" else "libpteron_threadpool.so")).exists():
        r = run_worker(bdir, mlp, ["kernels_portable", "kernels_optimized", "threadpool"],
                       {"PTERON_NUM_THREADS": str(cpu["cores"])}, args.iterations)
        rows.append((f"optimized {r['isa']}, {r['threads']} threads", r))
    if not args.skip_portable:
        n = max(3, min(args.iterations, 20))
        r = run_worker(bdir, mlp, ["kernels_portable"], {}, n, 1)
        rows.append(("portable, 1 thread (ctypes)", r))
        pr = run_pteron_run(bdir, mlp, n)
        if pr and "median_s" in pr:
            rows.append((f"portable, pteron-run --iterations {n}", {"median_s": pr["median_s"]}))
    print(f"  {'kernels':38s} {'wall ms':>9s} {'cpu ms':>9s} {'GFLOP/s':>8s} "
          f"{'wall / 1.8 s':>13s} {'cpu / 1.8 s':>12s}")
    for label, r in rows:
        t, c = r["median_s"], r.get("cpu_s")
        results["mlp"][label] = {"wall_ms": t * 1e3, "cpu_ms": c * 1e3 if c else None,
                                 "ratio_wall_vs_upstream_portable": t / UPSTREAM_PORTABLE_S,
                                 "ratio_cpu_vs_upstream_portable":
                                     c / UPSTREAM_PORTABLE_S if c else None}
        cs = f"{c * 1e3:9.2f}" if c else f"{'-':>9s}"
        cr = f"{c / UPSTREAM_PORTABLE_S:12.4f}" if c else f"{'-':>12s}"
        print(f"  {label:38s} {t * 1e3:9.2f} {cs} {mlp_flop / t / 1e9:8.1f} "
              f"{t / UPSTREAM_PORTABLE_S:13.4f} {cr}")
    print("  (cpu ms: CPU time of the whole process per execution, all threads)")
    print(f"\n(goal: ratio <= 0.02, i.e. <= {UPSTREAM_PORTABLE_S * 0.02 * 1e3:.0f} ms per run)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
