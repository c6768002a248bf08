import os

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, get, rmdir

required_conan_version = ">=2.4"

# pteron's components, as the release's cmake/components.json lists them (a Conan Center
# recipe cannot read its sources before source()). backend_cuda and extension_cuda are left
# out: their device code needs a CUDA compiler, which Conan Center does not provide.
#   option: the option that builds the component (None: always built);
#   registration_only: a library whose only job is to register with the runtime, which a
#     consumer's linker must be told to keep (retention_flags());
#   third_party: the Conan Center requirements the component's library uses.
COMPONENTS = (
    {"name": "runtime", "option": None, "requires": [], "registration_only": False,
     "third_party": ["flatbuffers"], "system_libs": {"Linux": ["pthread", "dl", "m"]}},
    {"name": "kernels_portable", "option": None, "requires": ["runtime"],
     "registration_only": True, "third_party": [], "system_libs": {}},
    {"name": "kernels_optimized", "option": "with_optimized", "requires": ["runtime"],
     "registration_only": True, "third_party": ["eigen"], "system_libs": {"Linux": ["m"]}},
    {"name": "kernels_quantized", "option": "with_quantized", "requires": ["runtime"],
     "registration_only": True, "third_party": [], "system_libs": {"Linux": ["m"]}},
    {"name": "kernels_llm", "option": "with_llm", "requires": ["runtime"],
     "registration_only": True, "third_party": ["eigen"], "system_libs": {"Linux": ["m"]}},
    {"name": "threadpool", "option": "with_threadpool", "requires": ["runtime"],
     "registration_only": True, "third_party": ["pthreadpool"],
     "system_libs": {"Linux": ["pthread"]}},
    {"name": "backend_xnnpack", "option": "with_xnnpack", "requires": ["runtime", "threadpool"],
     "registration_only": True, "third_party": ["xnnpack", "eigen"],
     "system_libs": {"Linux": ["m"]}},
)

# The Conan Center references, and the component each CMake target lives in.
THIRD_PARTY = {
    "flatbuffers": {"ref": "flatbuffers/24.12.23", "component": "flatbuffers::flatbuffers"},
    "eigen": {"ref": "eigen/[>=3.4.0 <6]", "component": "eigen::eigen3"},
    "pthreadpool": {"ref": "pthreadpool/cci.20231129", "component": "pthreadpool::pthreadpool"},
    "xnnpack": {"ref": "xnnpack/cci.20241203", "component": "xnnpack::xnnpack"},
}


# ---- helpers, also used by the repository's own conanfile.py -------------------------
# (kept here because a Conan Center recipe must be self-contained: the developer's recipe
# imports this file, never the other way round)

def library_name(component):
    """The file name stem of a component's library: pteron, pteron_<component>."""
    return "pteron" if component == "runtime" else f"pteron_{component}"


def linker_family(conanfile):
    """msvc (/INCLUDE), mingw (--undefined) or elf (--no-as-needed)."""
    settings = conanfile.settings
    if settings.compiler == "msvc" or (
            settings.compiler == "clang" and settings.os == "Windows"
            and settings.get_safe("compiler.runtime")):
        return "msvc"
    if settings.os == "Windows":
        return "mingw"
    return "elf"


def retention_flags(component, family, elf_library):
    """The link flags that keep a registration-only library linked into a consumer: its
    anchor symbol for MSVC (/INCLUDE) and MinGW (--undefined); on ELF --undefined does not
    survive --as-needed, so the library (elf_library: -l<name> or its path) is wrapped in
    no-as-needed. One self-contained flag per component: CMake de-duplicates repeated
    link options, which would strip the wrapper from all components but one."""
    anchor = f"pteron_anchor_{component}"
    if family == "msvc":
        return [f"/INCLUDE:{anchor}"]
    if family == "mingw":
        return [f"-Wl,--undefined={anchor}"]
    return [f"-Wl,--push-state,--no-as-needed,{elf_library},--pop-state"]


def check_platform(conanfile):
    if conanfile.settings.os not in ("Linux", "Windows"):
        raise ConanInvalidConfiguration(
            f"pteron is built and tested for Linux and Windows only, not {conanfile.settings.os}; "
            "other systems are not supported yet")
    if conanfile.settings.arch != "x86_64":
        raise ConanInvalidConfiguration(
            f"pteron is built and tested for x86_64 only, not {conanfile.settings.arch}")
    check_min_cppstd(conanfile, 17)


def check_component_requires(components, enabled):
    """Refuses a component whose required component is switched off, naming both options."""
    by_name = {c["name"]: c for c in components}
    for c in components:
        if not enabled(c):
            continue
        for r in c["requires"]:
            if not enabled(by_name[r]):
                raise ConanInvalidConfiguration(
                    f"{c['option']}=True needs {by_name[r]['option']}=True: component "
                    f"{c['name']} requires component {r}: set {by_name[r]['option']}=True "
                    f"or {c['option']}=False")


def component_cache_variables(tc, components, enabled):
    """PTERON_<OPTION> for each optional component."""
    for c in components:
        if c["option"]:
            tc.cache_variables[f"PTERON_{c['option'].upper()}"] = enabled(c)


def license_cache_variables(conanfile, tc):
    """The license texts of the header-only code compiled in (cmake/PteronLicenses.cmake):
    the flatbuffers and eigen requirements' own licenses/ folders (none under a profile's
    [platform_requires], where the build takes the system package's)."""
    for name in ("flatbuffers", "eigen"):
        if name not in conanfile.dependencies.host:
            continue
        folder = conanfile.dependencies.host[name].package_folder
        licenses = os.path.join(folder, "licenses") if folder else None
        if licenses and os.path.isdir(licenses):
            files = [os.path.join(licenses, f).replace("\\", "/")
                     for f in sorted(os.listdir(licenses))]
            tc.cache_variables[f"PTERON_LICENSE_{name.upper()}"] = ";".join(files)


def package_licenses(conanfile):
    """pteron's license and the texts of the code compiled into it, as `cmake --install`
    put them (share/licenses/pteron), go to licenses/."""
    installed = os.path.join(conanfile.package_folder, "share", "licenses", "pteron")
    copy(conanfile, "*", installed, os.path.join(conanfile.package_folder, "licenses"))
    rmdir(conanfile, os.path.join(conanfile.package_folder, "share", "licenses"))


def declare_components(conanfile, components, enabled, elf_library, third_party_requires):
    """cpp_info.components of the enabled components: library, the CRT macro, component and
    third-party requirements, system libraries and, for a registration-only library, the
    flags that keep it linked. elf_library(lib) names the library in the ELF wrapper;
    third_party_requires(component) lists the Conan requirements' components it uses.
    Returns {name: component cpp_info}."""
    settings = conanfile.settings
    crt = ("PTERON_PREBUILT_DEBUG_CRT" if settings.build_type == "Debug"
           else "PTERON_PREBUILT_RELEASE_CRT")
    family = linker_family(conanfile)
    declared = {}
    for c in components:
        if not enabled(c):
            continue
        name = c["name"]
        lib = library_name(name)
        ci = conanfile.cpp_info.components[name]
        ci.set_property("cmake_target_name", f"pteron::{name}")
        ci.libs = [lib]
        ci.defines = [crt]
        ci.requires = list(c["requires"]) + list(third_party_requires(c))
        ci.system_libs = list(c.get("system_libs", {}).get(str(settings.os), []))
        if c["registration_only"]:
            flags = retention_flags(name, family, elf_library(lib))
            ci.exelinkflags = list(flags)
            ci.sharedlinkflags = list(flags)
        declared[name] = ci
    return declared


class PteronConan(ConanFile):
    name = "pteron"
    description = ("Runtime for ExecuTorch programs (.pte), shipped as linkable shared "
                   "libraries: runtime, kernel libraries, thread pool, XNNPACK delegate")
    license = "BSD-3-Clause"
    url = "https://github.com/conan-io/conan-center-index"
    homepage = "https://github.com/pteron/pteron"
    topics = ("executorch", "pytorch", "inference", "machine-learning")
    # Shared libraries only, by design: the kernel and delegate libraries register into the
    # one registry of the runtime library, which a static build would duplicate.
    package_type = "shared-library"
    settings = "os", "arch", "compiler", "build_type"
    # One option per optional component. xnnpack_library: which XNNPACK library
    # backend_xnnpack links: none (every node on pteron's own kernels) or conan (the xnnpack
    # requirement, for the node types it has).
    options = {
        "with_optimized": [True, False],
        "with_quantized": [True, False],
        "with_llm": [True, False],
        "with_threadpool": [True, False],
        "with_xnnpack": [True, False],
        "xnnpack_library": ["none", "conan"],
    }
    default_options = {
        "with_optimized": True,
        "with_quantized": True,
        "with_llm": True,
        "with_threadpool": True,
        "with_xnnpack": True,
        "xnnpack_library": "none",
    }

    def _enabled(self, component):
        option = component["option"]
        return option is None or bool(self.options.get_safe(option))

    def _third_party(self, component):
        """The third-party libraries `component` uses in this configuration."""
        names = list(component["third_party"])
        if self.options.get_safe("xnnpack_library") != "conan" and "xnnpack" in names:
            names.remove("xnnpack")
        return names

    def configure(self):
        if not self.options.with_xnnpack:
            self.options.rm_safe("xnnpack_library")

    def layout(self):
        cmake_layout(self, src_folder="src")

    def requirements(self):
        needed = set()
        for c in COMPONENTS:
            if self._enabled(c):
                needed.update(self._third_party(c))
        # Ordinary (visible) requirements, so that the components can name them. Conan's
        # default traits for a shared library keep their headers and libraries away from
        # consumers; the library files of a shared xnnpack or pthreadpool still reach them
        # for deployment.
        for name in sorted(needed):
            self.requires(THIRD_PARTY[name]["ref"])

    def build_requirements(self):
        # flatc generates the .pte reader; it must match the flatbuffers headers.
        self.tool_requires("flatbuffers/<host_version>")

    def validate(self):
        check_platform(self)
        check_component_requires(COMPONENTS, self._enabled)

    def source(self):
        get(self, **self.conan_data["sources"][self.version], strip_root=True)

    def generate(self):
        tc = CMakeToolchain(self)
        component_cache_variables(tc, COMPONENTS, self._enabled)
        tc.cache_variables["PTERON_BUILD_TOOLS"] = False
        if self.options.with_threadpool:
            tc.cache_variables["PTERON_THREADPOOL_IMPL"] = "pthreadpool"
        if self.options.with_xnnpack:
            # ON: the xnnpack requirement must be found (never a silent fallback).
            tc.cache_variables["PTERON_XNNPACK_LIBRARY"] = \
                "ON" if self.options.xnnpack_library == "conan" else "OFF"
        license_cache_variables(self, tc)
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        cmake = CMake(self)
        cmake.install()
        package_licenses(self)
        # CMakeDeps and PkgConfigDeps make the consumers' files from package_info().
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
        rmdir(self, os.path.join(self.package_folder, "lib", "pkgconfig"))
        rmdir(self, os.path.join(self.package_folder, "share"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "pteron")
        self.cpp_info.set_property("cmake_target_name", "pteron::pteron")

        def third_party_requires(component):
            return [THIRD_PARTY[t]["component"] for t in self._third_party(component)]

        declare_components(self, COMPONENTS, self._enabled,
                           elf_library=lambda lib: f"-l{lib}",
                           third_party_requires=third_party_requires)
