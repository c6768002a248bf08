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


@pytest.mark.parametrize("folder,entry,method", CASES)
def test_operator_case_matches_eager(runtime, folder, entry, method):
    m = entry["methods"][method]
    assert entry["operator"] in m["operators"], (
        f"{entry['name']}.{method} does not call {entry['operator']}: {m['operators']}")
    prog = runtime.load_file(folder / entry["file"])
    meth = prog.load_method(method)
    outputs = meth.run([np.load(folder / f) for f in m["inputs"]])
    expected = [np.load(folder / f) for f in m["expected"]]
    assert len(outputs) == len(expected)
    for i, (a, e) in enumerate(zip(outputs, expected)):
        assert_matches(a, e, entry["rtol"], entry["atol"],
                       f"{entry['operator']} case {method} output {i}")
