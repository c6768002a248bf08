# SPDX-License-Identifier: BSD-3-Clause
"""Two routes a user takes that the README promises, run on the packages Conan
made (scripts/test.sh):

- a Debug application against the Release package, with Conan's classic
  CMakeDeps: `-s build_type=Debug -s "pteron/*:build_type=Release"` (Conan picks
  the Release binary and CMakeDeps writes it as the consumer's Debug
  configuration);
- a MinGW-w64 cross build of a consumer from the package alone: the toolchain
  file is in the package (lib/cmake/pteron/toolchain-mingw-w64.cmake), and the
  DLLs reach the program through $<TARGET_RUNTIME_DLLS> (COMMAND_EXPAND_LISTS).
"""
import os
import shutil

import pytest

from conftest import package_profile, FIXTURES, MINGW_CXX, REPO, manifest, run, wine_run, winpath

VERSION = (REPO / "VERSION").read_text().strip()


def fixture_args(name, arg=str, method="forward"):
    spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
    m = spec["methods"][method]
    return [arg(FIXTURES / spec["file"]), method, *[arg(FIXTURES / p) for p in m["inputs"]], "--",
            *[arg(FIXTURES / p) for p in m["expected"]]]


def test_debug_consumer_uses_the_release_package_with_classic_cmakedeps(linux_package, tmp_path):
    if not os.environ.get("CONAN_HOME"):
        pytest.fail("CONAN_HOME is not set: run scripts/test.sh", pytrace=False)
    ref = os.environ.get("PTERON_LINUX_REF", f"pteron/{VERSION}")
    gen = tmp_path / "gen"
    # The route, as a user writes it (docs/consumers.md, "A Debug application").
    r = run(["conan", "install", f"--requires={ref}",
             "-pr:h", REPO / "profiles" / package_profile("linux"),
             "-pr:b", REPO / "profiles" / "linux-release",
             "-s", "build_type=Debug", "-s", "pteron/*:build_type=Release",
             "-g", "CMakeDeps", "-g", "CMakeToolchain", "--output-folder", gen], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    data = list(gen.glob("pteron-*-data.cmake"))
    assert [p.name for p in data] == ["pteron-debug-x86_64-data.cmake"], data
    text = data[0].read_text()
    assert str(linux_package) in text  # the Release package, no Debug one
    assert "PTERON_PREBUILT_RELEASE_CRT" in text and "PTERON_PREBUILT_DEBUG_CRT" not in text
    bdir = tmp_path / "build"
    r = run(["cmake", "-S", REPO / "tests" / "consumer", "-B", bdir, "-G", "Ninja",
             f"-DCMAKE_TOOLCHAIN_FILE={gen / 'conan_toolchain.cmake'}", "-DCMAKE_BUILD_TYPE=Debug",
             f"-DPTERON_SOURCE_DIR={REPO}", "-DCOMPONENTS=kernels_portable;kernels_optimized"],
            timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", bdir, "-v"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"-I{linux_package}/include" in r.stdout or f"-isystem {linux_package}/include" in r.stdout
    assert "-O0" in r.stdout or " -g " in r.stdout  # the consumer itself is a Debug build
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = run([bdir / "consumer", *fixture_args("cnn")], timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "consumer: outputs match" in r.stdout


CROSS_CMAKE = """cmake_minimum_required(VERSION 3.21)
project(cross_consumer CXX)
find_package(pteron CONFIG REQUIRED COMPONENTS kernels_portable)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE pteron::runtime pteron::kernels_portable)
add_custom_command(TARGET app POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_RUNTIME_DLLS:app> $<TARGET_FILE_DIR:app>
  COMMAND_EXPAND_LISTS)
"""
CROSS_CPP = r'''#include <cstdio>

#include "pteron/pteron.hpp"

int main(int argc, char** argv) {
  try {
    pteron::Program program = pteron::Program::load_file(argv[1]);
    pteron::Method m = program.load_method("forward");
    std::printf("app: %zu operators registered; method forward loaded with %zu input(s)\n",
                pteron::registered_kernels().size(), m.input_count());
    return 0;
  } catch (const pteron::Error& e) {
    std::printf("app: error %s\n", e.what());
    return 1;
  }
}
'''


def test_mingw_consumer_cross_builds_from_the_package_alone(mingw_package, wine_env, tmp_path):
    if not shutil.which(MINGW_CXX):
        pytest.fail(f"{MINGW_CXX} is not installed: run scripts/test.sh", pytrace=False)
    toolchain = mingw_package / "lib" / "cmake" / "pteron" / "toolchain-mingw-w64.cmake"
    assert toolchain.is_file(), "the MinGW package holds no toolchain file"
    assert toolchain.read_text() == (REPO / "cmake" / "toolchain-mingw-w64.cmake").read_text()
    # A copy of the package somewhere else: nothing of the source tree is used.
    pkg = tmp_path / "pteron-mingw"
    shutil.copytree(mingw_package, pkg, symlinks=True)
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CROSS_CMAKE)
    (src / "main.cpp").write_text(CROSS_CPP)
    bdir = tmp_path / "build"
    r = run(["cmake", "-S", src, "-B", bdir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_TOOLCHAIN_FILE={pkg / 'lib' / 'cmake' / 'pteron' / 'toolchain-mingw-w64.cmake'}",
             f"-DCMAKE_FIND_ROOT_PATH={pkg}"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    cache = (bdir / "CMakeCache.txt").read_text()
    assert f"pteron_DIR:PATH={pkg}/lib/cmake/pteron" in cache, cache
    for rel in ("cmake", "include", "runtime"):  # nothing of the source tree
        assert str(REPO / rel) not in cache, rel
    r = run(["cmake", "--build", bdir], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    dlls = sorted(p.name for p in bdir.glob("*.dll"))
    assert dlls == ["pteron.dll", "pteron_kernels_portable.dll"], dlls  # copied by the build
    fx = next(f for f in manifest()["fixtures"] if f["name"] == "cnn")
    r = wine_run(wine_env, bdir / "app.exe", winpath(FIXTURES / fx["file"]), cwd=bdir)
    assert r.returncode == 0, str(r)
    assert "method forward loaded" in r.stdout, str(r)
