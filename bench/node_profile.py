#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Where an XNNPACK-lowered program's time goes, per node type, pteron beside upstream.

    python3 bench/node_profile.py --stage DIR --python PYTHON [--runs 30] [--threads 2] PTE...
    python3 bench/node_profile.py --unlowered --pteron-build DIR --python PYTHON ... PORTABLE_PTE...

Both runtimes profile the same program with their ETDump machinery (pteron: Method.profiling,
one event per step of XnnpackBackend; upstream: `_load_for_executorch(enable_etdump=True)`, one
event per XNNPACK operator), in child processes of PYTHON (upstream's environment, e.g.
.venv-export/bin/python; --stage is a folder holding the package `pteron` with its extension,
of the same Python version). Each side runs 3 warm-up calls, then --runs profiled calls; the
order of the sides alternates per program. Node events are grouped by type (convolution,
depthwise, fully connected, element-wise, pooling, data movement, other) from the names each
runtime gives them, and each group's per-call time is the median over the runs. pteron fuses
nodes (a batch norm, an activation, a residual Add, an inverted residual's expansion into its
consumer), so a group can move time to another: compare the totals first, then the groups.

Prints a markdown table per program: group, pteron ms, upstream ms, ratio; the delegate call
and the whole execute last.

--unlowered: each PTE is a program exported without a partitioner (the zoo's *_portable.pte).
pteron runs it twice, with its graph passes off (PTERON_GRAPH_OPT=0: one event per kernel
call) and on (the NHWC regions' events per node), through the C API of the build in
--pteron-build (tests/capi.py); upstream runs the XNNPACK-lowered program of the same model
(the *_xnnpack.pte beside it). The table: group, pteron before, pteron after, upstream
lowered, after / upstream. Upstream's XNNPACK events come from XNNPACK's own per-operator
profile (microsecond resolution); pteron's from steady_clock around each step.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
side, pte, inp, runs, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
import numpy as np
x = np.load(inp)
out = []
if side == "capi":  # the C API of a build tree (--unlowered)
    sys.path.insert(0, sys.argv[6])
    import capi
    rt = capi.Runtime(sys.argv[7], kernel_libs=("kernels_portable", "kernels_optimized",
                                                "threadpool", "backend_xnnpack"))
    m = rt.load_file(pte).load_method("forward")
    for _ in range(3):
        m.run([x])
    m.set_profiling(True)
    m.profile_clear()
    for _ in range(runs):
        m.run([x])
    for e in m.profile_events():
        if e["run"] >= 0:
            out.append([e["run"], e["name"], e["debug_name"], e["end"] - e["start"]])
elif side == "pteron":
    import pteron
    pteron.set_num_threads(threads)
    m = pteron.Program.load(pte).load_method("forward")
    for _ in range(3):
        m(x)
    m.profiling = True
    for _ in range(runs):
        m(x)
    for e in m.profile():
        if e.run >= 0:
            out.append([e.run, e.name, e.delegate_debug_name, e.end_ns - e.start_ns])
else:
    import tempfile, torch
    from executorch.extension.pybindings import portable_lib as pl
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
    try:
        from executorch.extension.threadpool import _unsafe_reset_threadpool
        _unsafe_reset_threadpool(threads)
    except Exception:
        pass
    m = pl._load_for_executorch(pte, enable_etdump=True, debug_buffer_size=0)
    t = torch.from_numpy(x)
    for _ in range(3):
        m.run_method("forward", (t,))
    path = tempfile.mktemp(suffix=".etdp")
    m.write_etdump_result_to_file(path)  # drops the warm-up's events
    for _ in range(runs):
        m.run_method("forward", (t,))
    m.write_etdump_result_to_file(path)
    d = deserialize_from_etdump_flatcc(open(path, "rb").read())
    os_remove = __import__("os").remove
    os_remove(path)
    run = -1
    for block in d.run_data:
        if block.name != "Execute":
            continue
        run += 1
        for ev in block.events or []:
            p = ev.profile_event
            if p is not None:
                out.append([run, p.name, p.delegate_debug_id_str, p.end_time - p.start_time])
print("EVENTS" + json.dumps(out))
"""

# Node type groups, by the names each runtime gives its node events: XNNPACK's operators,
# pteron's delegate steps, and (--unlowered) kernel calls ("native_call_convolution.out") and
# the NHWC regions' nodes ("nhwc depthwise convolution").
GROUPS = [
    ("depthwise", r"DepthwiseConv2d|DWConv|depthwise"),
    ("convolution", r"Conv2d|ConvTranspose|Convolution|Deconvolution|convolution"),
    ("fully connected", r"FullyConnected|Fully Connected|BatchMatrixMultiply|Batch Matrix|"
                        r"addmm|^mm|bmm|linear"),
    ("batch norm", r"batch_norm"),
    ("pooling", r"Pool|Pooling|pool|^mean"),
    ("data movement", r"Transpose|Copy|Reshape|Concatenate|Slice|Pad|Convert|Split|Resize|"
                      r"layout|concatenation|shuffle|permute|cat\.|split|clone|copy|upsample"),
    ("element-wise", r"Add|Subtract|Multiply|Divide|Clamp|Hardswish|Sigmoid|Tanh|Gelu|Swish|"
                     r"Silu|Softmax|ReLU|Minimum|Maximum|Square|Negate|Abs|Exp|Log|ELU|Floor|"
                     r"Ceiling|Rsqrt|Root|^add|^mul|^div|^sub|relu|clamp|hardtanh|sigmoid|"
                     r"silu|hardswish|nhwc (add|multiply|clamp|activation|scalar)"),
]


def group(name: str) -> str:
    for g, pat in GROUPS:
        if re.search(pat, name):
            return g
    return "other"


def per_call(events, runs):
    """{group: [ms per run]}, plus 'delegate call' and 'execute'."""
    table = {}
    for run, name, dname, ns in events:
        if name in ("DELEGATE_CALL", "Method::execute"):
            key = "delegate call" if name == "DELEGATE_CALL" else "execute"
        elif name is None or name == "":
            key = group(dname or "")
        elif name.startswith("native_call_") and "pteron_nhwc_region" not in name:
            # A kernel call (the region's own event holds its nodes' events: not counted).
            key = group(name[len("native_call_"):])
        else:
            continue  # the runtime's own operator events
        table.setdefault(key, [0.0] * runs)[run] += ns / 1e6
    return table


def profile(args, side, pte, inp, extra_env=None):
    env = dict(os.environ, **(extra_env or {}))
    if side == "pteron":
        env["PYTHONPATH"] = str(args.stage)
    cmd = [args.python, "-c", CHILD, side, str(pte), str(inp), str(args.runs), str(args.threads)]
    if side == "capi":
        env["PTERON_NUM_THREADS"] = str(args.threads)
        cmd += [str(Path(__file__).resolve().parent.parent / "tests"), str(args.pteron_build)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"{side} on {pte}: failed\n{r.stderr[-3000:]}")
    line = next(x for x in r.stdout.splitlines() if x.startswith("EVENTS"))
    return per_call(json.loads(line[6:]), args.runs)


def cpu_model() -> str:
    """The model name, vendor, family and model, and the widest ISA the flags offer."""
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    except OSError:
        return platform.processor()
    flags = info.get("flags", "").split()
    isa = ("avx512f+vnni" if "avx512_vnni" in flags else "avx512f") if "avx512f" in flags \
        else "avx2" if "avx2" in flags else "sse4.2"
    return (f"{info.get('model name', '?')} ({info.get('vendor_id', '?')}, family "
            f"{info.get('cpu family', '?')} model {info.get('model', '?')}, {isa})")


def median_or_zero(xs):
    return statistics.median(xs) if xs else 0.0


def unlowered(args, i, pte):
    """One program's table: pteron before / after its graph passes, upstream lowered."""
    lowered = pte.with_name(pte.name.replace("_portable", "_xnnpack"))
    if lowered == pte or not lowered.exists():
        raise SystemExit(f"{pte}: no XNNPACK-lowered program beside it ({lowered.name})")
    inp = pte.with_name(pte.stem + ".forward.input_0.npy")
    inp_low = lowered.with_name(lowered.stem + ".forward.input_0.npy")
    runs = [("before", lambda: profile(args, "capi", pte, inp, {"PTERON_GRAPH_OPT": "0"})),
            ("after", lambda: profile(args, "capi", pte, inp, {"PTERON_GRAPH_OPT": "1"})),
            ("upstream", lambda: profile(args, "upstream", lowered, inp_low))]
    if i % 2:
        runs.reverse()
    res = {k: f() for k, f in runs}
    print(f"### {pte.stem}: pteron unlowered (graph passes off, on) and upstream lowered\n")
    print("| group | pteron, PTERON_GRAPH_OPT=0 ms | pteron ms | upstream lowered ms | "
          "pteron / upstream |")
    print("|---|---|---|---|---|")
    for k in [g for g, _ in GROUPS] + ["other", "execute"]:
        a, b, u = (median_or_zero(res[s].get(k)) for s in ("before", "after", "upstream"))
        if not (a or b or u):
            continue
        ratio = f"{b / u:.2f}" if b > 0 and u > 0 else "-"
        print(f"| {k} | {a:.3f} | {b:.3f} | {u:.3f} | {ratio} |")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", type=Path, help="folder holding the package `pteron`")
    ap.add_argument("--python", required=True)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--unlowered", action="store_true",
                    help="programs exported without a partitioner: pteron with its graph passes "
                         "off and on against upstream on the XNNPACK-lowered program")
    ap.add_argument("--pteron-build", type=Path, help="a build tree (--unlowered)")
    ap.add_argument("programs", nargs="+", type=Path)
    args = ap.parse_args()
    if args.unlowered and not args.pteron_build:
        ap.error("--unlowered needs --pteron-build")
    if not args.unlowered and not args.stage:
        ap.error("--stage is needed (or --unlowered with --pteron-build)")
    print(f"CPU: {cpu_model()}; threads {args.threads}; {args.runs} profiled calls per side; "
          f"PTERON_ISA={os.environ.get('PTERON_ISA', '(best)')}\n")
    for i, pte in enumerate(args.programs):
        if args.unlowered:
            unlowered(args, i, pte)
            continue
        inp = pte.with_name(pte.stem + ".forward.input_0.npy")
        order = ["pteron", "upstream"] if i % 2 == 0 else ["upstream", "pteron"]
        res = {side: profile(args, side, pte, inp) for side in order}
        print(f"### {pte.stem}\n")
        print("| group | pteron ms | upstream ms | ratio |")
        print("|---|---|---|---|")
        keys = [g for g, _ in GROUPS] + ["other", "delegate call", "execute"]
        for k in keys:
            a = res["pteron"].get(k)
            b = res["upstream"].get(k)
            if not a and not b:
                continue
            ma = statistics.median(a) if a else 0.0
            mb = statistics.median(b) if b else 0.0
            ratio = f"{ma / mb:.2f}" if mb > 0 and ma > 0 else "-"
            print(f"| {k} | {ma:.3f} | {mb:.3f} | {ratio} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
