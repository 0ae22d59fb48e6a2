#!/usr/bin/env bash
# Compares the outputs of two truffld-diagnose binaries byte for byte on the inputs that define
# "unchanged": the demo (with its labels), a truffld-synth run of the small and suite presets
# (suite also in two TP2 x PP2 and communication-fault shapes), every trace in ../shared/data,
# every run in tests/data/real_engine, and the legacy mixture modes (pooled, within-step,
# reference) on the small preset, and --export-tests/--export-features on some of them. Each input
# is merged once with MERGE; both binaries diagnose the same trees with --llm off.
# Compared: diagnosis.jsonl, report.html, diagnosis.trace.json, metrics.json (when labelled), the
# exports, stats.json without its "seconds" (a measurement) and stdout without its timing line.
# Prints one line per input ("same" or "DIFFERS: file...") and exits 1 when any differs.
#
# Usage: tools/compare-diagnose.sh REF_DIAGNOSE NEW_DIAGNOSE [MERGE] [SYNTH] [WORKDIR]
#   REF_DIAGNOSE, NEW_DIAGNOSE  the two truffld-diagnose binaries (e.g. a saved copy and build/)
#   MERGE, SYNTH   truffld-merge and truffld-synth (default: the build beside NEW_DIAGNOSE)
#   WORKDIR        scratch folder (default: a fresh mktemp -d, removed at the end); merged
#                  inputs are kept there between runs when it is given
# Environment: TRUFFLD_SHARED_DATA (default ../shared/data beside the checkout; its traces are
# skipped with a line saying so when absent), DIAG_ARGS (extra flags for both diagnoses).
set -euo pipefail
cd "$(dirname "$0")/.."
ref=$(readlink -f "$1")
new=$(readlink -f "$2")
build=$(dirname "$new")/..
merge=$(readlink -f "${3:-$build/merge/truffld-merge}")
synth=$(readlink -f "${4:-$build/tools/synth/truffld-synth}")
work=${5:-}
cleanup=0
if [[ -z "$work" ]]; then work=$(mktemp -d); cleanup=1; fi
mkdir -p "$work"
work=$(readlink -f "$work")
data=${TRUFFLD_SHARED_DATA:-$PWD/../shared/data}
read -r -a extra <<<"${DIAG_ARGS:-}"

# merged/<name>: trees of one input, made once. Each entry of `cases` is "name|diagnose flags".
cases=()
merge_once() {  # name, then merge inputs
  local name=$1; shift
  local out="$work/merged/$name"
  if [[ ! -f "$out/trees.jsonl" ]]; then
    rm -rf "$out"
    "$merge" "$@" -o "$out" -q 2>"$work/merge-$name.stderr" || {
      echo "note: merge of $name failed (exit $?): $(head -c 300 "$work/merge-$name.stderr")"
      return 1
    }
  fi
}
synth_once() {  # name, then truffld-synth flags
  local name=$1; shift
  if [[ ! -d "$work/synth/$name" ]]; then "$synth" "$@" --out "$work/synth/$name" >/dev/null; fi
}

mkdir -p "$work/synth" "$work/merged"
synth_once demo --preset demo
synth_once small --preset small --seed 7
synth_once suite --preset suite --seed 7
synth_once suite-pp --preset suite --seed 3 --pp 2
synth_once suite-comm --preset suite --seed 5 --faults communication --comm-scopes rank,link
for s in demo small suite suite-pp suite-comm; do
  merge_once "synth-$s" "$work/synth/$s" && cases+=("synth-$s|--labels $work/synth/$s/labels.jsonl")
done
cases+=("synth-demo|--export-tests $work/out/tests.csv --export-features $work/out/features.csv")
cases+=("synth-small|--export-features $work/out/features.jsonl")
for m in pooled within-step; do cases+=("synth-small|--mode $m --export-features $work/out/features.csv"); done
cases+=("synth-small|--mode reference --reference $work/merged/synth-small")
for d in tests/data/real_engine/*/; do
  name=engine-$(basename "$d")
  merge_once "$name" "$d" && cases+=("$name|")
done
if [[ -d "$data" ]]; then
  while IFS= read -r f; do
    name=shared-$(basename "$f")
    merge_once "$name" "$f" && cases+=("$name|")
  done < <(find "$data" -type f \( -name '*.gz' -o -name '*.json' -o -name '*.sqlite' -o -name '*.jsonl' -o -name '*.zst' \) | sort)
else
  echo "skipped: $data is absent (no real traces compared)"
fi

status=0
n=0
for c in "${cases[@]}"; do
  name=${c%%|*}
  read -r -a flags <<<"${c#*|}"
  n=$((n + 1))
  for side in ref new; do
    bin=$ref; [[ $side == new ]] && bin=$new
    rm -rf "$work/$side" "$work/out"
    # One output path for both sides: outputs that name it stay comparable.
    "$bin" "$work/merged/$name" -o "$work/out" --llm off --threads 2 "${flags[@]}" "${extra[@]}" \
      >"$work/$side.stdout" 2>"$work/$side.stderr" || echo "exit $? from $side" >>"$work/$side.stderr"
    mv "$work/out" "$work/$side" 2>/dev/null || mkdir -p "$work/$side"
    grep -v '^Stage II: ' "$work/$side.stdout" >"$work/$side.stdout.cmp" || true
    if [[ -f "$work/$side/stats.json" ]]; then
      grep -v '^  "seconds": ' "$work/$side/stats.json" >"$work/$side/stats.cmp"
    fi
  done
  diffs=()
  for f in diagnosis.jsonl report.html diagnosis.trace.json metrics.json stats.cmp tests.csv features.csv features.jsonl; do
    [[ -e "$work/ref/$f" || -e "$work/new/$f" ]] || continue
    if ! cmp -s "$work/ref/$f" "$work/new/$f"; then diffs+=("$f"); fi
  done
  cmp -s "$work/ref.stdout.cmp" "$work/new.stdout.cmp" || diffs+=("stdout")
  cmp -s "$work/ref.stderr" "$work/new.stderr" || diffs+=("stderr")
  if [[ ${#diffs[@]} -eq 0 ]]; then
    echo "same: $name ${flags[*]}"
  else
    echo "DIFFERS: $name ${flags[*]}: ${diffs[*]}"
    status=1
  fi
done
echo "compared $n case(s)"
if [[ $cleanup -eq 1 ]]; then rm -rf "$work"; fi
exit $status
