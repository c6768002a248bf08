#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Export the per-operator test programs: every OpProgram of every case group
(tests/ops/cases/<group>.py, see tests/ops/opcase.py) into
tests/ops/programs/<group>/ (NAME.pte, NAME.<case>.input_<i>.npy,
NAME.<case>.expected_<i>.npy, manifest.json), through the one fixture writer.

Development-only (needs torch and executorch). CI never re-exports: the
programs are committed, a few KB each, with their eager outputs, and the
manifest names the exporter's version.

Usage:
    /opt/pteron-dev/bin/python tests/ops/export.py [GROUP ...]   (default: every group)
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "models"))
sys.path.insert(0, str(HERE))

import fixture_writer as fw  # noqa: E402


def groups():
    return sorted(p.stem for p in (HERE / "cases").glob("*.py") if not p.stem.startswith("_"))


def export_group(group: str) -> int:
    mod = importlib.import_module(f"cases.{group}")
    out = HERE / "programs" / group
    entries = []
    for prog in mod.programs():
        expected = fw.eager_reference(prog.cases)
        pte = fw.export_program(prog.cases, preserve_ops=prog.preserve_ops,
                                skip_dim_order=prog.skip_dim_order,
                                backend_config=getattr(prog, "backend_config", None))
        if prog.rewrites:
            pte = fw.rewrite_operators(pte, prog.rewrites)
        # A program may edit its .pte after export (an OpProgram subclass with a
        # post_export(bytes) -> bytes), for operators the exporter never emits.
        if getattr(prog, "post_export", None):
            pte = prog.post_export(pte)
        entry = fw.write_fixture(out, prog.name, pte, prog.cases, expected)
        called = {op for m in entry["methods"].values() for op in m["operators"]}
        if prog.operator not in called:
            raise SystemExit(f"{group}/{prog.name}: the exported program does not call "
                             f"{prog.operator} (it calls {sorted(called)}); preserve the op "
                             "or write the case differently")
        entry.update({"operator": prog.operator, "rtol": prog.rtol, "atol": prog.atol,
                      "notes": prog.notes})
        entries.append(entry)
        print(f"{group}/{prog.name}: {len(pte)} bytes, {len(prog.cases)} case(s)")
    fw.write_manifest(out, "tests/ops/export.py", entries)
    return len(entries)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("groups", nargs="*", help=f"case groups (default: all of {groups()})")
    args = ap.parse_args(argv)
    for g in args.groups or groups():
        if g not in groups():
            raise SystemExit(f"no case group '{g}' (tests/ops/cases/{g}.py); have {groups()}")
        export_group(g)
    return 0


if __name__ == "__main__":
    sys.exit(main())
