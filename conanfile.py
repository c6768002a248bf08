"""Conan 2 recipe of pteron: one shared library per component.

The components, their dependencies and their link flags come from
cmake/components.json, the same list the CMake build and the installed CMake
package read, so the recipe and the CMake package cannot disagree.
"""
import json
import os

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, save

required_conan_version = ">=2.0"

# Third-party Conan Center references, by the name components.json uses.
THIRD_PARTY = {
    "flatbuffers": ("flatbuffers/[>=2.0 <26]", "flatbuffers::flatbuffers"),
    "eigen": ("eigen/[>=3.4 <4]", "eigen::eigen"),
    "pthreadpool": ("pthreadpool/[>=cci.20210218]", "pthreadpool::pthreadpool"),
    "xnnpack": ("xnnpack/[>=cci.20220216]", "xnnpack::xnnpack"),
}
CUDA_TRAINS = ["cu132", "cu134"]


class PteronConan(ConanFile):
    name = "pteron"
    description = ("Runtime for ExecuTorch programs (.pte), shipped as linkable shared "
                   "libraries: runtime, kernel libraries, thread pool, delegates")
    license = "BSD-3-Clause"
    topics = ("executorch", "pytorch", "inference", "runtime")
    package_type = "shared-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "with_optimized": [True, False],
        "with_threadpool": [True, False],
        "with_xnnpack": [True, False],
        "with_quantized": [True, False],
        "with_cuda": [True, False],
        "cuda_train": CUDA_TRAINS,
    }
    default_options = {
        "with_optimized": True,
        "with_threadpool": True,
        # Opt-in (the Linux profiles turn it on): needs XNNPACK and pthreadpool.
        "with_xnnpack": False,
        # Declared now; validate() refuses them until they are built.
        "with_quantized": False,
        "with_cuda": False,
        "cuda_train": "cu134",
    }
    # Read by the recipe itself (version, component list).
    exports = ("VERSION", "cmake/components.json")
    exports_sources = ("CMakeLists.txt", "VERSION", "LICENSE", "THIRD_PARTY_NOTICES.md",
                       "cmake/*", "include/*", "runtime/*", "tools/*",
                       "backends/*")

    # ---- helpers -----------------------------------------------------------

    def _component_list(self):
        for folder in (self.recipe_folder, getattr(self, "package_folder", None)):
            for rel in ("cmake/components.json", "share/pteron/components.json"):
                if folder and os.path.isfile(os.path.join(folder, rel)):
                    return json.loads(load(self, os.path.join(folder, rel)))["components"]
        raise ConanInvalidConfiguration("pteron: cmake/components.json is missing")

    def _enabled(self, component):
        opt = component["option"]
        return opt is None or bool(self.options.get_safe(opt))

    def _pthreadpool_available(self):
        # Conan Center builds pthreadpool for every target we support except
        # the offline MinGW cross build, which uses the std::thread pool.
        return not (self.settings.os == "Windows" and self.settings.compiler == "gcc")

    def _linker_family(self):
        if self.settings.compiler == "msvc" or (
                self.settings.compiler == "clang" and self.settings.os == "Windows"
                and self.settings.get_safe("compiler.runtime")):
            return "msvc"
        if self.settings.os == "Windows":
            return "mingw"
        return "elf"

    # ---- Conan's methods, in the order Conan calls them ------------------

    def set_version(self):
        self.version = load(self, os.path.join(self.recipe_folder, "VERSION")).strip()

    def config_options(self):
        pass

    def configure(self):
        if not self.options.with_cuda:
            self.options.rm_safe("cuda_train")

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        needed = set()
        for c in self._component_list():
            if self._enabled(c):
                needed.update(c["third_party"])
        if "pthreadpool" in needed and not self._pthreadpool_available():
            needed.discard("pthreadpool")
        for name in sorted(needed):
            ref, _ = THIRD_PARTY[name]
            # Header-only or linked privately into pteron's DLLs: consumers
            # never need their headers.
            self.requires(ref, visible=False)

    def build_requirements(self):
        # flatc generates the reader from runtime/core/schema/program.fbs; it must
        # match the flatbuffers headers the build uses.
        self.tool_requires("flatbuffers/<host_version>")

    def validate(self):
        if self.settings.os not in ("Linux", "Windows"):
            raise ConanInvalidConfiguration(
                f"pteron is built and tested for Linux and Windows only, not {self.settings.os}; "
                "other systems are not supported yet")
        if self.settings.arch != "x86_64":
            raise ConanInvalidConfiguration(
                f"pteron is built and tested for x86_64 only, not {self.settings.arch}")
        if self.options.with_xnnpack:
            if not self.options.with_threadpool:
                raise ConanInvalidConfiguration(
                    "with_xnnpack=True needs with_threadpool=True: the XNNPACK delegate runs on "
                    "the thread pool's pthreadpool")
            if not self._pthreadpool_available():
                raise ConanInvalidConfiguration(
                    "with_xnnpack=True is not available for MinGW builds (no XNNPACK or "
                    "pthreadpool there); use with_xnnpack=False")
        if self.options.with_quantized:
            raise ConanInvalidConfiguration(
                "with_quantized=True: the quantized kernels are not built yet; use with_quantized=False")
        if self.options.with_cuda:
            train = str(self.options.get_safe("cuda_train"))
            if train not in CUDA_TRAINS:
                raise ConanInvalidConfiguration(
                    f"unknown CUDA train '{train}' (known: {', '.join(CUDA_TRAINS)})")
            if self.settings.os == "Windows" and self.settings.compiler == "gcc":
                raise ConanInvalidConfiguration(
                    "with_cuda=True needs a compiler that can host nvcc (MSVC on Windows, gcc on "
                    "Linux); MinGW cannot")
            raise ConanInvalidConfiguration(
                "with_cuda=True: the CUDA delegate is not built yet; use with_cuda=False")
        if self.settings.compiler.get_safe("cppstd") and str(self.settings.compiler.cppstd) in (
                "98", "gnu98", "11", "gnu11", "14", "gnu14"):
            raise ConanInvalidConfiguration("pteron needs C++17 or newer (compiler.cppstd)")

    def generate(self):
        tc = CMakeToolchain(self, generator="Ninja")
        tc.cache_variables["PTERON_WITH_OPTIMIZED"] = bool(self.options.with_optimized)
        tc.cache_variables["PTERON_WITH_THREADPOOL"] = bool(self.options.with_threadpool)
        tc.cache_variables["PTERON_WITH_XNNPACK"] = bool(self.options.with_xnnpack)
        tc.cache_variables["PTERON_BUILD_TOOLS"] = True
        if not self._pthreadpool_available():
            tc.cache_variables["PTERON_THREADPOOL_IMPL"] = "std"
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "THIRD_PARTY_NOTICES.md", self.source_folder,
             os.path.join(self.package_folder, "licenses"))
        if self.conf.get("user.pteron:metadata_only", check_type=bool):
            # A labelled, metadata-only package (conan export-pkg) for checking
            # what package_info() gives a consumer on a toolchain this machine
            # cannot run (MSVC). It holds no binaries.
            save(self, os.path.join(self.package_folder, "METADATA_ONLY"),
                 "metadata-only package made with export-pkg: no binaries\n")
            copy(self, "components.json", os.path.join(self.source_folder, "cmake"),
                 os.path.join(self.package_folder, "share", "pteron"))
            return
        CMake(self).install()

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "pteron")
        crt = "PTERON_PREBUILT_DEBUG_CRT" if self.settings.build_type == "Debug" \
            else "PTERON_PREBUILT_RELEASE_CRT"
        family = self._linker_family()
        for c in self._component_list():
            if not self._enabled(c):
                continue
            name = c["name"]
            lib = "pteron" if name == "runtime" else f"pteron_{name}"
            ci = self.cpp_info.components[name]
            ci.set_property("cmake_target_name", f"pteron::{name}")
            ci.libs = [lib]
            ci.bindirs = ["bin"]
            ci.libdirs = ["lib"]
            ci.includedirs = ["include"]
            ci.defines = [crt]
            ci.requires = list(c["requires"])
            ci.system_libs = list(c.get("system_libs", {}).get(str(self.settings.os), []))
            if c["registration_only"]:
                flags = self.retention_flags(name, lib, family)
                ci.exelinkflags = list(flags)
                ci.sharedlinkflags = list(flags)
        self.runenv_info.prepend_path("PATH", os.path.join(self.package_folder, "bin"))

    def retention_flags(self, component, lib, family):
        """Link flags that keep a registration-only component (DESIGN.md):
        /INCLUDE for MSVC, --undefined for MinGW; on ELF --undefined does not
        survive --as-needed, so the library is wrapped in no-as-needed."""
        anchor = f"pteron_anchor_{component}"
        if family == "msvc":
            return [f"/INCLUDE:{anchor}"]
        if family == "mingw":
            return [f"-Wl,--undefined={anchor}"]
        # One flag per component: CMake de-duplicates repeated link options,
        # which would strip the wrapper from all components but one.
        path = os.path.join(self.package_folder, "lib", f"lib{lib}.so")
        return [f"-Wl,--push-state,--no-as-needed,{path},--pop-state"]
