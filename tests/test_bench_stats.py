# SPDX-License-Identifier: BSD-3-Clause
"""bench/run.py's statistics and error reporting (no benchmark is run here)."""
import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_run", Path(__file__).resolve().parent.parent / "bench" / "run.py")
bench_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_run)


def _round(times, load=1.0, rss=1024):
    return {"times_ms": times, "load_ms": load, "maxrss_kb": rss}


def test_side_summary_pools_every_timed_execution_and_reports_min_max():
    s = bench_run.side_summary([_round([1.0, 3.0], load=2.0, rss=2048), _round([2.0, 10.0], load=4.0)])
    assert s["median_ms"] == 2.5 and s["spread_ms"] == [1.0, 10.0]
    assert s["samples"] == 4 and s["processes"] == 2
    assert s["load_ms"] == 3.0 and s["peak_rss_mb"] == 2.0


def test_ratio_is_pteron_over_peer_with_per_round_spread():
    ratio, spread = bench_run.ratio_summary([_round([1.0, 1.0]), _round([2.0, 2.0])],
                                            [_round([10.0, 10.0]), _round([10.0, 10.0])])
    assert ratio == pytest.approx(0.15)  # the median of the rounds 0.1 and 0.2
    assert spread == [0.1, 0.2]


def test_ratio_is_the_median_of_paired_round_ratios_not_of_pooled_samples():
    # The machine ran slow in the rounds where pteron happened to have more samples: the pooled
    # medians say 2.0, every round says pteron took 0.9 of the peer's time.
    p = [_round([0.9] * 1), _round([1.8] * 5), _round([1.8] * 5)]
    q = [_round([1.0] * 5), _round([2.0] * 1), _round([2.0] * 1)]
    ratio, spread = bench_run.ratio_summary(p, q)
    assert ratio == pytest.approx(0.9) and spread == pytest.approx([0.9, 0.9])
    assert bench_run.pooled_ratio(p, q) == pytest.approx(1.8 / 1.0)


def test_ratio_is_absent_when_a_side_has_no_samples():
    assert bench_run.ratio_summary([], [_round([1.0])]) == (None, None)
    assert bench_run.pooled_ratio([], [_round([1.0])]) is None


def test_plan_never_gives_a_single_sample_and_bounds_slow_programs():
    assert bench_run.plan_iterations(1800.0, 1.5) == (1, 2)
    warmup, iters = bench_run.plan_iterations(0.001, 1.5)
    assert iters == 2000 and 1 <= warmup <= 50


def test_error_message_keeps_the_runner_error_and_the_missing_operator():
    err = ("I 00:00 executorch:x.cpp:1] noise\n"
           "E 00:00:00.000668 executorch:method.cpp:822] Missing operator: [1] aten::zeros_like.out\n"
           "peer-bench: error: load_method('forward') failed: Error::OperatorMissing\n")
    msg = bench_run.error_message(err, 1)
    assert msg.startswith("load_method('forward') failed: Error::OperatorMissing")
    assert "aten::zeros_like.out" in msg


def test_output_agreement_uses_a_relative_tolerance():
    assert bench_run.agrees(100.0, 100.05, 10)
    assert not bench_run.agrees(100.0, 101.0, 10)
    assert bench_run.agrees(None, 1.0, 1) is None


def test_a_quantized_output_may_differ_by_one_quantum_per_element_and_no_more():
    # 1000 elements, one quantum 0.04: the sum may move by up to 40 (plus float rounding)
    assert not bench_run.agrees(100.0, 130.0, 1000)
    assert bench_run.agrees(100.0, 130.0, 1000, 0.04)
    assert not bench_run.agrees(100.0, 150.0, 1000, 0.04)


def test_the_quantum_is_the_eager_output_range_over_255_for_quantized_models_only(tmp_path):
    import numpy as np
    f = tmp_path / "expected.npy"
    np.save(f, np.array([-1.0, 0.5, 1.55], dtype=np.float32))
    total, quantum = bench_run.out0_reference({"expected_out0": f, "quantized": True})
    assert total == pytest.approx(1.05, rel=1e-6) and quantum == pytest.approx(2.55 / 255)
    assert bench_run.out0_reference({"expected_out0": f})[1] is None
    assert bench_run.out0_reference({"expected_out0": tmp_path / "missing.npy"}) == (None, None)


def test_a_side_slower_with_more_threads_gets_a_note_naming_the_other_side():
    def row(th, p, q):
        return {"name": "m", "threads": th, "pteron": {"median_ms": p}, "peer": {"median_ms": q}}
    notes = bench_run.thread_notes([row(1, 1.0, 1.0), row(2, 40.0, 1.1), {"name": "x", "threads": 1,
                                    "pteron": {"error": "e"}, "peer": {"median_ms": 1.0}}])
    assert len(notes) == 1
    assert notes[0].startswith("pteron ran m 40.0x slower at 2 threads") and "upstream" in notes[0]


def test_side_summary_reports_the_mean_that_a_median_hides():
    s = bench_run.side_summary([_round([1.0, 1.0, 1.0, 97.0])])
    assert s["median_ms"] == 1.0 and s["mean_ms"] == 25.0


def test_contention_rows_get_no_thread_note():
    def row(th, p, busy=0):
        return {"name": "m", "threads": th, "busy": busy, "pteron": {"median_ms": p},
                "peer": {"median_ms": 1.0}}
    assert bench_run.thread_notes([row(1, 1.0), row(2, 1.0), row(2, 40.0, busy=2)]) == []


def test_peak_assumes_two_256_bit_fma_pipes_on_zen2_and_later_and_one_on_zen1():
    assert bench_run.fma_units("AuthenticAMD", 0x19, 0x11, {"avx2", "fma"})[0] == 2
    assert bench_run.fma_units("AuthenticAMD", 0x17, 0x01, {"avx2", "fma"})[0] == 1
    assert bench_run.fma_units("GenuineIntel", 6, 85, {"avx512f"})[0] == 2
    # AVX-512 on AMD: Zen 4 double-pumps two 256-bit pipes, Zen 5 has two 512-bit ones.
    assert bench_run.fma_units("AuthenticAMD", 0x19, 0x11, {"avx512f"})[0] == 1
    assert bench_run.fma_units("AuthenticAMD", 0x1A, 0x02, {"avx512f"})[0] == 2


def test_cpu_info_names_the_isa_paths_that_cannot_run():
    cpu = bench_run.cpu_info()
    paths = cpu["isa_paths_runnable"] + cpu["isa_paths_not_runnable"]
    assert sorted(paths) == ["avx2", "avx512", "baseline"] and "baseline" in cpu["isa_paths_runnable"]
    assert cpu["flops_per_cycle"] in (8, 16, 32, 64) and "x `cpu MHz`" in cpu["peak_assumptions"]


def test_plan_summary_adds_up_the_delegate_calls():
    plan = {"lines": [
        "pteron XnnpackBackend: 5 nodes, 2 XNNPACK segment(s), 3 step(s); pteron runs: "
        "StaticTranspose,Concatenate2; reshapes as views: 0",
        "pteron XnnpackBackend: 3 nodes, 0 XNNPACK segment(s), 3 step(s); pteron runs: "
        "Concatenate2,BatchMatMul; reshapes as views: 1"]}
    s = bench_run.plan_summary(plan)
    assert s.startswith("2 distinct delegate plan(s), 8 nodes; XNNPACK library: 2 segment(s)")
    assert s.endswith("pteron's kernels: StaticTranspose, Concatenate2, BatchMatMul")
    assert bench_run.plan_summary({"error": "x"}) == "not runnable"
    # node lines are not plans; the int8 GEMM's level is named where nodes ran on it
    q = {"lines": plan["lines"] + [
        "pteron XnnpackBackend node 2: Conv2d on pteron, step 2, output [1, 8, 8, 8] (quantized "
        "values (pteron rounds them after each node); int8 GEMM (avx512vnni))"]}
    s = bench_run.plan_summary(q)
    assert s.startswith("2 distinct delegate plan(s), 8 nodes") and s.endswith(
        "; int8 GEMM: avx512vnni"), s


def test_busy_processes_are_stopped_even_when_the_body_raises():
    import pytest
    procs = []
    with pytest.raises(KeyboardInterrupt):
        with bench_run.BusyProcesses(2) as busy:
            procs = list(busy.procs)
            assert len(procs) == 2 and all(p.poll() is None for p in procs)
            raise KeyboardInterrupt
    assert procs and all(p.poll() is not None for p in procs)
