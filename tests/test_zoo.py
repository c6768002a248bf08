# SPDX-License-Identifier: BSD-3-Clause
"""The model zoo (models/zoo.py): real torchvision architectures, exported on
demand with upstream's exporter (cached, see models/zoo.py), run unchanged by
pteron-run on Linux (portable and XNNPACK-lowered programs, the Linux build in
PTERON_BUILD_DIR); tests/test_windows_mingw.py and tests/test_windows_msvc.py run the same
programs, portable and XNNPACK, under Wine through each Windows package.

Tolerance, relative to upstream's own runtime on the same program and input
(both outputs saved by the export): with err_pteron = max |pteron - eager| and
err_upstream = max |upstream - eager|, an output passes when
err_pteron <= max(4 * err_upstream, 1e-5 * max |eager|).

CI runs the models whose entry has ci=True; PTERON_ZOO=all (scripts/slow.sh)
runs every model. The export needs upstream's exporter: PTERON_EXPORT_PYTHON
(scripts/test.sh makes .venv-export and sets it). Without it the tests skip,
saying so.
"""
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, build_dir, run

sys.path.insert(0, str(REPO / "models"))
import zoo  # noqa: E402  (the registry needs no torch)

ALL = os.environ.get("PTERON_ZOO", "") == "all"
MODELS = [m.name for m in zoo.ZOO if ALL or m.ci]
EXPORT_TIMEOUT = 1800  # seconds, one model's two exports and upstream's two runs
RUN_TIMEOUT = 600


def tolerance_check(actual, eager, upstream, quantized=False):
    """(passes, err_pteron, err_upstream, bound) of one float output: within 4x upstream's
    error, with a floor of 1e-5 of the largest magnitude, or (a quantized model, family
    "quantized") of one quantum of the output's range over 8 bits."""
    a, e, u = (np.asarray(x, dtype=np.float64) for x in (actual, eager, upstream))
    err_p = float(np.max(np.abs(a - e))) if e.size else 0.0
    err_u = float(np.max(np.abs(u - e))) if e.size else 0.0
    if quantized:
        floor = float(e.max() - e.min()) / 255.0 if e.size else 0.0
    else:
        floor = 1e-5 * (float(np.max(np.abs(e))) if e.size else 0.0)
    bound = max(4 * err_u, floor)
    return bool(err_p <= bound), err_p, err_u, bound


@pytest.fixture(scope="session")
def export_python():
    p = os.environ.get("PTERON_EXPORT_PYTHON")
    if not p or not Path(p).is_file():
        pytest.skip("PTERON_EXPORT_PYTHON is not set to upstream's exporter (a python with torch "
                    "and executorch): scripts/test.sh makes .venv-export and sets it")
    return p


_folders = {}


def exported(export_python, name):
    """(folder, manifest entries by variant) of one zoo model, exported once per session
    (and kept in the cache across sessions)."""
    if name not in _folders:
        r = run([export_python, REPO / "models" / "zoo.py", "export", name],
                timeout=EXPORT_TIMEOUT)
        assert r.returncode == 0, f"exporting {name} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
        line = [l for l in r.stdout.splitlines() if l.startswith(name + " ")][-1]
        folder = Path(line.split(" ", 1)[1])
        manifest = json.loads((folder / "manifest.json").read_text())
        _folders[name] = (folder, {e["variant"]: e for e in manifest["fixtures"]})
    return _folders[name]


def check_outputs(folder, entry, got_files, what):
    spec = entry["methods"]["forward"]
    assert len(got_files) == len(spec["expected"]) == len(entry["upstream"]), what
    for i, (g, e, u) in enumerate(zip(got_files, spec["expected"], entry["upstream"])):
        assert g.is_file(), f"{what}: output {i} was not written ({g})"
        a, ex, up = np.load(g), np.load(folder / e), np.load(folder / u)
        assert a.dtype == ex.dtype and a.shape == ex.shape, \
            f"{what} output {i}: {a.dtype}{list(a.shape)}, eager gives {ex.dtype}{list(ex.shape)}"
        ok, err_p, err_u, bound = tolerance_check(a, ex, up, entry.get("family") == "quantized")
        assert ok, (f"{what} output {i}: err pteron {err_p:.3g} > bound {bound:.3g} "
                    f"(err upstream {err_u:.3g})")


@pytest.mark.parametrize("variant", zoo.VARIANTS)
@pytest.mark.parametrize("name", MODELS)
def test_zoo_program_is_as_close_to_eager_as_upstream_through_pteron_run(
        export_python, pteron_run, tmp_path, name, variant):
    folder, entries = exported(export_python, name)
    entry = entries[variant]
    if variant == "xnnpack":
        lib = build_dir() / "libpteron_backend_xnnpack.so"
        assert lib.exists(), f"{lib} is missing: the Linux build must build backend_xnnpack"
        assert entry["delegates"] == ["XnnpackBackend"], entry["delegates"]
    cmd = [pteron_run, folder / entry["file"], "--output-dir", tmp_path, "--iterations", "1"]
    for p in entry["methods"]["forward"]["inputs"]:
        cmd += ["--input", folder / p]
    r = run(cmd, timeout=RUN_TIMEOUT)
    assert r.returncode == 0, f"pteron-run {name} {variant}: {r.stderr[-3000:]}"
    n = len(entry["methods"]["forward"]["expected"])
    check_outputs(folder, entry, [tmp_path / f"output_{i}.npy" for i in range(n)],
                  f"{name} {variant} (pteron-run, Linux)")


def test_zoo_tolerance_fails_an_output_further_from_eager_than_upstream_allows():
    eager = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    upstream = eager + np.float32(1e-4)
    assert tolerance_check(eager + np.float32(3e-4), eager, upstream)[0]
    ok, err_p, err_u, bound = tolerance_check(eager + np.float32(5e-4), eager, upstream)
    assert not ok and bound == pytest.approx(4e-4, rel=1e-3)
    # an exact upstream leaves the floor: 1e-5 of the largest magnitude
    assert tolerance_check(eager + np.float32(2e-5), eager, eager)[0]
    assert not tolerance_check(eager + np.float32(4e-5), eager, eager)[0]
    # a quantized model's floor is one quantum of the output's range (5 / 255 here)
    assert tolerance_check(eager + np.float32(0.019), eager, eager, quantized=True)[0]
    assert not tolerance_check(eager + np.float32(0.021), eager, eager, quantized=True)[0]


def test_zoo_registry_has_the_families_and_a_ci_set_of_four():
    fams = {m.family for m in zoo.ZOO}
    assert {"depthwise", "residual", "channel-shuffle", "squeeze-excite", "dense-concat",
            "attention", "segmentation", "vision-transformer", "decoder", "quantized"} <= fams
    assert {"mobilenet_v2_int8", "resnet18_int8"} <= {m.name for m in zoo.ZOO}
    classifiers = [m for m in zoo.ZOO
                   if m.family not in ("segmentation", "vision-transformer", "decoder",
                                       "quantized")]
    assert len(classifiers) >= 8
    assert sum(m.ci for m in zoo.ZOO) >= 4
    assert len({m.name for m in zoo.ZOO}) == len(zoo.ZOO)


def test_zoo_export_keeps_a_cached_model_instead_of_exporting_it_again(export_python):
    name = MODELS[0]
    folder, entries = exported(export_python, name)
    ptes = {v: folder / e["file"] for v, e in entries.items()}
    before = {v: p.stat().st_mtime_ns for v, p in ptes.items()}
    r = run([export_python, REPO / "models" / "zoo.py", "export", name], timeout=EXPORT_TIMEOUT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"{name} {folder}" in r.stdout.splitlines()
    assert {v: p.stat().st_mtime_ns for v, p in ptes.items()} == before, \
        f"{name} was exported again although its cache entry matches"


def test_zoo_export_of_an_unknown_model_fails_naming_it():
    r = run([sys.executable, REPO / "models" / "zoo.py", "export", "no_such_net"], timeout=60)
    assert r.returncode == 2 and "no_such_net" in r.stderr, r


@pytest.mark.parametrize("args", [["--all", "--ci"], ["--all", "resnet18"], ["--ci", "no_such_net"]])
def test_zoo_export_refuses_a_model_list_given_two_ways(args):
    r = run([sys.executable, REPO / "models" / "zoo.py", "export", *args], timeout=60)
    assert r.returncode == 2 and "one of the three" in r.stderr, r
