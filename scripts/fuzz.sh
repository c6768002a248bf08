#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...] - one coverage-guided
# fuzzing campaign of TARGET (program, xnnpack_blob, cuda_blob, npy or
# python; tests/fuzz/README.md says what each one reads).
#
# 1. Installs clang-14 and libFuzzer (Debian's libclang-rt-14-dev) and the
#    cu134 train's driver API headers (backend_cuda needs them; no nvcc).
# 2. Builds build-fuzz/ (PTERON_FUZZ_BUILD_DIR overrides) with clang,
#    -fsanitize=fuzzer-no-link,address,undefined on every library: the
#    runtime, the portable, optimized and quantized kernels, the std::thread
#    pool, the XNNPACK delegate on pteron's own kernels (no XNNPACK library)
#    and the CUDA delegate without device code (on this machine, with no
#    driver, its init ends at the driver check, after its blob is read), and
#    the Python module's extension. The python target runs
#    tests/fuzz/fuzz_python.py under atheris (pip), with clang-14's ASan
#    runtime and libFuzzer preloaded into the interpreter as one library
#    (build-fuzz/pteron-fuzz-python, a wrapper this script writes, is its
#    command). Leak checking is off for
#    it: the interpreter's own allocations at exit would be reported.
# 3. Seeds the target from the fixtures (tests/fuzz/seeds.py) and the kept
#    corpus tests/corpus/TARGET/, with the dictionary tests/fuzz/TARGET.dict
#    (plus tests/fuzz/flatbuffers.dict for the flatbuffer readers).
# 4. Runs libFuzzer for SECONDS in fork mode, going on after each failure.
#    Failures: a sanitizer report or broken contract (crash), an input over
#    2 s (timeout), a leak, over 2 GiB resident or one malloc over 2 GiB (oom).
# 5. Minimizes each failing input and keeps it as
#    tests/corpus/TARGET/<kind>-<sha1>: CI replays that folder under ASan+UBSan
#    (tests/test_fuzz_corpus.py), so a fixed failure stays fixed.
# 6. Keeps a size-bounded, coverage-minimized corpus beside them (cov-<sha1>).
# 7. Prints a summary line: seconds, executions, executions per second,
#    coverage (edges) after the seeds and at the end, failures by kind; it is
#    also written to build-fuzz/TARGET.summary.
# A campaign that never reaches fuzzing (no status line in its log: the
# harness failed to start) or whose merge gives nothing exits 1 before
# tests/corpus/TARGET/ is touched.
# SECONDS=0 fuzzes nothing: it repeats steps 5-7 on the last campaign's
# artifacts and log (for a campaign whose script was stopped); SECONDS is at
# most 604800 (a week).
# Two campaigns may run at once (one per core) in the same build folder once
# it is built: PTERON_FUZZ_NO_BUILD=1 skips step 2.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO"
usage="usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]; TARGET: program, xnnpack_blob, cuda_blob, npy or python"
if [ $# -lt 2 ]; then echo "$usage" >&2; exit 2; fi
target="$1" seconds="$2"
shift 2
case "$target" in program | xnnpack_blob | cuda_blob | npy | python) ;; *) echo "$usage" >&2; exit 2 ;; esac
case "$seconds" in '' | *[!0-9]*) echo "$usage (SECONDS: a whole number)" >&2; exit 2 ;; esac
if [ "${#seconds}" -gt 7 ] || [ "$((10#$seconds))" -gt 604800 ]; then
  echo "$usage (SECONDS: at most 604800, a week)" >&2; exit 2
fi
seconds=$((10#$seconds))

build="${PTERON_FUZZ_BUILD_DIR:-$REPO/build-fuzz}"
bin="$build/pteron-fuzz-$target"
if [ "${PTERON_FUZZ_NO_BUILD:-0}" != 1 ]; then
  pteron_install_apt clang-14 libclang-rt-14-dev llvm-14 ninja-build cmake \
    libflatbuffers-dev flatbuffers-compiler libeigen3-dev python3-venv
  pteron_install_venv
  pteron_install_cuda_train cu134
  echo "==> building $build (clang-14, libFuzzer + ASan + UBSan)"
  pteron_build "$build" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    -DPTERON_FUZZ=ON -DPTERON_SANITIZE=address,undefined -DPTERON_BUILD_TOOLS=OFF \
    -DPTERON_WITH_THREADPOOL=ON -DPTERON_THREADPOOL_IMPL=std \
    -DPTERON_WITH_XNNPACK=ON -DPTERON_XNNPACK_LIBRARY=OFF \
    -DPTERON_WITH_CUDA=ON "-DPTERON_CUDA_INCLUDE_DIR=$PTERON_CUDA_INCLUDE_DIR" \
    -DPTERON_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$VENV/bin/python"
fi
if [ "$target" = python ] && ! "$VENV/bin/python" -c "import atheris" 2>/dev/null; then
  echo "==> installing atheris into $VENV (the python target's fuzzing engine)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check atheris==3.0.0
fi
if [ "$target" = python ]; then
  # The package as the harness imports it: python/pteron plus the fuzz build's extension
  # (it finds the runtime in $build through its build RUNPATH, the components beside it).
  stage="$build/python-stage"
  rm -rf "$stage" && mkdir -p "$stage"
  cp -r "$REPO/python/pteron" "$stage/"
  cp "$build"/python/_pteron*.so "$stage/pteron/"
  # The sanitizer runtime the interpreter preloads: clang-14's ASan (with UBSan's C++ part,
  # which the fuzz build's -fsanitize=vptr checks call; atheris's own runtime lacks it) and
  # libFuzzer, in one shared library. Its preinit object is left out (a DSO may have none).
  asan_rt="$build/asan_with_fuzzer.so"
  rt_dir="$(dirname "$(clang-14 -print-file-name=libclang_rt.asan-x86_64.a)")"
  rt_tmp="$(mktemp -d)"
  cp "$rt_dir/libclang_rt.asan-x86_64.a" "$rt_tmp/asan.a"
  ar d "$rt_tmp/asan.a" asan_preinit.cpp.o
  clang++-14 -shared -o "$asan_rt" -Wl,--whole-archive "$rt_tmp/asan.a" \
    "$rt_dir/libclang_rt.asan_cxx-x86_64.a" "$rt_dir/libclang_rt.fuzzer_no_main-x86_64.a" \
    -Wl,--no-whole-archive -ldl -lpthread -lrt -lm
  rm -rf "$rt_tmp"
  # libFuzzer starts its child processes (fork mode, -merge, -minimize_crash) by running its
  # argv[0]: the harness hands it this wrapper's path (PTERON_FUZZ_ARGV0).
  cat > "$bin" <<WRAP
#!/bin/sh
export LD_PRELOAD="$asan_rt" PYTHONPATH="$stage" PTERON_FUZZ_ARGV0="$bin"
export ASAN_OPTIONS="\${ASAN_OPTIONS:-}:detect_leaks=0"
exec "$VENV/bin/python" "$REPO/tests/fuzz/fuzz_python.py" "\$@"
WRAP
  chmod +x "$bin"
fi
if [ ! -x "$bin" ]; then
  echo "scripts/fuzz.sh: $bin was not built (is its backend part of the build?)" >&2
  exit 1
fi

seeds="$build/seeds/$target" work="$build/corpus/$target" art="$build/artifacts/$target"
kept="$REPO/tests/corpus/$target"
[ "$seconds" -gt 0 ] && rm -rf "$seeds" "$art"
mkdir -p "$seeds" "$work" "$art" "$kept"
python3 "$REPO/tests/fuzz/seeds.py" "$target" "$seeds"
dict="$build/$target.dict"
# The python target reads programs: the program target's dictionary, and its kept corpus too.
dict_of="$target" extra_seeds=()
[ "$target" = python ] && dict_of=program extra_seeds=("$REPO/tests/corpus/program")
cat "$REPO/tests/fuzz/$dict_of.dict" > "$dict"
[ "$target" != npy ] && cat "$REPO/tests/fuzz/flatbuffers.dict" >> "$dict"

# The same settings as the corpus replay (tests/test_fuzz_corpus.py): a
# failed allocation must be an out-of-memory error status, so ASan returns
# NULL rather than aborting; libFuzzer's own -malloc_limit_mb reports any
# single request over 2 GiB. One thread: the pool's workers add nothing to
# what a reader does, and the campaign keeps one core.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export PTERON_NUM_THREADS=1
log="$build/$target.log"
if [ "$seconds" -eq 0 ] && [ ! -f "$log" ]; then
  echo "scripts/fuzz.sh: SECONDS=0 repeats the last campaign's steps 5-7, but $log does not exist: no campaign of $target ran in $build" >&2
  exit 1
fi
if [ "$seconds" -gt 0 ]; then
  echo "==> fuzzing $target for $seconds s (log: $log)"
  set +e
  "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$seconds" -timeout=2 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -dict="$dict" -artifact_prefix="$art/" -print_final_stats=1 "$@" \
    "$work" "$seeds" "$kept" "${extra_seeds[@]}" > "$log" 2>&1
  rc=$?
  set -e
  echo "==> libFuzzer exited with $rc"
fi
# A campaign that never fuzzed (its target failed to start, say) has no status line: stop
# before the kept corpus is touched.
if ! grep -q -E '^#[0-9]+: cov: ' "$log"; then
  echo "scripts/fuzz.sh: the $target campaign never reached fuzzing (no status line in $log); tests/corpus/$target is left as it is. The log ends:" >&2
  tail -n 15 "$log" >&2
  exit 1
fi

# Minimize each failing input and keep it (named by kind and content).
new=0
for f in "$art"/*; do
  [ -f "$f" ] || continue
  case "$(basename "$f")" in min.*) continue ;; esac
  kind="$(basename "$f" | cut -d- -f1)"  # crash, timeout, leak, oom, slow-unit
  [ "$kind" = slow ] && continue
  min="$art/min.$(basename "$f")"
  "$bin" -minimize_crash=1 -max_total_time=60 -timeout=2 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -exact_artifact_path="$min" "$f" > "$min.log" 2>&1 || true
  [ -s "$min" ] || cp "$f" "$min"
  name="$kind-$(sha1sum "$min" | cut -c1-16)"
  if [ ! -e "$kept/$name" ]; then
    cp "$min" "$kept/$name"
    new=$((new + 1))
    echo "    kept $kind input: tests/corpus/$target/$name ($(stat -c %s "$min") bytes)"
  fi
done

# The coverage corpus kept for CI's replay: the campaign's corpus merged to
# a coverage-minimal set (-merge=1), then its smallest inputs up to
# PTERON_FUZZ_KEEP_KB (default 256) KiB, as tests/corpus/TARGET/cov-<sha1>
# (replacing the previous campaign's).
keep_kb="${PTERON_FUZZ_KEEP_KB:-256}"
merged="$build/merged/$target"
rm -rf "$merged" && mkdir -p "$merged"
"$bin" -merge=1 -timeout=2 -rss_limit_mb=2048 -malloc_limit_mb=2048 "$merged" "$work" \
  > "$build/$target.merge.log" 2>&1 || true
if [ -z "$(find "$merged" -type f -print -quit)" ]; then
  echo "scripts/fuzz.sh: merging the $target corpus gave nothing (log: $build/$target.merge.log); tests/corpus/$target/cov-* are left as they are" >&2
  exit 1
fi
rm -f "$kept"/cov-*
budget=$((keep_kb * 1024)) used=0 ncov=0
while read -r size f; do
  [ $((used + size)) -gt "$budget" ] && break
  cp "$f" "$kept/cov-$(sha1sum "$f" | cut -c1-16)"
  used=$((used + size)) ncov=$((ncov + 1))
done < <(find "$merged" -type f -printf '%s %p\n' | sort -n)
echo "    kept $ncov coverage inputs ($used bytes) of $(find "$merged" -type f | wc -l) merged"

# Coverage after the seeds (the first status line) and at the end (the last).
first="$(grep -m1 -E '^#[0-9]+: cov: ' "$log" || true)"
last="$(grep -E '^#[0-9]+: cov: ' "$log" | tail -n 1 || true)"
field() { echo "$2" | sed -nE "s|.*$1:? ([0-9]+).*|\\1|p"; }
execs="$(echo "$last" | sed -nE 's/^#([0-9]+):.*/\1/p')"
summary="target=$target seconds=$seconds execs=${execs:-?} exec_per_s=$(field 'exec/s' "$last")"
summary+=" cov_start=$(field cov "$first") cov_end=$(field cov "$last")"
summary+=" oom/timeout/crash=$(echo "$last" | sed -nE 's/.*oom\/timeout\/crash: ([0-9\/]+).*/\1/p')"
summary+=" artifacts=$(find "$art" -maxdepth 1 -type f ! -name 'min.*' ! -name '*.log' | wc -l) kept_new=$new"
summary+=" coverage_kept=$ncov"
echo "$summary" | tee "$build/$target.summary"
