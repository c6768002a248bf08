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

Supported now (edge dialect, float32, static shapes): ``addmm``, ``mm``, ``bmm``;
``add``, ``sub``, ``mul`` and ``div`` (``Tensor``, broadcasting); ``relu``,
``sigmoid``, ``tanh``, ``gelu``, ``silu``, ``hardswish``; ``permute_copy`` and
``view_copy``. Other operators stay on the CPU path.
"""
from __future__ import annotations

import hashlib
import operator
from typing import Dict, List

import flatbuffers
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

# Edge operator -> (kernel name, integer parameters). The kernel table is
# backends/cuda/src/kernels.h; its parameters are documented there.
_BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3}
_UNARY = {"relu": 0, "sigmoid": 1, "tanh": 2, "gelu": 3, "silu": 4, "hardswish": 5}


def _edge(name: str, overload: str = "default"):
    return getattr(getattr(exir_ops.edge.aten, name), overload)


def _supported_targets() -> Dict[object, str]:
    t = {
        _edge("addmm"): "addmm",
        _edge("mm"): "mm",
        _edge("bmm"): "bmm",
        _edge("permute_copy"): "permute",
        _edge("view_copy"): "view",
    }
    for name in _BINARY:
        t[_edge(name, "Tensor")] = name
    for name in _UNARY:
        t[_edge(name)] = name
    return t


def _is_float32_tensor(v) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype == torch.float32


class _Support(OperatorSupportBase):
    """Which nodes the delegate takes: a supported target, float32 in and out."""

    def __init__(self):
        self.targets = _supported_targets()

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function" or node.target not in self.targets:
            return False
        if not _is_float32_tensor(node.meta.get("val")):
            return False
        for a in node.args:
            if isinstance(a, torch.fx.Node) and not _is_float32_tensor(a.meta.get("val")):
                return False
        kind = self.targets[node.target]
        if kind == "addmm" and (node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1):
            return False
        if kind in _BINARY and len(node.args) != 2:
            return False
        if kind == "gelu" and node.kwargs.get("approximate", "none") not in ("none", "tanh"):
            return False
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
        parts = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=True).propose_partitions()
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
    return list(node.meta["val"].shape)


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

        def value_of(n: torch.fx.Node) -> int:
            if n in ids:
                return ids[n]
            if n.op == "placeholder" and n.name in params:
                name = params[n.name]
                t = edge_program.state_dict.get(name)
                if t is None:
                    t = edge_program.constants[name]
                t = t.detach().contiguous().to(torch.float32)
                raw = t.numpy().tobytes()
                key = "pteron_cuda_" + hashlib.sha256(raw).hexdigest()
                store.add_named_data(key, raw, alignment=16)
                values.append(_Value(_FLOAT32, t.shape, constant=key))
            elif n.op == "placeholder":
                values.append(_Value(_FLOAT32, _shape(n), external=externals[n]))
            else:
                values.append(_Value(_FLOAT32, _shape(n)))
            ids[n] = len(values) - 1
            return ids[n]

        for n in graph.nodes:
            if n.op != "call_function":
                continue
            if n.target is operator.getitem:
                raise RuntimeError(f"PteronCudaBackend: unexpected multi-output node {n.name}")
            kind = targets.get(n.target)
            if kind is None:
                raise RuntimeError(f"PteronCudaBackend: node {n.name} ({n.target}) is not supported")
            args = [a for a in n.args if isinstance(a, torch.fx.Node)]
            ins = [value_of(a) for a in args]
            out = value_of(n)
            if kind in ("addmm", "mm", "bmm"):
                nodes.append({"kernel": "gemm_f32", "inputs": ins, "outputs": [out],
                              "ints": [{"addmm": 1, "mm": 0, "bmm": 2}[kind]]})
            elif kind in _BINARY:
                nodes.append({"kernel": "binary_f32", "inputs": ins, "outputs": [out],
                              "ints": [_BINARY[kind]]})
            elif kind in _UNARY:
                approx = 1 if kind == "gelu" and n.kwargs.get("approximate", "none") == "tanh" else 0
                nodes.append({"kernel": "unary_f32", "inputs": ins, "outputs": [out],
                              "ints": [_UNARY[kind], approx]})
            elif kind == "permute":
                nodes.append({"kernel": "permute_f32", "inputs": ins, "outputs": [out],
                              "ints": [int(d) for d in n.args[1]]})
            elif kind == "view":
                nodes.append({"kernel": "copy_f32", "inputs": ins, "outputs": [out]})
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
