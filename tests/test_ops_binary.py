# SPDX-License-Identifier: BSD-3-Clause
"""What the binary group's per-operator programs (tests/ops/cases/binary.py)
prove beyond parity with eager: an integer division by zero, which eager
PyTorch refuses with ZeroDivisionError, is an error status naming the
operator, never a crash; and the same program runs with nonzero divisors."""
import json

import numpy as np
import pytest

import capi
from conftest import REPO

FOLDER = REPO / "tests" / "ops" / "programs" / "binary"


def _entry(name):
    entries = json.loads((FOLDER / "manifest.json").read_text())["fixtures"]
    return next(e for e in entries if e["name"] == name)


@pytest.mark.parametrize("name,operator", [
    ("floor_divide_out", "aten::floor_divide.out"),
    ("fmod_tensor_out", "aten::fmod.Tensor_out"),
    ("remainder_tensor_out", "aten::remainder.Tensor_out"),
])
def test_integer_division_by_zero_fails_naming_the_operator(runtime, name, operator):
    entry = _entry(name)
    m = entry["methods"]["i32_signs"]
    inputs = [np.load(FOLDER / f) for f in m["inputs"]]
    method = runtime.load_file(FOLDER / entry["file"]).load_method("i32_signs")
    # nonzero divisors: runs (the control of the failure below)
    method.run(inputs)
    divisor = inputs[1].copy()
    divisor.flat[3] = 0
    with pytest.raises(capi.PteronError) as e:
        method.run([inputs[0], divisor])
    assert operator in str(e.value) and "ZeroDivisionError" in str(e.value), str(e.value)
