# SPDX-License-Identifier: BSD-3-Clause
"""Quantized programs exported by upstream's own PT2E flow (models/export_quantized.py; the
committed models/fixtures/quantized/): an MLP (static per-tensor, static per-channel, dynamic
activations with per-channel weights) and a CNN (static per-channel), each as a portable program
and lowered to XNNPACK, run with pteron-run.

The portable programs (quantize / dequantize around float operators: kernels_quantized with
kernels_portable and kernels_optimized) match eager PyTorch's output of the converted model
within one quantum of the output's range over 8 bits. The XNNPACK-lowered ones are refused at
load with not_supported naming XnnpackBackend (its int8 paths do not exist yet), never a crash.
"""
import json

import numpy as np
import pytest

from conftest import REPO, run

Q = REPO / "models" / "fixtures" / "quantized"
PROGRAMS = json.loads((Q / "manifest.json").read_text())["programs"]


def test_the_fixtures_cover_each_configuration():
    names = {p["name"] for p in PROGRAMS}
    for want in ("qmlp_static_per_tensor", "qmlp_static_per_channel", "qmlp_dynamic",
                 "qcnn_static_per_channel"):
        assert want in names and want + "_xnnpack" in names, names
    ops = {o for p in PROGRAMS if not p["xnnpack"] for o in p["operators"]}
    for op in ("quantize_per_tensor.out", "dequantize_per_channel.out", "choose_qparams.Tensor_out",
               "quantize_per_tensor.Tensor_out", "aten.convolution.out"):
        assert any(op in o for o in ops), (op, ops)


@pytest.mark.parametrize("p", [p for p in PROGRAMS if not p["xnnpack"]], ids=lambda p: p["name"])
def test_portable_quantized_program_matches_eager_within_one_quantum(pteron_run, tmp_path, p):
    name = p["name"]
    r = run([pteron_run, Q / p["file"], "--input", Q / f"{name}.forward.input_0.npy",
             "--output-dir", tmp_path], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    got = np.load(tmp_path / "output_0.npy")
    want = np.load(Q / f"{name}.forward.expected_0.npy")
    assert got.shape == want.shape and got.dtype == want.dtype
    err = float(np.abs(got - want).max())
    assert err <= p["quantum"], f"{name}: max abs error {err} over one quantum {p['quantum']}"


@pytest.mark.parametrize("p", [p for p in PROGRAMS if p["xnnpack"]], ids=lambda p: p["name"])
def test_xnnpack_lowered_quantized_program_is_refused_clearly(pteron_run, tmp_path, p):
    name = p["name"]
    r = run([pteron_run, Q / p["file"], "--input", Q / f"{name}.forward.input_0.npy",
             "--output-dir", tmp_path], timeout=120)
    assert r.returncode != 0 and r.returncode < 128, r  # an error exit, not a signal
    assert "XnnpackBackend" in r.stderr and "not_supported" in r.stderr, r.stderr
    assert "quantized" in r.stderr, r.stderr
