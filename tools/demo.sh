#!/usr/bin/env bash
# The README's first command: builds truffld if needed, then runs the whole job end to end on
# the bundled default workload — truffld-synth writes a 4-rank, 2-host vLLM-like trace with a few
# injected faults, truffld-merge rebuilds the per-request call-chain trees, truffld-diagnose
# labels steps and operators (offline unless an LLM endpoint is configured), and the result is
# printed next to the injected ground truth.
#
# Usage: tools/demo.sh [OUT_DIR]    (default: out/demo in the checkout; a relative OUT_DIR is
#                                   taken from the current directory)
# OUT_DIR must be new, empty, or made by an earlier tools/demo.sh (it holds the marker file
# .truffld-demo); anything else is refused, so the demo never deletes what it did not create.
# A rerun replaces only the demo's own dump/, merged/ and diag/ in it.
# Environment: TRUFFLD_BUILD_DIR (default build), TRUFFLD_LLM_URL / TRUFFLD_LLM_MODEL (use an
# OpenAI-compatible endpoint for Stage II; key from TRUFFLD_LLM_API_KEY or OPENAI_API_KEY).
# Exit status: 0 success; 1 a step failed; 2 OUT_DIR refused (or a bad argument).
set -euo pipefail
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  -*) echo "demo.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
esac
if [[ $# -gt 1 ]]; then usage >&2; exit 2; fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m -- "${1:-$root/out/demo}")
source "$root/tools/lib/demo_out.sh"
demo_check_out "$out"   # before anything else: refuse a folder the demo did not make
cd "$root"
build=${TRUFFLD_BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}

tools/bootstrap.sh
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  echo "== configure ($build)"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
fi
echo "== build truffld-synth, truffld-merge, truffld-diagnose (-j$jobs)"
cmake --build "$build" -j"$jobs" --target truffld-synth truffld-merge truffld-diagnose >"$build.demo-build.log" 2>&1 ||
  { tail -50 "$build.demo-build.log"; exit 1; }

synth=$build/tools/synth/truffld-synth
merge=$build/merge/truffld-merge
diag=$build/diagnose/truffld-diagnose
demo_prepare_out "$out"

echo "== 1/3 generate: $synth --preset demo --out $out/dump"
"$synth" --preset demo --out "$out/dump"
echo
echo "== 2/3 merge: truffld-merge $out/dump/truffld-*.jsonl -o $out/merged"
"$merge" "$out"/dump/truffld-*.jsonl -o "$out/merged"
echo
llm=(--llm off)
if [[ -n "${TRUFFLD_LLM_URL:-}" ]]; then
  llm=(--llm auto --llm-url "$TRUFFLD_LLM_URL")
  [[ -n "${TRUFFLD_LLM_MODEL:-}" ]] && llm+=(--llm-model "$TRUFFLD_LLM_MODEL")
fi
echo "== 3/3 diagnose: truffld-diagnose $out/merged -o $out/diag ${llm[*]} --labels $out/dump/labels.jsonl"
"$diag" "$out/merged" -o "$out/diag" "${llm[@]}" --labels "$out/dump/labels.jsonl"
echo
echo "== diagnosis vs injected ground truth"
/usr/bin/python3 "$root/tools/eval/compare.py" "$out/dump" "$out/diag"
echo
echo "Outputs:"
echo "  raw dumps        $out/dump/ (ground truth: ledger.jsonl, labels.jsonl)"
echo "  call-chain trees $out/merged/trees.jsonl"
echo "  Perfetto trace   $out/merged/trace.json"
echo "  merge summary    $out/merged/summary.json"
echo "  run statistics   $out/merged/run_stats.json (kernel time, GPU idle, launch latency, overlap; also in report.html)"
echo "  diagnosis        $out/diag/diagnosis.jsonl, metrics: $out/diag/metrics.json"
[[ -f "$out/diag/report.html" ]] && echo "  HTML report      $out/diag/report.html"
[[ -f "$out/diag/diagnosis.trace.json" ]] &&
  echo "  trace + verdicts $out/diag/diagnosis.trace.json   (open in https://ui.perfetto.dev)"
exit 0
