# SPDX-License-Identifier: BSD-3-Clause
"""Eager PyTorch's quantized_decomposed reference for tests/test_quantized_ops.py.

    PTERON_EXPORT_PYTHON tests/quantized/reference.py CASES.json INPUTS.npz OUTPUTS.npz

Runs with upstream's exporter environment (torch 2.13 and executorch 1.5.1: importing
executorch.exir.passes._quant_patterns_and_replacements defines the embedding operators).
Each case names an operator overload of the out-variant kernels and its arguments; the
functional overload PyTorch has for it is called and its results stored as CASE.out<i>.
"""
import json
import sys

import numpy as np
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines quantized_decomposed::)
import executorch.exir.passes._quant_patterns_and_replacements  # noqa: F401  (embeddings)

DTYPES = {"uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "uint16": torch.uint16,
          "int32": torch.int32, "int64": torch.int64, "float32": torch.float32,
          "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}
# out-variant overload -> PyTorch's functional overload
FUNCTIONAL = {"out": "default", "Tensor_out": "tensor", "dtype_out": "dtype"}


def arg(a, arrays):
    if a is None:
        return None
    kind, v = next(iter(a.items()))
    if kind == "array":
        x = arrays[v]
        if v.endswith(".bf16"):  # bfloat16 stored as its uint16 bits
            return torch.from_numpy(np.ascontiguousarray(x).view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(x))
    if kind == "dtype":
        return DTYPES[v]
    return v


def composed(c, args):
    """Operators PyTorch has no eager function for: the eager computation they stand for
    (the pattern upstream's exporter replaces with them; runtime/kernels/quantized/qlinear.cpp)."""
    q = torch.ops.quantized_decomposed
    if c["op"] == "add":
        a, sa, za, amin, amax, b, sb, zb, bmin, bmax, so, zo, omin, omax, dt = args
        x = (q.dequantize_per_tensor.default(a, sa, za, amin, amax, a.dtype)
             + q.dequantize_per_tensor.default(b, sb, zb, bmin, bmax, b.dtype))
        return q.quantize_per_tensor.default(x, so, zo, omin, omax, dt)
    if c["op"] == "mixed_mm":
        x, w, s = args[:3]
        return x @ (w.float() * s[:, None])
    if c["op"] == "mixed_linear":
        x, w, s = args[:3]
        n, k = w.shape
        g = s.shape[1] if s.dim() == 2 else 1
        wd = (w.float().reshape(n, g, k // g) * s.reshape(n, g, 1)).reshape(n, k)
        return torch.nn.functional.linear(x, wd)
    raise KeyError(c["op"])


def main():
    cases = json.load(open(sys.argv[1]))
    arrays = dict(np.load(sys.argv[2]))
    out = {}
    for c in cases:
        args = [arg(a, arrays) for a in c["args"]]
        kwargs = {k: arg(v, arrays) for k, v in c.get("kwargs", {}).items()}
        if c.get("composed"):
            res = composed(c, args)
        else:
            fn = getattr(getattr(torch.ops.quantized_decomposed, c["op"]),
                         FUNCTIONAL[c["overload"]])
            res = fn(*args, **kwargs)
        res = res if isinstance(res, (tuple, list)) else (res,)
        for i, r in enumerate(res):
            if r.dtype == torch.bfloat16:
                out[f"{c['name']}.out{i}"] = r.view(torch.int16).numpy().view(np.uint16)
            else:
                out[f"{c['name']}.out{i}"] = r.contiguous().numpy()
    np.savez(sys.argv[3], **out)


if __name__ == "__main__":
    main()
