# SPDX-License-Identifier: BSD-3-Clause
"""The Windows wheels built by MSVC (scripts/windows_wheel.py from the MSVC package):
the CPython 3.11 wheel (conftest's windows_wheel: PTERON_WINDOWS_WHEEL, or the block of docs/packaging.md
builds it), and
PTERON_WINDOWS_ABI3_WHEEL, the stable-ABI wheel for CPython 3.12 and later (scripts/slow.sh
builds it; PTERON_WINDOWS_PYTHON_312 and _313 run it). Each is:

- laid out as the Linux wheel: pteron/ with the extension (bindings only), pteron/lib with
  every DLL and import library once, the CMake package and the headers; no CRT DLL, nothing
  of MinGW; pteron-verify passes it;
- installed by pip (pip install --target, for win_amd64 and that CPython) and imported by the
  Windows CPython under Wine with nothing on PATH: each pteron DLL mapped once, from the
  wheel's pteron/lib; fixtures, portable and XNNPACK-lowered, match eager PyTorch;
- a CMake package an MSVC C++ consumer builds against (find_package(pteron)) and runs with
  the DLLs $<TARGET_RUNTIME_DLLS> put beside it.
"""
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, WIN_PTERON_MODULES, manifest, pip_install_windows, run, win_python, \
    wine_run, winpath

pytestmark = pytest.mark.skipif(not shutil.which("wine"),
                                reason="wine is needed (scripts/test.sh installs it)")

# (wheel variable, its CPython tag, the Windows CPythons that run it)
WHEELS = {
    "cp311": ("PTERON_WINDOWS_WHEEL", "3.11", ("PTERON_WINDOWS_PYTHON",)),  # or built here
    "abi3": ("PTERON_WINDOWS_ABI3_WHEEL", "3.12",
             ("PTERON_WINDOWS_PYTHON_312", "PTERON_WINDOWS_PYTHON_313")),
}
CRT_AND_MINGW = ("vcruntime140", "msvcp140", "ucrtbase", "api-ms-win-", "concrt140",
                 "libstdc++", "libgcc", "libwinpthread")


def wheel_of(kind: str, request) -> Path:
    if kind == "cp311":
        return request.getfixturevalue("windows_wheel")
    p = os.environ.get(WHEELS[kind][0])
    if not p:
        pytest.skip(f"{WHEELS[kind][0]} is not set: scripts/slow.sh builds the stable-ABI wheel")
    return Path(p)


def pythons_of(kind: str):
    out = []
    for var in WHEELS[kind][2]:
        p = os.environ.get(var)
        if not p or not (Path(p) / "stamp").is_file():
            pytest.skip(f"{var} is not set to a Windows CPython made by scripts/windows_python.py")
        out.append(Path(p))
    return out


@pytest.fixture(scope="module", params=list(WHEELS))
def kind(request):
    return request.param


@pytest.fixture(scope="module")
def wheel(kind, request):
    return wheel_of(kind, request)


@pytest.fixture(scope="module")
def installed(kind, wheel, tmp_path_factory):
    """The wheel installed by pip into a fresh folder (site-packages of a Windows CPython) for
    win_amd64 and the wheel's CPython; numpy is the Windows CPython's own."""
    return pip_install_windows(wheel, tmp_path_factory.mktemp(f"site-{kind}") / "site packages",
                               WHEELS[kind][1])


def test_wheel_files_are_the_package_once_without_crt_or_mingw(kind, wheel):
    whl = wheel
    names = zipfile.ZipFile(whl).namelist()
    pyds = [n for n in names if n.endswith(".pyd")]
    want = "pteron/_pteron.pyd" if kind == "abi3" else "pteron/_pteron.cp311-win_amd64.pyd"
    assert pyds == [want], pyds
    assert whl.name.endswith("-cp312-abi3-win_amd64.whl" if kind == "abi3"
                             else "-cp311-cp311-win_amd64.whl"), whl.name
    dlls = sorted(n for n in names if n.endswith(".dll"))
    assert all(n.startswith("pteron/lib/pteron") for n in dlls), dlls
    assert "pteron/lib/pteron.dll" in dlls and "pteron/lib/pteron_kernels_portable.dll" in dlls
    for d in dlls:  # each DLL with its import library, once
        assert names.count(d) == 1 and d[:-4] + ".lib" in names, d
    low = [n.lower().rsplit("/", 1)[-1] for n in names]
    assert not [n for n in low if n.startswith(CRT_AND_MINGW)], low
    for f in ("pteron/include/pteron/pteron.h", "pteron/include/pteron/pteron.hpp",
              "pteron/lib/cmake/pteron/pteronConfig.cmake", "pteron/_runtime.py",
              "pteron/verify.py", "pteron-{}.dist-info/licenses/LICENSE".format(
                  whl.name.split("-")[1])):
        assert f in names, f
    # Each licence text once (check-wheel-contents W002): pteron's in the dist-info only.
    texts = [n.rsplit("/", 1)[-1] for n in names if "/licenses/" in n]
    assert len(texts) == len(set(texts)), texts
    comps = zipfile.ZipFile(whl).read("pteron/lib/cmake/pteron/pteron-components.cmake").decode()
    assert '_LOCATION "lib/pteron.dll"' in comps and '"bin/' not in comps, comps


def test_pteron_verify_passes_the_wheel(kind, wheel):
    r = run([sys.executable, "-m", "pteron.verify", wheel], timeout=300,
            env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    assert r.returncode == 0 and "checks passed" in r.stdout, r.stdout[-4000:] + r.stderr
    ext = "_pteron.pyd" if kind == "abi3" else "_pteron.cp311-win_amd64.pyd"
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("dependencies")
                and ext in ln)
    # the bindings only: the runtime and CPython, no kernel library or delegate
    assert "pteron.dll (pteron runtime)" in line and "(CPython)" in line, line
    assert "pteron_kernels" not in line and "pteron_backend" not in line, line


# A child's report: every loaded pteron*.dll with its file, two fixtures against eager, and
# the components the runtime loaded.
CHILD = r"""
import sys, numpy as np, pteron
res = {}
for name in NAMES:
    spec = SPECS[name]
    m = pteron.Program.load(FIX + spec["file"]).load_method("forward")
    ins = [np.load(FIX + p) for p in spec["methods"]["forward"]["inputs"]]
    outs = m(*ins)
    exp = [np.load(FIX + e) for e in spec["methods"]["forward"]["expected"]]
    res[name] = [len(outs) == len(exp)] + [
        bool(np.allclose(o, e, rtol=spec["rtol"], atol=spec["atol"])) for o, e in zip(outs, exp)]
print(json.dumps({"version": sys.version.split()[0], "components": pteron.components(),
                  "modules": pteron_modules(), "diffs": res}))
"""


def test_installed_wheel_imports_with_nothing_on_path_and_matches_eager(kind, installed,
                                                                       wine_env, tmp_path):
    names = ["cnn", "cnn_xnnpack"]
    specs = {f["name"]: f for f in manifest()["fixtures"] if f["name"] in names}
    assert sorted(specs) == names
    code = ("import json\n" f"NAMES = {names!r}\nSPECS = json.loads({json.dumps(specs)!r})\n"
            f"FIX = {winpath(FIXTURES) + chr(92)!r}\n" + WIN_PTERON_MODULES + CHILD)
    lib = winpath(installed / "pteron" / "lib").lower()
    for wp in pythons_of(kind):
        exe = win_python(wp, tmp_path / wp.name, [installed])
        work = tmp_path / f"work-{wp.name}"
        work.mkdir()
        (work / "child.py").write_text(code)
        r = wine_run(wine_env, exe, "child.py", cwd=work, timeout=300, pipes=True,
                     extra_env={"WINEPATH": ""})  # nothing on PATH
        assert r.returncode == 0, str(r)
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert d["version"].startswith(wp.name.rsplit("-", 1)[-1] + "."), (d["version"], wp)
        assert {"runtime", "kernels_portable", "kernels_optimized", "threadpool",
                "backend_xnnpack"} <= set(d["components"]), d
        files = [f.lower() for f in d["modules"]]
        base = [f.rsplit("\\", 1)[1] for f in files]
        assert sorted(base) == sorted(set(base)), files  # each DLL mapped once
        assert all(f.rsplit("\\", 1)[0] == lib for f in files), (files, lib)
        assert {"pteron.dll", "pteron_kernels_portable.dll", "pteron_backend_xnnpack.dll"} \
            <= set(base), base
        assert sorted(d["diffs"]) == names and all(
            len(v) > 1 and all(v) for v in d["diffs"].values()), d["diffs"]  # allclose each


def test_msvc_consumer_builds_against_the_installed_wheel_and_runs(kind, installed, msvc_bin,
                                                                   wine_env, tmp_path):
    if kind == "abi3":
        pytest.skip("the C++ side of both wheels is the same package: the cp311 run checks it")
    bdir = tmp_path / "b"
    prefix = installed / "pteron"
    r = run(["cmake", "-S", REPO / "tests" / "consumer", "-B", bdir, "-G", "Ninja",
             "-DCMAKE_BUILD_TYPE=Release", f"-DPTERON_SOURCE_DIR={REPO}",
             "-DCOMPONENTS=kernels_portable;kernels_optimized;threadpool;backend_xnnpack",
             f"-DCMAKE_TOOLCHAIN_FILE={msvc_bin / 'msvc-wine.cmake'}",
             f"-DCMAKE_FIND_ROOT_PATH={prefix}", f"-Dpteron_DIR={prefix / 'lib/cmake/pteron'}",
             "-DCOPY_DLLS=ON"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", bdir], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    copied = sorted(p.name for p in bdir.glob("*.dll"))
    assert {"pteron.dll", "pteron_kernels_portable.dll", "pteron_backend_xnnpack.dll"} \
        <= set(copied), copied
    for name in ("cnn", "cnn_xnnpack"):
        spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
        m = spec["methods"]["forward"]
        r = wine_run(wine_env, bdir / "consumer.exe", winpath(FIXTURES / spec["file"]),
                     "forward", *[winpath(FIXTURES / p) for p in m["inputs"]], "--",
                     *[winpath(FIXTURES / p) for p in m["expected"]], cwd=bdir,
                     extra_env={"WINEPATH": ""})
        assert r.returncode == 0 and "consumer: outputs match" in r.stdout, f"{name}: {r}"
