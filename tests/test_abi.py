# SPDX-License-Identifier: BSD-3-Clause
"""A component built for a different runtime ABI version is refused when it
registers, with a message naming both versions; nothing of it is registered
and nothing crashes."""
import subprocess
import sys
import textwrap

from conftest import REPO, build_dir


def test_component_with_other_abi_version_is_refused_naming_both(tmp_path):
    so = tmp_path / "libpteron_abi_mismatch.so"
    r = subprocess.run(
        ["g++", "-std=c++17", "-shared", "-fPIC", "-DPTERON_TEST_ABI_VERSION=7u",
         f"-I{REPO / 'include'}", str(REPO / "tests" / "native" / "abi_mismatch.cpp"),
         f"-L{build_dir()}", "-lpteron", "-o", str(so)],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    script = textwrap.dedent(f"""
        import ctypes, os, sys
        sys.path.insert(0, {str(REPO / 'tests')!r})
        import capi
        rt = capi.Runtime({str(build_dir())!r}, kernel_libs=())
        ctypes.CDLL({str(so)!r}, mode=os.RTLD_GLOBAL)
        errs = rt.registration_errors()
        names = [k['name'] for k in rt.kernels()]
        ids = [b['id'] for b in rt.backends()]
        print(rt.lib.pteron_abi_version())
        print(repr(errs)); print(repr(names)); print(repr(ids))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    version, errs, names, ids = r.stdout.strip().splitlines()
    errs, names, ids = eval(errs), eval(names), eval(ids)
    assert len(errs) == 2  # the kernels and the backend
    for e in errs:
        assert "abi_mismatch" in e
        assert f"incompatible ABI version (component: 7, runtime: {version})" in e
    assert "test::abi_probe" not in names
    assert "AbiProbeBackend" not in ids
    # The refusal is also reported on stderr for people reading logs.
    assert "incompatible ABI version" in r.stderr
