# SPDX-License-Identifier: BSD-3-Clause
"""Adding a component is one entry in cmake/components.json and one folder.

A scratch copy of the tree (the runtime and kernels_portable only: optimized,
threadpool, XNNPACK and the tools are switched off) gets one more entry and
one new folder, and no other file is edited. It builds and packages with
Conan (`conan build`, `conan export-pkg` into a scratch Conan home), installs
with `cmake --install`, and a consumer finds the new component both through
the installed CMake package (`find_package(pteron COMPONENTS scratch)`) and
through Conan's CMakeDeps, links it with the package's retention flags and
sees it register its kernel."""
import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run

VERSION = (REPO / "VERSION").read_text().strip()
LISTING = json.loads((REPO / "cmake" / "components.json").read_text())["components"]
SCRATCH = {"name": "scratch", "folder": "extra/scratch", "requires": ["runtime"],
           "option": "with_scratch", "default": {"*": True}, "registration_only": True,
           "third_party": [], "system_libs": {}}
# Every optional component of the real list off: only runtime, kernels_portable, scratch.
OFF = [f"pteron/*:{c['option']}=False" for c in LISTING if c["option"]]

SCRATCH_CMAKE = "pteron_add_component(scratch SOURCES scratch.cpp)\n"
SCRATCH_CPP = r'''// The scratch component: registers one kernel when it loads.
#include "pteron/kernel.h"

namespace {
int32_t scratch_noop(pteron_kernel_context* ctx, pteron_value* const*, size_t) {
  return pteron_kernel_fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "scratch::noop never runs");
}
const int registered = [] {
  static const pteron_kernel_registration table[] = {
      {"scratch::noop", "out", nullptr, scratch_noop, 0, 0}};
  return pteron_register_kernels(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, table, 1);
}();
}  // namespace
'''
CONSUMER_CMAKE = """cmake_minimum_required(VERSION 3.21)
project(scratch_consumer CXX)
find_package(pteron CONFIG REQUIRED COMPONENTS scratch)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE pteron::runtime pteron::scratch)
"""
CONSUMER_CPP = r'''#include <cstdio>

#include "pteron/pteron.hpp"

int main() {
  for (const pteron::KernelInfo& k : pteron::registered_kernels())
    if (k.library == "scratch") {
      std::printf("registered by scratch: %s\n", k.qualified().c_str());
      return 0;
    }
  std::printf("the scratch component registered nothing\n");
  return 1;
}
'''


def tree_files():
    """What the scratch copy holds: the build's top-level files, the helpers
    and every component folder the build uses."""
    keep = [c for c in LISTING if not c["option"]]
    # conanfile.py imports the Conan Center submission's recipe (its shared helpers).
    paths = ["CMakeLists.txt", "VERSION", "LICENSE", "THIRD_PARTY_NOTICES.md", "conanfile.py",
             "conan-center/recipes/pteron/all/conanfile.py",
             "cmake", "include", "runtime/kernels/common"] + [c["folder"] for c in keep]
    return paths


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The scratch tree, built and packaged once: (tree, install prefix,
    Conan home, profile arguments)."""
    work = tmp_path_factory.mktemp("scratch-component")
    tree = work / "tree"
    for rel in tree_files():
        src, dst = REPO / rel, tree / rel
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    # The one entry and the one folder; nothing else changes.
    listing_file = tree / "cmake" / "components.json"
    data = json.loads(listing_file.read_text())
    data["components"].append(SCRATCH)
    listing_file.write_text(json.dumps(data, indent=2))
    folder = tree / SCRATCH["folder"]
    folder.mkdir(parents=True)
    (folder / "CMakeLists.txt").write_text(SCRATCH_CMAKE)
    (folder / "scratch.cpp").write_text(SCRATCH_CPP)

    home = work / "conan-home"
    env = dict(os.environ, CONAN_HOME=str(home))
    r = run(["conan", "remote", "remove", "conancenter"], timeout=60, env=env)
    prof = ["-pr:h", REPO / "profiles" / "linux-release",
            "-pr:b", REPO / "profiles" / "linux-release",
            *[a for o in OFF for a in ("-o", o)],
            "-c", 'tools.cmake.cmaketoolchain:extra_variables={"PTERON_BUILD_TOOLS": "OFF"}']
    out = work / "conan-out"
    r = run(["conan", "build", tree, *prof, "--build=missing", "-of", out], timeout=1200, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = run(["conan", "export-pkg", tree, *prof, "-of", out, "-tf", ""], timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    build = out / "build" / "Release"
    prefix = work / "installed"
    r = run(["cmake", "--install", build, "--prefix", prefix], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return {"work": work, "prefix": prefix, "env": env, "prof": prof, "build": build}


def consumer_source(where):
    where.mkdir(parents=True)
    (where / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    (where / "main.cpp").write_text(CONSUMER_CPP)
    return where


def build_and_run(src, bdir, *args):
    r = run(["cmake", "-S", src, "-B", bdir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", *args],
            timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", bdir], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    return run([bdir / "consumer"], timeout=60, env=env)


def test_scratch_component_builds_only_what_it_was_asked_for(scratch):
    built = sorted(p.name for p in scratch["build"].glob("libpteron*.so"))
    assert built == ["libpteron.so", "libpteron_kernels_portable.so", "libpteron_scratch.so"], built


def test_scratch_component_is_in_the_installed_package(scratch):
    prefix = scratch["prefix"]
    assert (prefix / "lib" / "libpteron_scratch.so").exists()
    text = (prefix / "lib" / "cmake" / "pteron" / "pteron-components.cmake").read_text()
    assert "set(PTERON_PACKAGE_COMPONENTS runtime;kernels_portable;scratch)" in text, text
    assert "set(PTERON_scratch_REGISTRATION_ONLY TRUE)" in text, text
    listed = json.loads((prefix / "share" / "pteron" / "components.json").read_text())
    assert SCRATCH["name"] in [c["name"] for c in listed["components"]]


def test_find_package_finds_the_scratch_component(scratch):
    src = consumer_source(scratch["work"] / "consumer-config")
    r = build_and_run(src, scratch["work"] / "consumer-config-build",
                      f"-DCMAKE_PREFIX_PATH={scratch['prefix']}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "registered by scratch: scratch::noop.out" in r.stdout


def test_cmakedeps_finds_the_scratch_component(scratch):
    gen = scratch["work"] / "cmakedeps-gen"
    r = run(["conan", "install", f"--requires=pteron/{VERSION}", *scratch["prof"],
             "-g", "CMakeDeps", "-g", "CMakeToolchain", "--output-folder", gen],
            timeout=300, env=scratch["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    data = "\n".join(p.read_text() for p in gen.glob("pteron-*-data.cmake"))
    # The recipe's package_info() gives the component its library and, on ELF,
    # its no-as-needed wrapper (registration_only in the list).
    assert "set(pteron_pteron_scratch_LIBS_RELEASE pteron_scratch)" in data, data[:3000]
    assert "libpteron_scratch.so,--pop-state" in data
    src = consumer_source(scratch["work"] / "consumer-cmakedeps")
    r = build_and_run(src, scratch["work"] / "consumer-cmakedeps-build",
                      f"-DCMAKE_TOOLCHAIN_FILE={gen / 'conan_toolchain.cmake'}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "registered by scratch: scratch::noop.out" in r.stdout
