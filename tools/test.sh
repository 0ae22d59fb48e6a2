#!/usr/bin/env bash
# Builds truffld and runs its test suite: the README's second command, and what CI runs.
#
# Usage: tools/test.sh [options]
#   --label RE     ctest label regex to run (default: all but gpu and bench)
#   --gpu          also run the gpu-labelled tests (needs an NVIDIA GPU and driver)
#   --asan         build in build-asan with AddressSanitizer + UndefinedBehaviorSanitizer
#   --no-fuzz      skip the bounded libFuzzer runs
#   --no-merge-asan  skip the merge suite rebuilt with AddressSanitizer + UBSan (in build-fuzz)
#   --no-inject-tsan skip the injector's tests rebuilt with ThreadSanitizer (build-tsan)
#   --fuzz-seconds N   seconds per fuzz target (default 30, or $TRUFFLD_FUZZ_SECONDS)
# Environment: TRUFFLD_BUILD_DIR (default build), TRUFFLD_SHARED_DATA (real traces; default
# ../shared/data beside the checkout; tests that need them skip when absent), JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

label_exclude='gpu|bench'
label_include=''
asan=0
fuzz=1
merge_asan=1
inject_tsan=1
fuzz_seconds=${TRUFFLD_FUZZ_SECONDS:-30}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --label) label_include=$2; shift 2 ;;
    --gpu) label_exclude='bench'; shift ;;
    --asan) asan=1; shift ;;
    --no-fuzz) fuzz=0; shift ;;
    --no-merge-asan) merge_asan=0; shift ;;
    --no-inject-tsan) inject_tsan=0; shift ;;
    --fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

tools/bootstrap.sh
# A test dependency outside Debian (the trace viewer test): fail now, saying how, not later.
tools/fetch-speedscope.sh || { echo "test.sh: speedscope is needed by diagnose_trace_viewer (see above)" >&2; exit 1; }
jobs=${JOBS:-$(nproc)}
build=${TRUFFLD_BUILD_DIR:-build}
extra=()
if [[ $asan -eq 1 ]]; then
  build=${TRUFFLD_BUILD_DIR:-build-asan}
  extra+=(-DTRUFFLD_SANITIZE=ON -DTRUFFLD_BUILD_BENCHMARKS=OFF)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
[[ -n "${TRUFFLD_SHARED_DATA:-}" ]] && extra+=(-DTRUFFLD_SHARED_DATA="$TRUFFLD_SHARED_DATA")
# The Google Benchmark executables serve only bench-labelled tests: built when those run.
if [[ "$label_include" == *bench* ]]; then extra+=(-DTRUFFLD_BUILD_BENCHMARKS=ON); else extra+=(-DTRUFFLD_BUILD_BENCHMARKS=OFF); fi
# Line tables, not full debug info: a failure's backtrace keeps its lines, and a clean build (CI)
# takes a third less time. Every build this script makes uses it (run-fuzz.sh too).
export TRUFFLD_DEBUG_FLAGS="-O2 -g1 -DNDEBUG"
extra+=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$TRUFFLD_DEBUG_FLAGS" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$TRUFFLD_DEBUG_FLAGS")

echo "== configure ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${extra[@]}" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
grep '^-- truffld:' "$build.configure.log" || true
echo "== build (-j$jobs)"
cmake --build "$build" -j"$jobs"
echo "== test"
ctest_args=(--test-dir "$build" --output-on-failure -j"$jobs" --timeout 900 --no-tests=error)
if [[ -n "$label_include" ]]; then ctest_args+=(-L "$label_include"); fi
ctest_args+=(-LE "$label_exclude")
ctest "${ctest_args[@]}"

# The merge suite (unit, real traces, CLI golden/hostile input) again under ASan + UBSan: merge
# reads untrusted input, so every run proves it stays clean there. It is built in the fuzzers'
# build (build-fuzz: clang, AddressSanitizer + UBSan on every library), so the sanitized libraries
# are compiled once for both.
if [[ ($merge_asan -eq 1 || $fuzz -eq 1) && $asan -eq 0 && -z "$label_include" && -x tools/run-fuzz.sh ]]; then
  echo "== sanitized build (build-fuzz): the fuzzers and the merge suite"
  also=()
  [[ $merge_asan -eq 1 ]] && also=(merge_unit_test merge_realdata_test truffld-merge)
  TRUFFLD_FUZZ_ALSO="${also[*]}" JOBS=$jobs tools/run-fuzz.sh --build-only
fi
if [[ $merge_asan -eq 1 && $asan -eq 0 && -z "$label_include" ]]; then
  echo "== merge tests under AddressSanitizer + UBSan (build-fuzz)"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  build-fuzz/tests/merge/merge_unit_test --gtest_brief=1
  TRUFFLD_SHARED_DATA=${TRUFFLD_SHARED_DATA:-$PWD/../shared/data} build-fuzz/tests/merge/merge_realdata_test --gtest_brief=1
  ctest --test-dir build-fuzz --output-on-failure -R '^merge_cli_' --no-tests=error
fi

# The injector's unit and integration tests again under ThreadSanitizer: the injector runs on
# the application's threads, so every run proves its hand-offs race-free. Lifecycle's fork test
# is left out: ThreadSanitizer cannot follow a thread started in the child of a multi-threaded
# fork ("dup thread with used id").
if [[ $inject_tsan -eq 1 && $asan -eq 0 && -z "$label_include" ]] &&
   grep -q 'building libcupti_injector.so' "$build.configure.log"; then
  echo "== injector tests under ThreadSanitizer (build-tsan)"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRUFFLD_TSAN=ON -DTRUFFLD_BUILD_BENCHMARKS=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$TRUFFLD_DEBUG_FLAGS" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$TRUFFLD_DEBUG_FLAGS" \
    >build-tsan.configure.log 2>&1 || { cat build-tsan.configure.log; exit 1; }
  tsan_tests=(truffld_inject_unit_test truffld_inject_nvtx_test truffld_inject_lifecycle_test truffld_inject_cupti_replay_test)
  cmake --build build-tsan -j"$jobs" --target "${tsan_tests[@]}"
  for t in "${tsan_tests[@]}"; do
    TSAN_OPTIONS=${TSAN_OPTIONS:-die_after_fork=0:halt_on_error=1} \
      build-tsan/tests/inject/"$t" --gtest_brief=1 --gtest_filter=-Lifecycle.ForkGivesTheChildItsOwnFile
  done
fi

if [[ $fuzz -eq 1 && $asan -eq 0 && -z "$label_include" && -x tools/run-fuzz.sh ]]; then
  echo "== fuzz (${fuzz_seconds}s per target)"
  tools/run-fuzz.sh "$fuzz_seconds"
fi
echo "== all tests passed"
