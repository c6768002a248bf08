#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pteron's Python API against upstream ExecuTorch's `executorch.runtime`, per call, side by side.

    python3 bench/python_api.py --stage DIR --python PYTHON [--rounds 5] [--seconds 1.0]

--stage: a folder holding the package `pteron` with its built extension (tests/test_python.py
and the README's Python quick start make one). --python: an interpreter of the same Python
version with upstream's wheel (torch, executorch), e.g. .venv-export/bin/python; both sides run
in child processes of it, alternately, for --rounds rounds of about --seconds of timed calls
each. Programs: the XNNPACK-lowered 2 x Linear(1024) MLP of bench/programs.py (bench/.programs,
made by bench/run.py) and the committed mlp_xnnpack fixture (4 x 16 -> 8: the per-call
overhead). Each call is the whole Python round trip: pteron `method(x)` with a numpy array
(a fresh output array per call), upstream `method.execute([t])` with a torch tensor. Both sides
use their default thread count; the order of the pair alternates from round to round. Prints a
markdown table: medians of all calls, the ratio pteron/upstream (below 1: pteron faster) as the
median of the per-round ratios with their min-max (bench/run.py's ratio_summary: paired), and
the ratio of the pooled medians beside it.
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
sys.path.insert(0, str(REPO / "bench"))
from run import pooled_ratio, ratio_summary  # noqa: E402

CHILD = r"""
import json, sys, time
side, pte, inp, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
import numpy as np
x = np.load(inp)
if side == "pteron":
    import pteron
    m = pteron.Program.load(pte).load_method("forward")
    call = lambda: m(x)
else:
    import torch
    from executorch.runtime import Runtime
    m = Runtime.get().load_program(pte).load_method("forward")
    t = torch.from_numpy(x)
    call = lambda: m.execute([t])
for _ in range(5):
    call()
times = []
end = time.perf_counter() + seconds
while time.perf_counter() < end or len(times) < 5:
    t0 = time.perf_counter()
    call()
    times.append((time.perf_counter() - t0) * 1e3)
print("RESULT " + json.dumps(times))
"""


def measure(py, stage, side, pte, inp, seconds):
    env = dict(os.environ, PYTHONPATH=str(stage))
    r = subprocess.run([py, "-c", CHILD, side, str(pte), str(inp), str(seconds)],
                       capture_output=True, text=True, timeout=600, env=env)
    line = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    if r.returncode != 0 or not line:
        raise SystemExit(f"{side} on {pte} failed (rc {r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(line[0][7:])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", required=True, type=Path)
    ap.add_argument("--python", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    a = ap.parse_args(argv)
    bp = REPO / "bench" / ".programs"
    progs = [("mlp1024_xnnpack", bp / "mlp1024_xnnpack.pte", bp / "mlp1024_xnnpack.forward.input_0.npy"),
             ("mlp_xnnpack (fixture)", REPO / "models" / "fixtures" / "mlp_xnnpack.pte",
              REPO / "models" / "fixtures" / "mlp_xnnpack.forward.input_0.npy")]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    print(f"CPU: {cpu}, {os.cpu_count()} logical CPUs; Python {platform.python_version()}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| program | pteron ms | upstream ms | ratio pteron/upstream, paired [min-max of "
          "rounds] | pooled |")
    print("|---|---|---|---|---|")
    for name, pte, inp in progs:
        if not pte.exists():
            print(f"| {name} | - | - | missing {pte} (bench/run.py makes it) | - |")
            continue
        pt, up = [], []
        for i in range(a.rounds):
            sides = ["pteron", "upstream"] if i % 2 == 0 else ["upstream", "pteron"]
            got = {s: measure(a.python, a.stage, s, pte, inp, a.seconds) for s in sides}
            pt.append({"times_ms": got["pteron"]})
            up.append({"times_ms": got["upstream"]})
        mp = statistics.median([t for r in pt for t in r["times_ms"]])
        mu = statistics.median([t for r in up for t in r["times_ms"]])
        ratio, (lo, hi) = ratio_summary(pt, up)
        print(f"| {name} | {mp:.4g} | {mu:.4g} | **{ratio:.3g}** [{lo:.3g}-{hi:.3g}] | "
              f"{pooled_ratio(pt, up):.3g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
