# SPDX-License-Identifier: BSD-3-Clause
# scripts/setup.sh - sourced by scripts/main.sh and scripts/test.sh.
# Installs what pteron's build and tests need, idempotently:
#  - Debian packages: a C++ compiler, pkgconf, flatbuffers (headers + flatc), Eigen,
#    pthreadpool, XNNPACK (the XNNPACK delegate), MinGW-w64 and Wine;
#  - a Python virtual environment in .venv with numpy, pytest, pytest-xdist (the suite
#    runs in three workers, scripts/test.sh), cmake, ninja, conan,
#    pefile, pyelftools, wheel and
#    nanobind and scikit-build-core (the Python module's extension,
#    python/CMakeLists.txt; the wheel, pyproject.toml), tokenizers (pteron.llm's tests
#    and its optional dependency for tokenizer.json files), ml_dtypes (bfloat16 arrays,
#    the module's optional dependency) and mypy (tests/test_python_typing.py);
#  - upstream's exporter in .venv-export (pteron_install_export_venv), for the
#    model zoo's tests (models/zoo.py).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"

_pteron_apt_packages=(g++ make binutils libflatbuffers-dev flatbuffers-compiler libeigen3-dev libpthreadpool-dev libxnnpack-dev python3-venv pkgconf mingw-w64 wine64 wine)

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
  if ! "$VENV/bin/python" -c "import numpy, pytest, xdist, pefile, elftools, wheel, nanobind, scikit_build_core, tokenizers, ml_dtypes, mypy" >/dev/null 2>&1 ||
     [ ! -x "$VENV/bin/cmake" ] || [ ! -x "$VENV/bin/ninja" ] || [ ! -x "$VENV/bin/conan" ]; then
    echo "==> installing Python packages into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check numpy pytest pytest-xdist cmake ninja conan pefile pyelftools wheel nanobind scikit-build-core tokenizers ml_dtypes mypy "$@"
  fi
  export PATH="$VENV/bin:$PATH"
}

# Upstream's exporter for the model zoo (models/zoo.py, tests/test_zoo.py): .venv-export
# with torch 2.13.0 (the CPU wheel on this machine's disk), executorch 1.5.1, numpy
# and pillow, and torchvision 0.28.0 without its dependencies (its PyPI wheel
# requires the CUDA torch of the same release; the model definitions run with the
# CPU one). Quick when already there. Exports PTERON_EXPORT_PYTHON.
EXPORT_VENV="$REPO/.venv-export"
pteron_install_export_venv() {
  local py="$EXPORT_VENV/bin/python"
  if [ ! -x "$py" ]; then
    echo "==> creating $EXPORT_VENV"
    python3 -m venv "$EXPORT_VENV"
  fi
  if ! "$py" -c "import torch, executorch, numpy, PIL; from importlib.metadata import version as v
assert torch.__version__ == '2.13.0+cpu', torch.__version__
assert v('executorch') == '1.5.1' and v('torchvision').startswith('0.28.0')" >/dev/null 2>&1; then
    echo "==> installing upstream's exporter into $EXPORT_VENV"
    local log="$EXPORT_VENV/pip-install.log"
    { "$py" -m pip install --disable-pip-version-check torch==2.13.0 executorch==1.5.1 numpy pillow &&
      "$py" -m pip install --disable-pip-version-check --no-deps torchvision==0.28.0; } >"$log" 2>&1 || {
      tail -n 40 "$log"; echo "installing into $EXPORT_VENV failed; log: $log" >&2; return 1; }
    # pip may never trade the CPU torch for another build: check what it left.
    "$py" -c "import torch; assert torch.__version__ == '2.13.0+cpu', \
      f'.venv-export has torch {torch.__version__}, not 2.13.0+cpu'"
  fi
  export PTERON_EXPORT_PYTHON="$py"
}

# Configures and builds one CMake build directory: pteron_build DIR [cmake args...]
pteron_build() {
  local dir="$1"; shift
  mkdir -p "$dir"
  cmake -S "$REPO" -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log"; return 1; }
  cmake --build "$dir" -j "$(nproc)"
}

# A Windows CPython 3.11 with numpy, nanobind, headers and an import library
# (scripts/windows_python.py), for tests/test_python.py's [windows] runs and the win-64 conda
# package, under Wine. Test-only; quick when already there. Exports PTERON_WINDOWS_PYTHON.
pteron_install_windows_python() {
  local dir="${PTERON_WINDOWS_PYTHON_CACHE:-$HOME/.cache/pteron/windows-python-3.11}"
  echo "==> a Windows CPython for the module's tests: $dir"
  PTERON_WINDOWS_PYTHON="$("$VENV/bin/python" "$REPO/scripts/windows_python.py" "$dir")"
  export PTERON_WINDOWS_PYTHON
}

# A CUDA train's tools, for backend_cuda (cmake/cuda_trains.json): its pinned wheels
# (nvcc, crt, nvvm, the runtime's headers cuda.h and cudaTypedefs.h, cuobjdump), every one
# pinned to the train, installed once into ${PTERON_CUDA_CACHE:-~/.cache/pteron/cuda}/TRAIN.
# pteron_install_cuda_train TRAIN (after pteron_install_venv) exports PTERON_CUDA_NVCC,
# PTERON_CUDA_INCLUDE_DIR, PTERON_CUDA_CUOBJDUMP and PTERON_CUDA_CUOBJDUMP_EXE (the train's
# Windows cuobjdump.exe, from its win_amd64 wheel, which pteron-verify runs under Wine to
# cross-check a .dll's fatbin). nvcc runs the build machine's gcc.
pteron_install_cuda_train() {
  local train="$1"
  local pins
  pins="$(python3 -c "import json,sys; t=json.load(open('$REPO/cmake/cuda_trains.json'))['trains']
if sys.argv[1] not in t: sys.exit('unknown CUDA train ' + sys.argv[1] + ': one of ' + ', '.join(t))
print(' '.join(f'{w}=={v}' for w, v in t[sys.argv[1]]['wheels'].items()))" "$train")"
  local dir="${PTERON_CUDA_CACHE:-$HOME/.cache/pteron/cuda}/$train"
  local cu="$dir/nvidia/cu13"
  if [ ! -x "$cu/bin/nvcc" ] || [ ! -f "$cu/include/cuda.h" ] || [ ! -x "$cu/bin/cuobjdump" ] ||
     [ "$(cat "$dir/.pins" 2>/dev/null)" != "$pins" ]; then
    echo "==> installing the CUDA train $train ($pins) into $dir"
    rm -rf "$dir"
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$dir" $pins
    echo "$pins" > "$dir/.pins"
  fi
  local win="$dir-win" cuobjdump_pin
  cuobjdump_pin="$(echo "$pins" | tr ' ' '\n' | grep '^nvidia-cuda-cuobjdump==')"
  if [ ! -f "$win/nvidia/cu13/bin/cuobjdump.exe" ]; then
    rm -rf "$win" && mkdir -p "$win"
    "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
      --platform win_amd64 --only-binary=:all: -d "$win" "$cuobjdump_pin"
    "$VENV/bin/python" -m zipfile -e "$win"/nvidia_cuda_cuobjdump-*.whl "$win"
  fi
  export PTERON_CUDA_NVCC="$cu/bin/nvcc" PTERON_CUDA_INCLUDE_DIR="$cu/include" \
    PTERON_CUDA_CUOBJDUMP="$cu/bin/cuobjdump" PTERON_CUDA_CUOBJDUMP_EXE="$win/nvidia/cu13/bin/cuobjdump.exe"
}
