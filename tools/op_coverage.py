#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Operator coverage of kernels_portable against upstream ExecuTorch's portable
library, and the operator coverage table of docs/operators.md.

It reads three things:
  - upstream's portable operator list: tests/ops/upstream_portable_ops.txt, one
    "namespace::name.overload" a line, extracted from the installed wheel's
    executorch/kernels/portable/functions.yaml by --refresh-upstream (run it
    with the exporter's Python, /work/exportenv/bin/python; CI never does);
  - the registry of a build: the operators kernels_portable registers, read
    through the C API (tests/capi.py) from BUILD_DIR;
  - the per-operator programs: tests/ops/programs/*/manifest.json (operator,
    case names, dtypes of each case's inputs), and the random operators'
    programs, tests/ops/random/manifest.json, which tests/test_random_ops.py
    checks statistically (their draws cannot match eager's).

Usage:
    tools/op_coverage.py BUILD_DIR                  print the table
    tools/op_coverage.py --write BUILD_DIR          regenerate docs/operators.md between
                                                    <!-- coverage:begin --> and
                                                    <!-- coverage:end --> (--write-readme:
                                                    the same, its older name)
    tools/op_coverage.py --missing BUILD_DIR        upstream operators not registered
    /work/exportenv/bin/python tools/op_coverage.py --refresh-upstream

tests/test_op_coverage.py checks that every upstream operator is registered
(device copies aside) and that docs/operators.md's table is what this script
generates now.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

REPO = Path(__file__).resolve().parent.parent
UPSTREAM_LIST = REPO / "tests" / "ops" / "upstream_portable_ops.txt"
PROGRAMS = REPO / "tests" / "ops" / "programs"
RANDOM = REPO / "tests" / "ops" / "random"
RANDOM_TEST = "tests/test_random_ops.py"
PAGE = REPO / "docs" / "operators.md"
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"

# Upstream's device copies: pteron runs on the CPU and refuses them at method
# load (runtime/core/resolve.cpp), so they are the one exception.
DEVICE_COPY_NAMESPACE = "et_copy::"
PORTABLE_LIBRARY = "kernels_portable"

# The order dtypes are listed in.
DTYPE_ORDER = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
               "uint8", "bool", "complex64", "complex128"]


# ---- upstream's list ----------------------------------------------------------

def parse_functions_yaml(text: str) -> List[str]:
    """The operators of a functions.yaml, in file order, as
    "namespace::name.overload" ("- op: add.out" is aten's; "- func:
    ns::name.overload(...)" names its own namespace). Plain line parsing: the
    file's entries are one "- op:" or "- func:" line each."""
    ops = []
    for line in text.splitlines():
        m = re.match(r"^- (op|func):\s*([A-Za-z0-9_:.]+)", line)
        if not m:
            continue
        name = m.group(2)
        ops.append(name if "::" in name else f"aten::{name}")
    return ops


def refresh_upstream() -> Path:
    """Writes UPSTREAM_LIST from the installed executorch wheel (run with the
    exporter's Python)."""
    import importlib.util
    from importlib.metadata import version

    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("executorch is not installed in this Python; use /work/exportenv/bin/python")
    root = Path(list(spec.submodule_search_locations)[0])
    yaml = root / "kernels" / "portable" / "functions.yaml"
    ops = parse_functions_yaml(yaml.read_text())
    header = (f"# executorch {version('executorch')}: executorch/kernels/portable/functions.yaml, "
              f"{len(ops)} operators (tools/op_coverage.py --refresh-upstream)")
    UPSTREAM_LIST.write_text("\n".join([header] + ops) + "\n")
    return UPSTREAM_LIST


def upstream_operators(path: Path = UPSTREAM_LIST) -> List[str]:
    return [ln.strip() for ln in path.read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]


def upstream_source(path: Path = UPSTREAM_LIST) -> str:
    first = path.read_text().splitlines()[0]
    return first.lstrip("# ").split(" (tools/")[0]


# ---- the registry -------------------------------------------------------------

def registered_operators(build_dir: Path) -> Set[str]:
    """"namespace::name.overload" of every operator kernels_portable registers
    in the build at `build_dir` (read through the C API)."""
    sys.path.insert(0, str(REPO / "tests"))
    import capi  # noqa: E402  (ctypes over the C API; needs numpy only)

    rt = capi.Runtime(Path(build_dir))
    return {f"{k['name']}.{k['overload']}" if k["overload"] else k["name"]
            for k in rt.kernels() if k["library"] == PORTABLE_LIBRARY}


# ---- the per-operator programs ---------------------------------------------

def tested_operators(programs: Path = PROGRAMS,
                     random: Optional[Path] = RANDOM) -> Dict[str, Dict[str, Set[str]]]:
    """{operator: {"dtypes": {...}, "cases": {"group/program: method, ...", ...}}} from
    every manifest under tests/ops/programs/ and the random operators' manifest
    (tests/ops/random/, its cases marked as tested statistically). The dtypes
    are the cases' input dtypes, or their output dtypes for a case without
    tensor inputs (arange, full, ...)."""
    out: Dict[str, Dict[str, Set[str]]] = {}
    manifests = [(m, m.parent.name, "") for m in sorted(programs.glob("*/manifest.json"))]
    if random is not None and (random / "manifest.json").exists():
        manifests.append((random / "manifest.json", random.name,
                          f" (statistical: {RANDOM_TEST})"))
    for manifest, group, how in manifests:
        for entry in json.loads(manifest.read_text())["fixtures"]:
            op = entry.get("operator")
            if not op:
                continue
            t = out.setdefault(op, {"dtypes": set(), "cases": set()})
            t["cases"].add(f"{group}/{entry['name']}: " + ", ".join(sorted(entry["methods"]))
                           + how)
            for m in entry["methods"].values():
                t["dtypes"].update(m.get("input_dtypes") or m.get("output_dtypes", []))
    return out


def _dtype_key(d: str):
    return (DTYPE_ORDER.index(d) if d in DTYPE_ORDER else len(DTYPE_ORDER), d)


# ---- the table ------------------------------------------------------------------

def missing_operators(registered: Set[str], upstream: Sequence[str]) -> List[str]:
    """Upstream operators (device copies aside) that kernels_portable lacks."""
    return [op for op in upstream
            if not op.startswith(DEVICE_COPY_NAMESPACE) and op not in registered]


def coverage_section(registered: Set[str], upstream: Optional[Sequence[str]] = None,
                     tested: Optional[Dict[str, Dict[str, Set[str]]]] = None) -> str:
    """The section of docs/operators.md, between (and including) the markers."""
    upstream = list(upstream if upstream is not None else upstream_operators())
    tested = tested if tested is not None else tested_operators()
    device = [op for op in upstream if op.startswith(DEVICE_COPY_NAMESPACE)]
    required = [op for op in upstream if op not in device]
    have = [op for op in required if op in registered]
    extra = sorted(op for op in tested if op not in upstream)
    rows = []
    for op in sorted(set(upstream) | set(extra)):
        t = tested.get(op, {"dtypes": set(), "cases": set()})
        if op in device:
            reg = "no: device copy, refused at method load"
        else:
            reg = "yes" if op in registered else "**no**"
        dtypes = ", ".join(sorted(t["dtypes"], key=_dtype_key)) or "-"
        cases = "; ".join(sorted(t["cases"])) or "-"
        rows.append(f"| `{op}` | {reg} | {dtypes} | {cases} |")
    n_tested = sum(1 for op in required if op in tested)
    prose = (
        "Generated by `tools/op_coverage.py --write BUILD_DIR` from the registry of a "
        "build and the per-operator programs (`tests/ops/`); do not edit it by hand: "
        "`tests/test_op_coverage.py` checks that it is current, and that every operator of "
        f"upstream's portable library ({upstream_source()}) is registered. kernels_portable "
        f"registers {len(have)} of upstream's {len(required)} operators (its {len(device)} "
        "device copies `et_copy::*` aside: pteron runs on the CPU and refuses them at method "
        f"load, saying so); {n_tested} have per-operator programs. The dtypes are those of the "
        "tested cases' inputs (their outputs' for operators without tensor inputs); cases are "
        "listed as `group/program: method, ...` (the programs are under `tests/ops/programs/`, "
        "one method a case; the random operators' under `tests/ops/random/`, tested "
        f"statistically by `{RANDOM_TEST}`).")
    lines = [
        BEGIN,
        "## Operator coverage",
        "",
        textwrap.fill(prose, width=100, break_on_hyphens=False, break_long_words=False),
        "",
        "| operator | registered | dtypes tested | cases tested |",
        "|---|---|---|---|",
        *rows,
        END,
    ]
    return "\n".join(lines)


def replace_section(page_text: str, section: str) -> str:
    start, end = page_text.find(BEGIN), page_text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{PAGE.relative_to(REPO)} has no {BEGIN} ... {END} markers")
    return page_text[:start] + section + page_text[end + len(END):]


def page_section(page_text: str) -> str:
    start, end = page_text.find(BEGIN), page_text.find(END)
    if start < 0 or end < start:
        return ""
    return page_text[start:end + len(END)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", help="a pteron build folder (libpteron.so ...)")
    ap.add_argument("--write", "--write-readme", dest="write", action="store_true",
                    help="regenerate the section of docs/operators.md")
    ap.add_argument("--missing", action="store_true", help="list the upstream operators missing")
    ap.add_argument("--refresh-upstream", action="store_true",
                    help="rewrite tests/ops/upstream_portable_ops.txt from the installed wheel")
    args = ap.parse_args(argv)
    if args.refresh_upstream:
        p = refresh_upstream()
        print(f"wrote {p.relative_to(REPO)}: {len(upstream_operators(p))} operators")
        if not args.build_dir:
            return 0
    if not args.build_dir:
        ap.error("BUILD_DIR is required")
    registered = registered_operators(Path(args.build_dir))
    if args.missing:
        missing = missing_operators(registered, upstream_operators())
        print("\n".join(missing))
        print(f"{len(missing)} missing", file=sys.stderr)
        return 0
    section = coverage_section(registered)
    if args.write:
        PAGE.write_text(replace_section(PAGE.read_text(), section))
        print(f"{PAGE.relative_to(REPO)}: coverage section regenerated")
    else:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
