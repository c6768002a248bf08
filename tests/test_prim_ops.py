# SPDX-License-Identifier: BSD-3-Clause
"""The prim operators the runtime itself provides (runtime/core/prim_ops.cpp):
aten::sym_size.int, aten::sym_numel, aten::_local_scalar_dense and the
executorch_prim::* scalar, view and copy-index operators that upstream's
exporter emits outside any kernel library.

The fixtures that use them (models/fixtures, written by models/export.py) are
run at every dynamic size their manifest entry lists (the committed inputs and
each case), one method instance resized from one size to the next, and compared
with eager PyTorch. The malformed programs in models/fixtures/prim_errors give a
prim operator a wrong-typed or missing argument: execute fails with an error
naming the operator and the argument, never a crash.
"""
import json
import subprocess
import sys

import numpy as np
import pytest

import capi
from conftest import FIXTURES, assert_matches, build_dir, manifest, program_with_values, run

# Every prim operator: name.overload as programs and the registry listing spell them.
PRIM_OPS = [
    "aten::sym_size.int", "aten::sym_numel", "aten::_local_scalar_dense",
    "executorch_prim::et_view.default", "executorch_prim::et_copy_index.tensor",
    "executorch_prim::add.Scalar", "executorch_prim::sub.Scalar", "executorch_prim::mul.Scalar",
    "executorch_prim::floordiv.Scalar", "executorch_prim::floordiv.int",
    "executorch_prim::truediv.Scalar", "executorch_prim::mod.Scalar", "executorch_prim::mod.int",
    "executorch_prim::neg.Scalar", "executorch_prim::eq.Scalar", "executorch_prim::gt.Scalar",
    "executorch_prim::lt.Scalar", "executorch_prim::ge.Scalar", "executorch_prim::le.Scalar",
    "executorch_prim::ceil.Scalar", "executorch_prim::round.Scalar",
    "executorch_prim::trunc.Scalar", "executorch_prim::sym_float.Scalar",
    "executorch_prim::sym_int.Scalar", "executorch_prim::sym_max.Scalar",
    "executorch_prim::sym_min.Scalar", "executorch_prim::sym_not.Scalar",
    "executorch_prim::sym_ite.Scalar",
]

PRIM_FIXTURES = [f for f in manifest()["fixtures"]
                 if any(o in PRIM_OPS for o in f["operators"])]
ERRORS_DIR = FIXTURES / "prim_errors"
ERRORS = json.loads((ERRORS_DIR / "manifest.json").read_text())["fixtures"]


def _fixture(name):
    return next(f for f in manifest()["fixtures"] if f["name"] == name)


def _load(files):
    return [np.load(FIXTURES / p) for p in files]


def _runs(fx):
    """(inputs, expected) of the committed inputs and of every case."""
    spec = fx["methods"]["forward"]
    return [(spec["inputs"], spec["expected"])] + [(c["inputs"], c["expected"])
                                                   for c in spec.get("cases", [])]


def test_the_prim_fixtures_cover_every_prim_operator():
    used = {o for f in PRIM_FIXTURES for o in f["operators"] if o in PRIM_OPS}
    # Every operator but sym_ite and sym_int runs in some fixture: upstream's exporter
    # emits neither here, and no operator it emits has sym_ite's four arguments
    # (sym_int of a Double is trunc, which runs).
    assert set(PRIM_OPS) - used == {"executorch_prim::sym_ite.Scalar",
                                    "executorch_prim::sym_int.Scalar"}, sorted(used)


@pytest.mark.parametrize("fx", PRIM_FIXTURES, ids=[f["name"] for f in PRIM_FIXTURES])
def test_prim_fixture_matches_eager_at_every_size(runtime, fx):
    runs = _runs(fx)
    if fx["name"] != "item_scalar":  # its sizes come from the data, not the input shapes
        shapes = {tuple(np.load(FIXTURES / r[0][0]).shape) for r in runs}
        assert len(shapes) >= 3, f"{fx['name']}: only {shapes}"
    else:
        assert len(runs) >= 3
    m = runtime.load_file(FIXTURES / fx["file"]).load_method("forward")
    # One method instance, resized from each size to the next (larger and smaller).
    for k, (ins, exps) in enumerate(runs):
        outs = m.run(_load(ins))
        expected = _load(exps)
        assert len(outs) == len(expected)
        for i, (a, e) in enumerate(zip(outs, expected)):
            assert_matches(a, e, fx["rtol"], fx["atol"], f"{fx['name']} run {k} output {i}")


@pytest.mark.parametrize("fx", PRIM_FIXTURES, ids=[f["name"] for f in PRIM_FIXTURES])
def test_prim_fixture_matches_eager_through_pteron_run(pteron_run, tmp_path, fx):
    for k, (ins, exps) in enumerate(_runs(fx)):
        out = tmp_path / f"run{k}"
        cmd = [pteron_run, FIXTURES / fx["file"], "--output-dir", out]
        for p in ins:
            cmd += ["--input", FIXTURES / p]
        r = run(cmd, timeout=120)
        assert r.returncode == 0, r.stderr
        for i, e in enumerate(_load(exps)):
            assert_matches(np.load(out / f"output_{i}.npy"), e, fx["rtol"], fx["atol"],
                           f"pteron-run {fx['name']} run {k} output {i}")


def test_dynamic_sizes_really_change_the_outputs():
    # Negative control: the cases are not all the same computation.
    fx = _fixture("sym_size_scalar_ops")
    runs = _runs(fx)
    rows = [np.load(FIXTURES / r[1][0])[0] for r in runs]
    assert len({tuple(r) for r in rows}) == len(rows)


def test_each_prim_operator_is_registered_once_by_the_runtime(pteron_run):
    r = run([pteron_run, "--list-operators"], timeout=60)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line and not line.startswith("backend ")]
    for op in PRIM_OPS:
        mine = [row for row in rows if row[0] == op]
        assert len(mine) == 1, f"{op} is listed {len(mine)} times: {mine}"
        assert mine[0][1] == "runtime", f"{op} comes from {mine[0][1]}, not the runtime"
        assert mine[0][-1] == "(selected)", mine[0]
    # Nothing else is registered by the runtime.
    assert sorted(row[0] for row in rows if row[1] == "runtime") == sorted(PRIM_OPS)


def test_prim_operators_are_listed_through_the_c_api(runtime):
    ks = [k for k in runtime.kernels() if k["library"] == "runtime"]
    names = sorted(k["name"] + (f".{k['overload']}" if k["overload"] else "") for k in ks)
    assert names == sorted(PRIM_OPS)
    assert all(k["key"] == "" and k["selected"] for k in ks)


_ONLY_PORTABLE = r"""
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import capi
rt = capi.Runtime(sys.argv[2], kernel_libs=("kernels_portable",))
fixtures = sys.argv[3]
for name, inputs, expected in zip(sys.argv[4::3], sys.argv[5::3], sys.argv[6::3]):
    m = rt.load_file(f"{fixtures}/{name}.pte").load_method("forward")
    outs = m.run([np.load(f"{fixtures}/{p}") for p in inputs.split(",")])
    exp = [np.load(f"{fixtures}/{p}") for p in expected.split(",")]
    for a, e in zip(outs, exp):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)
print("libraries=" + ",".join(sorted({k["library"] for k in rt.kernels()})))
"""


def test_prim_fixtures_run_with_only_the_runtime_and_kernels_portable(tmp_path):
    """A fresh process that loads libpteron and libpteron_kernels_portable and
    nothing else runs every prim fixture."""
    args = []
    for fx in PRIM_FIXTURES:
        spec = fx["methods"]["forward"]
        args += [fx["file"][:-4], ",".join(spec["inputs"]), ",".join(spec["expected"])]
    r = run([sys.executable, "-c", _ONLY_PORTABLE, FIXTURES.parent.parent / "tests",
             build_dir(), FIXTURES, *args], timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "libraries=kernels_portable,runtime", r.stdout


@pytest.mark.parametrize("err", ERRORS, ids=[e["name"] for e in ERRORS])
def test_wrong_typed_argument_fails_naming_the_operator(runtime, err):
    src = _fixture(err["inputs_of"])
    m = runtime.load_file(ERRORS_DIR / err["file"]).load_method("forward")
    for i, a in enumerate(_load(src["methods"]["forward"]["inputs"])):
        m.set_input(i, a)
    with pytest.raises(capi.PteronError) as e:
        m.execute()
    assert e.value.code == err["error"]["code"] == capi.INVALID_PROGRAM, e.value.message
    for text in err["error"]["contains"]:
        assert text in e.value.message, e.value.message
    # The method stays usable: the same error again, not a crash.
    with pytest.raises(capi.PteronError):
        m.execute()


@pytest.mark.parametrize("err", ERRORS, ids=[e["name"] for e in ERRORS])
def test_wrong_typed_argument_fails_cleanly_in_pteron_run(pteron_run, err):
    src = _fixture(err["inputs_of"])
    cmd = [pteron_run, ERRORS_DIR / err["file"]]
    for p in src["methods"]["forward"]["inputs"]:
        cmd += ["--input", FIXTURES / p]
    r = run(cmd, timeout=60)
    assert r.returncode > 0, f"exit {r.returncode} (negative: killed by a signal)\n{r.stderr}"
    for text in err["error"]["contains"]:
        assert text in r.stderr, r.stderr


def test_the_error_programs_differ_from_their_sources():
    # Negative control: each malformed program really is changed.
    for err in ERRORS:
        src = _fixture(err["inputs_of"])
        assert (ERRORS_DIR / err["file"]).read_bytes() != (FIXTURES / src["file"]).read_bytes()


def test_int_values_cross_the_c_api_exactly(runtime, tmp_path):
    """pteron_method_output_int gives an Int output exactly (2^63 - 1, 2^53 + 1, -2^63; the
    double `scalar` of pteron_value_info rounds them), and refuses a tensor output;
    pteron_method_set_input_int accepts the exported int64 and refuses 2^53, which
    pteron_method_set_input_scalar refuses too (the double of 2^53 + 1), as it refuses 2.5."""
    big, odd = (1 << 63) - 1, (1 << 53) + 1
    path = program_with_values(tmp_path, "ints", [
        {"val_type": "Int", "val": {"int_val": big}}, {"val_type": "Int", "val": {"int_val": odd}},
        {"val_type": "Int", "val": {"int_val": -(1 << 63)}},
        {"val_type": "Int", "val": {"int_val": odd}}], n_outputs=3, n_inputs=1)
    m = runtime.load_file(path).load_method("forward")
    m.set_input(0, np.load(FIXTURES / "sym_numel_rewritten.forward.input_0.npy"))
    for bad in (lambda: m.set_input_int(1, odd - 1), lambda: m.set_input_scalar(1, float(odd)),
                lambda: m.set_input_scalar(1, 2.5)):
        with pytest.raises(capi.PteronError) as e:
            bad()
        assert e.value.code == capi.INVALID_ARGUMENT and f"exported for the int {odd}" in str(e.value)
    m.set_input_int(1, odd)
    m.execute()
    assert [m.output_int(i) for i in (1, 2, 3)] == [big, odd, -(1 << 63)]
    assert [m.output(i).item() for i in (1, 2, 3)] == [big, odd, -(1 << 63)]
    assert m.output_info(2)["scalar"] == float(odd)  # the double's rounding, for comparison
    with pytest.raises(capi.PteronError) as e:
        m.output_int(0)
    assert e.value.code == capi.INVALID_ARGUMENT and "output 0" in str(e.value)


def test_an_input_of_a_dtype_pteron_lacks_is_named_by_its_code(runtime, tmp_path):
    """A tensor input of a ScalarType that pteron has no dtype for (FLOAT8E5M2 = 23) loads, and
    setting it is an error that names the code, not "dtype unknown"."""
    def f8(plan):
        plan["values"][0]["val"]["scalar_type"] = "FLOAT8E5M2"
    m = runtime.load_file(program_with_values(tmp_path, "f8", [], edit=f8)).load_method("forward")
    with pytest.raises(capi.PteronError) as e:
        m.set_input(0, np.load(FIXTURES / "sym_numel_rewritten.forward.input_0.npy"))
    assert e.value.code == capi.INVALID_ARGUMENT
    assert "expected dtype ScalarType 23 (which pteron does not support), got float32" in \
        str(e.value), str(e.value)


@pytest.mark.parametrize("value,tag", [({"val_type": "String", "val": {"string_val": "x"}},
                                        "String"),
                                       ({"val_type": "Null", "val": {}}, "None")])
def test_pteron_run_names_an_input_it_cannot_set(pteron_run, tmp_path, value, tag):
    """An input declared as neither a tensor nor an Int, Double or Bool is named by its kind,
    whatever file is given for it (not "give a 0-d .npy", which cannot help)."""
    path = program_with_values(tmp_path, "odd_input", [value], n_inputs=1)
    x = FIXTURES / "sym_numel_rewritten.forward.input_0.npy"
    scalar = tmp_path / "s.npy"
    np.save(scalar, np.array(1.0))
    for second in (x, scalar):
        r = run([pteron_run, path, "--input", x, "--input", second], timeout=60)
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"input 1 is declared as {tag}, which pteron-run cannot set" in r.stderr, r.stderr
        assert "0-d" not in r.stderr and "output 0" not in r.stdout
