# SPDX-License-Identifier: BSD-3-Clause
"""XnnpackBackend with float16 programs (models/fixtures/xnnpack_half/, made by
models/export_xnnpack_more.py from model.half() with upstream's XnnpackPartitioner): an MLP with
GELU and softmax, a CNN (convolution, depthwise convolution, batch norm, Hardswish, pooling,
linear) and a self-attention block with a dynamic sequence length. The delegate takes and gives
float16 at its boundary and computes in float32 inside (F16 constants widened at load), so its
outputs are one float16 rounding from float32 arithmetic on the same weights.

Tolerances, relative to the output's largest magnitude (at least 1): against eager float32 on
the float16 weights and inputs (the fixtures' expected outputs) 1e-3, about one float16 rounding
of the result (2^-11) plus those of the float16 activations between the CPU operators and the
delegate; against upstream's runtime, which computes in float16 throughout, 2e-3. Run on
pteron's kernels and on the linked XNNPACK library, at every ISA level this CPU has."""
import json
import os

import numpy as np
import pytest

from conftest import REPO, build_dir, run
from isa_check import missing_for

F = REPO / "models" / "fixtures" / "xnnpack_half"
MANIFEST = json.loads((F / "manifest.json").read_text())
NAMES = [e["name"] for e in MANIFEST["fixtures"]]
TOL_EAGER, TOL_UPSTREAM = 1e-3, 2e-3


def _library_linked():
    cfg = build_dir() / "backends" / "xnnpack" / "generated" / "xnn_config.h"
    return cfg.exists() and "#define PTERON_XNN_LINKED 1" in cfg.read_text()


@pytest.mark.parametrize("side", ["pteron", "library"])
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("name", NAMES)
def test_float16_program_matches_eager_and_upstream(name, isa, side, tmp_path):
    if missing_for(isa):
        pytest.skip(f"this CPU lacks {sorted(missing_for(isa))} for PTERON_ISA={isa}")
    if side == "library" and not _library_linked():
        pytest.skip("this build links no XNNPACK library")
    e = next(e for e in MANIFEST["fixtures"] if e["name"] == name)
    m = e["methods"]["forward"]
    assert m["input_dtypes"] == ["float16"] and m["output_dtypes"] == ["float32"], m
    env = {k: v for k, v in os.environ.items()
           if k not in ("PTERON_ISA", "PTERON_XNNPACK_USE_LIBRARY", "PTERON_NUM_THREADS")}
    env["PTERON_ISA"] = isa
    if side == "library":
        env["PTERON_XNNPACK_USE_LIBRARY"] = "all"
    for k, c in enumerate([m] + m.get("cases", [])):
        out = tmp_path / f"run{k}"
        cmd = [build_dir() / "pteron-run", F / e["file"], "--output-dir", out]
        for p in c["inputs"]:
            cmd += ["--input", F / p]
        r = run(cmd, timeout=120, env=env)
        assert r.returncode == 0, f"{name} run {k}: {r.stderr[-2000:]}"
        got = np.load(out / "output_0.npy")
        assert got.dtype == np.float16, got.dtype  # the program's output dtype
        got = got.astype(np.float64)
        want, up = np.load(F / c["expected"][0]), np.load(F / c["upstream"][0]).astype(np.float64)
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got - want).max())
        assert err <= TOL_EAGER * scale, (name, k, side, isa, "vs eager", err)
        err_up = float(np.abs(got - up).max())
        assert err_up <= TOL_UPSTREAM * scale, (name, k, side, isa, "vs upstream", err_up)


def test_a_float32_input_for_a_float16_graph_is_a_named_error(tmp_path):
    e = next(e for e in MANIFEST["fixtures"] if e["name"] == "cnn_f16")
    x = np.load(F / e["methods"]["forward"]["inputs"][0]).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = run([build_dir() / "pteron-run", F / e["file"], "--input", tmp_path / "x.npy"], timeout=60)
    assert r.returncode != 0 and "float16" in r.stderr, r.stderr
