# SPDX-License-Identifier: BSD-3-Clause
"""Graph passes at method load (pteron/kernel.h, "graph passes"; kernels_optimized's NHWC
regions, runtime/kernels/optimized/graph_nhwc.cpp): a program exported without a delegate runs
with its CNN runs rewritten (batch norm folded, activations and residual adds fused, NHWC inside)
and gives what it gives with PTERON_GRAPH_OPT=0, at every ISA level, on every committed fixture
and the CI zoo's portable programs; the rewrite is visible in the profile; errors stay the
program's."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, build_dir, manifest, run
from isa_check import missing_for

FIXTURES = REPO / "models" / "fixtures"
ISA_LEVELS = ["baseline", "avx2", "avx512"]
# Folding a batch norm into the filter rounds differently: stated tolerance, relative to the
# output's largest magnitude (docs/kernels.md, "Graph passes").
RTOL = 1e-4


def env_for(isa, opt):
    e = {k: v for k, v in os.environ.items() if k not in ("PTERON_ISA", "PTERON_GRAPH_OPT")}
    e["PTERON_ISA"] = isa
    e["PTERON_GRAPH_OPT"] = opt
    return e


def run_both(pteron_run, program: Path, inputs, tmp_path, isa):
    """Outputs of pteron-run with the passes off and on."""
    outs = {}
    for opt in ("0", "1"):
        d = tmp_path / f"opt{opt}"
        d.mkdir()
        cmd = [pteron_run, program, "--output-dir", d, "--iterations", "2"]
        for i in inputs:
            cmd += ["--input", i]
        r = run(cmd, timeout=180, env=env_for(isa, opt))
        assert r.returncode == 0, f"{program.name} PTERON_GRAPH_OPT={opt}: {r.stderr[-2000:]}"
        outs[opt] = sorted(d.glob("output_*.npy"))
    assert [p.name for p in outs["0"]] == [p.name for p in outs["1"]] and outs["0"]
    return [(np.load(a), np.load(b)) for a, b in zip(outs["0"], outs["1"])]


def assert_same(pairs, what):
    for i, (a, b) in enumerate(pairs):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{what} output {i}"
        if a.dtype.kind != "f":
            np.testing.assert_array_equal(a, b, err_msg=f"{what} output {i}")
            continue
        assert np.array_equal(np.isnan(a), np.isnan(b)), f"{what} output {i}: NaNs differ"
        inf = np.isinf(a) | np.isinf(b)
        np.testing.assert_array_equal(a[inf], b[inf], err_msg=f"{what} output {i}: infinities")
        fin = np.isfinite(a) & np.isfinite(b)
        a, b = a[fin], b[fin]
        scale = float(np.max(np.abs(a))) if a.size else 0.0
        err = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
        assert err <= RTOL * max(scale, 1e-3), \
            f"{what} output {i}: |opt - unopt| = {err:.3g}, largest |output| {scale:.3g}"


def skip_unless(isa):
    if missing_for(isa):
        pytest.skip(f"this CPU lacks {sorted(missing_for(isa))} for PTERON_ISA={isa}")


FORWARD_FIXTURES = [f["name"] for f in manifest()["fixtures"]
                    if "forward" in f["methods"] and f["methods"]["forward"]["inputs"]
                    and f.get("upstream_runtime_runs", True)
                    and not any("absent" in o for o in f["operators"])]


@pytest.mark.parametrize("isa", ISA_LEVELS)
@pytest.mark.parametrize("name", FORWARD_FIXTURES)
def test_fixture_gives_the_same_outputs_with_and_without_graph_passes(pteron_run, tmp_path, name,
                                                                      isa):
    skip_unless(isa)
    entry = next(f for f in manifest()["fixtures"] if f["name"] == name)
    inputs = [FIXTURES / p for p in entry["methods"]["forward"]["inputs"]]
    assert_same(run_both(pteron_run, FIXTURES / entry["file"], inputs, tmp_path, isa),
                f"{name} at {isa}")


@pytest.mark.parametrize("isa", ISA_LEVELS)
def test_ci_zoo_portable_programs_give_the_same_outputs_with_and_without_graph_passes(
        pteron_run, tmp_path, isa):
    """The zoo's CNNs are what the passes are for (test_zoo.py exports them, once a session)."""
    skip_unless(isa)
    import test_zoo
    py = os.environ.get("PTERON_EXPORT_PYTHON")
    if not py or not Path(py).is_file():
        pytest.skip("PTERON_EXPORT_PYTHON is not set (scripts/test.sh sets it)")
    for name in test_zoo.MODELS:
        folder, entries = test_zoo.exported(py, name)
        if "portable" not in entries:
            continue
        entry = entries["portable"]
        inputs = [folder / p for p in entry["methods"]["forward"]["inputs"]]
        sub = tmp_path / name
        sub.mkdir()
        assert_same(run_both(pteron_run, folder / entry["file"], inputs, sub, isa),
                    f"zoo {name} portable at {isa}")


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import capi
    rt = capi.Runtime(sys.argv[2], kernel_libs=("kernels_portable", "kernels_optimized"))
    program = rt.load_file(sys.argv[3])
    m = program.load_method("forward")
    m.set_profiling(True)
    out = m.run([np.load(p) for p in sys.argv[4:]])
    ev = [e for e in m.profile_events() if e["run"] == 0]
    json.dump({"names": [e["name"] for e in ev if e["name"]],
               "nodes": [e["debug_name"] for e in ev if e["debug_name"]],
               "out": [o.tolist() for o in out]}, sys.stdout)
""")


def profile_child(program, inputs, opt):
    env = dict(os.environ, PTERON_GRAPH_OPT=opt)
    env.pop("PTERON_ISA", None)
    r = run([sys.executable, "-c", CHILD, REPO / "tests", build_dir(), program, *inputs],
            timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_cnn_fixture_runs_as_one_region_and_graph_opt_0_runs_every_instruction():
    inputs = [FIXTURES / "cnn.forward.input_0.npy"]
    on = profile_child(FIXTURES / "cnn.pte", inputs, "1")
    off = profile_child(FIXTURES / "cnn.pte", inputs, "0")
    assert "native_call_pteron_nhwc_region" not in off["names"]
    assert on["names"].count("native_call_pteron_nhwc_region") == 1
    # The region stands for the convolutions, batch norms, relus, pooling and mean: one call
    # instead of theirs; what follows it (permute, addmm, log_softmax) runs as before.
    kernels_off = [n for n in off["names"] if n.startswith("native_call_")]
    kernels_on = [n for n in on["names"] if n.startswith("native_call_")]
    assert "native_call_convolution.out" in kernels_off
    assert not any(n.startswith(("native_call_convolution", "native_call__native_batch_norm"))
                   for n in kernels_on)
    assert "native_call__log_softmax.out" in kernels_on
    assert len(kernels_on) < len(kernels_off)
    # Inside, one event per node (batch norms folded, so none of theirs), and the layout changes.
    assert off["nodes"] == []
    assert "nhwc convolution" in on["nodes"] and "nhwc batch norm" not in on["nodes"]
    assert on["nodes"][0] == "nhwc layout (inputs to NHWC)"
    assert on["nodes"][-1] == "nhwc layout (outputs to NCHW)"
    expected = np.load(FIXTURES / "cnn.forward.expected_0.npy")
    np.testing.assert_allclose(np.array(on["out"][0], dtype=np.float32), expected,
                               rtol=1e-4, atol=1e-5)


def test_a_wrong_input_fails_the_same_way_with_and_without_graph_passes(pteron_run, tmp_path):
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((1, 3, 5, 5), dtype=np.float32))  # cnn takes [1, 3, 32, 32]
    errs = []
    for opt in ("0", "1"):
        r = run([pteron_run, FIXTURES / "cnn.pte", "--input", bad, "--output-dir", tmp_path],
                timeout=60, env=env_for("baseline", opt))
        assert r.returncode != 0
        errs.append(r.stderr)
    assert errs[0] == errs[1] and "input 0" in errs[0]


def test_cnn_blocks_fixture_is_one_region_with_every_rewrite():
    """models/export.py's cnn_blocks holds each block the NHWC pass knows: all of it but the
    Linear head (its own linear pass) runs as one region, and every node kind shows in the
    profile; the outputs are eager PyTorch's within the fixture's tolerance."""
    inputs = [FIXTURES / "cnn_blocks.forward.input_0.npy"]
    on = profile_child(FIXTURES / "cnn_blocks.pte", inputs, "1")
    kernels = [n for n in on["names"] if n.startswith("native_call_")]
    assert kernels == ["native_call_pteron_nhwc_region", "native_call_pteron_linear"], kernels
    for kind in ("nhwc convolution", "nhwc max pooling", "nhwc channel shuffle",
                 "nhwc global average pooling", "nhwc multiply", "nhwc depthwise convolution",
                 "nhwc concatenation", "nhwc average pooling"):
        assert kind in on["nodes"], (kind, on["nodes"])
    # Folded and fused: no batch norm, ReLU or add of its own, one clamp (the hardtanh after
    # the average pool), sigmoid and SiLU inside the SE convolutions.
    assert "nhwc batch norm" not in on["nodes"] and "nhwc add" not in on["nodes"]
    assert on["nodes"].count("nhwc clamp") == 1 and "nhwc activation" not in on["nodes"]
    expected = np.load(FIXTURES / "cnn_blocks.forward.expected_0.npy")
    np.testing.assert_allclose(np.array(on["out"][0], dtype=np.float32), expected,
                               rtol=1e-4, atol=1e-5)
