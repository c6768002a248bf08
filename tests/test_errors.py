# SPDX-License-Identifier: BSD-3-Clause
"""Clear errors, named, at load where possible: missing operators (all of
them at once), missing delegates, wrong inputs, dynamic-shape bounds."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import capi
from conftest import FIXTURES


def test_missing_operators_fail_at_method_load_naming_every_one(runtime):
    p = runtime.load_file(FIXTURES / "unsupported_op.pte")
    with pytest.raises(capi.PteronError) as e:
        p.load_method("forward")
    assert e.value.code == capi.MISSING_OPERATOR
    assert "pteron_test::absent_binary.out" in e.value.message
    assert "pteron_test::absent_unary.out" in e.value.message
    # add.out is provided, so it is not listed.
    assert "aten::add.out" not in e.value.message


def test_missing_delegate_fails_at_load_naming_it(runtime):
    p = runtime.load_file(FIXTURES / "mlp_xnnpack.pte")
    with pytest.raises(capi.PteronError) as e:
        p.load_method("forward")
    assert e.value.code == capi.MISSING_DELEGATE
    assert "not registered: 'XnnpackBackend'" in e.value.message


@pytest.mark.parametrize("odd,shown", [(b"", "''"), (b"Xn'ck\\", "'Xn\\x27ck\\x5c'"),
                                       (b"\x1b[m", "'\\x1b[m'")])
def test_missing_delegate_name_is_quoted_whatever_its_bytes(runtime, tmp_path, odd, shown):
    """A delegate id that is empty, or holds a quote, a backslash or a control byte, is still
    one unambiguous quoted name in the error (the same length keeps the flatbuffer valid)."""
    data = (FIXTURES / "mlp_xnnpack.pte").read_bytes()
    at = data.index(b"XnnpackBackend")
    size = int.from_bytes(data[at - 4:at], "little")
    assert size == len(b"XnnpackBackend")
    path = tmp_path / "odd.pte"
    path.write_bytes(data[:at - 4] + len(odd).to_bytes(4, "little") + odd.ljust(size, b"\0") +
                     data[at + size:])
    with pytest.raises(capi.PteronError) as e:
        runtime.load_file(path).load_method("forward")
    assert e.value.code == capi.MISSING_DELEGATE, e.value.message
    assert f"not registered: {shown}" in e.value.message, e.value.message


def test_memory_budget_refuses_a_method_that_declares_more(runtime):
    """pteron_method_options.max_allocated_bytes: a method whose planned buffers need more
    than the budget is refused with OUT_OF_MEMORY naming the buffer; a budget that covers them
    loads it; an options struct that ends before the field (an older caller) has no budget."""
    p = runtime.load_file(FIXTURES / "cnn.pte")
    need = sum(p.planned_buffer_sizes("forward"))
    assert need > 64
    with pytest.raises(capi.PteronError) as e:
        p.load_method("forward", max_allocated_bytes=need - 1)
    assert e.value.code == capi.OUT_OF_MEMORY
    assert "planned buffer 1" in e.value.message and "budget" in e.value.message, e.value.message
    m = p.load_method("forward", max_allocated_bytes=need)
    x = np.load(FIXTURES / "cnn.forward.input_0.npy")
    m.set_input(0, x)
    m.execute()
    older = capi.MethodOptions.max_allocated_bytes.offset
    p.load_method("forward", max_allocated_bytes=1, struct_size=older)


def test_unknown_method_is_not_found_and_lists_the_methods(runtime):
    p = runtime.load_file(FIXTURES / "two_methods.pte")
    with pytest.raises(capi.PteronError) as e:
        p.load_method("decode")
    assert e.value.code == capi.NOT_FOUND
    assert "decode" in e.value.message and "encode" in e.value.message


def test_missing_file_is_an_io_error_naming_the_path(runtime, tmp_path):
    missing = tmp_path / "nope.pte"
    with pytest.raises(capi.PteronError) as e:
        runtime.load_file(missing)
    assert e.value.code == 9  # PTERON_ERROR_IO
    assert str(missing) in e.value.message


def test_utf8_path_loads(runtime, tmp_path):
    target = tmp_path / "modèle_模型.pte"
    target.write_bytes((FIXTURES / "mlp.pte").read_bytes())
    assert runtime.load_file(target).method_names() == ["forward"]


@pytest.fixture
def mlp(runtime):
    return runtime.load_file(FIXTURES / "mlp.pte").load_method("forward")


def test_wrong_input_dtype_is_refused_naming_both(mlp):
    with pytest.raises(capi.PteronError) as e:
        mlp.set_input(0, np.zeros((4, 16), dtype=np.float64))
    assert e.value.code == capi.INVALID_ARGUMENT
    assert "float32" in e.value.message and "float64" in e.value.message


def test_wrong_input_shape_is_refused(mlp):
    with pytest.raises(capi.PteronError) as e:
        mlp.set_input(0, np.zeros((4, 17), dtype=np.float32))
    assert e.value.code == capi.SHAPE_MISMATCH
    assert "dim 1" in e.value.message
    with pytest.raises(capi.PteronError) as e:
        mlp.set_input(0, np.zeros((64,), dtype=np.float32))
    assert "rank" in e.value.message


def test_null_pointers_are_named_not_reported_as_a_size_mismatch(mlp):
    """A NULL sizes, data or dst is named as such (it read "expected rank 2, got rank 2",
    "256 bytes given, shape and dtype need 256")."""
    L, ct = mlp.rt.lib, capi.ctypes
    sizes = (ct.c_int64 * 2)(4, 16)
    x = np.zeros((4, 16), np.float32)
    cases = [
        (L.pteron_method_set_input(mlp.h, 0, 6, None, 2, x.ctypes.data, x.nbytes),
         "sizes is NULL for rank 2"),
        (L.pteron_method_set_input(mlp.h, 0, 6, sizes, 2, None, x.nbytes),
         "data is NULL for 256 bytes"),
    ]
    for status, words in cases:
        with pytest.raises(capi.PteronError) as e:
            mlp.rt.check(status)
        assert e.value.code == capi.INVALID_ARGUMENT and words in e.value.message, e.value.message
    mlp.set_input(0, x)
    mlp.execute()
    with pytest.raises(capi.PteronError) as e:
        mlp.rt.check(L.pteron_method_copy_output(mlp.h, 0, None, 128))
    assert e.value.code == capi.INVALID_ARGUMENT
    assert "dst is NULL for 128 bytes" in e.value.message, e.value.message


def test_wrong_input_index_is_not_found(mlp):
    with pytest.raises(capi.PteronError) as e:
        mlp.set_input(3, np.zeros((4, 16), dtype=np.float32))
    assert e.value.code == capi.NOT_FOUND


def test_execute_without_inputs_is_an_error(mlp):
    with pytest.raises(capi.PteronError) as e:
        mlp.execute()
    assert e.value.code == capi.INVALID_ARGUMENT
    assert "input 0" in e.value.message


def test_outputs_before_a_successful_execute_are_refused(mlp):
    # Before any execute, and after a failed one, the output memory holds no
    # result of this method: reading it is an error, not stale data.
    with pytest.raises(capi.PteronError) as e:
        mlp.output(0)
    assert e.value.code == capi.INVALID_ARGUMENT
    assert "has not executed" in e.value.message and "forward" in e.value.message
    with pytest.raises(capi.PteronError):
        mlp.execute()  # input 0 not set: fails
    with pytest.raises(capi.PteronError) as e:
        mlp.output(0)
    assert "has not executed" in e.value.message
    mlp.set_input(0, np.ones((4, 16), dtype=np.float32))
    mlp.execute()
    out = mlp.output(0)
    assert out.shape == (4, 8) and np.isfinite(out).all()


def test_half_input_is_refused_as_wrong_dtype(mlp):
    with pytest.raises(capi.PteronError) as e:
        mlp.set_input(0, np.zeros((4, 16), dtype=np.float16))
    assert "float16" in e.value.message


# ---- dynamic shapes ----

@pytest.fixture
def dyn(runtime):
    return runtime.load_file(FIXTURES / "dynamic_batch.pte").load_method("forward")


def test_dynamic_input_declares_its_bounds(dyn):
    info = dyn.input_info(0)
    assert info["bound"] == (8, 12)
    assert info["dynamism"] == 1  # DYNAMIC_BOUND


def test_dynamic_shape_within_bounds_matches_eager(dyn):
    x = np.load(FIXTURES / "dynamic_batch.forward.input_0.npy")
    expected = np.load(FIXTURES / "dynamic_batch.forward.expected_0.npy")
    assert x.shape[0] < 8
    out = dyn.run([x])[0]
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch", [1, 8])
def test_dynamic_shape_at_the_edges_runs_with_the_right_shape(dyn, batch):
    x = np.random.default_rng(batch).standard_normal((batch, 12)).astype(np.float32)
    out = dyn.run([x])[0]
    assert out.shape == (batch, 6)
    # softmax output: each row sums to one
    np.testing.assert_allclose(out.sum(axis=1), np.ones(batch), rtol=1e-5)


def test_dynamic_rows_are_independent_of_batch(dyn):
    x = np.load(FIXTURES / "dynamic_batch.forward.input_0.npy")
    full = dyn.run([x])[0]
    one = dyn.run([x[:1]])[0]
    np.testing.assert_allclose(one[0], full[0], rtol=1e-5, atol=1e-6)


def test_dim_beyond_its_bound_is_rejected_even_if_total_fits(dyn):
    # [2, 24] has 48 elements (< 8*12 = 96) but dim 1 exceeds its bound 12.
    with pytest.raises(capi.PteronError) as e:
        dyn.set_input(0, np.zeros((2, 24), dtype=np.float32))
    assert e.value.code == capi.SHAPE_MISMATCH
    assert "dim 1" in e.value.message


def test_batch_beyond_its_bound_is_rejected(dyn):
    with pytest.raises(capi.PteronError) as e:
        dyn.set_input(0, np.zeros((9, 12), dtype=np.float32))
    assert e.value.code == capi.SHAPE_MISMATCH
    assert "upper bound 8" in e.value.message


# ---- pteron-run errors ----

def _run(pteron_run, *args):
    return subprocess.run([str(pteron_run), *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def _npy_bytes(array: np.ndarray) -> bytes:
    import io
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _with_header(good: bytes, header: bytes) -> bytes:
    """`good`'s .npy bytes with its header dict replaced by `header` (padded, same length)."""
    hlen = int.from_bytes(good[8:10], "little")
    assert len(header) < hlen, header
    return good[:10] + header + b" " * (hlen - len(header) - 1) + b"\n" + good[10 + hlen:]


@pytest.mark.parametrize("header,message", [
    (b"{'descr': '<f4', 'fortran_order': 'yes', 'shape': (4, 16), }",
     "fortran_order is 'yes', not True or False"),
    (b"{'descr': '<f4', 'fortran_order': 0, 'shape': (4, 16), }", "fortran_order is '0'"),
    (b"{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (4, 16), }",
     "malformed .npy header"),
    (b"{'descr': '<f4\0', 'fortran_order': False, 'shape': (4, 16), }",
     "unsupported dtype '<f4\\x00'"),
    (b"{'descr': '>f4', 'fortran_order': False, 'shape': (4, 16), }",
     "big-endian dtype '>f4'; save it little-endian"),
    # Separators numpy's literal_eval would refuse: text between a key and its ':',
    # a key that does not open an item.
    (b"{'descr' x: '<f4', 'fortran_order': False, 'shape': (4, 16), }", "malformed .npy header"),
    (b"{'descr': '<f4' 'fortran_order': False, 'shape': (4, 16), }", "malformed .npy header"),
    # What numpy's literal_eval or its key check refuses, each named.
    (b"{'descr': '<f4',, 'fortran_order': False, 'shape': (4, 16), }", "no quoted key at byte"),
    (b"{, 'descr': '<f4', 'fortran_order': False, 'shape': (4, 16), }", "no quoted key at byte 1"),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16) JUNK }",
     "text after the value of 'shape'"),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16), 'extra': 1, }",
     "an unexpected key 'extra'"),
    (b"{'descr': '<f4', 'fortran_order': False, }", "no key 'shape'"),
    (b"{'descr': '<f4', 'shape': (4, 16), 'shape': (4, 16), 'fortran_order': False}",
     "the key 'shape' given twice"),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': [4, 16], }", "is not a tuple"),
])
def test_pteron_run_names_what_is_wrong_in_an_npy_header(pteron_run, tmp_path, header, message):
    """A header numpy would refuse or read otherwise (a fortran_order that is not a bool, a key
    twice) is refused; an unsupported dtype is quoted with its odd bytes escaped."""
    good = _npy_bytes(np.load(FIXTURES / "mlp.forward.input_0.npy"))
    path = tmp_path / "bad.npy"
    path.write_bytes(_with_header(good, header))
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", path)
    assert r.returncode == 1 and str(path) in r.stderr, r.stderr
    assert message in r.stderr, r.stderr


@pytest.mark.parametrize("descr", ["f4", "=f4", "<f4"])
def test_pteron_run_reads_each_spelling_of_a_native_float32_npy(pteron_run, tmp_path, descr):
    """numpy reads a descr without a byte-order character, or with '=', as this machine's order
    (little-endian here): pteron-run reads it as '<f4' and gives the expected output."""
    good = _npy_bytes(np.load(FIXTURES / "mlp.forward.input_0.npy"))
    path = tmp_path / "in.npy"
    path.write_bytes(_with_header(good, f"{{'descr': '{descr}', 'fortran_order': False, "
                                        f"'shape': (4, 16), }}".encode()))
    assert np.load(path).dtype == np.float32
    out = tmp_path / "out"
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", path, "--output-dir", out)
    assert r.returncode == 0, r.stderr
    want = np.load(FIXTURES / "mlp.forward.expected_0.npy")
    np.testing.assert_allclose(np.load(out / "output_0.npy"), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("version", [b"\x01\x01", b"\x01\xff", b"\x04\x00"])
def test_pteron_run_refuses_an_npy_version_numpy_never_writes(pteron_run, tmp_path, version):
    """numpy writes format versions 1.0, 2.0 and 3.0 only; any other is named, not guessed at."""
    good = _npy_bytes(np.load(FIXTURES / "mlp.forward.input_0.npy"))
    path = tmp_path / "bad_version.npy"
    path.write_bytes(good[:6] + version + good[8:])
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", path)
    assert r.returncode == 1, r.stdout
    assert f"unsupported .npy version {version[0]}" in r.stderr, r.stderr


@pytest.mark.parametrize("case", ["trailing_bytes", "junk_after_dict", "short_data"])
def test_pteron_run_refuses_npy_that_numpy_would_refuse(pteron_run, tmp_path, case):
    good = _npy_bytes(np.load(FIXTURES / "mlp.forward.input_0.npy"))
    if case == "trailing_bytes":
        bad = good + b"\0\0\0\0"
    elif case == "junk_after_dict":
        # Replace the padding before the final newline with junk after the dict.
        hlen = int.from_bytes(good[8:10], "little")
        header = good[10:10 + hlen]
        junk = header.rstrip(b" \n") + b"xyz"
        header = junk + b" " * (hlen - len(junk) - 1) + b"\n"
        bad = good[:10] + header + good[10 + hlen:]
    else:
        bad = good[:-4]
    path = tmp_path / "bad.npy"
    path.write_bytes(bad)
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", path)
    assert r.returncode == 1, r.stdout
    assert str(path) in r.stderr
    assert ("data bytes" in r.stderr) if case != "junk_after_dict" else ("malformed" in r.stderr)


@pytest.mark.parametrize("shape", ["(4,,16)", "(,)", "(4)", "(4, 16", "(4, -16)", "(4, 1.6e1)",
                                   "(04, 16)"])
def test_pteron_run_refuses_a_malformed_npy_shape(pteron_run, tmp_path, shape):
    good = _npy_bytes(np.load(FIXTURES / "mlp.forward.input_0.npy"))
    hlen = int.from_bytes(good[8:10], "little")
    header = good[10:10 + hlen].replace(b"(4, 16)", shape.encode())
    header = header.rstrip(b" \n")
    header = header + b" " * (hlen - len(header) - 1) + b"\n"
    path = tmp_path / "bad_shape.npy"
    path.write_bytes(good[:10] + header + good[10 + hlen:])
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", path)
    assert r.returncode == 1, r.stdout
    assert "malformed" in r.stderr and str(path) in r.stderr


def test_pteron_run_refuses_a_fifo_as_the_model_instead_of_waiting(pteron_run, tmp_path):
    fifo = tmp_path / "model.pte"
    os.mkfifo(fifo)
    r = _run(pteron_run, fifo)  # timeout=60: a hang fails
    assert r.returncode == 1
    assert "not a regular file" in r.stderr and str(fifo) in r.stderr


def test_program_names_in_messages_are_escaped_to_one_line(pteron_run, tmp_path):
    # An operator name holding a newline and a non-UTF-8 byte: the message
    # stays one printable line and shows the bytes as \xNN.
    data = (FIXTURES / "mlp.pte").read_bytes()
    assert data.count(b"aten::relu") == 1
    bad = tmp_path / "bad_name.pte"
    bad.write_bytes(data.replace(b"aten::relu", b"aten::r\nl\xff"))
    r = _run(pteron_run, bad, "--input", FIXTURES / "mlp.forward.input_0.npy")
    assert r.returncode == 1
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    assert "aten::r\\x0al\\xff" in lines[0]


@pytest.mark.parametrize("value", [" 5", "+5", "0", "-1", "1e3", "abc", "99999999999999999999"])
def test_pteron_run_bad_iterations_is_a_usage_error(pteron_run, value):
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--iterations", value)
    assert r.returncode == 2
    assert "--iterations" in r.stderr and "usage:" in r.stderr


def test_pteron_run_creates_the_output_dir_or_names_why_not(pteron_run, tmp_path):
    out = tmp_path / "a" / "b"
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", FIXTURES / "mlp.forward.input_0.npy",
             "--output-dir", out)
    assert r.returncode == 0, r.stderr
    got = np.load(out / "output_0.npy")
    np.testing.assert_allclose(got, np.load(FIXTURES / "mlp.forward.expected_0.npy"),
                               rtol=1e-4, atol=1e-5)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", FIXTURES / "mlp.forward.input_0.npy",
             "--output-dir", blocker / "sub")
    assert r.returncode == 1
    assert "output directory" in r.stderr and "output 0" not in r.stdout  # failed before running


def test_pteron_run_npy_open_error_gives_the_os_reason(pteron_run, tmp_path):
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", tmp_path / "absent.npy")
    assert r.returncode == 1
    assert "absent.npy" in r.stderr and "No such file or directory" in r.stderr


def test_pteron_run_refuses_a_fifo_instead_of_waiting(pteron_run, tmp_path):
    fifo = tmp_path / "input.npy"
    os.mkfifo(fifo)
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", fifo)  # timeout=60: a hang fails
    assert r.returncode == 1
    assert "not a regular file" in r.stderr


def test_pteron_run_missing_operator_exits_nonzero_with_one_message(pteron_run):
    r = _run(pteron_run, FIXTURES / "unsupported_op.pte", "--input",
             FIXTURES / "unsupported_op.forward.input_0.npy")
    assert r.returncode == 1
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "pteron_test::absent_binary.out" in lines[0] and "pteron_test::absent_unary.out" in lines[0]


def test_pteron_run_wrong_input_count(pteron_run):
    r = _run(pteron_run, FIXTURES / "mlp.pte")
    assert r.returncode == 1 and "takes 1 input" in r.stderr


def test_pteron_run_bad_npy(pteron_run, tmp_path):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not numpy")
    r = _run(pteron_run, FIXTURES / "mlp.pte", "--input", bad)
    assert r.returncode == 1 and "bad.npy" in r.stderr


def test_pteron_run_usage_error(pteron_run):
    r = _run(pteron_run, "--bogus")
    assert r.returncode == 2 and "usage" in r.stderr


def test_pteron_run_takes_a_program_named_with_a_dash_after_double_dash(pteron_run, tmp_path):
    prog = tmp_path / "-model.pte"
    prog.write_bytes((FIXTURES / "mlp.pte").read_bytes())
    inp = FIXTURES / "mlp.forward.input_0.npy"
    exe = str(Path(pteron_run).resolve())
    r = subprocess.run([exe, "--input", str(inp), "--", "-model.pte"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "output 0" in r.stdout
    r = subprocess.run([exe, "--input", str(inp), "-model.pte"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 2 and "unknown option '-model.pte'" in r.stderr


@pytest.mark.parametrize("args,says", [
    (["--output-dir", ""], "--output-dir needs a value"),
    (["--input", ""], "--input needs a value"),
    (["--list-operators", "--input", "x.npy"], "--input and --output-dir need MODEL.pte"),
    (["--output-dir", "out"], "--input and --output-dir need MODEL.pte"),
    (["--", "a.pte", "b.pte"], "unexpected argument 'b.pte'"),
])
def test_pteron_run_refuses_empty_values_and_inputs_without_a_program(pteron_run, args, says):
    r = _run(pteron_run, *args)
    assert r.returncode == 2, r
    assert says in r.stderr and "usage" in r.stderr


def test_pteron_run_lists_operators_with_their_library(pteron_run):
    r = _run(pteron_run, "--list-operators")
    assert r.returncode == 0
    assert any("aten::addmm.out" in l and "kernels_portable" in l for l in r.stdout.splitlines())


# ---- registry ----

def test_registry_lists_every_required_operator(runtime):
    required = """aten::add.out aten::add.Scalar_out aten::sub.out aten::sub.Scalar_out aten::mul.out
    aten::mul.Scalar_out aten::div.out aten::div.Scalar_out aten::addmm.out aten::mm.out aten::bmm.out
    aten::permute_copy.out aten::view_copy.out aten::expand_copy.out aten::squeeze_copy.dims_out
    aten::unsqueeze_copy.out aten::select_copy.int_out aten::slice_copy.Tensor_out aten::cat.out
    aten::clone.out dim_order_ops::_to_dim_order_copy.out dim_order_ops::_clone_dim_order.out
    aten::relu.out aten::clamp.out aten::hardtanh.out aten::sigmoid.out aten::tanh.out aten::gelu.out
    aten::hardswish.out aten::_softmax.out aten::_log_softmax.out aten::mean.out aten::sum.IntList_out
    aten::amax.out aten::max.dim_max aten::argmax.out aten::cumsum.out aten::index_select.out
    aten::embedding.out aten::where.self_out aten::eq.Scalar_out aten::eq.Tensor_out aten::ne.Scalar_out
    aten::ne.Tensor_out aten::gt.Scalar_out aten::gt.Tensor_out aten::lt.Scalar_out aten::lt.Tensor_out
    aten::ge.Scalar_out aten::ge.Tensor_out aten::le.Scalar_out aten::le.Tensor_out
    aten::logical_not.out aten::any.out aten::full_like.out aten::zeros_like.out aten::convolution.out
    aten::max_pool2d_with_indices.out aten::avg_pool2d.out
    aten::_native_batch_norm_legit_no_training.out aten::native_layer_norm.out""".split()
    have = {f"{k['name']}.{k['overload']}" for k in runtime.kernels()}
    missing = [r for r in required if r not in have]
    assert not missing, missing
    # Every kernel comes from kernels_portable, except the prim operators,
    # which the runtime registers itself.
    for k in runtime.kernels():
        if k["library"] == "runtime":
            assert k["name"].startswith("executorch_prim::") or k["name"] in (
                "aten::sym_size", "aten::sym_numel", "aten::_local_scalar_dense"), k
        else:
            assert k["library"] == "kernels_portable", k


def test_runtime_reports_no_refused_registrations(runtime):
    assert runtime.registration_errors() == []


# ---- complex tensors ----

REFUSED = FIXTURES.parent.parent / "tests" / "ops" / "refused"
COMPLEX = FIXTURES.parent.parent / "tests" / "ops" / "programs" / "complex"


@pytest.mark.parametrize("method,dtype", [("c64", np.complex64), ("c128", np.complex128)])
def test_complex_input_to_add_fails_naming_the_dtype(runtime, method, dtype):
    # complex_add.pte (tests/ops/export_refused.py): aten::add.out on two complex
    # inputs; add takes no complex dtype, so the execute fails naming it.
    m = runtime.load_file(REFUSED / "complex_add.pte").load_method(method)
    x = (np.arange(6).reshape(2, 3) * (1 - 1j)).astype(dtype)
    m.set_input(0, x)
    m.set_input(1, x)
    with pytest.raises(capi.PteronError) as e:
        m.execute()
    name = np.dtype(dtype).name  # "complex64" / "complex128", as pteron spells them
    assert f"unsupported dtype {name}" in e.value.message, e.value.message
    assert "aten::add.out" in e.value.message, e.value.message


def test_complex_input_of_the_wrong_width_is_refused_naming_both(runtime):
    m = runtime.load_file(REFUSED / "complex_add.pte").load_method("c64")
    with pytest.raises(capi.PteronError) as e:
        m.set_input(0, np.zeros((2, 3), dtype=np.complex128))
    assert "complex128" in e.value.message and "complex64" in e.value.message, e.value.message


@pytest.mark.parametrize("method,dtype", [("c64_2d", np.complex64), ("c128_3d", np.complex128)])
def test_pteron_run_reads_complex_npy_and_writes_its_real_view(pteron_run, tmp_path, method,
                                                               dtype):
    stem = COMPLEX / f"view_as_real_copy_out.{method}"
    x = np.load(f"{stem}.input_0.npy")
    assert x.dtype == dtype
    r = _run(pteron_run, COMPLEX / "view_as_real_copy_out.pte", "--method", method, "--input",
             f"{stem}.input_0.npy", "--output-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    y = np.load(tmp_path / "output_0.npy")
    assert y.shape == x.shape + (2,)
    np.testing.assert_array_equal(y[..., 0], x.real)
    np.testing.assert_array_equal(y[..., 1], x.imag)
