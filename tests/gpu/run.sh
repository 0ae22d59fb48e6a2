#!/usr/bin/env bash
# truffld GPU suite: builds libcupti_injector.so and the CUDA workload, traces the workload,
# checks the dump against what the workload launched, measures overhead, then runs the hooks
# colleague's tests/gpu/hooks_*.py if present.
#
# Usage: tests/gpu/run.sh            (from anywhere; needs an NVIDIA GPU, nvcc and python3)
# Env:   TRUFFLD_GPU_BUILD  build folder (default <repo>/build-gpu)
#        TRUFFLD_GPU_OUT    where dumps and reports go (default $OUT if set, else <build>/out)
#        TRUFFLD_GPU_RUNS   runs per overhead configuration (default 5, minimum 5)
#        TRUFFLD_GPU_VARIANTS  1: also time truffld with parts switched off (overhead.py --variants)
#        PYTHON             python with torch for the PyTorch parts (default python3)
#        CUDA_HOME          CUDA toolkit (default /usr/local/cuda, else the folder above nvcc's bin/)
#        TRUFFLD_GPU_INJECTOR  a libcupti_injector.so built elsewhere (with TRUFFLD_GPU_PYNVTX, its
#                           NVTX shim): used as is, nothing is built but the CUDA workload
#        TRUFFLD_GPU_SKIP   parts to leave out, comma list of check,overhead,hooks (said as SKIP
#                           lines; check: the CUDA workload, its dump check and merge; overhead
#                           needs the workload and is left out with it)
#        TRUFFLD_MERGE      a truffld-merge binary for the hooks check when CMake cannot build one
#                           here (the project's dependencies are missing); without it that check
#                           prints SKIP and the suite says so
# Exit status: 0 all checks passed, 1 a check failed, 77 no GPU here (prints SKIP; ctest reports
# the suite as skipped, not passed).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${TRUFFLD_GPU_BUILD:-$ROOT/build-gpu}
OUTDIR=${TRUFFLD_GPU_OUT:-${OUT:-$BUILD/out}}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$CUDA_HOME/bin/nvcc" ] && command -v nvcc >/dev/null; then
  CUDA_HOME=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
fi
PY=${PYTHON:-python3}
RUNS=${TRUFFLD_GPU_RUNS:-5}
status=0

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU visible (nvidia-smi -L failed); the GPU suite needs one"
  exit 77
fi
mkdir -p "$BUILD" "$OUTDIR"
nvidia-smi -L

# 1. The injector: through CMake when the project's dependencies are installed, otherwise a
#    direct compile of inject/src (needs only g++ and the CUDA headers; libzstd when present).
INJ=""
MERGE=${TRUFFLD_MERGE:-}
SKIP_PARTS=",${TRUFFLD_GPU_SKIP:-},"
if [ -n "${TRUFFLD_GPU_INJECTOR:-}" ]; then
  INJ=$TRUFFLD_GPU_INJECTOR
  PYNVTX=${TRUFFLD_GPU_PYNVTX:-}
  echo "prebuilt injector: $INJ"
elif cmake -S "$ROOT" -B "$BUILD/cmake" -DCMAKE_BUILD_TYPE=Release -DTRUFFLD_BUILD_TESTS=OFF \
     -DTRUFFLD_BUILD_BENCHMARKS=OFF >"$OUTDIR/cmake.log" 2>&1 &&
   cmake --build "$BUILD/cmake" --target cupti_injector truffld-merge truffld_pynvtx -j"$(nproc)" \
     >>"$OUTDIR/cmake.log" 2>&1; then
  INJ="$BUILD/cmake/inject/libcupti_injector.so"
  [ -z "$MERGE" ] && MERGE="$BUILD/cmake/merge/truffld-merge"
  PYNVTX="$BUILD/cmake/inject/pynvtx/libtruffld_pynvtx.so"
else
  echo "cmake build failed (last lines of $OUTDIR/cmake.log below); compiling inject/src directly"
  tail -n 3 "$OUTDIR/cmake.log"
  CUPTI_INC=$(dirname "$(find "$CUDA_HOME/include" "$CUDA_HOME/extras/CUPTI/include" \
                 "$CUDA_HOME/targets" -name cupti.h 2>/dev/null | head -n 1)")
  CUPTI_LIB=$(find "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/extras/CUPTI/lib64" "$CUDA_HOME/targets" \
                 -name 'libcupti.so' 2>/dev/null | head -n 1)
  ZSTD_DEF=() ZSTD_LIB=-lzstd
  if ! echo '#include <zstd.h>' | g++ -E -x c++ - >/dev/null 2>&1; then
    echo "no zstd.h here: building without TRUFFLD_COMPRESS=zstd support"
    ZSTD_DEF=(-DTRUFFLD_WITHOUT_ZSTD) ZSTD_LIB=
  fi
  echo "cupti.h in ${CUPTI_INC:-?}, libcupti.so at ${CUPTI_LIB:-?}"
  # One compiler per source file, all cores at once, then one link.
  # (xargs appends the source file last; the flags come first.)
  export OBJ="$BUILD/obj"
  rm -rf "$OBJ" && mkdir -p "$OBJ"
  printf '%s\0' "$ROOT"/inject/src/*.cc | xargs -0 -P "$(nproc)" -n 1 bash -c \
    'src=${!#}; g++ -O2 -g -std=c++20 -fPIC -fvisibility=hidden "${@:1:$#-1}" -c "$src" -o "$OBJ/$(basename "$src" .cc).o"' _ \
    -I"$ROOT/inject/src" -I"$ROOT/common/include" -I"$CUDA_HOME/include" -I"${CUPTI_INC:-$CUDA_HOME/include}" \
    -DTRUFFLD_CUPTI_BUILD_PATH="\"${CUPTI_LIB:-}\"" "${ZSTD_DEF[@]}" || exit 1
  g++ -shared "$BUILD"/obj/*.o -o "$BUILD/libcupti_injector.so" $ZSTD_LIB -ldl -pthread || exit 1
  INJ="$BUILD/libcupti_injector.so"
  gcc -O2 -fPIC -shared -I"$CUDA_HOME/include" "$ROOT/inject/pynvtx/pynvtx.c" \
    -o "$BUILD/libtruffld_pynvtx.so" -ldl && PYNVTX="$BUILD/libtruffld_pynvtx.so"
fi
echo "injector: $INJ"

if [[ $SKIP_PARTS == *,check,* ]]; then
  echo "SKIP: the CUDA workload, its dump check and merge (TRUFFLD_GPU_SKIP)"
  SKIP_PARTS="$SKIP_PARTS,overhead,"
else
# 2. The workload.
"$CUDA_HOME/bin/nvcc" -O2 -std=c++17 -I"$CUDA_HOME/include" -o "$BUILD/truffld_gpu_workload" \
  "$ROOT/tests/gpu/workload.cu" -lcublas -ldl || exit 1
# NCCL comes with PyTorch's pip wheels; make it findable for the workload's dlopen.
NCCL_DIR=$("$PY" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
[ -n "$NCCL_DIR" ] && export LD_LIBRARY_PATH="$NCCL_DIR:${LD_LIBRARY_PATH:-}"

# 3. Traced run + checks.
rm -rf "$OUTDIR/trace" && mkdir -p "$OUTDIR/trace"
CUDA_INJECTION64_PATH="$INJ" NVTX_INJECTION64_PATH="$INJ" TRUFFLD_OUTPUT_DIR="$OUTDIR/trace" \
  TRUFFLD_VERBOSE=1 "$BUILD/truffld_gpu_workload" --expect "$OUTDIR/expected.json" || status=1
cat "$OUTDIR/expected.json"
"$PY" "$ROOT/tests/gpu/check_trace.py" "$OUTDIR/trace" "$OUTDIR/expected.json" \
  "$ROOT/schemas/events.schema.json" | tee "$OUTDIR/check.txt" || status=1

# 3b. The dump through truffld-merge: every kernel should bind to its launching call.
if [ -n "$MERGE" ] && [ -x "$MERGE" ]; then
  if "$MERGE" "$OUTDIR/trace" -o "$OUTDIR/merged" >"$OUTDIR/merge.txt" 2>&1; then
    echo "PASS truffld-merge on the dump"
    head -n 8 "$OUTDIR/merge.txt"
    "$PY" - "$OUTDIR/merged/summary.json" "$OUTDIR/expected.json" <<'PYEOF' || status=1
import json, sys
t = json.load(open(sys.argv[1]))["total"]
exp = json.load(open(sys.argv[2]))
ok = t["steps"] == exp["steps"] and t["duplicate_correlations"] == 0 and t["unclosed_ranges"] == 0
print(("PASS" if ok else "FAIL") + " merged: steps %d (workload ran %d), kernels linked %d of %d, "
      "nested driver calls %d, duplicate correlations %d, unclosed ranges %d, unattributed %s"
      % (t["steps"], exp["steps"], t["kernels_linked_unique"], t["kernels_read"], t["nested_api_calls"],
         t["duplicate_correlations"], t["unclosed_ranges"], t.get("unattributed_reasons")))
sys.exit(0 if ok else 1)
PYEOF
  else
    echo "FAIL truffld-merge on the dump:"; tail -n 20 "$OUTDIR/merge.txt"; status=1
  fi
fi
fi  # check

# 4. Overhead: workload and a PyTorch loop, none / truffld / torch.profiler, median of >= 5.
if [[ $SKIP_PARTS == *,overhead,* ]]; then echo "SKIP: overhead (TRUFFLD_GPU_SKIP)"; else
"$PY" "$ROOT/tests/gpu/overhead.py" --workload "$BUILD/truffld_gpu_workload" --injector "$INJ" \
  --runs "$RUNS" ${TRUFFLD_GPU_VARIANTS:+--variants} --torch-loop "$ROOT/tests/gpu/torch_loop.py" --python "$PY" \
  | tee "$OUTDIR/overhead.txt" || status=1
fi

# 5. The hooks colleague's GPU checks, if any (exit 77 = skipped, reported, not a pass).
for f in "$ROOT"/tests/gpu/hooks_*.py; do
  [ -e "$f" ] || continue
  if [[ $SKIP_PARTS == *,hooks,* ]]; then echo "SKIP: $f (TRUFFLD_GPU_SKIP)"; skipped=1; continue; fi
  echo "== $f"
  TRUFFLD_INJECTOR="$INJ" TRUFFLD_MERGE="$MERGE" TRUFFLD_SYSTEM_PYTHON="$PY" \
    TRUFFLD_PYNVTX_LIB="${PYNVTX:-}" "$PY" "$f" --keep "$OUTDIR/$(basename "$f" .py)"
  rc=$?
  if [ $rc -eq 77 ]; then echo "SKIPPED: $f"; skipped=1; elif [ $rc -ne 0 ]; then status=1; fi
done
[ -n "${skipped:-}" ] && echo "note: some GPU checks were skipped (see SKIP lines above)"
echo "GPU suite finished with status $status (reports in $OUTDIR)"
exit $status
