#!/usr/bin/env bash
# The README's demo: a small 4-rank trace with a few injected faults, merged and diagnosed
# offline, then the diagnosed abnormal steps printed next to the injected ground truth.
#   tools/eval/demo.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, /tmp/truffld-demo)
# OUT_DIR must be new, empty or made by an earlier demo (tools/lib/demo_out.sh); else exit 2.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-/tmp/truffld-demo}
source "$ROOT/tools/lib/demo_out.sh"
demo_prepare_out "$OUT"
"$BUILD/tools/synth/truffld-synth" --preset demo --out "$OUT/dump"
"$BUILD/merge/truffld-merge" "$OUT"/dump/truffld-*.jsonl -o "$OUT/merged" -q
"$BUILD/diagnose/truffld-diagnose" "$OUT/merged" -o "$OUT/diag" --llm off --labels "$OUT/dump/labels.jsonl" -q
/usr/bin/python3 "$ROOT/tools/eval/compare.py" "$OUT/dump" "$OUT/diag"
