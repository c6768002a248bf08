#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pteron against upstream ExecuTorch, side by side, in one command:

    python3 bench/run.py [--quick] [--only NAME ...] [--threads N ...] [--zoo NAME ... | --no-zoo]

1. builds what it needs: the project's tools (scripts/setup.sh), the pteron
   package through Conan (the repository's own Conan home, the offline profile
   profiles/linux-release) and pteron-bench against it, the exporter's virtual
   environment .venv-export (scripts/setup.sh pteron_install_export_venv: torch,
   executorch 1.5.1, torchvision, numpy; plus matplotlib for the chart) and
   peer-bench against the wheel's shared libraries;
2. exports the big programs on demand into bench/.programs (bench/programs.py)
   and the model zoo into its cache (models/zoo.py export: every model,
   portable and XNNPACK-lowered);
3. runs pteron-bench and peer-bench alternately on each program (the big ones,
   the zoo and models/fixtures), at 1 thread and at all cores, stdout and
   stderr of both going to a pipe;
4. writes bench/results/<date>.md, .json and .png (ratio chart).

A side that cannot run a program is reported as "not runnable: <its error>".
Every time is a median over several processes ("rounds") of several
executions each; spreads are min-max. Nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
BUILD = BENCH / ".build"
EXPORT_VENV = REPO / ".venv-export"
PROGRAMS = BENCH / ".programs"
FIXTURES = REPO / "models" / "fixtures"
RESULTS = BENCH / "results"


# ---------------------------------------------------------------- statistics

def median(xs):
    return statistics.median(xs) if xs else None


def spread(xs):
    return [min(xs), max(xs)] if xs else None


def side_summary(rounds):
    """rounds: list of {"times_ms": [...], "load_ms": x, "maxrss_kb": n}."""
    times = [t for r in rounds for t in r["times_ms"]]
    loads = [r["load_ms"] for r in rounds]
    return {
        "median_ms": median(times), "spread_ms": spread(times), "samples": len(times),
        "processes": len(rounds),
        "load_ms": median(loads), "load_spread_ms": spread(loads),
        "peak_rss_mb": max(r["maxrss_kb"] for r in rounds) / 1024.0 if rounds else None,
    }


def ratio_summary(pteron_rounds, peer_rounds):
    """pteron/peer from the pooled medians, and the min-max of the per-round
    ratios (round i of each side ran back to back)."""
    p = [t for r in pteron_rounds for t in r["times_ms"]]
    q = [t for r in peer_rounds for t in r["times_ms"]]
    if not p or not q:
        return None, None
    per_round = [median(a["times_ms"]) / median(b["times_ms"])
                 for a, b in zip(pteron_rounds, peer_rounds) if median(b["times_ms"]) > 0]
    return median(p) / median(q), spread(per_round)


SLOW_MS = 2000.0  # a probe slower than this: one execution per process, SLOW_ROUNDS rounds
SLOW_ROUNDS = 2


def plan_iterations(probe_ms, round_seconds):
    """(warm-up, timed) executions for one process given one probe execution.
    Executions slower than SLOW_MS (upstream's naive portable convolutions on
    the zoo take seconds to tens of seconds) get no warm-up and one timed
    execution per process."""
    if probe_ms > SLOW_MS:
        return 0, 1
    probe_ms = max(probe_ms, 1e-4)
    iters = int(round_seconds * 1000.0 / probe_ms)
    iters = max(2, min(iters, 2000))
    warmup = 1 if probe_ms > 100 else max(1, min(iters // 10, 50))
    return warmup, iters


def cpu_info():
    model, mhz, flags = platform.processor() or "unknown", None, set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            k, _, v = line.partition(":")
            k = k.strip()
            if k == "model name" and model in ("unknown", "", "x86_64"):
                model = v.strip()
            elif k == "cpu MHz" and mhz is None:
                mhz = float(v)
            elif k == "flags" and not flags:
                flags = set(v.split())
    except OSError:
        pass
    if {"avx512f"} <= flags:
        per_cycle, isa = 64, "AVX-512 (16 fp32 lanes x FMA x 2 units)"
    elif {"avx2", "fma"} <= flags:
        per_cycle, isa = 32, "AVX2+FMA (8 lanes x FMA x 2 units)"
    else:
        per_cycle, isa = 8, "SSE (4 lanes, separate multiply and add)"
    ghz = (mhz or 0) / 1000.0
    return {"model": model, "logical_cpus": os.cpu_count() or 1, "mhz": mhz, "isa": isa,
            "flops_per_cycle": per_cycle, "core_peak_gflops": ghz * per_cycle}


# ---------------------------------------------------------------- processes

def run(cmd, timeout, env=None, cwd=None, check=True, log=None):
    """Runs cmd with a timeout; returns (rc, stdout+stderr)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or ""), 124
        out += f"\n(timed out after {timeout} s)"
    if log:
        Path(log).write_text(out)
    if check and rc != 0:
        tail = "\n".join(out.splitlines()[-30:])
        raise SystemExit(f"bench/run.py: {' '.join(map(str, cmd))} failed (exit {rc}):\n{tail}")
    return rc, out


def measure(cmd, env, timeout):
    """Runs one benchmark process, stdout and stderr to pipes. Returns a dict
    with the BENCH_RESULT fields and maxrss_kb (wait4 of this child), or
    {"error": message}."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks = {"out": b"", "err": b""}

    def reader(stream, key):
        chunks[key] = stream.read()
    threads = [threading.Thread(target=reader, args=(p.stdout, "out")),
               threading.Thread(target=reader, args=(p.stderr, "err"))]
    for t in threads:
        t.start()
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    _, status, ru = os.wait4(p.pid, 0)
    timer.cancel()
    for t in threads:
        t.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    out = chunks["out"].decode(errors="replace")
    err = chunks["err"].decode(errors="replace")
    for line in out.splitlines():
        if line.startswith("BENCH_RESULT "):
            r = json.loads(line[len("BENCH_RESULT "):])
            # VmHWM from the child itself; wait4's ru_maxrss would include the
            # peak of this Python process, which Linux carries across exec.
            r["maxrss_kb"] = r.pop("peak_rss_kb", -1)
            return r
    if p.returncode < 0 or p.returncode == -9:
        return {"error": f"killed (signal {-p.returncode}) after at most {timeout} s"}
    return {"error": error_message(err, p.returncode)}


def error_message(stderr, rc):
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    main = [l for l in lines if re.match(r"^(pteron|peer)-bench: ", l)]
    detail = [re.sub(r"^E \S+ \S+\] ", "", l) for l in lines
              if l.startswith("E ") and re.search(r"Missing operator|not (found|registered)|"
                                                  r"[Bb]ackend", l)][:2]
    msg = "; ".join((main[-1:] or lines[-1:] or [f"exit {rc}"]) + detail)
    return msg.replace("pteron-bench: error: ", "").replace("peer-bench: error: ", "")


# ---------------------------------------------------------------- build

def build(args):
    jobs = str(min(2, os.cpu_count() or 1))
    t0 = time.time()
    print("==> tools (scripts/setup.sh)", flush=True)
    run(["bash", "-c", 'source scripts/setup.sh && pteron_install_apt "${_pteron_apt_packages[@]}" '
         '&& pteron_install_venv'], 1800, cwd=REPO)
    tools = REPO / ".venv" / "bin"
    env = dict(os.environ, PATH=f"{tools}:{os.environ['PATH']}", CONAN_HOME=str(REPO / ".conan2"))

    print("==> .venv-export (scripts/setup.sh pteron_install_export_venv) + matplotlib", flush=True)
    run(["bash", "-c", "source scripts/setup.sh && pteron_install_export_venv"], 1800, cwd=REPO)
    py = EXPORT_VENV / "bin" / "python"
    if run([str(py), "-c", "import matplotlib"], 300, check=False)[0]:
        run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "matplotlib"],
            1800)
    site = run([str(py), "-c", "import executorch, os; print(list(executorch.__path__)[0])"],
               300)[1].strip().splitlines()[-1]

    print("==> pteron package (conan, profiles/linux-release)", flush=True)
    BUILD.mkdir(parents=True, exist_ok=True)
    rc, out = run(["conan", "remote", "list"], 120, env=env, check=False)
    if re.search(r"conancenter.*Enabled: True", out):
        run(["conan", "remote", "disable", "conancenter"], 120, env=env)
    run(["conan", "export", "."], 600, env=env, cwd=REPO)
    version = (REPO / "VERSION").read_text().strip()
    deps = BUILD / "pteron-deps"
    base = ["conan", "install", f"--requires=pteron/{version}", "-pr:h", "profiles/linux-release",
            "-pr:b", "profiles/linux-release", "--build=missing", "-c", f"tools.build:jobs={jobs}",
            "-g", "CMakeDeps", "-g", "CMakeToolchain", "--output-folder", str(deps)]
    # The XNNPACK delegate when the recipe builds it; the plain package otherwise.
    rc, out = run(base + ["-o", "pteron/*:with_xnnpack=True"], 3600, env=env, cwd=REPO,
                  check=False, log=BUILD / "conan-install.log")
    xnnpack_option = rc == 0
    if rc != 0:
        if not re.search(r"Invalid|with_xnnpack", out):
            tail = "\n".join(out.splitlines()[-30:])
            raise SystemExit(f"bench/run.py: conan install failed (exit {rc}):\n{tail}")
        run(base, 3600, env=env, cwd=REPO, log=BUILD / "conan-install.log")

    print("==> pteron-bench and peer-bench (cmake)", flush=True)
    cm = str(tools / "cmake")
    run([cm, "-S", str(BENCH / "pteron"), "-B", str(BUILD / "pteron"), "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_TOOLCHAIN_FILE={deps / 'conan_toolchain.cmake'}"],
        600, env=env)
    run([cm, "--build", str(BUILD / "pteron"), "-j", jobs], 1200, env=env)
    run([cm, "-S", str(BENCH / "peer"), "-B", str(BUILD / "peer"), "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", f"-Dexecutorch_DIR={site}/share/cmake"], 600, env=env)
    run([cm, "--build", str(BUILD / "peer"), "-j", jobs], 1200, env=env)

    print("==> programs (bench/programs.py -> bench/.programs)", flush=True)
    run([str(py), str(BENCH / "programs.py"), str(PROGRAMS)], 3600)
    zoo = []
    if args.zoo is not None:
        print("==> the model zoo (models/zoo.py export, cached)", flush=True)
        which = args.zoo or ["--all"]
        _, out = run([str(py), str(REPO / "models" / "zoo.py"), "export", *which], 3 * 3600)
        zoo = [Path(line.split(maxsplit=1)[1]) for line in out.splitlines()
               if len(line.split(maxsplit=1)) == 2 and Path(line.split(maxsplit=1)[1]).is_dir()]
    print(f"    built in {time.time() - t0:.0f} s", flush=True)
    return {"zoo": zoo, "pteron": BUILD / "pteron" / "pteron-bench",
            "peer": BUILD / "peer" / "peer-bench",
            "xnnpack_option": xnnpack_option, "executorch_dir": site}


def library_sizes(binary, marker):
    """The shared libraries `binary` loads from its own package (path contains
    marker) and the others outside the C/C++ runtime, with sizes."""
    _, out = run(["ldd", str(binary)], 60)
    own, other = [], []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if not m or not os.path.exists(m.group(2)):
            continue
        path = os.path.realpath(m.group(2))
        name = m.group(1)
        if marker in m.group(2):
            own.append({"name": name, "bytes": os.path.getsize(path)})
        elif not re.match(r"lib(c|m|dl|pthread|rt|gcc_s|stdc\+\+)\.so", name):
            other.append({"name": name, "bytes": os.path.getsize(path), "path": m.group(2)})
    return {"libraries": own, "total_bytes": sum(l["bytes"] for l in own), "third_party": other}


# ---------------------------------------------------------------- programs

def zoo_programs(folders):
    """The zoo's programs, from each exported model's manifest (models/zoo.py)."""
    progs = []
    for folder in folders:
        for e in json.loads((folder / "manifest.json").read_text())["fixtures"]:
            m = e["methods"]["forward"]
            progs.append({"name": "zoo/" + e["name"], "pte": folder / e["file"],
                          "method": "forward", "inputs": [folder / i for i in m["inputs"]],
                          "flops": e.get("flops"),
                          "description": f"zoo: {e.get('family', '?')}, "
                                         f"{e.get('params', 0) / 1e6:.2f} M parameters",
                          "expected_out0": folder / m["expected"][0],
                          "size_bytes": e["size_bytes"]})
    return progs


def program_list(only, zoo_folders=()):
    progs = []
    # bench/programs.py writes the same manifest format as models/export.py.
    index = {e["name"]: e for e in json.loads((PROGRAMS / "manifest.json").read_text())["fixtures"]}
    for name in ["mlp1024_portable", "mlp1024_xnnpack", "mobilenet_portable", "mobilenet_xnnpack"]:
        e = index[name]
        progs.append({"name": name, "pte": PROGRAMS / e["file"], "method": "forward",
                      "inputs": [PROGRAMS / f for f in e["methods"]["forward"]["inputs"]],
                      "flops": e["flops"],
                      "description": e["description"], "eager_out0_sum": e["eager_out0_sum"],
                      "size_bytes": e["size_bytes"]})
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    for f in manifest["fixtures"]:
        for mname, m in f["methods"].items():
            name = f["name"] if mname == "forward" else f"{f['name']}.{mname}"
            progs.append({"name": name, "pte": FIXTURES / f["file"], "method": mname,
                          "inputs": [FIXTURES / i for i in m["inputs"]], "flops": None,
                          "description": "fixture: " + f["proves"],
                          "expected_out0": FIXTURES / m["expected"][0],
                          "size_bytes": f["size_bytes"]})
    progs += zoo_programs(zoo_folders)
    if only:
        progs = [p for p in progs if p["name"] in only]
    return progs


def bench_program(prog, threads, bins, round_seconds, rounds, timeout):
    """Alternates pteron and peer processes on one program at one thread count."""
    res = {}
    common = [str(prog["pte"]), "--method", prog["method"]]
    for i in prog["inputs"]:
        common += ["--input", str(i)]
    envs = {"pteron": dict(os.environ, PTERON_NUM_THREADS=str(threads)), "peer": dict(os.environ)}
    plans = {}
    for side in ("pteron", "peer"):
        r = measure([str(bins[side]), *common, "--warmup", "0", "--iterations", "1",
                     "--threads", str(threads)], envs[side], timeout)
        if "error" in r:
            res[side] = {"error": r["error"]}
        else:
            # Programs far below a millisecond get a third of the budget.
            budget = round_seconds if r["times_ms"][0] >= 1.0 else round_seconds / 3
            plans[side] = plan_iterations(r["times_ms"][0], budget)
            res[side] = {"rounds": [], "probe_ms": r["times_ms"][0], "threads_reported": r["threads"],
                         "out0_sum": r["out0_sum"], "out0_numel": r["out0_numel"],
                         "warmup": plans[side][0], "iterations": plans[side][1]}
    slow = any(res[s].get("probe_ms", 0) > SLOW_MS for s in plans)
    for _ in range(min(rounds, SLOW_ROUNDS) if slow else rounds):
        for side in ("pteron", "peer"):
            if side not in plans:
                continue
            w, n = plans[side]
            r = measure([str(bins[side]), *common, "--warmup", str(w), "--iterations", str(n),
                         "--threads", str(threads)], envs[side], timeout)
            if "error" in r:
                res[side] = {"error": "failed in a timed round: " + r["error"]}
                plans.pop(side)
                continue
            res[side]["rounds"].append(r)
    for side in ("pteron", "peer"):
        if "rounds" in res[side]:
            res[side].update(side_summary(res[side]["rounds"]))
    if "rounds" in res["pteron"] and "rounds" in res["peer"]:
        res["ratio"], res["ratio_spread"] = ratio_summary(res["pteron"]["rounds"],
                                                          res["peer"]["rounds"])
    return res


def out0_reference(prog):
    if "eager_out0_sum" in prog:
        return prog["eager_out0_sum"]
    try:
        import numpy as np
        return float(np.load(prog["expected_out0"]).astype("float64").sum())
    except Exception:  # noqa: BLE001  (numpy absent, or a non-numeric output)
        return None


def agrees(value, ref, numel):
    if value is None or ref is None:
        return None
    return abs(value - ref) <= 1e-3 * max(1.0, abs(ref)) + 1e-4 * max(1, numel or 1)


# ---------------------------------------------------------------- report

def fmt_ms(x):
    if x is None:
        return "-"
    return f"{x:.4g}" if x < 1000 else f"{x:.0f}"


def write_report(data, stamp):
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stamp}.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    cpu = data["cpu"]
    L = []
    L.append(f"# pteron vs upstream ExecuTorch 1.5.1, {data['date']}")
    L.append("")
    L.append(f"Command: `{data['command']}` (on {data['host']['os']}; built in this run).")
    L.append(f"CPU: {cpu['model']}, {cpu['logical_cpus']} logical CPUs, `cpu MHz` {cpu['mhz']}, "
             f"{cpu['isa']}.")
    L.append(f"Load: loadavg {data['load']['start']} at start, {data['load']['end']} at the end "
             f"(1/5/15 min); {data['load']['note']}")
    L.append("")
    L.append("Method: each program runs in separate processes, pteron-bench and peer-bench "
             "alternately (a probe execution each, then "
             f"{data['settings']['rounds']} rounds of warm-up + timed executions per side, "
             f"about {data['settings']['round_seconds']} s of timed work per process for slow "
             "programs). stdout and stderr of both sides go to a pipe. Times are medians of all "
             "timed executions (min-max in brackets); the ratio is pteron/peer of those medians, "
             "with the min-max of the per-round ratios; below 1 means pteron is faster. "
             "Load = program load + method load (delegate init), in process. Peak RSS is each "
             "process's VmHWM (max over its processes). Inputs are set before every "
             "execution, outside the timed region, on both sides. `out0` says whether each "
             "side's first output sums to the eager PyTorch value.")
    L.append("")
    L.append("| program | threads | pteron ms | upstream (peer) ms | ratio pteron/peer | "
             "pteron load ms | peer load ms | pteron RSS MB | peer RSS MB | out0 pteron/peer |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for row in data["rows"]:
        p, q = row["pteron"], row["peer"]

        def cell(s):
            if "error" in s:
                return f"not runnable: {s['error']}"
            return f"{fmt_ms(s['median_ms'])} [{fmt_ms(s['spread_ms'][0])}-{fmt_ms(s['spread_ms'][1])}] " \
                   f"(n={s['samples']})"
        ratio = "-"
        if row.get("ratio") is not None:
            rs = row["ratio_spread"]
            ratio = f"**{row['ratio']:.3g}** [{rs[0]:.3g}-{rs[1]:.3g}]" if rs else f"{row['ratio']:.3g}"
        ok = "/".join({True: "ok", False: "DIFF", None: "-"}[row["out0_ok"][s]]
                      for s in ("pteron", "peer"))
        L.append(f"| {row['name']} | {row['threads']} | {cell(p)} | {cell(q)} | {ratio} | "
                 f"{fmt_ms(p.get('load_ms'))} | {fmt_ms(q.get('load_ms'))} | "
                 f"{p.get('peak_rss_mb') and round(p['peak_rss_mb'], 1) or '-'} | "
                 f"{q.get('peak_rss_mb') and round(q['peak_rss_mb'], 1) or '-'} | {ok} |")
    L += zoo_table(data["rows"])
    L.append("")
    L.append("## GFLOP/s of the GEMM-heavy programs")
    L.append("")
    L.append(f"Peak = `cpu MHz` x {cpu['flops_per_cycle']} fp32 FLOP/cycle/core ({cpu['isa']}) x "
             f"threads = {cpu['core_peak_gflops']:.1f} GFLOP/s per core. FLOPs = 2 x the "
             "multiply-accumulates of every convolution and linear layer. A VM's `cpu MHz` may "
             "be below the clock the core really runs at (bench/gemm measured about 2.96 GHz "
             "here), so the true peak may be up to ~30 % higher than this figure.")
    L.append("")
    L.append("| program | threads | GFLOP | pteron GFLOP/s | % of peak | peer GFLOP/s | % of peak |")
    L.append("|---|---|---|---|---|---|---|")
    for row in data["rows"]:
        if not row.get("flops"):
            continue
        peak = cpu["core_peak_gflops"] * row["threads"]
        cells = []
        for s in ("pteron", "peer"):
            g = row[s].get("gflops")
            cells += [f"{g:.1f}" if g else "-", f"{100 * g / peak:.1f} %" if g and peak else "-"]
        L.append(f"| {row['name']} | {row['threads']} | {row['flops'] / 1e9:.3f} | " + " | ".join(cells) + " |")
    L.append("")
    L.append("## Shared libraries on disk")
    L.append("")
    for side, label in (("pteron", "pteron (Conan package)"), ("peer", "upstream (executorch wheel)")):
        ls = data["libraries"][side]
        names = ", ".join(f"{l['name']} {l['bytes'] / 1e6:.2f} MB" for l in ls["libraries"])
        L.append(f"- {label}: **{ls['total_bytes'] / 1e6:.2f} MB** ({names})")
        if ls["third_party"]:
            L.append("  - plus system libraries it loads: " + ", ".join(
                f"{l['name']} {l['bytes'] / 1e6:.2f} MB" for l in ls["third_party"]))
    L.append("")
    L.append("Chart: `" + f"{stamp}.png" + "` (ratio pteron/peer per program; below 1 = pteron faster).")
    if data.get("notes"):
        L.append("")
        L.append("## Notes")
        L.append("")
        L += [f"- {n}" for n in data["notes"]]
    (RESULTS / f"{stamp}.md").write_text("\n".join(L) + "\n")
    # matplotlib lives in .venv-export; the chart is drawn there.
    rc, out = run([str(EXPORT_VENV / "bin" / "python"), str(Path(__file__).resolve()), "--chart",
                   str(RESULTS / f"{stamp}.json"), str(RESULTS / f"{stamp}.png")], 300, check=False)
    if rc:
        print(f"bench/run.py: no chart: {out[-500:]}", file=sys.stderr)


def zoo_table(rows):
    """The zoo at a glance: one line per model, the ratio per variant and thread count."""
    zoo = {}
    for row in rows:
        if not row["name"].startswith("zoo/"):
            continue
        model, _, variant = row["name"][4:].rpartition("_")
        zoo.setdefault(model, {})[(variant, row["threads"])] = row
    if not zoo:
        return []
    keys = sorted({k for v in zoo.values() for k in v}, key=lambda k: (k[0] != "portable", k))
    L = ["", "## The model zoo at a glance", "",
         "Ratio pteron/upstream (median, [min-max of per-round ratios]) per variant and thread "
         "count; the portable programs run on pteron's kernels_portable + kernels_optimized and "
         "on upstream's optimized + portable kernel libraries.", "",
         "| model | " + " | ".join(f"{v} {t}t" for v, t in keys) + " |",
         "|---|" + "---|" * len(keys)]
    for model in sorted(zoo):
        cells = []
        for k in keys:
            r = zoo[model].get(k)
            if r is None or r.get("ratio") is None:
                err = r and (r["pteron"].get("error") or r["peer"].get("error"))
                cells.append("not runnable" if err else "-")
            else:
                rs = r.get("ratio_spread") or (r["ratio"], r["ratio"])
                cells.append(f"{r['ratio']:.3g} [{rs[0]:.3g}-{rs[1]:.3g}]")
        L.append(f"| {model} | " + " | ".join(cells) + " |")
    return L


def summary_table(data):
    """The README's table: the big programs, both thread counts."""
    L = ["| program | threads | pteron ms | upstream ms | ratio pteron/upstream [min-max] |",
         "|---|---|---|---|---|"]
    for row in data["rows"]:
        if not row.get("flops"):
            continue
        cells = []
        for s in ("pteron", "peer"):
            x = row[s]
            cells.append("not runnable" if "error" in x else fmt_ms(x["median_ms"]))
        rs = row.get("ratio_spread")
        ratio = f"{row['ratio']:.3g} [{rs[0]:.3g}-{rs[1]:.3g}]" if row.get("ratio") else "-"
        L.append(f"| {row['name']} | {row['threads']} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(L)


def chart(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in data["rows"] if r.get("ratio")]
    labels = [f"{r['name']} ({r['threads']}t)" for r in rows]
    vals = [r["ratio"] for r in rows]
    # The pooled median need not lie inside the per-round range: clip at 0.
    lo = [max(0.0, r["ratio"] - r["ratio_spread"][0]) for r in rows]
    hi = [max(0.0, r["ratio_spread"][1] - r["ratio"]) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.5))
    y = range(len(rows))
    ax.barh(list(y), vals, xerr=[lo, hi], color=["tab:green" if v < 1 else "tab:red" for v in vals])
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlabel("time ratio pteron / upstream ExecuTorch (log; < 1: pteron faster)")
    ax.set_title(f"pteron vs ExecuTorch 1.5.1, {data['date']}, {data['cpu']['model']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def thread_notes(rows):
    """A note for every program a side ran over 1.5x slower with more threads."""
    notes = []
    by_name = {}
    for row in rows:
        by_name.setdefault(row["name"], {})[row["threads"]] = row
    for side, label in (("pteron", "pteron"), ("peer", "upstream")):
        for name, per in by_name.items():
            one = per.get(1, {}).get(side, {}).get("median_ms")
            for th, row in per.items():
                m = row[side].get("median_ms")
                if th > 1 and one and m and m > 1.5 * one and m > 0.05:
                    other = "peer" if side == "pteron" else "pteron"
                    o1 = per[1][other].get("median_ms")
                    ot = row[other].get("median_ms")
                    same = (f"; {'upstream' if other == 'peer' else 'pteron'} in the same rounds: "
                            f"{ot / o1:.2g}x" if o1 and ot else "")
                    notes.append(f"{label} ran {name} {m / one:.1f}x slower at {th} threads than "
                                 f"at 1 ({fmt_ms(m)} ms vs {fmt_ms(one)} ms{same}). Likely cause, "
                                 "not proven here: with other work on the cores, each parallel "
                                 "section waits for a descheduled pool thread.")
    return notes


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short rounds (development; not for results)")
    ap.add_argument("--only", nargs="*", help="program names (see bench/results/*.json)")
    ap.add_argument("--threads", nargs="*", type=int, help="thread counts (default: 1 and all CPUs)")
    ap.add_argument("--rounds", type=int, help="processes per side and program (default 3)")
    ap.add_argument("--round-seconds", type=float, help="timed work per process (default 1.5)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per benchmark process")
    zg = ap.add_mutually_exclusive_group()
    zg.add_argument("--zoo", nargs="*", default=[], metavar="NAME",
                    help="zoo models to export and measure (default: all of models/zoo.py)")
    zg.add_argument("--no-zoo", dest="zoo", action="store_const", const=None,
                    help="leave the zoo out")
    ap.add_argument("--tag", default="", help="suffix for the results file names")
    ap.add_argument("--chart", nargs=2, metavar=("JSON", "PNG"), help=argparse.SUPPRESS)
    ap.add_argument("--summary", metavar="JSON", help="print the README table of a results file")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary_table(json.loads(Path(args.summary).read_text())))
        return 0
    if args.chart:
        chart(json.loads(Path(args.chart[0]).read_text()), Path(args.chart[1]))
        return 0
    rounds = args.rounds or (2 if args.quick else 3)
    round_seconds = args.round_seconds or (0.2 if args.quick else 1.5)
    ncpu = os.cpu_count() or 1
    thread_counts = args.threads or sorted({1, ncpu})

    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    bins = build(args)
    cpu = cpu_info()
    rows = []
    t0 = time.time()
    for prog in program_list(args.only, bins["zoo"]):
        ref = out0_reference(prog)
        for th in thread_counts:
            r = bench_program(prog, th, bins, round_seconds, rounds, args.timeout)
            row = {"name": prog["name"], "threads": th, "flops": prog["flops"],
                   "description": prog["description"], "size_bytes": prog["size_bytes"], **r}
            row["out0_ok"] = {s: agrees(r[s].get("out0_sum"), ref, r[s].get("out0_numel"))
                              if "error" not in r[s] else None for s in ("pteron", "peer")}
            for s in ("pteron", "peer"):
                # The JSON keeps each process's summary, not every execution time.
                for rr in r[s].get("rounds", []):
                    rr.pop("runner", None)
                    t = rr.pop("times_ms")
                    rr.update(n=len(t), median_ms=median(t), min_ms=min(t), max_ms=max(t))
                if prog["flops"] and r[s].get("median_ms"):
                    r[s]["gflops"] = prog["flops"] / (r[s]["median_ms"] * 1e6)
            rows.append(row)
            p, q = r["pteron"], r["peer"]
            print(f"{prog['name']:>22} {th}t  pteron "
                  f"{fmt_ms(p.get('median_ms')) if 'error' not in p else 'not runnable'} ms  peer "
                  f"{fmt_ms(q.get('median_ms')) if 'error' not in q else 'not runnable'} ms  ratio "
                  f"{'%.3g' % r['ratio'] if r.get('ratio') else '-'}", flush=True)
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now()
    stamp = now.strftime("%Y-%m-%d") + (f"-{args.tag}" if args.tag else "")
    cmd = "python3 bench/run.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])
                                    if (argv if argv is not None else sys.argv[1:]) else "")
    notes = []
    if not bins["xnnpack_option"]:
        notes.append("The pteron package was built without the XNNPACK delegate (the recipe "
                     "refused with_xnnpack=True), so pteron cannot run the XNNPACK-lowered "
                     "programs yet.")
    notes += thread_notes(rows)
    data = {
        "date": now.strftime("%Y-%m-%d %H:%M"), "command": cmd,
        "host": {"os": platform.platform(), "python": platform.python_version()},
        "cpu": cpu,
        "load": {"start": load_start, "end": load_end,
                 "note": "the machine is shared; a load above the CPU count means other work "
                         "competed for the cores during the measurement."},
        "settings": {"rounds": rounds, "round_seconds": round_seconds, "threads": thread_counts,
                     "quick": args.quick, "seconds_measuring": round(time.time() - t0)},
        "versions": {"executorch": "1.5.1", "torch": "2.13.0",
                     "pteron": (REPO / "VERSION").read_text().strip(),
                     "pteron_commit": run(["git", "rev-parse", "--short", "HEAD"], 30, cwd=REPO,
                                          check=False)[1].strip()},
        "libraries": {"pteron": library_sizes(bins["pteron"], ".conan2"),
                      "peer": library_sizes(bins["peer"], "executorch")},
        "rows": rows, "notes": notes,
    }
    write_report(data, stamp)
    print(f"pteron: benchmark written to bench/results/{stamp}.md (.json, .png)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
