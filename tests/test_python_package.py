# SPDX-License-Identifier: BSD-3-Clause
"""One Python distribution, `pteron`, built by the repository root's pyproject.toml
(scikit-build-core): its metadata without a C++ build (the build backend's
prepare_metadata_for_build_wheel), pteron.__version__, each licence once in the wheel, and, where
PTERON_WHEEL names a built wheel (scripts/slow.sh), the wheel's own files."""
import email
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, run
from test_python import ok, py

VERSION = (REPO / "VERSION").read_text().strip()


def pyproject():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def metadata(tmp_path_factory):
    pytest.importorskip("scikit_build_core", reason="scikit-build-core (scripts/setup.sh)")
    out = tmp_path_factory.mktemp("meta")
    r = run([sys.executable, "-c", "import sys, scikit_build_core.build as b; "
             "print(b.prepare_metadata_for_build_wheel(sys.argv[1]))", out],
            timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    info = out / r.stdout.strip().splitlines()[-1]
    return info


def test_one_distribution_claims_the_import_package_pteron():
    files = subprocess.run(["git", "ls-files", "*pyproject.toml", "*setup.py", "*setup.cfg"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    claims = [f for f in files if "conan-center" not in f and "test_package" not in f
              and re.search(r"(^|[\"'\s/=\[])pteron([\"'/\s\]]|$)",
                            (REPO / f).read_text())]
    assert claims == ["pyproject.toml"], claims
    assert not (REPO / "python" / "pyproject.toml").exists()
    assert not (REPO / "python" / "setup.py").exists()


def test_metadata_names_python_3_9_the_version_and_the_console_script(metadata):
    assert metadata.name == f"pteron-{VERSION}.dist-info"
    meta = email.message_from_string((metadata / "METADATA").read_text())
    assert meta["Name"] == "pteron" and meta["Version"] == VERSION
    assert meta["Requires-Python"] == ">=3.9"  # numpy 2, which the extension is built with
    requires = meta.get_all("Requires-Dist")
    assert "numpy" in requires
    assert 'ml_dtypes; extra == "bfloat16"' in requires
    assert {'pefile; extra == "verify"', 'pyelftools; extra == "verify"'} <= set(requires)
    assert "pteron-verify = pteron.verify:main" in (metadata / "entry_points.txt").read_text()
    assert sorted(p.name for p in (metadata / "licenses").iterdir()) == \
        ["LICENSE", "THIRD_PARTY_NOTICES.md"]


def test_dunder_version_is_VERSION_and_loads_nothing_native(stage):
    out = ok(py(stage, """
        import sys, pteron
        print(pteron.__version__, "pteron._pteron" in sys.modules, "__version__" in dir(pteron))
        print(pteron.version())
    """))
    assert out.split() == [VERSION, "False", "True", VERSION]


def test_each_licence_once_in_the_wheel(linux_package):
    """The CMake install puts LICENSE and THIRD_PARTY_NOTICES.md in share/licenses/pteron with
    the third-party texts; the wheel has the first two in its dist-info (wheel.license-files),
    so wheel.exclude drops exactly those two from pteron/share/licenses/pteron."""
    import pathspec

    tool = pyproject()["tool"]["scikit-build"]
    spec = pathspec.GitIgnoreSpec.from_lines(tool["wheel.exclude"] if "wheel.exclude" in tool
                                             else tool["wheel"]["exclude"])
    license_files = tool["wheel.license-files"] if "wheel.license-files" in tool \
        else tool["wheel"]["license-files"]
    installed = sorted(p.name for p in (linux_package / "licenses").iterdir()) \
        if (linux_package / "licenses").is_dir() else []
    share = linux_package / "share" / "licenses" / "pteron"
    if share.is_dir():
        installed = sorted(p.name for p in share.iterdir())
    assert set(license_files) <= set(installed), installed
    for name in installed:
        excluded = spec.match_file(f"pteron/share/licenses/pteron/{name}")
        assert excluded == (name in license_files), name
    assert not spec.match_file("pteron/lib/libpteron.so.0.1")


def test_pteron_verify_finds_pterons_licence_in_the_dist_info_beside_the_package(
        linux_package, tmp_path):
    """A wheel's package folder holds the third-party texts; pteron's own LICENSE is in
    pteron-<version>.dist-info/licenses beside it."""
    pkg = tmp_path / "site" / "pteron"
    shutil.copytree(linux_package, pkg, symlinks=True)
    for d in (pkg / "licenses", pkg / "share" / "licenses" / "pteron"):
        for f in ("LICENSE", "THIRD_PARTY_NOTICES.md"):
            if (d / f).exists():
                (d / f).unlink()
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    r = run([sys.executable, "-m", "pteron.verify", pkg], timeout=300, env=env)
    assert r.returncode == 1 and "missing in" in r.stdout + r.stderr and "LICENSE" in r.stdout
    lic = tmp_path / "site" / f"pteron-{VERSION}.dist-info" / "licenses"
    lic.mkdir(parents=True)
    shutil.copy2(REPO / "LICENSE", lic / "LICENSE")
    r = run([sys.executable, "-m", "pteron.verify", pkg], timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


WHEEL = os.environ.get("PTERON_WHEEL")


@pytest.mark.skipif(not WHEEL, reason="PTERON_WHEEL is not set (scripts/slow.sh builds the wheel)")
def test_the_wheel_holds_each_licence_once_and_the_typing_files():
    z = zipfile.ZipFile(WHEEL)
    names = z.namelist()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    licences = [n for n in names if "/licenses/" in n]
    contents = {}
    for n in licences:
        contents.setdefault(z.read(n), []).append(n)
    assert not [v for v in contents.values() if len(v) > 1], contents.values()
    assert f"{info}/licenses/LICENSE" in names
    assert "pteron/py.typed" in names and "pteron/_pteron.pyi" in names
    assert "pteron/_version.py" in names
    meta = email.message_from_bytes(z.read(f"{info}/METADATA"))
    assert meta["Requires-Python"] == ">=3.9"


@pytest.mark.skipif(not WHEEL, reason="PTERON_WHEEL is not set (scripts/slow.sh builds the wheel)")
def test_the_wheel_in_a_fresh_venv_passes_pip_check_and_mypy(tmp_path):
    """pip install of the wheel into a fresh venv (with mypy, from the configured index), then
    pip check, mypy on a user's script against the installed package, and a fixture."""
    from test_python_typing import USER_SCRIPT

    venv = tmp_path / "venv"
    r = run([sys.executable, "-m", "venv", venv], timeout=300)
    assert r.returncode == 0, r.stderr
    vpy = venv / "bin" / "python"
    r = run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", WHEEL, "mypy"],
            timeout=900)
    if r.returncode != 0:
        pytest.skip(f"pip could not install the wheel's dependencies here: {r.stderr[-500:]}")
    r = run([vpy, "-m", "pip", "check"], timeout=300)
    assert r.returncode == 0 and "No broken requirements found" in r.stdout, r.stdout + r.stderr
    (tmp_path / "user.py").write_text(USER_SCRIPT)
    r = run([vpy, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, "user.py"],
            timeout=300, cwd=tmp_path)
    assert r.returncode == 0 and "Success: no issues found" in r.stdout, r.stdout + r.stderr
    fx = REPO / "models" / "fixtures"
    r = run([vpy, "-c", "import sys, numpy as np, pteron; "
             f"m = pteron.Program.load(r'{fx}/mlp.pte').load_method(num_threads=1); "
             f"y = m(np.load(r'{fx}/mlp.forward.input_0.npy'))[0]; "
             f"print(pteron.__version__, np.allclose(y, np.load(r'{fx}/mlp.forward.expected_0.npy'), "
             "rtol=1e-4, atol=1e-5))"], timeout=300, cwd=tmp_path)
    assert r.stdout.split() == [VERSION, "True"], r.stdout + r.stderr
