# SPDX-License-Identifier: BSD-3-Clause
"""The random operators (aten::rand.out, randn.out, native_dropout.out) on
kernels_portable, checked statistically: their programs (tests/ops/random/,
exported by tests/ops/export_random.py) cannot match eager's draws, so each
output is held to its distribution's mean, variance and a Kolmogorov-Smirnov
bound at a significance far below any flake rate that matters (about 1e-6)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO

FOLDER = REPO / "tests" / "ops" / "random"


def _entries():
    return {e["name"]: e for e in json.loads((FOLDER / "manifest.json").read_text())["fixtures"]}


def _run(runtime, name, method):
    """Outputs of a method, fed zeros (rand, randn: the input only carries the
    dtype) or ones (native_dropout), as export_random.py exported them."""
    entry = _entries()[name]
    m = entry["methods"][method]
    assert entry["operator"] in m["operators"], f"{name}.{method} does not call {entry['operator']}"
    fill = np.ones if name == "native_dropout_out" else np.zeros
    inputs = [fill(s, dtype=d) for s, d in zip(m["input_shapes"], m["input_dtypes"])]
    prog = runtime.load_file(FOLDER / entry["file"])
    outs = prog.load_method(method).run(inputs)
    assert [list(o.shape) for o in outs] == m["output_shapes"]
    assert [str(o.dtype) for o in outs] == m["output_dtypes"]
    return outs


def _ks(sample, cdf):
    """The Kolmogorov-Smirnov statistic of a sample against a CDF."""
    x = np.sort(sample.ravel().astype(np.float64))
    n = x.size
    f = cdf(x)
    i = np.arange(1, n + 1)
    return max(np.max(i / n - f), np.max(f - (i - 1) / n))


def _ks_bound(n):
    # P(sqrt(n) * D > 2.6) is about 2e-6 for the Kolmogorov distribution.
    return 2.6 / math.sqrt(n)


@pytest.mark.parametrize("method", ["f32", "f64"])
def test_rand_is_uniform_on_zero_one(runtime, method):
    (u,) = _run(runtime, "rand_out", method)
    n = u.size
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)
    assert _ks(u, lambda x: np.clip(x, 0, 1)) < _ks_bound(n)


@pytest.mark.parametrize("method", ["f32", "f64"])
def test_randn_is_standard_normal(runtime, method):
    (z,) = _run(runtime, "randn_out", method)
    n = z.size
    assert np.all(np.isfinite(z))
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / n)
    erf = np.vectorize(math.erf)
    assert _ks(z, lambda x: 0.5 * (1 + erf(x / math.sqrt(2)))) < _ks_bound(n)


def test_two_executes_draw_different_values(runtime):
    a = _run(runtime, "randn_out", "f32")[0]
    b = _run(runtime, "randn_out", "f32")[0]
    assert not np.array_equal(a, b)


def test_dropout_keeps_one_minus_p_and_scales_the_kept(runtime):
    out, mask = _run(runtime, "native_dropout_out", "f32_p03")
    n = mask.size
    assert mask.dtype == np.bool_
    keep = mask.mean()
    assert abs(keep - 0.7) < 5 * math.sqrt(0.21 / n)
    np.testing.assert_allclose(out, np.where(mask, 1 / 0.7, 0.0).astype(np.float32), rtol=1e-6)


def test_dropout_with_p_zero_keeps_everything(runtime):
    out, mask = _run(runtime, "native_dropout_out", "f64_p0")
    assert mask.all()
    np.testing.assert_array_equal(out, np.ones(100))


def test_dropout_not_training_is_the_identity(runtime):
    out, mask = _run(runtime, "native_dropout_out", "f32_eval")
    assert mask.all()
    np.testing.assert_array_equal(out, np.ones(100, dtype=np.float32))
