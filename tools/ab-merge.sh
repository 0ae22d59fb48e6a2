#!/usr/bin/env bash
# Interleaved A/B timing of truffld-merge binaries on one input: each round runs every binary
# once, in turn, so a busy or calm stretch of the host falls on all of them alike. Prints one
# line per run (CPU = user + sys seconds, wall seconds, peak RSS) and the medians per binary.
#
# Usage: tools/ab-merge.sh ROUNDS INPUT NAME=BINARY... [-- MERGE_FLAGS...]
#   e.g. tools/ab-merge.sh 7 /tmp/mb10m.jsonl ref=/work/ref/build/merge/truffld-merge \
#            new=build/merge/truffld-merge -- --threads 1
# Environment: AB_PIN (default "taskset -c 0": every run on one core; empty to not pin),
# AB_OUT (scratch output folder, default a mktemp -d under /var/tmp, removed at the end).
set -euo pipefail
rounds=$1
input=$2
shift 2
names=()
bins=()
while [[ $# -gt 0 && $1 != -- ]]; do
  names+=("${1%%=*}")
  bins+=("$(readlink -f "${1#*=}")")
  shift
done
[[ ${1:-} == -- ]] && shift
flags=("$@")
pin=${AB_PIN-taskset -c 0}
out=${AB_OUT:-$(mktemp -d /var/tmp/ab-merge.XXXXXX)}
declare -A samples
for ((r = 1; r <= rounds; r++)); do
  for i in "${!bins[@]}"; do
    rm -rf "$out/o"
    /usr/bin/time -o "$out/time" -f "%U %S %e %M" $pin "${bins[$i]}" "$input" -o "$out/o" -q "${flags[@]}" >/dev/null 2>&1
    read -r user sys wall rss <"$out/time"
    cpu=$(echo "$user + $sys" | bc)
    echo "round $r ${names[$i]}: cpu $cpu s (user $user, sys $sys), wall $wall s, peak $((rss / 1024)) MB"
    samples[${names[$i]}]+="$cpu $wall $rss
"
  done
done
for name in "${names[@]}"; do
  printf '%s' "${samples[$name]}" | sort -n | awk -v n="$name" '{c[NR]=$1} END {m=(NR%2)?c[(NR+1)/2]:(c[NR/2]+c[NR/2+1])/2; printf "%s: median cpu %.3f s over %d runs (min %.3f, max %.3f)\n", n, m, NR, c[1], c[NR]}'
  printf '%s' "${samples[$name]}" | sort -k2 -n | awk -v n="$name" '{w[NR]=$2} END {m=(NR%2)?w[(NR+1)/2]:(w[NR/2]+w[NR/2+1])/2; printf "%s: median wall %.3f s\n", n, m}'
  printf '%s' "${samples[$name]}" | sort -k3 -n | awk -v n="$name" '{r[NR]=$3} END {printf "%s: peak RSS %d-%d MB\n", n, r[1]/1024, r[NR]/1024}'
done
[[ -z ${AB_OUT:-} ]] && rm -rf "$out"
exit 0
