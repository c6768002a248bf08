# SPDX-License-Identifier: BSD-3-Clause
"""The Conan Center submission, conan-center/recipes/pteron (docs/packaging.md, "Conan Center").

Its rules, checked here (Conan Center's own hook, conan-io/hooks' conan-center.py, runs on
Conan 1 only and is not on PyPI, nor is the former linter of conan-center-index: both were run
by hand, docs/packaging.md says how):
  - config.yml names this VERSION; conandata.yml gives a url and a sha256 for each version;
  - the recipe ships no sources (no exports, exports_sources, export_sources() or
    set_version()), gets them in source() from conandata.yml, and uses no python_requires;
  - only Conan Center references, pinned, with version ranges only where Conan Center takes
    them; the same defaults for every OS (no per-OS default at import time);
  - checks in validate(), none raised from generate();
  - its component table is cmake/components.json's, less the CUDA components;
  - the repository's conanfile.py imports its helpers rather than copying them.

`conan create` of it runs offline (PTERON_CONAN_CENTER_CREATE=1, scripts/slow.sh: a full build,
about 4 minutes on 2 cores): the release tarball is made by `git archive` of HEAD and served on
127.0.0.1, a copy of the recipe's conandata.yml names it (the committed file is never changed),
and small stand-in recipes of Debian's packages take the place of Conan Center's flatbuffers,
eigen, pthreadpool and xnnpack through the profile's [replace_requires], in a scratch Conan home
(the project's .conan2 and its pteron/0.1.0 are not touched). The package holds no CMake config
files, no pkg-config files and no share/, its components name their third-party requirements,
its link flags hold no absolute path, and its test_package links and runs.
"""
import ast
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO

RECIPE = REPO / "conan-center" / "recipes" / "pteron"
ALL = RECIPE / "all"
VERSION = (REPO / "VERSION").read_text().strip()
CREATE = os.environ.get("PTERON_CONAN_CENTER_CREATE") == "1"

# Conan Center's references, and the version ranges it takes (conan-center-index,
# docs/adding_packages/dependencies.md, "Version Ranges": none of these four is on its list;
# Eigen's range is the form Conan Center's own recipes use for it, onnxruntime's
# eigen/[>=5.0.1 <6] included, so that both Eigen 3.4 and 5 resolve).
CONAN_CENTER = {"flatbuffers", "eigen", "pthreadpool", "xnnpack"}
ALLOWED_RANGES = {"eigen": "[>=3.4.0 <6]"}


def conan_exe():
    exe = Path(sys.executable).parent / "conan"
    return str(exe) if exe.exists() else shutil.which("conan")


def recipe_ast():
    return ast.parse((ALL / "conanfile.py").read_text())


def recipe_class(tree):
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    return cls


def load_recipe_module():
    spec = importlib.util.spec_from_file_location("pteron_cci_test", ALL / "conanfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the recipe's files and rules -------------------------------------------------

def test_layout_is_conan_center_index_s():
    files = sorted(str(p.relative_to(RECIPE)) for p in RECIPE.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and "build" not in p.parts
                   and p.name != "CMakeUserPresets.json")
    assert files == ["all/conandata.yml", "all/conanfile.py", "all/test_package/CMakeLists.txt",
                     "all/test_package/conanfile.py", "all/test_package/test_package.c",
                     "config.yml"], files


def test_config_yml_names_this_version_and_conandata_its_tarball():
    config = yaml.safe_load((RECIPE / "config.yml").read_text())
    assert config["versions"][VERSION] == {"folder": "all"}
    sources = yaml.safe_load((ALL / "conandata.yml").read_text())["sources"]
    assert set(sources) == set(config["versions"])
    for version, source in sources.items():
        assert set(source) == {"url", "sha256"}, source
        assert source["url"] == \
            f"https://github.com/pteron/pteron/archive/refs/tags/v{version}.tar.gz"
        assert re.fullmatch(r"[0-9a-f]{64}", source["sha256"]), source["sha256"]


def test_recipe_ships_no_sources_and_gets_them_in_source():
    tree = recipe_ast()
    cls = recipe_class(tree)
    attrs = {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets
             if isinstance(t, ast.Name)}
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert not attrs & {"exports", "exports_sources", "python_requires", "version"}, attrs
    assert not set(methods) & {"export", "export_sources", "set_version", "config_options"}
    source = ast.unparse(methods["source"])
    assert "get(self, **self.conan_data['sources'][self.version], strip_root=True)" in source
    # Nothing read from outside the recipe's folder: no open(), no load().
    text = (ALL / "conanfile.py").read_text()
    assert "open(" not in text and "load(" not in text and "__file__" not in text
    assert re.search(r'^required_conan_version = ">=2\.\d+"$', text, re.M)


def test_checks_are_in_validate_and_generate_raises_nothing():
    cls = recipe_class(recipe_ast())
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert "validate" in methods
    for name in ("generate", "build", "package", "package_info", "configure", "requirements"):
        raises = [n for n in ast.walk(methods[name]) if isinstance(n, ast.Raise)]
        assert not raises, f"{name}() raises: {ast.unparse(raises[0])}"


def test_requirements_are_conan_center_references_pinned_or_in_allowed_ranges():
    module = load_recipe_module()
    assert set(module.THIRD_PARTY) == CONAN_CENTER
    for name, tp in module.THIRD_PARTY.items():
        ref_name, version = tp["ref"].split("/", 1)
        assert ref_name == name and "@" not in version and "#" not in version, tp["ref"]
        if version.startswith("["):
            assert ALLOWED_RANGES.get(name) == version, tp["ref"]
        else:
            assert re.fullmatch(r"(cci\.)?\d+(\.\d+)*", version), tp["ref"]
        assert tp["component"].startswith(f"{name}::"), tp
    # The tool requirement is the host's flatbuffers; nothing else is required.
    text = (ALL / "conanfile.py").read_text()
    assert re.findall(r'self\.tool_requires\("([^"]+)"\)', text) == ["flatbuffers/<host_version>"]
    assert re.findall(r"self\.requires\(([^)]+)\)", text) == ['THIRD_PARTY[name]["ref"]']


def test_components_are_components_json_less_cuda():
    module = load_recipe_module()
    listing = json.loads((REPO / "cmake" / "components.json").read_text())["components"]
    keys = ("name", "option", "requires", "registration_only", "third_party", "system_libs")
    want = [{k: c[k] for k in keys} for c in listing if c["option"] != "with_cuda"]
    assert [dict(c) for c in module.COMPONENTS] == want
    options = {c["option"] for c in module.COMPONENTS if c["option"]}
    cls = module.PteronConan
    assert set(cls.options) == options | {"xnnpack_library"}
    assert cls.options["xnnpack_library"] == ["none", "conan"]  # never a library found by path
    # Defaults are constants: the same for every OS.
    assert set(cls.default_options) == set(cls.options)


def test_retention_flags_hold_no_path():
    module = load_recipe_module()
    assert module.retention_flags("kernels_portable", "elf", "-lpteron_kernels_portable") == \
        ["-Wl,--push-state,--no-as-needed,-lpteron_kernels_portable,--pop-state"]
    assert module.retention_flags("threadpool", "msvc", None) == ["/INCLUDE:pteron_anchor_threadpool"]
    assert module.retention_flags("threadpool", "mingw", None) == \
        ["-Wl,--undefined=pteron_anchor_threadpool"]
    assert "elf_library=lambda lib: f\"-l{lib}\"" in (ALL / "conanfile.py").read_text()


def test_developer_recipe_imports_the_helpers_rather_than_copying_them():
    text = (REPO / "conanfile.py").read_text()
    assert '"conan-center", "recipes", "pteron", "all", "conanfile.py"' in text
    for helper in ("check_platform", "check_component_requires", "component_cache_variables",
                   "license_cache_variables", "package_licenses", "declare_components"):
        assert f"_cci.{helper}(" in text, helper
    module = load_recipe_module()
    shared = {n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
              and getattr(v, "__module__", None) == module.__name__}
    dev = ast.parse(text)
    defined = {n.name for n in ast.walk(dev) if isinstance(n, ast.FunctionDef)}
    assert not {"_retention_flags", "_linker_family"} & defined
    assert not (shared - {"PteronConan"}) & defined, shared & defined


def test_same_defaults_and_requirements_on_every_os(tmp_path):
    """conan graph info for Linux and Windows: the same option defaults; requirements follow
    the options (no xnnpack unless xnnpack_library=conan)."""
    home = tmp_path / "home"
    home.mkdir()
    profile = tmp_path / "profile"
    nodes = {}
    for os_name, compiler in (("Linux", "compiler=gcc\ncompiler.version=12\n"
                                        "compiler.libcxx=libstdc++11"),
                              ("Windows", "compiler=msvc\ncompiler.version=194\n"
                                          "compiler.runtime=dynamic")):
        profile.write_text(f"[settings]\nos={os_name}\narch=x86_64\n{compiler}\n"
                           "compiler.cppstd=17\nbuild_type=Release\n"
                           "[platform_requires]\nflatbuffers/24.12.23\neigen/3.4.0\n"
                           "pthreadpool/cci.20231129\nxnnpack/cci.20241203\n"
                           "[platform_tool_requires]\nflatbuffers/24.12.23\n")
        for extra in ([], ["-o", "pteron/*:xnnpack_library=conan"]):
            r = subprocess.run([conan_exe(), "graph", "info", str(ALL), "--version", VERSION,
                                "-pr:a", str(profile), "--format=json", *extra],
                               capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, CONAN_HOME=str(home)))
            assert r.returncode == 0, r.stdout + r.stderr
            node = json.loads(r.stdout)["graph"]["nodes"]["0"]
            refs = sorted(str(d["ref"]).split("/")[0] for d in node["dependencies"].values()
                          if not d["build"])
            nodes[(os_name, bool(extra))] = (node["options"], refs)
    assert nodes[("Linux", False)] == nodes[("Windows", False)]
    assert nodes[("Linux", True)] == nodes[("Windows", True)]
    options, refs = nodes[("Linux", False)]
    assert options["xnnpack_library"] == "none"
    assert refs == ["eigen", "flatbuffers", "pthreadpool"]
    assert nodes[("Linux", True)][1] == ["eigen", "flatbuffers", "pthreadpool", "xnnpack"]


@pytest.mark.parametrize("settings,options,expected", [
    ([], ["-o", "pteron/*:with_threadpool=False"],
     "with_xnnpack=True needs with_threadpool=True: component backend_xnnpack requires "
     "component threadpool"),
    (["-s", "compiler.cppstd=14"], [], "Current cppstd (14) is lower than the required"),
    (["-s", "arch=armv8"], [], "x86_64 only"),
])
def test_validate_refuses_with_the_developer_recipe_s_messages(tmp_path, settings, options,
                                                              expected):
    profile = tmp_path / "profile"
    profile.write_text("[settings]\nos=Linux\narch=x86_64\ncompiler=gcc\ncompiler.version=12\n"
                       "compiler.libcxx=libstdc++11\ncompiler.cppstd=17\nbuild_type=Release\n"
                       "[platform_requires]\nflatbuffers/24.12.23\neigen/3.4.0\n"
                       "pthreadpool/cci.20231129\nxnnpack/cci.20241203\n"
                       "[platform_tool_requires]\nflatbuffers/24.12.23\n")
    r = subprocess.run([conan_exe(), "install", str(ALL), "--version", VERSION,
                        "-pr:a", str(profile), *settings, *options],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env=dict(os.environ, CONAN_HOME=str(tmp_path / "home")))
    assert r.returncode != 0
    assert "ConanInvalidConfiguration" in r.stderr or "Invalid" in r.stderr, r.stderr
    assert expected in r.stdout + r.stderr


# ---- conan create, offline, from a local tarball --------------------------------------

def deb_version(package, fallback):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                       text=True)
    v = r.stdout.strip() if r.returncode == 0 else ""
    return v or fallback


def stand_ins():
    """{name: (version, package_type, components)}: Debian's packages, by Conan Center's names
    and component names, versioned as Debian's (cci.<date> for the git snapshots)."""
    def plain(v):
        return v.split("+")[0].split("-")[0]

    def snapshot(v, fallback):
        m = re.search(r"git(\d{8})", v)
        return f"cci.{m.group(1) if m else fallback}"

    return {
        "flatbuffers": (plain(deb_version("libflatbuffers-dev", "2.0.8")), "static-library", []),
        "eigen": (plain(deb_version("libeigen3-dev", "3.4.0")), "header-library", ["eigen3"]),
        "pthreadpool": (snapshot(deb_version("libpthreadpool-dev", ""), "20210507"),
                        "static-library", []),
        "xnnpack": (snapshot(deb_version("libxnnpack-dev", ""), "20220216"), "static-library",
                    ["xnnpack"]),
    }


STAND_IN = '''from conan import ConanFile


class DebianStandIn(ConanFile):
    """Test-only: Debian's {name}, which the build finds by itself (as with a profile's
    [platform_requires]), standing in for Conan Center's {name} in tests/test_conan_center.py."""
    name = "{name}"
    package_type = "{package_type}"

    def package_info(self):
        self.cpp_info.set_property("cmake_find_mode", "none")
        for info in [self.cpp_info] + [self.cpp_info.components[c] for c in {components!r}]:
            info.includedirs = []
            info.libdirs = []
            info.bindirs = []
'''

PROFILE = """{{% set compiler, version, compiler_exe = detect_api.detect_default_compiler() %}}
[settings]
os=Linux
arch=x86_64
compiler=gcc
compiler.version={{{{ detect_api.default_compiler_version(compiler, version) }}}}
compiler.libcxx=libstdc++11
compiler.cppstd=17
build_type=Release
[replace_requires]
{replace}
[conf]
tools.cmake.cmaketoolchain:generator=Ninja
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(folder):
    """python -m http.server on 127.0.0.1, for as long as the block runs."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                             str(port), "--directory", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, "the local tarball server did not start"
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def created(tmp_path_factory):
    """conan create of the submission, offline; returns (graph json, package folder, log)."""
    if not conan_exe():
        pytest.fail("conan is not installed: run scripts/test.sh")
    tmp = tmp_path_factory.mktemp("conan_center")
    home = tmp / "home"
    env = dict(os.environ, CONAN_HOME=str(home))

    def conan(*args, timeout=300):
        r = subprocess.run([conan_exe(), *map(str, args)], capture_output=True, text=True,
                           timeout=timeout, env=env, cwd=tmp)
        assert r.returncode == 0, f"conan {' '.join(map(str, args))}\n{r.stdout}\n{r.stderr}"
        return r

    # The release tarball, as `git archive` makes a tag's: one root folder.
    www = tmp / "www"
    www.mkdir()
    tarball = www / f"pteron-{VERSION}.tar.gz"
    subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar.gz",
                    f"--prefix=pteron-{VERSION}/", "-o", str(tarball), "HEAD"], check=True)
    sha256 = hashlib.sha256(tarball.read_bytes()).hexdigest()
    # A copy of the recipe whose conandata.yml names the local tarball.
    recipe = tmp / "recipe"
    shutil.copytree(RECIPE, recipe, ignore=shutil.ignore_patterns("build", "__pycache__",
                                                                   "CMakeUserPresets.json"))
    data = yaml.safe_load((recipe / "all" / "conandata.yml").read_text())
    # Stand-ins for Conan Center's packages (no remote: Conan Center cannot be reached).
    conan("remote", "remove", "conancenter")
    deps = stand_ins()
    profile = tmp / "profile"
    profile.write_text(PROFILE.format(replace="\n".join(
        f"{name}/*: {name}/{version}" for name, (version, _, _) in deps.items())))
    for name, (version, package_type, components) in deps.items():
        d = tmp / "stand-ins" / name
        d.mkdir(parents=True)
        (d / "conanfile.py").write_text(STAND_IN.format(name=name, package_type=package_type,
                                                        components=components))
        conan("export-pkg", d, "--version", version, "-pr:a", profile)
    start = time.monotonic()
    with serve(www) as url:
        data["sources"][VERSION] = {"url": f"{url}/{tarball.name}", "sha256": sha256}
        (recipe / "all" / "conandata.yml").write_text(yaml.safe_dump(data))
        r = subprocess.run([conan_exe(), "create", str(recipe / "all"), "--version", VERSION,
                            "-pr:a", str(profile), "-o", "pteron/*:xnnpack_library=conan",
                            "--build=missing", "--format=json"],
                           capture_output=True, text=True, timeout=2400, env=env, cwd=tmp)
    log = r.stderr
    (tmp / "create.log").write_text(log)
    assert r.returncode == 0, log[-6000:]
    print(f"conan create of the Conan Center recipe took {time.monotonic() - start:.0f} s")
    graph = json.loads(r.stdout)
    nodes = graph["graph"]["nodes"].values()
    (node,) = [n for n in nodes if str(n.get("ref", "")).startswith(f"pteron/{VERSION}")
               and n.get("package_folder")]
    # What a consumer gets from package_info(): a consumer's install, as JSON.
    r = conan("install", f"--requires=pteron/{VERSION}", "-pr:a", profile,
              "-o", "pteron/*:xnnpack_library=conan", "--format=json",
              "--output-folder", tmp / "consumer")
    consumer = json.loads(r.stdout)
    (info,) = [n for n in consumer["graph"]["nodes"].values()
               if str(n.get("ref", "")).startswith(f"pteron/{VERSION}")]
    return {"package": Path(node["package_folder"]), "log": log, "cpp_info": info["cpp_info"],
            "sha256": sha256}


needs_create = pytest.mark.skipif(
    not CREATE, reason="a full build: set PTERON_CONAN_CENTER_CREATE=1 (scripts/slow.sh does)")


@needs_create
def test_source_came_from_the_tarball_and_test_package_ran(created):
    log = created["log"]
    assert "Calling source()" in log
    assert re.search(rf"Sources correctly downloaded from http://127\.0\.0\.1:\d+/"
                     rf"pteron-{re.escape(VERSION)}\.tar\.gz", log), log[:6000]
    m = re.search(r"pteron \S+: (\d+) kernels, (\d+) from kernels_portable, (\d+) backends", log)
    assert m, log[-4000:]
    assert int(m.group(2)) > 0  # the registration-only library stayed linked (-l<lib> wrapper)
    assert int(m.group(3)) >= 1  # XnnpackBackend


@needs_create
def test_package_holds_no_cmake_pkgconfig_or_share(created):
    pkg = created["package"]
    assert not (pkg / "lib" / "cmake").exists()
    assert not (pkg / "lib" / "pkgconfig").exists()
    assert not (pkg / "share").exists()
    assert {p.name for p in pkg.iterdir()} <= {"include", "lib", "bin", "licenses",
                                               "conaninfo.txt", "conanmanifest.txt"}
    assert (pkg / "licenses" / "LICENSE").read_text() == (REPO / "LICENSE").read_text()
    libs = {p.name for p in (pkg / "lib").glob("libpteron*.so")}
    assert libs == {f"libpteron{s}.so" for s in ("", "_kernels_portable", "_kernels_optimized",
                                                 "_kernels_quantized", "_kernels_llm",
                                                 "_threadpool", "_backend_xnnpack")}, libs


@needs_create
def test_components_name_their_requirements_and_flags_hold_no_path(created):
    cpp = created["cpp_info"]
    requires = {name: set(c.get("requires") or []) for name, c in cpp.items() if name != "root"}
    assert "flatbuffers::flatbuffers" in requires["runtime"]
    assert "eigen::eigen3" in requires["kernels_optimized"]
    assert "eigen::eigen3" in requires["kernels_llm"]
    assert "pthreadpool::pthreadpool" in requires["threadpool"]
    assert {"xnnpack::xnnpack", "eigen::eigen3", "runtime", "threadpool"} <= \
        requires["backend_xnnpack"]
    for name, c in cpp.items():
        for flag in (c.get("exelinkflags") or []) + (c.get("sharedlinkflags") or []):
            assert "/" not in flag, (name, flag)
    assert cpp["kernels_portable"]["exelinkflags"] == \
        ["-Wl,--push-state,--no-as-needed,-lpteron_kernels_portable,--pop-state"]
