# SPDX-License-Identifier: BSD-3-Clause
"""CUDA lowering: ``CudaPartitioner`` and the ``PteronCudaBackend`` preprocess.

    from executorch.exir import to_edge_transform_and_lower
    from pteron.lowering.cuda import CudaPartitioner
    program = to_edge_transform_and_lower(
        torch.export.export(model, example_inputs), partitioner=[CudaPartitioner()]
    ).to_executorch()

The supported float32 subgraphs become calls of delegate ``PteronCudaBackend``
(upstream names a delegate after its ``BackendDetails`` class). Each call's
processed blob is pteron's own flatbuffer (``backends/cuda/schema/cuda_graph.fbs``,
identifier ``PTCU``, version 1): values (dtype, shape, delegate argument index
or named-data key) and nodes, each naming a kernel of pteron's kernel table with
its integer and float parameters. Weights go to the program's named data
(``NamedDataStore``), keyed by the SHA-256 of their bytes. Nothing here needs
nvcc, a GPU or pteron's native extension.

Supported (edge dialect, float32, static shapes): ``addmm``, ``mm``, ``bmm``;
``convolution`` (2-D, not transposed), with a following eval batch norm folded
into its weights; ``add``, ``sub``, ``mul``, ``div`` (``Tensor``, broadcasting);
``relu``, ``sigmoid``, ``tanh``, ``gelu``, ``silu``, ``hardswish``, ``hardtanh``
and ``clamp``, ``exp``, ``rsqrt``, ``neg``, ``sqrt``, ``abs``, ``pow`` by a
scalar; a contiguous ``_clone_dim_order``; ``_softmax`` and
``_log_softmax``; ``native_layer_norm``; ``mean.dim`` and ``sum.dim_IntList``;
``max_pool2d_with_indices`` (values only), ``avg_pool2d`` and
``_adaptive_avg_pool2d`` to 1 x 1; ``view_copy``, ``unsqueeze_copy``,
``squeeze_copy``, ``permute_copy``, ``slice_copy``, ``select_copy``,
``expand_copy``, ``split_with_sizes_copy`` and ``cat`` (up to 8 inputs). Layout
operators on constants (a linear layer's transposed weight) are done at lowering:
their results are constants of the blob. Scaled dot-product attention
lowers through its decomposition (``bmm``, ``mul``, ``_softmax``). Other
operators, and any node that is not float32, stay on the CPU path.
"""
from __future__ import annotations

import hashlib
import operator
from typing import Dict, List

import flatbuffers
import numpy as np
import torch
from executorch.exir._serialize._named_data_store import NamedDataStore
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import (
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from executorch.exir.backend.utils import tag_constant_data
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export.exported_program import ExportedProgram
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

BLOB_VERSION = 1
FILE_IDENTIFIER = b"PTCU"
_FLOAT32 = 6  # ScalarType numbering (runtime/core/schema/scalar_type.fbs)

# Edge operator -> what preprocess writes. The kernel table is
# backends/cuda/src/kernels.h; each kernel's parameters are documented there.
_BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3}
_UNARY = {"relu": 0, "sigmoid": 1, "tanh": 2, "gelu": 3, "silu": 4, "hardswish": 5, "exp": 6,
          "rsqrt": 7, "neg": 8, "sqrt": 9, "abs": 10}
_CLAMP = 11  # unary_f32 op: clamp to floats {lo, hi}
_POW = 12    # unary_f32 op: pow(x, floats {exponent})
_MAX_CAT = 8


def _edge(name: str, overload: str = "default"):
    return getattr(getattr(exir_ops.edge.aten, name), overload)


def _supported_targets() -> Dict[object, str]:
    t = {
        _edge("addmm"): "addmm", _edge("mm"): "mm", _edge("bmm"): "bmm",
        _edge("convolution"): "conv",
        _edge("_native_batch_norm_legit_no_training"): "batch_norm",
        _edge("permute_copy"): "permute", _edge("view_copy"): "view",
        _edge("unsqueeze_copy"): "view", _edge("squeeze_copy", "dims"): "view",
        _edge("slice_copy", "Tensor"): "slice", _edge("select_copy", "int"): "select",
        _edge("expand_copy"): "expand", _edge("cat"): "cat",
        _edge("_softmax"): "softmax", _edge("_log_softmax"): "log_softmax",
        _edge("native_layer_norm"): "layer_norm",
        _edge("mean", "dim"): "mean", _edge("sum", "dim_IntList"): "sum",
        _edge("max_pool2d_with_indices"): "max_pool", _edge("avg_pool2d"): "avg_pool",
        _edge("_adaptive_avg_pool2d"): "adaptive_avg_pool",
        _edge("hardtanh"): "hardtanh", _edge("clamp"): "clamp",
        _edge("pow", "Tensor_Scalar"): "pow",
        _edge("split_with_sizes_copy"): "split",
        exir_ops.edge.dim_order_ops._clone_dim_order.default: "clone",
    }
    for name in _BINARY:
        t[_edge(name, "Tensor")] = name
    for name in _UNARY:
        t[_edge(name)] = name
    return t


def _val(node):
    v = node.meta.get("val")
    return v[0] if isinstance(v, (tuple, list)) and v else v


def _is_float32_tensor(v) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype == torch.float32


def _only_first_output_used(node: torch.fx.Node) -> bool:
    """A multi-output node whose users all take output 0 (getitem 0)."""
    return all(u.op == "call_function" and u.target is operator.getitem and u.args[1] == 0
               for u in node.users)


def _static_ints(xs) -> bool:
    return all(isinstance(x, int) for x in xs)


class _Support(OperatorSupportBase):
    """Which nodes the delegate takes: a supported target with supported
    arguments, float32 in and out; output 0 of a supported multi-output node."""

    def __init__(self, exported_program: ExportedProgram | None = None):
        self.targets = _supported_targets()
        self.ep = exported_program

    def _is_param(self, node) -> bool:
        if self.ep is None or not isinstance(node, torch.fx.Node) or node.op != "placeholder":
            return False
        sig = self.ep.graph_signature
        return node.name in sig.inputs_to_parameters or node.name in sig.inputs_to_buffers or \
            node.name in getattr(sig, "inputs_to_lifted_tensor_constants", {})

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            src = node.args[0]
            if not isinstance(src, torch.fx.Node):
                return False
            split = self.targets.get(src.target) == "split"
            return ((node.args[1] == 0 or split)
                    and self.is_node_supported(submodules, src))
        kind = self.targets.get(node.target)
        if kind is None or not _is_float32_tensor(_val(node)):
            return False
        if any(d is None or not isinstance(d, int) for d in _val(node).shape):
            return False  # dynamic shapes stay on the CPU
        tensors = [a for a in node.args if isinstance(a, torch.fx.Node)]
        if kind == "cat":
            tensors = list(node.args[0])
            if len(tensors) > _MAX_CAT or len(tensors) == 0:
                return False
        if not all(_is_float32_tensor(_val(a)) for a in tensors):
            return False
        if kind == "addmm" and (node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1):
            return False
        if kind in _BINARY and (len(node.args) != 2 or node.kwargs):
            return False
        if kind == "gelu" and node.kwargs.get("approximate", "none") not in ("none", "tanh"):
            return False
        if kind == "conv":
            _x, w, _b, stride, padding, dilation, transposed, _op, _groups = node.args
            return (len(_val(w).shape) == 4 and not transposed and _static_ints(stride)
                    and _static_ints(padding) and _static_ints(dilation) and len(stride) == 2)
        if kind == "batch_norm":
            # folded into the convolution before it: constant statistics, the conv's only user
            x = node.args[0]
            return (isinstance(x, torch.fx.Node) and self.targets.get(x.target) == "conv"
                    and len(x.users) == 1 and all(self._is_param(a) for a in node.args[1:5])
                    and self._is_param(x.args[1]) and (x.args[2] is None or self._is_param(x.args[2]))
                    and _only_first_output_used(node))
        if kind in ("layer_norm", "max_pool"):
            return _only_first_output_used(node)
        if kind == "split":  # every output through a getitem
            return all(u.op == "call_function" and u.target is operator.getitem for u in node.users)
        if kind in ("mean", "sum") and node.kwargs.get("dtype") is not None:
            return False
        if kind == "adaptive_avg_pool":
            return list(node.args[1]) == [1, 1]
        if kind in ("hardtanh", "clamp"):
            rest = node.args[1:]
            return all(isinstance(v, (int, float)) for v in rest if v is not None) and len(rest) >= 1
        if kind == "slice":
            return len(node.args) < 5 or (isinstance(node.args[4], int) and node.args[4] > 0)
        if kind == "pow":
            return isinstance(node.args[1], (int, float))
        if kind == "clone":  # a contiguous copy only
            order = node.kwargs.get("dim_order")
            return order is None or list(order) == list(range(len(_val(node).shape)))
        return True


class CudaPartitioner(Partitioner):
    """Tags the supported float32 subgraphs for ``PteronCudaBackend``.

    Partitions are the largest connected groups of supported nodes
    (torch's CapabilityBasedPartitioner), so their number stays small.
    Unsupported operators, and every non-float32 node, stay outside.
    """

    def __init__(self, compile_specs: List[CompileSpec] | None = None):
        super().__init__()
        self.delegation_spec = DelegationSpec(PteronCudaBackend.__name__, list(compile_specs or []))

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        gm = exported_program.graph_module
        parts = CapabilityBasedPartitioner(gm, _Support(exported_program),
                                           allows_single_node_partition=True).propose_partitions()
        tags = {}
        for i, p in enumerate(parts):
            tag = f"pteron_cuda_{i}"
            for node in p.nodes:
                node.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
        tag_constant_data(exported_program)
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)


# ---- the blob ----------------------------------------------------------------

class _Value:
    def __init__(self, dtype: int, shape, external: int = -1, is_output: bool = False, constant: str | None = None):
        self.dtype, self.shape = dtype, [int(s) for s in shape]
        self.external, self.is_output, self.constant = external, is_output, constant


def _build(values: List[_Value], nodes: List[dict]) -> bytes:
    b = flatbuffers.Builder(1024)

    def vec_long(xs):
        b.StartVector(8, len(xs), 8)
        for x in reversed(xs):
            b.PrependInt64(int(x))
        return b.EndVector()

    def vec_uint(xs):
        b.StartVector(4, len(xs), 4)
        for x in reversed(xs):
            b.PrependUint32(int(x))
        return b.EndVector()

    def vec_float(xs):
        b.StartVector(4, len(xs), 4)
        for x in reversed(xs):
            b.PrependFloat32(float(x))
        return b.EndVector()

    def vec_tables(offs):
        b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    value_offs = []
    for v in values:
        shape = vec_long(v.shape)
        const = b.CreateString(v.constant) if v.constant is not None else None
        b.StartObject(5)  # Value: dtype, shape, external, is_output, constant
        b.PrependInt8Slot(0, v.dtype, 0)
        b.PrependUOffsetTRelativeSlot(1, shape, 0)
        b.PrependInt32Slot(2, v.external, -1)
        b.PrependBoolSlot(3, v.is_output, False)
        if const is not None:
            b.PrependUOffsetTRelativeSlot(4, const, 0)
        value_offs.append(b.EndObject())
    node_offs = []
    for n in nodes:
        kernel = b.CreateString(n["kernel"])
        ins, outs = vec_uint(n["inputs"]), vec_uint(n["outputs"])
        ints, floats = vec_long(n.get("ints", [])), vec_float(n.get("floats", []))
        b.StartObject(5)  # Node: kernel, inputs, outputs, ints, floats
        b.PrependUOffsetTRelativeSlot(0, kernel, 0)
        b.PrependUOffsetTRelativeSlot(1, ins, 0)
        b.PrependUOffsetTRelativeSlot(2, outs, 0)
        b.PrependUOffsetTRelativeSlot(3, ints, 0)
        b.PrependUOffsetTRelativeSlot(4, floats, 0)
        node_offs.append(b.EndObject())
    vals, nds = vec_tables(value_offs), vec_tables(node_offs)
    b.StartObject(3)  # Graph: version, values, nodes
    b.PrependUint32Slot(0, BLOB_VERSION, 0)
    b.PrependUOffsetTRelativeSlot(1, vals, 0)
    b.PrependUOffsetTRelativeSlot(2, nds, 0)
    root = b.EndObject()
    b.Finish(root, file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


def _shape(node: torch.fx.Node):
    return [int(d) for d in _val(node).shape]


def _strides(shape):
    out, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        out[d] = acc
        acc *= shape[d]
    return out


def _pair(v, default):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if not v:
        v = list(default)
    return [int(v[0]), int(v[-1])]


def _dim(d, rank):
    return int(d) + rank if int(d) < 0 else int(d)


class PteronCudaBackend(BackendDetails):
    """The preprocess of delegate ``PteronCudaBackend``: one partition -> one blob."""

    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: List[CompileSpec]) -> PreprocessResult:
        targets = _supported_targets()
        sig = edge_program.graph_signature
        params = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
                  **getattr(sig, "inputs_to_lifted_tensor_constants", {})}
        store = NamedDataStore()
        values: List[_Value] = []
        ids: Dict[torch.fx.Node, int] = {}
        nodes: List[dict] = []
        graph = edge_program.graph_module.graph
        user_inputs = [n for n in graph.nodes if n.op == "placeholder" and n.name not in params]
        externals = {n: i for i, n in enumerate(user_inputs)}
        alias: Dict[torch.fx.Node, torch.fx.Node] = {}  # getitem(n, 0) -> n; a folded BN -> its conv
        folded: Dict[torch.fx.Node, torch.fx.Node] = {}  # conv -> the batch norm folded into it
        for n in graph.nodes:
            if n.op != "call_function":
                continue
            if n.target is operator.getitem and targets.get(n.args[0].target) == "split":
                continue  # each output of a split is a strided copy of its own
            if n.target is operator.getitem:
                alias[n] = n.args[0]
            elif targets.get(n.target) == "batch_norm":
                folded[n.args[0]] = n
                alias[n] = n.args[0]

        def resolve(n):
            while n in alias:
                n = alias[n]
            return n

        def param_tensor(n) -> torch.Tensor:
            name = params[n.name]
            t = edge_program.state_dict.get(name)
            if t is None:
                t = edge_program.constants[name]
            return t.detach().contiguous().to(torch.float32)

        def constant(t: torch.Tensor) -> int:
            t = t.detach().contiguous().to(torch.float32)
            raw = t.numpy().tobytes()
            key = "pteron_cuda_" + hashlib.sha256(raw).hexdigest()
            store.add_named_data(key, raw, alignment=16)
            values.append(_Value(_FLOAT32, list(t.shape), constant=key))
            return len(values) - 1

        # Layout operators on constants (a linear layer's transposed weight) are done here,
        # once: their results are constants of the blob, not work on every execution.
        folded_consts: Dict[torch.fx.Node, torch.Tensor] = {}

        def const_tensor(n):
            n = resolve(n)
            if n in folded_consts:
                return folded_consts[n]
            if n.op == "placeholder" and n.name in params:
                return param_tensor(n)
            return None

        def value_of(n: torch.fx.Node) -> int:
            n = resolve(n)
            if n in ids:
                return ids[n]
            if n in folded_consts:
                ids[n] = constant(folded_consts[n])
            elif n.op == "placeholder" and n.name in params:
                ids[n] = constant(param_tensor(n))
            elif n.op == "placeholder":
                values.append(_Value(_FLOAT32, _shape(n), external=externals[n]))
                ids[n] = len(values) - 1
            else:
                values.append(_Value(_FLOAT32, _shape(n)))
                ids[n] = len(values) - 1
            return ids[n]

        def emit(kernel, ins, n, ints=(), floats=()):
            nodes.append({"kernel": kernel, "inputs": ins, "outputs": [value_of(n)],
                          "ints": [int(i) for i in ints], "floats": [float(f) for f in floats]})

        def strided(n, x, offset, strides):
            emit("strided_f32", [value_of(x)], n, [offset, *strides])

        for n in graph.nodes:
            if n.op != "call_function":
                continue
            if n.target is operator.getitem:
                src = n.args[0]
                if targets.get(src.target) == "split":  # x.split(sizes, dim)[j]
                    x, sizes = src.args[0], list(src.args[1])
                    shape, st = _shape(x), _strides(_shape(x))
                    dim = _dim(src.args[2] if len(src.args) > 2 else 0, len(shape))
                    strided(n, x, sum(sizes[:n.args[1]]) * st[dim], st)
                continue
            kind = targets.get(n.target)
            if kind is None:
                raise RuntimeError(f"PteronCudaBackend: node {n.name} ({n.target}) is not supported")
            if kind in ("batch_norm", "split"):
                continue  # folded into its convolution; written by its getitems
            a = n.args
            x = a[0] if a and isinstance(a[0], torch.fx.Node) else None
            if kind in ("permute", "view", "clone", "slice", "select") and x is not None:
                c = const_tensor(x)
                if c is not None:
                    folded_consts[n] = n.target(c, *a[1:], **n.kwargs).contiguous()
                    continue
            if kind in ("addmm", "mm", "bmm"):
                emit("gemm_f32", [value_of(t) for t in a[:3 if kind == "addmm" else 2]], n,
                     [{"addmm": 1, "mm": 0, "bmm": 2}[kind]])
            elif kind in _BINARY:
                emit("binary_f32", [value_of(a[0]), value_of(a[1])], n, [_BINARY[kind]])
            elif kind in _UNARY:
                approx = 1 if kind == "gelu" and n.kwargs.get("approximate", "none") == "tanh" else 0
                emit("unary_f32", [value_of(x)], n, [_UNARY[kind], approx])
            elif kind in ("hardtanh", "clamp"):
                lo = a[1] if len(a) > 1 else (-1.0 if kind == "hardtanh" else None)
                hi = a[2] if len(a) > 2 else (1.0 if kind == "hardtanh" else None)
                emit("unary_f32", [value_of(x)], n, [_CLAMP, 0],
                     [float("-inf") if lo is None else lo, float("inf") if hi is None else hi])
            elif kind in ("view", "clone"):
                emit("copy_f32", [value_of(x)], n)
            elif kind == "pow":
                emit("unary_f32", [value_of(x)], n, [_POW, 0], [float(a[1])])
            elif kind == "permute":
                st = _strides(_shape(x))
                strided(n, x, 0, [st[_dim(d, len(st))] for d in a[1]])
            elif kind == "slice":
                shape, st = _shape(x), _strides(_shape(x))
                dim = _dim(a[1] if len(a) > 1 else 0, len(shape))
                step = int(a[4]) if len(a) > 4 else 1
                start = a[2] if len(a) > 2 and a[2] is not None else 0
                start = max(0, min(shape[dim], start + shape[dim] if start < 0 else start))
                strides = list(st)
                strides[dim] *= step
                strided(n, x, start * st[dim], strides)
            elif kind == "select":
                shape, st = _shape(x), _strides(_shape(x))
                dim = _dim(a[1], len(shape))
                index = int(a[2]) + shape[dim] if int(a[2]) < 0 else int(a[2])
                strided(n, x, index * st[dim], [s_ for d, s_ in enumerate(st) if d != dim])
            elif kind == "expand":
                ishape, st, oshape = _shape(x), _strides(_shape(x)), _shape(n)
                lead = len(oshape) - len(ishape)
                strides = [0 if d < lead or ishape[d - lead] == 1 else st[d - lead]
                           for d in range(len(oshape))]
                strided(n, x, 0, strides)
            elif kind == "cat":
                dim = _dim(a[1] if len(a) > 1 else 0, len(_shape(n)))
                emit("cat_f32", [value_of(t) for t in a[0]], n, [dim])
            elif kind in ("softmax", "log_softmax"):
                emit("softmax_f32", [value_of(x)], n,
                     [_dim(a[1], len(_shape(x))), 1 if kind == "log_softmax" else 0])
            elif kind == "layer_norm":
                w, b, eps = a[2], a[3], a[4]
                ins = [value_of(x)] + [value_of(t) for t in (w, b) if t is not None]
                emit("layer_norm_f32", ins, n, [len(a[1]), w is not None, b is not None], [eps])
            elif kind in ("mean", "sum"):
                rank = len(_shape(x))
                dims = a[1] if len(a) > 1 and a[1] else list(range(rank))
                emit("reduce_f32", [value_of(x)], n,
                     [1 if kind == "mean" else 0, *sorted({_dim(d, rank) for d in dims})])
            elif kind == "adaptive_avg_pool":
                emit("reduce_f32", [value_of(x)], n, [1, 2, 3])
            elif kind == "conv":
                _x, w, b, stride, padding, dilation, _t, _op, groups = a
                wt = param_tensor(w) if w.op == "placeholder" and w.name in params else None
                bn = folded.get(n)
                if bn is not None:
                    # Folded in float64 with numpy, then rounded once to float32: numpy's
                    # +, -, *, / and sqrt are IEEE-exact on every CPU, so the folded constants
                    # (and the program's bytes) are the same wherever the exporter runs (torch's
                    # float32 kernels gave other bits on an AVX-512 Xeon than on an AVX2 EPYC).
                    gamma, beta, mean, var = (param_tensor(t).double().numpy()
                                              for t in bn.args[1:5])
                    scale = gamma / np.sqrt(var + float(bn.args[6]))
                    bias0 = (param_tensor(b).double().numpy() if b is not None
                             else np.zeros_like(mean))
                    w64 = wt.double().numpy() * scale[:, None, None, None]
                    ins = [value_of(x), constant(torch.from_numpy(w64.astype(np.float32))),
                           constant(torch.from_numpy(((bias0 - mean) * scale + beta)
                                                     .astype(np.float32)))]
                    has_b = True
                else:
                    ins = [value_of(x), value_of(w)] + ([value_of(b)] if b is not None else [])
                    has_b = b is not None
                (sh, sw), (ph, pw), (dh, dw) = (_pair(stride, [1]), _pair(padding, [0]),
                                                _pair(dilation, [1]))
                emit("conv2d_f32", ins, n, [sh, sw, ph, pw, dh, dw, groups, has_b])
            elif kind in ("max_pool", "avg_pool"):
                # both: (x, kernel, stride=kernel, padding=0, ...); max: dilation at 4;
                # avg: ceil_mode at 4, count_include_pad at 5, divisor_override at 6
                (kh, kw) = _pair(a[1], [1])
                (sh, sw) = _pair(a[2] if len(a) > 2 else [], [kh, kw])
                (ph, pw) = _pair(a[3] if len(a) > 3 else 0, [0])
                if kind == "max_pool":
                    (dh, dw), cip, div = _pair(a[4] if len(a) > 4 else 1, [1]), 0, 0
                else:
                    (dh, dw) = (1, 1)
                    cip = bool(a[5]) if len(a) > 5 else True
                    div = int(a[6]) if len(a) > 6 and a[6] is not None else 0
                emit("pool2d_f32", [value_of(x)], n,
                     [kind == "avg_pool", kh, kw, sh, sw, ph, pw, dh, dw, cip, div])
            else:
                raise RuntimeError(f"PteronCudaBackend: no lowering for {kind} ({n.name})")
        output_node = next(n for n in graph.nodes if n.op == "output")
        outs = output_node.args[0]
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        for j, o in enumerate(outs):
            v = values[value_of(o)]
            if v.external >= 0 or v.constant is not None:
                raise RuntimeError("PteronCudaBackend: a partition output is an input or a constant")
            v.external, v.is_output = len(user_inputs) + j, True
        return PreprocessResult(processed_bytes=_build(values, nodes),
                                data_store_output=store.get_named_data_store_output())
