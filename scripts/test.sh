#!/usr/bin/env bash
# scripts/test.sh - the full test suite. Installs what it needs, builds the
# Release tree (build/), the ASan+UBSan tree (build-asan/) and the MinGW-w64
# tree (build-mingw/, Windows DLLs run under Wine), runs pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO"
pteron_install_apt "${_pteron_apt_packages[@]}"
pteron_install_venv

start=$(date +%s)
echo "==> building build/ (Release)"
pteron_build "$REPO/build" -DCMAKE_BUILD_TYPE=Release
echo "==> building build-asan/ (ASan+UBSan)"
pteron_build "$REPO/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPTERON_SANITIZE=address,undefined -DPTERON_BUILD_TESTS=ON -DPTERON_BUILD_TOOLS=OFF \
  -DPTERON_WITH_OPTIMIZED=OFF -DPTERON_WITH_THREADPOOL=OFF
echo "==> building build-mingw/ (Windows DLLs, MinGW-w64 cross build; tests run them under Wine)"
pteron_build "$REPO/build-mingw" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$REPO/cmake/toolchain-mingw-w64.cmake"
echo "==> builds took $(( $(date +%s) - start )) s"

export PTERON_BUILD_DIR="$REPO/build" PTERON_ASAN_BUILD_DIR="$REPO/build-asan"
export PTERON_MINGW_BUILD_DIR="$REPO/build-mingw"
python -m pytest tests -q "$@"
echo "pteron: all tests passed"
