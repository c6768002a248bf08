#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# pteron (recipe.yaml): the Python module for one Python version. The extension pteron._pteron
# is built against libpteron in the host prefix (python/CMakeLists.txt, find_package(pteron))
# and links its runtime library; the Python files are python/pteron. Both go to the
# site-packages folder (lib/pythonX.Y/site-packages, Lib/site-packages on Windows); nothing of
# libpteron is copied. On Windows build machines: build_pteron.bat.
set -euxo pipefail
want="${PY_VER:-${PTERON_PY_VER}}"
if [[ "${target_platform}" == win-* ]]; then
  # win-64 from this Linux machine: the extension built by MSVC (msvc_wine.sh) against the
  # win-64 libpteron in $LIBRARY_PREFIX, for the Windows CPython of PTERON_WINDOWS_PYTHON
  # (scripts/windows_python.py: headers, python311.dll's export list, numpy, nanobind), whose
  # import library MSVC's lib.exe makes here. FindPython runs that python.exe under Wine
  # through a script: this build's PATH has the system's folders only, so Debian's CMake,
  # which cannot run it through CMAKE_CROSSCOMPILING_EMULATOR.
  wp="${PTERON_WINDOWS_PYTHON:-}"
  if [[ -z "${wp}" || ! -f "${wp}/stamp" ]]; then
    echo "build_pteron.sh: a win-64 build on ${build_platform:-this machine} needs the variant" \
         "key pteron_windows_python, a folder made by scripts/windows_python.py" \
         "(scripts/conda.sh sets it)" >&2
    exit 1
  fi
  if [[ "${want}" != "3.11" ]]; then
    echo "build_pteron.sh: ${wp} holds CPython 3.11; the variant asks for ${want}" >&2
    exit 1
  fi
  source "${RECIPE_DIR}/msvc_wine.sh"
  # The win-64 libpteron: the host prefix's, or (offline cross build) PTERON_HOST_PREFIX's.
  lib_prefix="${PTERON_HOST_PREFIX:-${PREFIX}}/Library"
  tools="${SRC_DIR}/../win-python-tools"
  mkdir -p "${tools}"
  "${SRC_DIR}/conan-recipes/msvc-wine/lib" /nologo /machine:x64 /def:"${wp}/libs/python311.def" \
    /out:"${tools}/python311.lib"
  # Pipes for stdout and stderr (CPython under Wine 8.0 does not start when either is a
  # regular file), with Windows' CR LF line ends made LF.
  printf '#!/bin/bash\nset -o pipefail\nexport WINEPREFIX="%s" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="\nwine "%s" "$@" </dev/null 2> >(tr -d "\\r" >&2) | tr -d "\\r"\n' \
    "${WINEPREFIX}" "${wp}/python/python.exe" > "${tools}/python"
  chmod +x "${tools}/python"
  sp_rel="Lib/site-packages"
  args=(-DCMAKE_TOOLCHAIN_FILE="${SRC_DIR}/cmake/toolchain-msvc-wine.cmake"
        -DCMAKE_FIND_ROOT_PATH="${lib_prefix}" -Dpteron_DIR="${lib_prefix}/lib/cmake/pteron"
        -DPython_EXECUTABLE="${tools}/python" -DPython_INCLUDE_DIR="${wp}/include"
        -DPython_LIBRARY="${tools}/python311.lib"
        -DPython_NumPy_INCLUDE_DIR="${wp}/site/numpy/_core/include"
        -Dnanobind_DIR="${wp}/site/nanobind/cmake")
else
  # rattler-build sets PYTHON to the host prefix's python, which an offline build has not got.
  py="${PYTHON:-python3}"
  if [[ ! -x "${py}" ]]; then py=python3; fi
  have="$("${py}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  if [[ "${have}" != "${want}" ]]; then
    echo "build_pteron.sh: ${py} is Python ${have}, the variant asks for ${want}" >&2
    exit 1
  fi
  sp_rel="lib/python${want}/site-packages"
  args=(-DCMAKE_PREFIX_PATH="${PREFIX}" -DPython_EXECUTABLE="$(command -v "${py}")"
        "-DPTERON_PYTHON_RPATH=\$ORIGIN/../../..")
fi
sp="${PREFIX}/${sp_rel}"
args+=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="${PREFIX}"
       -DPTERON_PYTHON_INSTALL_DIR="${sp_rel}/pteron")
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
# shellcheck disable=SC2086
cmake -S python -B build-conda-py ${CMAKE_ARGS:-} "${args[@]}"
cmake --build build-conda-py --parallel "${CPU_COUNT:-2}"
cmake --install build-conda-py
mkdir -p "${sp}/pteron"
(cd python/pteron && find . -name '*.py' -print0 | xargs -0 -I{} cp --parents {} "${sp}/pteron/")
if [[ "${target_platform}" != win-* ]]; then
  "${py}" -B -c "import sys; sys.path.insert(0, '${sp}'); import pteron, pteron.verify"
fi
