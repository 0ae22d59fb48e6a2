#!/usr/bin/env bash
# Diagnose CPU against merge (issue 39; BENCHMARKS.md "Diagnose CPU against merge"): interleaved
# rounds of truffld-merge (from BUILD_A) and truffld-diagnose from BUILD_A and BUILD_B on the
# same 1.2 M-record bench dump, one thread each, CPU = user + sys from /usr/bin/time. Prints the
# medians and each diagnose's ratio to the merge, and any output file that differs between A and B.
#
# Usage: tests/bench/diagnose_cpu_ratio.sh ROUNDS BUILD_A BUILD_B WORK
#   BUILD_*: build folders holding merge/truffld-merge, diagnose/truffld-diagnose (and, in A,
#   tools/synth/truffld-synth); WORK: scratch folder (the dump and merge are kept there and reused).
set -euo pipefail
[[ $# -eq 4 ]] || { sed -n 2,10p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
rounds=$1 a=$2 b=$3 work=$4
mkdir -p "$work"
if [[ ! -d "$work/merged" ]]; then
  "$a/tools/synth/truffld-synth" --preset bench --events 1200000 --seed 1 -o "$work/dump" -q
  "$a/merge/truffld-merge" "$work/dump" -o "$work/merged" -q --threads 1
fi
times="$work/times.txt"
: > "$times"
for i in $(seq "$rounds"); do
  rm -rf "$work/m" "$work/a" "$work/b"
  /usr/bin/time -f "merge %U %S" -a -o "$times" "$a/merge/truffld-merge" "$work/dump" -o "$work/m" -q --threads 1
  /usr/bin/time -f "A %U %S" -a -o "$times" "$a/diagnose/truffld-diagnose" "$work/merged" -o "$work/a" --llm off -q --threads 1
  /usr/bin/time -f "B %U %S" -a -o "$times" "$b/diagnose/truffld-diagnose" "$work/merged" -o "$work/b" --llm off -q --threads 1
  for f in diagnosis.jsonl requests.jsonl diagnosis.trace.json report.html; do
    cmp -s "$work/a/$f" "$work/b/$f" || echo "round $i: $f differs between A and B"
  done
  echo "round $i/$rounds: load $(cut -d' ' -f1-3 /proc/loadavg)"
done
python3 - "$times" <<'PY'
import statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    k, u, s = line.split()
    rows.setdefault(k, []).append((float(u), float(s)))
med = {k: st.median(u + s for u, s in v) for k, v in rows.items()}
for k, v in rows.items():
    cpu = [u + s for u, s in v]
    print(f"{k}: CPU {med[k]:.2f} s median ({min(cpu):.2f}-{max(cpu):.2f}), user {st.median(u for u, _ in v):.2f}, "
          f"sys {st.median(s for _, s in v):.2f}, {len(v)} rounds")
print(f"A/merge {med['A'] / med['merge']:.2f}x, B/merge {med['B'] / med['merge']:.2f}x")
PY
