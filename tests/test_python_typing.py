# SPDX-License-Identifier: BSD-3-Clause
"""The package is typed: py.typed, the extension's stub python/pteron/_pteron.pyi (nanobind's
stub generator, run by python/CMakeLists.txt on the built module: the committed copy is what
every channel ships, and it must equal what the generator makes now), and mypy on a user's script
finds no error where the script is right and the error where it is not."""
import os
import sys
import textwrap

import pytest

from conftest import REPO, run

PACKAGE = REPO / "python" / "pteron"

USER_SCRIPT = """
from typing import List

import numpy as np

import pteron


def run(path: str) -> List[np.ndarray]:
    program = pteron.Program.load(path, components=["kernels_portable", "threadpool"])
    names: List[str] = program.method_names
    method = program.load_method(names[0], max_allocated_bytes=1 << 30, num_threads=1)
    spec: pteron.TensorSpec = method.inputs[0]
    x = np.zeros(spec.shape, np.float32)
    outputs = method(x)
    tensors = method(x, output="dlpack")
    assert len(tensors) == len(outputs)
    return [np.asarray(o) for o in outputs]


def info() -> str:
    version: str = pteron.__version__
    threads: int = pteron.num_threads()
    pteron.set_num_threads(2)
    try:
        run("model.pte")
    except pteron.MissingOperatorError as e:
        return e.message
    return f"{version} {threads} {sorted(pteron.components())} {pteron.version()}"
"""

# Each line is wrong; mypy must name each.
WRONG = """
import pteron

pteron.Program.load(3.5)
m = pteron.Program.load("m.pte").load_method(num_threads="2")
n: str = pteron.num_threads()
"""


# --python-version 3.10: the oldest mypy 2 checks for (the package itself runs on 3.9 and later).
def mypy(tmp_path, script, *args):
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.fail("mypy is not installed in this interpreter (scripts/setup.sh installs it)",
                    pytrace=False)
    f = tmp_path / "user.py"
    f.write_text(textwrap.dedent(script))
    env = dict(os.environ, MYPYPATH=str(REPO / "python"))
    return run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull,
                "--python-version", "3.10", *args, f], timeout=300, env=env, cwd=tmp_path)


def test_the_package_is_typed():
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_pteron.pyi").is_file()


def test_the_stub_is_what_nanobinds_stub_generator_makes(stage):
    # The stage fixture built the extension (python/CMakeLists.txt) in stage/../build, which ran
    # nanobind_add_stub there.
    made = stage.parent / "build" / "_pteron.pyi"
    assert made.is_file(), "python/CMakeLists.txt made no _pteron.pyi (nanobind_add_stub)"
    assert made.read_text() == (PACKAGE / "_pteron.pyi").read_text(), (
        "python/pteron/_pteron.pyi differs from the stub nanobind makes for the extension now: "
        f"copy {made} over it")


def test_mypy_finds_no_error_in_a_users_script(tmp_path):
    r = mypy(tmp_path, USER_SCRIPT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success: no issues found" in r.stdout


def test_mypy_names_the_errors_of_a_wrong_script(tmp_path):
    r = mypy(tmp_path, WRONG)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert 'Argument 1 to "load" of "Program" has incompatible type "float"' in out, out
    assert 'Argument "num_threads" to "load_method" of "Program" has incompatible type "str"' \
        in out, out
    assert 'Incompatible types in assignment (expression has type "int", variable has type ' \
        '"str")' in out, out


def test_mypy_finds_no_error_in_the_package(tmp_path):
    r = run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull,
             "--python-version", "3.10", "-p", "pteron._runtime", "-m", "pteron",
             "-m", "pteron._pteron"], timeout=300,
            env=dict(os.environ, MYPYPATH=str(REPO / "python")), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
