#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# pteron (recipe.yaml): the Python module for one Python version. The extension pteron._pteron
# is built against libpteron in the host prefix (python/CMakeLists.txt, find_package(pteron))
# and links its runtime library; the Python files are python/pteron. Both go to
# lib/pythonX.Y/site-packages/pteron; nothing of libpteron is copied.
set -euxo pipefail
# rattler-build sets PYTHON to the host prefix's python, which an offline build has not got.
py="${PYTHON:-python3}"
if [[ ! -x "${py}" ]]; then py=python3; fi
want="${PY_VER:-${PTERON_PY_VER}}"
have="$("${py}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [[ "${have}" != "${want}" ]]; then
  echo "build_pteron.sh: ${py} is Python ${have}, the variant asks for ${want}" >&2
  exit 1
fi
sp="${PREFIX}/lib/python${want}/site-packages"
args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="${PREFIX}" -DPython_EXECUTABLE="$(command -v "${py}")"
      -DCMAKE_INSTALL_PREFIX="${PREFIX}" -DPTERON_PYTHON_INSTALL_DIR="lib/python${want}/site-packages/pteron"
      "-DPTERON_PYTHON_RPATH=\$ORIGIN/../../..")
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
# shellcheck disable=SC2086
cmake -S python -B build-conda-py ${CMAKE_ARGS:-} "${args[@]}"
cmake --build build-conda-py --parallel "${CPU_COUNT:-2}"
cmake --install build-conda-py
mkdir -p "${sp}/pteron"
(cd python/pteron && find . -name '*.py' -print0 | xargs -0 -I{} cp --parents {} "${sp}/pteron/")
"${py}" -B -c "import sys; sys.path.insert(0, '${sp}'); import pteron, pteron.verify"
