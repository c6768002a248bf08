# SPDX-License-Identifier: BSD-3-Clause
"""kernels_llm (runtime/kernels/llm/): upstream's llama:: custom operators, program by program.

The programs (models/export_llm_ops.py, committed in models/fixtures/llm/) call the operators
as upstream's LLM exporter does: custom_sdpa (causal with grouped-query heads over 8/2 and 6/2
heads, over 300 cache positions, masked and non-causal with a scale, float32, bfloat16 and
float16), sdpa_with_kv_cache, custom_quantized_sdpa (both layouts), update_cache (float32 and
int8 caches), update_cache_with_indices, fast_hadamard_transform, fallback, and
gated_delta_rule and its older name channelwise_gated_delta_rule (channelwise and per-token
decay, grouped query heads, 1 to 48 tokens), with start positions 0, middle and last and
sequence lengths 1 to the cache's length. Each case's outputs were computed by upstream's
own runtime (its Python bindings with its custom-operator kernels) when the fixtures were
made; pteron-run must give the same within float32 rounding (one bfloat16/float16 rounding
for those dtypes), at every ISA level this CPU has and at 1 and 2 threads. Bad start
positions and indices are named errors, never a read outside the cache; a gated delta rule
whose inputs disagree in shape is a named error too.
"""
import json
import os

import numpy as np
import pytest

from conftest import REPO, build_dir, run
from isa_check import missing_for

F = REPO / "models" / "fixtures" / "llm"
MANIFEST = json.loads((F / "manifest.json").read_text())
PROGRAMS = {e["name"]: e for e in MANIFEST["fixtures"]}
# Bound on |pteron - upstream| relative to the output's largest magnitude (at least 1), per
# output dtype: float32 rounding of a differently ordered sum; one rounding of the half types.
REL = {"float32": 2e-5, "bfloat16": 2 ** -7, "float16": 2 ** -9, "int8": 0}


def cases():
    for e in MANIFEST["fixtures"]:
        m = e["methods"]["forward"]
        for k, c in enumerate([m] + m.get("cases", [])):
            yield pytest.param(e["name"], k, id=f"{e['name']}-{k}")


def case_of(name, k):
    m = PROGRAMS[name]["methods"]["forward"]
    return ([m] + m.get("cases", []))[k], m["output_dtypes"]


def load(path, dtype):
    a = np.load(path)
    if dtype == "bfloat16":  # the fixture writer keeps bfloat16 as its uint16 bits
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a


def case_inputs(name, c, tmp):
    """The case's input files; a bfloat16 one (kept as its uint16 bits) as the float32 .npy
    pteron-run takes for bfloat16 (exact: every bfloat16 is a float32)."""
    dtypes = PROGRAMS[name]["methods"]["forward"]["input_dtypes"]
    files = []
    for i, (fn, dt) in enumerate(zip(c["inputs"], dtypes)):
        if dt == "bfloat16":
            p = tmp / f"input_{i}.f32.npy"
            np.save(p, load(F / fn, dt))
            files.append(p)
        else:
            files.append(F / fn)
    return files


def pteron(name, inputs, tmp, env=None, expect_ok=True):
    out = tmp / "out"
    cmd = [build_dir() / "pteron-run", F / PROGRAMS[name]["file"]]
    for i in inputs:
        cmd += ["--input", i]
    cmd += ["--output-dir", out]
    e = {k: v for k, v in os.environ.items() if k not in ("PTERON_ISA", "PTERON_NUM_THREADS")}
    e.update(env or {})
    r = run(cmd, timeout=120, env=e)
    if expect_ok:
        assert r.returncode == 0, f"{name}: rc {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
    return r, out


def compare(name, k, out):
    c, dtypes = case_of(name, k)
    assert "upstream" in c, f"{name} case {k}: upstream's runtime failed: {c.get('upstream_error')}"
    for i, (fn, dt) in enumerate(zip(c["upstream"], dtypes)):
        want = load(F / fn, dt)
        got = np.load(out / f"output_{i}.npy")
        assert got.shape == want.shape, (name, k, i, got.shape, want.shape)
        if dt in ("int8", "int64"):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} case {k} output {i}")
            continue
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got.astype(np.float64) - want).max())
        assert err <= REL[dt] * scale, (f"{name} case {k} output {i} ({dt}): max |pteron - "
                                        f"upstream| {err} over {REL[dt] * scale}")


@pytest.mark.parametrize("name,k", list(cases()))
def test_case_matches_upstreams_runtime(name, k, tmp_path):
    c, _ = case_of(name, k)
    _, out = pteron(name, case_inputs(name, c, tmp_path), tmp_path)
    compare(name, k, out)


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_attention_at_every_isa_level_and_thread_count(isa, threads, tmp_path):
    if missing_for(isa):
        pytest.skip(f"this CPU lacks {sorted(missing_for(isa))} for PTERON_ISA={isa}")
    for name in ("custom_sdpa_gqa", "custom_sdpa_long", "custom_sdpa_masked",
                 "custom_quantized_sdpa_seq2", "custom_sdpa_bf16"):
        m = PROGRAMS[name]["methods"]["forward"]
        for k in range(1 + len(m.get("cases", []))):
            c, _ = case_of(name, k)
            d = tmp_path / f"{name}-{k}"
            d.mkdir()
            _, out = pteron(name, case_inputs(name, c, d), d,
                            env={"PTERON_ISA": isa, "PTERON_NUM_THREADS": threads})
            compare(name, k, out)


def test_the_fixtures_cover_the_operators_and_the_cases():
    ops = {o for e in MANIFEST["fixtures"] for o in e["operators"]}
    for op in ("llama::custom_sdpa.out", "llama::sdpa_with_kv_cache.out",
               "llama::custom_quantized_sdpa.out", "llama::update_cache.out",
               "llama::update_cache_with_indices.out", "llama::fast_hadamard_transform.out",
               "llama::fallback.out", "llama::gated_delta_rule.out",
               "llama::channelwise_gated_delta_rule.out"):
        assert op in ops, (op, sorted(ops))
    # the gated delta rule: both decay ranks, grouped query heads, 1 token and several
    decay_ranks, tokens = set(), set()
    for name in ("gated_delta_rule", "gated_delta_rule_scalar", "channelwise_gated_delta_rule"):
        m = PROGRAMS[name]["methods"]["forward"]
        for c in [m] + m.get("cases", []):
            decay_ranks.add(len(c["input_shapes"][3]))
            tokens.add(c["input_shapes"][0][2])
    assert decay_ranks == {3, 4} and 1 in tokens and max(tokens) > 32, (decay_ranks, tokens)
    gdr = PROGRAMS["gated_delta_rule"]["methods"]["forward"]
    assert gdr["input_shapes"][0][1] == 2 * gdr["input_shapes"][1][1], gdr["input_shapes"]
    # start positions 0, middle and last, sequence lengths 1 and the cache's whole length
    gqa = PROGRAMS["custom_sdpa_gqa"]["methods"]["forward"]
    shapes = [(c["input_shapes"][0][1], c["input_shapes"][1][1]) for c in gqa["cases"]]
    assert (24, 24) in shapes and (1, 24) in shapes, shapes
    # upstream's kernels agree with a float64 computation of the same attention
    for e in MANIFEST["fixtures"]:
        if e.get("reference_error") is not None:
            bound = 1e-5 if "f16" not in e["name"] and "bf16" not in e["name"] else 1e-2
            assert e["reference_error"] < bound, (e["name"], e["reference_error"])


def write(tmp, name, a):
    p = tmp / name
    np.save(p, a)
    return p


@pytest.mark.parametrize("what,pos,seq", [("past the end", 22, 3), ("negative", -1, 1),
                                          ("at the end", 24, 1)])
def test_a_bad_start_position_is_a_named_error(what, pos, seq, tmp_path):
    rng = np.random.default_rng(1)
    ins = [write(tmp_path, "q.npy", rng.standard_normal((1, seq, 8, 16), dtype=np.float32)),
           write(tmp_path, "k.npy", rng.standard_normal((1, 24, 2, 16), dtype=np.float32)),
           write(tmp_path, "v.npy", rng.standard_normal((1, 24, 2, 16), dtype=np.float32)),
           write(tmp_path, "p.npy", np.array([pos], np.int64))]
    r, _ = pteron("custom_sdpa_gqa", ins, tmp_path, expect_ok=False)
    text = r.stdout + r.stderr
    assert r.returncode != 0, text
    assert "llama::custom_sdpa.out" in text and f"start_pos {pos}" in text, text
    assert "24 positions" in text, text


def test_a_bad_cache_position_or_index_is_a_named_error(tmp_path):
    rng = np.random.default_rng(2)
    v = write(tmp_path, "v.npy", rng.standard_normal((1, 2, 2, 4), dtype=np.float32))
    r, _ = pteron("update_cache", [v, write(tmp_path, "p.npy", np.array([9], np.int64))],
                  tmp_path, expect_ok=False)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "llama::update_cache.out" in text and "start_pos 9" in text, text
    v3 = write(tmp_path, "v3.npy", rng.standard_normal((2, 3, 2, 4), dtype=np.float32))
    idx = write(tmp_path, "i.npy", np.array([[5, 0, 8], [1, 2, 3]], np.int64))
    r, _ = pteron("update_cache_with_indices", [v3, idx], tmp_path, expect_ok=False)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "indices[0, 2] = 8" in text and "8 positions" in text, text


@pytest.mark.parametrize("threads", ["1", "2"])
def test_gated_delta_rule_at_one_and_two_threads(threads, tmp_path):
    for name in ("gated_delta_rule", "gated_delta_rule_scalar"):
        m = PROGRAMS[name]["methods"]["forward"]
        for k in range(1 + len(m.get("cases", []))):
            c, _ = case_of(name, k)
            d = tmp_path / f"{name}-{k}"
            d.mkdir()
            _, out = pteron(name, case_inputs(name, c, d), d, env={"PTERON_NUM_THREADS": threads})
            compare(name, k, out)


def test_a_gated_delta_rule_with_mismatched_shapes_is_a_named_error(tmp_path):
    c, _ = case_of("gated_delta_rule", 0)  # 5 tokens: query [2, 4, 5, 8], beta [2, 2, 5]
    ins = [F / i for i in c["inputs"]]
    rng = np.random.default_rng(3)
    ins[4] = write(tmp_path, "beta.npy", rng.random((2, 2, 4), dtype=np.float32))
    r, out = pteron("gated_delta_rule", ins, tmp_path, expect_ok=False)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "llama::gated_delta_rule.out" in text, text
    assert "beta has shape [2, 2, 4]" in text and "[2, 2, 5]" in text, text
    assert not (out / "output_0.npy").exists()


def test_quantized_attention_checks_the_position_too(tmp_path):
    c, _ = case_of("custom_quantized_sdpa", 0)
    ins = [F / i for i in c["inputs"]]
    ins[-1] = write(tmp_path, "p.npy", np.array([14], np.int64))  # 14 + 3 > 16
    r, _ = pteron("custom_quantized_sdpa", ins, tmp_path, expect_ok=False)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "llama::custom_quantized_sdpa.out" in text, text
    assert "start_pos 14" in text and "16 positions" in text, text
