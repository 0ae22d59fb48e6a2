#!/usr/bin/env bash
# Compares the outputs of two truffld-merge binaries byte for byte on the inputs that define
# "unchanged": the committed golden dump, every file in ../shared/data (skipped with a line
# saying so when absent) and a truffld-synth dump of each preset (demo, small, suite, and bench
# at 200,000 events). summary.json is compared without its wall_seconds line (a measurement).
# Prints one line per input ("same" or "DIFFERS: file...") and exits 1 when any differs.
#
# Usage: tools/compare-merge.sh REF_MERGE NEW_MERGE [SYNTH] [WORKDIR]
#   REF_MERGE, NEW_MERGE  the two truffld-merge binaries (e.g. a build of c15db1f and build/)
#   SYNTH                 truffld-synth used to make the preset dumps (default: beside NEW_MERGE)
#   WORKDIR               scratch folder (default: a fresh mktemp -d, removed at the end)
# Environment: TRUFFLD_SHARED_DATA (default ../shared/data beside the checkout), MERGE_ARGS
# (extra flags for both merges, e.g. "--threads 1").
set -euo pipefail
cd "$(dirname "$0")/.."
ref=$(readlink -f "$1")
new=$(readlink -f "$2")
synth=${3:-$(dirname "$new")/../tools/synth/truffld-synth}
work=${4:-}
cleanup=0
if [[ -z "$work" ]]; then work=$(mktemp -d); cleanup=1; fi
mkdir -p "$work"
data=${TRUFFLD_SHARED_DATA:-$PWD/../shared/data}
read -r -a extra <<<"${MERGE_ARGS:-}"

inputs=("$PWD/tests/merge/golden")
if [[ -d "$data" ]]; then
  while IFS= read -r f; do inputs+=("$f"); done < <(find "$data" -type f \( -name '*.gz' -o -name '*.json' -o -name '*.sqlite' -o -name '*.jsonl' -o -name '*.zst' \) | sort)
else
  echo "skipped: $data is absent (no real traces compared)"
fi
if [[ -x "$synth" ]]; then
  for preset in demo small suite bench; do
    dir="$work/synth-$preset"
    if [[ ! -d "$dir" ]]; then
      args=(--preset "$preset" --seed 7 --out "$dir")
      [[ $preset == bench ]] && args+=(--events 200000)
      "$synth" "${args[@]}" >/dev/null
    fi
    inputs+=("$dir")
  done
else
  echo "skipped: no truffld-synth at $synth (no synthetic dumps compared)"
fi

status=0
n=0
for in in "${inputs[@]}"; do
  n=$((n + 1))
  for side in ref new; do
    bin=$ref; [[ $side == new ]] && bin=$new
    rm -rf "$work/$side"
    "$bin" "$in" -o "$work/$side" -q "${extra[@]}" 2>"$work/$side.stderr" || echo "exit $? from $side on $in" >>"$work/$side.stderr"
    if [[ -f "$work/$side/summary.json" ]]; then
      grep -v '"wall_seconds":' "$work/$side/summary.json" >"$work/$side/summary.cmp"
    fi
  done
  diffs=()
  for f in trees.jsonl trace.json summary.cmp; do
    if ! cmp -s "$work/ref/$f" "$work/new/$f"; then diffs+=("$f"); fi
  done
  if ! cmp -s "$work/ref.stderr" "$work/new.stderr"; then diffs+=("stderr"); fi
  if [[ ${#diffs[@]} -eq 0 ]]; then
    echo "same: $in"
  else
    echo "DIFFERS: $in: ${diffs[*]}"
    status=1
  fi
done
echo "compared $n input(s)"
if [[ $cleanup -eq 1 ]]; then rm -rf "$work"; fi
exit $status
