# SPDX-License-Identifier: BSD-3-Clause
"""Fuzz target "python": the bytes are a .pte program, given to the Python module as an
application gives it: ``pteron.Program.load(bytes)``, ``method_names``, then per method
``load_method(name, max_allocated_bytes=1 GiB)``, inputs made from the method's own
``TensorSpec``s (each tensor input at its dtype and shape, small values; each scalar input 1),
one call, and a look at every output and at ``method.outputs``.

Beyond the C-level ``program`` target (tests/fuzz/fuzz_program.cpp), this reaches the
extension's binding code (python/src/pteron_ext.cpp: names, value info, the per-call path
through numpy's C API, error translation) and the Python layer (python/pteron/_runtime.py).

The contract: every input ends in success or in a ``pteron.Error``. Anything else is a
failure: a native crash or sanitizer report, or another exception (a TypeError from the
module's own checks on an input made from the method's own specs, an IndexError, a
UnicodeDecodeError), which this target lets propagate.

Two ways to run it:
  - a campaign, with atheris (scripts/fuzz.sh python SECONDS): ``fuzz_python.py [libFuzzer
    flags] CORPUS_DIR...``, under the fuzz build's extension and ASan+UBSan runtime;
  - a replay, with any build of the module and no atheris: ``fuzz_python.py --replay PATH...``
    (files, or folders of files) runs each input once and prints one line of counts;
    tests/test_python.py replays the kept corpus this way.
"""
import os
import sys

import numpy as np

# The most bytes an input may have; a method with a larger input is loaded, not called.
MAX_INPUT_BYTES = 64 << 20
# The memory budget of each method load (the campaign's memory limit is 2 GiB).
MAX_ALLOCATED_BYTES = 1 << 30

counts = {"inputs": 0, "programs": 0, "methods": 0, "calls": 0}


def _input_for(spec):
    """An input made from `spec`, or None when this target cannot make one."""
    if spec.kind in ("int", "bool", "double"):
        return 1
    if spec.kind != "tensor" or not isinstance(spec.dtype, np.dtype):
        return None  # a "none" input, or a dtype numpy lacks (bfloat16): the C target has them
    n = 1
    for s in spec.shape:
        n *= s
    if n * spec.dtype.itemsize > MAX_INPUT_BYTES:
        return None
    i = np.arange(n)
    if spec.dtype.kind == "f":
        a = 0.25 * (i % 7 - 3)
    elif spec.dtype.kind == "c":
        a = 0.5 * (i % 3) - 0.25j
    elif spec.dtype.kind == "b":
        a = (i % 3) & 1
    else:
        a = i % 3
    return np.asarray(a, dtype=spec.dtype).reshape(spec.shape)


def _check_outputs(method, outs):
    if not isinstance(outs, list):
        raise AssertionError(f"a call returned {type(outs).__name__}, not a list")
    for j, o in enumerate(outs):
        if isinstance(o, np.ndarray):
            if not o.flags.c_contiguous:
                raise AssertionError(f"output {j} is not C-contiguous")
            with np.errstate(all="ignore"):
                o.sum()  # reads every element
        elif o is not None and not isinstance(o, (int, float, bool)):
            raise AssertionError(f"output {j} is a {type(o).__name__}")
    repr(method)
    method.outputs  # noqa: B018 (the specs of the last call's outputs)


def one_input(data: bytes) -> None:
    import pteron

    counts["inputs"] += 1
    try:
        program = pteron.Program.load(data)
    except pteron.Error:
        return
    counts["programs"] += 1
    repr(program)
    for name in program.method_names:
        try:
            method = program.load_method(name, max_allocated_bytes=MAX_ALLOCATED_BYTES)
        except pteron.Error:
            continue
        counts["methods"] += 1
        args = [_input_for(spec) for spec in method.inputs]
        if any(a is None for a in args):
            continue
        try:
            outs = method(*args)
        except pteron.Error:
            continue
        counts["calls"] += 1
        _check_outputs(method, outs)


def _replay(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p))
        else:
            files.append(p)
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        try:
            one_input(data)
        except BaseException:
            print(f"fuzz_python: the input {f} broke the contract:", file=sys.stderr)
            raise
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


def main(argv):
    if len(argv) > 1 and argv[1] == "--replay":
        _replay(argv[2:])
        return
    import atheris

    with atheris.instrument_imports(include=["pteron"]):
        import pteron  # noqa: F401
    # libFuzzer runs its argv[0] for its child processes: scripts/fuzz.sh's wrapper names itself.
    argv = [os.environ.get("PTERON_FUZZ_ARGV0", argv[0])] + argv[1:]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
