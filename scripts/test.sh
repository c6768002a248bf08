#!/usr/bin/env bash
# scripts/test.sh - the full test suite. Installs what it needs, builds the
# Release tree (build/) and the ASan+UBSan tree (build-asan/), runs pytest.
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
echo "==> builds took $(( $(date +%s) - start )) s"

export PTERON_BUILD_DIR="$REPO/build" PTERON_ASAN_BUILD_DIR="$REPO/build-asan"
python -m pytest tests -q "$@"
echo "pteron: all tests passed"
