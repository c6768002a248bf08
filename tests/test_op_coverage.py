# SPDX-License-Identifier: BSD-3-Clause
"""kernels_portable against upstream ExecuTorch 1.5.1's portable operator list
(tests/ops/upstream_portable_ops.txt, from its functions.yaml): every operator
is registered (the device copies et_copy::* aside) and has per-operator
programs, and the coverage table of docs/operators.md is what
tools/op_coverage.py generates from this build and the per-operator programs
now."""
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
import op_coverage  # noqa: E402

UPSTREAM = op_coverage.upstream_operators()
REQUIRED = [op for op in UPSTREAM if not op.startswith(op_coverage.DEVICE_COPY_NAMESPACE)]


@pytest.fixture(scope="module")
def registered(runtime):
    return {f"{k['name']}.{k['overload']}" if k["overload"] else k["name"]
            for k in runtime.kernels() if k["library"] == op_coverage.PORTABLE_LIBRARY}


def test_upstream_list_is_upstreams_portable_library():
    header = (REPO / "tests" / "ops" / "upstream_portable_ops.txt").read_text().splitlines()[0]
    assert "executorch 1.5.1" in header and "kernels/portable/functions.yaml" in header, header
    assert len(UPSTREAM) == len(set(UPSTREAM)) == 209, len(UPSTREAM)
    assert {"et_copy::_h2d_copy.out", "et_copy::_d2h_copy.out"} <= set(UPSTREAM)
    assert "aten::add.out" in UPSTREAM and "dim_order_ops::_to_dim_order_copy.out" in UPSTREAM


@pytest.mark.parametrize("op", REQUIRED)
def test_upstream_operator_is_registered_by_kernels_portable(registered, op):
    assert op in registered, f"{op} is in upstream's portable library but not in kernels_portable"


@pytest.fixture(scope="module")
def tested():
    return op_coverage.tested_operators()


@pytest.mark.parametrize("op", REQUIRED)
def test_upstream_operator_has_per_operator_programs(tested, op):
    assert op in tested, f"{op} has no programs under tests/ops/programs or tests/ops/random"
    assert tested[op]["cases"], f"{op} has a program but no tested case"


def test_operators_page_coverage_table_is_current(registered):
    page = op_coverage.PAGE.read_text()
    now = op_coverage.coverage_section(registered)
    assert op_coverage.page_section(page) == now, (
        "docs/operators.md's operator coverage table is stale: run "
        "`python tools/op_coverage.py --write BUILD_DIR`")
    assert op_coverage.BEGIN not in (REPO / "README.md").read_text(), (
        "the README holds a coverage table: it lives in docs/operators.md")
    assert "(docs/operators.md)" in (REPO / "README.md").read_text(), "the README links no docs/operators.md"


@pytest.mark.parametrize("method,op", [("h2d", "et_copy::_h2d_copy.out"),
                                       ("d2h", "et_copy::_d2h_copy.out")])
def test_device_copy_program_fails_at_load_saying_why(runtime, method, op):
    import capi

    prog = runtime.load_file(REPO / "tests" / "ops" / "refused" / "device_copy.pte")
    with pytest.raises(capi.PteronError) as e:
        prog.load_method(method)
    assert e.value.code == capi.MISSING_OPERATOR, e.value
    msg = e.value.message
    assert op in msg, msg
    assert "host <-> device copies" in msg and "pteron does not run" in msg, msg
    assert "device backends" in msg, msg
    # and the way out: pteron's own CUDA partitioner, or a CPU export
    assert "pteron.lowering.cuda.CudaPartitioner" in msg and "for the CPU" in msg, msg


@pytest.mark.parametrize("op", ["aten::rand.out", "aten::randn.out", "aten::native_dropout.out"])
def test_random_operators_list_their_statistical_test(op):
    tested = op_coverage.tested_operators()
    assert op in tested, f"{op} has no programs under tests/ops/programs or tests/ops/random"
    cases = "; ".join(sorted(tested[op]["cases"]))
    assert f"statistical: {op_coverage.RANDOM_TEST}" in cases, cases
    assert tested[op]["dtypes"] >= {"float32", "float64"}, tested[op]["dtypes"]
