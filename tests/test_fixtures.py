# SPDX-License-Identifier: BSD-3-Clause
"""Every fixture runs through the C API (ctypes) and through pteron-run, and
matches the eager-PyTorch outputs committed beside it (rtol 1e-4, atol 1e-5),
with the expected dtype and shape."""
import subprocess

import numpy as np
import pytest

from conftest import FIXTURES, assert_matches, manifest

RUNNABLE = [
    (f["name"], method)
    for f in manifest()["fixtures"]
    if f["uses_only_supported_operators"] and not f["delegates"]
    for method in f["methods"]
]


def _fixture(name):
    return next(f for f in manifest()["fixtures"] if f["name"] == name)


def _load(files):
    return [np.load(FIXTURES / p) for p in files]


@pytest.mark.parametrize("name,method", RUNNABLE, ids=[f"{n}.{m}" for n, m in RUNNABLE])
def test_fixture_matches_eager_through_c_api(runtime, name, method):
    fx = _fixture(name)
    spec = fx["methods"][method]
    program = runtime.load_file(FIXTURES / fx["file"])
    m = program.load_method(method)
    assert m.num_inputs == len(spec["inputs"])
    outs = m.run(_load(spec["inputs"]))
    expected = _load(spec["expected"])
    assert len(outs) == len(expected)
    for i, (a, e) in enumerate(zip(outs, expected)):
        assert_matches(a, e, fx["rtol"], fx["atol"], f"{name}.{method} output {i}")


@pytest.mark.parametrize("name,method", RUNNABLE, ids=[f"{n}.{m}" for n, m in RUNNABLE])
def test_fixture_matches_eager_through_pteron_run(pteron_run, tmp_path, name, method):
    fx = _fixture(name)
    spec = fx["methods"][method]
    cmd = [str(pteron_run), str(FIXTURES / fx["file"]), "--method", method,
           "--output-dir", str(tmp_path), "--iterations", "3"]
    for p in spec["inputs"]:
        cmd += ["--input", str(FIXTURES / p)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "median time per execution" in r.stdout
    expected = _load(spec["expected"])
    for i, e in enumerate(expected):
        assert f"output {i}:" in r.stdout
        a = np.load(tmp_path / f"output_{i}.npy")
        assert_matches(a, e, fx["rtol"], fx["atol"], f"pteron-run {name}.{method} output {i}")


def test_repeated_execution_gives_same_outputs(runtime):
    fx = _fixture("transformer")
    spec = fx["methods"]["forward"]
    m = runtime.load_file(FIXTURES / fx["file"]).load_method("forward")
    first = m.run(_load(spec["inputs"]))
    m.execute()
    second = [m.output(i) for i in range(m.num_outputs)]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_program_lists_its_methods(runtime):
    p = runtime.load_file(FIXTURES / "two_methods.pte")
    assert sorted(p.method_names()) == ["encode", "forward"]


def test_load_from_memory_matches_load_from_file(runtime):
    fx = _fixture("cnn")
    spec = fx["methods"]["forward"]
    data = (FIXTURES / fx["file"]).read_bytes()
    m = runtime.load_bytes(data).load_method("forward")
    del data
    out = m.run(_load(spec["inputs"]))[0]
    assert_matches(out, _load(spec["expected"])[0], fx["rtol"], fx["atol"], "cnn from memory")


def test_caller_supplied_planned_memory(runtime):
    fx = _fixture("mlp")
    spec = fx["methods"]["forward"]
    p = runtime.load_file(FIXTURES / fx["file"])
    sizes = p.planned_buffer_sizes("forward")
    assert sizes and all(s > 0 for s in sizes)
    buffers = [np.zeros(s + 64, dtype=np.uint8) for s in sizes]
    m = p.load_method("forward", planned=buffers)
    out = m.run(_load(spec["inputs"]))[0]
    assert_matches(out, _load(spec["expected"])[0], fx["rtol"], fx["atol"], "mlp, caller memory")
    # The outputs really live in the caller's buffers.
    assert any(b.any() for b in buffers)


def test_too_small_caller_planned_memory_is_refused(runtime):
    p = runtime.load_file(FIXTURES / "mlp.pte")
    sizes = p.planned_buffer_sizes("forward")
    import capi
    with pytest.raises(capi.PteronError) as e:
        p.load_method("forward", planned=[np.zeros(max(s // 2, 1), dtype=np.uint8) for s in sizes])
    assert e.value.code == capi.INVALID_ARGUMENT
    assert "planned buffer" in e.value.message


def test_input_and_output_descriptions(runtime):
    fx = _fixture("multi_out")
    spec = fx["methods"]["forward"]
    m = runtime.load_file(FIXTURES / fx["file"]).load_method("forward")
    for i, (dt, shape) in enumerate(zip(spec["input_dtypes"], spec["input_shapes"])):
        info = m.input_info(i)
        assert str(info["dtype"]) == dt and list(info["sizes"]) == shape
    for i, (dt, shape) in enumerate(zip(spec["output_dtypes"], spec["output_shapes"])):
        info = m.output_info(i)
        assert str(info["dtype"]) == dt and list(info["sizes"]) == shape
