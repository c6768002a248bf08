# SPDX-License-Identifier: BSD-3-Clause
# windows-cross-headers.cmake - included by the Windows cross toolchains (toolchain-mingw-w64.cmake,
# the MSVC profiles' user toolchain): the header-only dependencies that live in the Linux build
# machine's /usr/include (Debian's libflatbuffers-dev and libeigen3-dev), named by exact path
# so that nothing else of /usr/include (glibc's headers) reaches a Windows compile. The build
# copies only flatbuffers/ into its own tree; Eigen's /usr/include/eigen3 is a folder of its own.
# A preset cache entry is kept by find_path / find_package; pass -D... to override.
if(EXISTS /usr/include/flatbuffers/flatbuffers.h)
  set(PTERON_FLATBUFFERS_INCLUDE /usr/include CACHE PATH
      "Directory holding flatbuffers/ (only that subdirectory is used)")
endif()
if(EXISTS /usr/include/eigen3/Eigen/Core)
  set(PTERON_EIGEN_INCLUDE /usr/include/eigen3 CACHE PATH "Eigen's include directory")
  if(EXISTS /usr/share/eigen3/cmake/Eigen3Config.cmake)
    # Eigen's CMake package is header-only and names /usr/include/eigen3 only.
    set(Eigen3_DIR /usr/share/eigen3/cmake CACHE PATH "")
  endif()
endif()
