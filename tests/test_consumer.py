"""Consumer scenarios on Linux (ELF): an application built against the
installed package through its plain CMake config, with the platform's default
linker flags (Debian's gcc links with --as-needed)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, build_dir

CNN = [str(FIXTURES / "cnn.pte"), "forward", str(FIXTURES / "cnn.forward.input_0.npy"), "--",
       str(FIXTURES / "cnn.forward.expected_0.npy")]


def _run(cmd, timeout=300, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="session")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("install") / "pteron"
    r = _run(["cmake", "--install", str(build_dir()), "--prefix", str(p)])
    assert r.returncode == 0, r.stderr
    return p


def available_components(prefix):
    text = (prefix / "lib" / "cmake" / "pteron" / "pteron-components.cmake").read_text()
    line = next(l for l in text.splitlines() if l.startswith("set(PTERON_PACKAGE_COMPONENTS"))
    return line.split(" ", 1)[1].rstrip(")").split(";")


def build_consumer(prefix, work, components, keep_anchors=True, cxx_flags="", linker_flags=""):
    src = REPO / "tests" / "consumer"
    bdir = work / "b"
    r = _run(["cmake", "-S", str(src), "-B", str(bdir), "-G", "Ninja",
              "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}",
              f"-DPTERON_SOURCE_DIR={REPO}", f"-DCOMPONENTS={';'.join(components)}",
              f"-DKEEP_ANCHORS={'ON' if keep_anchors else 'OFF'}",
              f"-DCMAKE_CXX_FLAGS={cxx_flags}", f"-DCMAKE_EXE_LINKER_FLAGS={linker_flags}"])
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run(["cmake", "--build", str(bdir)])
    assert r.returncode == 0, r.stdout + r.stderr
    return bdir / "consumer"


def needed(binary):
    r = _run(["readelf", "-d", str(binary)])
    return [l.split("[")[1].rstrip("]") for l in r.stdout.splitlines() if "(NEEDED)" in l]


def clean_env():
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    return env


def kernel_lines(stdout):
    return [l.split() for l in stdout.splitlines() if l.startswith("kernel ")]


def kernel_components(prefix):
    return [c for c in available_components(prefix) if c.startswith("kernels_")] + \
        [c for c in available_components(prefix) if c == "threadpool"]


def test_default_linking_keeps_every_component_and_runs(prefix, tmp_path):
    comps = kernel_components(prefix)
    exe = build_consumer(prefix, tmp_path, comps)
    libs = needed(exe)
    for c in ["runtime"] + comps:
        name = "libpteron.so" if c == "runtime" else f"libpteron_{c}.so"
        assert any(l.startswith(name) for l in libs), (c, libs)
    r = _run([str(exe), *CNN], env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "consumer: outputs match" in r.stdout


def test_negative_control_without_retention_loses_kernels_and_fails_cleanly(prefix, tmp_path):
    exe = build_consumer(prefix, tmp_path, ["kernels_portable"], keep_anchors=False)
    libs = needed(exe)
    assert not any(l.startswith("libpteron_kernels_portable.so") for l in libs), libs
    r = _run([str(exe), *CNN], env=clean_env())
    assert r.returncode == 3, r.stdout + r.stderr
    assert "registered operators: 0" in r.stdout
    assert "missing_operator" in r.stderr and "aten::convolution.out" in r.stderr


def test_registry_is_the_union_of_the_linked_kernel_libraries(prefix, tmp_path):
    exe = build_consumer(prefix, tmp_path, ["kernels_portable"])
    r = _run([str(exe), *CNN], env=clean_env())
    assert r.returncode == 0, r.stderr
    libs = {k[2] for k in kernel_lines(r.stdout)}
    assert libs == {"kernels_portable"}


@pytest.mark.parametrize("order", ["portable_first", "optimized_first"])
def test_optimized_wins_in_both_link_orders(prefix, tmp_path, order):
    if "kernels_optimized" not in available_components(prefix):
        pytest.fail("the package has no kernels_optimized component")
    comps = ["kernels_portable", "kernels_optimized"]
    if order == "optimized_first":
        comps.reverse()
    exe = build_consumer(prefix, tmp_path, comps)
    r = _run([str(exe), *CNN], env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    lines = kernel_lines(r.stdout)
    assert {k[2] for k in lines} == {"kernels_portable", "kernels_optimized"}
    conv = [k for k in lines if k[1] == "aten::convolution.out"]
    winners = [k for k in conv if k[4] == "selected" and k[3] in ("-", "dtype=6")]
    assert any(k[2] == "kernels_optimized" for k in winners), conv


def test_relocated_copy_of_the_install_tree_works(prefix, tmp_path):
    moved = tmp_path / "elsewhere" / "pteron"
    shutil.copytree(prefix, moved, symlinks=True)
    exe = build_consumer(moved, tmp_path, ["kernels_portable"])
    r = _run(["readelf", "-d", str(exe)])
    assert str(prefix) not in r.stdout
    r = _run([str(exe), *CNN], env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr


def test_installed_binaries_record_no_absolute_paths(prefix):
    for f in list((prefix / "lib").glob("libpteron*.so.*.*.*")) + [prefix / "bin" / "pteron-run"]:
        r = _run(["readelf", "-d", str(f)])
        for line in r.stdout.splitlines():
            if "RUNPATH" in line or "RPATH" in line:
                assert "$ORIGIN" in line and "/" not in line.split("[")[1].replace("$ORIGIN/../lib", "").replace("$ORIGIN", ""), line


def test_missing_component_stops_configuration_naming_it(prefix, tmp_path):
    r = _run(["cmake", "-S", str(REPO / "tests" / "consumer"), "-B", str(tmp_path / "b"), "-G", "Ninja",
              f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPTERON_SOURCE_DIR={REPO}",
              "-DCOMPONENTS=kernels_portable;backend_nonexistent"])
    assert r.returncode != 0
    assert "backend_nonexistent" in r.stdout + r.stderr


def test_debug_stl_consumer_under_asan_uses_the_release_package(prefix, tmp_path):
    comps = kernel_components(prefix)
    flags = "-D_GLIBCXX_DEBUG -D_GLIBCXX_ASSERTIONS -fsanitize=address,undefined -fno-omit-frame-pointer -g"
    exe = build_consumer(prefix, tmp_path, comps, cxx_flags=flags, linker_flags="-fsanitize=address,undefined")
    env = clean_env()
    env["ASAN_OPTIONS"] = "detect_leaks=1"
    for fixture, method, n_out in [("transformer", "forward", 3), ("multi_out", "forward", 4)]:
        ins = sorted(str(p) for p in FIXTURES.glob(f"{fixture}.{method}.input_*.npy"))
        exp = [str(FIXTURES / f"{fixture}.{method}.expected_{i}.npy") for i in range(n_out)]
        r = _run([str(exe), str(FIXTURES / f"{fixture}.pte"), method, *ins, "--", *exp], env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "consumer: outputs match" in r.stdout
        assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr
