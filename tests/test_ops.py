# SPDX-License-Identifier: BSD-3-Clause
"""The per-operator programs (tests/ops/): one small program per operator
overload, exported by upstream's exporter, its cases as methods. Each method
runs on kernels_portable and matches eager PyTorch's committed outputs; each
program calls the operator it is named for."""
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, assert_matches

PROGRAMS = REPO / "tests" / "ops" / "programs"


def _cases():
    for manifest in sorted(PROGRAMS.glob("*/manifest.json")):
        group = manifest.parent.name
        for entry in json.loads(manifest.read_text())["fixtures"]:
            for method in entry["methods"]:
                yield pytest.param(manifest.parent, entry, method,
                                   id=f"{group}/{entry['name']}/{method}")


CASES = list(_cases())


def test_there_are_operator_programs():
    assert len(CASES) > 0, f"no per-operator programs under {PROGRAMS}"


def _bfloat16_as_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values stored as their uint16 bits (numpy has no bfloat16), as float32."""
    assert bits.dtype == np.uint16, bits.dtype
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("folder,entry,method", CASES)
def test_operator_case_matches_eager(runtime, folder, entry, method):
    import capi

    m = entry["methods"][method]
    assert entry["operator"] in m["operators"], (
        f"{entry['name']}.{method} does not call {entry['operator']}: {m['operators']}")
    prog = runtime.load_file(folder / entry["file"])
    meth = prog.load_method(method)
    for i, (f, dt) in enumerate(zip(m["inputs"], m["input_dtypes"])):
        meth.set_input(i, np.load(folder / f), capi.BFLOAT16 if dt == "bfloat16" else None)
    meth.execute()
    outputs = [meth.output(i) for i in range(meth.num_outputs)]
    expected = [np.load(folder / f) for f in m["expected"]]
    assert len(outputs) == len(expected)
    for i, (a, e) in enumerate(zip(outputs, expected)):
        if m["output_dtypes"][i] == "bfloat16":
            assert meth.output_info(i)["dtype"] == np.uint16  # the runtime says bfloat16
            a, e = _bfloat16_as_float32(a), _bfloat16_as_float32(e)
        assert_matches(a, e, entry["rtol"], entry["atol"],
                       f"{entry['operator']} case {method} output {i}")
