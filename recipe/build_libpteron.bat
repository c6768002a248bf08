:: SPDX-License-Identifier: BSD-3-Clause
:: libpteron on Windows (conda-forge's MSVC toolchain): see build_libpteron.sh.
cmake -S . -B build-conda -G Ninja %CMAKE_ARGS% -DCMAKE_BUILD_TYPE=Release ^
  -DCMAKE_INSTALL_PREFIX="%LIBRARY_PREFIX%" -DCMAKE_INSTALL_LIBDIR=lib -DPTERON_BUILD_TOOLS=ON ^
  -DPTERON_XNNPACK_LIBRARY=OFF -DPTERON_THREADPOOL_IMPL=std
if errorlevel 1 exit 1
cmake --build build-conda --parallel %CPU_COUNT%
if errorlevel 1 exit 1
cmake --install build-conda
if errorlevel 1 exit 1
