# SPDX-License-Identifier: BSD-3-Clause
"""XnnpackBackend on the programs of models/export_xnnpack_more.py, each lowered whole by
upstream's XnnpackPartitioner and run on pteron's kernels and on the linked XNNPACK library
(PTERON_XNNPACK_USE_LIBRARY=all), at every ISA level this CPU has, against upstream's runtime.

models/fixtures/xnnpack_dynamic/: a dynamic dimension other than the first: a self-attention
block over a sequence length, a Conv1d stack over a time axis and a token MLP whose reshape
folds the tokens into the batch. The blob declares each dynamic value at its upper bound; its
reshapes hold either upstream's 0 (inferred) or those bounds, as do the reshapes pteron's own
transpose rewrites make. Every program runs at several lengths, the bound included, and on
one loaded method growing and shrinking; outputs within float32 rounding of upstream's.

models/fixtures/xnnpack_half/: float16 programs (an MLP with GELU and softmax; a CNN with
convolution, depthwise convolution, batch norm, Hardswish, pooling, linear; the attention
block with a dynamic length). The delegate takes and gives float16 at its boundary and
computes in float32 inside (F16 constants widened at load), so its outputs are one float16
rounding from float32 arithmetic on the same weights. Tolerances, relative to the output's
largest magnitude (at least 1): against eager float32 on the float16 weights and inputs (the
fixtures' expected outputs) 1e-3, about one float16 rounding of the result (2^-11) plus those
of the float16 activations between the CPU operators and the delegate; against upstream's
runtime, which computes in float16 throughout, 2e-3.
"""
import json
import sys
import textwrap

import numpy as np
import pytest

from conftest import REPO, build_dir, run, xnnpack_side_env

DYN = REPO / "models" / "fixtures" / "xnnpack_dynamic"
HALF = REPO / "models" / "fixtures" / "xnnpack_half"
DYN_FIXTURES = json.loads((DYN / "manifest.json").read_text())["fixtures"]
HALF_FIXTURES = json.loads((HALF / "manifest.json").read_text())["fixtures"]
TOL_F32 = 2e-5
TOL_EAGER, TOL_UPSTREAM = 1e-3, 2e-3
ISAS = ["baseline", "avx2", "avx512"]
SIDES = ["pteron", "library"]


def slots(e):
    m = e["methods"]["forward"]
    return [m] + m.get("cases", [])


def run_slot(folder, e, k, slot, env, tmp_path):
    """pteron-run on one input set; its output 0 as float64."""
    out = tmp_path / f"run{k}"
    cmd = [build_dir() / "pteron-run", folder / e["file"], "--output-dir", out]
    for p in slot["inputs"]:
        cmd += ["--input", folder / p]
    r = run(cmd, timeout=120, env=env)
    assert r.returncode == 0, f"{e['name']} run {k}: {r.stderr[-2000:]}"
    return np.load(out / "output_0.npy")


def within(got, want, tol, what):
    scale = max(1.0, float(np.abs(want).max()))
    assert got.shape == want.shape, (what, got.shape, want.shape)
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
    assert err <= tol * scale, (what, err, tol * scale)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("e", DYN_FIXTURES, ids=[e["name"] for e in DYN_FIXTURES])
def test_dynamic_dim_every_length_matches_upstream(e, isa, side, tmp_path):
    env = xnnpack_side_env(isa, side)
    for k, slot in enumerate(slots(e)):
        got = run_slot(DYN, e, k, slot, env, tmp_path)
        within(got, np.load(DYN / slot["upstream"][0]), TOL_F32, (e["name"], k, side, isa))


def test_dynamic_fixtures_run_to_the_upper_bound_and_below():
    for e in DYN_FIXTURES:
        assert e["delegates"] == ["XnnpackBackend"], e["delegates"]
        shapes = {tuple(s["input_shapes"][0]) for s in slots(e)}
        assert len(shapes) >= 4, (e["name"], shapes)


def test_dynamic_one_method_resized_through_every_length():
    """The C API on one loaded method, in a child process (so the backend registers nowhere
    else): lengths up, down and up again."""
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(REPO / 'tests')!r})
        import numpy as np, capi
        F = {str(DYN)!r}
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
                    assert err <= {TOL_F32} * max(1.0, float(np.abs(want).max())), (e["name"], err)
            print(e["name"], len(order))
    """)
    r = run([sys.executable, "-c", script], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("\n") == len(DYN_FIXTURES), r.stdout


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("e", HALF_FIXTURES, ids=[e["name"] for e in HALF_FIXTURES])
def test_float16_program_matches_eager_and_upstream(e, isa, side, tmp_path):
    env = xnnpack_side_env(isa, side)
    m = e["methods"]["forward"]
    assert m["input_dtypes"] == ["float16"] and m["output_dtypes"] == ["float32"], m
    for k, slot in enumerate(slots(e)):
        got = run_slot(HALF, e, k, slot, env, tmp_path)
        assert got.dtype == np.float16, got.dtype  # the program's output dtype
        what = (e["name"], k, side, isa)
        within(got, np.load(HALF / slot["expected"][0]), TOL_EAGER, what + ("eager",))
        within(got, np.load(HALF / slot["upstream"][0]), TOL_UPSTREAM, what + ("upstream",))


def test_a_float32_input_for_a_float16_graph_is_a_named_error(tmp_path):
    e = next(e for e in HALF_FIXTURES if e["name"] == "cnn_f16")
    x = np.load(HALF / e["methods"]["forward"]["inputs"][0]).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = run([build_dir() / "pteron-run", HALF / e["file"], "--input", tmp_path / "x.npy"],
            timeout=60)
    assert r.returncode != 0 and "float16" in r.stderr, r.stderr
