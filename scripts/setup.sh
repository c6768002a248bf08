# SPDX-License-Identifier: BSD-3-Clause
# scripts/setup.sh - sourced by scripts/main.sh and scripts/test.sh.
# Installs what pteron's build and tests need, idempotently:
#  - Debian packages: a C++ compiler, flatbuffers (headers + flatc), Eigen,
#    pthreadpool, XNNPACK (the XNNPACK delegate), MinGW-w64 and Wine;
#  - a Python virtual environment in .venv with numpy, pytest, cmake, ninja, conan,
#    pefile, pyelftools and wheel (pip install ./python builds a wheel offline).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"

_pteron_apt_packages=(g++ make binutils libflatbuffers-dev flatbuffers-compiler libeigen3-dev libpthreadpool-dev libxnnpack-dev python3-venv mingw-w64 wine64 wine)

pteron_install_apt() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "==> installing Debian packages: ${missing[*]}"
    local SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

pteron_install_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    python3 -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" -c "import numpy, pytest, pefile, elftools, wheel" >/dev/null 2>&1 ||
     [ ! -x "$VENV/bin/cmake" ] || [ ! -x "$VENV/bin/ninja" ] || [ ! -x "$VENV/bin/conan" ]; then
    echo "==> installing Python packages into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check numpy pytest cmake ninja conan pefile pyelftools wheel "$@"
  fi
  export PATH="$VENV/bin:$PATH"
}

# Configures and builds one CMake build directory: pteron_build DIR [cmake args...]
pteron_build() {
  local dir="$1"; shift
  mkdir -p "$dir"
  cmake -S "$REPO" -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log"; return 1; }
  cmake --build "$dir" -j "$(nproc)"
}
