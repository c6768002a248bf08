"""Shared pytest fixtures: the build directories and the fixture manifest.

The test command (scripts/test.sh) builds first and sets PTERON_BUILD_DIR
(Release) and PTERON_ASAN_BUILD_DIR (ASan+UBSan). Tests never need torch.
"""
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

FIXTURES = REPO / "models" / "fixtures"


def build_dir() -> Path:
    return Path(os.environ.get("PTERON_BUILD_DIR", REPO / "build"))


def manifest():
    with open(FIXTURES / "manifest.json") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def runtime():
    import capi

    d = build_dir()
    if not (d / "libpteron.so").exists() and not (d / "pteron.dll").exists():
        pytest.fail(f"no pteron build in {d}: run scripts/test.sh (it builds first)")
    return capi.Runtime(d)


@pytest.fixture(scope="session")
def pteron_run() -> Path:
    p = build_dir() / "pteron-run"
    if not p.exists():
        pytest.fail(f"{p} is missing: run scripts/test.sh (it builds first)")
    return p
