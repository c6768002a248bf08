# SPDX-License-Identifier: BSD-3-Clause
"""The conda packages (recipe/recipe.yaml), installed: scripts/conda.sh builds them offline into a
local channel (PTERON_CONDA_CHANNEL) and installs them with py-rattler into fresh prefixes whose
paths hold a space: PTERON_CONDA_PREFIX (linux-64: libpteron and pteron) and
PTERON_CONDA_WIN_PREFIX (win-64: libpteron and pteron). CI does not build them (two more C++
builds); skipped without those variables.

Checked, linux-64: a C++ consumer found through find_package(pteron) runs the MLP fixture; the
machine's python (the version the module was built for) imports pteron from the prefix with
nothing on PATH or LD_LIBRARY_PATH and runs a fixture; one process doing both (the module,
then a C++ library of the prefix's CMake package loaded with ctypes) maps each pteron library
once and sees one registry; no file in the prefix holds the build prefix, in either slash
style; every IMPORTED_LOCATION exists under the prefix; libpteron's run_exports pin the
SOVERSION's x.x; pteron pins libpteron exactly and holds no copy of its libraries; pteron is
pip's install of the root pyproject.toml: its .dist-info gives importlib.metadata the version,
the requirements and the pteron-verify entry point, whose script runs.
win-64 (built by MSVC): every IMPORTED_LOCATION a .dll in Library/bin, every IMPORTED_IMPLIB a
.lib in Library/lib, no DLL in Library/lib; every binary imports the release CRT
(vcruntime140.dll) and nothing of MinGW; an MSVC consumer built against the prefix runs under
Wine with its DLLs beside it and nothing on PATH; pteron pins libpteron exactly, holds only the module
(one .pyd), and runs a fixture under Wine with the Windows CPython it was built for
(PTERON_WINDOWS_PYTHON), loading the prefix's Library/bin.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run, win_python, wine_run, winpath

def _abs(var):
    v = os.environ.get(var)
    return os.path.abspath(v) if v else None


CHANNEL = _abs("PTERON_CONDA_CHANNEL")
PREFIX = _abs("PTERON_CONDA_PREFIX")
WIN_PREFIX = _abs("PTERON_CONDA_WIN_PREFIX")
pytestmark = pytest.mark.skipif(not (CHANNEL and PREFIX and WIN_PREFIX),
                                reason="PTERON_CONDA_CHANNEL / _PREFIX / _WIN_PREFIX are not set "
                                       "(scripts/conda.sh builds and installs the packages)")
FIXTURE = REPO / "models" / "fixtures" / "mlp_xnnpack"
TEST_PACKAGE = f"-DPTERON_TEST_PACKAGE_DIR={REPO / 'test_package'}"
PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def clean_env(**extra):
    """No PATH entry but the system's, nothing on LD_LIBRARY_PATH or PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")}
    env["PATH"] = "/usr/bin:/bin"
    env.update(extra)
    return env


def cmake_project(src, build, prefix, *args, toolchain=None):
    """Configures and builds `src` against `prefix`; returns the configure output."""
    cfg = ["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
           *args]
    if toolchain:
        cfg += [f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", f"-DCMAKE_FIND_ROOT_PATH={prefix}"]
    else:
        cfg += [f"-DCMAKE_PREFIX_PATH={prefix}"]
    r = run(cfg, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    b = run(["cmake", "--build", build], timeout=600)
    assert b.returncode == 0, b.stdout[-3000:] + b.stderr[-3000:]
    return r.stdout


def imported(configure_output):
    """[(target, property, path)] from tests/conda/CMakeLists.txt's configure lines."""
    out = []
    for line in configure_output.splitlines():
        m = re.search(r"pteron-imported\|([^|]+)\|([^|]+)\|(.+)$", line)
        if m:
            out.append(m.groups())
    return out


def package_record(prefix, name):
    recs = list((Path(prefix) / "conda-meta").glob(f"{name}-[0-9]*.json"))
    assert len(recs) == 1, f"{prefix}: conda-meta records for {name}: {recs}"
    return json.loads(recs[0].read_text())


# ---- linux-64 -----------------------------------------------------------------------------

def test_linux_cxx_consumer_through_find_package(tmp_path):
    cmake_project(REPO / "recipe" / "test", tmp_path / "b", PREFIX, TEST_PACKAGE)
    r = run([tmp_path / "b" / "test_package", REPO / "test_package" / "mlp.pte"], timeout=120,
            env=clean_env())
    assert r.returncode == 0 and "MATCH" in r.stdout, r.stdout + r.stderr
    assert "XnnpackBackend" in r.stdout, r.stdout


def test_linux_python_module_from_the_prefix():
    r = run([sys.executable, REPO / "recipe" / "test" / "run_fixture.py", PREFIX, FIXTURE],
            timeout=120, env=clean_env())
    assert r.returncode == 0 and "matches eager PyTorch" in r.stdout, r.stdout + r.stderr


BOTH = r'''
import ctypes, json, os, sys
import numpy as np
sys.path.insert(0, os.path.join(sys.argv[1], "lib", "{py}", "site-packages"))
import pteron
fixture, both = sys.argv[2], sys.argv[3]
m = pteron.Program.load(fixture + ".pte").load_method("forward")
x = np.load(fixture + ".forward.input_0.npy").astype(np.float32)
y_py = m(x)[0]
lib = ctypes.CDLL(both)
f = lib.pteron_conda_both
f.restype = ctypes.c_int
y_cc = np.zeros(y_py.size, np.float32)
sizes = (ctypes.c_int64 * x.ndim)(*x.shape)
kernels = ctypes.c_int64()
err = ctypes.create_string_buffer(512)
rc = f(str(fixture + ".pte").encode(), x.ctypes.data_as(ctypes.c_void_p), sizes, x.ndim,
       y_cc.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(y_cc.size), ctypes.byref(kernels),
       err, 512)
maps = sorted({{ln.split(None, 5)[5].strip() for ln in open("/proc/self/maps")
               if "libpteron" in ln}})
print(json.dumps(dict(rc=rc, err=err.value.decode(), kernels_cc=kernels.value,
                      kernels_py=len(pteron.operators()), maps=maps,
                      expected=np.load(fixture + ".forward.expected_0.npy").ravel().tolist(),
                      y_py=y_py.ravel().tolist(), y_cc=y_cc.tolist())))
'''


def test_linux_one_process_python_and_cxx_maps_each_library_once(tmp_path):
    np = pytest.importorskip("numpy")
    cmake_project(REPO / "tests" / "conda", tmp_path / "b", PREFIX, "-DBOTH=ON")
    both = tmp_path / "b" / "libboth.so"
    r = run([sys.executable, "-c", BOTH.format(py=PY), PREFIX, FIXTURE, both], timeout=120,
            env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0, got["err"]
    np.testing.assert_allclose(got["y_py"], got["expected"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["y_cc"], got["expected"], rtol=1e-4, atol=1e-5)
    # One registry: the C++ library sees exactly the kernels the module's components registered.
    assert got["kernels_cc"] == got["kernels_py"] > 0, got
    libdir = os.path.realpath(os.path.join(PREFIX, "lib"))
    by_name = {}
    for path in got["maps"]:
        by_name.setdefault(re.sub(r"\.so.*$", "", os.path.basename(path)), set()).add(
            os.path.realpath(path))
    for name in ("libpteron", "libpteron_kernels_portable", "libpteron_kernels_optimized",
                 "libpteron_kernels_quantized", "libpteron_kernels_llm", "libpteron_threadpool",
                 "libpteron_backend_xnnpack"):
        assert name in by_name, f"{name} not mapped: {got['maps']}"
    for name, paths in by_name.items():
        assert len(paths) == 1, f"{name} mapped from {len(paths)} files: {sorted(paths)}"
        assert os.path.dirname(next(iter(paths))) == libdir, f"{name} from {paths}, not {libdir}"


# The C and C++ runtime: conda-forge's compilers and sysroot supply these (their run_exports);
# offline they are the build machine's, and rattler-build names them. Nothing else may be
# linked from outside the prefix (no Debian libXNNPACK.so.0 or libpthreadpool.so.0).
SYSTEM_RUNTIME = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1",
                  "ld-linux-x86-64.so.2", "libpthread.so.0", "libdl.so.2"}


def test_linux_overlinking_only_against_the_c_and_cxx_runtime():
    log = (Path(CHANNEL) / "build-linux-64.log").read_text(encoding="utf-8", errors="replace")
    assert "Artifact:" in log and "libpteron" in log, "not the build log of the packages"
    over = re.findall(r'Overlinking against "([^"]+)" for "([^"]+)"', log)
    # The check ran (it does not with binary_relocation: false): offline it always names the
    # C runtime, which no package of the empty channel provides.
    assert any(lib == "libc.so.6" for lib, _ in over), "rattler-build's linking checks did not run"
    bad = [f"{lib} for {f}" for lib, f in over if lib not in SYSTEM_RUNTIME]
    assert not bad, bad
    assert not re.search(r"^error:", log, re.M), "rattler-build logged errors"


def test_linux_prefix_passes_pteron_verify():
    r = run([sys.executable, "-m", "pteron.verify", PREFIX], timeout=120,
            env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


DIST = r'''
import importlib.metadata as md, json, sys
d = md.distribution("pteron")
print(json.dumps(dict(version=d.version, path=str(d._path), requires=d.requires or [],
                      scripts={e.name: e.value for e in d.entry_points
                               if e.group == "console_scripts"},
                      installer=(d.read_text("INSTALLER") or "").strip(),
                      files=[str(f) for f in d.files or []])))
'''


def test_linux_pteron_is_pips_install_with_its_metadata_and_entry_point():
    site = Path(PREFIX) / "lib" / PY / "site-packages"
    env = clean_env(PYTHONPATH=str(site))
    r = run([sys.executable, "-c", DIST], timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["version"] == (REPO / "VERSION").read_text().strip()
    assert Path(got["path"]).parent == site, got["path"]
    assert got["scripts"] == {"pteron-verify": "pteron.verify:main"}, got["scripts"]
    assert any(re.match(r"_pteron\..*\.so$", Path(f).name) for f in got["files"]), got["files"]
    # RECORD lists what is there; no direct_url.json (it would name the build's work folder).
    dist = Path(got["path"])
    assert not (dist / "direct_url.json").exists()
    missing = [f for f in got["files"] if not (site / f).exists()]
    assert not missing, missing
    # pip check's question for this distribution: every requirement (without an extra) is
    # installed beside it.
    reqs = [q for q in got["requires"] if "extra ==" not in q]
    assert reqs and all(re.match(r"[A-Za-z0-9_.-]+", q) for q in reqs), reqs
    for q in reqs:
        name = re.match(r"[A-Za-z0-9_.-]+", q).group(0)
        c = run([sys.executable, "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
                timeout=60, env=env)
        assert c.returncode == 0, f"pteron requires {q}, which is not installed: {c.stderr}"
    script = Path(PREFIX) / "bin" / "pteron-verify"
    h = run([sys.executable, script, "--help"], timeout=120, env=env)
    assert h.returncode == 0 and "PACKAGE_DIR" in h.stdout, h.stdout + h.stderr


def _build_prefix_markers():
    """The strings a file leaking rattler-build's build prefix would hold, both slash styles:
    the host prefix placeholder, and the channel's bld/ folder (where every build ran)."""
    bld = str(Path(CHANNEL).resolve() / "bld")
    marks = {"host_env_placehold", bld, bld.replace("/", "\\"), "build_env/"}
    return [m.encode() for m in marks]


@pytest.mark.parametrize("which", ["linux-64", "win-64"])
def test_no_file_holds_the_build_prefix(which):
    prefix = Path(PREFIX if which == "linux-64" else WIN_PREFIX)
    marks = _build_prefix_markers()
    bad, seen = [], 0
    for dirpath, _, files in os.walk(prefix):
        for fn in files:
            p = Path(dirpath) / fn
            if p.is_symlink():
                continue
            data = p.read_bytes()
            seen += 1
            hits = [m.decode() for m in marks if m in data]
            if hits:
                bad.append(f"{p.relative_to(prefix)}: {hits}")
    assert seen > 20, f"{prefix}: only {seen} files"
    assert not bad, "\n".join(bad)


def test_linux_every_imported_location_exists_under_the_prefix(tmp_path):
    out = cmake_project(REPO / "tests" / "conda", tmp_path / "b", PREFIX)
    locs = imported(out)
    targets = {t for t, _, _ in locs}
    assert {"pteron::runtime", "pteron::kernels_portable", "pteron::threadpool",
            "pteron::backend_xnnpack"} <= targets, out[-2000:]
    root = os.path.realpath(PREFIX)
    for t, prop, path in locs:
        assert os.path.isfile(path), f"{t} {prop} {path} does not exist"
        assert os.path.realpath(path).startswith(root + os.sep), f"{t} {prop} {path} outside"


def _run_exports(pkg_name, platform):
    try:
        from rattler.package import RunExportsJson
    except ImportError:
        pytest.fail("py-rattler is not installed in this interpreter: run tests/test_conda.py "
                    "through scripts/conda.sh (it installs it)", pytrace=False)
    pkgs = sorted((Path(CHANNEL) / platform).glob(f"{pkg_name}-[0-9]*.conda"))
    assert pkgs, f"no {pkg_name} package in {CHANNEL}/{platform}"
    return RunExportsJson.from_package_archive(pkgs[-1])


@pytest.mark.parametrize("platform", ["linux-64", "win-64"])
def test_libpteron_run_exports_pin_the_abi(platform):
    version = (REPO / "VERSION").read_text().strip()
    major, minor, _ = version.split(".")
    want = f"libpteron >={version},<{major}.{int(minor) + 1}.0a0"
    assert _run_exports("libpteron", platform).weak == [want]


@pytest.mark.parametrize("platform", ["linux-64", "win-64"])
def test_pteron_pins_libpteron_exactly_and_holds_no_library(platform):
    prefix = PREFIX if platform == "linux-64" else WIN_PREFIX
    rec = package_record(prefix, "pteron")
    lib = package_record(prefix, "libpteron")
    assert any(re.fullmatch(rf"libpteron =?={re.escape(lib['version'])} {lib['build']}", d)
               for d in rec["depends"]), rec["depends"]
    # The module, and the recipe's test files (rattler-build ships them in etc/conda/test-files);
    # on linux-64 also pip's .dist-info and the entry point's script (the offline win-64 build
    # is CMake's: recipe/offline/build_pteron.sh).
    files = [f for f in rec["files"] if not f.startswith("etc/conda/test-files/pteron/")]
    site = f"lib/{PY}/site-packages" if platform == "linux-64" else "Lib/site-packages"
    version = (REPO / "VERSION").read_text().strip()
    allowed = (f"{site}/pteron/",)
    if platform == "linux-64":
        allowed += (f"{site}/pteron-{version}.dist-info/", "bin/pteron-verify")
    assert files and all(f.startswith(allowed) for f in files), files
    exts = [f for f in rec["files"] if re.search(r"\.(so|dll|pyd)(\.|$)", f)]
    assert len(exts) == 1 and "/_pteron" in exts[0], exts  # the extension, no libpteron copy
    if platform == "win-64":
        assert exts[0].endswith(".cp311-win_amd64.pyd"), exts


# ---- win-64 -------------------------------------------------------------------------------

def test_win_layout_imported_locations_and_implibs(tmp_path, msvc_bin):
    lib = Path(WIN_PREFIX) / "Library"
    out = cmake_project(REPO / "tests" / "conda", tmp_path / "b", lib,
                        toolchain=msvc_bin / "msvc-wine.cmake")
    locs = imported(out)
    assert {t for t, _, _ in locs} >= {"pteron::runtime", "pteron::backend_xnnpack"}, out[-2000:]
    for t, prop, path in locs:
        p = Path(path)
        assert p.is_file(), f"{t} {prop} {path} does not exist"
        if prop.startswith("IMPORTED_LOCATION"):
            assert p.suffix == ".dll" and p.parent == lib / "bin", f"{t} {prop} {path}"
        else:
            # MSVC's import libraries (the package is built by MSVC, as conda-forge's win-64)
            assert p.suffix == ".lib" and p.parent == lib / "lib", f"{t} {prop} {path}"
    assert any(prop.startswith("IMPORTED_IMPLIB") for _, prop, _ in locs), locs
    dlls_in_lib = [str(p) for p in (lib / "lib").rglob("*") if p.suffix.lower() == ".dll"]
    assert not dlls_in_lib, dlls_in_lib
    assert (lib / "include" / "pteron" / "pteron.h").is_file()
    assert (lib / "lib" / "cmake" / "pteron" / "pteronConfig.cmake").is_file()
    assert (lib / "bin" / "pteron-run.exe").is_file()


def test_win_binaries_are_msvc_built_with_the_release_crt():
    """Every DLL, pteron-run.exe and the extension import the release CRT of MSVC
    (vcruntime140.dll), no debug CRT, nothing of MinGW and not msvcrt.dll."""
    import pefile

    files = sorted((Path(WIN_PREFIX) / "Library" / "bin").glob("pteron*")) + \
        sorted((Path(WIN_PREFIX) / "Lib" / "site-packages" / "pteron").glob("*.pyd"))
    assert len(files) >= 7, files
    for f in files:
        pe = pefile.PE(str(f), fast_load=True)
        pe.parse_data_directories(
            directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]])
        deps = [e.dll.decode().lower() for e in pe.DIRECTORY_ENTRY_IMPORT]
        assert "vcruntime140.dll" in deps, (f.name, deps)
        bad = [d for d in deps if d.startswith(("libstdc++", "libgcc", "libwinpthread",
                                                "vcruntime140d", "ucrtbased")) or d == "msvcrt.dll"]
        assert not bad, (f.name, bad)


def test_win_consumer_runs_under_wine_with_nothing_on_path(tmp_path, wine_env, msvc_bin):
    """An MSVC consumer (recipe/test, as the recipe's own test builds it on Windows)."""
    lib = Path(WIN_PREFIX) / "Library"
    cmake_project(REPO / "recipe" / "test", tmp_path / "b", lib, TEST_PACKAGE,
                  toolchain=msvc_bin / "msvc-wine.cmake")
    exe = tmp_path / "b" / "test_package.exe"
    assert exe.is_file()
    beside = sorted(p.name for p in exe.parent.glob("*.dll"))
    assert "pteron.dll" in beside and "pteron_backend_xnnpack.dll" in beside, beside
    env = {k: v for k, v in wine_env.items() if k != "WINEPATH"}
    r = wine_run(env, exe, winpath(REPO / "test_package" / "mlp.pte"), cwd=exe.parent, timeout=180)
    assert r.returncode == 0 and "MATCH" in r.stdout, str(r)
    assert "XnnpackBackend" in r.stdout, str(r)


def test_win_python_module_from_the_prefix_under_wine(tmp_path, wine_env, windows_python):
    """The win-64 module with the Windows CPython it was built for (scripts/windows_python.py),
    here an interpreter outside the prefix whose path holds the prefix's Lib/site-packages: the
    package finds the prefix's Library/bin beside its own folder, and runs the fixture."""
    exe = win_python(windows_python, tmp_path / "python",
                     [Path(WIN_PREFIX) / "Lib" / "site-packages"])
    env = {k: v for k, v in wine_env.items() if k != "WINEPATH"}
    r = wine_run(env, exe, winpath(REPO / "recipe" / "test" / "run_fixture.py"),
                 winpath(WIN_PREFIX), winpath(FIXTURE), cwd=tmp_path, timeout=180, pipes=True)
    assert r.returncode == 0 and "matches eager PyTorch" in r.stdout, str(r)
    assert winpath(Path(WIN_PREFIX) / "Library" / "bin" / "pteron.dll").lower() in r.stdout.lower(), \
        str(r)
