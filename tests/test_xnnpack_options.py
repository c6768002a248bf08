# SPDX-License-Identifier: BSD-3-Clause
"""The XnnpackBackend delegate's settings from its compile specs (backends/xnnpack/src/options.h):
each key is the environment variable's name after PTERON_XNNPACK_, in lower case (fuse,
use_library, profile, debug), and a compile spec wins over the variable.

A delegate blob of a committed program (tests/xnnpack_nodes/nhwc_silu_special.pte: one SiLU that
fuse_elementwise fuses) is cut out of the program (tests/fuzz/seeds.py) and handed to the
backend's init with compile specs through pteron_testing_backend_init (include/pteron/testing.h),
in a child process (its own environment; PTERON_XNNPACK_DEBUG's plan on its stderr).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, build_dir

BUILD = build_dir()
PTE = REPO / "tests" / "xnnpack_nodes" / "nhwc_silu_special.pte"
INVALID_ARGUMENT = 1

CHILD = r"""
import ctypes, json, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {fuzz!r})
import capi
from seeds import delegate_blobs

class Spec(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p),
                ("value_size", ctypes.c_size_t)]

rt = capi.Runtime({build!r}, kernel_libs=["kernels_portable", "threadpool", "backend_xnnpack"])
pte = {pte!r}
program = rt.load_file(pte)
blob = next(delegate_blobs(open(pte, "rb").read(), "XnnpackBackend"))[2]
pairs = [(k.encode(), v.encode()) for k, v in json.loads(sys.argv[1])]
specs = (Spec * max(1, len(pairs)))(*[Spec(k, v, len(v)) for k, v in pairs])
init = rt.lib.pteron_testing_backend_init
init.restype = ctypes.c_int32
init.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                 ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(Spec), ctypes.c_size_t,
                 ctypes.c_char_p, ctypes.c_size_t]
programs = (ctypes.c_void_p * 1)(program.h)
message = ctypes.create_string_buffer(1024)
rc = init(b"XnnpackBackend", programs, 1, blob, len(blob), specs, len(pairs), message, 1024)
print(json.dumps({{"rc": rc, "message": message.value.decode("utf-8", "replace")}}))
"""


def _init(specs, env=None):
    """(rc, message, stderr) of the backend's init on the blob with compile specs `specs`."""
    if not any((BUILD / n).exists()
               for n in ("libpteron_backend_xnnpack.so", "pteron_backend_xnnpack.dll")):
        pytest.skip(f"no backend_xnnpack in {BUILD}")
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PTERON_XNNPACK_")}
    child_env.update(env or {})
    code = CHILD.format(tests=str(REPO / "tests"), fuzz=str(REPO / "tests" / "fuzz"),
                        build=str(BUILD), pte=str(PTE))
    r = subprocess.run([sys.executable, "-c", code, json.dumps(specs)], capture_output=True,
                       text=True, env=child_env, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return res["rc"], res["message"], r.stderr


def test_compile_spec_fuse_switches_the_fusions_and_wins_over_the_environment():
    rc, msg, plan = _init([["debug", "1"]])
    assert rc == 0, msg
    assert "fused (PTERON_XNNPACK_FUSE): 1;" in plan, plan
    rc, msg, plan = _init([["debug", "1"], ["fuse", "0"]])
    assert rc == 0, msg
    assert "fused (PTERON_XNNPACK_FUSE): 0;" in plan, plan
    # The compile spec first, the environment only for what the specs leave unset.
    rc, msg, plan = _init([["debug", "1"], ["fuse", "on"]], env={"PTERON_XNNPACK_FUSE": "0"})
    assert rc == 0, msg
    assert "fused (PTERON_XNNPACK_FUSE): 1;" in plan, plan
    rc, msg, plan = _init([["debug", "yes"]], env={"PTERON_XNNPACK_FUSE": "0"})
    assert "fused (PTERON_XNNPACK_FUSE): 0;" in plan, plan


def test_compile_spec_use_library_names_the_side_and_an_unknown_type_fails_load():
    rc, msg, plan = _init([["debug", "1"], ["use_library", "none"]])
    assert rc == 0, msg
    assert "(compile spec use_library=none" in plan, plan
    rc, msg, _ = _init([["use_library", "Conv2d,Conv3d"]])
    assert rc == INVALID_ARGUMENT, msg
    assert "compile spec use_library='Conv2d,Conv3d': 'Conv3d' is not a node type" in msg, msg
    # The environment's setting is not read when a compile spec gives one.
    rc, msg, _ = _init([["use_library", "none"]], env={"PTERON_XNNPACK_USE_LIBRARY": "Conv3d"})
    assert rc == 0, msg


def test_compile_spec_switch_it_cannot_read_fails_load_naming_it():
    rc, msg, _ = _init([["fuse", "maybe"]])
    assert rc == INVALID_ARGUMENT, msg
    assert "compile spec fuse='maybe': expected 1 or 0" in msg, msg
    # A key that is not the delegate's is left alone.
    rc, msg, _ = _init([["not_a_setting", "x"]])
    assert rc == 0, msg


def test_use_library_reads_blanks_and_case_as_the_switches_do_and_refuses_an_empty_list():
    """none and all in any case, names without surrounding blanks; a list that names nothing,
    or none/all inside a list, fails the load naming the setting (they ran silently)."""
    for text in ("NONE", " none ", "All"):
        rc, msg, _ = _init([["use_library", text]])
        assert rc == 0, (text, msg)
    rc, msg, plan = _init([["debug", "1"], ["use_library", "Conv2d, FullyConnected"]])
    assert rc == 0, msg
    for text, words in ((",", "names no node type"), (" , ", "names no node type"),
                        ("none,Conv2d", "'none' stands alone"),
                        ("conv2d", "'conv2d' is not a node type")):
        rc, msg, _ = _init([["use_library", text]])
        assert rc == INVALID_ARGUMENT and words in msg, (text, msg)
    rc, msg, _ = _init([], env={"PTERON_XNNPACK_USE_LIBRARY": ","})
    assert rc == INVALID_ARGUMENT and "PTERON_XNNPACK_USE_LIBRARY=','" in msg, msg
