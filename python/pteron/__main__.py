# SPDX-License-Identifier: BSD-3-Clause
"""python -m pteron run MODEL.pte [--data FILE.ptd] [--method NAME] [--input FILE.npy]...
                                  [--output-dir DIR] [--iterations N] [--threads N]
python -m pteron generate MODEL.pte (--tokenizer FILE --prompt TEXT | --prompt-tokens IDS)
                                       [--max-new-tokens N] [--temperature T] [--top-p P]
                                       [--seed S] [--no-bos] [--threads N]
python -m pteron info

``run`` behaves like the C++ ``pteron-run``: one line per output (dtype, shape,
min, max, mean), the median time per execution, ``output_<i>.npy`` files with
--output-dir. ``generate`` runs an LLM program made by upstream's exporter (``pteron.llm``): it streams
the generated text (or token ids, without a tokenizer) to stdout as each token comes, then
prints the prompt and generated token counts and the prefill and decode tokens per second to
stderr. ``info`` prints the runtime and component files found, the ISA
level kernels_optimized chose, the thread count, and the operator and backend
counts. Errors print ``pteron: error: <message>`` and exit 1.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import re
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
        if not os.path.isfile(p):
            raise ValueError(f"--input {p}: not a regular file")
        try:
            a = np.load(p, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"--input {p}: not a readable .npy file ({e})") from None
        if not isinstance(a, np.ndarray):  # an .npz archive
            raise ValueError(f"--input {p}: an .npz archive, not an .npy array")
        inputs.append(a)
    times = []
    outs = []
    for it in range(args.iterations):
        t0 = time.perf_counter()
        try:
            outs = method(*inputs)
        except (pteron.Error, TypeError, ValueError) as e:
            # the first call checks the inputs: name the file an input came from
            bad = re.match(r"input (\d+)", str(e))
            if it == 0 and bad and int(bad.group(1)) < len(args.input):
                raise type(e)(f"{e} (from '{args.input[int(bad.group(1))]}')") from None
            raise
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


def _generate(args) -> int:
    import pteron
    from pteron import llm
    if args.threads is not None:
        pteron.set_num_threads(args.threads)
    if args.prompt is None and args.prompt_tokens is None:
        raise ValueError("give a prompt: --prompt TEXT (with --tokenizer) or --prompt-tokens "
                         "1,2,3")
    if args.prompt is not None and args.prompt_tokens is not None:
        raise ValueError("give the prompt as text (--prompt) or as token ids (--prompt-tokens), "
                         "not both")
    gen = llm.Generator(args.model)
    tok = llm.load_tokenizer(args.tokenizer) if args.tokenizer else None
    if args.prompt is not None:
        if tok is None:
            raise ValueError("--prompt needs --tokenizer (or give --prompt-tokens)")
        prompt = gen.encode_prompt(tok, args.prompt, bos=not args.no_bos)
    else:
        try:
            prompt = [int(t) for t in args.prompt_tokens.replace(",", " ").split()]
        except ValueError:
            raise ValueError(f"--prompt-tokens {args.prompt_tokens!r}: give integer token ids "
                             "separated by commas") from None
    out = sys.stdout
    shown = ""
    ids: list = []

    def stream(t: int) -> None:
        nonlocal shown
        ids.append(t)
        if tok is None:
            out.write(f"{t} ")
        else:  # the text of all tokens so far, printed from where the last print ended
            text = tok.decode(ids)
            if text.startswith(shown) and not text.endswith("\ufffd"):
                out.write(text[len(shown):])
                shown = text
        out.flush()

    res = gen.generate(prompt, args.max_new_tokens, temperature=args.temperature,
                       top_p=args.top_p, seed=args.seed, on_token=stream)
    out.write("\n")
    out.flush()
    print(f"prompt {len(res.prompt)} tokens, generated {len(res.tokens)} ({res.stop_reason}); "
          f"prefill {res.prefill_tokens_per_second:.1f} tokens/s, decode "
          f"{res.decode_tokens_per_second:.1f} tokens/s", file=sys.stderr)
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
    g = sub.add_parser("generate", help="generate text with an LLM program (pteron.llm)")
    g.add_argument("model")
    g.add_argument("--tokenizer", help="tokenizer.json, a SentencePiece or tiktoken model")
    g.add_argument("--prompt", help="the prompt text (needs --tokenizer)")
    g.add_argument("--prompt-tokens", help="the prompt as token ids: 1,2,3")
    g.add_argument("--max-new-tokens", type=int,
                   help="most tokens to generate (default: until a stop token or the "
                        "context's end)")
    g.add_argument("--temperature", type=float, default=0.0,
                   help="sampling temperature; 0 or less: greedy (the default)")
    g.add_argument("--top-p", type=float, default=1.0,
                   help="nucleus sampling: keep the most likely tokens up to this probability "
                        "(0, 1]; default 1")
    g.add_argument("--seed", type=int, help="the sampling seed (a non-negative integer)")
    g.add_argument("--no-bos", action="store_true", help="do not put the BOS id first")
    g.add_argument("--threads", type=int)
    sub.add_parser("info", help="components, ISA, threads, operator and backend counts")
    args = ap.parse_args(argv)
    from pteron import _runtime
    try:
        rc = {"run": _run, "generate": _generate, "info": _info}[args.cmd](args)
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
