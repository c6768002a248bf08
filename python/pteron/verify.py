# SPDX-License-Identifier: BSD-3-Clause
"""pteron-verify: check an installed pteron package's binaries the way the
platform's loader and linker see them.

    python -m pteron.verify PACKAGE_DIR [--arch x86_64] [--json]

PACKAGE_DIR is a Conan package folder, a ``cmake --install`` prefix, a wheel
(``.whl``: its ``pteron/`` folder is checked) or an unpacked wheel. What
the package should hold is read from the package itself:

  lib/cmake/pteron/pteron-components.cmake  the components built, with each
                                            one's file, import library, SONAME
  share/pteron/components.json              the one component list: requires,
                                            option, third-party and system
                                            libraries
  conaninfo.txt (Conan packages only)       options and arch

The checks (docs/architecture.md, "Windows (PE) and its ELF counterpart"):

  files            every component file (and import library on Windows) is
                   present and names itself as it is named; no other binary
  exports          pteron_anchor_<component> is exported; nothing but pteron_*
                   is exported (a threadpool that links pthreadpool statically
                   may export pthreadpool_*)
  single-owner     no symbol is exported by two components; every kernel,
                   thread pool and delegate library imports the registry from
                   the runtime library and defines none of it; a component
                   that uses pthreadpool (backend_xnnpack) uses the process's
                   one pool: the threadpool component's, when it exports the
                   pthreadpool API (a static pthreadpool), else the same
                   shared libpthreadpool the threadpool component depends on
  dependencies     every recorded dependency is a bare file name and is a pteron
                   component the component requires, the toolchain or OS
                   runtime, or a declared third-party or system library;
                   backend_xnnpack links the XNNPACK library the package
                   states (PTERON_backend_xnnpack_XNNPACK_LIBRARY: none, or
                   the library; conaninfo's xnnpack_library agrees); ELF
                   RUNPATH is $ORIGIN ($ORIGIN/../lib for bin/ programs), no
                   RPATH, no absolute or build-tree path
  platform         ELF e_machine / PE machine matches the arch
  private-helpers  no DLL imports cpuinfo; no binary imports any CUDA library,
                   the driver included (backend_cuda loads it at run time)
  cuda             device code: backend_cuda's fatbin section (.nv_fatbin in
                   ELF, .nv_fatb in PE) carries exactly the SASS architectures
                   of its train (PTERON_backend_cuda_CUDA_TRAIN, the list in
                   share/pteron/cuda_trains.json; a missing one and an extra
                   one both fail) and PTX for the train's newest only, of the
                   train's PTX ISA; read with pteron's own fatbin parser and,
                   given --cuobjdump (or PTERON_CUDA_CUOBJDUMP), cross-checked
                   with cuobjdump (ELF), given --cuobjdump-exe (or
                   PTERON_CUDA_CUOBJDUMP_EXE), with the Windows cuobjdump.exe run
                   through --wine (PE); conaninfo's cuda_train agrees; no
                   other binary carries device code; the package holds no
                   libcuda.so* or nvcuda.dll (a driver there would be found
                   first through RUNPATH $ORIGIN)
  licenses         the package holds pteron's LICENSE and the license text of
                   each library compiled into its binaries (cmake/
                   PteronLicenses.cmake): FlatBuffers; Eigen with pteron_cpu
                   (kernels_optimized, backend_xnnpack); for PE, the MinGW-w64
                   runtime and GCC's (linked statically). Conan packages keep
                   them in licenses/, installed trees in share/licenses/pteron,
                   a wheel pteron's own in pteron-<version>.dist-info/licenses

Prints a table (or JSON with --json) and exits 1 when any check fails,
naming each failure; 2 when the command line is wrong.
"""
import argparse
import importlib.util
import fnmatch
import json
import glob
import os
import re
import subprocess
import sys

CHECKS = ("files", "exports", "single-owner", "dependencies", "platform", "private-helpers",
          "cuda", "licenses")

# The runtime's registry: what a kernel, thread pool or delegate library calls
# to register itself. It must come from the runtime library, never a copy.
REGISTRY_FUNCTIONS = ("pteron_register_kernels", "pteron_register_backend",
                      "pteron_register_graph_pass",
                      "pteron_set_parallel_backend")

# Programs a package may ship in bin/ besides the Windows DLLs.
TOOLS = ("pteron-run",)

# The Python module's extension, at the root of a wheel's pteron/ folder.
PYTHON_EXTENSION = re.compile(r"^_pteron(\.[\w.-]+)?\.(so|pyd)$")

# The CPython DLL a Windows extension links (on Linux an extension links no libpython): the
# version's own (python311.dll) or, built for the stable ABI, python3.dll.
PYTHON_DLLS = ("python3.dll", "python3[0-9]*.dll")

# The one component with device code. No binary imports a CUDA library, the
# driver included: backend_cuda loads the driver at run time.
CUDA_COMPONENT = "backend_cuda"
CUDA_DRIVER_FILES = ("libcuda.so*", "nvcuda.dll")
# The fatbin container (NVIDIA's, as cuobjdump reads it; ../shared/NOTES.md): a
# header <IHHQ (magic, version, header size, payload size), then entries <HHIQ
# (kind 1 PTX / 2 ELF, version, header size, payload size) with, at +24,
# <HHI (minor, major, arch); for PTX, major.minor is the PTX ISA.
FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = {"elf": ".nv_fatbin", "pe": ".nv_fatb"}
CUDA_PATTERNS = {
    "elf": ("libcuda.so*", "libcudart*", "libnvrtc*", "libcublas*", "libcufft*", "libcurand*",
            "libcusparse*", "libcusolver*", "libnvJitLink*", "libnvToolsExt*", "libnvtx*",
            "libcudnn*", "libnccl*", "libnvidia-*"),
    "pe": ("nvcuda.dll", "cudart*", "nvrtc*", "cublas*", "cufft*", "curand*", "cusparse*",
           "cusolver*", "nvjitlink*", "nvtoolsext*", "cudnn*", "nccl*"),
}
CPUINFO_PATTERNS = ("cpuinfo*.dll", "libcpuinfo*.dll")

# Arch names (Conan's first) -> ELF e_machine and PE FILE_HEADER.Machine.
ARCHES = {
    "x86_64": ("EM_X86_64", 0x8664),
    "x86": ("EM_386", 0x014C),
    "armv8": ("EM_AARCH64", 0xAA64),
    "armv7": ("EM_ARM", 0x01C4),
}
ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "aarch64": "armv8", "arm64": "armv8",
                "i386": "x86", "i686": "x86", "arm": "armv7"}

# The toolchain and OS runtime: always allowed as a dependency.
SYSTEM_RUNTIME = {
    "elf": ("libc.so.*", "libm.so.*", "libmvec.so.*", "libstdc++.so.*", "libgcc_s.so.*",
            "ld-linux*.so.*", "ld64.so.*", "libpthread.so.*", "libdl.so.*", "librt.so.*",
            "libatomic.so.*"),
    # Windows system DLLs and the MSVC redistributable (installed system-wide).
    # MinGW's libstdc++/libgcc/winpthread DLLs are not here: pteron links them
    # statically, and a package that needed them would not load without them.
    "pe": ("kernel32.dll", "kernelbase.dll", "ntdll.dll", "msvcrt.dll", "ucrtbase.dll",
           "ucrtbased.dll", "api-ms-win-*.dll", "ext-ms-win-*.dll", "user32.dll",
           "advapi32.dll", "gdi32.dll", "shell32.dll", "ole32.dll", "oleaut32.dll",
           "ws2_32.dll", "bcrypt.dll", "crypt32.dll", "shlwapi.dll", "version.dll",
           "psapi.dll", "dbghelp.dll", "secur32.dll", "rpcrt4.dll", "userenv.dll",
           "winmm.dll", "vcruntime140*.dll", "msvcp140*.dll", "concrt140*.dll",
           "vcomp140*.dll"),
}

# Microsoft's debug CRT: only a Debug build (conaninfo build_type=Debug) may import it. It is
# not redistributable (Visual Studio's license) and no user's machine has it: a Release
# package, a wheel or a conda package that imports it does not load.
DEBUG_CRT = ("vcruntime140d.dll", "vcruntime140_1d.dll", "msvcp140d.dll", "msvcp140d_*.dll",
             "ucrtbased.dll", "concrt140d.dll", "vcomp140d.dll")

# Third-party names in components.json -> the file names their shared
# libraries are recorded under. Header-only ones map to nothing.
THIRD_PARTY_FILES = {
    "pthreadpool": {"elf": ("libpthreadpool.so*",), "pe": ("pthreadpool.dll", "libpthreadpool*.dll")},
    "xnnpack": {"elf": ("libXNNPACK.so*", "libxnnpack.so*"), "pe": ("XNNPACK.dll", "libXNNPACK*.dll")},
    "cpuinfo": {"elf": ("libcpuinfo.so*",), "pe": ("cpuinfo.dll", "libcpuinfo*.dll")},
    "flatbuffers": {"elf": ("libflatbuffers.so*",), "pe": ("flatbuffers.dll", "libflatbuffers*.dll")},
    "eigen": {"elf": (), "pe": ()},
    "cuda": {"elf": ("libcuda.so.1",), "pe": ("nvcuda.dll",)},
}

# Export-table leaks, named by where they come from.
LEAK_KINDS = (
    ("flatbuffers", re.compile(r"flatbuffers", re.I)),
    ("Eigen", re.compile(r"Eigen")),
    ("pthreadpool", re.compile(r"^pthreadpool")),
    ("cpuinfo", re.compile(r"^cpuinfo")),
    ("XNNPACK", re.compile(r"^(xnn_|_Z.*xnn)", re.I)),
    ("standard library", re.compile(r"^_Z.*(St|Sa|Ss|Si|So|Sd|__gnu_cxx|__cxx11)|^\?.*std@@")),
    ("C++", re.compile(r"^(_Z|\?)")),
)

BINARY_NAME = re.compile(r"(\.so(\.\d+)*|\.dll|\.exe|\.dll\.a|\.lib|\.a|\.dylib|\.pyd)$", re.I)


# ---- reading the package ----------------------------------------------------

class PackageError(Exception):
    """The directory is not a pteron package (or lacks its metadata)."""


def read_components_cmake(path):
    """The set(VAR value) lines of pteron-components.cmake, as a dict."""
    values = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r'\s*set\(\s*(\w+)\s*(.*?)\s*\)\s*$', line)
            if m:
                values[m.group(1)] = m.group(2).strip().strip('"')
    return values


def read_conaninfo(path):
    """[settings] and [options] of a Conan package's conaninfo.txt."""
    sections, current = {}, None
    if not os.path.isfile(path):
        return sections
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], {})
            elif current is not None and "=" in line:
                k, v = line.split("=", 1)
                current[k.strip()] = v.strip()
    return sections


class Component:
    def __init__(self, name, location, implib, soname, meta):
        self.name = name
        self.location = location  # relative to the package
        self.implib = implib
        self.soname = soname
        self.meta = meta  # its components.json entry (None if absent)


class Package:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        cmake = os.path.join(self.root, "lib", "cmake", "pteron", "pteron-components.cmake")
        listing = os.path.join(self.root, "share", "pteron", "components.json")
        if os.path.isfile(os.path.join(self.root, "METADATA_ONLY")):
            raise PackageError("metadata-only package (conan export-pkg): it holds no binaries")
        for p in (cmake, listing):
            if not os.path.isfile(p):
                raise PackageError(f"{os.path.relpath(p, self.root)} is missing: "
                                   "not an installed pteron package")
        values = read_components_cmake(cmake)
        with open(listing, encoding="utf-8") as f:
            self.listing = {c["name"]: c for c in json.load(f)["components"]}
        built = [c for c in values.get("PTERON_PACKAGE_COMPONENTS", "").split(";") if c]
        if not built:
            raise PackageError("pteron-components.cmake lists no PTERON_PACKAGE_COMPONENTS")
        self.components = {}
        for name in built:
            self.components[name] = Component(
                name, values.get(f"PTERON_{name}_LOCATION", ""),
                values.get(f"PTERON_{name}_IMPLIB", ""),
                values.get(f"PTERON_{name}_SONAME", ""), self.listing.get(name))
        windows = any(c.implib or c.location.lower().endswith(".dll")
                      for c in self.components.values())
        self.fmt = "pe" if windows else "elf"
        self.os = "Windows" if windows else "Linux"
        self.conaninfo = read_conaninfo(os.path.join(self.root, "conaninfo.txt"))
        # A conda environment (an installed prefix): its relocation writes DT_RPATH.
        self.conda = os.path.isdir(os.path.join(self.root, "conda-meta"))
        # The XNNPACK library backend_xnnpack links, as the build recorded it
        # ("none", or the library's file or target name); None in a package
        # that predates the record.
        self.xnnpack_library = values.get("PTERON_backend_xnnpack_XNNPACK_LIBRARY")
        # backend_cuda's CUDA train ("" for none; None without the component's record).
        self.cuda_train = values.get("PTERON_backend_cuda_CUDA_TRAIN")

    def requires_closure(self, name):
        seen, todo = set(), [name]
        while todo:
            meta = self.listing.get(todo.pop()) or {}
            for r in meta.get("requires", []):
                if r not in seen:
                    seen.add(r)
                    todo.append(r)
        return seen


# ---- reading binaries -------------------------------------------------------

class Binary:
    """What the checks need from one ELF or PE file."""

    def __init__(self, rel, path, component=None):
        self.rel = rel
        self.path = path
        self.component = component  # Component, or None for a program in bin/
        self.fmt = None  # "elf" or "pe"
        self.machine = None
        self.machine_ok_extra = ""
        self.exports = set()
        self.imports = {}  # dependency file name -> set of imported symbol names
        self.undefined = set()  # ELF: undefined dynamic symbols
        self.needed = []  # ELF NEEDED / PE imported DLLs (in order)
        self.runpath = []
        self.rpath = []
        self.soname = None  # ELF DT_SONAME / PE export directory name
        self.dyn_strings = []  # (tag, string) of every string in the dynamic section / import table
        self.is_dll = None
        self.error = None

    @property
    def name(self):
        return os.path.basename(self.rel)


def read_binary(rel, path, component=None):
    b = Binary(rel, path, component)
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
        if magic == b"\x7fELF":
            _read_elf(b)
        elif magic[:2] == b"MZ":
            _read_pe(b)
        else:
            b.error = "neither an ELF nor a PE file"
    except Exception as e:  # a malformed file is a finding, not a crash
        b.error = f"unreadable: {type(e).__name__}: {e}"
    return b


_ELF_STRING_TAGS = {"DT_NEEDED", "DT_SONAME", "DT_RPATH", "DT_RUNPATH", "DT_AUXILIARY",
                    "DT_FILTER", "DT_AUDIT", "DT_DEPAUDIT", "DT_CONFIG"}


def _read_elf(b):
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    b.fmt = "elf"
    with open(b.path, "rb") as f:
        elf = ELFFile(f)
        b.machine = elf["e_machine"]
        b.machine_ok_extra = f"ELFCLASS{elf.elfclass}"
        for sec in elf.iter_sections():
            if isinstance(sec, DynamicSection):
                strtab = elf.get_section(sec["sh_link"])
                for tag in sec.iter_tags():
                    t = tag.entry.d_tag
                    if t not in _ELF_STRING_TAGS:
                        continue
                    s = strtab.get_string(tag.entry.d_val)
                    b.dyn_strings.append((t, s))
                    if t == "DT_NEEDED":
                        b.needed.append(s)
                    elif t == "DT_SONAME":
                        b.soname = s
                    elif t == "DT_RUNPATH":
                        b.runpath.extend(p for p in s.split(":") if p != "")
                    elif t == "DT_RPATH":
                        b.rpath.extend(p for p in s.split(":") if p != "")
            elif sec["sh_type"] == "SHT_DYNSYM":
                for sym in sec.iter_symbols():
                    if not sym.name or sym["st_info"]["type"] in ("STT_SECTION", "STT_FILE"):
                        continue
                    if sym["st_info"]["bind"] == "STB_LOCAL":
                        continue
                    if sym["st_shndx"] == "SHN_UNDEF":
                        b.undefined.add(sym.name)
                    elif sym["st_other"]["visibility"] in ("STV_DEFAULT", "STV_PROTECTED"):
                        b.exports.add(sym.name)
    # ELF does not say which library an undefined symbol comes from; the
    # checks resolve it against the components' exports.
    for n in b.needed:
        b.imports[n] = set()


def _read_pe(b):
    import pefile

    b.fmt = "pe"
    pe = pefile.PE(b.path, fast_load=True)
    try:
        d = pefile.DIRECTORY_ENTRY
        pe.parse_data_directories(directories=[
            d["IMAGE_DIRECTORY_ENTRY_EXPORT"], d["IMAGE_DIRECTORY_ENTRY_IMPORT"],
            d["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"]])
        b.machine = pe.FILE_HEADER.Machine
        b.machine_ok_extra = "PE32+" if pe.OPTIONAL_HEADER.Magic == 0x20B else "PE32"
        b.is_dll = bool(pe.FILE_HEADER.Characteristics & 0x2000)
        exp = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        if exp is not None:
            if exp.name:
                b.soname = exp.name.decode("utf-8", "replace")
            for s in exp.symbols:
                if s.name:
                    b.exports.add(s.name.decode("utf-8", "replace"))
        for attr, tag in (("DIRECTORY_ENTRY_IMPORT", "import"),
                          ("DIRECTORY_ENTRY_DELAY_IMPORT", "delay-import")):
            for entry in getattr(pe, attr, []) or []:
                dll = entry.dll.decode("utf-8", "replace")
                b.dyn_strings.append((tag, dll))
                if dll not in b.imports:
                    b.needed.append(dll)
                    b.imports[dll] = set()
                for imp in entry.imports:
                    b.imports[dll].add(imp.name.decode("utf-8", "replace") if imp.name
                                       else f"#{imp.ordinal}")
    finally:
        pe.close()


# ---- the checks -------------------------------------------------------------

class Report:
    def __init__(self):
        self.rows = []

    def add(self, check, binary, ok, detail):
        assert check in CHECKS, check
        self.rows.append({"check": check, "binary": binary,
                          "result": "PASS" if ok else "FAIL", "detail": detail})

    @property
    def failures(self):
        return [r for r in self.rows if r["result"] == "FAIL"]


def _match(name, patterns, fmt):
    key = name.lower() if fmt == "pe" else name
    for p in patterns:
        if fnmatch.fnmatchcase(key, p.lower() if fmt == "pe" else p):
            return True
    return False


def _same(a, b, fmt):
    return a.lower() == b.lower() if fmt == "pe" else a == b


def _short(items, n=5):
    items = sorted(items)
    more = f" (+{len(items) - n} more)" if len(items) > n else ""
    return ", ".join(items[:n]) + more


def _is_binary_file(path):
    if BINARY_NAME.search(os.path.basename(path)):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return head == b"\x7fELF" or head[:2] == b"MZ"


def check_files(pkg, report):
    """Every component file present and self-named; the options honoured; no other binary."""
    accounted = {}  # path relative to the package -> what it is
    binaries = []
    for c in pkg.components.values():
        problems = []
        if c.meta is None:
            problems.append("not in share/pteron/components.json")
        if not c.location:
            problems.append("pteron-components.cmake records no LOCATION")
        elif os.path.isabs(c.location) or c.location.startswith(".."):
            problems.append(f"LOCATION {c.location} is not inside the package")
        path = os.path.join(pkg.root, c.location) if c.location else None
        present = bool(path) and os.path.isfile(path)
        if c.location and not present:
            problems.append(f"{c.location} is not a regular file" if os.path.lexists(path)
                            else f"{c.location} is missing")
        if c.location:
            accounted[os.path.normpath(c.location)] = c.name
        detail = [c.location or "?"]
        if pkg.fmt == "pe":
            if not c.implib:
                problems.append("no import library recorded (IMPLIB)")
            else:
                accounted[os.path.normpath(c.implib)] = c.name
                if not os.path.isfile(os.path.join(pkg.root, c.implib)):
                    problems.append(f"import library {c.implib} is missing")
                else:
                    detail.append(f"import library {c.implib}")
        else:
            libdir = os.path.dirname(c.location)
            if not c.soname:
                problems.append("no SONAME recorded")
            else:
                link = os.path.join(libdir, c.soname)
                accounted[os.path.normpath(link)] = c.name
                linker_name = re.sub(r"(\.so)(\.\d+)+$", r"\1", os.path.basename(c.location))
                accounted[os.path.normpath(os.path.join(libdir, linker_name))] = c.name
                for rel in (link, os.path.join(libdir, linker_name)):
                    full = os.path.join(pkg.root, rel)
                    if os.path.islink(full) and not os.path.exists(full):
                        problems.append(f"{rel} is a dangling link "
                                        f"(to '{os.readlink(full)}')")
                    elif os.path.islink(full) and present and not os.path.samefile(full, path):
                        problems.append(f"{rel} does not lead to {c.location}")
                if not os.path.exists(os.path.join(pkg.root, link)):
                    problems.append(f"{link} (the SONAME the loader looks for) is missing")
                else:
                    detail.append(f"SONAME {c.soname}")
        if present:
            b = read_binary(c.location, path, c)
            binaries.append(b)
            if b.error:
                problems.append(b.error)
            elif b.fmt != pkg.fmt:
                problems.append(f"{b.fmt.upper()} file in a {pkg.fmt.upper()} package")
            elif pkg.fmt == "elf":
                if b.soname != c.soname:
                    problems.append(f"DT_SONAME is {b.soname!r}, the package records {c.soname!r}")
            else:
                if not b.is_dll:
                    problems.append("not a DLL (IMAGE_FILE_DLL unset)")
                if b.soname is None:
                    problems.append("no export directory")
                elif not _same(b.soname, os.path.basename(c.location), "pe"):
                    problems.append(f"export directory names the DLL {b.soname!r}: "
                                    "renamed after linking, its import library and "
                                    "importers name another file")
        report.add("files", c.location or c.name, not problems,
                   "; ".join(problems) if problems else ", ".join(detail))

    # The package's options: always-built components present, optional ones as configured.
    options = pkg.conaninfo.get("options", {})
    option_problems = []
    for name, meta in pkg.listing.items():
        opt = meta.get("option")
        built = name in pkg.components
        if opt is None and not built:
            option_problems.append(f"component {name} is always built but missing from the package")
        elif opt is not None and opt in options:
            wanted = options[opt].lower() == "true"
            if wanted != built:
                option_problems.append(f"option {opt}={options[opt]} but component {name} "
                                       f"{'is' if built else 'is not'} in the package")
    report.add("files", "package", not option_problems,
               "; ".join(option_problems) if option_problems else
               f"components {', '.join(pkg.components)} for "
               + (f"options {_short([f'{k}={v}' for k, v in options.items()], 20)}"
                  if options else "the built options"))

    # The Python module's extension: at the root of a wheel's pteron/ folder (the package root
    # here), or in a prefix's site-packages (a conda environment: lib/pythonX.Y/site-packages
    # on Linux, Lib/site-packages on Windows).
    module_dirs = [""] + sorted(
        os.path.relpath(d, pkg.root) for d in
        glob.glob(os.path.join(pkg.root, "lib", "python*", "site-packages", "pteron"))
        + glob.glob(os.path.join(pkg.root, "Lib", "site-packages", "pteron")))
    for d in module_dirs:
        folder = os.path.join(pkg.root, d)
        for fn in sorted(os.listdir(folder)):
            rel = os.path.normpath(os.path.join(d, fn))
            if PYTHON_EXTENSION.match(fn) and os.path.isfile(os.path.join(folder, fn)):
                accounted[rel] = "python extension"
                binaries.append(read_binary(rel, os.path.join(folder, fn)))
                report.add("files", rel, True, "the Python module's extension (pteron._pteron)")

    # Programs in bin/.
    for tool in TOOLS:
        rel = os.path.join("bin", tool + (".exe" if pkg.fmt == "pe" else ""))
        accounted[os.path.normpath(rel)] = tool
        if os.path.isfile(os.path.join(pkg.root, rel)):
            b = read_binary(rel, os.path.join(pkg.root, rel))
            binaries.append(b)

    # No other binary anywhere in the package.
    for dirpath, dirnames, filenames in os.walk(pkg.root):
        dirnames.sort()
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, pkg.root)
            if os.path.normpath(rel) in accounted:
                continue
            if _is_binary_file(full):
                report.add("files", rel, False,
                           "unexpected binary: not a component, import library or tool "
                           "the package records")
    return binaries


def _leak_kind(sym):
    for kind, rx in LEAK_KINDS:
        if rx.search(sym):
            return kind
    return "other"


def _links_shared_pthreadpool(b):
    return any(_match(n, THIRD_PARTY_FILES["pthreadpool"][b.fmt], b.fmt) for n in b.needed)


def check_exports(pkg, binaries, report):
    for b in binaries:
        c = b.component
        if c is None or b.error:
            continue
        problems = []
        anchor = f"pteron_anchor_{c.name}"
        if anchor not in b.exports:
            problems.append(f"does not export its anchor {anchor}")
        leaks = sorted(s for s in b.exports if not s.startswith("pteron_"))
        note = ""
        if c.name == "threadpool" and not _links_shared_pthreadpool(b):
            pool = [s for s in leaks if s.startswith("pthreadpool_")]
            if pool:
                note = f"; exports the pthreadpool API ({len(pool)} symbols) of its static pthreadpool"
            leaks = [s for s in leaks if not s.startswith("pthreadpool_")]
        if leaks:
            kinds = {}
            for s in leaks:
                kinds.setdefault(_leak_kind(s), []).append(s)
            problems.append(f"export table is not the public API: {len(leaks)} non-pteron_ "
                            "symbols leak: " + "; ".join(
                                f"{k} ({len(v)}): {_short(v, 3)}" for k, v in sorted(kinds.items())))
        report.add("exports", b.rel, not problems, "; ".join(problems) if problems else
                   f"{len(b.exports)} exports, all pteron_*, anchor {anchor}{note}")


def check_single_owner(pkg, binaries, report):
    comps = [b for b in binaries if b.component is not None and not b.error]
    owners = {}
    for b in comps:
        for s in b.exports:
            owners.setdefault(s, []).append(b)
    runtime = next((b for b in comps if b.component.name == "runtime"), None)
    pool = _pool_owner(comps)
    for b in comps:
        problems, detail = [], []
        twice = {s: [o.rel for o in owners[s] if o is not b] for s in b.exports if len(owners[s]) > 1}
        if twice:
            problems.append("exports symbols another component also exports: " + _short(
                [f"{s} (also {', '.join(v)})" for s, v in twice.items()], 3))
        name = b.component.name
        defined = [f for f in REGISTRY_FUNCTIONS if f in b.exports]
        if name == "runtime":
            if not defined:
                problems.append("defines none of the registry functions "
                                + ", ".join(REGISTRY_FUNCTIONS))
            else:
                detail.append(f"owns the registry ({', '.join(defined)})")
        else:
            if defined:
                problems.append(f"defines the registry function(s) {', '.join(defined)}: "
                                "a private copy of the runtime")
            if runtime is None:
                problems.append("the package has no runtime library to import the registry from")
            else:
                imported = _registry_imports(b, runtime)
                if imported:
                    detail.append(f"imports {', '.join(imported)} from {runtime.name}")
                elif b.component.meta and b.component.meta.get("registration_only"):
                    problems.append(f"does not import the registry ({' / '.join(REGISTRY_FUNCTIONS)}) "
                                    f"from {runtime.name}: it registers into a private copy, "
                                    "or not at all")
        if name != "threadpool":
            _check_pool_user(b, pool, problems, detail)
        if not problems:
            detail.insert(0, f"no symbol owned twice ({len(b.exports)} exports)")
        report.add("single-owner", b.rel, not problems,
                   "; ".join(problems) if problems else "; ".join(detail))


def _is_pthreadpool_file(name, fmt):
    return _match(name, THIRD_PARTY_FILES["pthreadpool"][fmt], fmt)


def _pool_owner(comps):
    """Who owns the process's pthreadpool: ("threadpool", binary) when the
    threadpool component exports the pthreadpool API (a static pthreadpool, as
    in Conan Center builds); ("shared", file name) when it depends on a shared
    libpthreadpool (Debian); None when it has no pthreadpool (the std::thread
    pool) or the package has no threadpool component."""
    tp = next((b for b in comps if b.component.name == "threadpool"), None)
    if tp is None:
        return None
    if any(s.startswith("pthreadpool_") for s in tp.exports):
        return ("threadpool", tp)
    shared = [n for n in tp.needed if _is_pthreadpool_file(n, tp.fmt)]
    return ("shared", shared[0]) if shared else None


def _check_pool_user(b, pool, problems, detail):
    """A component using pthreadpool (XNNPACK's delegate) must use the
    process's one pool, never a second one."""
    if b.fmt == "elf":
        uses = any(s.startswith("pthreadpool_") for s in b.undefined)
        sources = [n for n in b.needed if _is_pthreadpool_file(n, "elf")]
        if uses and pool and pool[0] == "threadpool" and pool[1].soname in b.needed:
            sources.append(pool[1].soname)
    else:
        sources = [dll for dll, syms in b.imports.items()
                   if any(s.startswith("pthreadpool_") for s in syms)]
        uses = bool(sources)
    if not uses or pool is None:
        return
    kind, owner = pool
    if kind == "threadpool":
        wrong = [s for s in sources if not _same(s, owner.soname if b.fmt == "elf" else owner.name,
                                                 b.fmt)]
        if wrong:
            problems.append(f"uses pthreadpool from {', '.join(wrong)}, but {owner.rel} owns the "
                            "process's pool (it exports the pthreadpool API): two pools")
        elif sources:
            detail.append(f"shares the pool of {owner.name}")
    else:
        wrong = [s for s in sources if not _same(s, owner, b.fmt)]
        if wrong:
            problems.append(f"uses pthreadpool from {', '.join(wrong)}, but the threadpool "
                            f"component uses {owner}: two pools")
        elif sources:
            detail.append(f"shares {owner} with the threadpool component")


def _registry_imports(b, runtime):
    if b.fmt == "elf":
        if runtime.soname not in b.needed:
            return []
        return [f for f in REGISTRY_FUNCTIONS if f in b.undefined and f in runtime.exports]
    for dll, syms in b.imports.items():
        if _same(dll, runtime.name, "pe"):
            return [f for f in REGISTRY_FUNCTIONS if f in syms]
    return []


def _origin_entry(p):
    """A search path entry as compared: ${ORIGIN} is $ORIGIN, and a trailing / or /. (the
    spelling of conda's relocation, $ORIGIN/) is dropped."""
    p = p.replace("${ORIGIN}", "$ORIGIN")
    while p.endswith("/.") or (p.endswith("/") and p != "/"):
        p = p[:-2] if p.endswith("/.") else p[:-1]
    return p


def _looks_absolute(s):
    return s.startswith("/") or s.startswith("\\") or bool(re.match(r"^[A-Za-z]:[\\/]", s))


def check_dependencies(pkg, binaries, report):
    by_file = {}
    for c in pkg.components.values():
        key = c.soname if pkg.fmt == "elf" else os.path.basename(c.location).lower()
        if key:
            by_file[key] = c.name
    for b in binaries:
        if b.error:
            continue
        problems, seen = [], []
        comp = b.component
        meta = (comp.meta or {}) if comp else {}
        allowed_components = pkg.requires_closure(comp.name) if comp else set(pkg.components)
        declared = {}
        for tp in meta.get("third_party", []):
            for p in THIRD_PARTY_FILES.get(tp, {}).get(b.fmt, ()):
                declared[p] = f"third-party {tp}"
        for lib in meta.get("system_libs", {}).get(pkg.os, []):
            for p in ((f"lib{lib}.so*",) if b.fmt == "elf" else (f"{lib}.dll", f"{lib}")):
                declared[p] = f"system library {lib}"
        for dep in b.needed:
            if "/" in dep or "\\" in dep or ":" in dep:
                problems.append(f"dependency {dep!r} is not a bare file name")
                continue
            key = dep if b.fmt == "elf" else dep.lower()
            if key in by_file:
                other = by_file[key]
                if other == (comp.name if comp else None):
                    problems.append(f"depends on itself ({dep})")
                elif other not in allowed_components:
                    problems.append(f"depends on {dep} (component {other}), which "
                                    f"{comp.name} does not require in components.json")
                else:
                    seen.append(f"{dep} (pteron {other})")
                continue
            if (b.fmt == "pe" and _match(dep, DEBUG_CRT, b.fmt)
                    and pkg.conaninfo.get("settings", {}).get("build_type") != "Debug"):
                problems.append(f"imports {dep}, Microsoft's debug CRT, which only a Debug "
                                "package may need (it is not redistributable; a Release package "
                                "or a wheel imports vcruntime140.dll, msvcp140.dll and the UCRT)")
                continue
            if _match(dep, SYSTEM_RUNTIME[b.fmt], b.fmt):
                seen.append(f"{dep} (system)")
                continue
            hit = next((why for p, why in declared.items() if _match(dep, (p,), b.fmt)), None)
            if hit:
                seen.append(f"{dep} ({hit})")
                continue
            if (not comp and b.fmt == "pe" and PYTHON_EXTENSION.match(os.path.basename(b.name))
                    and _match(dep, PYTHON_DLLS, b.fmt)):
                seen.append(f"{dep} (CPython)")
                continue
            if comp and comp.name == CUDA_COMPONENT and _match(dep, CUDA_DRIVER[b.fmt], b.fmt):
                seen.append(f"{dep} (CUDA driver)")
                continue
            who = comp.name if comp else b.name
            problems.append(f"undeclared dependency {dep}: not a pteron component, the "
                            f"toolchain/OS runtime, or a third_party/system_libs entry of {who} "
                            "in components.json")
        if comp and comp.name == "backend_xnnpack":
            _check_xnnpack_library(pkg, b, problems, seen)
        # Search paths.
        if b.fmt == "elf":
            search = b.runpath
            if b.rpath and pkg.conda and not b.runpath:
                # conda-build and rattler-build relocate with DT_RPATH on purpose (the
                # environment's libraries win over LD_LIBRARY_PATH); the same entries apply.
                search = b.rpath
            elif b.rpath:
                problems.append(f"has DT_RPATH {':'.join(b.rpath)} (only DT_RUNPATH is allowed)")
            if comp is not None:
                want = ["$ORIGIN"]
            else:
                libdir = os.path.dirname(next(iter(pkg.components.values())).location) or "lib"
                want = ["$ORIGIN/" + os.path.relpath(os.path.join(pkg.root, libdir),
                                                     os.path.dirname(b.path)).replace(os.sep, "/")]
            bad = [p for p in search if _origin_entry(p) not in want]
            kind = "RPATH" if search is b.rpath and b.rpath else "RUNPATH"
            if bad:
                problems.append(f"{kind} entry {':'.join(bad)} (allowed: {', '.join(want)})")
            needs_sibling = any((d in by_file) for d in b.needed)
            if needs_sibling and not search:
                problems.append(f"no RUNPATH, yet it needs pteron libraries (want {want[0]})")
            if search:
                seen.append(f"{kind} " + ":".join(search))
        for tag, s in b.dyn_strings:
            if tag in ("DT_RUNPATH", "DT_RPATH"):
                parts = [p for p in s.split(":") if p and not p.startswith(("$ORIGIN", "${ORIGIN}"))]
            else:
                parts = [s]
            for p in parts:
                if _looks_absolute(p) or "/build" in p or "\\build" in p.lower():
                    problems.append(f"{tag} records a path: {p}")
        report.add("dependencies", b.rel, not problems,
                   "; ".join(dict.fromkeys(problems)) if problems else
                   (", ".join(seen) or "no dependencies"))


def _check_xnnpack_library(pkg, b, problems, seen):
    """backend_xnnpack links the XNNPACK library the package states: none (then
    no XNNPACK file and no xnn_* import), or one; and Conan's option
    xnnpack_library agrees."""
    stated = pkg.xnnpack_library
    option = pkg.conaninfo.get("options", {}).get("xnnpack_library")
    if stated is None:
        if option is not None:
            problems.append("pteron-components.cmake does not state which XNNPACK library "
                            f"backend_xnnpack links (option xnnpack_library={option})")
        return
    files = [d for d in b.needed if _match(d, THIRD_PARTY_FILES["xnnpack"][b.fmt], b.fmt)]
    imports_xnn = [s for s in b.undefined if s.startswith("xnn_")]
    if stated == "none":
        if files or imports_xnn:
            what = files or imports_xnn[:3]
            problems.append(f"uses XNNPACK ({', '.join(what)}), but the package states it links "
                            "no XNNPACK library (PTERON_backend_xnnpack_XNNPACK_LIBRARY none)")
        if option not in (None, "none"):
            problems.append(f"option xnnpack_library={option}, but the package states none")
        if not (files or imports_xnn):
            seen.append("XNNPACK library: none (pteron's kernels only)")
        return
    shared = not stated.endswith((".a", ".lib"))
    if shared and not files and b.fmt == "elf" and not imports_xnn:
        problems.append(f"the package states XNNPACK library {stated}, but backend_xnnpack "
                        "neither depends on it nor imports xnn_*")
    if option == "none":
        problems.append(f"option xnnpack_library=none, but the package states {stated}")
    seen.append(f"XNNPACK library: {stated}")


def check_platform(pkg, arch, binaries, report):
    elf_machine, pe_machine = ARCHES[arch]
    for b in binaries:
        if b.error:
            continue
        if b.fmt == "elf":
            ok = b.machine == elf_machine
            detail = f"e_machine {b.machine} ({b.machine_ok_extra})"
            want = elf_machine
        else:
            ok = b.machine == pe_machine
            detail = f"machine 0x{b.machine:04X} ({b.machine_ok_extra})"
            want = f"0x{pe_machine:04X}"
        if b.fmt != pkg.fmt:
            ok = False
            detail += f"; {b.fmt.upper()} file in a {pkg.fmt.upper()} package"
        if not ok:
            detail = f"{detail}, arch {arch} needs {want}"
        else:
            detail = f"{detail} = arch {arch}"
        report.add("platform", b.rel, ok, detail)


def check_private_helpers(pkg, binaries, report):
    for b in binaries:
        if b.error:
            continue
        problems = []
        if b.fmt == "pe":
            cpu = [d for d in b.needed if _match(d, CPUINFO_PATTERNS, "pe")]
            if cpu:
                problems.append(f"imports cpuinfo from {', '.join(cpu)} (it must stay "
                                "private to the DLL that uses it)")
        cuda = [d for d in b.needed if _match(d, CUDA_PATTERNS[b.fmt], b.fmt)]
        is_cuda_component = b.component is not None and b.component.name == CUDA_COMPONENT
        if cuda and not is_cuda_component:
            problems.append(f"depends on CUDA ({', '.join(cuda)}); only {CUDA_COMPONENT} may")
        elif cuda:
            problems.append(f"imports {', '.join(cuda)}: {CUDA_COMPONENT} imports nothing from "
                            "CUDA (it loads the driver at run time, so it loads on any machine)")
        if problems:
            report.add("private-helpers", b.rel, False, "; ".join(problems))
        else:
            report.add("private-helpers", b.rel, True,
                       "no CUDA" + ("" if b.fmt == "elf" else ", no imported cpuinfo"))


# ---- device code --------------------------------------------------------------

# Entry flags of an architecture-specific (sm_90a) or family (sm_100f) variant.
FATBIN_VARIANTS = ((0x100000, "a"), (0x200000, "f"))


def read_fatbin(data):
    """The architectures in fatbin container(s) `data`, as labels ("75", "90a",
    "100f"): {"sass": {...}, "ptx": {...}, "ptx_isa": {"9.4", ...}}. Containers
    may follow one another (zero padding between them is skipped). ValueError
    when malformed."""
    import struct

    out = {"sass": set(), "ptx": set(), "ptx_isa": set()}
    off, n, containers = 0, len(data), 0
    while off + 16 <= n:
        magic, _version, hsize, psize = struct.unpack_from("<IHHQ", data, off)
        if magic != FATBIN_MAGIC:
            if not any(data[off:off + 16]):
                off += 16  # alignment padding
                continue
            raise ValueError(f"no fatbin magic at offset {off}")
        if hsize < 16 or off + hsize + psize > n:
            raise ValueError(f"fatbin container at {off} runs past the section")
        p, end = off + hsize, off + hsize + psize
        while p + 32 <= end:
            kind, _ev, ehs, eps = struct.unpack_from("<HHIQ", data, p)
            minor, major, arch = struct.unpack_from("<HHI", data, p + 24)
            if ehs < 48 or p + ehs + eps > end:
                raise ValueError(f"fatbin entry at {p} runs past its container")
            (flags,) = struct.unpack_from("<Q", data, p + 40)
            label = str(arch) + "".join(v for bit, v in FATBIN_VARIANTS if flags & bit)
            if kind == 2:
                out["sass"].add(label)
            elif kind == 1:
                out["ptx"].add(label)
                out["ptx_isa"].add(f"{major}.{minor}")
            else:
                raise ValueError(f"fatbin entry at {p} has kind {kind} (1 PTX, 2 ELF)")
            p += ehs + eps
        off = end
        containers += 1
    if not containers:
        raise ValueError("no fatbin container")
    return out


def fatbin_section(b):
    """The bytes of b's fatbin section, or None when it has none."""
    name = FATBIN_SECTIONS[b.fmt]
    if b.fmt == "elf":
        from elftools.elf.elffile import ELFFile

        with open(b.path, "rb") as f:
            sec = ELFFile(f).get_section_by_name(name)
            return None if sec is None else sec.data()
    import pefile

    pe = pefile.PE(b.path, fast_load=True)
    try:
        for sec in pe.sections:
            if sec.Name.rstrip(b"\0").decode("ascii", "replace") == name:
                return sec.get_data()[:sec.Misc_VirtualSize or sec.SizeOfRawData]
        return None
    finally:
        pe.close()


def _cuobjdump_archs(cuobjdump, path, wine_path=False):
    """(sass, ptx) as cuobjdump lists them: `cuobjdump` is the command (a list), and
    wine_path gives it the file in Wine's Z: form (the Windows cuobjdump.exe, for a PE file)."""
    if wine_path:
        path = "Z:" + os.path.abspath(path).replace("/", "\\")
    r = subprocess.run([*cuobjdump, "--list-elf", "--list-ptx", path], capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise ValueError(f"cuobjdump failed: {r.stderr.strip()[:200]}")
    sass = set(re.findall(r"^ELF file\s+\d+:.*\.sm_(\d+[af]?)\.cubin$", r.stdout, re.M))
    ptx = set(re.findall(r"^PTX file\s+\d+:.*\.sm_(\d+[af]?)\.ptx$", r.stdout, re.M))
    return sass, ptx


def _archs(xs, prefix):
    def key(a):
        return (int(re.match(r"\d+", a).group()), a)
    return " ".join(f"{prefix}{a}" for a in sorted(xs, key=key)) or "none"


def check_cuda(pkg, binaries, report, cuobjdump=None, cuobjdump_exe=None, wine="wine"):
    drivers = []
    for dirpath, _dirs, files in os.walk(pkg.root):
        drivers += [os.path.relpath(os.path.join(dirpath, f), pkg.root) for f in files
                    if any(fnmatch.fnmatch(f.lower(), p) for p in CUDA_DRIVER_FILES)]
    report.add("cuda", "package", not drivers,
               f"holds {', '.join(sorted(drivers))}: a driver in the package would be loaded "
               "instead of the system's (RUNPATH $ORIGIN)" if drivers else
               "no libcuda.so* or nvcuda.dll in the package")
    trains = None
    listing = os.path.join(pkg.root, "share", "pteron", "cuda_trains.json")
    if os.path.isfile(listing):
        with open(listing, encoding="utf-8") as f:
            trains = json.load(f)["trains"]
    for b in binaries:
        if b.error:
            continue
        try:
            data = fatbin_section(b)
        except Exception as e:  # a malformed file is a finding, not a crash
            report.add("cuda", b.rel, False, f"cannot read its sections: {type(e).__name__}: {e}")
            continue
        section = FATBIN_SECTIONS[b.fmt]
        if b.component is None or b.component.name != CUDA_COMPONENT:
            report.add("cuda", b.rel, data is None,
                       f"carries device code (section {section}); only {CUDA_COMPONENT} may"
                       if data is not None else "no device code")
            continue
        train = pkg.cuda_train or ""
        conan_train = pkg.conaninfo.get("options", {}).get("cuda_train")
        problems = []
        if conan_train is not None and conan_train != (train or "None"):
            problems.append(f"conaninfo.txt says cuda_train={conan_train}, the build recorded "
                            f"train '{train}'")
        if not train:
            if data is not None:
                problems.append(f"has a {section} section but records no CUDA train")
            report.add("cuda", b.rel, not problems,
                       "; ".join(problems) or "no CUDA train: no device code (method load says so)")
            continue
        if trains is None or train not in trains:
            problems.append(f"train '{train}' is not in share/pteron/cuda_trains.json")
            report.add("cuda", b.rel, False, "; ".join(problems))
            continue
        if data is None:
            report.add("cuda", b.rel, False, f"train {train} but no {section} section")
            continue
        try:
            found = read_fatbin(data)
        except ValueError as e:
            report.add("cuda", b.rel, False, f"malformed fatbin in {section}: {e}")
            continue
        t = trains[train]
        want_sass, want_ptx = {str(a) for a in t["sass"]}, {str(t["ptx"])}
        if found["sass"] - want_sass:
            problems.append(f"SASS {_archs(found['sass'] - want_sass, 'sm_')} beyond train "
                            f"{train}'s list")
        if want_sass - found["sass"]:
            problems.append(f"no SASS for {_archs(want_sass - found['sass'], 'sm_')} of train "
                            f"{train}'s list")
        if found["ptx"] != want_ptx:
            problems.append(f"PTX for {_archs(found['ptx'], 'compute_')}, train {train} wants "
                            f"{_archs(want_ptx, 'compute_')} only")
        if found["ptx_isa"] and found["ptx_isa"] != {t["ptx_isa"]}:
            problems.append(f"PTX ISA {', '.join(sorted(found['ptx_isa']))}, train {train} "
                            f"writes {t['ptx_isa']}")
        cross = ""
        tool = ([cuobjdump] if cuobjdump and b.fmt == "elf" else
                [*wine.split(), cuobjdump_exe] if cuobjdump_exe and b.fmt == "pe" else None)
        if tool:
            try:
                sass, ptx = _cuobjdump_archs(tool, b.path, wine_path=b.fmt == "pe")
                if (sass, ptx) != (found["sass"], found["ptx"]):
                    problems.append(f"cuobjdump lists SASS {_archs(sass, 'sm_')} and PTX "
                                    f"{_archs(ptx, 'compute_')}, the parser read otherwise")
                cross = "; cuobjdump agrees" if b.fmt == "elf" else "; cuobjdump.exe (Wine) agrees"
            except (OSError, ValueError, subprocess.TimeoutExpired) as e:
                problems.append(f"cuobjdump cross-check failed: {e}")
        else:
            cross = "; no cuobjdump given, not cross-checked"
        report.add("cuda", b.rel, not problems, "; ".join(problems) or
                   f"train {train}: SASS {_archs(found['sass'], 'sm_')}, PTX "
                   f"{_archs(found['ptx'], 'compute_')} (ISA {', '.join(sorted(found['ptx_isa']))})"
                   + cross)


def package_root(path, tmp):
    """The folder to check for `path`: itself; for a wheel (.whl) its pteron/ folder, unpacked
    into `tmp`; for an unpacked wheel or a site-packages folder, its pteron/ folder."""
    if os.path.isfile(path) and path.endswith(".whl"):
        import zipfile
        try:
            with zipfile.ZipFile(path) as z:
                z.extractall(tmp)
        except zipfile.BadZipFile as e:
            raise ValueError(f"not a zip file ({e})") from e
        return os.path.join(tmp, "pteron")
    inner = os.path.join(path, "pteron")
    if os.path.isfile(os.path.join(inner, "lib", "cmake", "pteron", "pteron-components.cmake")):
        return inner
    return path


def verify(root, arch=None, cuobjdump=None, cuobjdump_exe=None, wine="wine"):
    """Runs every check on the package at root (a package folder, a wheel or an unpacked
    wheel); returns (Report, facts)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="pteron-verify-") as tmp:
        try:
            inner = package_root(root, tmp)
        except (OSError, ValueError) as e:  # a damaged zip
            report = Report()
            report.add("files", "package", False, f"cannot unpack {root}: {e}")
            return report, {"package": os.path.abspath(root)}
        report, facts = _verify(inner, arch, cuobjdump, cuobjdump_exe, wine)
        facts["package"] = os.path.abspath(root)
        return report, facts


def _verify(root, arch=None, cuobjdump=None, cuobjdump_exe=None, wine="wine"):
    report = Report()
    facts = {"package": os.path.abspath(root)}
    try:
        pkg = Package(root)
    except (PackageError, OSError, ValueError, KeyError) as e:
        report.add("files", "package", False, str(e))
        return report, facts
    if arch is None:
        arch = pkg.conaninfo.get("settings", {}).get("arch", "x86_64")
    arch = ARCH_ALIASES.get(arch.lower(), arch.lower())
    facts.update(format=pkg.fmt.upper(), os=pkg.os, arch=arch,
                 components=list(pkg.components))
    binaries = check_files(pkg, report)
    if arch not in ARCHES:
        report.add("platform", "package", False,
                   f"unknown arch {arch!r} (known: {', '.join(ARCHES)})")
    check_exports(pkg, binaries, report)
    check_single_owner(pkg, binaries, report)
    check_dependencies(pkg, binaries, report)
    if arch in ARCHES:
        check_platform(pkg, arch, binaries, report)
    check_private_helpers(pkg, binaries, report)
    check_cuda(pkg, binaries, report, cuobjdump, cuobjdump_exe, wine)
    check_licenses(pkg, binaries, report)
    order = {c: i for i, c in enumerate(CHECKS)}
    report.rows.sort(key=lambda r: order[r["check"]])  # stable: binaries keep their order
    return report, facts


# Components whose binaries hold pteron_cpu, and with it Eigen's code.
EIGEN_COMPONENTS = ("kernels_optimized", "backend_xnnpack")


def _msvc_built(binaries):
    """A PE package built by MSVC imports the CRT DLLs (vcruntime140*.dll); a MinGW one links
    its runtime statically and imports none of them."""
    return any(_match(n, ("vcruntime140*.dll",), "pe") for b in binaries if b.fmt == "pe"
               for n in b.needed)


def check_licenses(pkg, binaries, report):
    folders = [os.path.join(pkg.root, "licenses"),
               os.path.join(pkg.root, "share", "licenses", "pteron")]
    # A wheel's package folder, unpacked or installed: pteron's own licence files are in the
    # distribution's metadata (pteron-<version>.dist-info/licenses) beside it, once.
    if os.path.basename(os.path.normpath(pkg.root)) == "pteron":
        parent = os.path.dirname(os.path.abspath(pkg.root))
        folders += sorted(glob.glob(os.path.join(glob.escape(parent), "pteron-*.dist-info",
                                                 "licenses")))
    names = set()
    for d in folders:
        if os.path.isdir(d):
            names.update(n for n in os.listdir(d) if os.path.getsize(os.path.join(d, n)) > 0)
    wanted = {"LICENSE": "LICENSE", "flatbuffers": "flatbuffers-"}
    if any(c in pkg.components for c in EIGEN_COMPONENTS):
        wanted["Eigen"] = "eigen-"
    if pkg.fmt == "pe" and not _msvc_built(binaries):
        # MinGW's runtime is linked into the DLLs; MSVC's CRT stays in its own DLLs (/MD).
        wanted["the MinGW-w64 runtime"] = "mingw_w64-"
        wanted["GCC's runtime"] = "gcc-"
    missing = [what for what, prefix in wanted.items()
               if not any(n.startswith(prefix) for n in names)]
    where = " or ".join(os.path.relpath(d, pkg.root) + "/" for d in folders)
    report.add("licenses", "package", not missing,
               f"missing in {where}: {', '.join(missing)}" if missing else
               f"{len(names)} file(s): pteron's license and {', '.join(list(wanted)[1:])}")


# ---- output -----------------------------------------------------------------

def format_table(rows):
    heads = ("check", "binary", "result", "detail")
    widths = [max([len(h)] + [len(r[h]) for r in rows]) for h in heads[:3]]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads[:3], widths)) + "  detail",
             "  ".join("-" * w for w in widths) + "  ------"]
    for r in rows:
        lines.append("  ".join(r[h].ljust(w) for h, w in zip(heads[:3], widths))
                     + "  " + r["detail"])
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="pteron-verify",
        description="Verify the binary layout of an installed pteron package (PE and ELF).")
    ap.add_argument("package", metavar="PACKAGE_DIR",
                    help="Conan package folder, cmake --install prefix, wheel (.whl) or "
                         "unpacked wheel")
    ap.add_argument("--arch", default=None,
                    help="the package's arch (x86_64, x86, armv8/aarch64, armv7); default: "
                         "conaninfo.txt's arch, else x86_64")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--cuobjdump", default=os.environ.get("PTERON_CUDA_CUOBJDUMP") or None,
                    help="cuobjdump (of the package's CUDA train) to cross-check backend_cuda's "
                         "fatbin with (ELF); default: $PTERON_CUDA_CUOBJDUMP")
    ap.add_argument("--cuobjdump-exe", default=os.environ.get("PTERON_CUDA_CUOBJDUMP_EXE") or None,
                    help="the Windows cuobjdump.exe of the train, to cross-check a .dll's fatbin "
                         "with, run through --wine; default: $PTERON_CUDA_CUOBJDUMP_EXE")
    ap.add_argument("--wine", default="wine", help="how to run cuobjdump.exe (default: wine)")
    args = ap.parse_args(argv)
    if not os.path.exists(args.package):
        ap.error(f"{args.package}: no such directory")
    if not os.path.isdir(args.package) and not args.package.endswith(".whl"):
        ap.error(f"{args.package}: not a directory or a wheel (give the package folder)")
    if args.arch is not None and ARCH_ALIASES.get(args.arch.lower(), args.arch.lower()) not in ARCHES:
        ap.error(f"--arch {args.arch!r}: unknown (known: {', '.join(ARCHES)}, "
                 f"{', '.join(ARCH_ALIASES)})")
    missing = [mod for mod, dist in (("elftools", "pyelftools"), ("pefile", "pefile"))
               if importlib.util.find_spec(mod) is None]
    if missing:
        dists = " ".join(d for m, d in (("elftools", "pyelftools"), ("pefile", "pefile"))
                         if m in missing)
        print(f"pteron-verify: this Python lacks {dists}, which reading binaries needs: "
              f"pip install \"pteron[verify]\" (or pip install {dists})", file=sys.stderr)
        return 2

    report, facts = verify(args.package, args.arch, args.cuobjdump, args.cuobjdump_exe, args.wine)
    failures = report.failures
    if args.json:
        out = dict(facts)
        out.update(ok=not failures, results=report.rows,
                   failed=[{"check": r["check"], "binary": r["binary"], "detail": r["detail"]}
                           for r in failures])
        print(json.dumps(out, indent=2))
    else:
        desc = ", ".join(f"{k} {v}" for k, v in facts.items()
                         if k in ("format", "arch") and v)
        print(f"pteron-verify {facts['package']}" + (f" ({desc})" if desc else ""))
        print(format_table(report.rows))
    if failures:
        names = sorted({r["check"] for r in failures}, key=CHECKS.index)
        print(f"pteron-verify: FAILED {len(failures)} check(s) in {', '.join(names)}:",
              file=sys.stderr)
        for r in failures:
            print(f"  {r['check']}: {r['binary']}: {r['detail']}", file=sys.stderr)
        return 1
    if not args.json:
        print(f"pteron-verify: all {len(report.rows)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
