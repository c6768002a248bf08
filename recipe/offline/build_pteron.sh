#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# pteron in this project's offline build only (scripts/conda_channel.py's derived recipe,
# build-conda/recipe; never conda-forge's).
#   linux-64: the public build_pteron.sh (pip install . of the root pyproject.toml), run by the
#     build machine's python (no channel provides python here, so rattler-build's PYTHON, the
#     host prefix's, does not exist) and installing into $PREFIX (PIP_PREFIX); scikit-build-core,
#     nanobind and numpy come from that python's environment (--no-build-isolation).
#   win-64 from this Linux machine: pip cannot install for a Windows interpreter here, so the
#     extension is built by MSVC under Wine (msvc_wine.sh) with CMake alone, against the win-64
#     libpteron (PTERON_HOST_PREFIX: see scripts/conda_channel.py), for the Windows CPython of
#     PTERON_WINDOWS_PYTHON (scripts/windows_python.py: headers, python311.dll's export list,
#     numpy, nanobind), whose import library MSVC's lib.exe makes here; the Python files are
#     copied beside it. This package has no .dist-info (conda-forge's win-64 build,
#     build_pteron.bat, is pip's). FindPython runs that python.exe under Wine through a
#     script: this build's PATH has the system's folders only.
# The variant keys (pteron_windows_python, pteron_msvc_root, pteron_host_prefix) come from
# recipe/offline/variants.yaml, through the derived recipe's script env.
set -euxo pipefail
want="${PTERON_PY_VER}"
if [[ "${target_platform}" != win-* ]]; then
  py="$(command -v python3)"
  have="$("${py}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  if [[ "${have}" != "${want}" ]]; then
    echo "build_pteron.sh: ${py} is Python ${have}, the variant asks for ${want}" >&2
    exit 1
  fi
  PYTHON="${py}" PIP_PREFIX="${PREFIX}" bash "${RECIPE_DIR}/build_pteron.sh"
  exit 0
fi
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
sp="${PREFIX}/${sp_rel}"
args+=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="${PREFIX}"
       -DPTERON_PYTHON_INSTALL_DIR="${sp_rel}/pteron")
cmake -S python -B build-conda-py "${args[@]}"
cmake --build build-conda-py --parallel "${CPU_COUNT:-2}"
cmake --install build-conda-py
mkdir -p "${sp}/pteron"
(cd python/pteron && find . \( -name '*.py' -o -name '*.pyi' -o -name py.typed \) -print0 \
  | xargs -0 -I{} cp --parents {} "${sp}/pteron/")
