# SPDX-License-Identifier: BSD-3-Clause
# The license texts of the third-party code compiled into pteron's binaries
# (THIRD_PARTY_NOTICES.md), installed with pteron's own into
# ${CMAKE_INSTALL_DATADIR}/licenses/pteron:
#   - FlatBuffers' headers (Apache-2.0: the runtime's .pte reader), always;
#   - Eigen's headers (MPL-2.0), when pteron_cpu is built (kernels_optimized,
#     backend_xnnpack);
#   - for MinGW-w64 builds, which link them statically: the MinGW-w64 runtime
#     and winpthreads (expat and others), and GCC's runtime libraries (GPL-3.0
#     with the GCC Runtime Library Exception).
# Libraries linked as shared libraries (XNNPACK, pthreadpool) ship their own.
# Each text comes from the package that provided the code, never from this
# repository: PTERON_LICENSE_<NAME> (FLATBUFFERS, EIGEN, MINGW_W64, GCC) names
# its files (the Conan recipe sets it to a dependency's licenses/ folder),
# else Debian's /usr/share/doc/<package>/copyright. A text that cannot be
# found is a configure warning, and pteron-verify fails the package.

include(GNUInstallDirs)
set(PTERON_LICENSES_DESTINATION "${CMAKE_INSTALL_DATADIR}/licenses/pteron")

# pteron_install_license(NAME deb-package...)
function(pteron_install_license name)
  set(var "PTERON_LICENSE_${name}")
  set(files "${${var}}")
  if(NOT files)
    foreach(deb IN LISTS ARGN)
      if(EXISTS "/usr/share/doc/${deb}/copyright")
        set(files "/usr/share/doc/${deb}/copyright")
        break()
      endif()
    endforeach()
  endif()
  string(TOLOWER "${name}" lower)
  if(NOT files)
    message(WARNING "pteron: no license text found for ${name} (set ${var} to its file); "
                    "the package will not hold it")
    return()
  endif()
  foreach(f IN LISTS files)
    get_filename_component(base "${f}" NAME)
    install(FILES "${f}" DESTINATION "${PTERON_LICENSES_DESTINATION}" RENAME "${lower}-${base}")
  endforeach()
endfunction()

function(pteron_install_licenses)
  install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES.md"
          DESTINATION "${PTERON_LICENSES_DESTINATION}")
  pteron_install_license(FLATBUFFERS libflatbuffers-dev)
  if(TARGET pteron_cpu)  # kernels_optimized, backend_xnnpack: Eigen's code is in them
    pteron_install_license(EIGEN libeigen3-dev)
  endif()
  if(MINGW)
    pteron_install_license(MINGW_W64 mingw-w64-common mingw-w64-x86-64-dev)
    pteron_install_license(GCC gcc-mingw-w64-base gcc-mingw-w64-x86-64-posix-runtime)
  endif()
endfunction()
