# SPDX-License-Identifier: BSD-3-Clause
"""python -m pteron run MODEL.pte [--data FILE.ptd] [--method NAME] [--input FILE.npy]...
                                  [--output-dir DIR] [--iterations N] [--threads N]
python -m pteron info

``run`` behaves like the C++ ``pteron-run``: one line per output (dtype, shape,
min, max, mean), the median time per execution, ``output_<i>.npy`` files with
--output-dir. ``info`` prints the runtime and component files found, the ISA
level kernels_optimized chose, the thread count, and the operator and backend
counts. Errors print ``pteron: error: <message>`` and exit 1.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path


def _run(args) -> int:
    import numpy as np

    import pteron
    if args.threads is not None:
        pteron.set_num_threads(args.threads)
    program = pteron.Program.load(args.model, data=args.data)
    method = program.load_method(args.method)
    if args.iterations < 1:
        raise ValueError(f"--iterations {args.iterations}: give at least 1")
    inputs = []
    for p in args.input:
        try:
            a = np.load(p, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"--input {p}: not a readable .npy file ({e})") from None
        if not isinstance(a, np.ndarray):  # an .npz archive
            raise ValueError(f"--input {p}: an .npz archive, not an .npy array")
        inputs.append(a)
    times = []
    outs = []
    for _ in range(args.iterations):
        t0 = time.perf_counter()
        outs = method(*inputs)
        times.append((time.perf_counter() - t0) * 1e3)
    for i, o in enumerate(outs):
        if o.size and o.dtype.kind in "biuf":
            f = o.astype(np.float64)
            print(f"output {i}: {o.dtype} {list(o.shape)} min {f.min():g} max {f.max():g} "
                  f"mean {f.mean():g}")
        else:
            print(f"output {i}: {o.dtype} {list(o.shape)}")
        if args.output_dir:
            d = Path(args.output_dir)
            d.mkdir(parents=True, exist_ok=True)
            np.save(d / f"output_{i}.npy", o)
    print(f"median time per execution: {statistics.median(times):.3f} ms over {len(times)} "
          "iteration(s)")
    return 0


def _info(_args) -> int:
    import pteron
    from pteron import _runtime
    comps = pteron.components()
    print(f"pteron {pteron.version()}")
    for name, path in comps.items():
        print(f"  {name:18s} {path}")
    if "kernels_optimized" in _runtime._loaded:
        lib = _runtime._loaded["kernels_optimized"][1]
        lib.pteron_kernels_optimized_isa.restype = ctypes.c_char_p
        print(f"ISA (kernels_optimized, PTERON_ISA): {lib.pteron_kernels_optimized_isa().decode()}")
    else:
        print("ISA: kernels_optimized not installed")
    print(f"threads: {pteron.num_threads()}")
    ops = pteron.operators()
    print(f"operators: {len(ops)} kernel entries, {len({(o.name, o.overload) for o in ops})} "
          "distinct operator overloads")
    print(f"backends: {', '.join(b.id for b in pteron.backends()) or 'none'}")
    print(_cuda_status(_runtime._loaded))
    return 0


def _cuda_status(loaded) -> str:
    """One line: backend_cuda's train and whether the driver is usable (pteron/cuda.h's
    pteron_cuda_driver_status, which loads the driver as the delegate would)."""
    if "extension_cuda" not in loaded:
        return "CUDA: no CUDA component in this build"
    lib = loaded["extension_cuda"][1]
    lib.pteron_cuda_train.restype = ctypes.c_char_p
    f = lib.pteron_cuda_driver_status
    f.restype = ctypes.c_int32
    f.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int32),
                  ctypes.POINTER(ctypes.c_int32)]
    msg = ctypes.create_string_buffer(1024)
    devices, version = ctypes.c_int32(0), ctypes.c_int32(0)
    code = f(msg, len(msg), ctypes.byref(devices), ctypes.byref(version))
    train = lib.pteron_cuda_train().decode() or "none (no device code)"
    if code == 0:
        v = version.value
        driver = f"usable, {devices.value} device(s), CUDA {v // 1000}.{v % 1000 // 10}"
    else:
        driver = f"not usable: {msg.value.decode('utf-8', 'replace')}"
    return f"CUDA: backend_cuda of train {train}; driver {driver}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pteron")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a program, like pteron-run")
    r.add_argument("model")
    r.add_argument("--data", help="the program's external data file (.ptd)")
    r.add_argument("--method", default="forward")
    r.add_argument("--input", action="append", default=[], metavar="FILE.npy")
    r.add_argument("--output-dir")
    r.add_argument("--iterations", type=int, default=1)
    r.add_argument("--threads", type=int)
    sub.add_parser("info", help="components, ISA, threads, operator and backend counts")
    args = ap.parse_args(argv)
    from pteron import _runtime
    try:
        rc = _run(args) if args.cmd == "run" else _info(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return rc
    except BrokenPipeError:
        # Whoever read stdout has gone (`python -m pteron info | head`): nothing is left to
        # say. Python's documented idiom: stdout to devnull, so the flush at exit is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (_runtime.Error, TypeError, ValueError, ImportError, OSError) as e:
        print(f"pteron: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
