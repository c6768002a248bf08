# SPDX-License-Identifier: BSD-3-Clause
"""Paths whatever their characters: pteron-run with the program, an input and
the output folder each under a folder whose name is not ASCII (accented, CJK,
emoji), on Linux and, for the MinGW build, under Wine. On Windows the
arguments reach pteron-run as UTF-16 and go on as UTF-8 to the C API, which
opens files with CreateFileW; the ANSI code page cannot hold these names.

Wine: the pteron-run.exe of PTERON_MINGW_PACKAGE (scripts/test.sh), else of
PTERON_MINGW_BUILD_DIR (a MinGW build tree, DLLs beside the program).
"""
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, MINGW_CXX, manifest, run, wine_run, winpath

FOLDER_NAMES = {
    "accented": "Café Ünïcødé-é",
    "cjk": "模型データ 모델",
    "emoji": "🐍 models 📦",
}


def _layout(root: Path, folder: str, name="mlp"):
    """The fixture's program, its inputs and an output folder, each under its own
    non-ASCII folder below `root`. Returns (program, inputs, out_dir, spec)."""
    spec = next(f for f in manifest()["fixtures"] if f["name"] == name)
    m = spec["methods"]["forward"]
    prog_dir = root / folder / "program"
    in_dir = root / "in" / folder
    out_dir = root / "out" / f"{folder} résultats"  # does not exist yet: pteron-run creates it
    prog_dir.mkdir(parents=True)
    in_dir.mkdir(parents=True)
    program = prog_dir / f"{folder}.pte"
    shutil.copy2(FIXTURES / spec["file"], program)
    inputs = []
    for i, p in enumerate(m["inputs"]):
        dst = in_dir / f"entrée_{i}_{folder}.npy"
        shutil.copy2(FIXTURES / p, dst)
        inputs.append(dst)
    return program, inputs, out_dir, spec


def _check_outputs(out_dir: Path, spec):
    m = spec["methods"]["forward"]
    for i, exp in enumerate(m["expected"]):
        got_file = out_dir / f"output_{i}.npy"
        assert got_file.is_file(), f"{got_file} was not written"
        np.testing.assert_allclose(np.load(got_file), np.load(FIXTURES / exp), rtol=spec["rtol"],
                                   atol=spec["atol"])


# ---- Linux ---------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(FOLDER_NAMES))
def test_pteron_run_reads_and_writes_under_non_ascii_folders_on_linux(pteron_run, tmp_path, kind):
    program, inputs, out_dir, spec = _layout(tmp_path, FOLDER_NAMES[kind])
    args = [pteron_run, program]
    for p in inputs:
        args += ["--input", p]
    r = run(args + ["--output-dir", out_dir], timeout=60)
    assert r.returncode == 0, r.stderr
    _check_outputs(out_dir, spec)


def test_missing_program_under_a_non_ascii_folder_is_named_in_utf8(pteron_run, tmp_path):
    missing = tmp_path / FOLDER_NAMES["cjk"] / "absent.pte"
    r = run([pteron_run, missing], timeout=60)
    assert r.returncode == 1
    assert str(missing) in r.stderr, r.stderr


# ---- Windows (MinGW build) under Wine -----------------------------------------

@pytest.fixture(scope="module")
def mingw_pteron_run() -> Path:
    if not (shutil.which(MINGW_CXX) and shutil.which("wine")):
        pytest.skip(f"{MINGW_CXX} and wine are needed (scripts/test.sh installs them)")
    for var, sub in (("PTERON_MINGW_PACKAGE", "bin"), ("PTERON_MINGW_BUILD_DIR", "")):
        if os.environ.get(var):
            exe = Path(os.environ[var]) / sub / "pteron-run.exe"
            if not exe.is_file():
                pytest.fail(f"{var} is set but has no {exe}", pytrace=False)
            return exe
    pytest.fail("neither PTERON_MINGW_PACKAGE nor PTERON_MINGW_BUILD_DIR is set: run "
                "scripts/test.sh (it makes the MinGW package)", pytrace=False)


# Wine names Unix files in UTF-8 under a UTF-8 locale.
UTF8 = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


@pytest.mark.parametrize("kind", sorted(FOLDER_NAMES))
def test_pteron_run_exe_reads_and_writes_under_non_ascii_folders(mingw_pteron_run, wine_env,
                                                                 tmp_path, kind):
    program, inputs, out_dir, spec = _layout(tmp_path, FOLDER_NAMES[kind])
    args = [winpath(program)]
    for p in inputs:
        args += ["--input", winpath(p)]
    r = wine_run(wine_env, mingw_pteron_run, *args, "--output-dir", winpath(out_dir), cwd=tmp_path,
                 extra_env=UTF8)
    assert r.returncode == 0, str(r)
    assert "output 0:" in r.stdout, str(r)
    _check_outputs(out_dir, spec)


def test_pteron_run_exe_names_a_missing_non_ascii_path_unchanged(mingw_pteron_run, wine_env,
                                                                 tmp_path):
    (tmp_path / FOLDER_NAMES["emoji"]).mkdir()
    missing = winpath(tmp_path / FOLDER_NAMES["emoji"]) + "\\absent.pte"
    r = wine_run(wine_env, mingw_pteron_run, missing, cwd=tmp_path, extra_env=UTF8)
    assert r.returncode == 1, str(r)
    assert missing in r.stderr, str(r)  # the UTF-8 path, not '?' or the ANSI code page
