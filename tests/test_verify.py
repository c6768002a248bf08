# SPDX-License-Identifier: BSD-3-Clause
"""pteron-verify (python/pteron/verify.py) on real packages, and on packages
broken on purpose: each check must be able to fail, naming itself and the
binary.

The real packages are the ones Conan made (conftest.linux_package and
conftest.mingw_package: `conan build` + `conan export-pkg` in scripts/test.sh).
The broken packages are copies of them with one component replaced by a small
library compiled here (g++), or a file removed, added or renamed."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, build_dir, run

PYTHON_DIR = REPO / "python"
VICTIM = "kernels_portable"  # the component the negative tests replace


def _run(cmd, timeout=120, **kw):
    return run(cmd, timeout=timeout, **kw)


def verify(pkg, *args):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    return _run([sys.executable, "-m", "pteron.verify", pkg, *args], timeout=60, env=env)


def verify_json(pkg, *args):
    r = verify(pkg, "--json", *args)
    try:
        data = json.loads(r.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"pteron-verify --json printed no JSON (rc {r.returncode}):\n"
                    f"{r.stdout}\n{r.stderr}")
    return r, data


def failed(data, check, binary=None):
    return [f for f in data["failed"] if f["check"] == check
            and (binary is None or f["binary"] == binary)]


def components_cmake(pkg):
    values = {}
    for line in (pkg / "lib" / "cmake" / "pteron" / "pteron-components.cmake").read_text().splitlines():
        if line.startswith("set(PTERON_"):
            key, _, val = line[4:-1].partition(" ")
            values[key] = val.strip('"')
    return values


@pytest.fixture(scope="session")
def victim(linux_package):
    v = components_cmake(linux_package)
    return {"location": v[f"PTERON_{VICTIM}_LOCATION"], "soname": v[f"PTERON_{VICTIM}_SONAME"]}


@pytest.fixture
def pkg(linux_package, tmp_path):
    """A private copy of the Linux package to break."""
    p = tmp_path / "pkg"
    shutil.copytree(linux_package, p, symlinks=True)
    return p


FAKE_COMPONENT = r"""
#include <stdint.h>
extern "C" {
#ifdef CALL_RUNTIME_REGISTRY
int32_t pteron_register_kernels(uint32_t, const char*, const void*, uint32_t, int32_t);
#endif
#ifdef PRIVATE_REGISTRY
__attribute__((visibility(PRIVATE_REGISTRY)))
int32_t pteron_register_kernels(uint32_t, const char*, const void*, uint32_t, int32_t) { return 0; }
#endif
__attribute__((visibility("default"))) int pteron_anchor_@NAME@(void) { return 1; }
__attribute__((constructor)) static void registers(void) {
  pteron_register_kernels(0, "@NAME@", 0, 0, 0);
}
}
#ifdef LEAK_FLATBUFFERS
namespace flatbuffers { __attribute__((visibility("default"))) int Verify(int x) { return x + 1; } }
#endif
"""


def build_fake(pkg, victim, tmp_path, *flags, defines=("CALL_RUNTIME_REGISTRY",),
               link_runtime=True, soname=None):
    """Replaces the victim component's file with a small library compiled here.
    The default one is a faithful stand-in: its anchor, the registry imported
    from libpteron, RUNPATH $ORIGIN."""
    src = tmp_path / "fake.cpp"
    src.write_text(FAKE_COMPONENT.replace("@NAME@", VICTIM))
    out = pkg / victim["location"]
    cmd = ["g++", "-shared", "-fPIC", "-fvisibility=hidden", "-o", out, src,
           *[f"-D{d}" for d in defines], f"-Wl,-soname,{soname or victim['soname']}",
           "-Wl,--enable-new-dtags", *flags]
    if link_runtime:
        cmd += [f"-L{pkg / 'lib'}", "-lpteron", "-Wl,-rpath,$ORIGIN"]
    if out.is_symlink() or out.exists():
        out.unlink()
    r = _run(cmd, timeout=60)
    assert r.returncode == 0, r.stderr
    return out


# ---- the real packages ------------------------------------------------------

def test_linux_package_passes_every_check(linux_package):
    r, data = verify_json(linux_package)
    assert data["failed"] == [] and r.returncode == 0, \
        "pteron-verify fails the Linux package:\n" + r.stderr
    checks = {row["check"] for row in data["results"]}
    assert checks == {"files", "exports", "single-owner", "dependencies", "platform",
                      "private-helpers", "cuda", "licenses"}
    binaries = {row["binary"] for row in data["results"]}
    assert "bin/pteron-run" in binaries
    for name in data["components"]:
        assert any(f"pteron_{name}" in b or (name == "runtime" and "libpteron.so" in b)
                   for b in binaries), name


def test_table_output_names_each_check_and_binary(linux_package):
    r = verify(linux_package)
    lines = r.stdout.splitlines()
    assert lines[1].split()[:4] == ["check", "binary", "result", "detail"]
    for check in ("files", "exports", "single-owner", "dependencies", "platform",
                  "private-helpers"):
        assert any(l.startswith(check + " ") for l in lines), check
    assert "lib/libpteron.so." in r.stdout


def test_faithful_stand_in_passes(pkg, victim, tmp_path):
    """The control for the negative tests below: the replacement library they
    break passes when it is not broken, so each failure is the injected fault."""
    build_fake(pkg, victim, tmp_path)
    r, data = verify_json(pkg)
    assert [f for f in data["failed"] if f["binary"] == victim["location"]] == [], r.stderr


def test_not_a_package_fails_naming_it(tmp_path):
    r, data = verify_json(tmp_path)
    assert r.returncode != 0
    assert "pteron-components.cmake is missing" in failed(data, "files")[0]["detail"]


# ---- files ------------------------------------------------------------------

def test_missing_component_file_fails_files(pkg, victim):
    (pkg / victim["location"]).unlink()
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "files", victim["location"])
    assert f"{victim['location']} is missing" in f["detail"]
    assert "files" in r.stderr and victim["location"] in r.stderr


def test_dangling_soname_link_fails_files_naming_it(pkg, victim):
    link = pkg / "lib" / victim["soname"]
    link.unlink()
    link.symlink_to("nowhere")
    r, data = verify_json(pkg)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    details = " ".join(f["detail"] for f in failed(data, "files"))
    assert f"lib/{victim['soname']} is a dangling link (to 'nowhere')" in details


def test_unexpected_binary_fails_files(pkg, linux_package, victim):
    shutil.copy(linux_package / victim["location"], pkg / "lib" / "libpteron_extra.so")
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "files", "lib/libpteron_extra.so")
    assert "unexpected binary" in f["detail"]


def test_component_with_another_soname_fails_files(pkg, victim, tmp_path):
    build_fake(pkg, victim, tmp_path, soname="libpteron_renamed.so.0")
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "files", victim["location"])
    assert "DT_SONAME is 'libpteron_renamed.so.0'" in f["detail"]


# ---- exports and single owner -----------------------------------------------

def test_leaked_third_party_export_fails_exports(pkg, victim, tmp_path):
    build_fake(pkg, victim, tmp_path, defines=("CALL_RUNTIME_REGISTRY", "LEAK_FLATBUFFERS"))
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "exports", victim["location"])
    assert "flatbuffers (1): _ZN11flatbuffers6VerifyEi" in f["detail"]
    assert "exports" in r.stderr


def test_private_copy_of_the_registry_fails_single_owner(pkg, victim, tmp_path):
    """A kernel library with its own (hidden) registry, not linked to the runtime."""
    build_fake(pkg, victim, tmp_path, defines=('PRIVATE_REGISTRY="hidden"',), link_runtime=False)
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "single-owner", victim["location"])
    assert "does not import the registry" in f["detail"]
    assert "libpteron.so" in f["detail"]


def test_exported_registry_copy_fails_single_owner_naming_both(pkg, victim, tmp_path):
    build_fake(pkg, victim, tmp_path, defines=('PRIVATE_REGISTRY="default"',), link_runtime=False)
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "single-owner", victim["location"])
    assert "defines the registry function(s) pteron_register_kernels" in f["detail"]
    assert "pteron_register_kernels (also lib/libpteron.so" in f["detail"]


def test_kernel_library_linking_a_static_copy_of_the_runtime_fails_single_owner(pkg, victim, tmp_path):
    """The kernel library is linked with the runtime's own object files (an
    archive made from the Release build's objects) instead of libpteron.so."""
    # The runtime's folder is components.json's "folder" (runtime/core).
    objdir = build_dir() / "runtime" / "core" / "CMakeFiles" / "pteron_runtime.dir"
    objs = sorted(objdir.rglob("*.o"))
    assert objs, f"no runtime objects under {objdir}"
    archive = tmp_path / "libpteron_static.a"
    r = _run(["ar", "rcs", archive, *objs], timeout=60)
    assert r.returncode == 0, r.stderr
    build_fake(pkg, victim, tmp_path, "-Wl,--whole-archive", archive, "-Wl,--no-whole-archive",
               "-lpthread", "-ldl", link_runtime=False)
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "single-owner", victim["location"])
    assert "defines the registry function(s) pteron_register_kernels" in f["detail"]
    assert "a private copy of the runtime" in f["detail"]
    assert "(also lib/libpteron.so" in f["detail"]
    assert "single-owner" in r.stderr and victim["location"] in r.stderr


# ---- dependencies -----------------------------------------------------------

def test_absolute_runpath_fails_dependencies(pkg, victim, tmp_path):
    build_fake(pkg, victim, tmp_path, "-Wl,-rpath,/home/ci/pteron/build")
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "dependencies", victim["location"])
    assert "RUNPATH entry /home/ci/pteron/build" in f["detail"]
    assert "records a path: /home/ci/pteron/build" in f["detail"]


def test_rpath_instead_of_runpath_fails_dependencies(pkg, victim, tmp_path):
    build_fake(pkg, victim, tmp_path, "-Wl,--disable-new-dtags")
    r, data = verify_json(pkg)
    [f] = failed(data, "dependencies", victim["location"])
    assert "has DT_RPATH $ORIGIN" in f["detail"]


def test_rpath_is_accepted_in_a_conda_environment_only(pkg, victim, tmp_path):
    """conda's relocation writes DT_RPATH: a prefix with conda-meta/ accepts it (the same
    $ORIGIN entries), a plain package does not (the test above)."""
    build_fake(pkg, victim, tmp_path, "-Wl,--disable-new-dtags")
    (pkg / "conda-meta").mkdir()
    r, data = verify_json(pkg)
    rows = [x for x in data["results"] if x["check"] == "dependencies"
            and x["binary"] == victim["location"]]
    assert rows and rows[0]["result"] == "PASS", rows
    assert "RPATH $ORIGIN" in rows[0]["detail"], rows


def test_undeclared_dependency_fails_dependencies(pkg, victim, tmp_path):
    build_fake(pkg, victim, tmp_path, "-Wl,--no-as-needed", "-lz")
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "dependencies", victim["location"])
    assert "undeclared dependency libz.so.1" in f["detail"]
    assert "dependencies" in r.stderr and "libz.so.1" in r.stderr


def test_dependency_on_a_component_not_required_fails(pkg, victim, tmp_path):
    """kernels_portable requires only the runtime in components.json."""
    v = components_cmake(pkg)
    if "threadpool" not in v["PTERON_PACKAGE_COMPONENTS"].split(";"):
        pytest.skip("package built without the threadpool component")
    build_fake(pkg, victim, tmp_path, "-Wl,--no-as-needed", "-lpteron_threadpool")
    r, data = verify_json(pkg)
    [f] = failed(data, "dependencies", victim["location"])
    assert f"component threadpool), which {VICTIM} does not require" in f["detail"]


# ---- platform and private helpers -------------------------------------------

def test_wrong_arch_fails_platform(linux_package):
    r, data = verify_json(linux_package, "--arch", "aarch64")
    assert r.returncode != 0
    rows = failed(data, "platform")
    assert rows and all("EM_X86_64" in f["detail"] and "needs EM_AARCH64" in f["detail"]
                        for f in rows)
    assert {f["binary"] for f in rows} >= {components_cmake(linux_package)
                                           ["PTERON_runtime_LOCATION"], "bin/pteron-run"}
    assert "platform" in r.stderr


def test_cuda_runtime_dependency_outside_backend_cuda_fails_private_helpers(pkg, victim, tmp_path):
    stub = tmp_path / "libcudart.so.12"
    (tmp_path / "stub.c").write_text("int cudaGetDeviceCount(int* n) { *n = 0; return 0; }\n")
    r = _run(["gcc", "-shared", "-fPIC", "-o", stub, tmp_path / "stub.c",
              "-Wl,-soname,libcudart.so.12"], timeout=60)
    assert r.returncode == 0, r.stderr
    build_fake(pkg, victim, tmp_path, "-Wl,--no-as-needed", stub)
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "private-helpers", victim["location"])
    assert "depends on CUDA (libcudart.so.12); only backend_cuda may" in f["detail"]


# ---- the console script: the wheel's pyproject.toml (tests/test_python_package.py) ----------

# ---- MinGW (PE) --------------------------------------------------------------

def test_mingw_package_passes_every_check(mingw_package):
    r, data = verify_json(mingw_package)
    # With the XNNPACK delegate, which links no XNNPACK library there.
    assert "backend_xnnpack" in data["components"], data["components"]
    assert any(row["check"] == "dependencies" and "pteron_backend_xnnpack.dll" in row["binary"]
               and "XNNPACK library: none" in row["detail"] for row in data["results"])
    assert data["format"] == "PE"
    assert data["failed"] == [] and r.returncode == 0, \
        "pteron-verify fails the MinGW package:\n" + r.stderr
    assert any(row["binary"] == "bin/pteron.dll" for row in data["results"])


def _license_names(pkg):
    return sorted(n for d in (pkg / "licenses", pkg / "share" / "licenses" / "pteron")
                  if d.is_dir() for n in os.listdir(d))


def test_packages_hold_the_license_texts_of_the_code_compiled_in(linux_package, mingw_package):
    linux = _license_names(Path(linux_package))
    assert "LICENSE" in linux and "THIRD_PARTY_NOTICES.md" in linux, linux
    assert any(n.startswith("flatbuffers-") for n in linux), linux
    assert any(n.startswith("eigen-") for n in linux), linux
    mingw = _license_names(Path(mingw_package))
    for prefix in ("flatbuffers-", "eigen-", "mingw_w64-", "gcc-"):
        assert any(n.startswith(prefix) for n in mingw), (prefix, mingw)
    # A Conan package keeps them in licenses/ only (Conan Center's layout).
    assert not (Path(linux_package) / "share" / "licenses").exists()


@pytest.mark.parametrize("which", ["linux", "mingw"])
def test_package_without_a_bundled_license_fails_licenses(which, linux_package, mingw_package,
                                                          tmp_path):
    p = tmp_path / "pkg"
    shutil.copytree(linux_package if which == "linux" else mingw_package, p, symlinks=True)
    victim = "mingw_w64-" if which == "mingw" else "eigen-"
    for n in _license_names(p):
        if n.startswith(victim):
            (p / "licenses" / n).unlink()
    r, data = verify_json(p)
    assert r.returncode != 0
    [f] = failed(data, "licenses", "package")
    assert ("the MinGW-w64 runtime" if which == "mingw" else "Eigen") in f["detail"], f


def test_renamed_dll_fails_files(mingw_package, tmp_path):
    p = tmp_path / "pkg"
    shutil.copytree(mingw_package, p, symlinks=True)
    v = components_cmake(p)
    loc = v[f"PTERON_{VICTIM}_LOCATION"]
    (p / loc).rename(p / "bin" / "pteron_kernels_renamed.dll")
    r, data = verify_json(p)
    assert r.returncode != 0
    assert f"{loc} is missing" in failed(data, "files", loc)[0]["detail"]
    [f] = failed(data, "files", "bin/pteron_kernels_renamed.dll")
    assert "unexpected binary" in f["detail"]


def test_dll_under_another_name_fails_files(mingw_package, tmp_path):
    """A DLL copied over another component's file: its export directory still
    names the DLL it was linked as."""
    p = tmp_path / "pkg"
    shutil.copytree(mingw_package, p, symlinks=True)
    v = components_cmake(p)
    loc = v[f"PTERON_{VICTIM}_LOCATION"]
    shutil.copy(p / v["PTERON_runtime_LOCATION"], p / loc)
    r, data = verify_json(p)
    assert r.returncode != 0
    [f] = failed(data, "files", loc)
    assert "export directory names the DLL 'pteron.dll'" in f["detail"]


# ---- the XNNPACK delegate (backend_xnnpack) ------------------------------------
# Debian's XNNPACK is a shared libXNNPACK.so.0 using the system's
# libpthreadpool.so.0 (the same pool pteron_threadpool drives). The delegate may
# depend on both only when components.json declares them as its third_party.

XNNPACK_ENTRY = {"name": "backend_xnnpack", "requires": ["runtime", "threadpool"],
                 "option": "with_xnnpack", "registration_only": True,
                 "third_party": ["xnnpack", "pthreadpool"], "system_libs": {"Linux": ["m"]}}

FAKE_BACKEND = r"""
#include <stdint.h>
extern "C" {
int32_t pteron_register_backend(uint32_t, const char*, const void*, int32_t);
int xnn_initialize(const void*);
void* pthreadpool_create(unsigned long);
__attribute__((visibility("default"))) int pteron_anchor_backend_xnnpack(void) { return 1; }
__attribute__((constructor)) static void registers(void) {
  if (xnn_initialize(0) == 0 && pthreadpool_create(1)) pteron_register_backend(0, "XnnpackBackend", 0, 0);
}
#ifdef LEAK_XNNPACK
__attribute__((visibility("default"))) int xnn_define_fake(int x) { return x; }
#endif
}
"""


def add_backend_xnnpack(pkg, tmp_path, entry=XNNPACK_ENTRY, defines=(),
                        pool=("-l:libpthreadpool.so.0",)):
    """Adds a backend_xnnpack component to a copied Linux package: a library
    linked against Debian's libXNNPACK.so.0 and libpthreadpool.so.0, its
    entry in components.json and in pteron-components.cmake."""
    for so in ("libXNNPACK.so.0", "libpthreadpool.so.0"):
        if not Path("/usr/lib/x86_64-linux-gnu", so).exists():
            pytest.fail(f"{so} is missing: Debian's libxnnpack-dev / libpthreadpool-dev "
                        "(scripts/setup.sh installs them)")
    loc, soname = "lib/libpteron_backend_xnnpack.so.0.1.0", "libpteron_backend_xnnpack.so.0.1"
    # A package made with with_xnnpack=True has the real one: the stand-in replaces it.
    for name in (Path(loc).name, soname, "libpteron_backend_xnnpack.so"):
        if os.path.lexists(pkg / "lib" / name):
            os.unlink(pkg / "lib" / name)
    src = tmp_path / "backend.cpp"
    src.write_text(FAKE_BACKEND)
    r = _run(["g++", "-shared", "-fPIC", "-fvisibility=hidden", "-o", pkg / loc, src,
              *[f"-D{d}" for d in defines], f"-Wl,-soname,{soname}", "-Wl,--enable-new-dtags",
              f"-L{pkg / 'lib'}", "-lpteron", "-Wl,--no-as-needed", "-l:libXNNPACK.so.0",
              *pool, "-Wl,-rpath,$ORIGIN"], timeout=60)
    assert r.returncode == 0, r.stderr
    os.symlink(Path(loc).name, pkg / "lib" / soname)
    os.symlink(soname, pkg / "lib" / "libpteron_backend_xnnpack.so")
    info = pkg / "conaninfo.txt"
    if info.exists():  # the package was made with the option on
        os.chmod(info, 0o644)
        info.write_text(info.read_text().replace("with_xnnpack=False", "with_xnnpack=True"))
    listing = pkg / "share" / "pteron" / "components.json"
    data = json.loads(listing.read_text())
    data["components"] = [c for c in data["components"] if c["name"] != "backend_xnnpack"]
    data["components"].append(entry)
    os.chmod(listing, 0o644)
    listing.write_text(json.dumps(data))
    cm = pkg / "lib" / "cmake" / "pteron" / "pteron-components.cmake"
    text = cm.read_text()
    old = next(l for l in text.splitlines() if l.startswith("set(PTERON_PACKAGE_COMPONENTS"))
    if ";backend_xnnpack" not in old:
        text = text.replace(old, old[:-1] + ";backend_xnnpack)")
    text += (f'set(PTERON_backend_xnnpack_LOCATION "{loc}")\nset(PTERON_backend_xnnpack_IMPLIB "")\n'
             f'set(PTERON_backend_xnnpack_SONAME "{soname}")\n')
    os.chmod(cm, 0o644)
    cm.write_text(text)
    return loc


def test_real_backend_xnnpack_imports_registry_and_pool_from_their_owners(linux_package):
    """The package's own backend_xnnpack (the Linux profiles turn it on)."""
    r, data = verify_json(linux_package)
    assert "backend_xnnpack" in data["components"], data["components"]
    assert data["failed"] == [], r.stderr
    loc = next(row["binary"] for row in data["results"]
               if row["binary"].startswith("lib/libpteron_backend_xnnpack.so"))
    [dep] = [row for row in data["results"] if row["check"] == "dependencies" and row["binary"] == loc]
    assert "libXNNPACK.so.0 (third-party xnnpack)" in dep["detail"]
    assert "libpteron_threadpool.so" in dep["detail"] and "(pteron threadpool)" in dep["detail"]
    assert "pthreadpool.so" not in dep["detail"].replace("libpteron_threadpool", "")
    [own] = [row for row in data["results"] if row["check"] == "single-owner" and row["binary"] == loc]
    assert "imports pteron_register_backend from libpteron.so" in own["detail"]


def _state_xnnpack_library(pkg, value):
    cm = pkg / "lib" / "cmake" / "pteron" / "pteron-components.cmake"
    text = "\n".join(l for l in cm.read_text().splitlines()
                     if not l.startswith("set(PTERON_backend_xnnpack_XNNPACK_LIBRARY"))
    cm.write_text(text + f'\nset(PTERON_backend_xnnpack_XNNPACK_LIBRARY "{value}")\n')


def test_backend_xnnpack_using_xnnpack_where_the_package_states_none_fails(pkg, tmp_path):
    loc = add_backend_xnnpack(pkg, tmp_path)
    _state_xnnpack_library(pkg, "none")
    r, data = verify_json(pkg)
    assert r.returncode == 1
    [dep] = [row for row in data["results"] if row["check"] == "dependencies" and row["binary"] == loc]
    assert dep["result"] == "FAIL"
    assert "libXNNPACK.so.0" in dep["detail"] and "states it links no XNNPACK library" in dep["detail"]


def test_backend_xnnpack_linking_the_xnnpack_library_it_states_passes(pkg, tmp_path):
    loc = add_backend_xnnpack(pkg, tmp_path)
    _state_xnnpack_library(pkg, "libXNNPACK.so")
    r, data = verify_json(pkg)
    [dep] = [row for row in data["results"] if row["check"] == "dependencies" and row["binary"] == loc]
    assert dep["result"] == "PASS", dep
    assert "XNNPACK library: libXNNPACK.so" in dep["detail"]


def test_backend_xnnpack_with_declared_xnnpack_and_pthreadpool_passes(pkg, tmp_path):
    loc = add_backend_xnnpack(pkg, tmp_path)
    r, data = verify_json(pkg)
    assert "backend_xnnpack" in data["components"]
    assert data["failed"] == [], r.stderr
    [dep] = [row for row in data["results"] if row["check"] == "dependencies" and row["binary"] == loc]
    assert "libXNNPACK.so.0 (third-party xnnpack)" in dep["detail"]
    assert "libpthreadpool.so.0 (third-party pthreadpool)" in dep["detail"]
    [own] = [row for row in data["results"] if row["check"] == "single-owner" and row["binary"] == loc]
    assert "imports pteron_register_backend from libpteron.so" in own["detail"]
    # The threadpool component is pteron's std::thread pool by default (no
    # pthreadpool of its own), so the delegate's pthreadpool (XNNPACK's) is
    # not shared with it; with PTERON_THREADPOOL_IMPL=pthreadpool it would be.
    pool_links_pthreadpool = any(
        "libpthreadpool" in row["detail"] for row in data["results"]
        if row["check"] == "dependencies" and "threadpool" in row["binary"])
    shares = "shares libpthreadpool.so.0 with the threadpool component" in own["detail"]
    assert shares == pool_links_pthreadpool, own["detail"]


def test_backend_xnnpack_with_undeclared_xnnpack_fails_dependencies(pkg, tmp_path):
    entry = dict(XNNPACK_ENTRY, third_party=["pthreadpool"])
    loc = add_backend_xnnpack(pkg, tmp_path, entry=entry)
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "dependencies", loc)
    assert "undeclared dependency libXNNPACK.so.0" in f["detail"]


def test_backend_xnnpack_leaking_xnnpack_symbols_fails_exports(pkg, tmp_path):
    loc = add_backend_xnnpack(pkg, tmp_path, defines=("LEAK_XNNPACK",))
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "exports", loc)
    assert "XNNPACK (1): xnn_define_fake" in f["detail"]


FAKE_STATIC_POOL = r"""
#include <stdint.h>
extern "C" {
int32_t pteron_set_parallel_backend(uint32_t, const void*, void*);
__attribute__((visibility("default"))) int pteron_anchor_threadpool(void) { return 1; }
__attribute__((visibility("default"))) void* pthreadpool_create(unsigned long n) { return (void*)n; }
__attribute__((visibility("default"))) void pthreadpool_destroy(void*) {}
__attribute__((constructor)) static void installs(void) { pteron_set_parallel_backend(0, 0, 0); }
}
"""


def static_pool_threadpool(pkg, tmp_path):
    """Replaces the threadpool component with one that carries pthreadpool
    statically and exports its API, as a Conan Center build does."""
    v = components_cmake(pkg)
    if "threadpool" not in v["PTERON_PACKAGE_COMPONENTS"].split(";"):
        pytest.fail("the Linux package has no threadpool component (with_threadpool is on by default)")
    loc = v["PTERON_threadpool_LOCATION"]
    src = tmp_path / "pool.cpp"
    src.write_text(FAKE_STATIC_POOL)
    (pkg / loc).unlink()
    r = _run(["g++", "-shared", "-fPIC", "-fvisibility=hidden", "-o", pkg / loc, src,
              f"-Wl,-soname,{v['PTERON_threadpool_SONAME']}", "-Wl,--enable-new-dtags",
              f"-L{pkg / 'lib'}", "-lpteron", "-Wl,-rpath,$ORIGIN"], timeout=60)
    assert r.returncode == 0, r.stderr
    return loc


def test_backend_xnnpack_sharing_the_threadpool_components_static_pool_passes(pkg, tmp_path):
    tp = static_pool_threadpool(pkg, tmp_path)
    loc = add_backend_xnnpack(pkg, tmp_path, pool=("-lpteron_threadpool",))
    r, data = verify_json(pkg)
    assert data["failed"] == [], r.stderr
    [ex] = [row for row in data["results"] if row["check"] == "exports" and row["binary"] == tp]
    assert "exports the pthreadpool API (2 symbols) of its static pthreadpool" in ex["detail"]
    [own] = [row for row in data["results"] if row["check"] == "single-owner" and row["binary"] == loc]
    assert "shares the pool of libpteron_threadpool.so" in own["detail"]


def test_backend_xnnpack_with_a_second_pthreadpool_fails_single_owner(pkg, tmp_path):
    """The threadpool component owns a static pthreadpool; the delegate uses
    Debian's shared one: two pools in one process."""
    tp = static_pool_threadpool(pkg, tmp_path)
    loc = add_backend_xnnpack(pkg, tmp_path)
    r, data = verify_json(pkg)
    assert r.returncode != 0
    [f] = failed(data, "single-owner", loc)
    assert f"uses pthreadpool from libpthreadpool.so.0, but {tp} owns the process's pool" in f["detail"]
    assert "two pools" in f["detail"]


# ---- usage errors (exit 2) are told apart from package findings (exit 1) ----

def test_usage_errors_exit_2_naming_the_problem(linux_package, tmp_path):
    r = verify(tmp_path / "absent")
    assert r.returncode == 2 and "no such directory" in r.stderr
    f = tmp_path / "a_file"
    f.write_text("x")
    r = verify(f)
    assert r.returncode == 2 and "not a directory" in r.stderr
    r = verify(linux_package, "--arch", "bogus")
    assert r.returncode == 2 and "--arch 'bogus'" in r.stderr and "x86_64" in r.stderr


def test_missing_binary_readers_are_a_tool_error_not_a_broken_package(linux_package):
    # -S: no site-packages, so neither pyelftools nor pefile can be imported.
    code = ("import sys; sys.path.insert(0, %r); from pteron.verify import main; "
            "sys.exit(main([%r]))" % (str(PYTHON_DIR), str(linux_package)))
    r = _run([sys.executable, "-S", "-c", code], timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "pyelftools" in r.stderr and "pip install" in r.stderr
    assert "unreadable" not in r.stdout


def test_a_directory_in_place_of_a_component_is_named_as_such(linux_package, tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(linux_package, pkg, symlinks=True)
    libs = sorted((pkg / "lib").glob("libpteron_kernels_portable.so*"))
    real = [p for p in libs if not p.is_symlink()]
    assert real, libs
    real[0].unlink()
    real[0].mkdir()
    r, data = verify_json(pkg)
    assert r.returncode == 1
    assert any("is not a regular file" in f["detail"] for f in failed(data, "files")), data["failed"]


@pytest.mark.parametrize("build_type", ["Release", "Debug"])
def test_debug_crt_import_fails_dependencies_unless_the_package_is_debug(msvc_package, tmp_path,
                                                                         build_type):
    """Microsoft's debug CRT (here ucrtbased.dll, written over pteron.dll's import of
    api-ms-win-crt-runtime-l1-1-0.dll) is not redistributable: a Release package (or a wheel,
    which has no conaninfo) that imports it fails; a Debug package may."""
    p = tmp_path / "pkg"
    shutil.copytree(msvc_package, p, symlinks=True)
    dll = p / "bin" / "pteron.dll"
    data = dll.read_bytes()
    old = b"api-ms-win-crt-runtime-l1-1-0.dll\0"
    assert data.count(old) == 1, "pteron.dll does not import the UCRT's runtime set"
    dll.write_bytes(data.replace(old, b"ucrtbased.dll".ljust(len(old), b"\0")))
    info = p / "conaninfo.txt"
    info.write_text(re.sub(r"^build_type=\w+$", f"build_type={build_type}", info.read_text(),
                           flags=re.M))
    r, data = verify_json(p)
    hits = [f for f in failed(data, "dependencies", "bin/pteron.dll")
            if "ucrtbased.dll" in f["detail"] and "debug CRT" in f["detail"]]
    if build_type == "Release":
        assert r.returncode != 0 and hits, data["failed"]
    else:
        assert not hits, hits
