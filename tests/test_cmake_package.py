# SPDX-License-Identifier: BSD-3-Clause
"""The installed package read as CMake and pkg-config users read it, without Conan:

- find_package(pteron ... OPTIONAL_COMPONENTS x): pteron_<c>_FOUND per component, a missing
  optional component leaves only its _FOUND false, a missing required one fails naming what the
  package has (check_required_components);
- the umbrella target pteron::pteron, the name Conan's CMakeDeps gives the package: the recipe's
  own test_package/ builds against the plain package and runs its model;
- lib/pkgconfig/pteron-<component>.pc: a C++ program built with `pkg-config --cflags --libs`
  alone runs a fixture through the registration-only kernel library.
"""
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")

FIND_PROJECT = """cmake_minimum_required(VERSION 3.21)
project(find_pteron NONE)
find_package(pteron CONFIG REQUIRED COMPONENTS {required} OPTIONAL_COMPONENTS {optional})
foreach(_c {required} {optional})
  message(STATUS "pteron_${{_c}}_FOUND=${{pteron_${{_c}}_FOUND}}")
endforeach()
get_target_property(_all pteron::pteron INTERFACE_LINK_LIBRARIES)
message(STATUS "umbrella=${{_all}}")
"""


def configure(tmp_path, package, required, optional):
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(FIND_PROJECT.format(required=required, optional=optional))
    return run(["cmake", "-S", src, "-B", tmp_path / "b", f"-DCMAKE_PREFIX_PATH={package}"],
               timeout=120)


def components(package):
    text = (package / "lib" / "cmake" / "pteron" / "pteron-components.cmake").read_text()
    line = next(l for l in text.splitlines() if l.startswith("set(PTERON_PACKAGE_COMPONENTS "))
    return line[len("set(PTERON_PACKAGE_COMPONENTS "):-1].replace(";", " ").split()


def test_an_optional_component_the_package_lacks_is_only_not_found(linux_package, tmp_path):
    r = configure(tmp_path, linux_package, "kernels_portable", "backend_metal threadpool")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pteron_kernels_portable_FOUND=TRUE" in r.stdout
    assert "pteron_threadpool_FOUND=TRUE" in r.stdout
    assert "pteron_backend_metal_FOUND=FALSE" in r.stdout
    umbrella = r.stdout.split("umbrella=")[1].splitlines()[0].split(";")
    assert umbrella == [f"pteron::{c}" for c in components(linux_package)]


def test_a_required_component_the_package_lacks_fails_naming_it(linux_package, tmp_path):
    r = configure(tmp_path, linux_package, "kernels_portable backend_metal", "threadpool")
    assert r.returncode != 0
    out = " ".join((r.stdout + r.stderr).split())
    assert "has no component(s): backend_metal (it has: runtime, kernels_portable," in out, out


def test_the_recipes_test_package_builds_against_the_plain_cmake_package(linux_package, tmp_path):
    """test_package/CMakeLists.txt links pteron::pteron, which Conan's CMakeDeps makes; the
    plain package makes the same target, so the same project builds without Conan."""
    bdir = tmp_path / "b"
    r = run(["cmake", "-S", REPO / "test_package", "-B", bdir, "-G", "Ninja",
             "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={linux_package}"], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", bdir], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run([bdir / "test_package", REPO / "test_package" / "mlp.pte"], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max abs err vs eager PyTorch" in r.stdout and ": MATCH" in r.stdout, r.stdout


PKG_CONSUMER = r"""
#include <cstdio>
#include <set>
#include <string>
#include <vector>
#include "pteron/pteron.hpp"
int main(int argc, char** argv) {
  std::set<std::string> libraries;
  for (const pteron::KernelInfo& k : pteron::registered_kernels()) libraries.insert(k.library);
  for (const std::string& l : libraries) std::printf("library %s\n", l.c_str());
  pteron::Program program = pteron::Program::load_file(argv[1]);
  pteron::Method m = program.load_method("forward");
  m.set_input<float>(0, {4, 16}, std::vector<float>(64, 0.5f));
  m.execute();
  std::vector<float> out = m.output<float>(0);
  std::printf("outputs %zu\n", out.size());
  return 0;
}
"""


def test_a_consumer_built_with_pkg_config_alone_runs_a_model(linux_package, tmp_path):
    pkgconfig = shutil.which("pkg-config") or shutil.which("pkgconf")
    if pkgconfig is None:
        pytest.skip("needs pkg-config (Debian pkgconf)")
    pcdir = linux_package / "lib" / "pkgconfig"
    names = sorted(p.name for p in pcdir.glob("*.pc"))
    assert names == sorted(["pteron.pc"] + [f"pteron-{c}.pc" for c in components(linux_package)])
    env = {"PKG_CONFIG_PATH": str(pcdir), "PATH": "/usr/bin:/bin"}
    r = run([pkgconfig, "--cflags", "--libs", "pteron-kernels_portable"], env=env, timeout=30)
    assert r.returncode == 0, r.stderr
    flags = r.stdout.split()
    assert f"-I{linux_package}/include" in flags or any(f.endswith("/include") for f in flags), flags
    assert "-Wl,--push-state,--no-as-needed,-lpteron_kernels_portable,--pop-state" in flags, flags
    assert "-lpteron" in flags, flags
    r = run([pkgconfig, "--modversion", "pteron"], env=env, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == (REPO / "VERSION").read_text().strip()

    src = tmp_path / "consumer.cpp"
    src.write_text(PKG_CONSUMER)
    exe = tmp_path / "consumer"
    # --as-needed, as Ubuntu's and Fedora's compilers default to: the registration-only
    # library must stay linked through the .pc file's wrapper.
    r = run(["g++", "-std=c++17", "-O1", src, "-o", exe, "-Wl,--as-needed", *flags], timeout=180)
    assert r.returncode == 0, r.stderr
    r = run([exe, REPO / "test_package" / "mlp.pte"], timeout=60,
            env={"LD_LIBRARY_PATH": str(linux_package / "lib")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "outputs 32" in r.stdout, r.stdout
    assert any(l.startswith("library ") and "kernels_portable" in l for l in r.stdout.splitlines())
