# SPDX-License-Identifier: BSD-3-Clause
"""The same Windows package built by MSVC and by MinGW-w64, side by side under Wine.

    .venv/bin/python bench/windows_toolchains.py --msvc PKG --mingw PKG [--zoo NAME ...]
        [--threads N ...] [--rounds R] [--round-seconds S] [--out FILE.md]

PKG: a package folder (bin/pteron-run.exe beside the DLLs); scripts/test.sh sets
PTERON_MSVC_PACKAGE and PTERON_MINGW_PACKAGE, the defaults. Programs: the XNNPACK-lowered
fixtures of models/fixtures and, with --zoo, the XNNPACK programs of those zoo models (exported
on demand by models/zoo.py with $PTERON_EXPORT_PYTHON, upstream's exporter; cached).

Per program and thread count, R rounds in ABBA order (MSVC, MinGW, MinGW, MSVC, ...), each
one Wine process of pteron-run.exe running about S seconds of executions after a probe; a
side's time per round is the median pteron-run reports. The ratio MSVC / MinGW is the median
of the per-round ratios, with their min-max (bench/run.py's ratio_summary). The report names
the CPU and the ISA path both builds dispatch to (the same PTERON_ISA rule). Below 1: the
MSVC build is faster.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import run as bench  # noqa: E402  (bench/run.py: statistics, CPU facts, Wine runner)


def programs(zoo):
    import json

    fixtures = REPO / "models" / "fixtures"
    progs = [{"name": f["name"], "pte": fixtures / f["file"], "method": "forward",
              "inputs": [fixtures / i for i in f["methods"]["forward"]["inputs"]]}
             for f in json.loads((fixtures / "manifest.json").read_text())["fixtures"]
             if "XnnpackBackend" in f["delegates"]]
    if zoo:
        py = os.environ.get("PTERON_EXPORT_PYTHON")
        if not py:
            sys.exit("--zoo needs PTERON_EXPORT_PYTHON (upstream's exporter: scripts/test.sh "
                     "makes .venv-export)")
        r = subprocess.run([py, str(REPO / "models" / "zoo.py"), "export", *zoo],
                           capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            sys.exit(f"models/zoo.py export failed:\n{r.stderr[-3000:]}")
        folders = [Path(l.split(" ", 1)[1]) for l in r.stdout.splitlines() if " " in l]
        progs += [p for p in bench.zoo_programs(folders) if p["name"].endswith("_xnnpack")]
    return progs


def one_round(exe, prog, env, seconds, timeout):
    """The median ms pteron-run.exe reports for about `seconds` of executions, or an error."""
    args = [bench.winpath(prog["pte"]), "--method", prog["method"]]
    for i in prog["inputs"]:
        args += ["--input", bench.winpath(i)]
    rc, out, err = bench.wine_run_once(exe, args + ["--iterations", "1"], env, timeout)
    m = re.search(r"median time per execution: ([0-9.]+) ms", out)
    if rc != 0 or not m:
        return None, bench.error_message(err, rc)
    iters = max(3, min(500, int(seconds * 1000.0 / max(float(m.group(1)), 0.01))))
    rc, out, err = bench.wine_run_once(exe, args + ["--iterations", str(iters)], env, timeout)
    m = re.search(r"median time per execution: ([0-9.]+) ms", out)
    if rc != 0 or not m:
        return None, bench.error_message(err, rc)
    return float(m.group(1)), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--msvc", default=os.environ.get("PTERON_MSVC_PACKAGE"),
                    help="the MSVC-built package folder (default: $PTERON_MSVC_PACKAGE)")
    ap.add_argument("--mingw", default=os.environ.get("PTERON_MINGW_PACKAGE"),
                    help="the MinGW-built package folder (default: $PTERON_MINGW_PACKAGE)")
    ap.add_argument("--zoo", nargs="*", default=[], metavar="NAME",
                    help="zoo models whose XNNPACK programs to add (models/zoo.py)")
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2],
                    help="PTERON_NUM_THREADS values, one row each (default: 1 2)")
    ap.add_argument("--rounds", type=int, default=4, help="ABBA rounds per row (default: 4)")
    ap.add_argument("--round-seconds", type=float, default=1.0,
                    help="seconds of executions per process (default: 1.0)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per Wine process")
    ap.add_argument("--out", type=Path, help="also write the Markdown table here")
    a = ap.parse_args(argv)
    if not a.msvc or not a.mingw:
        ap.error("--msvc and --mingw name package folders (or set PTERON_MSVC_PACKAGE and "
                 "PTERON_MINGW_PACKAGE)")
    if not shutil.which("wine"):
        sys.exit("wine is not installed (scripts/setup.sh installs wine64)")
    # Absolute: Wine reads a relative program path from its own working folder.
    exes = {"msvc": Path(a.msvc).resolve() / "bin" / "pteron-run.exe",
            "mingw": Path(a.mingw).resolve() / "bin" / "pteron-run.exe"}
    for side, exe in exes.items():
        if not exe.is_file():
            sys.exit(f"--{side}: {exe} does not exist")
    cpu = bench.cpu_info()
    env = {k: v for k, v in os.environ.items()
           if k not in ("WINEPATH", "DISPLAY", "WAYLAND_DISPLAY", "WINELOADER", "WINESERVER")}
    prefix = REPO / "bench" / ".build" / "wineprefix"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    env.update(WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    subprocess.run(["wine", "wineboot", "--init"], env=env, capture_output=True, timeout=300)
    rows = []
    for prog in programs(a.zoo):
        for threads in a.threads:
            e = dict(env, PTERON_NUM_THREADS=str(threads))
            times = {"msvc": [], "mingw": []}
            error = None
            for r in range(a.rounds):
                order = ("msvc", "mingw") if r % 2 == 0 else ("mingw", "msvc")
                for side in order:
                    ms, error = one_round(exes[side], prog, e, a.round_seconds, a.timeout)
                    if error:  # once more: a Wine process can fail to start (exit 1, no output)
                        ms, error = one_round(exes[side], prog, e, a.round_seconds, a.timeout)
                    if error:
                        error = f"{side}: {error}"
                        break
                    times[side].append(ms)
                if error:
                    break
            row = {"name": prog["name"], "threads": threads}
            if error:
                row["error"] = error
            else:
                ratio, spread = bench.ratio_summary([{"times_ms": [t]} for t in times["msvc"]],
                                                    [{"times_ms": [t]} for t in times["mingw"]])
                row.update(msvc_ms=bench.median(times["msvc"]), mingw_ms=bench.median(times["mingw"]),
                           ratio=ratio, spread=spread)
            rows.append(row)
            print(row, flush=True)
    subprocess.run(["wineserver", "-k"], env=env, capture_output=True, timeout=60)
    lines = ["# MSVC against MinGW-w64: the same pteron under Wine", "",
             f"CPU: {cpu.get('model')} ({cpu.get('vendor', '')}, family {cpu.get('family', '?')} "
             f"model {cpu.get('cpu_model', '?')}; {cpu.get('isa')}); ISA path of both builds: "
             f"{cpu['isa_paths_runnable'][-1]} (the same dispatch rule, PTERON_ISA unset). "
             f"{a.rounds} rounds ABBA, about {a.round_seconds} s each.", "",
             "| program | threads | MSVC ms | MinGW ms | MSVC / MinGW (min-max) |",
             "|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['threads']} | error: {r['error']} | | |")
        else:
            lines.append(f"| {r['name']} | {r['threads']} | {r['msvc_ms']:.3f} | {r['mingw_ms']:.3f} "
                         f"| {r['ratio']:.3f} ({r['spread'][0]:.3f}-{r['spread'][1]:.3f}) |")
    ok = [r["ratio"] for r in rows if "ratio" in r]
    if ok:
        lines += ["", f"Median ratio over {len(ok)} rows: {bench.median(ok):.3f}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
