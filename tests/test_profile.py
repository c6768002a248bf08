# SPDX-License-Identifier: BSD-3-Clause
"""Profiling (pteron.h, "Profiling"): per-instruction and per-delegate-node timings of a
method through the C API, and the ETDump file they are written to, read back by upstream
ExecuTorch's own `executorch.devtools.Inspector` (in upstream's environment,
PTERON_EXPORT_PYTHON) and compared with the ETDump upstream's runtime writes for the same
program."""
import json
import os
import subprocess

import numpy as np
import pytest

import capi
from conftest import REPO, build_dir

FIXTURES = REPO / "models" / "fixtures"


@pytest.fixture(autouse=True)
def one_event_per_instruction(monkeypatch):
    """These tests check an event per instruction, as upstream's runtime records them. A graph
    pass (pteron/kernel.h; kernels_optimized's, once a test in this process has loaded it) would
    replace runs of instructions by regions, each one event: tests/test_graph_opt.py checks
    those. PTERON_GRAPH_OPT is read at method load, here and in the child processes."""
    monkeypatch.setenv("PTERON_GRAPH_OPT", "0")


def load(rt, name):
    program = rt.load_file(FIXTURES / f"{name}.pte")
    method = program.load_method("forward")
    for i in range(method.num_inputs):
        method.set_input(i, np.load(FIXTURES / f"{name}.forward.input_{i}.npy"))
    return program, method


def test_load_is_timed_and_executes_are_not_until_profiling_is_on(runtime):
    program, m = load(runtime, "mlp")
    m.execute()
    events = m.profile_events()
    assert [(e["run"], e["name"]) for e in events] == [(-1, "Method::init"),
                                                       (-1, "Program::load_method")]
    init, whole = events
    assert whole["start"] <= init["start"] <= init["end"] <= whole["end"]


def test_every_instruction_and_execute_is_an_event_with_its_chain_and_index(runtime):
    program, m = load(runtime, "mlp")
    m.set_profiling(True)
    m.execute()
    m.execute()
    events = [e for e in m.profile_events() if e["run"] >= 0]
    for run in (0, 1):
        ev = [e for e in events if e["run"] == run]
        assert ev[-1]["name"] == "Method::execute" and ev[-1]["chain"] == -1
        calls = [e for e in ev if e["name"] == "OPERATOR_CALL"]
        kernels = [e for e in ev if e["name"].startswith("native_call_")]
        assert [e["instruction"] for e in calls] == list(range(len(calls))) and len(calls) == 5
        assert [e["name"] for e in kernels] == [
            "native_call_permute_copy.out", "native_call_addmm.out", "native_call_relu.out",
            "native_call_permute_copy.out", "native_call_addmm.out"]
        for k, c in zip(kernels, calls):  # the kernel inside its instruction, in order
            assert k["instruction"] == c["instruction"] and k["chain"] == c["chain"] == 0
            assert c["start"] <= k["start"] <= k["end"] <= c["end"]
        whole = ev[-1]
        assert all(whole["start"] <= e["start"] <= e["end"] <= whole["end"] for e in ev)
    m.profile_clear()
    assert [e["run"] for e in m.profile_events()] == [-1, -1]
    m.set_profiling(False)
    m.execute()
    assert len(m.profile_events()) == 2


def test_a_delegate_call_and_each_node_the_delegate_runs_are_events(runtime):
    """XnnpackBackend reports each step it runs (kernel.h, pteron_profile_delegate_event):
    inside its DELEGATE_CALL, with the call's chain and instruction, the node's type and the
    blob's debug handle; none while the method is not profiled."""
    rt = capi.Runtime(build_dir(), kernel_libs=("kernels_portable", "backend_xnnpack"))
    program, m = load(rt, "cnn_xnnpack")
    m.execute()
    assert all(e["run"] == -1 for e in m.profile_events())
    m.set_profiling(True)
    m.execute()
    ev = [e for e in m.profile_events() if e["run"] == 0]
    call = next(e for e in ev if e["name"] == "DELEGATE_CALL")
    nodes = [e for e in ev if e["name"] is None]
    assert [e["debug_name"].split(" #")[0] for e in nodes if "Conv2d" in e["debug_name"]] == \
        ["Conv2d", "Conv2d"], nodes
    assert any(e["debug_name"].startswith("FullyConnected #") for e in nodes), nodes
    for e in nodes:
        assert (e["chain"], e["instruction"]) == (call["chain"], call["instruction"])
        assert call["start"] <= e["start"] <= e["end"] <= call["end"]
    assert any(e["debug_id"] > 0 for e in nodes)


def test_bad_calls_are_named_errors(runtime, tmp_path):
    program, m = load(runtime, "mlp")
    with pytest.raises(capi.PteronError) as e:
        m.write_etdump(tmp_path)  # a directory
    assert e.value.code == 9 and str(tmp_path) in str(e.value)
    e2 = capi.ProfileEvent()
    e2.struct_size = capi.ctypes.sizeof(capi.ProfileEvent)
    with pytest.raises(capi.PteronError) as e:
        runtime.check(runtime.lib.pteron_method_profile_event(m.h, 99, capi.ctypes.byref(e2)))
    assert e.value.code == 1 and "profile event 99" in str(e.value)
    e2.struct_size = 8
    with pytest.raises(capi.PteronError) as e:
        runtime.check(runtime.lib.pteron_method_profile_event(m.h, 0, capi.ctypes.byref(e2)))
    assert e.value.code == 1 and "struct_size" in str(e.value)


# Run in upstream's environment: writes upstream's own ETDump of a program (argv[1] with
# argv[2]'s input, when given) and prints, for each ETDump file named after it, what its
# Inspector reads: per block, the events' names and their number of samples.
INSPECT = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np, torch
from executorch.devtools import Inspector
out = {}
if sys.argv[1] != "-":
    from executorch.extension.pybindings import portable_lib as pl
    m = pl._load_for_executorch(sys.argv[1], enable_etdump=True, debug_buffer_size=0)
    x = torch.from_numpy(np.load(sys.argv[2]))
    m.run_method("forward", (x,))
    m.run_method("forward", (x,))
    m.write_etdump_result_to_file(sys.argv[3])
for path in sys.argv[3:]:
    df = Inspector(etdump_path=path).to_dataframe()
    out[path] = [[r.event_block_name, r.event_name, len(r.raw), bool(r.is_delegated_op),
                  float(min(r.raw))] for r in df.itertuples()]
print("INSPECT" + json.dumps(out))
"""


def inspect(pte, inp, paths, tmp_path):
    py = os.environ.get("PTERON_EXPORT_PYTHON")
    if not py:
        pytest.skip("PTERON_EXPORT_PYTHON (upstream's environment) is not set: "
                    "scripts/test.sh sets it")
    script = tmp_path / "read_etdump.py"
    script.write_text(INSPECT)
    r = subprocess.run([py, str(script), str(pte), str(inp), *map(str, paths)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    line = next(l for l in r.stdout.splitlines() if l.startswith("INSPECT"))
    return json.loads(line[len("INSPECT"):])


@pytest.mark.parametrize("name", ["mlp", "mlp_xnnpack"])
def test_upstreams_inspector_reads_pterons_etdump_as_it_reads_its_own(runtime, name, tmp_path):
    rt = capi.Runtime(build_dir(), kernel_libs=("kernels_portable", "backend_xnnpack"))
    program, m = load(rt, name)
    m.set_profiling(True)
    m.execute()
    m.execute()
    ours = tmp_path / "pteron.etdp"
    m.write_etdump(ours)
    assert ours.read_bytes()[4:8] != b"" and ours.read_bytes()[8:12] == b"ED00"
    theirs = tmp_path / "upstream.etdp"
    got = inspect(FIXTURES / f"{name}.pte", FIXTURES / f"{name}.forward.input_0.npy",
                  [theirs, ours], tmp_path)
    mine, up = got[str(ours)], got[str(theirs)]
    # Every event of ours, with both executes as two samples, in the Inspector's order.
    recorded = m.profile_events()
    expect = [["Default", "Method::init", 1], ["Default", "Program::load_method", 1]]
    expect += [["Execute", e["name"] or e["debug_name"], 2] for e in recorded if e["run"] == 0]
    assert [row[:3] for row in mine] == expect, mine
    assert all(row[4] >= 0 for row in mine)
    # The runtime's own events carry upstream's names: same blocks, same operator events.
    runtime_names = {(b, n) for b, n, _, delegated, _ in up if not delegated}
    mine_names = {(b, n) for b, n, _, delegated, _ in mine if not delegated}
    assert mine_names == runtime_names, (mine_names ^ runtime_names)


# Run in upstream's environment: exports a small MLP with its ETRecord into argv[1], runs it
# twice on upstream's runtime with ETDump on, then waits for pteron's ETDump (argv[1]/p.etdp,
# written between the two invocations: argv[2] == "read") and prints what the Inspector reads
# from each, beside the ETRecord.
ETRECORD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import torch
d = sys.argv[1]
if sys.argv[2] == "export":
    import copy
    from executorch.exir import to_edge
    from executorch.devtools import generate_etrecord
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    edge = to_edge(torch.export.export(model.eval(), (torch.randn(4, 16),)))
    et = copy.deepcopy(edge).to_executorch()
    open(d + "/m.pte", "wb").write(et.buffer)
    generate_etrecord(d + "/m.etrecord", edge, et)
    from executorch.extension.pybindings import portable_lib as pl
    m = pl._load_for_executorch(d + "/m.pte", enable_etdump=True, debug_buffer_size=0)
    for _ in range(2):
        m.run_method("forward", (torch.ones(4, 16),))
    m.write_etdump_result_to_file(d + "/u.etdp")
else:
    from executorch.devtools import Inspector
    out = {}
    for name in ("u", "p"):
        df = Inspector(etdump_path=f"{d}/{name}.etdp", etrecord=d + "/m.etrecord").to_dataframe()
        out[name] = [[r.event_block_name, r.event_name, list(r.op_types), len(r.raw)]
                     for r in df.itertuples()]
    print("INSPECT" + json.dumps(out))
"""


def test_with_the_programs_etrecord_the_inspector_maps_our_events_to_its_operators(runtime,
                                                                                   tmp_path):
    py = os.environ.get("PTERON_EXPORT_PYTHON")
    if not py:
        pytest.skip("PTERON_EXPORT_PYTHON (upstream's environment) is not set: "
                    "scripts/test.sh sets it")
    script = tmp_path / "etrecord_check.py"
    script.write_text(ETRECORD)
    r = subprocess.run([py, str(script), str(tmp_path), "export"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    program = runtime.load_file(tmp_path / "m.pte")
    m = program.load_method("forward")
    m.set_input(0, np.ones((4, 16), np.float32))
    m.set_profiling(True)
    m.execute()
    m.execute()
    m.write_etdump(tmp_path / "p.etdp")
    r = subprocess.run([py, str(script), str(tmp_path), "read"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(next(l for l in r.stdout.splitlines() if l.startswith("INSPECT"))[7:])
    assert got["p"] == got["u"]
    assert any(row[1] == "OPERATOR_CALL" and any("addmm" in t for t in row[2]) for row in got["p"]), \
        got["p"]


def test_python_profiles_a_method_and_writes_the_etdump(stage, tmp_path):
    """pteron.Method.profiling / profile() / write_etdump(): the C API's events, typed, and an
    unwritable path is a FileAccessError naming it."""
    from test_python import ok, py

    out = ok(py(stage, f"""
        import numpy as np, pteron
        m = pteron.Program.load({str(FIXTURES / "cnn_xnnpack.pte")!r}).load_method("forward")
        x = np.load({str(FIXTURES / "cnn_xnnpack.forward.input_0.npy")!r})
        m(x)
        assert [e.run for e in m.profile()] == [-1, -1] and not m.profiling
        m.profiling = True
        m(x)
        ev = [e for e in m.profile() if e.run == 0]
        assert isinstance(ev[0], pteron.ProfileEvent)
        assert ev[-1].name == "Method::execute" and ev[-1].chain_index == -1
        call = next(e for e in ev if e.name == "DELEGATE_CALL")
        nodes = [e for e in ev if e.name is None]
        assert nodes and all(call.start_ns <= e.start_ns <= e.end_ns <= call.end_ns for e in nodes)
        assert any(e.delegate_debug_name.startswith("Conv2d #") for e in nodes)
        m.write_etdump({str(tmp_path / "m.etdp")!r})
        try:
            m.write_etdump({str(tmp_path)!r})
        except pteron.FileAccessError as e:
            assert {str(tmp_path)!r} in str(e), e
        else:
            raise AssertionError("no error")
        m.clear_profile()
        assert [e.run for e in m.profile()] == [-1, -1]
        print("ok")
    """))
    assert out.strip().endswith("ok")
    assert (tmp_path / "m.etdp").read_bytes()[8:12] == b"ED00"
