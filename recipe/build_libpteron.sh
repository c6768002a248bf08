#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libpteron (recipe.yaml): the CMake build and install of the runtime, its components and
# pteron-run. No XNNPACK or pthreadpool library is linked: the delegate runs on pteron's own
# kernels and the thread pool is pteron's std::thread pool, so the package links nothing
# outside its prefix. On Windows: build_libpteron.bat.
set -euxo pipefail
# shellcheck disable=SC2086  # CMAKE_ARGS (conda-forge's compiler activation) is a word list
cmake -S . -B build-conda -G Ninja ${CMAKE_ARGS:-} -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="${PREFIX}" -DCMAKE_INSTALL_LIBDIR=lib -DPTERON_BUILD_TOOLS=ON \
  -DPTERON_XNNPACK_LIBRARY=OFF -DPTERON_THREADPOOL_IMPL=std
cmake --build build-conda --parallel "${CPU_COUNT:-2}"
cmake --install build-conda
