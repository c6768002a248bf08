# SPDX-License-Identifier: BSD-3-Clause
"""The one fixture writer: exports programs with upstream's exporter and writes
them, their inputs and their eager-PyTorch outputs, and a manifest describing
them.

Used by models/export.py (models/fixtures), tests/optimized/export.py
(tests/optimized), bench/programs.py (bench/.programs) and models/zoo.py (the
zoo's cache). It lives beside the
fixtures, outside the `pteron` Python package, because it needs torch and
executorch, which nothing that pteron ships may import; each script puts this
folder on sys.path.

For a program NAME with methods M it writes into one folder:
    NAME.pte
    NAME.M.input_<i>.npy        inputs fed to the method (C order; bfloat16 as its uint16 bits)
    NAME.M.expected_<i>.npy     eager PyTorch outputs (eval, no_grad)
    NAME.M.case<k>.input_<i>.npy / .expected_<i>.npy
                                further inputs of a dynamic-shape method and their outputs
    manifest.json               {"generator", "torch", "executorch", "fixtures": [entry...]}

A manifest entry (what tests/conftest.py and bench/run.py read):
    name, file, size_bytes, operators, delegates, and per method
    methods[M] = {inputs, expected, input_dtypes, input_shapes, output_dtypes,
                  output_shapes, operators, delegates[, cases: [{inputs, expected}]]}
plus whatever keys the caller adds. A manifest is keyed by the exporter's version
(torch and executorch): entries exported by another version are never mixed
into it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn


@dataclass
class MethodSpec:
    """One method of a program: the module whose forward it is, example inputs
    (also the committed inputs), the torch.export dynamic shapes, and further
    inputs (other dynamic sizes) whose eager outputs are written as cases.
    `eager`, when given, is the module whose outputs are expected, for a
    program that rewrite_operators() changed after export."""
    module: nn.Module
    inputs: Tuple[torch.Tensor, ...]
    dynamic_shapes: Optional[object] = None
    cases: List[Tuple[torch.Tensor, ...]] = field(default_factory=list)
    eager: Optional[nn.Module] = None

    def reference(self) -> nn.Module:
        return self.eager if self.eager is not None else self.module


def exporter_versions() -> Dict[str, str]:
    """The key of a manifest: the versions of upstream's exporter."""
    from importlib.metadata import version

    try:
        et = version("executorch")
    except Exception:  # noqa: BLE001
        et = "unknown"
    return {"torch": torch.__version__, "executorch": et}


def flatten_outputs(out) -> List[torch.Tensor]:
    if isinstance(out, (tuple, list)):
        res: List[torch.Tensor] = []
        for o in out:
            res.extend(flatten_outputs(o))
        return res
    return [out]


def eager_outputs(module: nn.Module, inputs: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    module.eval()
    with torch.no_grad():
        return flatten_outputs(module(*inputs))


def eager_reference(methods: Dict[str, MethodSpec]) -> Dict[str, List[List[torch.Tensor]]]:
    """Eager outputs of every method: [outputs of spec.inputs, outputs of case 1, ...].
    Computed before export, as every exporter here does (exporting first changes
    the last bits of some float results)."""
    return {m: [eager_outputs(spec.reference(), inputs)
                for inputs in [spec.inputs] + list(spec.cases)]
            for m, spec in methods.items()}


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def export_program(methods: Dict[str, MethodSpec], *, xnnpack: bool = False,
                   partitioners: Sequence[object] = (),
                   preserve_ops: Iterable[object] = (),
                   skip_dim_order: bool = False,
                   backend_config: Optional[Dict[str, object]] = None) -> bytes:
    """The .pte bytes of `methods` through torch.export and
    to_edge_transform_and_lower(...).to_executorch(). xnnpack: lower with
    XnnpackPartitioner(); partitioners: lower with these (after XNNPACK's when
    both are given); preserve_ops: EdgeCompileConfig(preserve_ops=...);
    skip_dim_order: EdgeCompileConfig(_skip_dim_order=True), which keeps aten::empty /
    aten::_to_copy instead of their dim_order_ops:: variants;
    backend_config: ExecutorchBackendConfig keyword arguments."""
    from executorch.exir import to_edge_transform_and_lower

    eps = {}
    for mname, spec in methods.items():
        spec.module.eval()
        eps[mname] = torch.export.export(spec.module, tuple(spec.inputs),
                                         dynamic_shapes=spec.dynamic_shapes)
    partitioner = None
    if xnnpack:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
            XnnpackPartitioner,
        )
        partitioner = [XnnpackPartitioner()]
    if partitioners:
        partitioner = (partitioner or []) + list(partitioners)
    arg = eps if len(eps) > 1 or "forward" not in eps else eps["forward"]
    compile_config = None
    preserve_ops = list(preserve_ops)
    if preserve_ops or skip_dim_order:
        from executorch.exir import EdgeCompileConfig
        compile_config = EdgeCompileConfig(preserve_ops=preserve_ops,
                                           _skip_dim_order=skip_dim_order)
    edge = to_edge_transform_and_lower(arg, partitioner=partitioner,
                                       compile_config=compile_config)
    if backend_config:
        from executorch.exir import ExecutorchBackendConfig
        return bytes(edge.to_executorch(ExecutorchBackendConfig(**backend_config)).buffer)
    return bytes(edge.to_executorch().buffer)


def program_info(pte: bytes):
    """(operators, delegates, {method: {operators, delegates}}) of a program,
    operators as "name.overload" (just the name when the overload is empty)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(pte).program
    ops, delegates, plans = set(), set(), {}
    for plan in prog.execution_plan:
        plan_ops = sorted({f"{op.name}.{op.overload}" if op.overload else op.name
                           for op in plan.operators})
        plan_dels = sorted({d.id for d in plan.delegates})
        plans[plan.name] = {"operators": plan_ops, "delegates": plan_dels}
        ops.update(plan_ops)
        delegates.update(plan_dels)
    return sorted(ops), sorted(delegates), plans


def rewrite_operators(pte: bytes, rewrites: Sequence[Tuple[str, str, Sequence[int]]]) -> bytes:
    """The program with operators renamed after export, for operators upstream's
    runtime provides but its exporter never emits on its own: each rewrite is
    ("name.overload" as exported, "name.overload" to call, argument positions
    to drop from every call of it)."""
    from executorch.exir._serialize._program import (deserialize_pte_binary,
                                                     serialize_pte_binary)

    f = deserialize_pte_binary(pte)
    for old, new, drop in rewrites:
        found = False
        for plan in f.program.execution_plan:
            for k, op in enumerate(plan.operators):
                if (f"{op.name}.{op.overload}" if op.overload else op.name) != old:
                    continue
                found = True
                op.name, _, op.overload = new.partition(".")
                for ch in plan.chains:
                    for ins in ch.instructions:
                        a = ins.instr_args
                        if getattr(a, "op_index", None) == k:
                            a.args = [v for j, v in enumerate(a.args) if j not in drop]
        if not found:
            raise ValueError(f"rewrite_operators: the program does not call {old}")
    return bytes(serialize_pte_binary(f))


def rewrite_argument(pte: bytes, op: str, position: int, kind: Optional[str]) -> bytes:
    """The program with argument `position` of every call of `op` ("name.overload")
    replaced by the first value of type `kind` ("Tensor", "Int", "IntList", ...),
    or dropped when kind is None: a malformed program whose operator meets a
    wrong-typed or missing argument at execute."""
    from executorch.exir._serialize._program import (deserialize_pte_binary,
                                                     serialize_pte_binary)

    f = deserialize_pte_binary(pte)
    found = False
    for plan in f.program.execution_plan:
        ks = [k for k, o in enumerate(plan.operators)
              if (f"{o.name}.{o.overload}" if o.overload else o.name) == op]
        if not ks:
            continue
        pick = None
        if kind is not None:
            pick = next(i for i, v in enumerate(plan.values) if type(v.val).__name__ == kind)
        for ch in plan.chains:
            for ins in ch.instructions:
                a = ins.instr_args
                if getattr(a, "op_index", None) in ks:
                    found = True
                    args = list(a.args)
                    if pick is None:
                        del args[position]
                    else:
                        args[position] = pick
                    a.args = args
    if not found:
        raise ValueError(f"rewrite_argument: the program does not call {op}")
    return bytes(serialize_pte_binary(f))


def save_tensor(path: Path, t: torch.Tensor) -> None:
    """One tensor as .npy, as write_fixture saves inputs and outputs (C order;
    bfloat16 as its uint16 bits)."""
    _save(path, t)


def _save(path: Path, t: torch.Tensor) -> None:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        # numpy has no bfloat16: its bits as uint16 (the manifest's dtypes say bfloat16)
        t = t.contiguous().view(torch.int16)
        a = t.numpy().view(np.uint16)
    else:
        a = t.numpy()
    # C order (np.ascontiguousarray would turn a 0-dim array into a 1-dim one).
    np.save(path, a if a.flags.c_contiguous else a.copy(order="C"))


def write_fixture(out: Path, name: str, pte: bytes, methods: Dict[str, MethodSpec],
                  expected: Dict[str, List[List[torch.Tensor]]]) -> dict:
    """Writes NAME.pte, the inputs and eager outputs (`expected`, from
    eager_reference()) of every method and of every case, replacing NAME's old
    .npy files, and returns its manifest entry."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(f"{name}.*.npy"):
        old.unlink()
    (out / f"{name}.pte").write_bytes(pte)
    ops, delegates, plans = program_info(pte)
    methods_json = {}
    for mname, spec in methods.items():
        exp = expected[mname][0]

        def save_all(prefix: str, tensors) -> List[str]:
            files = []
            for i, t in enumerate(tensors):
                fn = f"{prefix}_{i}.npy"
                _save(out / fn, t)
                files.append(fn)
            return files

        m = {
            "inputs": save_all(f"{name}.{mname}.input", spec.inputs),
            "expected": save_all(f"{name}.{mname}.expected", exp),
            "input_dtypes": [dtype_name(t) for t in spec.inputs],
            "input_shapes": [list(t.shape) for t in spec.inputs],
            "output_dtypes": [dtype_name(t) for t in exp],
            "output_shapes": [list(t.shape) for t in exp],
            "operators": plans[mname]["operators"],
            "delegates": plans[mname]["delegates"],
        }
        if spec.cases:
            m["cases"] = []
            for k, case in enumerate(spec.cases, 1):
                m["cases"].append({
                    "inputs": save_all(f"{name}.{mname}.case{k}.input", case),
                    "expected": save_all(f"{name}.{mname}.case{k}.expected",
                                         expected[mname][k]),
                    "input_shapes": [list(t.shape) for t in case],
                })
        methods_json[mname] = m
    return {"name": name, "file": f"{name}.pte", "size_bytes": len(pte), "methods": methods_json,
            "operators": ops, "delegates": delegates}


def upstream_run(pte: bytes, inputs):
    """Upstream's runtime (its Python bindings, a fresh load) on one input set:
    (outputs, None), or (None, its error in one line)."""
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    try:
        m = _load_for_executorch_from_buffer(pte)
        return [o.clone() for o in m.forward(list(inputs))], None
    except Exception as e:  # noqa: BLE001  (upstream's error is recorded, not fatal)
        text = str(e).strip()
        return None, f"{type(e).__name__}: {text.splitlines()[-1] if text else ''}"


def record_upstream(out: Path, name: str, pte: bytes, entry: dict, method: str = "forward",
                    before_each=None) -> None:
    """Runs upstream's runtime on the committed inputs and on every case of `method` of a
    write_fixture() entry, and adds to each of them (the method's entry and its "cases")
    "upstream": the files NAME.M[.caseK].upstream_<i>.npy it wrote, or "upstream_error".
    before_each(): called before each run (e.g. to reset a module's state)."""
    m = entry["methods"][method]
    for k, slot in enumerate([m] + m.get("cases", [])):
        if before_each is not None:
            before_each()
        inputs = [_load_input(Path(out) / f, dt) for f, dt in zip(slot["inputs"],
                                                                  m["input_dtypes"])]
        got, err = upstream_run(pte, inputs)
        if got is None:
            slot["upstream_error"] = err
            continue
        prefix = f"{name}.{method}" + (f".case{k}" if k else "")
        slot["upstream"] = []
        for i, t in enumerate(got):
            fn = f"{prefix}.upstream_{i}.npy"
            _save(Path(out) / fn, t)
            slot["upstream"].append(fn)


def _load_input(path: Path, dtype: str) -> torch.Tensor:
    """An input as _save wrote it (bfloat16 from its uint16 bits)."""
    a = np.load(path)
    if dtype == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def read_manifest(out: Path) -> Optional[dict]:
    p = Path(out) / "manifest.json"
    return json.loads(p.read_text()) if p.exists() else None


def reusable_entries(out: Path, versions: Optional[Dict[str, str]] = None) -> Dict[str, dict]:
    """The entries of OUT's manifest, by name, if it was written by this
    exporter version (and the files they name exist); {} otherwise."""
    old = read_manifest(out)
    versions = versions or exporter_versions()
    if not old or any(old.get(k) != v for k, v in versions.items()):
        return {}
    return {e["name"]: e for e in old["fixtures"] if (Path(out) / e["file"]).exists()}


def source_stamp(*scripts: Path) -> str:
    """A hash (16 hex digits) of the text of the given scripts and of this writer:
    what a cache of exported programs stores in each entry as "stamp", so that an
    edit of the exporting code exports again."""
    h = hashlib.sha256()
    for p in list(scripts) + [Path(__file__)]:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:16]


def kept_entries(out: Path, stamp: str) -> Dict[str, dict]:
    """The entries of OUT's manifest, by name, that this exporter version wrote
    (reusable_entries) with this `stamp` (source_stamp): the programs a cache
    keeps instead of exporting them again."""
    return {n: e for n, e in reusable_entries(out).items() if e.get("stamp") == stamp}


def export_forward(out: Path, name: str, module: nn.Module, inputs, proves: str, *,
                   rtol: float, atol: float, **export_kw) -> dict:
    """One program of a single method `forward`: exported (export_program(**export_kw)),
    written with its inputs and eager outputs (write_fixture), and its manifest entry with
    the tolerances and what it proves. Prints a line naming it."""
    methods = {"forward": MethodSpec(module, tuple(inputs))}
    expected = eager_reference(methods)
    pte = export_program(methods, **export_kw)
    entry = write_fixture(out, name, pte, methods, expected)
    entry.update({"rtol": rtol, "atol": atol, "proves": proves})
    print(f"{name}: {len(pte)} bytes, CPU operators {entry['operators']}, {entry['delegates']}",
          flush=True)
    return entry


def write_manifest(out: Path, generator: str, entries: Sequence[dict]) -> Path:
    """Writes OUT/manifest.json with the exporter's version as its key."""
    manifest = {"generator": generator, **exporter_versions(), "fixtures": list(entries)}
    p = Path(out) / "manifest.json"
    p.write_text(json.dumps(manifest, indent=2) + "\n")
    return p
