#!/usr/bin/env bash
# One command for truffld's evaluation: builds what is missing, runs the scenario suite through
# truffld-synth -> truffld-merge -> truffld-diagnose, scores truffld, its ablations and the
# scikit-learn baselines, measures speed, and rewrites BENCHMARKS.md.
#
#   tools/eval/run.sh [--quick] [--build DIR] [--work DIR] [--no-speed] [--no-report]
#                     [--speed-sizes N,M]
#
#   --quick      one seed, 60-step scenarios, trimmed baseline grids, 1 M-record speed run only
#   --build DIR  CMake build directory (default: build-eval; configured if needed)
#   --work DIR   scratch directory for dumps and results (default: /tmp/truffld-eval)
#   --no-speed   skip the speed benchmarks;  --no-report: leave BENCHMARKS.md alone
#   --speed-sizes record budgets of the generation/merge speed runs (default 1M,10M; --quick: 1M)
# Needs /usr/bin/python3 with python3-numpy and python3-sklearn (Debian), cmake, /usr/bin/time.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build-eval"
WORK=/tmp/truffld-eval
QUICK=""
SPEED=1
REPORT=1
SIZES=""
ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=--quick ;;
    --build) BUILD=$2; shift ;;
    --work) WORK=$2; shift ;;
    --no-speed) SPEED=0 ;;
    --no-report) REPORT=0 ;;
    --speed-sizes) SIZES="--sizes $2"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
targets=(truffld-synth)
grep -q "add_executable(truffld-merge" "$ROOT/merge/CMakeLists.txt" 2>/dev/null && [[ -f "$ROOT/merge/tools/main.cc" ]] && targets+=(truffld-merge)
grep -q "add_executable(truffld-diagnose" "$ROOT/diagnose/CMakeLists.txt" 2>/dev/null && [[ -f "$ROOT/diagnose/tools/main.cc" ]] && targets+=(truffld-diagnose)
# The injector's microbenchmarks exist when CUDA headers and libbenchmark-dev were found.
if [[ $SPEED == 1 ]] && grep -q "truffld_inject_bench" "$BUILD/Makefile" "$BUILD/build.ninja" 2>/dev/null; then
  targets+=(truffld_inject_bench)
fi
for t in "${targets[@]}"; do
  cmake --build "$BUILD" -j2 --target "$t" >/dev/null || echo "run.sh: building $t failed; continuing without it" >&2
done
mkdir -p "$WORK"
"$PY" "$ROOT/tools/eval/evaluate.py" --bin "$BUILD" --work "$WORK" $QUICK
if [[ $SPEED == 1 ]]; then
  TRUFFLD_SHARED_DATA=${TRUFFLD_SHARED_DATA:-$ROOT/../shared/data} "$PY" "$ROOT/tools/eval/speed.py" --bin "$BUILD" --work "$WORK/speed" $QUICK $SIZES
  cp "$WORK/speed/speed.json" "$WORK/speed.json"
fi
if [[ $REPORT == 1 ]]; then
  "$PY" "$ROOT/tools/eval/report.py" --work "$WORK" --out "$ROOT/BENCHMARKS.md" --command "tools/eval/run.sh${ORIG_ARGS:+ $ORIG_ARGS}" \
    --note "Built from commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)."
fi
