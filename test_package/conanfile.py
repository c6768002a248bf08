import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout
from conan.tools.files import copy


class PteronTestPackage(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps", "CMakeToolchain"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        # On Windows a DLL records no search path: put the package's DLLs
        # beside the program, as Conan's runtime_deploy deployer does for users.
        if self.settings.os == "Windows":
            for dep in self.dependencies.host.values():
                for bindir in dep.cpp_info.bindirs:
                    copy(self, "*.dll", bindir, self.build_folder)

    def build(self):
        opts = self.dependencies[self.tested_reference_str.split("/")[0]].options
        cmake = CMake(self)
        cmake.configure(variables={
            "PTERON_WITH_OPTIMIZED": bool(opts.get_safe("with_optimized")),
            "PTERON_WITH_THREADPOOL": bool(opts.get_safe("with_threadpool")),
            "PTERON_WITH_XNNPACK": bool(opts.get_safe("with_xnnpack")),
        })
        cmake.build()

    def test(self):
        if not can_run(self):
            return
        exe = "test_package.exe" if self.settings.os == "Windows" else "test_package"
        cmd = os.path.join(self.cpp.build.bindirs[0], exe)
        model = os.path.join(self.source_folder, "mlp.pte")
        opts = self.dependencies[self.tested_reference_str.split("/")[0]].options
        if opts.get_safe("with_xnnpack"):
            # The same MLP lowered to XnnpackBackend: same input, same expected output.
            model += " " + os.path.join(self.source_folder, "mlp_xnnpack.pte")
        emulator = self.conf.get("user.pteron:emulator", default="")
        # conanrun.bat cannot run on a Linux build machine: run with no env
        # script; the DLLs are beside the program.
        env = "" if self.settings.os != "Windows" else None
        self.run(f"{emulator} {cmd} {model}".strip(), env=env or [])
