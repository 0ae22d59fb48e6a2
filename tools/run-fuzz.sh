#!/usr/bin/env bash
# Builds truffld's libFuzzer targets with clang and runs each for a bounded time.
#
# Usage: tools/run-fuzz.sh [--build-only] [SECONDS]   (default 60 seconds per fuzz target)
#   tools/run-fuzz.sh            # every tests/fuzz/*_fuzz.cc, one minute each (what CI runs)
#   tools/run-fuzz.sh 10         # quick local check
#   FUZZ_TARGETS=kineto_fuzz tools/run-fuzz.sh 300   # one target, five minutes
# What it does: configures build-fuzz/ (or $TRUFFLD_FUZZ_BUILD) with clang++,
# -DTRUFFLD_FUZZ=ON and -fsanitize=fuzzer-no-link,address,undefined on every library; builds
# the fuzzers; copies the committed seeds tests/fuzz/corpus/<target minus _fuzz>/ into a
# working corpus build-fuzz/fuzz-corpus/<target>/ (kept between runs, so it grows); runs each
# target with -max_total_time=SECONDS and its dictionary tests/fuzz/<name>.dict when present.
# Exit status: 0 when no target crashed; 1 otherwise, naming the crashing input
# (build-fuzz/fuzz-artifacts/<target>-crash-*) and how to reproduce it.
# --build-only: configure and build, run nothing (tools/test.sh builds the merge tests here too).
# Environment: CXX / CC (default clang++ / clang, then clang++-14 / clang-14), JOBS (default 2),
# TRUFFLD_FUZZ_ALSO (more targets to build in the same sanitized build, e.g. merge_unit_test).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in -h|--help) sed -n '2,18p' "$0"; exit 0 ;; esac
build_only=0
if [[ "${1:-}" == --build-only ]]; then build_only=1; shift; fi
seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "run-fuzz.sh: SECONDS must be an integer, got '$seconds'" >&2; exit 2; }
build=${TRUFFLD_FUZZ_BUILD:-build-fuzz}
jobs=${JOBS:-2}

pick() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 && { echo "$c"; return; }; done; }
cxx=${CXX:-$(pick clang++ clang++-14)}
cc=${CC:-$(pick clang clang-14)}
if [[ -z "$cxx" || -z "$cc" ]]; then
  echo "run-fuzz.sh: clang is needed for libFuzzer (Debian: clang, libclang-rt-14-dev)" >&2
  exit 1
fi

targets=()
if [[ -n "${FUZZ_TARGETS:-}" ]]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  for f in tests/fuzz/*_fuzz.cc; do [[ -e "$f" ]] && targets+=("$(basename "$f" .cc)"); done
fi
if [[ ${#targets[@]} -eq 0 ]]; then echo "run-fuzz.sh: no tests/fuzz/*_fuzz.cc" >&2; exit 1; fi

echo "== configure $build ($cxx)"
shared=()  # real traces for the merge tests built here too (tools/test.sh)
[[ -n "${TRUFFLD_SHARED_DATA:-}" ]] && shared=(-DTRUFFLD_SHARED_DATA="$TRUFFLD_SHARED_DATA")
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_C_FLAGS="$san" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${TRUFFLD_DEBUG_FLAGS:--O2 -g1 -DNDEBUG}" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="${TRUFFLD_DEBUG_FLAGS:--O2 -g1 -DNDEBUG}" \
  -DTRUFFLD_FUZZ=ON -DTRUFFLD_BUILD_BENCHMARKS=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON "${shared[@]}" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
read -r -a also <<<"${TRUFFLD_FUZZ_ALSO:-}"
echo "== build ${targets[*]} ${also[*]} (-j$jobs)"
cmake --build "$build" -j"$jobs" --target "${targets[@]}" "${also[@]}"
[[ $build_only -eq 1 ]] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/fuzz-artifacts"
failed=()
for t in "${targets[@]}"; do
  bin=$(find "$build" -type f -name "$t" -perm -u+x | head -n 1)
  [[ -n "$bin" ]] || { echo "run-fuzz.sh: $t was not built" >&2; failed+=("$t"); continue; }
  seeds=tests/fuzz/corpus/${t%_fuzz}
  corpus=$build/fuzz-corpus/$t
  mkdir -p "$corpus"
  [[ -d "$seeds" ]] && cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build/fuzz-artifacts/$t-")
  dict=tests/fuzz/${t%_fuzz}.dict
  [[ -f "$dict" ]] && args+=(-dict="$dict")
  echo "== fuzz $t for ${seconds}s (corpus $corpus: $(ls "$corpus" | wc -l) inputs)"
  if ! "$bin" "${args[@]}" "$corpus" >"$build/fuzz-$t.log" 2>&1; then
    tail -n 60 "$build/fuzz-$t.log"
    echo "run-fuzz.sh: $t FAILED; reproduce with: $bin $build/fuzz-artifacts/$t-<crash file>" >&2
    failed+=("$t")
  else
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$build/fuzz-$t.log" || true
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "== fuzz failures: ${failed[*]}" >&2
  exit 1
fi
echo "== fuzz: ${#targets[@]} target(s) ran ${seconds}s each without a crash"
