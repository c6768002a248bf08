# SPDX-License-Identifier: BSD-3-Clause
"""Gives pyproject.toml its version: the repository's VERSION file, one folder
up (setuptools' own `dynamic = {file = ...}` refuses files outside this folder).
A VERSION file beside this one (an unpacked sdist) is read first."""
from pathlib import Path

from setuptools import setup

_here = Path(__file__).resolve().parent
_version_file = next((p for p in (_here / "VERSION", _here.parent / "VERSION") if p.is_file()), None)
if _version_file is None:
    raise SystemExit(f"pteron-tools: no VERSION file in {_here} or {_here.parent}")
setup(version=_version_file.read_text().strip())
