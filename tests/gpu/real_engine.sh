#!/usr/bin/env bash
# truffld on a real serving engine: transformers' continuous-batching manager (tests/gpu/serve_cb.py)
# traced under the hooks and libcupti_injector.so, healthy and with real faults, then merged and
# diagnosed; Stage II pointed at an OpenAI-compatible endpoint backed by the same engine; and the
# capture overhead on that engine and on an eager PyTorch loop, settings interleaved.
#
# Usage: tests/gpu/real_engine.sh        (needs an NVIDIA GPU, torch with CUDA, transformers 5.x)
# Env:   TRUFFLD_GPU_OUT   where logs and the packed runs go (default $OUT, else /tmp/truffld-real)
#        TRUFFLD_GPU_WORK  scratch folder (default /tmp/truffld-real-work)
#        TRUFFLD_BIN       folder with prebuilt truffld-merge, truffld-diagnose (and lib/ for their
#                          shared libraries, libcupti_injector.so and libtruffld_pynvtx.so as a
#                          fallback when the injector cannot be built here); default <repo>/.devbin
#        TRUFFLD_GPU_ROUNDS   rounds of the overhead comparison (default 10)
#        TRUFFLD_GPU_SETTINGS capture settings it compares (default off,two-tier,all; see
#                             engine_overhead.py --help)
#        TRUFFLD_GPU_OVERHEAD what it times: comma list of engine (eager serving), graphs
#                             (serving with CUDA graphs), loop (eager PyTorch loop); default all
#        TRUFFLD_GPU_OVERHEAD_BUDGET  no overhead round starts after this many seconds
#        TRUFFLD_GPU_OVERHEAD_TIMEOUT seconds before the overhead phase is stopped (default 560)
#        TRUFFLD_GPU_LOOP_ITERS  iterations of the eager PyTorch loop (default 3000)
#        TRUFFLD_GPU_PHASES   comma list of runs,suite,stage2,overhead (default all; they run in that order)
#        TRUFFLD_GPU_RUN_SET  which traced runs: default (three healthy shapes and one with 2 ms
#                             delays, 16 MiB copies and contention), strong (one with 20 ms
#                             delays, 256 MiB copies and contention, and one more healthy run) or
#                             two-tier (a faulty eager run and a healthy CUDA-graph run traced
#                             with truffld-env's default detail windows)
#        PYTHON            python with torch and transformers (default python3)
# Writes into the output folder: real_engine.log (everything), gpu_suite.log (tests/gpu/run.sh),
# runs.tar (per run: dumps, truth.json, result.json, and the merged summary and diagnosis), and
# overhead.json. Exit status 0 when every phase that ran passed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUTDIR=${TRUFFLD_GPU_OUT:-${OUT:-/tmp/truffld-real}}
WORK=${TRUFFLD_GPU_WORK:-/tmp/truffld-real-work}
BIN=${TRUFFLD_BIN:-$ROOT/.devbin}
PY=${PYTHON:-python3}
ROUNDS=${TRUFFLD_GPU_ROUNDS:-10}
SETTINGS_LIST=${TRUFFLD_GPU_SETTINGS:-off,two-tier,all}
PHASES=",${TRUFFLD_GPU_PHASES:-suite,runs,stage2,overhead},"
GPU=$ROOT/tests/gpu
mkdir -p "$OUTDIR" "$WORK/bin" "$WORK/runs"
exec > >(tee -a "$OUTDIR/real_engine.log") 2>&1
status=0
say() { echo "== $(date +%H:%M:%S) $*"; }
http_get() {  # http_get PATH: true when the local endpoint answers 200 (no curl needed)
  "$PY" -c "import sys, urllib.request; urllib.request.urlopen('http://127.0.0.1:18080' + sys.argv[1], timeout=2)" \
    "$1" >/dev/null 2>&1
}

# Prebuilt merge and diagnose run with their own libraries beside them (glibc and libstdc++ are
# the machine's).
for tool in truffld-merge truffld-diagnose; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/%s "$@"\n' "$BIN" "$BIN" "$tool" >"$WORK/bin/$tool"
  chmod +x "$WORK/bin/$tool"
done
MERGE=$WORK/bin/truffld-merge DIAG=$WORK/bin/truffld-diagnose
"$MERGE" --version || { echo "truffld-merge does not run here"; status=1; }

say "machine"
nvidia-smi -L
"$PY" - <<'EOF'
import inspect, torch, transformers
print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)
from transformers.generation.continuous_batching import continuous_api as c
for cls in ("ContinuousBatchProcessor", "ContinuousBatchingManager"):
    k = getattr(c, cls, None)
    print(cls, None if k is None else sorted(n for n in vars(k) if not n.startswith("__")))
    if k is not None and hasattr(k, "_generation_step"):
        print("  _generation_step", inspect.signature(k._generation_step))
EOF

# 1. The injector, built here (tests/gpu/run.sh, build only); the prebuilt one if that fails.
INJ=$BIN/libcupti_injector.so PYNVTX=$BIN/libtruffld_pynvtx.so
say "build the injector"
TRUFFLD_GPU_BUILD=$WORK/build TRUFFLD_GPU_OUT=$WORK/build-out TRUFFLD_GPU_SKIP=check,hooks PYTHON=$PY \
  timeout 180 "$GPU/run.sh" >"$WORK/build.log" 2>&1
echo "build rc=$?"; tail -n 4 "$WORK/build.log"
[ -f "$WORK/build/libcupti_injector.so" ] && INJ=$WORK/build/libcupti_injector.so
[ -f "$WORK/build/cmake/inject/libcupti_injector.so" ] && INJ=$WORK/build/cmake/inject/libcupti_injector.so
[ -f "$WORK/build/libtruffld_pynvtx.so" ] && PYNVTX=$WORK/build/libtruffld_pynvtx.so
echo "tracing with $INJ"
# CUPTI: the injector tries libcupti.so.13 and libcupti.so by name; name the toolkit's copy
# (CUDA 13 keeps it in lib/, older toolkits in extras/CUPTI/lib64) so a missing ld path cannot
# leave the dumps without device activity.
if [ -z "${TRUFFLD_CUPTI_LIBRARY:-}" ]; then
  TRUFFLD_CUPTI_LIBRARY=$(find -L /usr/local/cuda/lib /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 \
    /usr/local/cuda/targets -name 'libcupti.so*' 2>/dev/null | sort | head -n 1)
fi
export TRUFFLD_CUPTI_LIBRARY
echo "CUPTI: ${TRUFFLD_CUPTI_LIBRARY:-by name}"

traced() {  # traced NAME ARGS...: one serve_cb.py run under the hooks and the injector
  local name=$1; shift
  local dir=$WORK/runs/$name
  rm -rf "$dir" && mkdir -p "$dir/dump"
  say "run $name: $*"
  PYTHONPATH=$ROOT/inject/python TRUFFLD_PYNVTX_LIB=$PYNVTX CUDA_INJECTION64_PATH=$INJ \
    NVTX_INJECTION64_PATH=$INJ TRUFFLD_OUTPUT_DIR=$dir/dump TRUFFLD_COMPRESS=zstd \
    PYTHONUNBUFFERED=1 timeout 200 "$PY" "$GPU/serve_cb.py" --timeout-s 150 --result "$dir/result.json" \
    --truth "$dir/truth.json" "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
  local rc=$?
  tail -n 1 "$dir/stdout.txt"; [ $rc -ne 0 ] && { echo "rc=$rc"; tail -n 30 "$dir/stderr.txt"; status=1; }
  "$MERGE" "$dir/dump" -o "$dir/merged" >"$dir/merge.txt" 2>&1 || { echo "merge failed"; tail "$dir/merge.txt"; status=1; }
  head -n 12 "$dir/merge.txt"
  "$DIAG" "$dir/merged" -o "$dir/diag" --llm off >"$dir/diagnose.txt" 2>&1
  local drc=$?
  echo "diagnose rc=$drc"; head -n 25 "$dir/diagnose.txt"; [ $drc -ne 0 ] && status=1
}

pack() {  # runs.tar (split in 15 MiB parts runs.tar.NN when larger): dumps, truths, results,
          # merge summaries and diagnoses (not the big trees and traces)
  (cd "$WORK/runs" && tar cf "$WORK/runs.tar" --exclude='*/merged/trees.jsonl' \
     --exclude='*/merged/trace.json' --exclude='*/diag/*.trace.json' --exclude='*/diag/report.html' .)
  rm -f "$OUTDIR"/runs.tar*
  if [ "$(stat -c %s "$WORK/runs.tar")" -gt $((15 << 20)) ]; then
    split -b 15M -d "$WORK/runs.tar" "$OUTDIR/runs.tar."
  else
    cp "$WORK/runs.tar" "$OUTDIR/runs.tar"
  fi
  ls -la "$OUTDIR"/runs.tar*
}

# 2. The serving engine, traced: healthy runs of three shapes and one with real faults.
if [[ $PHASES == *,runs,* ]] && [[ ${TRUFFLD_GPU_RUN_SET:-default} == strong ]]; then
  traced faulty_strong --requests 96 --seed 15 --fault-every 8 --delay-ms 20 --copy-mb 256
  traced healthy_eager2 --requests 80 --seed 16
  pack
elif [[ $PHASES == *,runs,* ]] && [[ ${TRUFFLD_GPU_RUN_SET:-default} == two-tier ]]; then
  TW=$("$PY" -c "import sys; sys.path.insert(0, '$GPU'); import engine_overhead as e; print(e.truffld_env_default_windows())" 2>/dev/null)
  TRUFFLD_DEVICE_WINDOWS=${TW:-all} traced faulty_twotier --requests 96 --seed 17 --fault-every 8
  TRUFFLD_DEVICE_WINDOWS=${TW:-all} traced healthy_graphs_twotier --requests 96 --seed 18 --cuda-graphs --min-prompt 8 --max-prompt 96
  pack
elif [[ $PHASES == *,runs,* ]]; then
  traced healthy_eager --requests 64 --seed 11
  traced faulty_eager --requests 96 --seed 12 --fault-every 12
  traced healthy_graphs --requests 96 --seed 13 --cuda-graphs --min-prompt 8 --max-prompt 96
  traced healthy_long --requests 40 --seed 14 --min-prompt 256 --max-prompt 2048 --max-batch-tokens 2048
  pack
fi

# 3. The GPU suite with that injector: a CUDA workload's dump checked and merged, and the hooks'
#    generation check.
if [[ $PHASES == *,suite,* ]]; then
  say "GPU suite (tests/gpu/run.sh)"
  TRUFFLD_GPU_BUILD=$WORK/build TRUFFLD_GPU_OUT=$WORK/suite TRUFFLD_GPU_SKIP=overhead \
    TRUFFLD_GPU_INJECTOR=$INJ TRUFFLD_GPU_PYNVTX=$PYNVTX TRUFFLD_MERGE=$MERGE PYTHON=$PY \
    timeout 240 "$GPU/run.sh" >"$OUTDIR/gpu_suite.log" 2>&1
  rc=$?; echo "run.sh rc=$rc"; grep -E "^(PASS|FAIL|SKIP)|injector:|GPU suite" "$OUTDIR/gpu_suite.log"
  [ $rc -ne 0 ] && status=1
fi

# 4. Stage II against an OpenAI-compatible endpoint backed by the same engine (untraced).
if [[ $PHASES == *,stage2,* ]] && [ -d "$WORK/runs/healthy_eager/merged" ]; then
  say "Stage II against the engine's endpoint"
  PYTHONUNBUFFERED=1 timeout 150 "$PY" "$GPU/serve_cb.py" --serve 18080 --seed 3 >"$WORK/serve.txt" 2>&1 &
  serve_pid=$!
  for _ in $(seq 120); do
    http_get /v1/models && break; sleep 0.5
  done
  timeout 100 "$DIAG" "$WORK/runs/healthy_eager/merged" -o "$WORK/runs/stage2" --llm on \
    --llm-url http://127.0.0.1:18080/v1 --llm-model qwen2-random-cb >"$WORK/runs/stage2.txt" 2>&1
  src=$?
  echo "diagnose --llm on rc=$src"; head -n 30 "$WORK/runs/stage2.txt"; [ $src -ne 0 ] && status=1
  http_get /quit; wait "$serve_pid"
  tail -n 8 "$WORK/serve.txt"; cp "$WORK/serve.txt" "$WORK/runs/serve.txt"
  pack
fi

# 5. Overhead, settings interleaved round by round (at least 10 rounds for a figure).
if [[ $PHASES == *,overhead,* ]]; then
  say "overhead, $ROUNDS rounds of ${SETTINGS_LIST}"
  WHAT=",${TRUFFLD_GPU_OVERHEAD:-engine,graphs,loop},"
  ARGS=()
  [[ $WHAT == *,engine,* ]] && ARGS+=(--workload "engine eager=$PY $GPU/serve_cb.py --requests 32 --seed 21")
  [[ $WHAT == *,graphs,* ]] && ARGS+=(--workload "engine graphs=$PY $GPU/serve_cb.py --requests 32 --seed 22 --cuda-graphs --min-prompt 8 --max-prompt 96")
  [[ $WHAT == *,loop,* ]] && ARGS+=(--workload "eager loop=$PY $GPU/torch_loop.py --iters ${TRUFFLD_GPU_LOOP_ITERS:-3000}")
  timeout "${TRUFFLD_GPU_OVERHEAD_TIMEOUT:-560}" "$PY" "$GPU/engine_overhead.py" --injector "$INJ" \
    --hooks "$ROOT/inject/python" --pynvtx "$PYNVTX" --rounds "$ROUNDS" --settings "$SETTINGS_LIST" \
    --budget-s "${TRUFFLD_GPU_OVERHEAD_BUDGET:-1e9}" --json "$OUTDIR/overhead.json" "${ARGS[@]}" || status=1
fi
say "done, status $status"
exit $status
