"""Windows DLLs (MinGW-w64 cross build) run under Wine: the consumer scenarios
of tests/test_consumer.py for PE, plus the load check per binary, the ABI
refusal and clean exits.

The MinGW tree is PTERON_MINGW_BUILD_DIR (scripts/test.sh builds it) or
build-mingw/, configured and built here when needed. It is installed into a
temporary prefix; consumers are built from tests/consumer with
cmake/toolchain-mingw-w64.cmake and find_package(pteron) through
CMAKE_FIND_ROOT_PATH. Programs run under Wine, headless, in a prefix this module
creates, with their DLLs beside them and nothing added to PATH or WINEPATH.
Every program gets a timeout; a hang fails as a named timeout.
"""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, REPO, manifest

MINGW_CXX = "x86_64-w64-mingw32-g++-posix"
MINGW_CC = "x86_64-w64-mingw32-gcc-posix"
OBJDUMP = "x86_64-w64-mingw32-objdump"
TOOLCHAIN = REPO / "cmake" / "toolchain-mingw-w64.cmake"
WINE = shutil.which("wine")

pytestmark = pytest.mark.skipif(
    not (shutil.which(MINGW_CXX) and WINE),
    reason=f"{MINGW_CXX} and wine are needed (Debian: mingw-w64 wine64; scripts/test.sh installs them)")

# What a pteron binary may import besides other pteron DLLs: Windows itself.
# libstdc++-6.dll, libgcc_s_seh-1.dll and libwinpthread-1.dll are linked
# statically (README, "Windows (MinGW) runtime DLLs").
SYSTEM_DLLS = re.compile(r"^(kernel32|kernelbase|ntdll|msvcrt|ucrtbase|user32|advapi32|shell32|ole32|"
                         r"oleaut32|ws2_32|bcrypt|api-ms-win-.*|ext-ms-win-.*)\.dll$", re.I)


def _run(cmd, timeout=300, **kw):
    try:
        return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail(f"timeout: {' '.join(map(str, cmd))[:300]} did not finish within {timeout} s")


def winpath(p) -> str:
    """An absolute Windows path for a file of this machine (Wine's Z: is /)."""
    return "Z:" + str(Path(p).resolve()).replace("/", "\\")


class Ran:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr

    def __str__(self):
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def wine_run(env, exe, *args, cwd, timeout=120, extra_env=None) -> Ran:
    """Runs a Windows program under Wine. stdout and stderr go to files, not
    pipes: a Wine service started on the way would hold a pipe open."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([WINE, str(exe), *map(str, args)], stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err, cwd=cwd, env=dict(env, **(extra_env or {})))
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            pytest.fail(f"timeout: {Path(exe).name} {' '.join(map(str, args))[:200]} "
                        f"did not exit within {timeout} s under Wine")
        out.seek(0)
        err.seek(0)
        text = lambda f: f.read().decode("utf-8", "replace").replace("\r\n", "\n")
        return Ran(rc, text(out), text(err))


def imports(binary):
    r = _run([OBJDUMP, "-p", binary], timeout=60)
    assert r.returncode == 0, r.stderr
    return [l.split("DLL Name:")[1].strip() for l in r.stdout.splitlines() if "DLL Name:" in l]


def exports(binary):
    r = _run([OBJDUMP, "-p", binary], timeout=60)
    assert r.returncode == 0, r.stderr
    names, inside = [], False
    for line in r.stdout.splitlines():
        if "[Ordinal/Name Pointer] Table" in line:
            inside = True
            continue
        if inside:
            m = re.match(r"\s+\[\s*\d+\]\s+(\S+)", line)
            if not m:
                break
            names.append(m.group(1))
    return names


def dll_name(component):
    return "pteron.dll" if component == "runtime" else f"pteron_{component}.dll"


def fixture_args(name, method="forward"):
    spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
    m = spec["methods"][method]
    return ([winpath(FIXTURES / spec["file"]), method, *[winpath(FIXTURES / p) for p in m["inputs"]],
             "--", *[winpath(FIXTURES / p) for p in m["expected"]]])


# ---- session fixtures: one MinGW build, one install, one Wine prefix ---------

def mingw_build_dir() -> Path:
    return Path(os.environ.get("PTERON_MINGW_BUILD_DIR", REPO / "build-mingw"))


@pytest.fixture(scope="session")
def mingw_build():
    d = mingw_build_dir()
    if not (d / "build.ninja").exists():
        r = _run(["cmake", "-S", REPO, "-B", d, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                  f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}"], timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
    # Up to date when scripts/test.sh has built it; a cold build takes minutes.
    r = _run(["cmake", "--build", d], timeout=1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr
    assert (d / "pteron.dll").exists() and (d / "libpteron.dll.a").exists()
    return d


def install(build, prefix):
    r = _run(["cmake", "--install", build, "--prefix", prefix], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


@pytest.fixture(scope="session")
def prefix(mingw_build, tmp_path_factory):
    return install(mingw_build, tmp_path_factory.mktemp("mingw-install") / "pteron")


def components(prefix):
    text = (prefix / "lib" / "cmake" / "pteron" / "pteron-components.cmake").read_text()
    line = next(l for l in text.splitlines() if l.startswith("set(PTERON_PACKAGE_COMPONENTS"))
    return line.split(" ", 1)[1].rstrip(")").split(";")


def linkable(prefix):
    """The kernel libraries, then the thread pool: what a full consumer links."""
    cs = components(prefix)
    return [c for c in cs if c.startswith("kernels_")] + [c for c in cs if c == "threadpool"]


def require_component(mingw_build, prefix, component, option):
    """Skips when the build was configured without the component; fails when
    it should be there and is not."""
    if component in components(prefix):
        return
    cache = (mingw_build / "CMakeCache.txt").read_text()
    if re.search(rf"^{option}:BOOL=(OFF|0|FALSE|NO)$", cache, re.M | re.I):
        pytest.skip(f"the MinGW build has {option}=OFF")
    pytest.fail(f"the MinGW package has no {component} component")


@pytest.fixture(scope="session")
def wine_env(tmp_path_factory):
    """A fresh, headless Wine prefix. Its wineserver stays up for 60 s after the
    last program exits (not forever, should this process die), and is stopped
    at the end of the session."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("WINEPATH", "DISPLAY", "WAYLAND_DISPLAY", "WINELOADER", "WINESERVER")}
    env.update(WINEPREFIX=str(tmp_path_factory.mktemp("wineprefix")), WINEDEBUG="-all",
               WINEDLLOVERRIDES="mscoree,mshtml=")  # no Mono / Gecko installers
    server = shutil.which("wineserver")
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    if server:
        subprocess.run([server, "-p60"], timeout=60, **quiet)
    try:
        subprocess.run([WINE, "wineboot", "--init"], timeout=300, **quiet)
    except subprocess.TimeoutExpired:
        pytest.fail("timeout: creating the Wine prefix (wineboot --init) took over 300 s")
    yield env
    if server:
        subprocess.run([server, "-k"], timeout=60, **quiet)


@pytest.fixture(scope="session")
def win_loader(tmp_path_factory):
    exe = tmp_path_factory.mktemp("win-loader") / "win_loader.exe"
    r = _run([MINGW_CC, "-municode", "-O1", "-Wall", "-Wextra", "-Werror", "-static",
              REPO / "tests" / "native" / "win_loader.c", "-o", exe], timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="session")
def consumer(tmp_path_factory):
    """build(prefix, components, keep_anchors, copy_dlls, cxx_flags) -> consumer.exe,
    each configuration built once per session."""
    root = tmp_path_factory.mktemp("mingw-consumers")
    built = {}

    def build(prefix, comps, keep_anchors=True, copy_dlls=True, cxx_flags=""):
        key = (str(prefix), tuple(comps), keep_anchors, copy_dlls, cxx_flags)
        if key not in built:
            bdir = root / f"c{len(built)}"
            r = _run(["cmake", "-S", REPO / "tests" / "consumer", "-B", bdir, "-G", "Ninja",
                      f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}", "-DCMAKE_BUILD_TYPE=Release",
                      f"-DCMAKE_FIND_ROOT_PATH={prefix}", f"-DPTERON_SOURCE_DIR={REPO}",
                      f"-DCOMPONENTS={';'.join(comps)}",
                      f"-DKEEP_ANCHORS={'ON' if keep_anchors else 'OFF'}",
                      f"-DCOPY_DLLS={'ON' if copy_dlls else 'OFF'}", f"-DCMAKE_CXX_FLAGS={cxx_flags}"])
            assert r.returncode == 0, r.stdout + r.stderr
            r = _run(["cmake", "--build", bdir])
            assert r.returncode == 0, r.stdout + r.stderr
            built[key] = bdir / "consumer.exe"
        return built[key]

    return build


def kernel_lines(stdout):
    return [l.split() for l in stdout.splitlines() if l.startswith("kernel ")]


# ---- the binaries themselves -------------------------------------------------

def test_mingw_binaries_import_only_windows_and_pteron_dlls(prefix):
    binaries = sorted((prefix / "bin").glob("*.dll")) + [prefix / "bin" / "pteron-run.exe"]
    assert {dll_name(c) for c in components(prefix)} <= {b.name for b in binaries}
    for b in binaries:
        deps = imports(b)
        others = [d for d in deps if not SYSTEM_DLLS.match(d) and not re.match(r"^pteron.*\.dll$", d)]
        assert others == [], f"{b.name} imports {others}; only Windows and pteron DLLs are allowed"
        if b.name != "pteron.dll":  # one registry: every component imports the runtime DLL
            assert "pteron.dll" in deps, (b.name, deps)


def test_mingw_dlls_export_only_the_pteron_api(prefix):
    for c in components(prefix):
        names = exports(prefix / "bin" / dll_name(c))
        assert f"pteron_anchor_{c}" in names, (c, names)
        leaked = [n for n in names if not n.startswith("pteron_")]
        assert leaked == [], f"{dll_name(c)} exports {leaked[:20]}"
    runtime_api = exports(prefix / "bin" / "pteron.dll")
    for fn in ("pteron_program_load_file", "pteron_register_kernels", "pteron_registration_error"):
        assert fn in runtime_api


# ---- pteron-run.exe ------------------------------------------------------------

@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_pteron_run_exe_runs_fixtures_beside_its_dlls(prefix, wine_env, tmp_path, name):
    spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
    m = spec["methods"]["forward"]
    args = [winpath(FIXTURES / spec["file"])]
    for p in m["inputs"]:
        args += ["--input", winpath(FIXTURES / p)]
    out = tmp_path / "out"
    out.mkdir()
    r = wine_run(wine_env, prefix / "bin" / "pteron-run.exe", *args, "--output-dir", winpath(out),
                 cwd=tmp_path)
    assert r.returncode == 0, str(r)
    for i, exp in enumerate(m["expected"]):
        want = np.load(FIXTURES / exp)
        got = np.load(out / f"output_{i}.npy")
        assert got.dtype == want.dtype and got.shape == want.shape, (i, got.dtype, got.shape)
        if np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(got, want, rtol=spec["rtol"], atol=spec["atol"])
        else:
            np.testing.assert_array_equal(got, want)


# ---- consumer scenarios --------------------------------------------------------

def test_default_linking_keeps_every_component_and_runs(prefix, consumer, wine_env, tmp_path):
    comps = linkable(prefix)
    exe = consumer(prefix, comps)
    deps = imports(exe)
    for c in ["runtime"] + comps:
        assert dll_name(c) in deps, (c, deps)
    r = wine_run(wine_env, exe, *fixture_args("cnn"), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    assert "consumer: outputs match" in r.stdout
    libs = {k[2] for k in kernel_lines(r.stdout)}
    assert libs == {c for c in comps if c.startswith("kernels_")}, libs


def test_negative_control_without_retention_loses_kernels_and_fails_cleanly(
        prefix, consumer, wine_env, tmp_path):
    exe = consumer(prefix, ["kernels_portable"], keep_anchors=False)
    deps = imports(exe)
    assert "pteron_kernels_portable.dll" not in deps, deps
    assert "pteron.dll" in deps
    # The DLL is even beside the program: without the import nothing loads it.
    assert (exe.parent / "pteron_kernels_portable.dll").exists()
    r = wine_run(wine_env, exe, *fixture_args("cnn"), cwd=tmp_path)
    assert r.returncode == 3, str(r)
    assert "registered operators: 0" in r.stdout
    assert "missing_operator" in r.stderr and "aten::convolution.out" in r.stderr


def test_runtime_dlls_are_copied_beside_the_program_which_runs_with_nothing_on_path(
        prefix, consumer, wine_env, tmp_path):
    comps = linkable(prefix)
    exe = consumer(prefix, comps)
    beside = {p.name for p in exe.parent.glob("*.dll")}
    assert beside == {dll_name(c) for c in ["runtime"] + comps}, beside
    assert "WINEPATH" not in wine_env
    r = wine_run(wine_env, exe, *fixture_args("transformer"), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    assert "consumer: outputs match" in r.stdout


def test_relocated_copy_of_the_install_tree_works(mingw_build, consumer, wine_env, win_loader,
                                                  tmp_path):
    first = install(mingw_build, tmp_path / "first" / "pteron")
    moved = tmp_path / "elsewhere" / "pteron"
    shutil.copytree(first, moved)
    shutil.rmtree(first)  # nothing may still point there
    exe = consumer(moved, ["kernels_portable"])
    assert str(first) not in (exe.parent / "build.ninja").read_text()
    r = wine_run(wine_env, exe, *fixture_args("cnn"), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    assert "consumer: outputs match" in r.stdout
    # The relocated bin/ works by itself too: pteron-run.exe, and every DLL loads.
    r = wine_run(wine_env, moved / "bin" / "pteron-run.exe", winpath(FIXTURES / "mlp.pte"),
                 "--input", winpath(FIXTURES / "mlp.forward.input_0.npy"), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    for dll in sorted((moved / "bin").glob("*.dll")):
        r = wine_run(wine_env, win_loader, winpath(dll), cwd=tmp_path)
        assert r.returncode == 0 and f"loaded {winpath(dll)}" in r.stdout, str(r)


def test_registry_is_the_union_of_the_linked_kernel_libraries(prefix, consumer, wine_env, tmp_path):
    exe = consumer(prefix, ["kernels_portable"])
    r = wine_run(wine_env, exe, *fixture_args("cnn"), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    assert {k[2] for k in kernel_lines(r.stdout)} == {"kernels_portable"}


@pytest.mark.parametrize("order", ["portable_first", "optimized_first"])
def test_optimized_wins_in_both_link_orders(mingw_build, prefix, consumer, wine_env, tmp_path, order):
    require_component(mingw_build, prefix, "kernels_optimized", "PTERON_WITH_OPTIMIZED")
    comps = ["kernels_portable", "kernels_optimized"]
    if order == "optimized_first":
        comps.reverse()
    exe = consumer(prefix, comps)
    r = wine_run(wine_env, exe, *fixture_args("cnn"), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    lines = kernel_lines(r.stdout)
    assert {k[2] for k in lines} == {"kernels_portable", "kernels_optimized"}
    conv = [k for k in lines if k[1] == "aten::convolution.out"]
    winners = [k for k in conv if k[4] == "selected" and k[3] in ("-", "dtype=6")]
    assert any(k[2] == "kernels_optimized" for k in winners), conv


def test_debug_stl_consumer_uses_the_release_package(prefix, consumer, wine_env, tmp_path):
    exe = consumer(prefix, linkable(prefix), cxx_flags="-D_GLIBCXX_DEBUG -D_GLIBCXX_ASSERTIONS")
    for name in ("transformer", "multi_out"):
        r = wine_run(wine_env, exe, *fixture_args(name), cwd=tmp_path)
        assert r.returncode == 0, f"{name}: {r}"
        assert "consumer: outputs match" in r.stdout


# ---- ABI version, load check, clean exit --------------------------------------

def test_component_with_other_abi_version_is_refused_naming_both(prefix, win_loader, wine_env, tmp_path):
    d = tmp_path / "app"
    d.mkdir()
    dll = d / "pteron_abi_mismatch.dll"
    # The import library by path: -static would not look for libpteron.dll.a.
    r = _run([MINGW_CXX, "-std=c++17", "-shared", "-static", "-DPTERON_TEST_ABI_VERSION=7u",
              f"-I{prefix / 'include'}", REPO / "tests" / "native" / "abi_mismatch.cpp",
              prefix / "lib" / "libpteron.dll.a", "-o", dll], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "pteron.dll" in imports(dll)
    shutil.copy2(prefix / "bin" / "pteron.dll", d)
    r = wine_run(wine_env, win_loader, "--registry", winpath(dll), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    version = re.search(r"^abi version: (\d+)$", r.stdout, re.M).group(1)
    assert version != "7"
    assert "registration errors: 2" in r.stdout, str(r)  # the kernels and the backend
    errs = [l for l in r.stdout.splitlines() if l.startswith("registration error: ")]
    assert len(errs) == 2
    for e in errs:
        assert "abi_mismatch" in e
        assert f"incompatible ABI version (component: 7, runtime: {version})" in e
    assert "incompatible ABI version" in r.stderr  # also reported for people reading logs


def test_every_shipped_dll_loads_in_its_own_process(prefix, win_loader, wine_env, tmp_path):
    dlls = sorted((prefix / "bin").glob("*.dll"))
    assert {d.name for d in dlls} == {dll_name(c) for c in components(prefix)}
    for dll in dlls:
        r = wine_run(wine_env, win_loader, winpath(dll), cwd=tmp_path)
        assert r.returncode == 0 and f"loaded {winpath(dll)}" in r.stdout, f"{dll.name}: {r}"
    # The check can fail: a kernel DLL without pteron.dll beside it does not load.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy2(prefix / "bin" / "pteron_kernels_portable.dll", alone)
    r = wine_run(wine_env, win_loader, winpath(alone / "pteron_kernels_portable.dll"), cwd=tmp_path)
    assert r.returncode == 1 and "error 126" in r.stdout, str(r)


def test_application_using_the_thread_pool_exits_cleanly_20_times(
        mingw_build, prefix, consumer, wine_env, tmp_path):
    require_component(mingw_build, prefix, "threadpool", "PTERON_WITH_THREADPOOL")
    exe = consumer(prefix, linkable(prefix))
    assert "pteron_threadpool.dll" in imports(exe)  # the pool is this run's parallel_for
    args = fixture_args("transformer")
    for i in range(20):
        threads = 2 + i % 3
        r = wine_run(wine_env, exe, *args, cwd=tmp_path, timeout=60,
                     extra_env={"PTERON_NUM_THREADS": str(threads)})
        assert r.returncode == 0, f"run {i + 1}/20 ({threads} threads): {r}"
        assert "consumer: outputs match" in r.stdout
        assert f"parallel threads: {threads}\n" in r.stdout, r.stdout[-500:]
        assert r.stderr == "", f"run {i + 1}/20 wrote to stderr:\n{r.stderr}"
