# SPDX-License-Identifier: BSD-3-Clause
"""Header layering and the kernel key: an application sees the C API and
types.h, never the kernel ABI; the one key builder gives "dtype=<n>" for each
dtype the format defines, and kernels_optimized registers with exactly that key."""
import ctypes
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, build_dir


def _compile_c(tmp_path, source, lang="c"):
    src = tmp_path / f"probe.{lang}"
    src.write_text(source)
    cc = "gcc" if lang == "c" else "g++"
    std = "-std=c99" if lang == "c" else "-std=c++17"
    r = subprocess.run([cc, std, "-pedantic", "-Werror", "-fsyntax-only", f"-I{REPO / 'include'}",
                        str(src)], capture_output=True, text=True, timeout=120)
    return r


@pytest.mark.parametrize("lang", ["c", "cpp"])
def test_pteron_h_gives_types_but_not_the_kernel_abi(tmp_path, lang):
    r = _compile_c(tmp_path, """
        #include "pteron/pteron.h"
        #ifdef PTERON_KERNEL_H
        #error pteron.h exposes the kernel ABI
        #endif
        int probe(void) { return PTERON_DTYPE_FLOAT32 + PTERON_ERROR_MISSING_OPERATOR; }
    """, lang)
    assert r.returncode == 0, r.stderr


def test_kernel_abi_is_not_visible_through_pteron_h(tmp_path):
    # Negative control for the test above: using a kernel-ABI name with only
    # pteron.h included must not compile.
    r = _compile_c(tmp_path, """
        #include "pteron/pteron.h"
        int probe(void) { return (int)sizeof(pteron_kernel_registration); }
    """)
    assert r.returncode != 0
    assert "pteron_kernel_registration" in r.stderr


@pytest.mark.parametrize("header", ["types.h", "pteron.h", "kernel.h", "threadpool.h"])
def test_each_public_header_compiles_on_its_own_as_c99(tmp_path, header):
    r = _compile_c(tmp_path, f'#include "pteron/{header}"\nint probe(void) {{ return 0; }}\n')
    assert r.returncode == 0, r.stderr


def _key_fn():
    lib = ctypes.CDLL(str(build_dir() / "libpteron.so"))
    f = lib.pteron_kernel_key_for_dtype
    f.restype = ctypes.c_char_p
    f.argtypes = [ctypes.c_int32]
    return f


def test_kernel_key_is_dtype_and_its_number_for_every_defined_dtype():
    key = _key_fn()
    defined = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
               6: "float32", 7: "float64", 9: "complex64", 10: "complex128", 11: "bool",
               15: "bfloat16"}
    for d in defined:
        assert key(d) == f"dtype={d}".encode(), defined[d]
    for undefined in (-1, 8, 18, 255, 2**31 - 1):  # 8: ComplexHalf, 18: a retired number
        assert key(undefined) is None, undefined


def test_optimized_kernels_register_with_the_runtimes_float32_key():
    # In a child process: a kernel library cannot be unloaded, and kernels_optimized in the
    # pytest process would change what later tests' portable-only runtimes run (its kernels
    # win, its graph passes rewrite).
    import json
    import sys

    child = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import capi; "
        "rt = capi.Runtime(sys.argv[2], kernel_libs=('kernels_portable', 'kernels_optimized')); "
        "print(json.dumps([[k['library'], k['key'], k['name']] for k in rt.kernels()]))")
    r = subprocess.run([sys.executable, "-c", child, str(Path(__file__).resolve().parent),
                        str(build_dir())], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    kernels = json.loads(r.stdout)
    float32_key = _key_fn()(6).decode()
    bool_key = _key_fn()(11).decode()
    optimized = [(key, name) for lib, key, name in kernels if lib == "kernels_optimized"]
    assert optimized, "kernels_optimized registered nothing"
    # float32 kernels, and the two whose first tensor is a bool mask (where's
    # condition, logical_not's input: runtime/kernels/optimized/select.cpp).
    by_key = {}
    for key, name in optimized:
        by_key.setdefault(key, set()).add(name)
    assert set(by_key) == {float32_key, bool_key}, by_key
    assert {n.split(".")[0] for n in by_key[bool_key]} == {"aten::where", "aten::logical_not"}, \
        by_key[bool_key]


def test_dtype_names_spell_the_complex_dtypes_as_pytorch_does():
    lib = ctypes.CDLL(str(build_dir() / "libpteron.so"))
    f = lib.pteron_dtype_name
    f.restype = ctypes.c_char_p
    f.argtypes = [ctypes.c_int32]
    assert f(9) == b"complex64" and f(10) == b"complex128"
    assert f(8) == b"unknown"  # ComplexHalf: not a pteron dtype
