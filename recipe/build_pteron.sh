#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# pteron (recipe.yaml): the Python distribution of the root pyproject.toml, installed by pip
# (so it has its .dist-info and the pteron-verify entry point) into the host prefix's
# site-packages. scikit-build-core builds python/CMakeLists.txt only (cmake.source-dir): the
# extension pteron._pteron, against libpteron in the host prefix (find_package(pteron)),
# with a run path to the prefix's lib/ ($ORIGIN/../../.. from lib/pythonX.Y/site-packages/
# pteron); nothing of libpteron is built or copied again. The extension's stub is the one the
# package ships (python/pteron/_pteron.pyi), so the build does not import the module.
# --no-compile: pip's .pyc files would hold the build's prefix; rattler-build compiles the
# package's .pyc files itself. On Windows: build_pteron.bat.
set -euxo pipefail
"${PYTHON}" -m pip install . -vv --no-deps --no-build-isolation --no-compile \
  -Ccmake.source-dir=python \
  -Ccmake.define.CMAKE_PREFIX_PATH="${PREFIX}" \
  "-Ccmake.define.PTERON_PYTHON_RPATH=\$ORIGIN/../../.." \
  -Ccmake.define.PTERON_PYTHON_STUB=OFF
# pip's direct_url.json names the build's work folder, a path of the build machine: not shipped
# (nor listed in RECORD).
for d in $(find "${PREFIX}" -type d -path '*/site-packages/pteron-*.dist-info'); do
  rm -f "${d}/direct_url.json"
  sed -i.bak '/direct_url\.json/d' "${d}/RECORD" && rm -f "${d}/RECORD.bak"
done
