# SPDX-License-Identifier: BSD-3-Clause
"""The header-only C++ layer (pteron/pteron.hpp), compiled and run as an
application would: typed inputs/outputs including bool, dtype-mismatch
messages naming both dtypes, no stale outputs before execute."""
import re
import subprocess

import numpy as np

from conftest import FIXTURES, REPO, build_dir


def test_hpp_typed_outputs_bool_and_errors(tmp_path):
    exe = tmp_path / "hpp_api"
    r = subprocess.run(
        ["g++", "-std=c++17", "-O1", f"-I{REPO / 'include'}",
         str(REPO / "tests" / "native" / "hpp_api.cpp"), f"-L{build_dir()}", "-lpteron",
         # kernels_portable registers itself when loaded: keep it linked.
         "-Wl,--push-state,--no-as-needed", "-lpteron_kernels_portable", "-Wl,--pop-state",
         f"-Wl,-rpath,{build_dir()}", "-o", str(exe)],
        capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    x = np.load(FIXTURES / "multi_out.forward.input_0.npy").astype("<f4")
    raw = tmp_path / "input.f32"
    x.tofile(raw)
    etdump = tmp_path / "multi_out.etdp"
    r = subprocess.run([str(exe), str(FIXTURES / "multi_out.pte"), str(raw), str(etdump)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert "has not executed" in lines["before_execute"]
    assert "bool" in lines["dtype_mismatch"] and "float32" in lines["dtype_mismatch"]
    want_bool = np.load(FIXTURES / "multi_out.forward.expected_3.npy").ravel()
    assert lines["bool_output"] == "".join("1" if v else "0" for v in want_bool)
    want0 = np.load(FIXTURES / "multi_out.forward.expected_0.npy").astype(np.float64).sum()
    assert abs(float(lines["float_output0"]) - want0) <= 1e-4 * max(1.0, abs(want0))
    assert lines["dtype_name(6)"] == "float32"
    load, calls, kernels = (int(w) for w in re.findall(r"\d+", lines["profile"]))
    assert load == 2 and calls == kernels > 0, lines["profile"]
    data = etdump.read_bytes()
    assert data[8:12] == b"ED00" and int.from_bytes(data[:4], "little") == len(data) - 4
