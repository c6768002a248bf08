# SPDX-License-Identifier: BSD-3-Clause
"""The threadpool component (runtime/threadpool, include/pteron/threadpool.h).

Proves, on Linux:
  - loading the library installs the runtime's parallel_for backend with the
    thread count from PTERON_NUM_THREADS; an invalid value gives a one-line
    warning and the default (hardware threads);
  - the fixtures still match their expected outputs with 2 threads;
  - the parallel_for contract (exact cover, grain, concurrency, nesting, the
    thread count API) with every pool: the build's own (pteron's std::thread
    pool unless built with PTERON_THREADPOOL_IMPL=pthreadpool), the std::thread
    pool compiled here (also under TSan) and pthreadpool where its headers are
    installed; and the coverage part of it while other threads keep every core
    busy (no timing is asserted);
  - an application that used the pool exits cleanly 20 times in a row, each
    run under a timeout, with both pools;
  - the library exports its C API and anchor only; its std::thread pool
    compiles with MinGW-w64 (the Windows build's pool).
Every child process runs under a timeout.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, build_dir, manifest

BUILD = build_dir()
NATIVE = REPO / "tests" / "native"
SOURCES = REPO / "runtime" / "threadpool"
LIB = BUILD / "libpteron_threadpool.so"
MAX_THREADS = 1024  # PTERON_THREADPOOL_MAX_THREADS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="Linux build; the MinGW/Wine runs are their own tests")


def _threadpool_enabled() -> bool:
    cache = BUILD / "CMakeCache.txt"
    return not (cache.exists() and "PTERON_WITH_THREADPOOL:BOOL=OFF" in cache.read_text())


@pytest.fixture(scope="module", autouse=True)
def _threadpool_built():
    if not _threadpool_enabled():
        pytest.skip("built with PTERON_WITH_THREADPOOL=OFF")
    if not LIB.exists():
        pytest.fail(f"{LIB} is missing: build first (scripts/test.sh)")


def _default_threads() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))


def _kernel_libs():
    libs = ["kernels_portable"]
    if (BUILD / "libpteron_kernels_optimized.so").exists():
        libs.append("kernels_optimized")
    return libs


def _env(**extra):
    env = dict(os.environ)
    env.pop("PTERON_NUM_THREADS", None)
    env["OPENBLAS_NUM_THREADS"] = "1"  # numpy's own threads would blur thread counts
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


# ---- a Python child that loads the libraries through tests/capi.py ---------

CHILD = r"""
import ctypes, json, os, sys
sys.path.insert(0, {tests!r})
import numpy as np
import capi
args = json.loads(sys.argv[1])
rt = capi.Runtime({build!r}, kernel_libs=args["libs"])
L = rt.lib
L.pteron_parallel_threads.restype = ctypes.c_int32
out = {{"threads": L.pteron_parallel_threads()}}
if "threadpool" in args["libs"]:
    tp = rt.kernel_libs[args["libs"].index("threadpool")]
    tp.pteron_threadpool_implementation.restype = ctypes.c_char_p
    tp.pteron_threadpool_num_threads.restype = ctypes.c_size_t
    tp.pteron_threadpool_pthreadpool.restype = ctypes.c_void_p
    out["implementation"] = tp.pteron_threadpool_implementation().decode()
    out["num_threads"] = tp.pteron_threadpool_num_threads()
    handle = tp.pteron_threadpool_pthreadpool()
    out["pthreadpool"] = bool(handle)
    if handle:
        pp = ctypes.CDLL("libpthreadpool.so.0")
        pp.pthreadpool_get_threads_count.restype = ctypes.c_size_t
        pp.pthreadpool_get_threads_count.argtypes = [ctypes.c_void_p]
        out["pthreadpool_threads"] = pp.pthreadpool_get_threads_count(handle)
fx = args.get("fixture")
if fx:
    m = rt.load_file(os.path.join({fixtures!r}, fx["file"])).load_method(fx["method"])
    outs = m.run([np.load(os.path.join({fixtures!r}, p)) for p in fx["inputs"]])
    out["mismatches"] = []
    for i, (a, p) in enumerate(zip(outs, fx["expected"])):
        e = np.load(os.path.join({fixtures!r}, p))
        ok = a.dtype == e.dtype and a.shape == e.shape and (
            np.allclose(a, e, rtol=fx["rtol"], atol=fx["atol"]) if e.dtype.kind == "f"
            else np.array_equal(a, e))
        if not ok:
            out["mismatches"].append(i)
    out["outputs"] = len(outs)
out["process_threads"] = len(os.listdir("/proc/self/task"))
print("RESULT " + json.dumps(out))
""".format(tests=str(REPO / "tests"), build=str(BUILD), fixtures=str(FIXTURES))


def run_child(libs, num_threads=None, fixture=None, timeout=120):
    """Runs CHILD; returns (result dict, stderr)."""
    env = _env(PTERON_NUM_THREADS=num_threads)
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps({"libs": list(libs),
                                                                 "fixture": fixture})],
                       capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"child failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    line = next(l for l in r.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):]), r.stderr


# ---- native programs --------------------------------------------------------

def _cxx():
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        pytest.fail("no C++ compiler (g++) to build the native test programs")
    return cxx


def _compile(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"building {what} failed:\n{' '.join(map(str, cmd))}\n{r.stderr}"


class Variant:
    """A threadpool library to test: `libdir` holds libpteron_threadpool.so;
    the runtime and kernel libraries come from `BUILD` (or `runtime_dir`)."""

    def __init__(self, name, libdir, runtime_dir=BUILD, cxxflags=()):
        self.name, self.libdir, self.runtime_dir = name, Path(libdir), Path(runtime_dir)
        self.cxxflags = list(cxxflags)

    def link(self, sources, out, kernels=False):
        rpath = f"{self.libdir}:{self.runtime_dir}"
        cmd = [_cxx(), "-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", *self.cxxflags,
               "-I", str(REPO / "include"), "-I", str(REPO / "tools"), *map(str, sources),
               "-o", str(out), f"-L{self.libdir}", f"-L{self.runtime_dir}"]
        if kernels:  # registration-only libraries: keep them despite --as-needed
            cmd += ["-Wl,--push-state,--no-as-needed",
                    *[f"-lpteron_{k}" for k in _kernel_libs()], "-Wl,--pop-state"]
        cmd += ["-lpteron_threadpool", "-lpteron", f"-Wl,-rpath,{rpath}", "-pthread"]
        _compile(cmd, out.name)
        return out


def _std_pool_library(outdir: Path, sanitize=None) -> Path:
    """libpteron_threadpool.so with the std::thread pool, compiled from the
    component's sources the way the Windows build compiles them."""
    outdir.mkdir(parents=True, exist_ok=True)
    flags = ["-O1", "-g", f"-fsanitize={sanitize}"] if sanitize else ["-O2"]
    cmd = [_cxx(), "-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", *flags,
           "-fPIC", "-shared", "-fvisibility=hidden", "-DPTERON_BUILDING_THREADPOOL",
           "-I", str(REPO / "include"), str(SOURCES / "threadpool.cpp"),
           str(SOURCES / "pool_std.cpp"), "-o", str(outdir / "libpteron_threadpool.so"),
           f"-L{BUILD}", "-lpteron", "-pthread"]
    _compile(cmd, f"the std::thread pool ({sanitize or 'release'})")
    return outdir


def _pthreadpool_library(outdir: Path):
    """libpteron_threadpool.so over pthreadpool (PTERON_THREADPOOL_IMPL=pthreadpool),
    compiled from the component's sources, or None without pthreadpool's header."""
    if not (Path("/usr/include/pthreadpool.h").exists() and
            list(Path("/usr/lib").glob("*/libpthreadpool.so"))):
        return None
    outdir.mkdir(parents=True, exist_ok=True)
    cmd = [_cxx(), "-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-O2",
           "-fPIC", "-shared", "-fvisibility=hidden", "-DPTERON_BUILDING_THREADPOOL",
           "-I", str(REPO / "include"), str(SOURCES / "threadpool.cpp"),
           str(SOURCES / "pool_pthreadpool.cpp"), "-o", str(outdir / "libpteron_threadpool.so"),
           f"-L{BUILD}", "-lpteron", "-lpthreadpool", "-pthread"]
    _compile(cmd, "the pthreadpool pool")
    return outdir


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    d = tmp_path_factory.mktemp("threadpool")
    v = {
        "build": Variant("build", BUILD),
        "std": Variant("std", _std_pool_library(d / "std")),
    }
    pth = _pthreadpool_library(d / "pthreadpool")
    if pth:
        v["pthreadpool"] = Variant("pthreadpool", pth)
    return v


def _variant(variants, name):
    if name not in variants:
        pytest.skip("pthreadpool's header and library are not installed (libpthreadpool-dev)")
    return variants[name]


def _implementation_of_build():
    res, _ = run_child(["threadpool"], num_threads="2")
    return res["implementation"]


# ---- thread count from the environment ---------------------------------------

@pytest.mark.parametrize("n", ["1", "2", "3", "7"])
def test_loading_threadpool_makes_parallel_threads_report_PTERON_NUM_THREADS(n):
    res, err = run_child(_kernel_libs() + ["threadpool"], num_threads=n)
    assert res["threads"] == int(n), err
    assert res["num_threads"] == int(n)
    assert err == ""


def test_without_threadpool_parallel_for_is_serial():
    res, _ = run_child(["kernels_portable"], num_threads="4")
    assert res["threads"] == 1


def test_unset_PTERON_NUM_THREADS_gives_hardware_threads():
    res, err = run_child(["threadpool"], num_threads=None)
    assert res["threads"] == _default_threads()
    assert err == ""


@pytest.mark.parametrize("value", ["abc", "0", "-3", "", "2x", " 4", "+2", "1025", "99999999999"])
def test_invalid_PTERON_NUM_THREADS_warns_once_and_uses_default(value):
    res, err = run_child(["threadpool"], num_threads=value)
    assert res["threads"] == _default_threads()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "ignoring PTERON_NUM_THREADS" in lines[0] and "1..1024" in lines[0], err
    assert f"using {_default_threads()} threads" in lines[0]


def test_the_pthreadpool_handle_is_the_pool_itself():
    """Where the build uses pthreadpool, XNNPACK gets the very same pool (same
    thread count); the std::thread pool hands out NULL."""
    res, _ = run_child(["threadpool"], num_threads="3")
    if res["implementation"] == "pthreadpool":
        assert res["pthreadpool"] and res["pthreadpool_threads"] == 3
    else:
        assert res["implementation"] == "std" and not res["pthreadpool"]


# ---- fixtures with 2 threads -------------------------------------------------

RUNNABLE = [
    (f, method)
    for f in manifest()["fixtures"]
    if f["uses_only_supported_operators"] and not f["delegates"]
    for method in f["methods"]
]


@pytest.mark.parametrize("fx,method", RUNNABLE, ids=[f"{f['name']}.{m}" for f, m in RUNNABLE])
def test_fixture_matches_expected_with_two_threads(fx, method):
    spec = fx["methods"][method]
    res, err = run_child(_kernel_libs() + ["threadpool"], num_threads="2", fixture={
        "file": fx["file"], "method": method, "inputs": spec["inputs"],
        "expected": spec["expected"], "rtol": fx["rtol"], "atol": fx["atol"]})
    assert res["threads"] == 2
    assert res["outputs"] == len(spec["expected"])
    assert res["mismatches"] == [], f"outputs {res['mismatches']} differ with 2 threads\n{err}"
    # The pool is started lazily: at most the caller + 1 worker exist.
    assert res["process_threads"] <= 2


# ---- the parallel_for contract -----------------------------------------------

def _run_contract(exe, threads, timeout=300, env_extra=None):
    env = _env(PTERON_NUM_THREADS=str(threads), **(env_extra or {}))
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    assert "parallel_for contract: OK" in r.stdout
    assert f"threads={threads}" in r.stdout
    return r


def _expected_implementation(variant):
    return {"std": "std", "pthreadpool": "pthreadpool"}.get(variant) or _implementation_of_build()


@pytest.mark.parametrize("variant", ["build", "std", "pthreadpool"])
def test_parallel_for_covers_every_index_once_across_threads_and_nesting(variants, variant,
                                                                          tmp_path):
    v = _variant(variants, variant)
    exe = v.link([NATIVE / "parallel_for_contract.cpp"], tmp_path / "contract")
    r = _run_contract(exe, 3)
    assert f"implementation={_expected_implementation(variant)}" in r.stdout
    assert r.stderr == ""


def test_the_build_uses_the_std_pool_by_default():
    """PTERON_THREADPOOL_IMPL=auto (the default) is pteron's own pool: Debian's
    pthreadpool collapses when other processes keep the cores busy."""
    cache = BUILD / "CMakeCache.txt"
    chosen = re.search(r"^PTERON_THREADPOOL_IMPL:STRING=(\w+)$", cache.read_text(), re.M) \
        if cache.exists() else None
    if chosen and chosen.group(1) == "pthreadpool":
        pytest.skip("this build asked for PTERON_THREADPOOL_IMPL=pthreadpool")
    assert _implementation_of_build() == "std"


@pytest.mark.parametrize("variant", ["build"])
def test_parallel_for_covers_every_index_once_while_other_threads_hog_the_cpus(
        variants, variant, tmp_path):
    """As many threads as there are cores spin in the same process, beside the
    2-thread pool (as busy processes would): every call still covers its range
    exactly once, nested calls stay serial, two application threads still take
    turns, and it all returns."""
    v = _variant(variants, variant)
    exe = v.link([NATIVE / "parallel_for_contract.cpp"], tmp_path / "contract")
    threads = 2
    hogs = str(os.cpu_count() or 1)
    r = subprocess.run([str(exe), "--hog", hogs], capture_output=True, text=True, timeout=300,
                       env=_env(PTERON_NUM_THREADS=str(threads)))
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    assert (f"implementation={_expected_implementation(variant)} threads={threads} hogs={hogs}"
            in r.stdout), r.stdout
    assert "parallel_for contract: OK" in r.stdout and r.stderr == ""


def test_std_pool_contract_under_thread_sanitizer(tmp_path):
    lib = _std_pool_library(tmp_path / "tsan", sanitize="thread")
    v = Variant("std-tsan", lib, cxxflags=["-fsanitize=thread"])
    exe = v.link([NATIVE / "parallel_for_contract.cpp"], tmp_path / "contract_tsan")
    r = _run_contract(exe, 3, env_extra={"TSAN_OPTIONS": "halt_on_error=1"})
    assert "ThreadSanitizer" not in r.stderr, r.stderr


def test_contract_against_the_asan_build(tmp_path):
    asan = os.environ.get("PTERON_ASAN_BUILD_DIR")
    if not asan or not (Path(asan) / "libpteron_threadpool.so").exists():
        pytest.skip("no ASan build with the threadpool (scripts/test.sh builds one)")
    v = Variant("asan", asan, runtime_dir=asan, cxxflags=["-fsanitize=address,undefined"])
    exe = v.link([NATIVE / "parallel_for_contract.cpp"], tmp_path / "contract_asan")
    _run_contract(exe, 2, env_extra={"ASAN_OPTIONS": "detect_leaks=1"})


# ---- clean exit --------------------------------------------------------------

@pytest.mark.parametrize("variant", ["build", "std"])
def test_application_using_the_pool_exits_cleanly_20_times(variants, variant, tmp_path):
    v = _variant(variants, variant)
    exe = v.link([NATIVE / "threadpool_exit.cpp", REPO / "tools" / "npy.cpp"],
                 tmp_path / "threadpool_exit", kernels=True)
    fixtures = {f["name"]: f for f in manifest()["fixtures"]}
    runs = []
    for name in ("transformer", "cnn"):
        spec = fixtures[name]["methods"]["forward"]
        runs.append([str(exe), str(FIXTURES / fixtures[name]["file"]), "forward",
                     *[str(FIXTURES / p) for p in spec["inputs"]], "--",
                     *[str(FIXTURES / p) for p in spec["expected"]]])
    for i in range(20):
        threads = 2 + i % 3
        cmd = runs[i % 2]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                               env=_env(PTERON_NUM_THREADS=str(threads)))
        except subprocess.TimeoutExpired:
            pytest.fail(f"run {i + 1}/20 ({Path(cmd[1]).name}, {threads} threads) "
                        f"did not exit within 30 s")
        assert r.returncode == 0, f"run {i + 1}/20: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        assert r.stderr == "", f"run {i + 1}/20 wrote to stderr:\n{r.stderr}"
        m = re.fullmatch(r"start\nthreads=(\d+) tasks=(-?\d+) ok\n", r.stdout)
        assert m, r.stdout
        # The pool had really started: the caller + threads-1 workers alive at exit.
        assert int(m.group(1)) == threads and int(m.group(2)) == threads, r.stdout


# ---- destroyed normally where it is not Windows --------------------------------

UNLOAD_CHILD = r"""
import ctypes, os, sys, _ctypes
rt = ctypes.CDLL(os.path.join(sys.argv[1], "libpteron.so"), mode=ctypes.RTLD_GLOBAL)
rt.pteron_parallel_threads.restype = ctypes.c_int32
tp = ctypes.CDLL(sys.argv[2])
tp.pteron_threadpool_pthreadpool.restype = ctypes.c_void_p
tp.pteron_threadpool_pthreadpool()  # starts the workers
tasks = lambda: len(os.listdir("/proc/self/task"))
before = (rt.pteron_parallel_threads(), tasks())
_ctypes.dlclose(tp._handle)  # runs the library's static destructor
print("RESULT", *before, rt.pteron_parallel_threads(), tasks())
"""


@pytest.mark.parametrize("variant", ["build", "std", "pthreadpool"])
def test_unloading_uninstalls_the_backend_and_joins_the_workers(variants, variant):
    lib = _variant(variants, variant).libdir / "libpteron_threadpool.so"
    r = subprocess.run([sys.executable, "-c", UNLOAD_CHILD, str(BUILD), str(lib)],
                       capture_output=True, text=True, timeout=60, env=_env(PTERON_NUM_THREADS="4"))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    threads_before, tasks_before, threads_after, tasks_after = map(
        int, r.stdout.split("RESULT", 1)[1].split())
    assert (threads_before, tasks_before) == (4, 4)  # the caller + 3 workers
    assert (threads_after, tasks_after) == (1, 1)    # serial again, workers joined


# ---- the library itself ------------------------------------------------------

def test_threadpool_exports_only_its_c_api():
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("no nm")
    r = subprocess.run([nm, "-D", "--defined-only", str(LIB)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    names = {l.split()[-1] for l in r.stdout.splitlines() if l.split()[1:2] == ["T"]}
    assert names == {"pteron_anchor_threadpool", "pteron_threadpool_set_num_threads",
                     "pteron_threadpool_num_threads", "pteron_threadpool_pthreadpool",
                     "pteron_threadpool_implementation", "pteron_threadpool_set_thread_cap"}


# ---- Windows (MinGW-w64 DLLs under Wine), when a MinGW build is given ---------

MINGW_CXX = "x86_64-w64-mingw32-g++-posix"


@pytest.fixture(scope="module")
def mingw(tmp_path_factory):
    """(build dir, compiler, wine env) for a MinGW build named by
    PTERON_MINGW_BUILD_DIR; the Wine prefix is this module's own."""
    d = os.environ.get("PTERON_MINGW_BUILD_DIR")
    if not d or not (Path(d) / "pteron_threadpool.dll").exists():
        pytest.skip("PTERON_MINGW_BUILD_DIR does not name a MinGW build with pteron_threadpool.dll")
    cxx, wine = shutil.which(MINGW_CXX), shutil.which("wine")
    if not cxx or not wine:
        pytest.skip(f"{MINGW_CXX} and wine are needed")
    env = _env(WINEPREFIX=str(tmp_path_factory.mktemp("wineprefix")), WINEDEBUG="-all",
               WINEDLLOVERRIDES="mscoree,mshtml=")
    subprocess.run([wine, "wineboot", "--init"], capture_output=True, timeout=300, env=env)
    yield Path(d), cxx, wine, env
    server = shutil.which("wineserver")
    if server:
        subprocess.run([server, "-k"], capture_output=True, timeout=60, env=env)


def _wait_for_wineserver(env):
    """Waits until the prefix's wineserver has exited. Debian's wineserver wrapper passes -p0
    (the server quits as its last client exits), so a run started right after another one can
    meet a server that is still stopping. A server kept alive with -p instead keeps Wine's
    services alive too, and those hold the captured pipes of the run that started them."""
    server = shutil.which("wineserver")
    if server:
        subprocess.run([server, "-w"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60, env=env)


def _mingw_program(mingw, sources, out: Path, kernels=False):
    """Builds a .exe in out's folder with every DLL it needs beside it."""
    build, cxx, _, _ = mingw
    cmd = [cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(REPO / "include"),
           "-I", str(REPO / "tools"), *map(str, sources), "-o", str(out), f"-L{build}"]
    if kernels:  # PE: --undefined=<anchor> keeps a registration-only DLL
        cmd += ["-Wl,--undefined=pteron_anchor_kernels_portable", "-lpteron_kernels_portable"]
    cmd += ["-lpteron_threadpool", "-lpteron"]
    _compile(cmd, out.name)
    for dll in build.glob("pteron*.dll"):
        shutil.copy2(dll, out.parent)
    for dll in ("libstdc++-6.dll", "libgcc_s_seh-1.dll", "libwinpthread-1.dll"):
        src = subprocess.run([cxx, f"-print-file-name={dll}"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
        if os.path.isabs(src) and os.path.exists(src):
            shutil.copy2(src, out.parent)
    return out


def test_std_pool_contract_on_windows_under_wine(mingw, tmp_path):
    _, _, wine, env = mingw
    exe = _mingw_program(mingw, [NATIVE / "parallel_for_contract.cpp"], tmp_path / "contract.exe")
    _wait_for_wineserver(env)
    r = subprocess.run([wine, str(exe)], capture_output=True, text=True, timeout=300,
                       env=dict(env, PTERON_NUM_THREADS="3"), cwd=tmp_path)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    assert "implementation=std threads=3" in r.stdout and "parallel_for contract: OK" in r.stdout


def test_windows_application_using_the_pool_exits_cleanly_20_times_under_wine(mingw, tmp_path):
    """On Windows the pool is left alone at exit (its workers are already gone)."""
    _, _, wine, env = mingw
    exe = _mingw_program(mingw, [NATIVE / "threadpool_exit.cpp", REPO / "tools" / "npy.cpp"],
                         tmp_path / "threadpool_exit.exe", kernels=True)
    fixtures = {f["name"]: f for f in manifest()["fixtures"]}
    spec = fixtures["transformer"]["methods"]["forward"]
    cmd = [wine, str(exe), str(FIXTURES / fixtures["transformer"]["file"]), "forward",
           *[str(FIXTURES / p) for p in spec["inputs"]], "--",
           *[str(FIXTURES / p) for p in spec["expected"]]]
    launch_failures = []
    i = 0
    while i < 20:
        threads = 2 + i % 3
        # After a launch failure the run is repeated with Wine's errors shown.
        debug = "err+all" if launch_failures else "-all"
        _wait_for_wineserver(env)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=tmp_path,
                               env=dict(env, PTERON_NUM_THREADS=str(threads), WINEDEBUG=debug))
        except subprocess.TimeoutExpired:
            pytest.fail(f"run {i + 1}/20 ({threads} threads) did not exit within 30 s")
        out = r.stdout.replace("\r\n", "\n")
        if r.returncode == 1 and out == "" and r.stderr == "":
            # Exit 1 with no output at all: the program never reached main (it prints
            # "start" first, flushed), so Wine failed to launch it. Seen once in CI in
            # hundreds of runs; repeated at most twice, and reported.
            launch_failures.append(f"run {i + 1}/20: exit 1 before main, no output")
            assert len(launch_failures) <= 2, "\n".join(launch_failures)
            warnings.warn(f"Wine did not launch {exe.name}: {launch_failures[-1]}; repeated")
            continue
        assert r.returncode == 0, f"run {i + 1}/20: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        if debug == "-all":
            assert r.stderr == "", f"run {i + 1}/20 wrote to stderr:\n{r.stderr}"
        assert out == f"start\nthreads={threads} tasks=-1 ok\n", out
        i += 1


def test_std_pool_compiles_for_mingw(tmp_path):
    """The Windows (MinGW) build has no pthreadpool: its pool is pool_std.cpp."""
    cxx = shutil.which("x86_64-w64-mingw32-g++-posix")
    if not cxx:
        pytest.skip("x86_64-w64-mingw32-g++-posix is not installed")
    for src in ("threadpool.cpp", "pool_std.cpp"):
        cmd = [cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
               "-DPTERON_BUILDING_THREADPOOL", "-I", str(REPO / "include"), "-c",
               str(SOURCES / src), "-o", str(tmp_path / (src + ".obj"))]
        _compile(cmd, f"{src} for MinGW")
