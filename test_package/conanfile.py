# SPDX-License-Identifier: BSD-3-Clause
import os
import platform

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout


class PteronTestPackage(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps", "CMakeToolchain"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if not can_run(self):
            return
        exe = "test_package.exe" if self.settings.os == "Windows" else "test_package"
        cmd = os.path.join(self.cpp.build.bindirs[0], exe)
        model = os.path.join(self.source_folder, "mlp.pte")
        # A cross build run by an emulator (Wine: user.pteron:emulator).
        emulator = self.conf.get("user.pteron:emulator", default="")
        # On a Windows host conanrun.bat works; on a Linux machine running a
        # Windows program it cannot run, and the DLLs are beside the program
        # ($<TARGET_RUNTIME_DLLS>), so no environment script is needed.
        cross_windows = self.settings.os == "Windows" and platform.system() != "Windows"
        self.run(f"{emulator} {cmd} {model}".strip(), env=[] if cross_windows else "conanrun")
