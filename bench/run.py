#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pteron against upstream ExecuTorch, side by side, in one command:

    python3 bench/run.py [--quick] [--only NAME ...] [--threads N ...] [--zoo NAME ... | --no-zoo]
                         [--contention N] [--xnnpack-library SETTING ...] [--no-wine]

1. builds what it needs: the project's tools (scripts/setup.sh), the pteron
   package through Conan (the repository's own Conan home, the offline profile
   profiles/linux-release) and pteron-bench against it (or, with
   --pteron-build DIR, pteron-bench against a CMake build tree), the
   exporter's virtual environment .venv-export (scripts/setup.sh
   pteron_install_export_venv; --export-python names another one) and
   peer-bench against the wheel's shared libraries;
2. exports the big programs on demand into bench/.programs (bench/programs.py)
   and the model zoo into its cache (models/zoo.py export; its XNNPACK-lowered
   programs unless --zoo-variants says otherwise);
3. runs pteron-bench and peer-bench alternately on each program, at 1 thread
   and at all cores, then the XNNPACK programs again at 2 threads with
   --contention busy processes (default 2) started before and stopped after
   (always: also on an error or Ctrl-C); stdout and stderr of both sides go to
   a pipe;
4. runs the MinGW build's pteron-run.exe under Wine on the XNNPACK programs
   (a separate section: not comparable to native times), when a MinGW build
   with the delegate DLL exists;
5. writes bench/results/<date>.md, .json and .png (ratio chart).

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
import signal
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
        # The mean shows what a median hides: a few executions that waited
        # milliseconds for a descheduled thread (the contention run).
        "mean_ms": statistics.fmean(times) if times else None,
        "processes": len(rounds),
        "load_ms": median(loads), "load_spread_ms": spread(loads),
        "peak_rss_mb": max(r["maxrss_kb"] for r in rounds) / 1024.0 if rounds else None,
    }


def ratio_summary(pteron_rounds, peer_rounds):
    """pteron/peer as the median of the per-round ratios (round i of each side ran back to back:
    a paired comparison), with their min-max. Why not the ratio of the pooled medians: on a
    shared VM whose speed drifts by up to 1.5x from one round to the next, the pooled samples
    mix the fast and slow phases unevenly between the sides (2026-12-05-emr-2: resnet18 at 1
    thread pooled 1.08 while every round's ratio lay in 0.865-1.04); pooled_ratio() keeps it."""
    per_round = [median(a["times_ms"]) / median(b["times_ms"])
                 for a, b in zip(pteron_rounds, peer_rounds)
                 if a["times_ms"] and b["times_ms"] and median(b["times_ms"]) > 0]
    if not per_round:
        return None, None
    return median(per_round), spread(per_round)


def pooled_ratio(pteron_rounds, peer_rounds):
    """pteron/peer of the medians of all timed executions of each side (the results' median
    columns), or None."""
    p = [t for r in pteron_rounds for t in r["times_ms"]]
    q = [t for r in peer_rounds for t in r["times_ms"]]
    return median(p) / median(q) if p and q and median(q) > 0 else None


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


def fma_units(vendor, family, model, flags):
    """(FMA units per core, why): the number of vector FMA pipes assumed for
    the peak, in units of the widest vector the CPU has (the lanes the peak
    counts). From the vendors' optimisation guides: AMD Zen 2/3/4 (family 0x17
    model >= 0x30, 0x19) have two 256-bit FMA pipes, so Zen 4's AVX-512 is one
    512-bit unit (double-pumped); Zen 5 server and desktop cores (family 0x1A)
    have two 512-bit pipes; Zen 1 two 128-bit ones (counted as one 256-bit
    unit); Intel cores since Haswell have two 256-bit FMA ports, and Xeons with
    AVX-512 one or two 512-bit units (two assumed: the Gold 6xxx / Platinum
    parts these machines have)."""
    if vendor == "AuthenticAMD":
        if family == 0x17 and model < 0x30:
            return 1, "AMD Zen 1: two 128-bit FMA pipes = one 256-bit unit"
        if "avx512f" in flags and family == 0x19:
            return 1, "AMD Zen 4: two 256-bit FMA pipes = one 512-bit unit"
        if "avx512f" in flags and family >= 0x1A:
            return 2, f"AMD family {family:#x} (Zen 5): two 512-bit FMA pipes"
        return 2, f"AMD family {family:#x} (Zen 2 or later): two 256-bit FMA pipes"
    if "avx512f" in flags:
        return 2, "Intel with AVX-512: two 512-bit FMA units assumed"
    return 2, "Intel (Haswell or later): two 256-bit FMA ports"


def cpu_info():
    """The CPU model, its ISA, the ISA paths pteron can and cannot run here,
    and the fp32 peak per core = lanes x FMA units x 2 (multiply + add) x MHz,
    with `cpu MHz` from /proc/cpuinfo (a VM may show less than the clock the
    core really runs at)."""
    model, mhz, flags = platform.processor() or "unknown", None, set()
    vendor, family, cpu_model = "", 0, 0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            k, _, v = line.partition(":")
            k, v = k.strip(), v.strip()
            if k == "model name" and model in ("unknown", "", "x86_64"):
                model = v
            elif k == "cpu MHz" and mhz is None:
                mhz = float(v)
            elif k == "flags" and not flags:
                flags = set(v.split())
            elif k == "vendor_id" and not vendor:
                vendor = v
            elif k == "cpu family" and not family:
                family = int(v)
            elif k == "model" and not cpu_model:
                cpu_model = int(v)
    except (OSError, ValueError):
        pass
    avx512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
    avx2 = {"avx2", "fma"} <= flags
    units, units_why = fma_units(vendor, family, cpu_model, flags)
    if avx512:
        lanes, fma, isa = 16, True, "AVX-512 F/BW/DQ/VL + AVX2 + FMA"
    elif avx2:
        lanes, fma, isa = 8, True, "AVX2 + FMA, no AVX-512"
    else:
        lanes, fma, isa = 4, False, "SSE only (no AVX2/FMA)"
    per_cycle = lanes * units * 2 if fma else lanes * 2
    # pteron's ISA paths (pteron/kernels_optimized.h: PTERON_ISA=baseline|avx2|avx512).
    paths = {"baseline": True, "avx2": avx2, "avx512": avx512}
    ghz = (mhz or 0) / 1000.0
    return {"model": model, "vendor": vendor, "family": family, "cpu_model": cpu_model,
            "logical_cpus": os.cpu_count() or 1, "mhz": mhz, "isa": isa,
            "isa_paths_runnable": [k for k, ok in paths.items() if ok],
            "isa_paths_not_runnable": [k for k, ok in paths.items() if not ok],
            "flops_per_cycle": per_cycle,
            "peak_assumptions": f"{lanes} fp32 lanes x {units if fma else 1} FMA unit(s) x 2 "
                                f"FLOP ({units_why if fma else 'separate multiply and add'}) "
                                f"x `cpu MHz` {mhz}",
            "core_peak_gflops": ghz * per_cycle}


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


class BusyProcesses:
    """`n` processes that only burn CPU (`yes > /dev/null`, or a Python loop
    where `yes` is missing), started on entry and stopped on exit, whatever
    the exit: an exception, Ctrl-C (KeyboardInterrupt) or SIGTERM (turned into
    SystemExit by main()). Each is its own process group, killed as a group."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        yes = shutil.which("yes")
        cmd = [yes] if yes else [sys.executable, "-c", "while True: pass"]
        try:
            for _ in range(self.n):
                self.procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL,
                                                   stdin=subprocess.DEVNULL,
                                                   start_new_session=True))
        except BaseException:
            self.stop()
            raise
        time.sleep(0.2)  # let them reach the scheduler's steady state
        return self

    def stop(self):
        for pr in self.procs:
            if pr.poll() is None:
                try:
                    os.killpg(pr.pid, 9)
                except (ProcessLookupError, PermissionError):
                    pr.kill()
        for pr in self.procs:
            try:
                pr.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []

    def __exit__(self, *exc):
        self.stop()
        return False


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

    if args.export_python:
        py = Path(args.export_python)
        print(f"==> exporter: {py} (--export-python)", flush=True)
    else:
        print("==> .venv-export (scripts/setup.sh pteron_install_export_venv) + matplotlib",
              flush=True)
        run(["bash", "-c", "source scripts/setup.sh && pteron_install_export_venv"], 1800, cwd=REPO)
        py = EXPORT_VENV / "bin" / "python"
    if not args.export_python and run([str(py), "-c", "import matplotlib"], 300, check=False)[0]:
        run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "matplotlib"],
            1800)
    site = run([str(py), "-c", "import executorch, os; print(list(executorch.__path__)[0])"],
               300)[1].strip().splitlines()[-1]

    BUILD.mkdir(parents=True, exist_ok=True)
    if args.pteron_build:
        pteron_bin, xnnpack_option = build_against_tree(Path(args.pteron_build).resolve())
    else:
        pteron_bin, xnnpack_option = build_package(env, tools, jobs)
    cm = str(tools / "cmake")
    run([cm, "-S", str(BENCH / "peer"), "-B", str(BUILD / "peer"), "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", f"-Dexecutorch_DIR={site}/share/cmake"], 600, env=env)
    run([cm, "--build", str(BUILD / "peer"), "-j", jobs], 1200, env=env)

    print("==> programs (bench/programs.py -> bench/.programs)", flush=True)
    run([str(py), str(BENCH / "programs.py"), str(PROGRAMS)], 3600)
    zoo = []
    if args.zoo is not None and args.zoo_dir:
        root = Path(args.zoo_dir)
        print(f"==> the model zoo, already exported in {root} (--zoo-dir)", flush=True)
        zoo = sorted(d for d in root.iterdir() if (d / "manifest.json").exists()
                     and (not args.zoo or d.name in args.zoo))
        missing = sorted(set(args.zoo) - {d.name for d in zoo})
        if missing:
            raise SystemExit(f"bench/run.py: {root} has no exported {', '.join(missing)}")
    elif args.zoo is not None:
        print("==> the model zoo (models/zoo.py export, cached)", flush=True)
        which = args.zoo or ["--all"]
        _, out = run([str(py), str(REPO / "models" / "zoo.py"), "export", *which], 3 * 3600)
        zoo = [Path(line.split(maxsplit=1)[1]) for line in out.splitlines()
               if len(line.split(maxsplit=1)) == 2 and Path(line.split(maxsplit=1)[1]).is_dir()]
    print(f"    built in {time.time() - t0:.0f} s", flush=True)
    return {"zoo": zoo, "pteron": pteron_bin, "peer": BUILD / "peer" / "peer-bench",
            "xnnpack_option": xnnpack_option, "executorch_dir": site, "python": py}


def build_against_tree(tree):
    """pteron-bench compiled against a CMake build tree of pteron (--pteron-build;
    for development: the Conan package is what users get). Returns (binary,
    whether the tree has the XNNPACK delegate)."""
    print(f"==> pteron-bench against the build tree {tree} (--pteron-build)", flush=True)
    if not (tree / "libpteron.so").exists():
        raise SystemExit(f"bench/run.py: {tree} has no libpteron.so: build it first")
    libs = ["kernels_portable", "kernels_optimized", "threadpool"]
    if (tree / "libpteron_kernels_quantized.so").exists():
        libs.append("kernels_quantized")
    has_xnnpack = (tree / "libpteron_backend_xnnpack.so").exists()
    if has_xnnpack:
        libs.append("backend_xnnpack")
    out = BUILD / "pteron-tree" / "pteron-bench"
    out.parent.mkdir(parents=True, exist_ok=True)
    cxx = os.environ.get("CXX") or "g++"
    run([cxx, "-std=c++17", "-O2", "-I", str(REPO / "include"), str(BENCH / "pteron" /
         "pteron_bench.cpp"), "-o", str(out), f"-L{tree}", "-Wl,--push-state,--no-as-needed",
         *[f"-lpteron_{x}" for x in libs], "-Wl,--pop-state", "-lpteron", f"-Wl,-rpath,{tree}",
         "-pthread"], 600)
    return out, has_xnnpack


def build_package(env, tools, jobs):
    """The pteron Conan package and pteron-bench against it. Returns (binary,
    whether the package has the XNNPACK delegate)."""
    print("==> pteron package (conan, profiles/linux-release)", flush=True)
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
    return BUILD / "pteron" / "pteron-bench", xnnpack_option


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
                          "quantized": e.get("family") == "quantized",
                          "size_bytes": e["size_bytes"]})
    return progs


def program_list(only, zoo_folders=(), fixtures=False, zoo_variants=("xnnpack",)):
    """The programs to measure. "xnnpack": whether it is XNNPACK-lowered (the
    contention run, the delegate settings and Wine take only those)."""
    progs = []
    # bench/programs.py writes the same manifest format as models/export.py.
    # Its entries, in bench/programs.py's order (NAMES).
    for e in json.loads((PROGRAMS / "manifest.json").read_text())["fixtures"]:
        name = e["name"]
        progs.append({"name": name, "pte": PROGRAMS / e["file"], "method": "forward",
                      "inputs": [PROGRAMS / f for f in e["methods"]["forward"]["inputs"]],
                      "flops": e["flops"], "xnnpack": name.endswith("_xnnpack"),
                      "description": e["description"], "eager_out0_sum": e["eager_out0_sum"],
                      "size_bytes": e["size_bytes"]})
    if fixtures:
        manifest = json.loads((FIXTURES / "manifest.json").read_text())
        for f in manifest["fixtures"]:
            for mname, m in f["methods"].items():
                name = f["name"] if mname == "forward" else f"{f['name']}.{mname}"
                progs.append({"name": name, "pte": FIXTURES / f["file"], "method": mname,
                              "inputs": [FIXTURES / i for i in m["inputs"]], "flops": None,
                              "xnnpack": bool(f.get("delegates")),
                              "description": "fixture: " + f["proves"],
                              "expected_out0": FIXTURES / m["expected"][0],
                              "size_bytes": f["size_bytes"]})
    zoo = zoo_programs(zoo_folders)
    for z in zoo:
        variant = z["name"].rpartition("_")[2]
        if variant in zoo_variants:
            progs.append(dict(z, xnnpack=variant == "xnnpack"))
    if "unlowered" in zoo_variants:
        # pteron on the program exported without a partitioner (its graph passes at load),
        # upstream on the XNNPACK-lowered program of the same model and input.
        by_name = {z["name"]: z for z in zoo}
        for z in zoo:
            base, _, variant = z["name"].rpartition("_")
            lowered = by_name.get(base + "_xnnpack")
            if variant == "portable" and lowered:
                progs.append(dict(z, name=base + "_unlowered", xnnpack=False,
                                  peer_pte=lowered["pte"], peer_inputs=lowered["inputs"],
                                  description=z["description"] + "; pteron: exported without "
                                  "a partitioner, upstream: XNNPACK-lowered"))
    if only:
        progs = [p for p in progs if p["name"] in only]
    return progs


def side_envs(threads, pteron_env=None):
    """The environments of the two sides; pteron_env adds to pteron's (a None
    value removes the variable)."""
    pt = dict(os.environ, PTERON_NUM_THREADS=str(threads))
    for k, v in (pteron_env or {}).items():
        if v is None:
            pt.pop(k, None)
        else:
            pt[k] = v
    return {"pteron": pt, "peer": dict(os.environ)}


def program_args(prog, side="pteron"):
    """The runner's arguments; an unlowered row gives the peer the lowered program."""
    peer = side == "peer" and "peer_pte" in prog
    common = [str(prog["peer_pte"] if peer else prog["pte"]), "--method", prog["method"]]
    for i in prog["peer_inputs"] if peer else prog["inputs"]:
        common += ["--input", str(i)]
    return common


def bench_program(prog, threads, bins, round_seconds, rounds, timeout, pteron_env=None):
    """Alternates pteron and peer processes on one program at one thread count."""
    res = {}
    common = {side: program_args(prog, side) for side in ("pteron", "peer")}
    envs = side_envs(threads, pteron_env)
    plans = {}
    for side in ("pteron", "peer"):
        r = measure([str(bins[side]), *common[side], "--warmup", "0", "--iterations", "1",
                     "--threads", str(threads)], envs[side], timeout)
        if "error" in r:
            res[side] = {"error": r["error"]}
        else:
            # Programs far below a millisecond get a third of the budget.
            budget = round_seconds if r["times_ms"][0] >= 1.0 else round_seconds / 3
            plans[side] = plan_iterations(r["times_ms"][0], budget)
            res[side] = {"rounds": [], "probe_ms": r["times_ms"][0], "threads_reported": r["threads"],
                         "_probe": r,
                         "out0_sum": r["out0_sum"], "out0_numel": r["out0_numel"],
                         "warmup": plans[side][0], "iterations": plans[side][1]}
            for k in ("isa", "threadpool"):  # pteron-bench says which ISA path and pool ran
                if k in r:
                    res[side][k] = r[k]
    slow = any(res[s].get("probe_ms", 0) > SLOW_MS for s in plans)
    if "pteron" not in plans and "peer" in plans:
        # pteron cannot run it: no ratio to give, so the peer's probe is its only sample.
        plans.clear()
        res["peer"]["rounds"] = [res["peer"]["_probe"]]
    for i in range(min(rounds, SLOW_ROUNDS) if slow else rounds):
        # Each round's pair in alternating order, so that a drift of the machine's speed
        # favours neither side.
        for side in ("pteron", "peer") if i % 2 == 0 else ("peer", "pteron"):
            if side not in plans:
                continue
            w, n = plans[side]
            r = measure([str(bins[side]), *common[side], "--warmup", str(w), "--iterations", str(n),
                         "--threads", str(threads)], envs[side], timeout)
            if "error" in r:
                res[side] = {"error": "failed in a timed round: " + r["error"]}
                plans.pop(side)
                continue
            res[side]["rounds"].append(r)
    for side in ("pteron", "peer"):
        res[side].pop("_probe", None)
        if res[side].get("rounds"):
            res[side].update(side_summary(res[side]["rounds"]))
    if "rounds" in res["pteron"] and "rounds" in res["peer"]:
        res["ratio"], res["ratio_spread"] = ratio_summary(res["pteron"]["rounds"],
                                                          res["peer"]["rounds"])
        res["ratio_pooled"] = pooled_ratio(res["pteron"]["rounds"], res["peer"]["rounds"])
    return res


def delegate_plan(prog, bins, threads, pteron_env, timeout):
    """What PTERON_XNNPACK_DEBUG=1 says about each delegate call of the
    program on pteron's side (which nodes pteron ran, how many XNNPACK
    library segments): the lines as printed, deduplicated, or an error."""
    env = side_envs(threads, dict(pteron_env or {}, PTERON_XNNPACK_DEBUG="1"))["pteron"]
    try:
        r = subprocess.run([str(bins["pteron"]), *program_args(prog), "--warmup", "0",
                            "--iterations", "1"], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = []
    for line in r.stderr.splitlines():
        line = line.strip()
        if line.startswith("pteron XnnpackBackend") and line not in lines:
            lines.append(line)
    if r.returncode != 0 and not lines:
        return {"error": error_message(r.stderr, r.returncode)}
    return {"lines": lines}


def plan_summary(plan):
    """One cell: the delegate's own split as PTERON_XNNPACK_DEBUG printed it."""
    if not plan:
        return "-"
    if "error" in plan:
        return "not runnable"
    if not plan["lines"]:
        return "no delegate line"
    segs, own, nodes = 0, [], 0
    # The int8 GEMM's ISA level of the nodes that ran on it (one per process).
    int8 = sorted({m.group(1) for line in plan["lines"]
                   for m in [re.search(r"int8 GEMM \(([a-z0-9]+)\)", line)] if m})
    summaries = [line for line in plan["lines"] if "XNNPACK segment" in line]
    for line in summaries:
        m_seg = re.search(r"(\d+) XNNPACK segment", line)
        m_nodes = re.search(r"(\d+) nodes", line)
        m_own = re.search(r"pteron runs: ([^;]*)", line)
        segs += int(m_seg.group(1)) if m_seg else 0
        nodes += int(m_nodes.group(1)) if m_nodes else 0
        for t in (m_own.group(1).split(",") if m_own else []):
            t = t.strip()
            if t and t != "(none)" and t not in own:
                own.append(t)
    return (f"{len(summaries)} distinct delegate plan(s), {nodes} nodes; XNNPACK library: "
            f"{segs} segment(s); pteron's kernels: {', '.join(own) or 'none'}"
            + (f"; int8 GEMM: {', '.join(int8)}" if int8 else ""))


def out0_reference(prog):
    """(sum, quantum) of the first output eager PyTorch gives: its float64 sum, and for a
    quantized model (the zoo's family "quantized") one quantum of its range over 8 bits
    (max - min) / 255, else None. (None, None) when there is nothing to compare."""
    e = None
    if prog.get("expected_out0") and ("eager_out0_sum" not in prog or prog.get("quantized")):
        try:
            import numpy as np
            e = np.load(prog["expected_out0"]).astype("float64")
        except Exception:  # noqa: BLE001  (numpy absent, or a non-numeric output)
            pass
    quantum = None
    if prog.get("quantized") and e is not None:
        quantum = float(e.max() - e.min()) / 255.0 if e.size else 0.0
    if "eager_out0_sum" in prog:
        return prog["eager_out0_sum"], quantum
    return (None, None) if e is None else (float(e.sum()), quantum)


def agrees(value, ref, numel, quantum=None):
    """Whether a first output's sum `value` agrees with eager's sum `ref`: float rounding
    (relative 1e-3 plus 1e-4 per element) and, for a quantized model, one `quantum` per
    element (tests/test_zoo.py bounds every element of such an output by one quantum of its
    range; a sum of numel elements within that bound is within numel quanta). None when either
    sum is missing."""
    if value is None or ref is None:
        return None
    n = max(1, numel or 1)
    return abs(value - ref) <= 1e-3 * max(1.0, abs(ref)) + 1e-4 * n + (quantum or 0.0) * n


# ---------------------------------------------------------------- Wine

def winpath(path):
    """A Linux path as Wine's Z: drive names it."""
    return "Z:" + str(Path(path).resolve()).replace("/", "\\")


def find_mingw_runner(folder):
    for cand in (Path(folder) / "pteron-run.exe", Path(folder) / "bin" / "pteron-run.exe"):
        if cand.exists():
            return cand
    return None


def wine_run_once(exe, args, env, timeout):
    """(rc, stdout, stderr) of one Wine process; output to files, not pipes
    (a Wine service started on the way would hold a pipe open)."""
    import tempfile
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pr = subprocess.Popen(["wine", str(exe), *map(str, args)], stdin=subprocess.DEVNULL,
                              stdout=out, stderr=err, env=env, cwd=str(Path(exe).parent))
        try:
            rc = pr.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
            rc = 124
        out.seek(0)
        err.seek(0)
        dec = lambda f: f.read().decode("utf-8", "replace").replace("\r\n", "\n")  # noqa: E731
        return rc, dec(out), dec(err)


def wine_section(progs, mingw_dir, threads, timeout):
    """The MinGW build's pteron-run.exe under Wine on the XNNPACK programs:
    per program one probe execution, then one process of about a second of
    executions; the median pteron-run reports. Returns {"skipped": why} or
    {"runner", "threads", "rows"}."""
    if not shutil.which("wine"):
        return {"skipped": "wine is not installed (scripts/setup.sh installs wine64)"}
    runner = find_mingw_runner(mingw_dir) if mingw_dir else None
    if not runner:
        return {"skipped": f"no pteron-run.exe in {mingw_dir} or its bin/ (MinGW build: cmake -S . "
                           "-B build-mingw -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-mingw-w64."
                           "cmake -DCMAKE_BUILD_TYPE=Release && ninja -C build-mingw; then "
                           "--mingw-build build-mingw)"}
    if not (runner.parent / "pteron_backend_xnnpack.dll").exists():
        return {"skipped": f"{runner.parent} has no pteron_backend_xnnpack.dll: this MinGW build "
                           "has no XNNPACK delegate, so it cannot run XNNPACK-lowered programs"}
    env = {k: v for k, v in os.environ.items()
           if k not in ("WINEPATH", "DISPLAY", "WAYLAND_DISPLAY", "WINELOADER", "WINESERVER")}
    env.update(WINEPREFIX=str(BUILD / "wineprefix"), WINEDEBUG="-all",
               WINEDLLOVERRIDES="mscoree,mshtml=", PTERON_NUM_THREADS=str(threads))
    BUILD.mkdir(parents=True, exist_ok=True)
    run(["wine", "wineboot", "--init"], 300, env=env, check=False)
    rows = []
    for prog in progs:
        args = [winpath(prog["pte"]), "--method", prog["method"]]
        for i in prog["inputs"]:
            args += ["--input", winpath(i)]
        row = {"name": prog["name"], "threads": threads}
        rc, out, err = wine_run_once(runner, args + ["--iterations", "1"], env, timeout)
        m = re.search(r"median time per execution: ([0-9.]+) ms", out)
        if rc != 0 or not m:
            row["error"] = error_message(err, rc) if rc != 124 else f"timed out after {timeout} s"
            rows.append(row)
            continue
        iters = max(3, min(200, int(1000.0 / max(float(m.group(1)), 0.01))))
        rc, out, err = wine_run_once(runner, args + ["--iterations", str(iters)], env, timeout)
        m = re.search(r"median time per execution: ([0-9.]+) ms over (\d+)", out)
        if rc != 0 or not m:
            row["error"] = error_message(err, rc) if rc != 124 else f"timed out after {timeout} s"
        else:
            row.update(median_ms=float(m.group(1)), iterations=int(m.group(2)))
        rows.append(row)
    subprocess.run(["wineserver", "-k"], env=env, timeout=60, capture_output=True)
    return {"runner": str(runner), "threads": threads, "rows": rows}


# ---------------------------------------------------------------- report

def fmt_ms(x):
    if x is None:
        return "-"
    return f"{x:.4g}" if x < 1000 else f"{x:.0f}"


def side_cell(s):
    if "error" in s:
        return f"not runnable: {s['error']}"
    return f"{fmt_ms(s['median_ms'])} [{fmt_ms(s['spread_ms'][0])}-{fmt_ms(s['spread_ms'][1])}] " \
           f"(n={s['samples']})"


def ratio_cell(row, bold=True):
    if row.get("ratio") is None:
        return "-"
    rs = row.get("ratio_spread")
    r = f"**{row['ratio']:.3g}**" if bold else f"{row['ratio']:.3g}"
    return f"{r} [{rs[0]:.3g}-{rs[1]:.3g}]" if rs else r


def delegate_cell(row):
    if not row.get("xnnpack"):
        return "-"
    return f"`{row.get('xnnpack_library') or 'default'}`"


def write_report(data, stamp, results=RESULTS):
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{stamp}.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    cpu = data["cpu"]
    st = data["settings"]
    L = []
    L.append(f"# pteron vs upstream ExecuTorch 1.5.1, {data['date']}")
    L.append("")
    L.append(f"Command: `{data['command']}` (on {data['host']['os']}; built in this run). "
             f"It took {st.get('seconds_total', '?')} s: building {st.get('seconds_building', '?')}"
             f" s, measuring {st.get('seconds_measuring', '?')} s, contention "
             f"{st.get('seconds_contention', '?')} s, Wine {st.get('seconds_wine', '?')} s.")
    L.append(f"CPU: {cpu['model']} (vendor {cpu.get('vendor') or '?'}, family "
             f"{cpu.get('family', '?')}, model {cpu.get('cpu_model', '?')}), "
             f"{cpu['logical_cpus']} logical CPUs, `cpu MHz` {cpu['mhz']}; ISA: {cpu['isa']}.")
    ran = ", ".join(data.get("pteron_isa_ran") or []) or "unknown (pteron ran nothing)"
    L.append(f"pteron's ISA paths (`PTERON_ISA`, pteron/kernels_optimized.h): ran **{ran}** "
             f"(`pteron_kernels_optimized_isa()`; PTERON_ISA="
             f"{data.get('pteron_isa_env') or 'unset'}); runnable on this CPU: "
             f"{', '.join(cpu.get('isa_paths_runnable', []))}; **cannot run here: "
             f"{', '.join(cpu.get('isa_paths_not_runnable', [])) or 'none'}** (compiled, but "
             "the CPU or the OS lacks the instructions, so they are not measured). The "
             "delegate's own kernels share pteron_cpu's dispatch, which reads the same "
             "CPUID and PTERON_ISA.")
    L.append(f"pteron's thread pool: {', '.join(data.get('pteron_threadpool') or []) or '?'} "
             "(`pteron_threadpool_implementation()`).")
    L.append(f"Load: loadavg {data['load']['start']} at start, {data['load']['end']} at the end "
             f"(1/5/15 min); {data['load']['note']}")
    L.append("")
    L.append("Method: each program runs in separate processes, pteron-bench and peer-bench "
             "alternately (a probe execution each, then "
             f"{st['rounds']} rounds of warm-up + timed executions per side, the pair's order "
             f"alternating from round to round, about {st['round_seconds']} s of timed work per "
             "process for slow programs). stdout and stderr of both sides go to a pipe. Times are "
             "medians of all timed executions (min-max in brackets); the ratio is the median of "
             "the per-round ratios pteron/peer (each round's two processes ran back to back), "
             "with their min-max; below 1 means pteron is faster. The JSON also keeps "
             "`ratio_pooled`, pteron/peer of the two median columns. "
             "Load = program load + method load (delegate init), in process. Peak RSS is each "
             "process's VmHWM (max over its processes). Inputs are set before every "
             "execution, outside the timed region, on both sides. `out0` says whether each "
             "side's first output sums to the eager PyTorch value (for a quantized zoo model: "
             "within one quantum of the output's range per element, the zoo test's bound). "
             "`delegate` is pteron's `PTERON_XNNPACK_USE_LIBRARY` setting for XNNPACK-lowered "
             "programs (`default`: unset, the delegate's own per-node choice; `none`: pteron's "
             "kernels only); "
             "which side ran which nodes is in \"Delegate sides\" below.")
    L.append("")
    L.append("| program | threads | delegate | pteron ms | upstream (peer) ms | ratio pteron/peer | "
             "pteron load ms | peer load ms | pteron RSS MB | peer RSS MB | out0 pteron/peer |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in data["rows"]:
        if row.get("busy"):
            continue
        p, q = row["pteron"], row["peer"]
        ok = "/".join({True: "ok", False: "DIFF", None: "-"}[row["out0_ok"][s]]
                      for s in ("pteron", "peer"))
        L.append(f"| {row['name']} | {row['threads']} | {delegate_cell(row)} | {side_cell(p)} | "
                 f"{side_cell(q)} | {ratio_cell(row)} | "
                 f"{fmt_ms(p.get('load_ms'))} | {fmt_ms(q.get('load_ms'))} | "
                 f"{p.get('peak_rss_mb') and round(p['peak_rss_mb'], 1) or '-'} | "
                 f"{q.get('peak_rss_mb') and round(q['peak_rss_mb'], 1) or '-'} | {ok} |")
    L += zoo_table(data["rows"])
    busy_rows = [r for r in data["rows"] if r.get("busy")]
    if busy_rows:
        n = busy_rows[0]["busy"]
        L += ["", f"## Under contention: {busy_rows[0]['threads']} threads, {n} busy processes", "",
              f"{n} processes that only burn CPU (`yes > /dev/null`) ran during these "
              f"measurements (started by the benchmark, stopped after), on "
              f"{cpu['logical_cpus']} logical CPUs. Both sides ran with "
              f"{busy_rows[0]['threads']} threads. The uncontended ratio at the same thread "
              "count is beside it.", "",
              "| program | delegate | pteron ms | upstream (peer) ms | ratio pteron/peer | "
              "mean ms pteron / peer | uncontended ratio | pteron contended/uncontended |",
              "|---|---|---|---|---|---|---|---|"]
        calm = {(r["name"], r.get("xnnpack_library"), r["threads"]): r
                for r in data["rows"] if not r.get("busy")}
        for row in busy_rows:
            c = calm.get((row["name"], row.get("xnnpack_library"), row["threads"]))
            slow = "-"
            if c and c["pteron"].get("median_ms") and row["pteron"].get("median_ms"):
                slow = f"{row['pteron']['median_ms'] / c['pteron']['median_ms']:.2f}x"
            means = " / ".join(fmt_ms(row[sd].get("mean_ms")) for sd in ("pteron", "peer"))
            L.append(f"| {row['name']} | {delegate_cell(row)} | {side_cell(row['pteron'])} | "
                     f"{side_cell(row['peer'])} | {ratio_cell(row)} | {means} | "
                     f"{ratio_cell(c, bold=False) if c else '-'} | {slow} |")
    L.append("")
    L.append("## GFLOP/s of the GEMM-heavy programs")
    L.append("")
    L.append(f"Peak per core = {cpu.get('peak_assumptions', cpu['isa'])} = "
             f"{cpu['flops_per_cycle']} fp32 FLOP/cycle = {cpu['core_peak_gflops']:.1f} GFLOP/s; "
             "x threads for more threads. FLOPs = 2 x the multiply-accumulates of every "
             "convolution and linear layer (the MLP: 2 x M x N x K x layers = 2 x 256 x 1024 x "
             "1024 x 2). Assumed: every core sustains its FMA units' full rate at `cpu MHz`. A "
             "VM's `cpu MHz` may be below the clock the core really runs at (bench/gemm "
             "measured about 2.96 GHz on a 2.6 GHz-reporting VM), so the true peak may be up to "
             "~15-30 % higher than this figure.")
    L.append("")
    for row in data["rows"]:
        if row["name"] == "mlp1024_xnnpack" and row["threads"] == 1 and not row.get("busy"):
            peak = cpu["core_peak_gflops"]
            cells = []
            for s, label in (("pteron", "pteron"), ("peer", "upstream")):
                g = row[s].get("gflops")
                cells.append(f"{label} {g:.1f} GFLOP/s ({100 * g / peak:.0f} % of peak)"
                             if g and peak else f"{label} -")
            L.append(f"**MLP (2 x Linear(1024), batch 256, XNNPACK-lowered, delegate "
                     f"{delegate_cell(row)}), 1 thread: {'; '.join(cells)}; peak "
                     f"{peak:.1f} GFLOP/s.**")
            L.append("")
    L.append("| program | threads | delegate | GFLOP | pteron GFLOP/s | % of peak | peer GFLOP/s "
             "| % of peak |")
    L.append("|---|---|---|---|---|---|---|---|")
    for row in data["rows"]:
        if not row.get("flops") or row.get("busy"):
            continue
        peak = cpu["core_peak_gflops"] * row["threads"]
        cells = []
        for s in ("pteron", "peer"):
            g = row[s].get("gflops")
            cells += [f"{g:.1f}" if g else "-", f"{100 * g / peak:.1f} %" if g and peak else "-"]
        L.append(f"| {row['name']} | {row['threads']} | {delegate_cell(row)} | "
                 f"{row['flops'] / 1e9:.3f} | " + " | ".join(cells) + " |")
    plans = data.get("delegate_plans") or {}
    if plans:
        L += ["", "## Delegate sides (PTERON_XNNPACK_DEBUG=1)", "",
              "Per XNNPACK program and `PTERON_XNNPACK_USE_LIBRARY` setting, what pteron's "
              "delegate printed at method load: how many segments the XNNPACK library ran and "
              "which node types pteron's own kernels ran (one entry per delegate call).", "",
              "| program | delegate | sides |", "|---|---|---|"]
        for key, plan in plans.items():
            name, _, setting = key.partition("|")
            cell = plan_summary(plan) if "error" not in plan else \
                f"not runnable: {plan['error']}"
            L.append(f"| {name} | `{setting if setting != 'None' else 'default'}` | {cell} |")
    wine = data.get("wine") or {}
    L += ["", "## Windows build under Wine", ""]
    if "skipped" in wine:
        L.append(f"Skipped: {wine['skipped']}.")
    else:
        L.append(f"`{wine['runner']}` (the MinGW build's runner, with its DLLs beside it) under "
                 f"Wine, {wine['threads']} threads (PTERON_NUM_THREADS), one probe execution "
                 "then one process of about a second of executions; the median pteron-run "
                 "reports. Wine's timings are not comparable to the native ones above (another "
                 "C runtime, thread and memory layers); they show that the Windows DLLs are "
                 "not pathologically slow. Native pteron at the same thread count is beside it.")
        L += ["", "| program | Wine ms | native pteron ms | Wine/native |", "|---|---|---|---|"]
        native = {(r["name"], r["threads"]): r for r in data["rows"]
                  if not r.get("busy") and (r.get("xnnpack_library") in (None, "default"))}
        for r in wine["rows"]:
            nat = native.get((r["name"], r["threads"]), {}).get("pteron", {}).get("median_ms")
            if "error" in r:
                L.append(f"| {r['name']} | not runnable: {r['error']} | {fmt_ms(nat)} | - |")
            else:
                rel = f"{r['median_ms'] / nat:.2f}" if nat else "-"
                L.append(f"| {r['name']} | {fmt_ms(r['median_ms'])} (n={r['iterations']}) | "
                         f"{fmt_ms(nat)} | {rel} |")
    L.append("")
    L.append("## Shared libraries on disk")
    L.append("")
    for side, label in (("pteron", "pteron"), ("peer", "upstream (executorch wheel)")):
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
    (results / f"{stamp}.md").write_text("\n".join(L) + "\n")
    # matplotlib lives in the exporter's environment; the chart is drawn there.
    py = data.get("exporter_python") or str(EXPORT_VENV / "bin" / "python")
    rc, out = run([py, str(Path(__file__).resolve()), "--chart",
                   str(results / f"{stamp}.json"), str(results / f"{stamp}.png")], 300, check=False)
    if rc:
        print(f"bench/run.py: no chart: {out[-500:]}", file=sys.stderr)


def run_label(variant, setting, busy, threads):
    """A column label such as "xnnpack 2t", "xnnpack[none] 1t", "xnnpack 2t+2 busy"."""
    tag = f"[{setting}]" if setting and setting != "default" else ""
    return f"{variant}{tag} {threads}t" + (f"+{busy} busy" if busy else "")


def zoo_table(rows):
    """The zoo at a glance: one line per model, the ratio per variant and thread count."""
    zoo = {}
    for row in rows:
        if not row["name"].startswith("zoo/"):
            continue
        model, _, variant = row["name"][4:].rpartition("_")
        setting = row.get("xnnpack_library") or ""
        zoo.setdefault(model, {})[(variant, setting, row.get("busy", 0), row["threads"])] = row
    if not zoo:
        return []
    keys = sorted({k for v in zoo.values() for k in v}, key=lambda k: (k[0] != "portable", k))
    L = ["", "## The model zoo at a glance", "",
         "Ratio pteron/upstream (median, [min-max of per-round ratios]) per variant and thread "
         "count; the portable programs run on pteron's kernels_portable + kernels_optimized and "
         "on upstream's optimized + portable kernel libraries.", "",
         "| model | " + " | ".join(run_label(v, st, b, t) for v, st, b, t in keys) + " |",
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
        th = f"{row['threads']}" + (f" + {row['busy']} busy" if row.get("busy") else "")
        setting = row.get("xnnpack_library")
        name = row["name"] + (f" (`PTERON_XNNPACK_USE_LIBRARY={setting}`)"
                              if setting not in (None, "default") else "")
        L.append(f"| {name} | {th} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(L)


def chart(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in data["rows"] if r.get("ratio")]
    labels = [f"{r['name']} ({r['threads']}t{'+%d busy' % r['busy'] if r.get('busy') else ''})"
              for r in rows]
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
        if row.get("busy"):
            continue  # the contention rows have their own table
        key = row["name"] + (f" [{row['xnnpack_library']}]" if row.get("xnnpack_library") not in
                             (None, "default") else "")
        by_name.setdefault(key, {})[row["threads"]] = row
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

def setting_env(setting):
    """pteron's environment for a PTERON_XNNPACK_USE_LIBRARY setting ("default": unset)."""
    return {"PTERON_XNNPACK_USE_LIBRARY": None if setting == "default" else setting}


def measure_row(prog, th, bins, round_seconds, rounds, timeout, ref, setting=None, busy=0):
    r = bench_program(prog, th, bins, round_seconds, rounds, timeout,
                      setting_env(setting) if setting else None)
    row = {"name": prog["name"], "threads": th, "busy": busy, "flops": prog["flops"],
           "xnnpack": prog.get("xnnpack", False), "xnnpack_library": setting,
           "description": prog["description"], "size_bytes": prog["size_bytes"], **r}
    row["out0_ok"] = {s: agrees(r[s].get("out0_sum"), ref[0], r[s].get("out0_numel"), ref[1])
                      if "error" not in r[s] else None for s in ("pteron", "peer")}
    for s in ("pteron", "peer"):
        # The JSON keeps each process's summary, not every execution time.
        for rr in r[s].get("rounds", []):
            rr.pop("runner", None)
            t = rr.pop("times_ms")
            rr.update(n=len(t), median_ms=median(t), min_ms=min(t), max_ms=max(t))
        if prog["flops"] and r[s].get("median_ms"):
            r[s]["gflops"] = prog["flops"] / (r[s]["median_ms"] * 1e6)
    p, q = r["pteron"], r["peer"]
    label = prog["name"] + (f" [{setting}]" if setting and setting != "default" else "")
    print(f"{label:>30} {th}t{f'+{busy}busy' if busy else ''}  pteron "
          f"{fmt_ms(p.get('median_ms')) if 'error' not in p else 'not runnable'} ms  peer "
          f"{fmt_ms(q.get('median_ms')) if 'error' not in q else 'not runnable'} ms  ratio "
          f"{'%.3g' % r['ratio'] if r.get('ratio') else '-'}", flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short rounds (development; not for results)")
    ap.add_argument("--only", nargs="*", help="program names (see bench/results/*.json)")
    ap.add_argument("--threads", nargs="*", type=int, help="thread counts (default: 1 and all CPUs)")
    ap.add_argument("--rounds", type=int, help="processes per side and program (default 6)")
    ap.add_argument("--round-seconds", type=float, help="timed work per process (default 0.75)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per benchmark process")
    zg = ap.add_mutually_exclusive_group()
    zg.add_argument("--zoo", nargs="*", default=[], metavar="NAME",
                    help="zoo models to export and measure (default: all of models/zoo.py)")
    zg.add_argument("--no-zoo", dest="zoo", action="store_const", const=None,
                    help="leave the zoo out")
    ap.add_argument("--zoo-dir", metavar="DIR",
                    help="a folder of already exported zoo models (one folder per model with its "
                         "manifest.json, e.g. one key folder of the zoo cache): no export")
    ap.add_argument("--zoo-variants", nargs="+", default=["xnnpack"],
                    choices=["xnnpack", "portable", "unlowered"],
                    help="which of each zoo model's programs (default: xnnpack; upstream's "
                         "portable convolutions take seconds per run; unlowered: pteron on the "
                         "program exported without a partitioner against upstream on the "
                         "XNNPACK-lowered one, rows <model>_unlowered)")
    ap.add_argument("--fixtures", action="store_true",
                    help="also every method of every committed fixture (adds ~6 minutes)")
    ap.add_argument("--contention", type=int, default=2, metavar="N",
                    help="busy processes for the contention run (default 2; 0: no contention run)")
    ap.add_argument("--contention-threads", type=int, default=2,
                    help="threads of both sides in the contention run (default 2)")
    ap.add_argument("--xnnpack-library", nargs="+", default=["default"], metavar="SETTING",
                    help="PTERON_XNNPACK_USE_LIBRARY settings to measure the XNNPACK programs "
                         "with, each its own rows: default (unset: the delegate's own choice), "
                         "none (pteron's kernels only), ... (default: default)")
    ap.add_argument("--no-wine", action="store_true", help="leave the Wine section out")
    ap.add_argument("--mingw-build", default=str(REPO / "build-mingw"), metavar="DIR",
                    help="MinGW build (or package prefix) with pteron-run.exe and its DLLs, for "
                         "the Wine section (default: build-mingw)")
    ap.add_argument("--pteron-build", metavar="DIR",
                    help="measure a CMake build tree of pteron instead of the Conan package "
                         "(development)")
    ap.add_argument("--export-python", metavar="PYTHON",
                    help="the exporter's Python (torch + executorch 1.5.1) instead of .venv-export")
    ap.add_argument("--tag", default="", help="suffix for the results file names")
    ap.add_argument("--results-dir", type=Path, default=RESULTS,
                    help="where the .md, .json and .png go (default bench/results)")
    ap.add_argument("--chart", nargs=2, metavar=("JSON", "PNG"), help=argparse.SUPPRESS)
    ap.add_argument("--summary", metavar="JSON", help="print the README table of a results file")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary_table(json.loads(Path(args.summary).read_text())))
        return 0
    if args.chart:
        chart(json.loads(Path(args.chart[0]).read_text()), Path(args.chart[1]))
        return 0
    # SIGTERM ends the run like Ctrl-C: the busy processes are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t_start = time.time()
    # Six short rounds rather than three long ones: the same timed work, twice the pairs for the
    # median of the per-round ratios.
    rounds = args.rounds or (2 if args.quick else 6)
    round_seconds = args.round_seconds or (0.2 if args.quick else 0.75)
    ncpu = os.cpu_count() or 1
    thread_counts = args.threads or sorted({1, ncpu})

    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    bins = build(args)
    t_built = time.time()
    cpu = cpu_info()
    rows = []
    progs = program_list(args.only, bins["zoo"], args.fixtures, args.zoo_variants)
    refs = {p["name"]: out0_reference(p) for p in progs}
    plans = {}
    for prog in progs:
        settings = args.xnnpack_library if prog["xnnpack"] else [None]
        for setting in settings:
            for th in thread_counts:
                rows.append(measure_row(prog, th, bins, round_seconds, rounds, args.timeout,
                                        refs[prog["name"]], setting))
            if prog["xnnpack"] and bins["xnnpack_option"]:
                plans[f"{prog['name']}|{setting}"] = delegate_plan(
                    prog, bins, max(thread_counts), setting_env(setting), args.timeout)
    t_native = time.time()
    contended = [p for p in progs if p["xnnpack"]]
    if args.contention > 0 and contended:
        print(f"==> contention: {args.contention} busy processes, "
              f"{args.contention_threads} threads", flush=True)
        with BusyProcesses(args.contention):
            for prog in contended:
                for setting in args.xnnpack_library:
                    rows.append(measure_row(prog, args.contention_threads, bins, round_seconds,
                                            rounds, args.timeout, refs[prog["name"]], setting,
                                            busy=args.contention))
    t_contention = time.time()
    wine = {"skipped": "--no-wine"}
    if not args.no_wine:
        print("==> Wine: the MinGW build's pteron-run.exe", flush=True)
        # Absolute: Wine runs the program from its own working folder.
        mingw = str(Path(args.mingw_build).resolve())
        wine = wine_section([p for p in progs if p["xnnpack"]], mingw, ncpu, args.timeout)
        for r in wine.get("rows", []):
            print(f"{r['name']:>30} wine {r['threads']}t  "
                  f"{fmt_ms(r.get('median_ms')) if 'error' not in r else 'not runnable'} ms",
                  flush=True)
        if "skipped" in wine:
            print(f"    skipped: {wine['skipped']}", flush=True)
    t_end = time.time()
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now()
    stamp = now.strftime("%Y-%m-%d") + (f"-{args.tag}" if args.tag else "")
    cmd = "python3 bench/run.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])
                                    if (argv if argv is not None else sys.argv[1:]) else "")
    notes = []
    if not bins["xnnpack_option"]:
        notes.append("The pteron build has no XNNPACK delegate (the recipe refused "
                     "with_xnnpack=True, or the build tree has no libpteron_backend_xnnpack.so), "
                     "so pteron cannot run the XNNPACK-lowered programs.")
    notes += thread_notes(rows)
    isas = sorted({r["pteron"].get("isa") for r in rows if r["pteron"].get("isa")})
    pools = sorted({r["pteron"].get("threadpool") for r in rows if r["pteron"].get("threadpool")})
    data = {
        "date": now.strftime("%Y-%m-%d %H:%M"), "command": cmd,
        "host": {"os": platform.platform(), "python": platform.python_version()},
        "cpu": cpu, "pteron_isa_ran": isas, "pteron_threadpool": pools,
        "pteron_isa_env": os.environ.get("PTERON_ISA"),
        "load": {"start": load_start, "end": load_end,
                 "note": "the machine is shared; a load above the CPU count means other work "
                         "competed for the cores during the measurement."},
        "settings": {"rounds": rounds, "round_seconds": round_seconds, "threads": thread_counts,
                     "quick": args.quick, "contention": args.contention,
                     "contention_threads": args.contention_threads,
                     "xnnpack_library": args.xnnpack_library,
                     "seconds_building": round(t_built - t_start),
                     "seconds_measuring": round(t_native - t_built),
                     "seconds_contention": round(t_contention - t_native),
                     "seconds_wine": round(t_end - t_contention),
                     "seconds_total": round(t_end - t_start)},
        "versions": {"executorch": "1.5.1", "torch": "2.13.0",
                     "pteron": (REPO / "VERSION").read_text().strip(),
                     "pteron_commit": run(["git", "rev-parse", "--short", "HEAD"], 30, cwd=REPO,
                                          check=False)[1].strip()},
        "libraries": {"pteron": library_sizes(bins["pteron"], str(Path(args.pteron_build).resolve())
                                              if args.pteron_build else ".conan2"),
                      "peer": library_sizes(bins["peer"], "executorch")},
        "rows": rows, "delegate_plans": plans, "wine": wine, "notes": notes,
        "exporter_python": str(bins["python"]),
    }
    print(f"    total {data['settings']['seconds_total']} s (building "
          f"{data['settings']['seconds_building']} s, measuring "
          f"{data['settings']['seconds_measuring']} s, contention "
          f"{data['settings']['seconds_contention']} s, Wine {data['settings']['seconds_wine']} s)")
    write_report(data, stamp, args.results_dir)
    print(f"pteron: benchmark written to {args.results_dir}/{stamp}.md (.json, .png)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
