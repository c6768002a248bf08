# SPDX-License-Identifier: BSD-3-Clause
"""The Python module (python/pteron, its extension python/src/pteron_ext.cpp): built here
against the Linux release package (python/CMakeLists.txt, find_package(pteron)), staged as a
package folder (the pure-Python files plus the extension), and run in child processes of this
interpreter (each with a timeout) with PYTHONPATH on the stage and nothing on
LD_LIBRARY_PATH: the extension finds the runtime through its RUNPATH, the components by
absolute path from the runtime's folder.

Checked: `import pteron` loads nothing native; fixtures match eager; every input case of the
issue (a view, a transpose, Fortran order, a structured field, byte-swapped, read-only, a DLPack
producer) gives the contiguous array's output; wrong dtype, rank, static size and dynamic
bound are TypeError / ValueError naming the input; runtime errors are pteron.Error subclasses
carrying the runtime's message; one Method called from several threads at once gives each call
its own correct result; `load_components` and a missing thread pool library; each pteron
library mapped once (/proc/self/maps); `python -m pteron run` and `info`.

The tests that hold on any platform run twice: `[linux]` as above, and `[windows]` with the
CPython 3.11 Windows wheel built by MSVC (conftest's windows_wheel: scripts/windows_wheel.py
against the MSVC package) installed by pip, and a Windows CPython 3.11
(scripts/windows_python.py, PTERON_WINDOWS_PYTHON), run under Wine with the DLLs in the
wheel's `pteron/lib`, nothing on PATH. The Windows-only tests check
`os.add_dll_directory`: a `pteron.dll` planted on PATH or in the working folder is never the
one that loads, a conda prefix's `Library/bin` works, and a missing thread pool DLL is named.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, WIN_PTERON_MODULES, pip_install_windows, program_with_values, run, win_python, \
    wine_run, winpath

FIXTURES = REPO / "models" / "fixtures"
# A child's prelude: the MLP fixture's method `m` and its input `x`.
MLP = (f'import numpy as np, pteron; '
       f'm = pteron.Program.load("{FIXTURES}/mlp_xnnpack.pte").load_method(); '
       f'x = np.load("{FIXTURES}/mlp_xnnpack.forward.input_0.npy")')


class WinStage:
    """A copy of the Windows CPython `windows_python` (python.exe, run under Wine) in
    `python_dir` whose path (its `._pth` file: the embeddable distribution ignores PYTHONPATH)
    holds `root`, the folder holding the package `pteron`."""

    def __init__(self, windows_python: Path, python_dir: Path, root: Path, wine_env: dict):
        self.python = win_python(windows_python, python_dir, [root])
        self.windows_python, self.root, self.wine_env = windows_python, root, wine_env

    def elsewhere(self, python_dir: Path, root: Path) -> "WinStage":
        """The same CPython copied into `python_dir`, for the package in `root`."""
        return WinStage(self.windows_python, python_dir, root, self.wine_env)


@pytest.fixture(scope="module")
def win_stage(windows_wheel, wine_env, windows_python, tmp_path_factory):
    """The CPython 3.11 Windows wheel built by MSVC (conftest's windows_wheel: docs/packaging.md's
    block), installed by pip into a folder: pteron/ with _pteron.cp311-win_amd64.pyd, and the
    package's DLLs in pteron/lib."""
    base = tmp_path_factory.mktemp("winpy")
    st = pip_install_windows(windows_wheel, base / "site", "3.11")
    assert [p.name for p in (st / "pteron").glob("_pteron*.pyd")] == \
        ["_pteron.cp311-win_amd64.pyd"]
    return WinStage(windows_python, base / "python", st, wine_env)


@pytest.fixture(scope="module", params=["linux", "windows"])
def any_stage(request):
    """The stage of each platform: a test that takes it runs once per platform."""
    return request.getfixturevalue("stage" if request.param == "linux" else "win_stage")


def py(stage, code, timeout=120, env=None, cwd=None):
    """Runs `code` in a child interpreter that imports pteron from `stage` (a Linux stage
    folder, or a WinStage: the code goes to a file run by python.exe under Wine, from a
    working folder on Wine's drive Z:, so this machine's absolute paths are Windows paths
    there too)."""
    code = textwrap.dedent(code)
    if isinstance(stage, WinStage):
        work = Path(cwd or tempfile.mkdtemp(prefix="winpy-", dir=stage.root.parent))
        (work / "child.py").write_text(code)
        return wine_run(stage.wine_env, stage.python, "child.py", cwd=work, timeout=timeout,
                        extra_env=env, pipes=True)
    e = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PTERON_NUM_THREADS")}
    e["PYTHONPATH"] = str(stage)
    e.update(env or {})
    return run([sys.executable, "-c", code], timeout=timeout, env=e)


def ok(r):
    assert r.returncode == 0, f"rc {r.returncode}\nstdout:\n{r.stdout[-4000:]}\nstderr:\n" \
                              f"{r.stderr[-4000:]}"
    return r.stdout


def test_import_loads_nothing_native(stage):
    out = ok(py(stage, """
        import sys, pteron
        assert issubclass(pteron.InvalidProgramError, pteron.Error)
        import pteron.verify
        print(sorted(m for m in sys.modules if m.startswith("pteron")))
        print([l for l in open("/proc/self/maps") if "libpteron" in l])
    """))
    assert "pteron._pteron" not in out and "'pteron._runtime'" in out
    assert out.strip().endswith("[]")


@pytest.mark.parametrize("name", ["mlp_xnnpack", "cnn_xnnpack", "ops_xnnpack", "cnn"])
def test_fixture_matches_eager(any_stage, name):
    if not (FIXTURES / f"{name}.pte").exists():
        pytest.skip(f"no fixture {name}")
    out = ok(py(any_stage, f"""
        import glob, numpy as np, pteron
        F = "{FIXTURES}/{name}"
        m = pteron.Program.load(F + ".pte").load_method("forward")
        ins = [np.load(p) for p in sorted(glob.glob(F + ".forward.input_*.npy"))]
        outs = m(*ins)
        exps = [np.load(p) for p in sorted(glob.glob(F + ".forward.expected_*.npy"))]
        assert len(outs) == len(exps), (len(outs), len(exps))
        for o, e in zip(outs, exps):
            assert o.dtype == e.dtype and o.shape == e.shape, (o.dtype, o.shape, e.dtype, e.shape)
            assert o.flags.c_contiguous and o.flags.writeable
            np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-5)
        again = m(*ins)  # earlier outputs stay the caller's: new memory each call
        for o, a, e in zip(outs, again, exps):
            assert o is not a and not np.shares_memory(o, a) and np.array_equal(o, a)
            a[...] = 0
            np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-5)
        print("OK", len(outs))
    """))
    assert "OK" in out


def test_every_input_case_equals_the_contiguous_array(any_stage):
    out = ok(py(any_stage, f"""
        {MLP}
        (want,) = m(x)
        big = np.zeros((x.shape[0], 2 * x.shape[1]), np.float32); big[:, ::2] = x
        rec = np.zeros(x.shape, dtype=[("a", "<f4"), ("b", "<f4")]); rec["b"] = x
        ro = x.copy(); ro.flags.writeable = False
        class DL:  # a DLPack producer that is not an ndarray
            def __init__(self, a): self.a = a
            def __dlpack__(self, **kw): return self.a.__dlpack__(**kw)
            def __dlpack_device__(self): return self.a.__dlpack_device__()
        cases = {{"view": big[:, ::2], "transposed": np.ascontiguousarray(x.T).T,
                 "fortran": np.asfortranarray(x), "field": rec["b"],
                 "byteswapped": x.astype(x.dtype.newbyteorder("S")), "readonly": ro,
                 "dlpack": DL(x.copy())}}
        assert not cases["view"].flags.c_contiguous and cases["fortran"].flags.f_contiguous
        assert not cases["byteswapped"].dtype.isnative
        for k, v in cases.items():
            (got,) = m(v)
            assert np.array_equal(got, want), k
        print("OK", len(cases))
    """))
    assert "OK 7" in out


def test_bad_inputs_are_clear_errors(any_stage):
    out = ok(py(any_stage, f"""
        {MLP}
        def err(f):
            try:
                f()
            except Exception as e:
                return type(e).__name__ + ": " + str(e)
            raise AssertionError("no error")
        print(err(lambda: m(x.astype(np.float64))))
        print(err(lambda: m(x[None])))
        print(err(lambda: m(x[:1])))
        print(err(lambda: m()))
        print(err(lambda: m(x, x)))
        d = pteron.Program.load("{FIXTURES}/dynamic_batch_xnnpack.pte").load_method()
        s = d.inputs[0]
        assert s.dynamism == "bound", s
        big = np.zeros((s.bounds[0] + 1,) + s.shape[1:], np.float32)
        print(err(lambda: d(big)))
        (y,) = d(np.zeros((1,) + s.shape[1:], np.float32))
        print("dyn", y.shape)
    """))
    lines = out.splitlines()
    assert lines[0] == "TypeError: input 0: dtype float64 does not match the method's float32"
    assert lines[1].startswith("ValueError: input 0: shape (1, 4, 16) has rank 3")
    assert lines[2].startswith("ValueError: input 0: shape (1, 16) differs from the method's "
                               "static shape (4, 16) in dim 0")
    assert lines[3] == "TypeError: method 'forward' takes 1 input(s), 0 given"
    assert lines[4] == "TypeError: method 'forward' takes 1 input(s), 2 given"
    assert lines[5].startswith("ValueError: input 0: dim 0 is ") and "above its bound" in lines[5]
    assert lines[6].startswith("dyn (1,")


def test_runtime_errors_form_one_hierarchy(any_stage, tmp_path):
    bad = tmp_path / "bad.pte"
    data = (FIXTURES / "mlp_xnnpack.pte").read_bytes()
    bad.write_bytes(data[:200])
    out = ok(py(any_stage, f"""
        import pteron
        def err(f):
            try:
                f()
            except pteron.Error as e:
                return f"{{type(e).__name__}} {{e.code}} {{isinstance(e, pteron.Error)}}: {{e}}"
            raise AssertionError("no error")
        print(err(lambda: pteron.Program.load("{bad}")))
        print(err(lambda: pteron.Program.load(b"ET12 not a program")))
        print(err(lambda: pteron.Program.load("{tmp_path}/missing.pte")))
        print(err(lambda: pteron.Program.load("{FIXTURES}/mlp_xnnpack.pte").load_method("nope")))
        un = "{FIXTURES}/unsupported_op.pte"
        import os
        if os.path.exists(un):
            print(err(lambda: pteron.Program.load(un).load_method()))
        print(err(lambda: pteron.Program.load("{tmp_path}")))
        try:
            pteron.Program.load(12)
        except TypeError as e:
            print("TypeError", e)
    """))
    lines = out.splitlines()
    assert lines[0].startswith("InvalidProgramError 2 True: "), lines[0]
    assert lines[1].startswith("InvalidProgramError 2 True: "), lines[1]
    assert lines[2].startswith("FileAccessError 9 True: ") and "missing.pte" in lines[2]
    assert lines[3].startswith("NotFoundError 3 True: ") and "nope" in lines[3]
    if (FIXTURES / "unsupported_op.pte").exists():
        assert lines[4].startswith("MissingOperatorError 4 True: ") and "::absent_unary.out" in lines[4]
    assert lines[-2].startswith("FileAccessError 9 True: ") and \
        lines[-2].endswith("': it is a directory"), lines[-2]
    assert lines[-1].startswith("TypeError Program.load: source must be")


def test_one_method_from_several_threads(any_stage):
    out = ok(py(any_stage, f"""
        import threading
        {MLP}
        xs = [x * (k + 1) for k in range(4)]
        want = [m(v)[0] for v in xs]
        bad = []
        def work(k):
            for _ in range(200):
                (y,) = m(xs[k])
                if not np.array_equal(y, want[k]):
                    bad.append(k)
        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print("bad", len(bad))
    """, timeout=300))
    assert "bad 0" in out


def test_exit_with_daemon_threads_inside_calls(any_stage):
    """The interpreter exits while daemon threads are inside method calls: exit status 0, no
    abort ("terminate called without an active exception": CPython before 3.14 ends such a
    thread with a forced unwind when it takes the GIL back) and no leak report. Three runs:
    before the fix, three in four aborted."""
    for _ in range(3):
        r = py(any_stage, f"""
            import threading, time
            import numpy as np, pteron
            F = "{FIXTURES}/cnn_xnnpack"
            m = pteron.Program.load(F + ".pte").load_method()
            x = np.load(F + ".forward.input_0.npy")
            m2 = pteron.Program.load(F + ".pte").load_method()
            xf = np.asfortranarray(x)  # goes through the Python layer's preparation
            def loop(method, a):
                while True:
                    method(a)
            for k in range(6):
                threading.Thread(target=loop, args=(m, x) if k % 2 else (m2, xf),
                                 daemon=True).start()
            time.sleep(0.5)
            print("exiting")
        """, timeout=180)
        assert r.returncode == 0 and r.stdout.strip() == "exiting", str(r.returncode) + r.stderr
        assert "terminate" not in r.stderr and "leaked" not in r.stderr, r.stderr


def test_calls_after_the_modules_atexit_function_run(any_stage):
    """The module's atexit function holds daemon threads only: a call from an atexit handler
    that runs after it (registered before the first runtime call), from a thread such a
    handler joins, and from a __del__ at finalisation, all return; so does the handler's call
    of a Method that a held daemon thread was calling (the Method's lock is let go)."""
    out = ok(py(any_stage, f"""
        import atexit, threading, time
        import numpy as np, pteron
        F = "{FIXTURES}/mlp_xnnpack"
        x = np.load(F + ".forward.input_0.npy")
        def late():
            print("shared", shared(x)[0].shape, flush=True)
            m = pteron.Program.load(F + ".pte").load_method()
            print("atexit", m(x)[0].shape, flush=True)
            t = threading.Thread(target=lambda: print("joined", m(x)[0].shape, flush=True))
            t.start()
            t.join()
        atexit.register(late)
        class Runner:
            def __init__(self):
                self.m = pteron.Program.load(F + ".pte").load_method()
            def __del__(self):
                print("__del__", self.m(x)[0].shape, flush=True)
        r = Runner()
        shared = pteron.Program.load(F + ".pte").load_method()
        threading.Thread(target=lambda: [shared(x) for _ in iter(int, 1)], daemon=True).start()
        time.sleep(0.2)
        print("main", r.m(x)[0].shape, flush=True)
    """, timeout=120))
    assert out.split() == ["main", "(4,", "8)", "shared", "(4,", "8)", "atexit", "(4,", "8)",
                           "joined", "(4,", "8)"] + ["__del__", "(4,", "8)"] * (
                               "__del__" in out), out


def test_a_forked_child_runs_and_exits(stage):
    """fork() after the thread pool has started, with a daemon thread inside calls of another
    Method: the child (which has none of the parent's threads) runs the method on a new pool
    and exits. Before, its exit waited forever on the old pool's workers. (A Method that
    another thread is calling at the fork stays locked in the child, as any lock does.)"""
    out = ok(py(stage, f"""
        import os, sys, threading, time
        import numpy as np, pteron
        F = "{FIXTURES}/cnn_xnnpack"
        m = pteron.Program.load(F + ".pte").load_method()
        x = np.load(F + ".forward.input_0.npy")
        (want,) = m(x)
        m2 = pteron.Program.load(F + ".pte").load_method()
        threading.Thread(target=lambda: [m2(x) for _ in iter(int, 1)], daemon=True).start()
        time.sleep(0.2)
        pid = os.fork()
        if pid == 0:
            (got,) = m(x)
            print("child", np.array_equal(got, want), pteron.num_threads(), flush=True)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        print("parent", os.waitstatus_to_exitcode(status), flush=True)
    """, timeout=120))
    words = out.split()
    assert words[:2] == ["child", "True"] and words[-2:] == ["parent", "0"], out


def test_components_are_loaded_once_from_the_runtimes_folder(stage, linux_package):
    out = ok(py(stage, """
        import json, pteron
        c = pteron.components()
        maps = {}
        for l in open("/proc/self/maps"):
            parts = l.split()
            if len(parts) >= 6 and "libpteron" in parts[5]:
                maps.setdefault(parts[5].rsplit("/", 1)[1].split(".so")[0], set()).add(parts[5])
        print(json.dumps({"components": c, "maps": {k: sorted(v) for k, v in maps.items()},
                          "threads": pteron.num_threads(),
                          "backends": [b.id for b in pteron.backends()]}))
    """))
    d = json.loads(out.strip().splitlines()[-1])
    lib = os.path.realpath(linux_package / "lib")
    assert set(d["components"]) >= {"runtime", "kernels_portable", "threadpool"}
    for name, path in d["components"].items():
        assert os.path.dirname(os.path.realpath(path)) == lib, (name, path)
    for name, paths in d["maps"].items():
        assert len(paths) == 1, f"{name} mapped from {paths}"
    assert "XnnpackBackend" in d["backends"]


def test_load_components_adds_per_program_and_a_missing_threadpool(stage, linux_package, tmp_path):
    out = ok(py(stage, f"""
        import pteron
        pteron.load_components(["kernels_portable"])
        print(sorted(pteron.components()))
        try:
            pteron.Program.load("{FIXTURES}/mlp_xnnpack.pte").load_method()
        except pteron.MissingDelegateError as e:
            print("MissingDelegateError", e)
        # Later calls add components: a program names what it needs.
        p = pteron.Program.load("{FIXTURES}/mlp_xnnpack.pte",
                                components=["kernels_portable", "backend_xnnpack"])
        p.load_method()
        print(sorted(pteron.components()))
        try:
            pteron.Program.load("{FIXTURES}/mlp.pte", components=["kernels_nonesuch"])
        except ValueError as e:
            print("ValueError", e)
    """))
    assert "['kernels_portable', 'runtime']" in out
    assert "MissingDelegateError" in out and "XnnpackBackend" in out
    assert "['backend_xnnpack', 'kernels_portable', 'runtime']" in out
    assert "ValueError unknown component(s) ['kernels_nonesuch']" in out
    # A copy of the package's libraries without the thread pool, found first (LD_LIBRARY_PATH
    # comes before the extension's RUNPATH): the import names the missing library.
    lib = tmp_path / "lib"
    shutil.copytree(linux_package / "lib", lib, symlinks=True,
                    ignore=shutil.ignore_patterns("cmake", "*threadpool*"))
    r = py(stage, """
        import pteron
        try:
            pteron.operators()
        except ImportError as e:
            print("ImportError", e)
    """, env={"LD_LIBRARY_PATH": str(lib)})
    assert "ImportError pteron: the thread pool library" in ok(r), r.stdout
    assert str(lib) in r.stdout


# ---- Windows only: where the DLLs come from ---------------------------------------------------

# A child's report: the runtime's file and every loaded module named pteron*.dll with its
# file, from the process's module list (the Windows counterpart of /proc/self/maps).
WIN_MODULES = WIN_PTERON_MODULES + """
import json, os, pteron
added, add = [], os.add_dll_directory
os.add_dll_directory = lambda d: added.append(d) or add(d)
pteron.operators()
print(json.dumps({"components": pteron.components(), "modules": pteron_modules(),
                  "added": added}))
"""


def win_report(r):
    return json.loads(ok(r).strip().splitlines()[-1])


def test_windows_dlls_load_from_the_package_folder_only(win_stage, tmp_path):
    """os.add_dll_directory: pteron/lib, the one folder given to it, is where the DLLs load
    from, never a pteron.dll in the working folder or on PATH, whether it works (a copy) or
    not (another DLL under that name); without the call, the import fails even with a working
    copy on PATH (Python 3.8+ ignores PATH); with no pteron.dll in any folder the package
    looks at, the ImportError names pteron.dll and the folders."""
    lib = win_stage.root / "pteron" / "lib"
    copy, bogus = tmp_path / "copy", tmp_path / "bogus"
    for d, src in ((copy, "pteron.dll"), (bogus, "pteron_threadpool.dll")):
        d.mkdir()
        shutil.copy2(lib / src, d / "pteron.dll")
    want = winpath(lib).lower()
    for cwd_dll, path_dir in ((copy, copy), (bogus, bogus)):
        work = tmp_path / f"work-{cwd_dll.name}"
        work.mkdir()
        shutil.copy2(cwd_dll / "pteron.dll", work)
        d = win_report(py(win_stage, WIN_MODULES, cwd=work, env={"WINEPATH": winpath(path_dir)}))
        assert set(d["components"]) >= {"runtime", "kernels_portable", "threadpool",
                                         "backend_xnnpack"}, d
        # numpy's wheel adds its own numpy.libs when numpy is first imported
        assert [a.lower() for a in d["added"] if not a.endswith("numpy.libs")] == [want], \
            d["added"]
        for name, f in d["components"].items():
            assert f.lower().rsplit("\\", 1)[0] == want, (name, f)
        names = [f.lower().rsplit("\\", 1)[1] for f in d["modules"]]
        assert {"pteron.dll", "pteron_threadpool.dll"} <= set(names), d["modules"]
        assert sorted(names) == sorted(set(names)), d["modules"]  # each loaded once
        assert all(f.lower().rsplit("\\", 1)[0] == want for f in d["modules"]), d["modules"]
    out = ok(py(win_stage, """
        import os, pteron
        add = os.add_dll_directory  # kept for numpy's own DLLs, not for pteron's folder
        os.add_dll_directory = lambda d: None if os.path.isfile(d + "/pteron.dll") else add(d)
        try:
            pteron.operators()
        except ImportError as e:
            print("ImportError", e)
    """, env={"WINEPATH": winpath(copy)}))
    assert "ImportError pteron: the native extension pteron._pteron could not be loaded" in out
    assert f"with pteron.dll from {winpath(lib)}" in out, out
    out, st = import_without(win_stage, tmp_path, "pteron.dll", env={"WINEPATH": winpath(copy)})
    assert "ImportError pteron: pteron.dll, the runtime library the extension pteron._pteron " \
           "links, is in none of these folders: " in out, out
    assert winpath(st / "pteron" / "lib") in out, out


# A child's first runtime call, printing the ImportError it raises.
FIRST_CALL = """
import pteron
try:
    pteron.operators()
except ImportError as e:
    print("ImportError", e)
"""


def import_without(win_stage, tmp_path, dll, env=None):
    """(what the first runtime call prints, the stage) for a copy of the Windows stage
    without `dll`."""
    st = tmp_path / "stage"
    shutil.copytree(win_stage.root, st, ignore=shutil.ignore_patterns(dll))
    out = ok(py(win_stage.elsewhere(tmp_path / "python", st), FIRST_CALL, env=env))
    return out, st


@pytest.mark.parametrize("foreign", ["pteron_threadpool.dll", "pteron.dll"])
def test_windows_pteron_dll_beside_python_exe_is_named_as_shadowing_the_package(
        win_stage, tmp_path, foreign):
    """Windows searches the application's folder (python.exe's) before the folder given to
    os.add_dll_directory: a pteron.dll there (another DLL under that name, or a copy from
    elsewhere) is what loads. The ImportError names that file and the package's own, not a
    missing component of the package."""
    stage = win_stage.elsewhere(tmp_path / "python", win_stage.root)
    shutil.copy2(win_stage.root / "pteron" / "lib" / foreign, tmp_path / "python" / "pteron.dll")
    out = ok(py(stage, FIRST_CALL))
    assert "ImportError pteron: the process loaded " in out, out
    assert winpath(tmp_path / "python" / "pteron.dll").lower() in out.lower(), out
    assert "shadows the package's" in out, out


def test_windows_missing_msvc_runtime_names_the_redistributable(win_stage, wine_env):
    """Without msvcp140.dll (Wine told not to load it: a Windows without the Visual C++
    Redistributable), the ImportError says what the DLLs need and where it comes from."""
    overrides = wine_env.get("WINEDLLOVERRIDES", "")
    out = ok(py(win_stage, FIRST_CALL,
                env={"WINEDLLOVERRIDES": ";".join(filter(None, [overrides, "msvcp140=d"]))}))
    assert "ImportError pteron: the native extension pteron._pteron could not be loaded" in out, out
    assert "msvcp140.dll" in out and "Visual C++ Redistributable" in out, out


def test_windows_conda_prefix_loads_from_library_bin(win_stage, tmp_path):
    """A conda prefix as conda-forge lays it out (a space and non-ASCII letters in its path):
    the DLLs in Library/bin, the module in Lib/site-packages/pteron with no lib/ of its own."""
    prefix = tmp_path / "env win-64 é Ω"
    site = prefix / "Lib" / "site-packages"
    conda = win_stage.elsewhere(prefix, site)  # python.exe in the prefix, as conda's python
    shutil.copytree(win_stage.root / "pteron", site / "pteron", ignore=shutil.ignore_patterns("lib"))
    shutil.copytree(win_stage.root / "pteron" / "lib", prefix / "Library" / "bin")
    d = win_report(py(conda, WIN_MODULES))
    want = winpath(prefix / "Library" / "bin").lower()
    assert {f.lower().rsplit("\\", 1)[0] for f in d["components"].values()} == {want}, d
    out = ok(py(conda, f"""
        {MLP}
        (y,) = m(x)
        e = np.load("{FIXTURES}/mlp_xnnpack.forward.expected_0.npy")
        np.testing.assert_allclose(y, e, rtol=1e-4, atol=1e-5)
        print("OK", y.shape)
    """))
    assert "OK (4, 8)" in out


def test_windows_editable_install_finds_the_dlls_beside_the_extension(win_stage, tmp_path):
    """An editable install as scikit-build-core's redirect mode makes it: the Python files
    load from the source tree, and an import hook maps pteron._pteron to the extension in the
    build's install folder, whose lib/ holds the DLLs."""
    src, built = tmp_path / "src", tmp_path / "built"
    shutil.copytree(REPO / "python" / "pteron", src / "pteron")
    shutil.copytree(win_stage.root / "pteron", built / "pteron",
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (pyd,) = (built / "pteron").glob("_pteron*.pyd")
    out = ok(py(win_stage.elsewhere(tmp_path / "python", src), f"""
        import importlib.abc, importlib.util, sys
        class Redirect(importlib.abc.MetaPathFinder):  # what the editable install's hook does
            def find_spec(self, name, path=None, target=None):
                if name == "pteron._pteron":
                    return importlib.util.spec_from_file_location(name, {str(winpath(pyd))!r})
        sys.meta_path.insert(0, Redirect())
        {MLP}
        (y,) = m(x)
        np.testing.assert_allclose(
            y, np.load("{FIXTURES}/mlp_xnnpack.forward.expected_0.npy"), rtol=1e-4, atol=1e-5)
        print(pteron.__file__)
        print(pteron.components()["runtime"])
    """))
    lines = out.strip().splitlines()
    assert lines[-2].lower().startswith(winpath(src).lower()), out
    assert lines[-1].lower() == winpath(built / "pteron" / "lib" / "pteron.dll").lower(), out


def test_windows_missing_threadpool_dll_is_named(win_stage, tmp_path):
    out, st = import_without(win_stage, tmp_path, "pteron_threadpool.dll")
    assert "ImportError pteron: the thread pool library (component 'threadpool', " \
           "pteron_threadpool.dll) is missing from " in out, out
    assert winpath(st / "pteron" / "lib") in out, out


def test_windows_python_m_pteron_run_and_info(win_stage, tmp_path):
    r = wine_run(win_stage.wine_env, win_stage.python, "-m", "pteron", "run",
                 FIXTURES / "mlp_xnnpack.pte", "--input",
                 FIXTURES / "mlp_xnnpack.forward.input_0.npy", "--output-dir", tmp_path,
                 cwd=tmp_path, timeout=120, pipes=True)
    assert r.returncode == 0 and r.stdout.startswith("output 0: float32 [4, 8] min "), str(r)
    import numpy as np
    np.testing.assert_allclose(np.load(tmp_path / "output_0.npy"),
                               np.load(FIXTURES / "mlp_xnnpack.forward.expected_0.npy"),
                               rtol=1e-4, atol=1e-5)
    r = wine_run(win_stage.wine_env, win_stage.python, "-m", "pteron", "info", cwd=tmp_path,
                 timeout=120, pipes=True)
    assert r.returncode == 0, str(r)
    for want in ("pteron.dll", "pteron_threadpool.dll", "ISA (kernels_optimized", "threads: ",
                 "operators: ", "backends: XnnpackBackend",
                 "CUDA: backend_cuda of train cu134; driver not usable: "):
        assert want in r.stdout, r.stdout


def test_the_module_knows_every_component_of_the_list():
    import ast

    tree = ast.parse((REPO / "python" / "pteron" / "_runtime.py").read_text())
    known = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", None) == "_COMPONENTS" for t in n.targets))
    listed = [c["name"] for c in json.loads((REPO / "cmake" / "components.json").read_text())
              ["components"] if c["name"] != "runtime"]
    assert list(known) == listed


def test_python_m_pteron_run_and_info(stage, tmp_path):
    e = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    e["PYTHONPATH"] = str(stage)
    r = run([sys.executable, "-m", "pteron", "run", FIXTURES / "mlp_xnnpack.pte", "--input",
             FIXTURES / "mlp_xnnpack.forward.input_0.npy", "--output-dir", tmp_path,
             "--iterations", "3"], timeout=120, env=e)
    out = ok(r)
    assert out.startswith("output 0: float32 [4, 8] min ")
    assert "median time per execution: " in out and "over 3 iteration(s)" in out
    import numpy as np
    np.testing.assert_allclose(np.load(tmp_path / "output_0.npy"),
                               np.load(FIXTURES / "mlp_xnnpack.forward.expected_0.npy"),
                               rtol=1e-4, atol=1e-5)
    r = run([sys.executable, "-m", "pteron", "run", tmp_path / "nothing.pte"], timeout=60, env=e)
    assert r.returncode == 1 and r.stderr.startswith("pteron: error: cannot open program file")
    out = ok(run([sys.executable, "-m", "pteron", "info"], timeout=60, env=e))
    for want in ("runtime ", "kernels_portable ", "threadpool ", "ISA (kernels_optimized",
                 "threads: ", "operators: ", "backends: XnnpackBackend"):
        assert want in out, out
    # the CUDA driver's status (CI's package has backend_cuda; this machine has no driver)
    pkg = Path(os.environ["PTERON_LINUX_PACKAGE"])
    if list((pkg / "lib").glob("libpteron_extension_cuda.so*")):
        assert "CUDA: backend_cuda of train cu134; driver not usable: no CUDA driver" in out, out
    else:
        assert "CUDA: no CUDA component in this build" in out, out


def test_python_m_pteron_info_into_a_closed_pipe_is_quiet(stage):
    """`python -m pteron info | head -1`: the reader leaves early; no error message and no
    traceback follow (pteron-run and other tools behave so too)."""
    e = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    e["PYTHONPATH"] = str(stage)
    p = subprocess.Popen([sys.executable, "-m", "pteron", "info"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=e)
    p.stdout.close()  # before the module has written anything (it imports first)
    try:
        err = p.stderr.read().decode()
        p.wait(timeout=60)
    finally:
        p.kill()
    assert p.returncode in (0, 1), (p.returncode, err)
    assert err == "", err


def test_readme_python_quick_start_runs_as_written(linux_package, tmp_path):
    """The README's Python block, run with bash in a scratch folder (python/, models/ and
    .venv linked from this clone) against the Linux package."""
    import re
    text = (REPO / "README.md").read_text()
    m = re.search(r"<!-- tested: python-quickstart -->\n+```sh\n(.*?)\n```", text, re.S)
    assert m, "README has no block marked 'python-quickstart'"
    block = m.group(1).replace("<pteron package folder>", str(linux_package))
    for d in ("python", "models", ".venv"):
        (tmp_path / d).symlink_to(REPO / d)
    r = run(["bash", "-euo", "pipefail", "-c", block], timeout=900, cwd=tmp_path,
            env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    out = ok(r)
    assert "TensorSpec(kind='tensor', dtype=dtype('float32'), shape=(4, 16)" in out
    assert "(4, 8) {'runtime': " in out and "kernels_portable" in out
    assert "backends: XnnpackBackend" in out
    assert "output 0: float32 [4, 8] min " in out


def test_a_program_file_rewritten_after_load_changes_nothing(stage, tmp_path):
    """Program.load(path) reads the file: rewriting or truncating it later neither breaks
    (SIGBUS on a mapping) nor silently changes the loaded program."""
    cp = tmp_path / "cp.pte"
    shutil.copy(FIXTURES / "mlp.pte", cp)
    out = ok(py(stage, f"""
        import os, shutil, numpy as np, pteron
        m = pteron.Program.load("{cp}").load_method()
        x = np.load("{FIXTURES}/mlp.forward.input_0.npy")
        e = np.load("{FIXTURES}/mlp.forward.expected_0.npy")
        with open("{cp}", "r+b") as f:
            f.write(b"\\0" * os.path.getsize("{cp}"))
        a = m(x)[0]
        os.truncate("{cp}", 0)
        b = m(x)[0]
        print("err", float(np.abs(a - e).max()), float(np.abs(b - e).max()))
    """))
    errs = [float(v) for v in out.split()[1:3]]
    assert max(errs) < 1e-5, out


def test_zero_dim_inputs_and_argument_checks(stage):
    out = ok(py(stage, f"""
        import glob, numpy as np, pteron
        F = "{FIXTURES}/item_scalar"
        m = pteron.Program.load(F + ".pte").load_method()
        ins = [np.load(p) for p in sorted(glob.glob(F + ".forward.input_*.npy"))]
        assert any(a.ndim == 0 for a in ins)
        exps = [np.load(p) for p in sorted(glob.glob(F + ".forward.expected_*.npy"))]
        got = m(*ins)
        assert all(np.array_equal(o, e) for o, e in zip(got, exps))
        py_numbers = [ins[0]] + [a.item() for a in ins[1:]]  # Python numbers for 0-d inputs
        assert all(np.array_equal(o, e) for o, e in zip(m(*py_numbers), exps))
        def err(f):
            try:
                f()
            except Exception as e:
                return type(e).__name__ + ": " + str(e)
            return "no error"
        print(err(lambda: pteron.set_num_threads(2 ** 64)))
        print(err(lambda: pteron.set_num_threads(2.0)))
        print(err(lambda: pteron.Program.load(F + ".pte\\0x")))
        print(err(lambda: m(ins[0], 1.5, ins[2])))
        print(err(lambda: m(None, ins[1], ins[2])))
        print(err(lambda: pteron.load_components("kernels_portable")))
        print("OK")
    """))
    lines = out.splitlines()
    assert lines[0].startswith("ValueError: set_num_threads: n must be 0") and "1024" in lines[0]
    assert lines[1] == "TypeError: set_num_threads: n must be an int, not float"
    assert lines[2].startswith("ValueError: Program.load: the program file path contains a NUL")
    assert lines[3].startswith("TypeError: input 1: float values for a int64 input")
    assert lines[4].startswith("TypeError: input 0: expects a float32 tensor of shape")
    assert lines[5].startswith("TypeError: load_components: give a list")
    assert lines[-1] == "OK"


def test_memory_budget_of_load_method(stage):
    """load_method(max_allocated_bytes=N): a method that needs more is an OutOfMemoryError (a
    MemoryError) naming the planned buffer; a budget that covers it loads and runs; 0 is no
    budget; a numpy integer is an int; a budget that is not an int in [0, 2**64) is a TypeError
    / ValueError."""
    out = ok(py(stage, f"""
        import numpy as np, pteron
        p = pteron.Program.load("{FIXTURES}/cnn.pte")
        x = np.load("{FIXTURES}/cnn.forward.input_0.npy")
        e0 = np.load("{FIXTURES}/cnn.forward.expected_0.npy")
        def err(f):
            try:
                f()
            except Exception as e:
                return f"{{type(e).__name__}} {{isinstance(e, MemoryError)}}: {{e}}"
            return "no error"
        print(err(lambda: p.load_method("forward", max_allocated_bytes=64)))
        (y,) = p.load_method("forward", max_allocated_bytes=1 << 30)(x)
        (z,) = p.load_method("forward", max_allocated_bytes=0)(x)
        (w,) = p.load_method("forward", max_allocated_bytes=np.uint64(1 << 30))(x)
        print(np.allclose(y, e0, rtol=1e-4, atol=1e-5), np.array_equal(y, z),
              np.array_equal(y, w))
        print(err(lambda: p.load_method("forward", max_allocated_bytes=-1)))
        print(err(lambda: p.load_method("forward", max_allocated_bytes=2 ** 64)))
        print(err(lambda: p.load_method("forward", max_allocated_bytes=1.5)))
        print(err(lambda: p.load_method("forward", max_allocated_bytes=True)))
    """))
    lines = out.splitlines()
    assert lines[0].startswith("OutOfMemoryError True: ") and "planned buffer" in lines[0] \
        and "budget" in lines[0], lines[0]
    assert lines[1] == "True True True", lines[1]
    for line in lines[2:4]:
        assert line.startswith("ValueError False: load_method: max_allocated_bytes must be in"), line
    assert lines[4] == "TypeError False: load_method: max_allocated_bytes must be an int, not float"
    assert lines[5] == "TypeError False: load_method: max_allocated_bytes must be an int, not bool"


def test_kept_fuzz_corpus_replays_through_the_module(stage):
    """tests/fuzz/fuzz_python.py --replay: every kept program input (the program and python
    targets' corpus) through Program.load(bytes), load_method with a budget and a call, ends in
    success or a pteron.Error (tests/test_fuzz_corpus.py replays the same files under ASan)."""
    folders = [REPO / "tests" / "corpus" / t for t in ("program", "python")]
    files = [f for d in folders for f in d.iterdir() if f.is_file()]
    assert files, folders
    r = ok(py(stage, f"""
        import runpy, sys
        sys.argv = ["fuzz_python.py", "--replay", *{[str(d) for d in folders]!r}]
        runpy.run_path("{REPO}/tests/fuzz/fuzz_python.py", run_name="__main__")
    """, timeout=600))
    counts = dict(kv.split("=") for kv in r.splitlines()[-1].split())
    assert int(counts["inputs"]) == len(files), r[-2000:]
    # The corpus holds loadable programs whose methods run, not only refused bytes.
    assert int(counts["programs"]) > 0 and int(counts["calls"]) > 0, counts


def test_scalar_and_other_outputs_and_int_inputs_are_exact(stage, tmp_path):
    """An Int output is a Python int equal to the program's int64, 2^63 - 1 and 2^53 + 1
    included (they once went through a double: UBSan's float-cast overflow, found by a breaker
    run); a Null output is None; a String or BoolList output is a NotSupportedError naming it;
    an Int input accepts its exported value exactly and refuses its neighbour, naming both; a
    huge int is cut in the message; Program.load refuses an array of Python objects."""
    big, odd = (1 << 63) - 1, (1 << 53) + 1
    ints = program_with_values(tmp_path, "ints", [
        {"val_type": "Int", "val": {"int_val": big}}, {"val_type": "Int", "val": {"int_val": odd}},
        {"val_type": "Int", "val": {"int_val": -(1 << 63)}}, {"val_type": "Null", "val": {}},
        {"val_type": "Int", "val": {"int_val": odd}}], n_outputs=4, n_inputs=1)
    text = program_with_values(tmp_path, "text", [{"val_type": "String", "val": {"string_val": "hi"}}],
                        n_outputs=1)
    bools = program_with_values(tmp_path, "bools",
                         [{"val_type": "BoolList", "val": {"items": [True, False]}}], n_outputs=1)
    x = FIXTURES / "sym_numel_rewritten.forward.input_0.npy"
    out = ok(py(stage, f"""
        import numpy as np, pteron
        x = np.load("{x}")
        m = pteron.Program.load("{ints}").load_method()
        print([s.kind for s in m.inputs], [s.kind for s in m.outputs])
        r = m(x, {odd})
        print(repr(r[1:]))
        for bad in ({odd - 1}, float({odd}), {big} + 1, "1"):
            try:
                m(x, bad)
                print("no error")
            except Exception as e:
                print(type(e).__name__, isinstance(e, pteron.Error), e)
        try:
            m(x, 10 ** 400)
        except ValueError as e:
            print("huge:", e)
        for path in ("{text}", "{bools}"):
            mm = pteron.Program.load(path).load_method()
            try:
                mm(x)
                print("no error")
            except Exception as e:
                print(type(e).__name__, isinstance(e, pteron.Error), e)
        try:
            pteron.Program.load(np.array([1, "a"], dtype=object))
        except TypeError as e:
            print("objects:", e)
    """))
    lines = out.splitlines()
    assert lines[0] == "['tensor', 'int'] ['tensor', 'int', 'int', 'int', 'none']", lines[0]
    assert lines[1] == f"[{big}, {odd}, {-(1 << 63)}, None]", lines[1]
    # 2^53 and float(2^53 + 1) (= 2^53) are the exported value's neighbours in a double
    for line in lines[2:4]:
        assert line.startswith("InvalidArgumentError True input 1: ") and f"the int {odd}" in line, line
    assert lines[4].startswith("ValueError False input 1: ") and "int64" in lines[4], lines[4]
    assert lines[5].startswith("TypeError False input 1: expects a int scalar"), lines[5]
    assert lines[6].startswith("huge: input 1: 100000000000000000...") and \
        "(401 characters) is outside the int input's int64 range" in lines[6] and \
        len(lines[6]) < 200, lines[6]
    assert lines[7].startswith("NotSupportedError True output 1 is a String"), lines[7]
    assert lines[8].startswith("NotSupportedError True output 1 is a BoolList"), lines[8]
    assert lines[9].startswith("objects: Program.load: ") and "Python objects" in lines[9], lines[9]


def test_load_refuses_what_is_not_a_regular_file_and_names_the_file(stage, tmp_path):
    """A FIFO (open() would block) and /dev/zero (read() would never end) are refused as not
    regular files, as pteron-run refuses them; a malformed program's error names the file, and
    `python -m pteron run` names the .npy file a bad input came from."""
    fifo = tmp_path / "fifo.pte"
    os.mkfifo(fifo)
    short = tmp_path / "short.pte"
    short.write_bytes((FIXTURES / "mlp.pte").read_bytes()[:300])
    np.save(tmp_path / "x64.npy", np.zeros((4, 16)))
    out = ok(py(stage, f"""
        import pteron
        for p in ({str(fifo)!r}, "/dev/zero"):
            try:
                pteron.Program.load(p)
            except pteron.FileAccessError as e:
                assert str(e) == f"cannot read program file '{{p}}': it is not a regular file", e
        try:
            pteron.Program.load({str(short)!r})
        except pteron.InvalidProgramError as e:
            assert str(e).endswith(" [{short}]") and "truncated" in str(e), e
        print("ok")
    """, timeout=60))
    assert out.strip() == "ok"
    e = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    e["PYTHONPATH"] = str(stage)
    r = run([sys.executable, "-m", "pteron", "run", FIXTURES / "mlp.pte", "--input",
             tmp_path / "x64.npy"], timeout=60, env=e)
    assert r.returncode != 0
    assert "float64" in r.stderr and f"(from '{tmp_path / 'x64.npy'}')" in r.stderr, r.stderr
