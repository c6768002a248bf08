# SPDX-License-Identifier: BSD-3-Clause
"""pteron-run and the dtypes numpy lacks or half-supports (tools/pteron_run.cpp, tools/npy.cpp):

- bfloat16 input from a float32 .npy (rounded to nearest even), or from ml_dtypes' bfloat16
  .npy, which np.save writes with descr '<V2' ('|V2' accepted too);
- bfloat16 output written as float32 (exactly), its summary line computed from the values;
- float16 output written as numpy's float16, its summary line computed from the values (it
  printed min 0 max 0 mean 0 before);
- a float32 file for a float16 input is still a named dtype error (only bfloat16, which numpy
  cannot hold, is converted).
The programs are the per-operator ones of tests/ops (mul_out, methods bf16_scalar and
f16_scalar: x * a scalar, one input, one output).
"""
import io
import re

import numpy as np
import pytest

from conftest import REPO, assert_matches, run

HALF = REPO / "tests" / "ops" / "programs" / "half"
PROGRAM = HALF / "mul_out.pte"


def widen_bf16(bits):
    """bfloat16 stored as its uint16 bits (tests/ops' files) as float32, exactly."""
    assert bits.dtype == np.uint16, bits.dtype
    return (bits.astype(np.uint32) << 16).view(np.float32)


def npy_with_descr(path, bits, descr):
    """A .npy of 2-byte elements with the given descr, as np.save writes ml_dtypes' bfloat16."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": False, "shape": bits.shape})
    path.write_bytes(buf.getvalue() + bits.astype("<u2").tobytes())
    return path


def summary(stdout, index=0):
    m = re.search(rf"^output {index}: (\w+) \[([\d, ]*)\] min (\S+) max (\S+) mean (\S+)(.*)$",
                  stdout, re.M)
    assert m, stdout
    return m.group(1), float(m.group(3)), float(m.group(4)), float(m.group(5)), m.group(6)


def check_summary(stdout, dtype, values, note=""):
    name, mn, mx, mean, rest = summary(stdout)
    assert name == dtype, stdout
    v = values.astype(np.float64)
    for got, want in ((mn, v.min()), (mx, v.max()), (mean, v.mean())):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), (stdout, v.min(), v.max(), v.mean())
    assert rest.strip() == note, stdout


def run_mul(pteron_run, method, input_file, out_dir):
    return run([pteron_run, PROGRAM, "--method", method, "--input", input_file,
                "--output-dir", out_dir], timeout=60)


@pytest.mark.parametrize("form", ["float32", "<V2", "|V2"])
def test_bfloat16_input_from_float32_or_ml_dtypes_and_output_as_float32(pteron_run, tmp_path,
                                                                       form):
    bits = np.load(HALF / "mul_out.bf16_scalar.input_0.npy")
    expected = widen_bf16(np.load(HALF / "mul_out.bf16_scalar.expected_0.npy"))
    if form == "float32":
        # exact bfloat16 values as float32: rounding them gives the same bits back
        inp = tmp_path / "x.npy"
        np.save(inp, widen_bf16(bits))
    else:
        inp = npy_with_descr(tmp_path / "x.npy", bits, form)
    out = tmp_path / "out"
    r = run_mul(pteron_run, "bf16_scalar", inp, out)
    assert r.returncode == 0, r.stderr
    got = np.load(out / "output_0.npy")
    assert got.dtype == np.float32, got.dtype
    assert_matches(got, expected, 0, 0, "bfloat16 output written as float32")
    check_summary(r.stdout, "bfloat16", expected, "(written as float32)")


def test_bfloat16_input_from_float32_rounds_to_nearest_even(pteron_run, tmp_path):
    """Values between two bfloat16 neighbours: the result is that of the rounded input."""
    bits = np.load(HALF / "mul_out.bf16_scalar.input_0.npy")
    exact = widen_bf16(bits)
    # a quarter of the way to the next bfloat16 (rounds down) on every element
    nudged = ((exact.view(np.uint32) + np.uint32(0x4000)).view(np.float32))
    inp = tmp_path / "x.npy"
    np.save(inp, nudged)
    r = run_mul(pteron_run, "bf16_scalar", inp, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    expected = widen_bf16(np.load(HALF / "mul_out.bf16_scalar.expected_0.npy"))
    assert_matches(np.load(tmp_path / "out" / "output_0.npy"), expected, 0, 0,
                   "nudged float32 input rounded to the same bfloat16")


def test_float16_output_is_float16_and_its_summary_is_right(pteron_run, tmp_path):
    inp = HALF / "mul_out.f16_scalar.input_0.npy"
    expected = np.load(HALF / "mul_out.f16_scalar.expected_0.npy")
    assert expected.dtype == np.float16 and np.abs(expected).max() > 0
    r = run_mul(pteron_run, "f16_scalar", inp, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "output_0.npy")
    assert_matches(got, expected, 1e-3, 1e-3, "float16 output")
    check_summary(r.stdout, "float16", got)


def test_float32_file_for_a_float16_input_is_a_named_dtype_error(pteron_run, tmp_path):
    inp = tmp_path / "x.npy"
    np.save(inp, np.load(HALF / "mul_out.f16_scalar.input_0.npy").astype(np.float32))
    r = run_mul(pteron_run, "f16_scalar", inp, tmp_path / "out")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "float16" in r.stderr and "float32" in r.stderr, r.stderr


@pytest.mark.parametrize("batch,flag,count", [(4, "True", 12), (1, "False", 3)])
def test_scalar_outputs_print_with_their_types(pteron_run, tmp_path, batch, flag, count):
    """A program whose outputs are a Bool and an Int value (symbolic sizes;
    models/export_scalar_outputs.py): pteron-run names each scalar's type."""
    x = tmp_path / "x.npy"
    np.save(x, np.ones((batch, 3), np.float32))
    r = run([pteron_run, REPO / "models" / "fixtures" / "scalars" / "scalar_outputs.pte",
             "--input", x], timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert f"output 1: bool {flag}" in lines, r.stdout
    assert f"output 2: int {count}" in lines, r.stdout
