#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/slow.sh - slower targets, outside CI (README, "Slower targets"):
#   - the Linux debug package made by Conan (profiles/linux-debug: `conan build`
#     into build-conan/linux-debug, `conan export-pkg`, test_package), and
#     pteron-verify on it;
#   - every model of the zoo (PTERON_ZOO=all tests/test_zoo.py; CI runs its CI
#     set), on the Linux and MinGW release packages (incremental when
#     scripts/test.sh has just made them).
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

start=$(date +%s)
pteron_conan_package linux-release "$REPO/build-conan/linux-release"
export PTERON_LINUX_PACKAGE="$PTERON_PKG_FOLDER" PTERON_BUILD_DIR="$PTERON_PKG_BUILD"
pteron_conan_package windows-mingw-release "$REPO/build-conan/windows-mingw-release"
export PTERON_MINGW_PACKAGE="$PTERON_PKG_FOLDER" PTERON_MINGW_BUILD_DIR="$PTERON_PKG_BUILD"
PTERON_ZOO=all python -m pytest tests/test_zoo.py -q
echo "==> the whole zoo took $(( $(date +%s) - start )) s"
echo "pteron: slower targets passed"
