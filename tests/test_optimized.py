# SPDX-License-Identifier: BSD-3-Clause
"""kernels_optimized: the fast float32 kernels give the fixtures' eager
outputs, win over kernels_portable in either load order, leave other dtypes
to kernels_portable, agree across ISA levels and thread counts, and keep
every wide instruction inside the objects compiled for it.

Programs: every runnable fixture of models/fixtures (the manifest's
fixtures that use only supported operators and no delegate) plus the small
programs of tests/optimized (shapes, layouts and dtypes the fixtures do not
reach; regenerate with /opt/pteron-dev/bin/python tests/optimized/export.py).

A process holds one runtime with the kernel libraries it loaded (ctypes
cannot unload them, and loading kernels_optimized into the pytest process
would change what every other test runs), so each configuration runs in a
subprocess of this file (`python tests/test_optimized.py --worker`), under a
timeout, which saves the outputs for the test to compare.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from isa_check import wide_instructions  # noqa: E402
from conftest import FIXTURES, build_dir, manifest  # noqa: E402

EXTRA = HERE / "optimized"
TIMEOUT = 600
LEVELS = ["baseline", "avx2", "avx512"]

# What kernels_optimized registers, each for key "dtype=6" (float32).
OPTIMIZED_OPS = {
    ("aten::addmm", "out"), ("aten::mm", "out"), ("aten::bmm", "out"),
    ("aten::linear", "out"), ("aten::convolution", "out"),
    ("aten::add", "out"), ("aten::add", "Scalar_out"), ("aten::sub", "out"),
    ("aten::sub", "Scalar_out"), ("aten::mul", "out"), ("aten::mul", "Scalar_out"),
    ("aten::relu", "out"), ("aten::_softmax", "out"), ("aten::_log_softmax", "out"),
    ("aten::native_layer_norm", "out"), ("aten::permute_copy", "out"),
    ("aten::div", "out"), ("aten::div", "Scalar_out"),
    ("aten::exp", "out"), ("aten::sigmoid", "out"), ("aten::tanh", "out"), ("aten::gelu", "out"),
    ("aten::neg", "out"), ("aten::sqrt", "out"), ("aten::rsqrt", "out"), ("aten::clamp", "out"),
    ("aten::hardtanh", "out"), ("aten::pow", "Tensor_Scalar_out"),
    ("aten::max_pool2d_with_indices", "out"), ("aten::upsample_bilinear2d", "vec_out"),
    ("aten::upsample_nearest2d", "vec_out"),
    ("aten::_native_batch_norm_legit_no_training", "out"), ("aten::native_group_norm", "out"),
    ("aten::mean", "out"),
    ("aten::where", "self_out"), ("aten::logical_not", "out"), ("aten::eq", "Scalar_out"),
}
# Keyed on a bool first tensor (the condition / self) instead of float32.
BOOL_KEYED_OPS = {("aten::where", "self_out"), ("aten::logical_not", "out")}


def _lib_file(component: str) -> str:
    base = "pteron" if component == "runtime" else f"pteron_{component}"
    return f"{base}.dll" if sys.platform == "win32" else f"lib{base}.so"


def _programs():
    """key -> (directory, fixture entry, method) for every program run here."""
    out = {}
    for f in manifest()["fixtures"]:
        if f["uses_only_supported_operators"] and not f["delegates"]:
            for m in f["methods"]:
                out[f"{f['name']}.{m}"] = (FIXTURES, f, m)
    with open(EXTRA / "manifest.json") as fh:
        for f in json.load(fh)["fixtures"]:
            for m in f["methods"]:
                out[f"{f['name']}.{m}"] = (EXTRA, f, m)
    return out


PROGRAMS = _programs()
KEYS = sorted(PROGRAMS)


# ---- the worker: one runtime per process -------------------------------------

def _worker(cfg: dict) -> None:
    import capi

    bdir = Path(cfg["build_dir"])
    rt = capi.Runtime(bdir, kernel_libs=tuple(cfg["libs"]))
    isa = None
    if "kernels_optimized" in cfg["libs"]:
        lib = ctypes.CDLL(str(bdir / _lib_file("kernels_optimized")))
        lib.pteron_kernels_optimized_isa.restype = ctypes.c_char_p
        isa = lib.pteron_kernels_optimized_isa().decode()
    rt.lib.pteron_parallel_threads.restype = ctypes.c_int32
    result = {"isa": isa, "threads": rt.lib.pteron_parallel_threads(),
              "kernels": rt.kernels(), "runs": {}}
    out_dir = Path(cfg["out_dir"])
    for key in cfg["programs"]:
        base, f, method = PROGRAMS[key]
        spec = f["methods"][method]
        try:
            m = rt.load_file(base / f["file"]).load_method(method)
            outs = m.run([np.load(base / p) for p in spec["inputs"]])
        except capi.PteronError as e:
            result["runs"][key] = {"ok": False, "code": e.code, "message": e.message}
            continue
        np.savez(out_dir / f"{key}.npz", *outs)
        result["runs"][key] = {"ok": True}
    print("RESULT " + json.dumps(result))


# ---- running configurations ---------------------------------------------------

_cache: dict = {}


def _run(name: str, libs, env=None, programs=(), tmp_root: Path = None):
    """Runs the worker once per configuration name (cached for the session)."""
    if name in _cache:
        return _cache[name]
    out_dir = tmp_root / name
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = {"build_dir": str(build_dir()), "libs": list(libs), "programs": list(programs),
           "out_dir": str(out_dir)}
    e = {k: v for k, v in os.environ.items() if k not in ("PTERON_ISA", "PTERON_NUM_THREADS")}
    e.update(env or {})
    r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(cfg)],
                       capture_output=True, text=True, timeout=TIMEOUT, env=e)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert r.returncode == 0 and line, f"worker {name} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    res = json.loads(line[len("RESULT "):])
    res["stderr"] = r.stderr
    res["out_dir"] = out_dir

    def outputs(key):
        with np.load(out_dir / f"{key}.npz") as z:
            return [z[f"arr_{i}"] for i in range(len(z.files))]

    res["outputs"] = outputs
    _cache[name] = res
    return res


@pytest.fixture(scope="session")
def tmp_root(tmp_path_factory):
    d = build_dir()
    for c in ("runtime", "kernels_portable", "kernels_optimized"):
        if not (d / _lib_file(c)).exists():
            pytest.fail(f"{d / _lib_file(c)} is missing: build first (scripts/test.sh)")
    return tmp_path_factory.mktemp("optimized")


@pytest.fixture(scope="session")
def default_run(tmp_root):
    return _run("default", ["kernels_portable", "kernels_optimized"], programs=KEYS,
                tmp_root=tmp_root)


@pytest.fixture(scope="session")
def reverse_run(tmp_root):
    return _run("reverse", ["kernels_optimized", "kernels_portable"], programs=KEYS,
                tmp_root=tmp_root)


def _expected(key):
    base, f, method = PROGRAMS[key]
    return [np.load(base / p) for p in f["methods"][method]["expected"]], f["rtol"], f["atol"]


def _assert_matches_expected(res, key):
    run = res["runs"][key]
    assert run["ok"], f"{key}: {run.get('message')}"
    expected, rtol, atol = _expected(key)
    actual = res["outputs"](key)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype, f"{key} output {i}: dtype {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"{key} output {i}: shape {a.shape} != {e.shape}"
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"{key} output {i}")
        else:
            np.testing.assert_array_equal(a, e, err_msg=f"{key} output {i}")


def _cpu_best_level():
    """The level /proc/cpuinfo says this CPU supports (Linux), else None."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    m = re.search(r"^flags\s*:(.*)$", text, re.M)
    if not m:
        return None
    flags = set(m.group(1).split())
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma"} <= flags:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    return "baseline"


# ---- outputs --------------------------------------------------------------------

@pytest.mark.parametrize("key", KEYS)
def test_program_matches_eager_with_optimized_loaded(default_run, key):
    _assert_matches_expected(default_run, key)


@pytest.mark.parametrize("key", KEYS)
def test_program_matches_eager_with_optimized_loaded_first(reverse_run, key):
    _assert_matches_expected(reverse_run, key)


@pytest.mark.parametrize("key", KEYS)
def test_program_matches_eager_on_three_threads(tmp_root, key):
    if not (build_dir() / _lib_file("threadpool")).exists():
        pytest.skip("threadpool component not built")
    res = _run("threads", ["kernels_portable", "kernels_optimized", "threadpool"],
               env={"PTERON_NUM_THREADS": "3"}, programs=KEYS, tmp_root=tmp_root)
    assert res["threads"] == 3
    _assert_matches_expected(res, key)


def test_lower_isa_levels_give_the_same_outputs(tmp_root, default_run):
    best = default_run["isa"]
    lower = LEVELS[: LEVELS.index(best)]
    if not lower:
        pytest.skip(f"this CPU runs the baseline level only")
    for level in lower:
        res = _run(f"isa_{level}", ["kernels_portable", "kernels_optimized"],
                   env={"PTERON_ISA": level}, programs=KEYS, tmp_root=tmp_root)
        assert res["isa"] == level
        for key in KEYS:
            _assert_matches_expected(res, key)
            for i, (a, b) in enumerate(zip(res["outputs"](key), default_run["outputs"](key))):
                # Same operations, another summation order: float32 rounding only.
                np.testing.assert_allclose(a, b, rtol=5e-5, atol=5e-6,
                                           err_msg=f"{key} output {i}: {level} vs {best}")


# ---- registry ---------------------------------------------------------------------

@pytest.mark.parametrize("order", ["default", "reverse"])
def test_optimized_wins_in_both_load_orders(default_run, reverse_run, order):
    res = default_run if order == "default" else reverse_run
    mine = {(k["name"], k["overload"]): k for k in res["kernels"]
            if k["library"] == "kernels_optimized"}
    assert set(mine) == OPTIMIZED_OPS
    for (name, overload), k in mine.items():
        key = "dtype=11" if (name, overload) in BOOL_KEYED_OPS else "dtype=6"
        assert k["key"] == key and k["priority"] == 100 and k["selected"], k
        # kernels_portable still lists its generic kernel for the other dtypes.
        portable = [p for p in res["kernels"] if p["library"] == "kernels_portable"
                    and p["name"] == name and p["overload"] == overload]
        if name != "aten::linear":
            assert len(portable) == 1 and portable[0]["key"] == "" and portable[0]["priority"] == 0


# Programs whose every operator kernels_optimized registers (for float32).
OPTIMIZED_ONLY = ["opt_conv.forward", "opt_conv_nhwc.forward", "opt_conv_transposed.forward",
                  "opt_norm.forward",
                  "opt_linear.forward", "opt_resample.forward", "opt_chnorm.forward"]


@pytest.fixture(scope="session")
def optimized_only_run(tmp_root):
    return _run("optimized_only", ["kernels_optimized"],
                programs=OPTIMIZED_ONLY + ["opt_float64.forward"], tmp_root=tmp_root)


@pytest.mark.parametrize("key", OPTIMIZED_ONLY)
def test_float32_program_runs_on_the_optimized_kernels_alone(optimized_only_run, key):
    """No kernels_portable loaded: the float32 kernels of kernels_optimized
    did all the work."""
    _assert_matches_expected(optimized_only_run, key)


def test_float64_operators_fall_back_to_portable(optimized_only_run, default_run):
    run = optimized_only_run["runs"]["opt_float64.forward"]
    assert not run["ok"] and run["code"] == 4, run  # MISSING_OPERATOR
    for op in ("aten::addmm.out", "aten::convolution.out", "aten::native_layer_norm.out",
               "aten::_softmax.out", "aten::bmm.out", "aten::relu.out", "aten::sigmoid.out",
               "aten::gelu.out", "aten::div.out", "aten::max_pool2d_with_indices.out",
               "aten::upsample_bilinear2d.vec_out",
               "aten::_native_batch_norm_legit_no_training.out"):
        assert op in run["message"], run["message"]
    # With kernels_portable beside it, the float64 program runs and matches.
    _assert_matches_expected(default_run, "opt_float64.forward")


def test_mixed_dtype_operands_promote_like_pytorch(default_run):
    # opt_mixed has its exporter casts removed: add/mul/sub see float32 with
    # int64, float64 and bool operands, and the float32-keyed kernels run.
    _assert_matches_expected(default_run, "opt_mixed.forward")
    dtypes = [a.dtype for a in default_run["outputs"]("opt_mixed.forward")]
    assert dtypes == [np.float32, np.float32, np.float64, np.float32, np.float32]


# ---- ISA dispatch ---------------------------------------------------------------------

def test_default_isa_is_the_widest_the_cpu_supports(default_run):
    expected = _cpu_best_level()
    if expected is None:
        pytest.skip("no /proc/cpuinfo")
    assert default_run["isa"] == expected
    assert default_run["stderr"] == ""  # nothing printed by default


@pytest.mark.parametrize("level", LEVELS)
def test_pteron_isa_only_lowers_the_level(tmp_root, default_run, level):
    best = default_run["isa"]
    res = _run(f"env_{level}", ["kernels_optimized"], env={"PTERON_ISA": level}, tmp_root=tmp_root)
    want = LEVELS[min(LEVELS.index(level), LEVELS.index(best))]
    assert res["isa"] == want


def test_unknown_pteron_isa_is_ignored_with_a_warning(tmp_root, default_run):
    res = _run("env_bogus", ["kernels_optimized"], env={"PTERON_ISA": "sse9"}, tmp_root=tmp_root)
    assert res["isa"] == default_run["isa"]
    assert res["stderr"].count("ignoring PTERON_ISA='sse9'") == 1, res["stderr"]


# ---- ODR: wide code stays in the objects built for it --------------------------------

def _isa_objects():
    d = build_dir() / "runtime" / "kernels" / "optimized" / "CMakeFiles"
    objs = {lvl: d / f"pteron_kernels_optimized_{lvl}.dir" / "isa_kernels.cpp.o" for lvl in LEVELS}
    return {k: v for k, v in objs.items() if v.exists()}


def _need_elf_tool(tool):
    if sys.platform != "linux" or not shutil.which(tool):
        pytest.skip(f"needs Linux binutils ({tool})")


def test_isa_objects_share_no_symbol(default_run):
    _need_elf_tool("nm")
    objs = _isa_objects()
    if len(objs) < 2:
        pytest.skip("only one ISA object in this build")
    defined = {}
    for level, path in objs.items():
        out = subprocess.run(["nm", "-C", "--defined-only", str(path)], capture_output=True,
                             text=True, timeout=60, check=True).stdout
        syms = set()
        for line in out.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in "TWVBDRu" and parts[1] != "":
                if parts[2] != "DW.ref.__gxx_personality_v0":  # data: the personality address
                    syms.add(parts[2])
        defined[level] = syms
        # Every global or weak symbol is the level's table getter or its own Eigen.
        for s in syms:
            assert s.startswith(f"pteron_cpu::isa_ops_{level}()") or f"pteron_eigen_{level}" in s, \
                f"{level} object defines a shareable symbol: {s}"
    levels = list(defined)
    for i, a in enumerate(levels):
        for b in levels[i + 1:]:
            assert not (defined[a] & defined[b]), f"{a} and {b} objects share {defined[a] & defined[b]}"


def test_only_wide_functions_contain_wide_instructions(default_run):
    """Disassembles the library: an AVX (VEX) instruction may appear only in
    a function of the AVX2 or AVX-512 object, an AVX-512 one (zmm or mask
    registers) only in the AVX-512 object. So the baseline code, the
    dispatcher included, runs on any x86-64-v2 CPU."""
    _need_elf_tool("objdump")
    lib = build_dir() / _lib_file("kernels_optimized")
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", str(lib)],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    if "pteron_eigen_" not in out:
        pytest.skip("library is stripped: functions cannot be attributed")
    bad, seen = wide_instructions(out)
    assert not bad, f"wide instructions outside the wide objects: {sorted(bad)[:10]}"
    if len(_isa_objects()) == 3:
        assert seen["avx512"] > 0 and seen["avx2"] > 0  # the check is not vacuous


def test_library_exports_only_its_anchor_and_isa_query():
    _need_elf_tool("nm")
    lib = build_dir() / _lib_file("kernels_optimized")
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert names == {"pteron_anchor_kernels_optimized", "pteron_kernels_optimized_isa"}


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--worker":
    _worker(json.loads(sys.argv[2]))
