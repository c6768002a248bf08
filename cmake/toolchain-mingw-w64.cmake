# SPDX-License-Identifier: BSD-3-Clause
# toolchain-mingw-w64.cmake - Windows x86-64 (PE) cross build from Linux with
# Debian's mingw-w64 (posix thread model: std::thread works).
#
#   cmake -S . -B build-mingw -G Ninja -DCMAKE_BUILD_TYPE=Release \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-mingw-w64.cmake
#
# Programs built with it run under Wine (`wine prog.exe`), with their DLLs
# beside them.
#
# - Only the MinGW sysroot is searched for headers, libraries and packages: the
#   build machine's /usr/include and /usr/lib hold glibc and ELF libraries.
# - Build-machine programs (flatc) are found on the build machine.
# - Header-only inputs that live in the build machine's /usr/include are named
#   by path so nothing else of /usr/include is seen: flatbuffers (the project
#   copies only its headers into the build tree) and Eigen (/usr/include/eigen3,
#   a directory of its own).
# - libgcc, libstdc++ and winpthread are linked statically (-static), so the
#   DLLs and programs import only Windows system DLLs and each other; see the
#   docs/consumers.md, "Windows (MinGW) runtime DLLs". pteron's own CMakeLists does the
#   same for its binaries with any MinGW toolchain; this file also gives it to
#   consumers built with it.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(PTERON_MINGW_TRIPLE x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${PTERON_MINGW_TRIPLE}-gcc-posix)
set(CMAKE_CXX_COMPILER ${PTERON_MINGW_TRIPLE}-g++-posix)
set(CMAKE_RC_COMPILER ${PTERON_MINGW_TRIPLE}-windres)
set(CMAKE_AR ${PTERON_MINGW_TRIPLE}-gcc-ar-posix CACHE FILEPATH "")
set(CMAKE_RANLIB ${PTERON_MINGW_TRIPLE}-gcc-ranlib-posix CACHE FILEPATH "")

# Search the MinGW sysroot only, except for programs. Installed Windows
# packages are found by adding their prefix to the roots
# (-DCMAKE_FIND_ROOT_PATH=/path/to/pteron) or by naming their config directory
# (-Dpteron_DIR=/path/to/pteron/lib/cmake/pteron); CMAKE_PREFIX_PATH alone is
# searched inside the roots only.
list(APPEND CMAKE_FIND_ROOT_PATH /usr/${PTERON_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Header-only dependencies from the build machine, by exact path.
include("${CMAKE_CURRENT_LIST_DIR}/windows-cross-headers.cmake")

# No libgcc_s / libstdc++ / winpthread DLLs to ship with what this builds.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static")
