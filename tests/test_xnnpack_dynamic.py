# SPDX-License-Identifier: BSD-3-Clause
"""XnnpackBackend with a dynamic dimension other than the first (models/fixtures/xnnpack_dynamic/,
models/export_xnnpack_more.py): a self-attention block over a sequence length, a Conv1d stack
over a time axis and a token MLP whose reshape folds the tokens into the batch, each lowered
whole by upstream's partitioner. The blob declares each dynamic value at its upper bound; its
reshapes hold either upstream's 0 (inferred) or those bounds, as do the reshapes pteron's own
transpose rewrites make. Every program runs at several lengths, the upper bound included, on
one loaded method (growing and shrinking), on pteron's kernels and on the linked XNNPACK
library (PTERON_XNNPACK_USE_LIBRARY=all), at every ISA level this CPU has, and must give
upstream's runtime's outputs within float32 rounding."""
import json
import os

import numpy as np
import pytest

from conftest import REPO, build_dir, run
from isa_check import missing_for

F = REPO / "models" / "fixtures" / "xnnpack_dynamic"
MANIFEST = json.loads((F / "manifest.json").read_text())
NAMES = [e["name"] for e in MANIFEST["fixtures"]]


def _library_linked():
    cfg = build_dir() / "backends" / "xnnpack" / "generated" / "xnn_config.h"
    return cfg.exists() and "#define PTERON_XNN_LINKED 1" in cfg.read_text()


def runs(name):
    e = next(e for e in MANIFEST["fixtures"] if e["name"] == name)
    m = e["methods"]["forward"]
    return [(c["inputs"], c["upstream"]) for c in [m] + m["cases"]]


@pytest.mark.parametrize("side", ["pteron", "library"])
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("name", NAMES)
def test_every_length_matches_upstreams_runtime(name, isa, side, tmp_path):
    if missing_for(isa):
        pytest.skip(f"this CPU lacks {sorted(missing_for(isa))} for PTERON_ISA={isa}")
    if side == "library" and not _library_linked():
        pytest.skip("this build links no XNNPACK library")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PTERON_ISA", "PTERON_XNNPACK_USE_LIBRARY", "PTERON_NUM_THREADS")}
    env["PTERON_ISA"] = isa
    if side == "library":
        env["PTERON_XNNPACK_USE_LIBRARY"] = "all"
    for k, (ins, ups) in enumerate(runs(name)):
        out = tmp_path / f"run{k}"
        cmd = [build_dir() / "pteron-run", F / f"{name}.pte", "--output-dir", out]
        for p in ins:
            cmd += ["--input", F / p]
        r = run(cmd, timeout=120, env=env)
        assert r.returncode == 0, f"{name} run {k} ({side}, {isa}): {r.stderr[-2000:]}"
        for i, p in enumerate(ups):
            got, want = np.load(out / f"output_{i}.npy"), np.load(F / p)
            assert got.shape == want.shape, (name, k, got.shape, want.shape)
            err = float(np.abs(got - want).max())
            assert err <= 2e-5 * max(1.0, float(np.abs(want).max())), (name, k, side, isa, err)


def test_the_fixtures_run_to_the_upper_bound_and_below():
    for e in MANIFEST["fixtures"]:
        m = e["methods"]["forward"]
        assert e["delegates"] == ["XnnpackBackend"], e["delegates"]
        shapes = [tuple(c["input_shapes"][0]) for c in m["cases"]] + [tuple(m["input_shapes"][0])]
        assert len(set(shapes)) >= 4, (e["name"], shapes)


def test_one_method_resized_through_every_length():
    """The C API on one loaded method, in a child process (so the backend registers nowhere
    else): lengths up, down and up again."""
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(REPO / 'tests')!r})
        import numpy as np, capi
        F = {str(F)!r}
        rt = capi.Runtime({str(build_dir())!r},
                          kernel_libs=["kernels_portable", "threadpool", "backend_xnnpack"])
        for e in json.load(open(F + "/manifest.json"))["fixtures"]:
            m = e["methods"]["forward"]
            order = [(c["inputs"], c["upstream"]) for c in [m] + m["cases"]]
            method = rt.load_file(F + "/" + e["file"]).load_method("forward")
            for ins, ups in order + order[::-1] + order:
                outs = method.run([np.load(F + "/" + p) for p in ins])
                for got, p in zip(outs, ups):
                    want = np.load(F + "/" + p)
                    assert got.shape == want.shape, (e["name"], got.shape, want.shape)
                    err = float(np.abs(got - want).max())
                    assert err <= 2e-5 * max(1.0, float(np.abs(want).max())), (e["name"], err)
            print(e["name"], len(order))
    """)
    r = run([sys.executable, "-c", script], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("\n") == len(NAMES), r.stdout
