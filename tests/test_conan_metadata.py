"""The recipe's metadata for toolchains this machine cannot run (MSVC), and
for MinGW, checked through Conan itself: metadata-only packages made with
`conan export-pkg` (labelled METADATA_ONLY, no binaries) in a temporary
Conan home, then `conan install` with CMakeDeps, reading what a consumer
would get. Also validate()'s refusals."""
import os
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
[conf]
user.pteron:metadata_only=True
"""


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
    args = ["-pr:h", REPO / "profiles" / profile, "-pr:h", home / "offline.profile",
            "-pr:b", REPO / "profiles" / "linux-release"]
    r = conan(home, "export-pkg", REPO, *args, "-tf", "")
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


REGISTRATION_ONLY = ["kernels_portable", "kernels_optimized", "threadpool"]


def test_msvc_release_metadata(home, tmp_path):
    text = data_file(home, tmp_path, "windows-msvc-release", "Release")
    for c in REGISTRATION_ONLY:
        assert f"/INCLUDE:pteron_anchor_{c}" in text, c
    assert "/INCLUDE:pteron_anchor_runtime" not in text
    assert "PTERON_PREBUILT_RELEASE_CRT" in text and "PTERON_PREBUILT_DEBUG_CRT" not in text
    # Import libraries pteron.lib, pteron_<component>.lib: no "lib" prefix, no postfix.
    for lib in ["pteron", "pteron_kernels_portable", "pteron_kernels_optimized", "pteron_threadpool"]:
        assert f'"{lib}"' in text or f" {lib}" in text or f"{lib})" in text, lib
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


def test_linux_metadata_wraps_kernel_libraries_in_no_as_needed(home, tmp_path):
    text = data_file(home, tmp_path, "linux-release", "Release")
    # One self-contained flag per component (CMake de-duplicates repeated options).
    for c in REGISTRATION_ONLY:
        assert f"/libpteron_{c}.so,--pop-state" in text, c
    assert text.count("-Wl,--push-state,--no-as-needed,") >= 2 * len(REGISTRATION_ONLY)
    assert "--undefined" not in text  # does not survive --as-needed on ELF
    # The Linux profiles turn the XNNPACK delegate on; it is registration-only too.
    assert "/libpteron_backend_xnnpack.so,--pop-state" in text


@pytest.mark.parametrize("options,expected", [
    (["-o", "pteron/*:with_cuda=True"], "CUDA delegate is not built yet"),
    (["-o", "pteron/*:with_quantized=True"], "quantized kernels are not built yet"),
    (["-o", "pteron/*:with_xnnpack=True", "-o", "pteron/*:with_threadpool=False"],
     "with_xnnpack=True needs with_threadpool=True"),
    (["-s", "os=Macos"], "Linux and Windows only"),
    (["-s", "arch=armv8"], "x86_64 only"),
])
def test_validate_refuses_with_an_actionable_message(home, options, expected):
    r = conan(home, "install", REPO, "-pr:h", REPO / "profiles" / "linux-release",
              "-pr:b", REPO / "profiles" / "linux-release", *options)
    assert r.returncode != 0
    assert expected in r.stdout + r.stderr


def test_unknown_cuda_train_is_refused(home):
    r = conan(home, "install", REPO, "-pr:h", REPO / "profiles" / "linux-release",
              "-pr:b", REPO / "profiles" / "linux-release",
              "-o", "pteron/*:with_cuda=True", "-o", "pteron/*:cuda_train=cu999")
    assert r.returncode != 0
    assert "cu999" in r.stdout + r.stderr
