# SPDX-License-Identifier: BSD-3-Clause
"""backend_cuda where there is no GPU: partitions, the blob checks, and every
driver error at method load.

The CUDA-lowered programs are tests/cuda/*.pte (tests/cuda/export.py, through
pteron.lowering.cuda.CudaPartitioner). They run through the pteron-run of
PTERON_CUDA_BUILD_DIR (scripts/test.sh: the ASan+UBSan build, with
backend_cuda and the cu134 train's fatbin), with no driver at all, or with a
fake driver (tests/cuda/fake_cuda.cpp, built here as libcuda.so.1) whose
cuInit, driver version, device count, architecture and module result each test
chooses, and whose device is the CPU: its cuLaunchKernel runs the kernels'
bodies (backends/cuda/src/kernels.h), so whole programs run through the
delegate's host path and match eager. This machine has no NVIDIA driver; where one is
installed, the no-driver and planted-library tests skip (a real driver would
load instead).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run

CUDA = REPO / "tests" / "cuda"
MANIFEST = json.loads((CUDA / "manifest.json").read_text())
ENTRIES = {e["name"]: e for e in MANIFEST["fixtures"]}
SCRUB = ("LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES")


def _real_driver_present() -> bool:
    try:
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "libcuda.so.1" in out


@pytest.fixture(scope="module")
def cuda_build() -> Path:
    d = os.environ.get("PTERON_CUDA_BUILD_DIR")
    if not d:
        pytest.fail("PTERON_CUDA_BUILD_DIR is not set: run scripts/test.sh (it builds backend_cuda "
                    "into build-asan/ and points the tests at it)", pytrace=False)
    d = Path(d)
    for f in ("pteron-run", "libpteron_backend_cuda.so"):
        if not (d / f).exists():
            pytest.fail(f"{d / f} is missing: PTERON_CUDA_BUILD_DIR must be a build with "
                        "-DPTERON_WITH_CUDA=ON -DPTERON_BUILD_TOOLS=ON", pytrace=False)
    return d


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory) -> Path:
    """A folder holding the fake libcuda.so.1."""
    d = tmp_path_factory.mktemp("fake_cuda")
    r = run(["c++", "-std=c++17", "-shared", "-fPIC", "-O1", "-o", d / "libcuda.so.1",
             CUDA / "fake_cuda.cpp"], timeout=300)
    assert r.returncode == 0, r.stderr
    return d


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in SCRUB and not k.startswith("PTERON_FAKE")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_program(build: Path, name: str, *, cwd=None, pte=None, **env):
    e = ENTRIES[name]
    pte = pte or CUDA / e["file"]
    inputs = [CUDA / f for f in e["methods"]["forward"]["inputs"]]
    args = [build / "pteron-run", pte]
    for i in inputs:
        args += ["--input", i]
    return run(args, timeout=120, env=_env(**env), cwd=cwd)


def assert_refused(r, code, *phrases):
    assert r.returncode != 0, r.stdout + r.stderr
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    assert f"[{code}]" in r.stderr, r.stderr
    for p in phrases:
        assert p in r.stderr, (p, r.stderr)


# ---- what the partitioner made -----------------------------------------------

@pytest.mark.parametrize("name,partitions,cpu_ops", [
    ("mlp_cuda", 1, []),
    ("block_cuda", 2, ["aten::cumsum.out"]),
    ("tiles_cuda", 1, []),
    ("cnn_cuda", 1, []),
    ("attention_cuda", 1, []),
])
def test_partitions_and_what_stays_on_the_cpu(name, partitions, cpu_ops):
    e = ENTRIES[name]
    assert e["delegates"] == ["PteronCudaBackend"], e
    assert e["operators"] == cpu_ops, e
    pte = (CUDA / e["file"]).read_bytes()
    # one blob per delegate call, each carrying the schema's file identifier
    assert pte.count(b"PTCU") == partitions


def test_partitioner_in_the_exporter_remakes_the_committed_programs(tmp_path):
    """pteron.lowering.cuda runs in upstream's exporter environment with no
    nvcc, no GPU and no native extension, and is deterministic: exporting
    again gives the committed programs byte for byte."""
    py = os.environ.get("PTERON_EXPORT_PYTHON")
    if not py:
        pytest.fail("PTERON_EXPORT_PYTHON is not set: run scripts/test.sh (it installs upstream's "
                    "exporter into .venv-export)", pytrace=False)
    r = run([py, CUDA / "export.py", "--out", tmp_path], timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    for e in MANIFEST["fixtures"]:
        assert (tmp_path / e["file"]).read_bytes() == (CUDA / e["file"]).read_bytes(), (
            f"{e['file']} differs from a fresh export: run tests/cuda/export.py and commit")


def test_test_package_runs_the_committed_cuda_mlp_with_its_eager_values():
    """test_package/mlp_cuda.pte is tests/cuda/mlp_cuda.pte, and the input and
    expected output compiled into test_package.cpp are its .npy files."""
    import re

    assert (REPO / "test_package" / "mlp_cuda.pte").read_bytes() == (CUDA / "mlp_cuda.pte").read_bytes()
    src = (REPO / "test_package" / "test_package.cpp").read_text()
    for name, npy in (("kCudaInput", "mlp_cuda.forward.input_0.npy"),
                      ("kCudaExpected", "mlp_cuda.forward.expected_0.npy")):
        body = re.search(name + r"\[\d+\] = \{(.*?)\};", src, re.S).group(1)
        values = np.array([float(v.strip().rstrip("f")) for v in body.split(",")], np.float32)
        np.testing.assert_array_equal(values, np.load(CUDA / npy).ravel(), err_msg=name)


ZOO_CPU_OPERATORS = {
    # squeezenet1_1: everything on the delegate
    "cnn_squeezenet": [],
    # vit_tiny4: the attention mask's bookkeeping (bool and where) stays on the CPU
    "vit_tiny4": ["aten::any.out", "aten::eq.Scalar_out", "aten::full_like.out",
                  "aten::logical_not.out", "aten::mul.Scalar_out", "aten::where.self_out"],
}


def test_zoo_cnn_and_vit_lower_to_partitions_and_their_kernels_match_eager(cuda_build, tmp_path):
    """The zoo's CNN (squeezenet1_1) and transformer (vit_tiny4), lowered with
    CudaPartitioner (scripts/gpu_programs.py, the GPU check's programs): the
    supported operators go to PteronCudaBackend, the others stay outside, and
    the lowered programs match eager on the CPU reference of the kernels."""
    py = os.environ.get("PTERON_EXPORT_PYTHON")
    if not py:
        pytest.fail("PTERON_EXPORT_PYTHON is not set: run scripts/test.sh", pytrace=False)
    r = run([py, REPO / "scripts" / "gpu_programs.py", tmp_path, "--only", *ZOO_CPU_OPERATORS],
            timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    entries = {e["name"]: e for e in json.loads((tmp_path / "manifest.json").read_text())["fixtures"]}
    for name, cpu_ops in ZOO_CPU_OPERATORS.items():
        e = entries[name]
        assert e["delegates"] == ["PteronCudaBackend"] and e["operators"] == cpu_ops, e
        m = e["methods"]["forward"]
        out = tmp_path / f"{name}.out"
        args = [cuda_build / "pteron-test-cuda-reference", tmp_path / e["file"], "--output-dir", out]
        for i in m["inputs"]:
            args += ["--input", tmp_path / i]
        rr = run(args, timeout=600, env=_env())
        assert rr.returncode == 0, rr.stderr[-3000:]
        for k, exp in enumerate(m["expected"]):
            np.testing.assert_allclose(np.load(out / f"output_{k}.npy"), np.load(tmp_path / exp),
                                       rtol=e["rtol"], atol=e["atol"], err_msg=name)


def test_backend_cuda_imports_nothing_from_cuda(cuda_build):
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    with open(cuda_build / "libpteron_backend_cuda.so", "rb") as f:
        elf = ELFFile(f)
        needed = [t.needed for s in elf.iter_sections() if isinstance(s, DynamicSection)
                  for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    assert needed and "libpteron.so.0.1" in needed, needed
    bad = [n for n in needed if any(k in n for k in ("cuda", "cublas", "nvrtc", "nvcuda"))]
    assert not bad, needed


# ---- the driver, at method load ------------------------------------------------

def test_no_driver_is_a_clear_error(cuda_build):
    if _real_driver_present():
        pytest.skip("this machine has an NVIDIA driver (libcuda.so.1 in ld.so.cache)")
    r = run_program(cuda_build, "mlp_cuda")
    assert_refused(r, "missing_delegate", "PteronCudaBackend", "no CUDA driver", "libcuda.so.1",
                   "CUDA 13.0", "CudaPartitioner")


@pytest.mark.parametrize("env,phrases", [
    ({"PTERON_FAKE_CUINIT": 34}, ["stub", "cuInit returned CUDA_ERROR_STUB_LIBRARY, 34",
                                  "Install the NVIDIA driver"]),
    ({"PTERON_FAKE_PROC_RESULT": 34}, ["stub", "cuGetProcAddress_v2 returned"]),
    ({"PTERON_FAKE_CUINIT": 100}, ["no CUDA device", "CUDA_ERROR_NO_DEVICE, 100"]),
    ({"CUDA_VISIBLE_DEVICES": ""}, ["no CUDA device", 'CUDA_VISIBLE_DEVICES is set to ""',
                                    "hides every device"]),
    ({"CUDA_VISIBLE_DEVICES": "-1"}, ["no CUDA device", 'CUDA_VISIBLE_DEVICES is set to "-1"',
                                      "hides every device"]),
    ({"PTERON_FAKE_DEVICES": 0}, ["no CUDA device", "cuDeviceGetCount: 0"]),
    ({"PTERON_FAKE_DRIVER_VERSION": 12080}, ["supports CUDA 12.8", "needs CUDA 13.0 or newer",
                                             "update the driver"]),
], ids=["stub", "stub_proc", "no_device", "visible_empty", "visible_minus1", "zero_devices",
        "old_driver"])
def test_driver_errors_name_the_cause(cuda_build, fake_driver, env, phrases):
    r = run_program(cuda_build, "mlp_cuda", LD_LIBRARY_PATH=fake_driver, PTERON_FAKE_TAG="path",
                    **env)
    assert "pteron-fake-cuda loaded: path" in r.stderr, r.stderr  # the fake was the one asked
    assert_refused(r, "missing_delegate", "PteronCudaBackend", *phrases)


def test_other_cuinit_failure_is_delegate_failed(cuda_build, fake_driver):
    r = run_program(cuda_build, "mlp_cuda", LD_LIBRARY_PATH=fake_driver, PTERON_FAKE_CUINIT=999)
    assert_refused(r, "delegate_failed", "cuInit failed", "CUDA_ERROR_UNKNOWN (999)")


def _has_device_code(build: Path) -> bool:
    from elftools.elf.elffile import ELFFile

    with open(build / "libpteron_backend_cuda.so", "rb") as f:
        return ELFFile(f).get_section_by_name(".nv_fatbin") is not None


def _outputs_match(name, out_dir):
    e = ENTRIES[name]
    for k, exp in enumerate(e["methods"]["forward"]["expected"]):
        np.testing.assert_allclose(np.load(out_dir / f"output_{k}.npy"), np.load(CUDA / exp),
                                   rtol=e["rtol"], atol=e["atol"], err_msg=f"{name} output {k}")


PROGRAMS = ["mlp_cuda", "block_cuda", "tiles_cuda", "cnn_cuda", "attention_cuda"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_programs_run_through_the_delegate_on_the_fake_device(cuda_build, fake_driver, tmp_path,
                                                               name):
    """The delegate's whole host path (module from the embedded fatbin, device
    memory, copies, launches with their parameters) on a driver whose device
    is the CPU: the outputs must be eager's."""
    if not _has_device_code(cuda_build):
        r = run_program(cuda_build, name, LD_LIBRARY_PATH=fake_driver)
        assert_refused(r, "not_supported", "no device code", "CUDA train")
        pytest.skip("this build of backend_cuda has no device code (no CUDA train)")
    e = ENTRIES[name]
    args = [cuda_build / "pteron-run", CUDA / e["file"], "--output-dir", tmp_path,
            "--iterations", "2"]
    for i in e["methods"]["forward"]["inputs"]:
        args += ["--input", CUDA / i]
    r = run(args, timeout=300, env=_env(LD_LIBRARY_PATH=fake_driver, PTERON_FAKE_LOG=1))
    assert r.returncode == 0, r.stderr
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    launches = [l for l in r.stderr.splitlines() if l.startswith("pteron-fake-cuda launch")]
    assert any("pteron_gemm_f32" in l and "block=(16,16,1)" in l for l in launches), launches
    _outputs_match(name, tmp_path)


@pytest.mark.parametrize("env,phrases", [
    ({"PTERON_FAKE_MODULE_RESULT": 209, "PTERON_FAKE_SM": 70},
     ["no SASS for pteron fake GPU (sm_70", "train cu134", "CUDA 13.4", "sm_75", "sm_121",
      "compute_121", "CUDA_ERROR_NO_BINARY_FOR_GPU"]),
    ({"PTERON_FAKE_MODULE_RESULT": 222, "PTERON_FAKE_SM": 130, "PTERON_FAKE_DRIVER_VERSION": 13000},
     ["no SASS for pteron fake GPU (sm_130", "PTX ISA 9.4", "driver CUDA 13.0",
      "needs a driver of CUDA 13.4 or newer", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"]),
], ids=["no_sass_no_jit", "ptx_too_new"])
def test_device_code_errors_name_the_gpu_the_train_and_the_driver(cuda_build, fake_driver, env,
                                                                  phrases):
    if not _has_device_code(cuda_build):
        pytest.skip("this build of backend_cuda has no device code (no CUDA train)")
    r = run_program(cuda_build, "mlp_cuda", LD_LIBRARY_PATH=fake_driver, **env)
    assert_refused(r, "not_supported", "PteronCudaBackend", *phrases)


def test_planted_driver_beside_the_model_or_in_the_working_folder_is_never_loaded(
        cuda_build, fake_driver, tmp_path):
    if _real_driver_present():
        pytest.skip("this machine has an NVIDIA driver (libcuda.so.1 in ld.so.cache)")
    models, work = tmp_path / "models", tmp_path / "work"
    models.mkdir(), work.mkdir()
    pte = models / "mlp_cuda.pte"
    shutil.copy(CUDA / "mlp_cuda.pte", pte)
    for d in (models, work):
        shutil.copy(fake_driver / "libcuda.so.1", d / "libcuda.so.1")
    r = run_program(cuda_build, "mlp_cuda", pte=pte, cwd=work, PTERON_FAKE_TAG="planted")
    assert "pteron-fake-cuda loaded" not in r.stderr, r.stderr
    assert_refused(r, "missing_delegate", "no CUDA driver")


def test_cpu_programs_run_with_backend_cuda_loaded_and_no_driver(cuda_build, tmp_path):
    fixtures = REPO / "models" / "fixtures"
    entry = next(e for e in json.loads((fixtures / "manifest.json").read_text())["fixtures"]
                 if not e["delegates"] and len(e["methods"]) == 1 and "forward" in e["methods"])
    m = entry["methods"]["forward"]
    args = [cuda_build / "pteron-run", fixtures / entry["file"], "--output-dir", tmp_path]
    for i in m["inputs"]:
        args += ["--input", fixtures / i]
    r = run(args, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    for k, exp in enumerate(m["expected"]):
        out = np.load(tmp_path / f"output_{k}.npy")
        np.testing.assert_allclose(out, np.load(fixtures / exp), rtol=1e-4, atol=1e-5)
    backends = run([cuda_build / "pteron-fuzz", "--backends"], timeout=60, env=_env())
    assert "PteronCudaBackend" in backends.stdout, backends.stdout


def test_upstream_cuda_backend_program_is_refused_naming_pteron_partitioner(cuda_build):
    r = run_program(cuda_build, "upstream_cuda_backend")
    assert_refused(r, "missing_delegate", "CudaBackend is upstream's CUDA delegate",
                   "AOTInductor", "pteron.lowering.cuda.CudaPartitioner", "PteronCudaBackend")


# ---- a malformed blob fails at method load, before the driver is touched ------

def test_plan_refuses_hostile_kernel_parameters(cuda_build):
    """pteron-test-cuda-plan (backends/cuda/test/plan_check.cpp, under ASan+UBSan in CI):
    graphs the blob reader accepts but whose parameters would read outside an input or
    overflow the index arithmetic (huge strides, dilations, windows) fail at load with
    invalid_program naming the node; valid ones of each kernel plan."""
    exe = cuda_build / "pteron-test-cuda-plan"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: PTERON_CUDA_BUILD_DIR needs -DPTERON_BUILD_TESTS=ON",
                    pytrace=False)
    r = run([exe], timeout=120, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith(("ok", "FAIL"))]
    assert len(lines) >= 20 and all(l.startswith("ok") for l in lines), r.stdout
    assert f"{len(lines)} plan checks passed" in r.stdout, r.stdout


def _blob_variants(pte: bytes):
    at = pte.index(b"PTCU")  # bytes 4-8 of the first blob
    start = at - 4
    ident = bytearray(pte)
    ident[at + 3:at + 4] = b"X"
    root = bytearray(pte)
    root[start:start + 4] = (0x7FFFFF00).to_bytes(4, "little")
    return {"identifier": (bytes(ident), "without the identifier"),
            "root_offset": (bytes(root), "fail the flatbuffers verifier")}


@pytest.mark.parametrize("variant", ["identifier", "root_offset"])
def test_malformed_blob_fails_at_load(cuda_build, fake_driver, tmp_path, variant):
    data, phrase = _blob_variants((CUDA / "mlp_cuda.pte").read_bytes())[variant]
    pte = tmp_path / "bad.pte"
    pte.write_bytes(data)
    # with a working fake driver: the blob is refused before the driver matters
    r = run_program(cuda_build, "mlp_cuda", pte=pte, LD_LIBRARY_PATH=fake_driver)
    assert_refused(r, "invalid_program", "PteronCudaBackend blob:", phrase)


def test_byte_flips_of_cuda_programs_never_crash(cuda_build):
    # the malformed-input tests' sanitizer settings (a corrupt planned size is
    # an out-of-memory status, not an ASan abort)
    from test_malformed import ASAN_OPTIONS, SANITIZER_MARKERS, UBSAN_OPTIONS

    e = ENTRIES["block_cuda"]
    args = [cuda_build / "pteron-fuzz", CUDA / e["file"], "--method", "forward"]
    for i in e["methods"]["forward"]["inputs"]:
        args += ["--input", CUDA / i]
    r = run(args + ["--flips", "300", "--seed", "7", "--timeout-s", "20"], timeout=600,
            env=_env(ASAN_OPTIONS=ASAN_OPTIONS, UBSAN_OPTIONS=UBSAN_OPTIONS))
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert not any(m in r.stderr for m in SANITIZER_MARKERS), r.stderr[-3000:]


# ---- the kernels' logic, on the CPU --------------------------------------------

@pytest.mark.parametrize("name", PROGRAMS)
def test_kernel_bodies_on_the_cpu_match_eager(cuda_build, tmp_path, name):
    """pteron-test-cuda-reference runs each launch's kernel body (kernels.h)
    over the launch's index space on the CPU, through the same blob reader
    and plan as the delegate: the lowered program must give eager's outputs."""
    ref = cuda_build / "pteron-test-cuda-reference"
    if not ref.exists():
        pytest.fail(f"{ref} is missing: PTERON_CUDA_BUILD_DIR needs -DPTERON_BUILD_TESTS=ON",
                    pytrace=False)
    e = ENTRIES[name]
    m = e["methods"]["forward"]
    args = [ref, CUDA / e["file"], "--output-dir", tmp_path]
    for i in m["inputs"]:
        args += ["--input", CUDA / i]
    r = run(args, timeout=300, env=_env())
    assert r.returncode == 0, r.stderr
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    _outputs_match(name, tmp_path)


# ---- extension_cuda: the device, the stream, the driver's state ------------------

@pytest.fixture(scope="module")
def extension_consumer(tmp_path_factory):
    """tests/native/cuda_extension.cpp built against the linux-cu134 package."""
    pkg = _cuda_package()
    d = tmp_path_factory.mktemp("cuda_extension")
    exe = d / "cuda_extension"
    r = run(["c++", "-std=c++17", "-O1", "-Wall", "-I", pkg / "include",
             REPO / "tests" / "native" / "cuda_extension.cpp", "-o", exe, "-L", pkg / "lib",
             "-Wl,--no-as-needed", "-lpteron_backend_cuda", "-lpteron_extension_cuda",
             "-lpteron_kernels_portable", "-lpteron", f"-Wl,-rpath,{pkg / 'lib'}"], timeout=300)
    assert r.returncode == 0, r.stderr
    x = d / "x.f32"
    x.write_bytes(np.load(CUDA / "mlp_cuda.forward.input_0.npy").astype(np.float32).tobytes())
    return exe, x


def _extension(consumer, *args, **env):
    exe, x = consumer
    return run([exe, CUDA / "mlp_cuda.pte", x, *args], timeout=120, env=_env(**env))


def test_extension_reports_the_train_and_why_there_is_no_driver(extension_consumer):
    if _real_driver_present():
        pytest.skip("this machine has an NVIDIA driver (libcuda.so.1 in ld.so.cache)")
    r = _extension(extension_consumer)
    assert r.returncode == 0, r.stderr
    assert "status train=cu134 code=5 devices=0 version=0 message=no CUDA driver" in r.stdout, r.stdout
    assert "truncated=7" in r.stdout, r.stdout  # the message cut to the 8-byte buffer
    assert "load error [missing_delegate]" in r.stdout, r.stdout


def test_extension_runs_on_the_device_and_stream_it_is_given(extension_consumer, fake_driver):
    r = _extension(extension_consumer, "--device", "1", "--stream", "5eed", LD_LIBRARY_PATH=fake_driver,
                   PTERON_FAKE_DEVICES=2, PTERON_FAKE_LOG=1)
    assert r.returncode == 0, r.stderr
    assert "status train=cu134 code=0 devices=2 version=13000 message=\n" in r.stdout, r.stdout
    assert "set_device rc=0 device=1" in r.stdout and "load ok" in r.stdout, r.stdout
    assert "pteron-fake-cuda retain device 1" in r.stderr, r.stderr
    launches = [l for l in r.stderr.splitlines() if "pteron-fake-cuda launch" in l]
    assert launches and all(l.endswith("stream=0x5eed") for l in launches), launches
    out = np.array([float(v) for v in r.stdout.split("output", 1)[1].split()], np.float32)
    np.testing.assert_allclose(out, np.load(CUDA / "mlp_cuda.forward.expected_0.npy").ravel(),
                               rtol=1e-5, atol=1e-5)


def test_extension_device_beyond_the_machine_fails_at_load(extension_consumer, fake_driver):
    r = _extension(extension_consumer, "--device", "5", LD_LIBRARY_PATH=fake_driver,
                   PTERON_FAKE_DEVICES=2)
    assert "set_device rc=0" in r.stdout, r.stdout
    assert "load error [invalid_argument]" in r.stdout and "no CUDA device 5 (this machine has 2" in r.stdout, r.stdout
    r = _extension(extension_consumer, "--device", "-1", LD_LIBRARY_PATH=fake_driver)
    assert "set_device rc=1 device=0" in r.stdout, r.stdout  # refused, the setting kept


# ---- pteron-verify on device code ----------------------------------------------

def _cuda_package() -> Path:
    p = os.environ.get("PTERON_LINUX_PACKAGE")
    if not p:
        pytest.fail("PTERON_LINUX_PACKAGE is not set: run scripts/test.sh (it makes the linux-cu134 "
                    "package with Conan)", pytrace=False)
    p = Path(p)
    if not list((p / "lib").glob("libpteron_backend_cuda.so*")):
        pytest.fail(f"{p} has no backend_cuda: scripts/test.sh makes the Linux package with the "
                    "linux-cu134 profile", pytrace=False)
    return p


def _nvcc_fatbin(tmp_path, sass, ptx):
    nvcc = os.environ.get("PTERON_CUDA_NVCC")
    if not nvcc:
        pytest.fail("PTERON_CUDA_NVCC is not set: run scripts/test.sh (it installs the cu134 train)",
                    pytrace=False)
    out = tmp_path / "kernels.fatbin"
    gencode = []
    for a in sass:
        gencode += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    gencode += ["-gencode", f"arch=compute_{ptx},code=compute_{ptx}"]
    r = run([nvcc, "-fatbin", "-std=c++17", "-O3", "--compress-mode=size", *gencode, "-o", out,
             REPO / "backends" / "cuda" / "src" / "kernels.cu"], timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def _package_with_fatbin(tmp_path, fatbin):
    """A copy of the linux-cu134 package whose backend_cuda carries `fatbin` instead."""
    pkg = tmp_path / "pkg"
    shutil.copytree(_cuda_package(), pkg, symlinks=True)
    lib = next(p for p in (pkg / "lib").glob("libpteron_backend_cuda.so*") if not p.is_symlink())
    r = run(["objcopy", "--update-section", f".nv_fatbin={fatbin}", lib], timeout=120)
    assert r.returncode == 0, r.stderr
    return pkg


def _verify(pkg, wine_env=None):
    """pteron-verify --json on pkg, with the train's cuobjdump (ELF) and, given a Wine
    environment, its Windows cuobjdump.exe (PE) for the cross-check."""
    env = _env(PYTHONPATH=REPO / "python", **{k: wine_env[k] for k in ("WINEPREFIX", "WINEDEBUG")
                                                if wine_env and k in wine_env})
    tools = []
    if os.environ.get("PTERON_CUDA_CUOBJDUMP"):
        tools += ["--cuobjdump", os.environ["PTERON_CUDA_CUOBJDUMP"]]
    if wine_env is not None:
        exe = os.environ.get("PTERON_CUDA_CUOBJDUMP_EXE")
        if not exe:
            pytest.fail("PTERON_CUDA_CUOBJDUMP_EXE is not set: run scripts/test.sh (it fetches the "
                        "train's Windows cuobjdump.exe)", pytrace=False)
        tools += ["--cuobjdump-exe", exe]
    return run([sys.executable, "-m", "pteron.verify", pkg, "--json", *tools], timeout=600, env=env)


def _cu134():
    return json.loads((REPO / "cmake" / "cuda_trains.json").read_text())["trains"]["cu134"]


def test_verify_passes_the_cuda_package_and_reads_the_trains_archs():
    r = _verify(_cuda_package())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = [x for x in json.loads(r.stdout)["results"]
            if x["check"] == "cuda" and "backend_cuda" in x["binary"]]
    t = _cu134()
    assert rows and rows[0]["result"] == "PASS", rows
    detail = rows[0]["detail"]
    assert "cuobjdump agrees" in detail, detail
    assert "train cu134" in detail and f"ISA {t['ptx_isa']}" in detail, detail
    assert all(f"sm_{a}" in detail for a in t["sass"]) and f"compute_{t['ptx']}" in detail, detail


@pytest.mark.parametrize("change", ["one_fewer", "one_more"])
def test_verify_refuses_a_fatbin_with_an_arch_too_few_or_too_many(tmp_path, change):
    t = _cu134()
    sass = [str(a) for a in t["sass"]]
    if change == "one_fewer":
        gone = sass.pop(len(sass) // 2)
        want = f"no SASS for sm_{gone} of train cu134's list"
    else:
        sass.append("90a")  # an architecture-specific variant the train's list does not have
        want = "SASS sm_90a beyond train cu134's list"
    pkg = _package_with_fatbin(tmp_path, _nvcc_fatbin(tmp_path, sass, t["ptx"]))
    r = _verify(pkg)
    assert r.returncode == 1, r.stdout[-3000:]
    failed = [f for f in json.loads(r.stdout)["failed"] if f["check"] == "cuda"]
    assert failed and want in failed[0]["detail"], failed


# ---- Windows: pteron_backend_cuda.dll under Wine ---------------------------------

def _mingw_package() -> Path:
    p = os.environ.get("PTERON_MINGW_PACKAGE")
    if not p:
        pytest.fail("PTERON_MINGW_PACKAGE is not set: run scripts/test.sh (it makes the "
                    "windows-cu134 package with Conan)", pytrace=False)
    p = Path(p)
    if not (p / "bin" / "pteron_backend_cuda.dll").exists():
        pytest.fail(f"{p} has no pteron_backend_cuda.dll: scripts/test.sh makes the MinGW package "
                    "with the windows-cu134 profile", pytrace=False)
    return p


@pytest.fixture(scope="module")
def fake_nvcuda(tmp_path_factory) -> Path:
    from conftest import MINGW_CXX

    d = tmp_path_factory.mktemp("fake_nvcuda")
    r = run([MINGW_CXX, "-std=c++17", "-shared", "-O1", "-static", "-o", d / "nvcuda.dll",
             CUDA / "fake_cuda.cpp"], timeout=300)
    assert r.returncode == 0, r.stderr
    return d / "nvcuda.dll"


@pytest.fixture
def system32(wine_env):
    """The Wine prefix's system folder, where a real driver installs nvcuda.dll; a
    test that puts a fake there has it removed afterwards."""
    d = Path(wine_env["WINEPREFIX"]) / "drive_c" / "windows" / "system32"
    assert d.is_dir(), d
    yield d
    (d / "nvcuda.dll").unlink(missing_ok=True)


def _wine_program(wine_env, pkg, name, tmp_path, cwd=None, pte=None, **env):
    from conftest import wine_run, winpath

    e = ENTRIES[name]
    args = [winpath(pte or CUDA / e["file"]), "--output-dir", winpath(tmp_path)]
    for i in e["methods"]["forward"]["inputs"]:
        args += ["--input", winpath(CUDA / i)]
    extra = {k: str(v) for k, v in env.items()}
    return wine_run(wine_env, pkg / "bin" / "pteron-run.exe", *args, cwd=cwd or tmp_path,
                    timeout=180, extra_env=extra)


def test_wine_no_driver_is_a_clear_error(wine_env, system32, tmp_path):
    assert not (system32 / "nvcuda.dll").exists()
    r = _wine_program(wine_env, _mingw_package(), "mlp_cuda", tmp_path)
    assert r.returncode != 0, str(r)
    assert "[missing_delegate]" in r.stderr and "no CUDA driver" in r.stderr, str(r)
    assert "LoadLibraryExW(nvcuda.dll, LOAD_LIBRARY_SEARCH_SYSTEM32)" in r.stderr, str(r)


def test_wine_planted_nvcuda_beside_the_program_model_or_working_folder_is_never_loaded(
        wine_env, system32, fake_nvcuda, tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(_mingw_package(), pkg, symlinks=True)
    models, work = tmp_path / "models", tmp_path / "work"
    models.mkdir(), work.mkdir()
    pte = models / "mlp_cuda.pte"
    shutil.copy(CUDA / "mlp_cuda.pte", pte)
    for d in (pkg / "bin", models, work):
        shutil.copy(fake_nvcuda, d / "nvcuda.dll")
    r = _wine_program(wine_env, pkg, "mlp_cuda", tmp_path, cwd=work, pte=pte,
                      PTERON_FAKE_TAG="planted")
    assert "pteron-fake-cuda loaded" not in r.stderr, str(r)
    assert r.returncode != 0 and "no CUDA driver" in r.stderr, str(r)


@pytest.mark.parametrize("env,phrases", [
    ({"PTERON_FAKE_CUINIT": 34}, ["stub", "CUDA_ERROR_STUB_LIBRARY, 34"]),
    ({"CUDA_VISIBLE_DEVICES": "-1"}, ["no CUDA device", 'CUDA_VISIBLE_DEVICES is set to "-1"']),
    ({"PTERON_FAKE_DRIVER_VERSION": 12080}, ["supports CUDA 12.8", "needs CUDA 13.0 or newer"]),
], ids=["stub", "no_device", "old_driver"])
def test_wine_driver_errors_name_the_cause(wine_env, system32, fake_nvcuda, tmp_path, env, phrases):
    shutil.copy(fake_nvcuda, system32 / "nvcuda.dll")
    r = _wine_program(wine_env, _mingw_package(), "mlp_cuda", tmp_path, PTERON_FAKE_TAG="system32",
                      **env)
    assert "pteron-fake-cuda loaded: system32" in r.stderr, str(r)
    assert r.returncode != 0 and "[missing_delegate]" in r.stderr, str(r)
    for p in phrases:
        assert p in r.stderr, (p, str(r))


@pytest.mark.parametrize("name", PROGRAMS)
def test_wine_programs_run_through_the_dll_on_the_fake_device(wine_env, system32, fake_nvcuda,
                                                             tmp_path, name):
    """pteron_backend_cuda.dll's whole host path under Wine: the fatbin from its
    .nv_fatb section, the launches on the fake driver's CPU device; eager's outputs."""
    shutil.copy(fake_nvcuda, system32 / "nvcuda.dll")
    r = _wine_program(wine_env, _mingw_package(), name, tmp_path, PTERON_FAKE_LOG=1)
    assert r.returncode == 0, str(r)
    assert "pteron-fake-cuda launch pteron_gemm_f32" in r.stderr, str(r)
    _outputs_match(name, tmp_path)


def test_wine_cuda_program_runs_from_non_ascii_paths(wine_env, system32, fake_nvcuda, tmp_path):
    """pteron_backend_cuda.dll from a package folder, and a CUDA-lowered program from a model
    folder, whose paths hold non-ASCII characters (the fake nvcuda.dll in system32)."""
    pkg = tmp_path / "pteron Ωmega ü"
    shutil.copytree(_mingw_package(), pkg, symlinks=True)
    models = tmp_path / "modèles 模型"
    models.mkdir()
    pte = models / "mlp_cuda.pte"
    shutil.copy(CUDA / "mlp_cuda.pte", pte)
    shutil.copy(fake_nvcuda, system32 / "nvcuda.dll")
    out = tmp_path / "sortie"
    out.mkdir()
    r = _wine_program(wine_env, pkg, "mlp_cuda", out, pte=pte, PTERON_FAKE_LOG=1)
    assert r.returncode == 0, str(r)
    assert "pteron-fake-cuda launch pteron_gemm_f32" in r.stderr, str(r)
    _outputs_match("mlp_cuda", out)


def test_wine_extension_runs_on_the_device_and_stream_it_is_given(wine_env, system32, fake_nvcuda,
                                                                  tmp_path):
    """extension_cuda's API from a Windows consumer (tests/native/cuda_extension.cpp built with
    MinGW against the windows-cu134 package, its DLLs beside it) under Wine, on the fake
    nvcuda.dll in system32: the device and stream chosen reach the launches."""
    from conftest import MINGW_CXX, wine_run, winpath

    pkg = _mingw_package()
    exe = tmp_path / "cuda_extension.exe"
    r = run([MINGW_CXX, "-std=c++17", "-O1", "-static", "-I", pkg / "include",
             REPO / "tests" / "native" / "cuda_extension.cpp", "-o", exe,
             "-Wl,--undefined=pteron_anchor_backend_cuda",
             "-Wl,--undefined=pteron_anchor_kernels_portable",
             *[pkg / "lib" / f"lib{n}.dll.a" for n in ("pteron_backend_cuda", "pteron_extension_cuda",
                                                       "pteron_kernels_portable", "pteron")]],
            timeout=300)  # -static: the MinGW runtime inside the program; the import libraries as files
    assert r.returncode == 0, r.stderr
    for dll in (pkg / "bin").glob("*.dll"):
        shutil.copy(dll, tmp_path / dll.name)
    x = tmp_path / "x.f32"
    x.write_bytes(np.load(CUDA / "mlp_cuda.forward.input_0.npy").astype(np.float32).tobytes())
    shutil.copy(fake_nvcuda, system32 / "nvcuda.dll")
    r = wine_run(wine_env, exe, winpath(CUDA / "mlp_cuda.pte"), winpath(x), "--device", "1",
                 "--stream", "5eed", cwd=tmp_path, timeout=180,
                 extra_env={"PTERON_FAKE_DEVICES": "2", "PTERON_FAKE_LOG": "1"})
    assert r.returncode == 0, str(r)
    assert "status train=cu134 code=0 devices=2 version=13000" in r.stdout, str(r)
    assert "set_device rc=0 device=1" in r.stdout and "load ok" in r.stdout, str(r)
    assert "pteron-fake-cuda retain device 1" in r.stderr, str(r)
    launches = [l for l in r.stderr.splitlines() if "pteron-fake-cuda launch" in l]
    # %p: "0x5eed" from glibc, "0000000000005EED"-style from MinGW
    assert launches and all(int(l.rsplit("stream=", 1)[1], 16) == 0x5eed for l in launches), launches
    out = np.array([float(v) for v in r.stdout.split("output", 1)[1].split()], np.float32)
    np.testing.assert_allclose(out, np.load(CUDA / "mlp_cuda.forward.expected_0.npy").ravel(),
                               rtol=1e-5, atol=1e-5)


def test_verify_passes_the_windows_cuda_package_reading_its_nv_fatb_section(wine_env):
    r = _verify(_mingw_package(), wine_env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = [x for x in json.loads(r.stdout)["results"]
            if x["check"] == "cuda" and "pteron_backend_cuda.dll" in x["binary"]]
    assert rows and rows[0]["result"] == "PASS" and "train cu134" in rows[0]["detail"], rows
    # the Windows cuobjdump.exe, under Wine, lists the same architectures from the .dll
    assert "cuobjdump.exe (Wine) agrees" in rows[0]["detail"], rows


# ---- the GPU check's script, here on the fake driver ----------------------------

def test_gpu_check_script_runs_the_programs_and_fails_when_they_fail(cuda_build, fake_driver,
                                                                    tmp_path):
    """scripts/gpu_check.py (what scripts/gpu_check.sh run runs on a GPU machine) on
    the fake driver: a MATCH row per CUDA-lowered program in every JIT mode, and a
    failing exit with the module error when the device code cannot load."""
    args = [sys.executable, REPO / "scripts" / "gpu_check.py", "--payload", tmp_path,
            "--pteron-run", cuda_build / "pteron-run", "--fake-driver", fake_driver]
    r = run(args, timeout=600, env=_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for name in PROGRAMS:
        assert f"| {name} | MATCH | MATCH | MATCH |" in r.stdout, r.stdout
    assert "gpu_check: PASS" in r.stdout
    r = run(args, timeout=600, env=_env(PTERON_FAKE_MODULE_RESULT=209, PTERON_FAKE_SM=70))
    assert r.returncode == 1 and "gpu_check: FAIL" in r.stdout, r.stdout[-3000:]
    assert "ERROR" in r.stdout and "no SASS for pteron fake GPU (sm_70" in r.stdout, r.stdout
