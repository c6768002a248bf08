# SPDX-License-Identifier: BSD-3-Clause
"""Conan 2 recipe of pteron: one shared library per component.

The components, their options, dependencies and link flags come from
cmake/components.json, the same list the CMake build and the installed CMake
package read, so the recipe and the CMake package cannot disagree.
"""
import importlib.util
import json
import os

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import load

required_conan_version = ">=2.0"

_HERE = os.path.dirname(os.path.abspath(__file__))
# The Conan Center submission's recipe (docs/packaging.md, "Conan Center"). A Conan Center
# recipe must be self-contained, so the code both recipes need lives there (the link flags
# that keep a registration-only library, the platform and component checks, the CMake cache
# variables, the license files, the components' cpp_info) and this recipe imports it; it is
# exported beside this file.
_CONAN_CENTER_RECIPE = os.path.join("conan-center", "recipes", "pteron", "all", "conanfile.py")


def _load_conan_center_recipe():
    spec = importlib.util.spec_from_file_location(
        "pteron_conan_center_recipe", os.path.join(_HERE, _CONAN_CENTER_RECIPE))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_cci = _load_conan_center_recipe()


def _components():
    """The one component list (exported beside this file)."""
    with open(os.path.join(_HERE, "cmake", "components.json"), encoding="utf-8") as f:
        return json.load(f)["components"]


def _cuda_trains():
    """pteron's CUDA trains (exported beside this file): cu132, cu134 ..."""
    with open(os.path.join(_HERE, "cmake", "cuda_trains.json"), encoding="utf-8") as f:
        return json.load(f)["trains"]


def _option_default(component, os_name):
    default = component.get("default") or {}
    return bool(default.get(os_name, default.get("*", True)))


# Third-party Conan Center references, by the name components.json uses, and
# whether the requirement is visible downstream. Eigen is header-only and only
# flatbuffers' headers are compiled into the runtime: consumers never need
# either (visible=False). pthreadpool and XNNPACK are linked into pteron's
# libraries: when Conan Center builds them shared, a consumer must get them
# deployed beside its program (runtime_deploy, conanrun), so they are ordinary
# requirements; Conan's default traits for a shared library still keep their
# headers and link flags away from consumers.
THIRD_PARTY = {
    "flatbuffers": {"ref": "flatbuffers/[>=2.0 <26]", "visible": False},
    "eigen": {"ref": "eigen/[>=3.4 <4]", "visible": False},
    "pthreadpool": {"ref": "pthreadpool/[>=cci.20210218]", "visible": True},
    "xnnpack": {"ref": "xnnpack/[>=cci.20220216]", "visible": True},
}
# Where a third-party library is missing, what takes its place (None: the
# component cannot be built there).
FALLBACK = {"pthreadpool": "the threadpool component's std::thread pool",
            "xnnpack": "pteron's own kernels for every XNNPACK node"}

# Option xnnpack_library: which XNNPACK library backend_xnnpack links.
#   none   - none: every node runs on pteron's own kernels (the delegate needs
#            no XNNPACK and no pthreadpool);
#   conan  - Conan's xnnpack requirement (Conan Center's package, or what a
#            profile's [platform_requires] maps it to);
#   system - one found on the build machine by path (Debian's libxnnpack-dev,
#            which has no CMake package); no Conan requirement.
# The defaults build offline here: Debian's on Linux, none for Windows
# (Debian has no XNNPACK for MinGW). The package states its choice: option
# in conaninfo.txt, property pteron_xnnpack_library of component
# backend_xnnpack, and PTERON_backend_xnnpack_XNNPACK_LIBRARY in
# lib/cmake/pteron/pteron-components.cmake (what pteron-verify reads).
XNNPACK_LIBRARIES = ["none", "conan", "system"]
XNNPACK_LIBRARY_DEFAULT = {"Linux": "system", "Windows": "none"}


class PteronConan(ConanFile):
    name = "pteron"
    description = ("Runtime for ExecuTorch programs (.pte), shipped as linkable shared "
                   "libraries: runtime, kernel libraries, thread pool, delegates")
    license = "BSD-3-Clause"
    url = "https://github.com/conan-io/conan-center-index"
    homepage = "https://github.com/pteron/pteron"
    topics = ("executorch", "pytorch", "inference", "runtime")
    package_type = "shared-library"
    settings = "os", "arch", "compiler", "build_type"
    # One option per optional component (components.json "option"); its
    # default there is per target OS: config_options() applies the OS's.
    # cuda_train: the CUDA release train of backend_cuda's device code
    # (cmake/cuda_trains.json); with_cuda=True needs one. Its nvcc comes as the tool
    # requirement pteron-cuda-toolchain/<CUDA version> (conan-recipes/cuda-toolchain),
    # so a profile that sets the two options selects the train.
    # with_pthreadpool: require pthreadpool (the XNNPACK library's runtimes then share the
    # process's pool); False where no pthreadpool exists for the target (the offline MinGW
    # build, the MSVC profiles on a Linux build machine): the threadpool component's own
    # std::thread pool serves alone.
    options = {**{c["option"]: [True, False] for c in _components() if c["option"]},
               "with_pthreadpool": [True, False],
               "xnnpack_library": XNNPACK_LIBRARIES,
               "cuda_train": [None, *sorted(_cuda_trains())]}
    default_options = {**{c["option"]: _option_default(c, "*") for c in _components()
                          if c["option"]},
                       "with_pthreadpool": True,
                       "xnnpack_library": "none",
                       "cuda_train": None}
    # Read by the recipe itself (version, component list, CUDA trains).
    exports = ("VERSION", "cmake/components.json", "cmake/cuda_trains.json",
               _CONAN_CENTER_RECIPE.replace(os.sep, "/"))
    # The build: the top-level files, the shared helpers (runtime/kernels/common
    # under runtime/), pteron-run, and every component's folder.
    exports_sources = ("CMakeLists.txt", "VERSION", "LICENSE", "THIRD_PARTY_NOTICES.md",
                       "cmake/*", "include/*", "runtime/*", "tools/*",
                       *(f"{c['folder']}/*" for c in _components()))

    # ---- helpers -----------------------------------------------------------

    def _enabled(self, component):
        opt = component["option"]
        return opt is None or bool(self.options.get_safe(opt))

    def _available(self, third_party):
        """Whether the Conan requirement for `third_party` is made. pthreadpool:
        with_pthreadpool (Conan Center builds it for every target we support;
        the offline MinGW build and the MSVC profiles on a Linux build machine
        have none); XNNPACK comes from Conan only with xnnpack_library=conan."""
        if third_party == "xnnpack":  # (validate() refuses conan without pthreadpool)
            return self._xnnpack_library() == "conan" and self._available("pthreadpool")
        if third_party == "pthreadpool":
            return bool(self.options.get_safe("with_pthreadpool"))
        return True

    def _xnnpack_library(self):
        """The XNNPACK library backend_xnnpack links (none without the component)."""
        if not self.options.get_safe("with_xnnpack"):
            return "none"
        return str(self.options.get_safe("xnnpack_library") or "none")

    def _cuda_train(self):
        """backend_cuda's train (None without the component or without a train)."""
        if not self.options.get_safe("with_cuda"):
            return None
        train = self.options.get_safe("cuda_train")
        return str(train) if train and str(train) != "None" else None

    def _enabled_name(self, name):
        return any(c["name"] == name and self._enabled(c) for c in _components())

    # ---- Conan's methods, in the order Conan calls them ------------------

    def set_version(self):
        self.version = load(self, os.path.join(self.recipe_folder, "VERSION")).strip()

    def config_options(self):
        # Defaults per target OS (users' -o and profiles still override them).
        for c in _components():
            if c["option"]:
                setattr(self.options, c["option"], _option_default(c, str(self.settings.os)))
        self.options.xnnpack_library = XNNPACK_LIBRARY_DEFAULT.get(str(self.settings.os), "none")
        if self.settings.os == "Windows" and self.settings.compiler == "gcc":
            self.options.with_pthreadpool = False  # no pthreadpool for MinGW here

    def configure(self):
        if not self.options.get_safe("with_cuda"):
            self.options.rm_safe("cuda_train")
        if not self.options.get_safe("with_threadpool"):
            self.options.rm_safe("with_pthreadpool")

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        needed = set()
        for c in _components():
            if self._enabled(c):
                needed.update(t for t in c["third_party"] if self._available(t))
        for name in sorted(needed):
            tp = THIRD_PARTY[name]
            self.requires(tp["ref"], visible=tp["visible"])

    def build_requirements(self):
        # flatc generates the reader from runtime/core/schema/program.fbs; it must
        # match the flatbuffers headers the build uses.
        self.tool_requires("flatbuffers/<host_version>")
        train = self._cuda_train()
        if train:
            self.tool_requires(f"pteron-cuda-toolchain/{_cuda_trains()[train]['cuda']}")

    def validate(self):
        _cci.check_platform(self)
        _cci.check_component_requires(_components(), self._enabled)
        for c in _components():
            if not self._enabled(c):
                continue
            for tp in c["third_party"]:
                if not self._available(tp) and tp not in FALLBACK:
                    raise ConanInvalidConfiguration(
                        f"{c['option']}=True is not available for MinGW builds (no {tp} there); "
                        f"use {c['option']}=False")
        if self.options.get_safe("with_cuda") and not self._cuda_train():
            raise ConanInvalidConfiguration(
                "with_cuda=True needs cuda_train (one of " + ", ".join(sorted(_cuda_trains())) +
                "): the device code is built per CUDA train; the profiles linux-cu134 and "
                "windows-cu134 (and -cu132) set both")
        lib = self._xnnpack_library()
        mingw = self.settings.os == "Windows" and self.settings.compiler == "gcc"
        if lib != "none" and not self._available("pthreadpool"):
            raise ConanInvalidConfiguration(
                f"xnnpack_library={lib} needs pthreadpool, which XNNPACK uses (with_threadpool=True "
                "and with_pthreadpool=True; there is none for MinGW here); use "
                "xnnpack_library=none: backend_xnnpack then runs every node on pteron's own kernels")
        if lib == "system" and self.settings.os == "Windows" and not mingw:
            raise ConanInvalidConfiguration(
                "xnnpack_library=system finds XNNPACK by path, which is done for Linux only; "
                "use xnnpack_library=conan or none")

    def generate(self):
        tc = CMakeToolchain(self)
        _cci.component_cache_variables(tc, _components(), self._enabled)
        if not self._available("pthreadpool"):
            tc.cache_variables["PTERON_THREADPOOL_IMPL"] = "std"
        if self._enabled_name("backend_xnnpack"):
            # ON: the chosen library must be found (never a silent fallback).
            tc.cache_variables["PTERON_XNNPACK_LIBRARY"] = \
                "OFF" if self._xnnpack_library() == "none" else "ON"
        train = self._cuda_train()
        if train:
            # The train's tools, from the pteron-cuda-toolchain tool requirement's conf.
            tc.cache_variables["PTERON_CUDA_TRAIN"] = train
            for var, conf in (("PTERON_CUDA_NVCC", "nvcc"), ("PTERON_CUDA_INCLUDE_DIR", "include")):
                value = self.conf.get(f"user.pteron.cuda:{conf}")
                if not value:
                    raise ConanInvalidConfiguration(
                        f"cuda_train={train}: the tool requirement pteron-cuda-toolchain gave no "
                        f"user.pteron.cuda:{conf}")
                tc.cache_variables[var] = value.replace("\\", "/")
            cache = self.conf.get("user.pteron.cuda:fatbin_cache")
            if cache:  # one nvcc run per train and source, shared by packages (scripts/conan.sh)
                tc.cache_variables["PTERON_CUDA_FATBIN_CACHE"] = str(cache).replace("\\", "/")
        _cci.license_cache_variables(self, tc)
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()
        # pteron's license and the texts of the code compiled into it (FlatBuffers, Eigen and,
        # for MinGW, its runtime: cmake/PteronLicenses.cmake) go where Conan packages keep them.
        # The CMake package, share/pteron and the pkg-config files stay: plain CMake and
        # pkg-config consumers of this package use them (the Conan Center recipe drops them).
        _cci.package_licenses(self)

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "pteron")
        # The ELF wrapper names the library by its path in this package (the Conan Center
        # recipe names it -l<lib>).
        lib_dir = os.path.join(self.package_folder, "lib")
        declared = _cci.declare_components(
            self, _components(), self._enabled,
            elf_library=lambda lib: os.path.join(lib_dir, f"lib{lib}.so"),
            third_party_requires=lambda component: [])
        if "backend_xnnpack" in declared:
            # Which XNNPACK library the delegate links: none, conan, system.
            declared["backend_xnnpack"].set_property("pteron_xnnpack_library",
                                                     self._xnnpack_library())
        if "backend_cuda" in declared:
            # The CUDA train of the embedded device code (cu132, cu134).
            declared["backend_cuda"].set_property("pteron_cuda_train", self._cuda_train())
