#!/usr/bin/env bash
# One command for truffld's evaluation: the synthetic suites through truffld-synth -> truffld-merge
# -> truffld-diagnose beside the scikit-learn baselines, false alarms on healthy workload shapes,
# verdicts on the real traces of ../shared/data, the cost of Stage I, the speed benchmarks, and
# BENCHMARKS.md rewritten from all of it (tools/eval/README.md describes each part).
#
#   tools/eval/run.sh [--quick] [--build DIR] [--work DIR] [--rebuild] [--no-speed] [--no-cost]
#                     [--no-report] [--speed-sizes N,M] [--cost-events N,M]
#
#   --quick        one seed, fewer healthy shapes, trimmed baseline grids, 1 M-record speed/cost runs
#   --build DIR    CMake build directory (default: build-eval; configured and built if a binary is missing)
#   --rebuild      bring truffld-synth/-merge/-diagnose in DIR up to date first (default: use them as they are)
#   --work DIR     scratch directory for dumps and results (default: /tmp/truffld-eval)
#   --no-speed, --no-cost: skip those parts;  --no-report: leave BENCHMARKS.md alone
#   --speed-sizes  record budgets of the generation/merge speed runs (default 1M,10M; --quick: 1M)
#   --cost-events  record budgets of the bench runs diagnosed for cost (default 1M,11M; --quick: 1M)
# The binaries are copied to WORK/bin first, so a rebuild during the run does not mix versions.
# A part that fails is logged (WORK/*.log) and its section says so; the others still run.
# Needs /usr/bin/python3 with python3-numpy and python3-sklearn (Debian), /usr/bin/time.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build-eval"
WORK=/tmp/truffld-eval
QUICK=""
SPEED=1 COST=1 REPORT=1 REBUILD=0
SIZES="" EVENTS=""
ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=--quick ;;
    --build) BUILD=$2; shift ;;
    --work) WORK=$2; shift ;;
    --rebuild) REBUILD=1 ;;
    --no-speed) SPEED=0 ;;
    --no-cost) COST=0 ;;
    --no-report) REPORT=0 ;;
    --speed-sizes) SIZES="--sizes $2"; shift ;;
    --cost-events) EVENTS="--events $2"; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
EVAL="$ROOT/tools/eval"
T0=$(date +%s)
declare -A BINS=([truffld-synth]=tools/synth [truffld-merge]=merge [truffld-diagnose]=diagnose)
for t in "${!BINS[@]}"; do
  if [[ $REBUILD == 1 || ! -x "$BUILD/${BINS[$t]}/$t" ]]; then
    [[ -f "$BUILD/CMakeCache.txt" ]] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    nice -n 10 cmake --build "$BUILD" -j2 --target "$t" >/dev/null || echo "run.sh: building $t failed" >&2
  fi
done
if [[ $SPEED == 1 && $REBUILD == 1 ]] && grep -q "truffld_inject_bench" "$BUILD/Makefile" "$BUILD/build.ninja" 2>/dev/null; then
  nice -n 10 cmake --build "$BUILD" -j2 --target truffld_inject_bench >/dev/null || echo "run.sh: building truffld_inject_bench failed" >&2
fi
mkdir -p "$WORK/bin"
for t in "${!BINS[@]}"; do
  mkdir -p "$WORK/bin/${BINS[$t]}"
  rm -f "$WORK/bin/${BINS[$t]}/$t"
  [[ -x "$BUILD/${BINS[$t]}/$t" ]] && cp "$BUILD/${BINS[$t]}/$t" "$WORK/bin/${BINS[$t]}/$t"
  "$WORK/bin/${BINS[$t]}/$t" --help >/dev/null 2>&1 || echo "run.sh: $WORK/bin/${BINS[$t]}/$t does not run (missing, or copied mid-build?)" >&2
done
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$ROOT" status --porcelain -- diagnose merge tools/synth common tools/common schemas 2>/dev/null | awk '{print $2}' | cut -d/ -f1-2 | sort -u | tr '\n' ' ')
BIN="$WORK/bin"

part() {  # part NAME CMD...: runs one part, logs its time and failure, never stops the run
  local name=$1; shift
  local t=$(date +%s)
  echo "== run.sh: $name" >&2
  "$@" || echo "run.sh: $name FAILED (exit $?); see $WORK/*.log" >&2
  echo "== run.sh: $name took $(( $(date +%s) - t )) s" >&2
  echo "$name $(( $(date +%s) - t ))" >> "$WORK/parts.txt"
}
rm -f "$WORK/parts.txt" "$WORK"/{results,healthy,real,engine,cost,speed}.json
export TRUFFLD_SHARED_DATA=${TRUFFLD_SHARED_DATA:-$ROOT/../shared/data}
part evaluate "$PY" "$EVAL/evaluate.py" --bin "$BIN" --work "$WORK" $QUICK
part healthy "$PY" "$EVAL/healthy.py" --bin "$BIN" --work "$WORK" $QUICK
part real-traces "$PY" "$EVAL/realtraces.py" --bin "$BIN" --work "$WORK" --data "$TRUFFLD_SHARED_DATA"
part engine-runs "$PY" "$EVAL/engine_runs.py" --bin "$BIN" --work "$WORK"
[[ $COST == 1 ]] && part cost "$PY" "$EVAL/cost.py" --bin "$BIN" --work "$WORK" $QUICK $EVENTS
if [[ $SPEED == 1 ]]; then
  part speed "$PY" "$EVAL/speed.py" --bin "$BIN" --inject-bin "$BUILD" --work "$WORK/speed" $QUICK $SIZES
  [[ -f "$WORK/speed/speed.json" ]] && cp "$WORK/speed/speed.json" "$WORK/speed.json"
fi
MIN=$(awk -v s=$(( $(date +%s) - T0 )) 'BEGIN { printf "%.1f", s / 60 }')
PARTS=$(awk '{printf "%s%s %d s", (NR>1?", ":""), $1, $2}' "$WORK/parts.txt")
echo "run.sh: done in $MIN min ($PARTS)" >&2
if [[ $REPORT == 1 ]]; then
  NOTE="Checkout at commit $COMMIT when the run started"
  [[ -n "$DIRTY" ]] && NOTE="$NOTE, with uncommitted changes in ${DIRTY% }"
  NOTE="$NOTE; binaries copied from $BUILD then"
  "$PY" "$EVAL/report.py" --work "$WORK" --out "$ROOT/BENCHMARKS.md" --command "tools/eval/run.sh${ORIG_ARGS:+ $ORIG_ARGS}" \
    --note "$NOTE." --runtime "the run took $MIN min: $PARTS"
fi
