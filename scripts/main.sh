#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/main.sh [HOST_PROFILE] - the main job: `conan create` builds,
# packages and tests pteron; its test_package runs a real program (an MLP
# exported by upstream ExecuTorch) and compares the output with eager
# PyTorch's. HOST_PROFILE is a file in profiles/ (default linux-release;
# windows-mingw-release cross-builds Windows DLLs and runs test_package under
# Wine). Works offline: third-party libraries come from Debian's packages
# through the profiles' [platform_requires].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO"
host="${1:-linux-release}"
pkgs=("${_pteron_apt_packages[@]}")
case "$host" in
  windows-*) pkgs+=(mingw-w64 wine64) ;;
  linux*) ;;
  *) echo "scripts/main.sh: this machine can run the linux-* and windows-* profiles, not '$host'" >&2; exit 2 ;;
esac
pteron_install_apt "${pkgs[@]}"
pteron_install_venv

# A Conan home of the project's own, with no remote (everything offline), holding the
# profiles and the CUDA toolchain recipes (scripts/conan.sh): afterwards
# `CONAN_HOME=$PWD/.conan2 conan create . -pr windows-cu134` works as written.
source "$REPO/scripts/conan.sh"
pteron_conan_home
if [[ "$host" == windows-* ]]; then
  export WINEDEBUG=-all
  export WINEPREFIX="${WINEPREFIX:-$REPO/.wine}"
fi

echo "==> conan create . -pr:h profiles/$host -pr:b profiles/linux-release --build=missing"
set +e
mkdir -p "$REPO/out"
conan create . -pr:h "profiles/$host" -pr:b profiles/linux-release --build=missing \
  --format=json >"$REPO/out/conan-create.json" 2>"$REPO/out-conan-create.log"
status=$?
set -e
grep -E "^(pteron|mlp output|backend|test_package)|MATCH|ERROR" "$REPO/out-conan-create.log" || true
if [ "$status" -ne 0 ]; then
  echo "conan create failed (exit $status); the full log is in out-conan-create.log" >&2
  exit "$status"
fi
if ! grep -q "MATCH" "$REPO/out-conan-create.log" || grep -q "MISMATCH" "$REPO/out-conan-create.log"; then
  echo "test_package did not report a matching output; see out-conan-create.log" >&2
  exit 1
fi

# The binary layout of the package conan create made (pteron-verify).
pkg_folder="$(pteron_graph_folder "$REPO/out/conan-create.json" pteron/)"
[ -n "$pkg_folder" ] || { echo "out/conan-create.json names no pteron package folder" >&2; exit 1; }
echo "==> pteron-verify $pkg_folder"
PYTHONPATH="$REPO/python" python -m pteron.verify "$pkg_folder" >"$REPO/out/verify-$host.txt" 2>&1 || {
  cat "$REPO/out/verify-$host.txt"; exit 1; }
tail -n 1 "$REPO/out/verify-$host.txt"

if [[ "$host" == windows-* ]]; then
  # What a Windows user does: conan install with the runtime_deploy deployer
  # (one of the two routes; test_package takes the other, a post-build copy of
  # $<TARGET_RUNTIME_DLLS>), build, run with the DLLs beside the program and
  # nothing on PATH.
  version="$(cat "$REPO/VERSION")"
  app="$REPO/out/mingw-app"
  rm -rf "$app"
  mkdir -p "$app"
  echo "==> conan install --requires=pteron/$version --deployer=runtime_deploy (consumer under Wine)"
  conan install --requires="pteron/$version" -pr:h "profiles/$host" -pr:b profiles/linux-release \
    -g CMakeDeps -g CMakeToolchain --deployer=runtime_deploy --deployer-folder="$app/bin" \
    --output-folder="$app/gen" >"$app/install.log" 2>&1 || { cat "$app/install.log"; exit 1; }
  build_type=Release
  [[ "$host" == *debug* ]] && build_type=Debug  # CMakeDeps made that configuration's targets
  cmake -S "$REPO/tests/consumer" -B "$app/build" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" \
    -DCMAKE_TOOLCHAIN_FILE="$app/gen/conan_toolchain.cmake" -DPTERON_SOURCE_DIR="$REPO" \
    -DCOMPONENTS="kernels_portable;kernels_optimized;threadpool" \
    -DCMAKE_RUNTIME_OUTPUT_DIRECTORY="$app/bin" >"$app/cmake.log" 2>&1 || { cat "$app/cmake.log"; exit 1; }
  cmake --build "$app/build" >>"$app/cmake.log" 2>&1 || { cat "$app/cmake.log"; exit 1; }
  # A /MDd program needs the debug CRT DLLs, which Visual Studio installs system-wide and
  # Wine lacks: pteron-msvc-wine's copies go beside it.
  msvc_wine="$(pteron_graph_folder "$REPO/out/conan-create.json" pteron-msvc-wine/)"
  if [ "$build_type" = Debug ] && [ -n "$msvc_wine" ]; then cp "$msvc_wine"/debug-crt/*.dll "$app/bin/"; fi
  echo "    $(cd "$app/bin" && ls *.dll | tr '\n' ' ')beside consumer.exe"
  fx="$REPO/models/fixtures"
  (cd "$app/bin" && env -u WINEPATH PATH=/usr/bin:/bin wine consumer.exe "$fx/cnn.pte" forward \
     "$fx/cnn.forward.input_0.npy" -- "$fx/cnn.forward.expected_0.npy") | grep -E "^(library|output|consumer)"
fi
echo "pteron: main job succeeded ($host)"
