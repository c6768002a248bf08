#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/slow.sh - slower targets, outside CI (README, "Slower targets"):
#   - the Linux debug package made by Conan (profiles/linux-debug: `conan build`
#     into build-conan/linux-debug, `conan export-pkg`, test_package), and
#     pteron-verify on it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/conan.sh"
cd "$REPO"
pteron_install_apt "${_pteron_apt_packages[@]}"
pteron_install_venv
pteron_conan_home
start=$(date +%s)
pteron_conan_package linux-debug "$REPO/build-conan/linux-debug"
echo "==> the debug package took $(( $(date +%s) - start )) s"
PYTHONPATH="$REPO/python" python -m pteron.verify "$PTERON_PKG_FOLDER"
echo "pteron: slower targets passed"
