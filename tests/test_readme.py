# SPDX-License-Identifier: BSD-3-Clause
"""The user guides, run exactly as written.

Blocks marked `<!-- tested: NAME -->` are found in the README and the pages it links to
(DOCS: README.md, docs/*.md, bench/README.md; a name is marked once in all of them). Every
command block of the C++ guides (docs/consumers.md, "Building your own C++ consumer" and
"Building pteron yourself") is marked. This file takes the consumer's CMakeLists.txt and app.cpp
from there, writes them into a scratch folder and runs each guide's block there with bash as
written, nothing rewritten, against the packages scripts/test.sh made (PTERON_LINUX_PACKAGE,
PTERON_MINGW_PACKAGE, PTERON_MSVC_PACKAGE, in CONAN_HOME = the clone's .conan2): the guides name
the profiles of those packages. PTERON_SRC is this clone. The app's output is compared with the
same program run through the C API.

The "Building pteron yourself" blocks are full builds: they run only with
PTERON_README_FULL_BUILDS=1, followed by the plain-CMake guides against the prefixes they
install.
"""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import package_profile, FIXTURES, MINGW_CXX, REPO, run

README = REPO / "README.md"
GUIDES = REPO / "docs" / "consumers.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]
GUIDES_START = "## Building your own C++ consumer"
GUIDES_END = "## Building pteron yourself (CMake)"
FULL_BUILDS = os.environ.get("PTERON_README_FULL_BUILDS") == "1"
MARKED = re.compile(r"<!-- tested: (.+?) -->\n+```(\w+)\n(.*?)\n```", re.S)


def marked_blocks():
    """{name: (language, text)} of the marked blocks of DOCS."""
    out, where = {}, {}
    for doc in DOCS:
        for name, lang, text in MARKED.findall(doc.read_text()):
            assert name not in out, f"'{name}' is marked twice: {where[name]} and {doc.relative_to(REPO)}"
            out[name], where[name] = (lang, text), doc.relative_to(REPO)
    return out


def guide_sections():
    """The text of the user guides and of "Building pteron yourself" (docs/consumers.md)."""
    text = GUIDES.read_text()
    start = text.index(GUIDES_START)
    end = text.index(GUIDES_END)
    nxt = text.find("\n## ", end + 1)
    return text[start:nxt if nxt != -1 else len(text)]


def test_every_command_block_of_the_guides_is_marked_tested():
    text = guide_sections()
    fences = re.findall(r"(<!-- tested: [^>]+ -->\n+)?```(\w*)\n", text)
    opening = fences[0::2]  # every other fence opens a block
    unmarked = [lang for marker, lang in opening if not marker]
    assert unmarked == [], f"guide blocks without a '<!-- tested: ... -->' marker: {unmarked}"
    names = set(marked_blocks())
    for want in ("consumer CMakeLists.txt", "consumer app.cpp", "conan-consumer-linux",
                 "conan-consumer-debug", "conan-consumer-mingw", "conan-consumer-msvc",
                 "cmake-consumer-linux",
                 "cmake-consumer-mingw", "build-linux", "build-mingw"):
        assert want in names, f"no block is marked '{want}'"


def test_conan_guides_require_this_version_with_profiles_from_the_clone():
    version = (REPO / "VERSION").read_text().strip()
    blocks = marked_blocks()
    for name in ("conan-consumer-linux", "conan-consumer-debug", "conan-consumer-mingw",
                 "conan-consumer-msvc"):
        lang, text = blocks[name]
        assert lang == "sh"
        assert f"--requires=pteron/{version} " in text, (name, version)
        profiles = re.findall(r"-pr:[hb] (\S+)", text)
        assert profiles and all(p.startswith("$PTERON_SRC/profiles/") for p in profiles), (name, profiles)
        assert "-DCMAKE_TOOLCHAIN_FILE=" in text and "-DCMAKE_BUILD_TYPE=" in text, name
    assert '-s "pteron/*:build_type=Release"' in blocks["conan-consumer-debug"][1]
    assert "COMMAND_EXPAND_LISTS" in blocks["consumer CMakeLists.txt"][1]


GUIDE_PLATFORM = {"conan-consumer-linux": "linux", "conan-consumer-debug": "linux",
                  "conan-consumer-mingw": "mingw", "conan-consumer-msvc": "msvc"}


def guide_profile(name):
    """The host profile a Conan guide's block names."""
    (host,) = re.findall(r"-pr:h \$PTERON_SRC/profiles/(\S+)", marked_blocks()[name][1])
    return host


def test_conan_guides_name_the_profiles_whose_packages_test_sh_makes():
    """Each Conan guide runs as written after scripts/test.sh, the command the guides name: its
    host profile is one whose package scripts/test.sh makes (a profile without one stops
    `conan install` with "Missing binary"), the one test.sh hands conftest for that platform."""
    test_sh = (REPO / "scripts" / "test.sh").read_text()
    made = {k.lower(): v for k, v in re.findall(r"PTERON_(LINUX|MINGW|MSVC)_PROFILE=(\S+)", test_sh)}
    assert set(made) == {"linux", "mingw", "msvc"}, made
    packaged = re.findall(r"^pteron_conan_package (\S+) ", test_sh, re.M)
    assert sorted(packaged) == sorted(made.values()), (packaged, made)
    for name, platform in GUIDE_PLATFORM.items():
        assert guide_profile(name) == made[platform], (name, guide_profile(name), made[platform])
    assert "`scripts/test.sh`" in guide_sections().split("### With Conan, on Linux")[0]


# ---- running the guides -------------------------------------------------------

@pytest.fixture(scope="module")
def expected_sum(runtime):
    """What app.cpp prints for mlp.pte, through the C API: the same ramp input."""
    m = runtime.load_file(FIXTURES / "mlp.pte").load_method("forward")
    shape = m.input_info(0)["sizes"]
    n = int(np.prod(shape))
    x = (np.float32(0.01) * (np.arange(n) % 100).astype(np.float32) - np.float32(0.5))
    m.set_input(0, x.reshape(shape).astype(np.float32))
    m.execute()
    y = m.output(0)
    return y.size, float(y.astype(np.float64).sum())


def consumer_dir(tmp_path):
    """A scratch folder holding the README's consumer (CMakeLists.txt, app.cpp)."""
    blocks = marked_blocks()
    d = tmp_path / "consumer"
    d.mkdir()
    (d / "CMakeLists.txt").write_text(blocks["consumer CMakeLists.txt"][1] + "\n")
    (d / "app.cpp").write_text(blocks["consumer app.cpp"][1] + "\n")
    return d


def run_block(name, cwd, timeout=600, **env):
    """Runs the README block `name` with bash -e in `cwd`. Output goes to files, not
    pipes (a Wine service started on the way would hold a pipe open)."""
    lang, text = marked_blocks()[name]
    assert lang == "sh", name
    if name in GUIDE_PLATFORM and guide_profile(name) != package_profile(GUIDE_PLATFORM[name]):
        pytest.fail(f"the guide '{name}' installs the package of profile {guide_profile(name)}, "
                    f"but the one under test is {package_profile(GUIDE_PLATFORM[name])}'s "
                    f"(PTERON_{GUIDE_PLATFORM[name].upper()}_PROFILE): run scripts/test.sh",
                    pytrace=False)
    e = {k: v for k, v in os.environ.items()
         if k not in ("LD_LIBRARY_PATH", "WINEPATH", "DISPLAY", "WAYLAND_DISPLAY")}
    e.update(PTERON_SRC=str(REPO), **{k: str(v) for k, v in env.items()})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", text], cwd=cwd, env=e,
                             stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            pytest.fail(f"timeout: block '{name}' did not finish within {timeout} s",
                        pytrace=False)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace").replace("\r\n", "\n")
        stderr = err.read().decode("utf-8", "replace").replace("\r\n", "\n")
    assert rc == 0, (f"block '{name}' failed (exit {rc})\n--- stdout (end)\n{stdout[-4000:]}"
                     f"\n--- stderr (end)\n{stderr[-4000:]}")
    return stdout


def assert_app_output(stdout, expected_sum):
    m = re.search(r"^output 0: (\d+) values, sum (-?[0-9.]+)$", stdout, re.M)
    assert m, f"no 'output 0:' line from app:\n{stdout[-2000:]}"
    n, want = expected_sum
    assert int(m.group(1)) == n
    assert abs(float(m.group(2)) - want) <= 1e-4 * max(1.0, abs(want)), (m.group(2), want)


@pytest.fixture(scope="module")
def conan_home():
    """The README's Conan guides use $PTERON_SRC/.conan2, the home scripts/test.sh fills."""
    home = os.environ.get("CONAN_HOME")
    if home and Path(home).resolve() != (REPO / ".conan2").resolve():
        pytest.fail(f"CONAN_HOME={home}, but the README's guides use $PTERON_SRC/.conan2: run "
                    "scripts/test.sh", pytrace=False)
    # `--requires=pteron/<version>` takes the newest recipe revision in the cache: it must be
    # the one scripts/test.sh made, not one that another test exported since.
    ref = os.environ.get("PTERON_LINUX_REF")
    if ref and "#" in ref:
        r = run(["conan", "list", ref.split("#")[0] + "#latest", "--format=json"], timeout=120,
                env=dict(os.environ, CONAN_HOME=str(REPO / ".conan2")))
        assert r.returncode == 0, r.stderr
        assert ref.split("#")[1] in r.stdout, (
            f"the newest pteron recipe revision in the cache is not {ref}: a test exported "
            f"another pteron recipe into it, and the README's guides would use that\n{r.stdout}")
    return REPO / ".conan2"


def mingw_tools(wine_env):
    if not shutil.which(MINGW_CXX):
        pytest.fail(f"{MINGW_CXX} is missing: run scripts/test.sh (it installs mingw-w64)",
                    pytrace=False)
    return {k: wine_env[k] for k in ("WINEPREFIX", "WINEDLLOVERRIDES")}


def test_conan_consumer_on_linux_runs_as_written(linux_package, conan_home, expected_sum, tmp_path):
    d = consumer_dir(tmp_path)
    out = run_block("conan-consumer-linux", d)
    assert_app_output(out, expected_sum)


def test_debug_consumer_uses_the_release_package_as_written(linux_package, conan_home,
                                                           expected_sum, tmp_path):
    d = consumer_dir(tmp_path)
    out = run_block("conan-consumer-debug", d)
    assert_app_output(out, expected_sum)
    cache = (d / "build-debug" / "CMakeCache.txt").read_text()
    assert "CMAKE_BUILD_TYPE:STRING=Debug" in cache
    # The consumer is Debug; the pteron it links is the Release package.
    data = list((d / "build-debug").glob("pteron-*-data.cmake"))
    assert data, "conan install wrote no pteron data file"
    assert str(linux_package) in "".join(p.read_text() for p in data)


def test_conan_consumer_for_mingw_runs_under_wine_as_written(mingw_package, conan_home, wine_env,
                                                            expected_sum, tmp_path):
    d = consumer_dir(tmp_path)
    out = run_block("conan-consumer-mingw", d, **mingw_tools(wine_env))
    assert_app_output(out, expected_sum)
    beside = {p.name for p in (d / "build-mingw").glob("*.dll")}
    assert {"pteron.dll", "pteron_kernels_portable.dll"} <= beside, beside  # $<TARGET_RUNTIME_DLLS>


def test_conan_consumer_for_msvc_runs_under_wine_as_written(msvc_package, conan_home, wine_env,
                                                           expected_sum, tmp_path):
    d = consumer_dir(tmp_path)
    out = run_block("conan-consumer-msvc", d, **{k: wine_env[k] for k in
                                                 ("WINEPREFIX", "WINEDLLOVERRIDES")})
    assert_app_output(out, expected_sum)
    beside = {p.name for p in (d / "build-msvc").glob("*.dll")}
    assert {"pteron.dll", "pteron_kernels_portable.dll"} <= beside, beside  # $<TARGET_RUNTIME_DLLS>
    # Built by MSVC (cl.exe, link.exe against the package's import libraries).
    ids = [p.read_text() for p in (d / "build-msvc" / "CMakeFiles").glob("*/CMakeCXXCompiler.cmake")]
    assert ids and all('set(CMAKE_CXX_COMPILER_ID "MSVC")' in t for t in ids), ids[:1]


def test_plain_cmake_consumer_on_linux_runs_as_written(linux_package, expected_sum, tmp_path):
    d = consumer_dir(tmp_path)
    out = run_block("cmake-consumer-linux", d, PTERON_PREFIX=linux_package)
    assert_app_output(out, expected_sum)


def test_pkg_config_consumer_on_linux_runs_as_written(linux_package, expected_sum, tmp_path):
    if not shutil.which("pkg-config"):
        pytest.fail("pkg-config is missing: run scripts/test.sh (it installs pkgconf)", pytrace=False)
    d = consumer_dir(tmp_path)
    out = run_block("pkg-config-consumer-linux", d, PTERON_PREFIX=linux_package)
    assert_app_output(out, expected_sum)


def test_plain_cmake_consumer_for_mingw_runs_under_wine_as_written(mingw_package, wine_env,
                                                                  expected_sum, tmp_path):
    toolchain = mingw_package / "lib" / "cmake" / "pteron" / "toolchain-mingw-w64.cmake"
    assert toolchain.is_file(), f"the MinGW package has no {toolchain.relative_to(mingw_package)}"
    d = consumer_dir(tmp_path)
    out = run_block("cmake-consumer-mingw", d, PTERON_MINGW_PREFIX=mingw_package,
                    **mingw_tools(wine_env))
    assert_app_output(out, expected_sum)
    beside = {p.name for p in (d / "build-cmake-mingw").glob("*.dll")}
    assert {"pteron.dll", "pteron_kernels_portable.dll"} <= beside, beside


def test_c_quick_start_builds_as_the_consumer_does_and_runs(linux_package, expected_sum, tmp_path):
    """The README's C program, built as it says: the consumer's CMakeLists.txt with
    `project(app C)` and `app.c` (C99, warnings as errors), against the Linux package."""
    lang, text = marked_blocks()["c-quickstart"]
    assert lang == "c"
    d = tmp_path / "capp"
    d.mkdir()
    cmake = marked_blocks()["consumer CMakeLists.txt"][1]
    assert "project(app CXX)" in cmake and "app.cpp" in cmake
    (d / "CMakeLists.txt").write_text(cmake.replace("project(app CXX)", "project(app C)")
                                      .replace("app.cpp", "app.c") + "\n")
    (d / "app.c").write_text(text + "\n")
    r = run(["cmake", "-S", d, "-B", d / "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_PREFIX_PATH={linux_package}", "-DCMAKE_C_STANDARD=99",
             "-DCMAKE_C_FLAGS=-Wall -Wextra -pedantic -Werror"], timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = run(["cmake", "--build", d / "build"], timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = run([d / "build" / "app", FIXTURES / "mlp.pte"], timeout=60)
    assert r.returncode == 0, r.stderr
    assert_app_output(r.stdout, expected_sum)
    r = run([d / "build" / "app", FIXTURES / "unsupported_op.pte"], timeout=60)
    assert r.returncode == 1 and "app: missing_operator: " in r.stderr, r.stderr


@pytest.mark.skipif(not FULL_BUILDS, reason="full builds: set PTERON_README_FULL_BUILDS=1")
def test_building_pteron_yourself_on_linux_then_the_plain_cmake_guide(expected_sum, tmp_path):
    run_block("build-linux", tmp_path, timeout=3600)
    prefix = tmp_path / "pteron-install"
    assert (prefix / "lib" / "cmake" / "pteron" / "pteronConfig.cmake").is_file()
    d = consumer_dir(tmp_path)
    assert_app_output(run_block("cmake-consumer-linux", d, PTERON_PREFIX=prefix), expected_sum)


@pytest.mark.skipif(not FULL_BUILDS, reason="full builds: set PTERON_README_FULL_BUILDS=1")
def test_building_pteron_yourself_for_mingw_then_the_plain_cmake_guide(wine_env, expected_sum,
                                                                      tmp_path):
    out = run_block("build-mingw", tmp_path, timeout=3600, **mingw_tools(wine_env))
    assert "output 0:" in out and "median time per execution" in out, out[-2000:]
    prefix = tmp_path / "pteron-install-mingw"
    assert (prefix / "lib" / "cmake" / "pteron" / "toolchain-mingw-w64.cmake").is_file()
    d = consumer_dir(tmp_path)
    out = run_block("cmake-consumer-mingw", d, PTERON_MINGW_PREFIX=prefix, **mingw_tools(wine_env))
    assert_app_output(out, expected_sum)


# ---- pteron-run, as its README section describes it -----------------------------

def test_list_operators_with_a_program_loads_it_and_exits_0_without_inputs(pteron_run):
    r = run([pteron_run, FIXTURES / "mlp.pte", "--list-operators"], timeout=60)
    assert r.returncode == 0, r.stderr
    assert any("aten::addmm.out" in l and "kernels_portable" in l for l in r.stdout.splitlines())
    assert "method 'forward' loads: 1 input(s), 1 output(s)" in r.stdout, r.stdout[-500:]
    assert "median time" not in r.stdout  # nothing ran
    assert r.stderr == ""


def test_list_operators_with_a_program_that_cannot_load_names_what_is_missing(pteron_run):
    r = run([pteron_run, FIXTURES / "unsupported_op.pte", "--list-operators"], timeout=60)
    assert r.returncode == 1
    assert "pteron_test::absent_binary.out" in r.stderr and "pteron_test::absent_unary.out" in r.stderr, r.stderr


def test_list_operators_with_inputs_still_runs_the_method(pteron_run):
    r = run([pteron_run, FIXTURES / "mlp.pte", "--list-operators", "--input",
             FIXTURES / "mlp.forward.input_0.npy"], timeout=60)
    assert r.returncode == 0, r.stderr
    assert "aten::addmm.out" in r.stdout and "median time per execution" in r.stdout
