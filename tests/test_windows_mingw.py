# SPDX-License-Identifier: BSD-3-Clause
"""Windows DLLs (MinGW-w64 cross build) of the MinGW package Conan made
(PTERON_MINGW_PACKAGE), checked as PE files and run under Wine: import and
export tables, pteron-run.exe on fixtures beside its DLLs, and the ABI refusal.
The consumer scenarios (CMakeDeps and CMake config consumers, relocation, load
check per DLL, retention, registry, missing delegate, mixed configuration, clean
exits) are in tests/test_scenarios.py, for Linux and Wine alike.
"""
import re
import shutil

import numpy as np
import pytest

from conftest import (FIXTURES, MINGW_CXX, REPO, manifest, package_components, run,
                      wine_run, winpath)

OBJDUMP = "x86_64-w64-mingw32-objdump"
WINE = shutil.which("wine")

pytestmark = pytest.mark.skipif(
    not (shutil.which(MINGW_CXX) and WINE),
    reason=f"{MINGW_CXX} and wine are needed (Debian: mingw-w64 wine64; scripts/test.sh installs them)")

# What a pteron binary may import besides other pteron DLLs: Windows itself.
# libstdc++-6.dll, libgcc_s_seh-1.dll and libwinpthread-1.dll are linked
# statically (README, "Windows (MinGW) runtime DLLs").
SYSTEM_DLLS = re.compile(r"^(kernel32|kernelbase|ntdll|msvcrt|ucrtbase|user32|advapi32|shell32|ole32|"
                         r"oleaut32|ws2_32|bcrypt|api-ms-win-.*|ext-ms-win-.*)\.dll$", re.I)


def imports(binary):
    r = run([OBJDUMP, "-p", binary], timeout=60)
    assert r.returncode == 0, r.stderr
    return [l.split("DLL Name:")[1].strip() for l in r.stdout.splitlines() if "DLL Name:" in l]


def exports(binary):
    r = run([OBJDUMP, "-p", binary], timeout=60)
    assert r.returncode == 0, r.stderr
    names, inside = [], False
    for line in r.stdout.splitlines():
        if "[Ordinal/Name Pointer] Table" in line:
            inside = True
            continue
        if inside:
            m = re.match(r"\s+\[\s*\d+\]\s+(\S+)", line)
            if not m:
                break
            names.append(m.group(1))
    return names


def dll_name(component):
    return "pteron.dll" if component == "runtime" else f"pteron_{component}.dll"


# ---- the package: the one Conan made (conftest.mingw_package) ------------------

@pytest.fixture(scope="session")
def prefix(mingw_package):
    return mingw_package


# ---- the binaries themselves -------------------------------------------------

def test_mingw_binaries_import_only_windows_and_pteron_dlls(prefix):
    binaries = sorted((prefix / "bin").glob("*.dll")) + [prefix / "bin" / "pteron-run.exe"]
    assert {dll_name(c) for c in package_components(prefix)} <= {b.name for b in binaries}
    for b in binaries:
        deps = imports(b)
        others = [d for d in deps if not SYSTEM_DLLS.match(d) and not re.match(r"^pteron.*\.dll$", d)]
        assert others == [], f"{b.name} imports {others}; only Windows and pteron DLLs are allowed"
        if b.name != "pteron.dll":  # one registry: every component imports the runtime DLL
            assert "pteron.dll" in deps, (b.name, deps)


def test_mingw_dlls_export_only_the_pteron_api(prefix):
    for c in package_components(prefix):
        names = exports(prefix / "bin" / dll_name(c))
        assert f"pteron_anchor_{c}" in names, (c, names)
        leaked = [n for n in names if not n.startswith("pteron_")]
        assert leaked == [], f"{dll_name(c)} exports {leaked[:20]}"
    runtime_api = exports(prefix / "bin" / "pteron.dll")
    for fn in ("pteron_program_load_file", "pteron_register_kernels", "pteron_registration_error"):
        assert fn in runtime_api


# ---- pteron-run.exe ------------------------------------------------------------

@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_pteron_run_exe_runs_fixtures_beside_its_dlls(prefix, wine_env, tmp_path, name):
    spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
    m = spec["methods"]["forward"]
    args = [winpath(FIXTURES / spec["file"])]
    for p in m["inputs"]:
        args += ["--input", winpath(FIXTURES / p)]
    out = tmp_path / "out"
    out.mkdir()
    r = wine_run(wine_env, prefix / "bin" / "pteron-run.exe", *args, "--output-dir", winpath(out),
                 cwd=tmp_path)
    assert r.returncode == 0, str(r)
    for i, exp in enumerate(m["expected"]):
        want = np.load(FIXTURES / exp)
        got = np.load(out / f"output_{i}.npy")
        assert got.dtype == want.dtype and got.shape == want.shape, (i, got.dtype, got.shape)
        if np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(got, want, rtol=spec["rtol"], atol=spec["atol"])
        else:
            np.testing.assert_array_equal(got, want)


# ---- consumer scenarios --------------------------------------------------------


# ---- ABI version, load check, clean exit --------------------------------------

def test_component_with_other_abi_version_is_refused_naming_both(prefix, win_loader, wine_env, tmp_path):
    d = tmp_path / "app"
    d.mkdir()
    dll = d / "pteron_abi_mismatch.dll"
    # The import library by path: -static would not look for libpteron.dll.a.
    r = run([MINGW_CXX, "-std=c++17", "-shared", "-static", "-DPTERON_TEST_ABI_VERSION=7u",
              f"-I{prefix / 'include'}", REPO / "tests" / "native" / "abi_mismatch.cpp",
              prefix / "lib" / "libpteron.dll.a", "-o", dll], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "pteron.dll" in imports(dll)
    shutil.copy2(prefix / "bin" / "pteron.dll", d)
    r = wine_run(wine_env, win_loader, "--registry", winpath(dll), cwd=tmp_path)
    assert r.returncode == 0, str(r)
    version = re.search(r"^abi version: (\d+)$", r.stdout, re.M).group(1)
    assert version != "7"
    assert "registration errors: 2" in r.stdout, str(r)  # the kernels and the backend
    errs = [l for l in r.stdout.splitlines() if l.startswith("registration error: ")]
    assert len(errs) == 2
    for e in errs:
        assert "abi_mismatch" in e
        assert f"incompatible ABI version (component: 7, runtime: {version})" in e
    assert "incompatible ABI version" in r.stderr  # also reported for people reading logs
