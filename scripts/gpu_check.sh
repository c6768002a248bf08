#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/gpu_check.sh prepare | run - the one GPU check, for a task that is lent a GPU
# machine (only by chance, for 15 minutes in all: check the device tool's status first).
# Never part of CI.
#
#   prepare  (here) builds what travels, build-gpu/{prefix,programs,fallback} (under 64 MiB):
#            - prefix: a cmake --install of the linux-cu134 configuration without any
#              XNNPACK library and with pteron's std::thread pool (that machine has no
#              Debian XNNPACK or pthreadpool), pteron-run, and this machine's libstdc++
#              and libgcc_s beside the libraries (found first through RUNPATH $ORIGIN: that
#              machine's may be older);
#            - programs: scripts/gpu_programs.py's CUDA-lowered CNN, ViT, decoder and the
#              benchmark's programs, with eager outputs;
#            - fallback: the cu134 fatbin, the driver headers, flatc and the flatbuffers
#              headers, for a rebuild there from the carried sources when the carried
#              binaries cannot load (an older glibc than 2.34).
#   run      (there) runs scripts/gpu_check.py: every CUDA-lowered program against eager, by
#            default and with CUDA_DISABLE_PTX_JIT=1 / CUDA_FORCE_PTX_JIT=1, and the
#            benchmark against eager PyTorch CUDA; prints one table; under 5 minutes.
#            With the device tool: run(command="bash scripts/gpu_check.sh run",
#            carry=["build-gpu/prefix", "build-gpu/programs", "build-gpu/fallback"]).
#   run --fake-driver DIR   the same here, on tests/cuda/fake_cuda.cpp's libcuda.so.1 (no
#            benchmark): checks this script without a GPU.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
G="$REPO/build-gpu"
cmd="${1:-}"; shift || true

if [ "$cmd" = prepare ]; then
  source "$REPO/scripts/setup.sh"
  pteron_install_apt "${_pteron_apt_packages[@]}"
  pteron_install_venv
  pteron_install_export_venv
  pteron_install_cuda_train cu134
  rm -rf "$G/prefix" "$G/fallback"
  pteron_build "$G/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$G/prefix" \
    -DPTERON_XNNPACK_LIBRARY=OFF -DPTERON_THREADPOOL_IMPL=std -DPTERON_WITH_CUDA=ON \
    -DPTERON_CUDA_TRAIN=cu134 "-DPTERON_CUDA_NVCC=$PTERON_CUDA_NVCC" \
    "-DPTERON_CUDA_INCLUDE_DIR=$PTERON_CUDA_INCLUDE_DIR" "-DPTERON_CUDA_FATBIN_CACHE=$G/fatbin"
  cmake --install "$G/build" >/dev/null
  for lib in libstdc++.so.6 libgcc_s.so.1; do
    cp -L "$(g++ -print-file-name="$lib")" "$G/prefix/lib/$lib"
  done
  mkdir -p "$G/fallback/cuda-include" "$G/fallback/include"
  cp "$G"/fatbin/pteron_cuda_cu134_*.fatbin "$G/fallback/pteron_cuda_cu134.fatbin"
  cp "$PTERON_CUDA_INCLUDE_DIR/cuda.h" "$PTERON_CUDA_INCLUDE_DIR/cudaTypedefs.h" "$G/fallback/cuda-include/"
  cp "$(command -v flatc)" "$G/fallback/flatc"
  cp -r /usr/include/flatbuffers "$G/fallback/include/"
  "$PTERON_EXPORT_PYTHON" "$REPO/scripts/gpu_programs.py" "$G/programs"
  du -sh "$G/prefix" "$G/programs" "$G/fallback"
  total=$(du -sbc "$G/prefix" "$G/programs" "$G/fallback" | tail -n 1 | cut -f1)
  if [ "$total" -gt $((60 * 1024 * 1024)) ]; then
    echo "gpu_check prepare: the payload is $((total / 1048576)) MiB, over the 60 MiB kept under the 64 MiB carry limit" >&2
    exit 1
  fi
  echo "gpu_check prepare: build-gpu/{prefix,programs,fallback} ready ($((total / 1048576)) MiB)"
elif [ "$cmd" = run ]; then
  run_bin="$G/prefix/bin/pteron-run"
  if ! "$run_bin" --help >/dev/null 2>&1; then
    echo "the carried pteron-run cannot run here ($("$run_bin" --help 2>&1 | head -n 1)); rebuilding from the sources"
    b=/tmp/pteron-gpu-build
    cmake -S "$REPO" -B "$b" -DCMAKE_BUILD_TYPE=Release -DPTERON_WITH_OPTIMIZED=OFF \
      -DPTERON_WITH_XNNPACK=OFF -DPTERON_THREADPOOL_IMPL=std -DPTERON_WITH_CUDA=ON \
      -DPTERON_CUDA_TRAIN=cu134 "-DPTERON_CUDA_FATBIN=$G/fallback/pteron_cuda_cu134.fatbin" \
      "-DPTERON_CUDA_INCLUDE_DIR=$G/fallback/cuda-include" "-DPTERON_FLATC=$G/fallback/flatc" \
      "-DPTERON_FLATBUFFERS_INCLUDE=$G/fallback/include" >/tmp/pteron-gpu-configure.log 2>&1 || {
      tail -n 20 /tmp/pteron-gpu-configure.log; exit 1; }
    cmake --build "$b" -j "$(nproc)" >/tmp/pteron-gpu-build.log 2>&1 || { tail -n 30 /tmp/pteron-gpu-build.log; exit 1; }
    run_bin="$b/pteron-run"
  fi
  timeout 290 python3 "$REPO/scripts/gpu_check.py" --payload "$G" --pteron-run "$run_bin" "$@"
else
  echo "usage: scripts/gpu_check.sh prepare | run [--fake-driver DIR]" >&2
  exit 2
fi
