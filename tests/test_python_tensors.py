# SPDX-License-Identifier: BSD-3-Clause
"""The module's tensors beyond float32 numpy arrays: float16 and bfloat16 in and out (bfloat16 as
ml_dtypes.bfloat16 where ml_dtypes is installed, widened to float32 otherwise), DLPack tensors in
(read in place) and out (output="dlpack"/"torch"), and the per-method options of
Program.load_method (num_threads). The torch tests run in the interpreter that has torch (upstream's
exporter venv, PTERON_EXPORT_PYTHON or .venv-export) when it is the same CPython as this one (the
extension is built for this one); elsewhere they are skipped, and numpy's DLPack covers the rest."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run
from test_python import ok, py

FIXTURES = REPO / "models" / "fixtures"
LLM = FIXTURES / "llm"

try:
    import ml_dtypes  # noqa: F401
    HAVE_ML_DTYPES = True
except ImportError:
    HAVE_ML_DTYPES = False

# A child without ml_dtypes, whatever is installed: its import fails.
NO_ML_DTYPES = "import sys; sys.modules['ml_dtypes'] = None\n"


def torch_python():
    """The interpreter with torch (and the same CPython as this one), or None."""
    cands = [os.environ.get("PTERON_EXPORT_PYTHON"), str(REPO / ".venv-export" / "bin" / "python")]
    for c in cands:
        if not c or not Path(c).exists():
            continue
        r = subprocess.run([c, "-c", "import sys, torch; print(sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode == 0 and r.stdout.strip() == str(tuple(sys.version_info[:2])):
            return c
    return None


@pytest.fixture(scope="module")
def torch_py():
    p = torch_python()
    if p is None:
        pytest.skip("no interpreter with torch of this CPython version (PTERON_EXPORT_PYTHON, "
                    ".venv-export)")
    return p


def py_with(python, stage, code, env=None):
    import textwrap
    e = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PTERON_NUM_THREADS")}
    e["PYTHONPATH"] = str(stage)
    e.update(env or {})
    return run([python, "-c", textwrap.dedent(code)], timeout=180, env=e)


def test_float16_inputs_and_outputs_are_numpy_float16(stage):
    out = ok(py(stage, f"""
        import numpy as np, pteron
        d = "{LLM}/custom_sdpa_f16"
        m = pteron.Program.load(d + ".pte").load_method()
        print([str(s.dtype) for s in m.inputs], m.outputs[0].dtype)
        ins = [np.load(f"{{d}}.forward.input_{{i}}.npy") for i in range(4)]
        (y,) = m(*ins)
        e = np.load(d + ".forward.expected_0.npy")
        print("f16", y.dtype, e.dtype, np.allclose(y, e, rtol=2e-3, atol=2e-3))
        # float16 through the XNNPACK delegate
        h = "{FIXTURES}/xnnpack_half/mlp_f16"
        m = pteron.Program.load(h + ".pte").load_method()
        (y,) = m(np.load(h + ".forward.input_0.npy"))
        print("half", m.inputs[0].dtype, y.dtype, y.dtype == m.outputs[0].dtype, np.allclose(y, np.load(h + ".forward.expected_0.npy"),
                                           rtol=1e-2, atol=1e-2))
        try:
            m(np.load(h + ".forward.input_0.npy").astype(np.float32))
        except TypeError as e:
            print("TypeError", e)
    """))
    assert "['float16', 'float16', 'float16', 'int64'] float16" in out
    assert "f16 float16 float16 True" in out
    assert "half float16 float16 True True" in out
    assert "TypeError input 0: dtype float32 does not match the method's float16" in out


BF16_CALL = f"""
import numpy as np, pteron
d = "{LLM}/custom_sdpa_bf16"
m = pteron.Program.load(d + ".pte").load_method()
bits = [np.load(f"{{d}}.forward.input_{{i}}.npy") for i in range(4)]  # bfloat16 as uint16 bits
expected = np.load(d + ".forward.expected_0.npy").astype(np.uint32) << 16
expected = expected.view(np.float32)
"""


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="ml_dtypes is not installed (scripts/setup.sh)")
def test_bfloat16_in_and_out_as_ml_dtypes_arrays(stage):
    out = ok(py(stage, BF16_CALL + """
import ml_dtypes
bf = np.dtype(ml_dtypes.bfloat16)
print("specs", m.inputs[0].dtype == bf, m.outputs[0].dtype == bf)
ins = [b.view(bf) for b in bits[:3]] + [bits[3]]
(y,) = m(*ins)  # C-contiguous arrays of the inputs' dtypes: the one-native-call path
print("out", y.dtype == bf, y.shape)
print("close", np.allclose(y.astype(np.float32), expected, rtol=2e-2, atol=2e-2))
np.save("bits.npy", y.view(np.uint16))
(y2,) = m(*[np.asfortranarray(a) if a.ndim > 1 else a for a in ins])  # prepared first
print("same", np.array_equal(y2.view(np.uint16), y.view(np.uint16)))
try:
    m(*([bits[0]] + ins[1:]))
except TypeError as e:
    print("TypeError", e)
"""))
    assert "specs True True" in out and "out True (1, 2, 4, 16)" in out
    assert "close True" in out and "same True" in out
    assert "TypeError input 0: dtype uint16 does not match the method's bfloat16" in out


LLAMA_BF16 = f"""
import numpy as np, pteron
d = "{FIXTURES}/llama/tiny_bf16_portable"
m = pteron.Program.load(d + ".pte").load_method()
tokens, pos = np.load(d + ".case0.tokens.npy"), np.load(d + ".case0.pos.npy")
"""


def test_bfloat16_without_ml_dtypes_is_widened_and_names_what_to_install(stage):
    out = ok(py(stage, NO_ML_DTYPES + BF16_CALL + """
print("specs", m.inputs[0].dtype, m.outputs[0].dtype)
try:
    m(*bits)
except TypeError as e:
    print("TypeError", e)
"""))
    assert "specs bfloat16 bfloat16" in out
    assert ("TypeError input 0: the method's dtype bfloat16 has no numpy equivalent; install "
            "ml_dtypes") in out
    # A bfloat16 output: float32 (exact) without ml_dtypes, bfloat16 with it, the same bits as
    # a DLPack tensor either way.
    widened = ok(py(stage, NO_ML_DTYPES + LLAMA_BF16 + """
(y,) = m(tokens, pos)
(z,) = m(tokens, pos, output="dlpack")
bits, is_bf16 = pteron._runtime._native().dlpack_view(z, z)
print(y.dtype, is_bf16, np.array_equal((bits.astype(np.uint32) << 16).view(np.float32), y))
print(y.tobytes().hex())
""")).strip().splitlines()
    assert widened[0] == "float32 True True"
    if HAVE_ML_DTYPES:
        native = ok(py(stage, LLAMA_BF16 + """
(y,) = m(tokens, pos)
print(y.dtype, y.astype(np.float32).tobytes().hex())
""")).strip().splitlines()[-1].split()
        assert native[0] == "bfloat16" and native[1] == widened[1]


def test_dlpack_outputs_share_memory_and_keep_their_dtype(stage):
    out = ok(py(stage, f"""
        import numpy as np, pteron
        m = pteron.Program.load("{FIXTURES}/mlp.pte").load_method()
        x = np.load("{FIXTURES}/mlp.forward.input_0.npy")
        (want,) = m(x)
        (t,) = m(x, output="dlpack")
        print("device", tuple(t.__dlpack_device__()))
        a, b = np.from_dlpack(t), np.from_dlpack(t)
        print("equal", np.array_equal(a, want), "shared", np.shares_memory(a, b))
        # the output is the caller's: a later call leaves it alone
        m(x + 1)
        print("kept", np.array_equal(np.from_dlpack(t), want))
        try:
            m(x, output="jax")
        except ValueError as e:
            print("ValueError", e)
        # An input that is only a DLPack producer (not an ndarray) is read in place
        class Producer:
            def __init__(self, a): self.a = a
            def __dlpack__(self, **kw): return self.a.__dlpack__(**kw)
            def __dlpack_device__(self): return self.a.__dlpack_device__()
        from pteron._runtime import _from_dlpack
        view, bits = _from_dlpack(0, Producer(x))
        print("in place", np.shares_memory(view, x), bits)
        print("producer", np.array_equal(m(Producer(x))[0], want))
        print("strided", np.array_equal(m(Producer(np.asfortranarray(x)))[0], want))
    """))
    assert "device (1, 0)" in out
    assert "equal True shared True" in out and "kept True" in out
    assert "ValueError output must be one of ['numpy', 'dlpack', 'torch'], not 'jax'" in out
    assert "in place True False" in out and "producer True" in out and "strided True" in out


def test_torch_tensors_in_and_out_without_copies(stage, torch_py):
    out = ok(py_with(torch_py, stage, BF16_CALL + f"""
import torch
def bf16(a): return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
ins = [bf16(b) for b in bits[:3]] + [torch.from_numpy(bits[3])]
(y,) = m(*ins, output="torch")
print("torch out", type(y).__name__, y.dtype, tuple(y.shape))
print("close", torch.allclose(y.float(), torch.from_numpy(expected), rtol=2e-2, atol=2e-2))
(z,) = m(*ins, output="dlpack")
t1, t2 = torch.from_dlpack(z), torch.from_dlpack(z)
t1.zero_()
print("shared", bool((t2 == 0).all()))
# inputs: a contiguous tensor of the input's dtype is read in place
from pteron._runtime import _from_dlpack
v, is_bits = _from_dlpack(0, ins[0])
print("in place", np.shares_memory(v, ins[0].view(torch.int16).numpy()), is_bits,
      "ml_dtypes" if pteron._runtime._BF16 is not None else "")
# a transposed view is copied once, and gives the same result
t = ins[0].transpose(2, 3).contiguous().transpose(2, 3)
(y2,) = m(t, *ins[1:], output="torch")
print("strided", t.is_contiguous(), torch.equal(y2, y))
f = pteron.Program.load("{FIXTURES}/mlp.pte").load_method()
x = torch.from_numpy(np.load("{FIXTURES}/mlp.forward.input_0.npy"))
(o,) = f(x, output="torch")
print("f32", o.dtype, torch.equal(o, torch.from_numpy(f(x.numpy())[0])))
try:
    f(x.double())
except TypeError as e:
    print("TypeError", e)
"""))
    assert "torch out Tensor torch.bfloat16 (1, 2, 4, 16)" in out
    assert "close True" in out and "shared True" in out
    # without ml_dtypes (upstream's venv has none) the bfloat16 tensor is read as its bits
    assert "in place True True" in out or ("in place True False" in out and "ml_dtypes" in out)
    assert "strided False True" in out and "f32 torch.float32 True" in out
    assert "TypeError input 0: dtype float64 does not match the method's float32" in out


# Context switches of the pool's workers (threads started after the program loads) while a
# method runs 50 times: a serial method never wakes them.
SWITCHES = f"""
import os, threading, time, numpy as np, pteron
def threads(): return set(os.listdir("/proc/self/task"))
def switches(tids):
    n = 0
    for t in tids:
        try:
            for l in open(f"/proc/self/task/{{t}}/status"):
                if l.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(l.split()[1])
        except FileNotFoundError:
            pass
    return n
before = threads()
d = "{FIXTURES}/cnn_xnnpack"
p = pteron.Program.load(d + ".pte")
serial, pooled = p.load_method(num_threads=1), p.load_method()
x = np.load(d + ".forward.input_0.npy")
pteron.set_num_threads(2)
pooled(x)
time.sleep(0.3)
workers = threads() - before
def count(m):
    s = switches(workers)
    for _ in range(50):
        m(x)
        time.sleep(0.002)
    return switches(workers) - s
print("workers", len(workers) > 0)
print("serial", count(serial), "pooled", count(pooled))
print("same", np.array_equal(serial(x)[0], pooled(x)[0]), serial.num_threads, pooled.num_threads)
for bad in (0, 1025, 1.5, True):
    try:
        p.load_method(num_threads=bad)
    except (ValueError, TypeError) as e:
        print(type(e).__name__, e)
"""


def test_num_threads_1_runs_the_method_on_the_calling_thread(stage):
    out = ok(py(stage, SWITCHES))
    assert "workers True" in out
    line = next(l for l in out.splitlines() if l.startswith("serial "))
    serial, pooled = int(line.split()[1]), int(line.split()[3])
    assert serial == 0 and pooled > 0, line
    assert "same True 1 None" in out
    assert "ValueError load_method: num_threads must be at least 1, not 0" in out
    assert "ValueError load_method: num_threads must be at most 1024, not 1025" in out
    assert "TypeError load_method: num_threads must be an int or None, not float" in out
    assert "TypeError load_method: num_threads must be an int or None, not bool" in out


def test_num_threads_n_caps_the_threads_of_each_parallel_operator(stage):
    """pteron_threadpool_set_thread_cap (pteron/threadpool.h), which num_threads=N sets on the
    executing thread: at most N threads run the chunks of a parallel_for at once (each chunk
    sleeps, so the threads of a 4-thread pool overlap on any machine), for that thread only; a
    method with num_threads=2 gives the same outputs and leaves the thread's cap as it was."""
    out = ok(py(stage, f"""
        import ctypes, threading, time, numpy as np, pteron
        pteron.set_num_threads(4)
        runtime = ctypes.CDLL(pteron.components()["runtime"])
        tp = pteron._runtime._loaded["threadpool"][1]
        tp.pteron_threadpool_set_thread_cap.argtypes = [ctypes.c_size_t]
        tp.pteron_threadpool_set_thread_cap.restype = ctypes.c_size_t
        FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
        runtime.pteron_parallel_for.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                                FN, ctypes.c_void_p]
        lock, st = threading.Lock(), {{}}
        def body(user, b, e):
            with lock:
                st["now"] += 1
                st["max"] = max(st["max"], st["now"])
            time.sleep(0.02)
            with lock:
                st["now"] -= 1
        cb = FN(body)
        def most_at_once():
            st.update(now=0, max=0)
            runtime.pteron_parallel_for(0, 32, 1, cb, None)
            return st["max"]
        for cap in (0, 2, 1, 3):
            tp.pteron_threadpool_set_thread_cap(cap)
            print("cap", cap, most_at_once())
        # the cap is the thread's own: another thread's calls use the whole pool
        other = []
        t = threading.Thread(target=lambda: other.append(most_at_once()))
        t.start(); t.join()
        print("other thread", other[0])
        print("previous", tp.pteron_threadpool_set_thread_cap(0))
        d = "{FIXTURES}/cnn_xnnpack"
        p = pteron.Program.load(d + ".pte")
        x = np.load(d + ".forward.input_0.npy")
        two, whole = p.load_method(num_threads=2), p.load_method()
        print("same", np.array_equal(two(x)[0], whole(x)[0]), two.num_threads)
        print("restored", tp.pteron_threadpool_set_thread_cap(0))
    """))
    assert "cap 0 4" in out and "cap 2 2" in out and "cap 1 1" in out and "cap 3 3" in out, out
    assert "other thread 4" in out and "previous 3" in out
    assert "same True 2" in out and "restored 0" in out
