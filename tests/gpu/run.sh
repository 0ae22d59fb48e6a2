#!/usr/bin/env bash
# truffld GPU suite: builds libcupti_injector.so and the CUDA workload, traces the workload,
# checks the dump against what the workload launched, measures overhead, then runs the hooks
# colleague's tests/gpu/hooks_*.py if present.
#
# Usage: tests/gpu/run.sh            (from anywhere; needs an NVIDIA GPU, nvcc and python3)
# Env:   TRUFFLD_GPU_BUILD  build folder (default <repo>/build-gpu)
#        TRUFFLD_GPU_OUT    where dumps and reports go (default $OUT if set, else <build>/out)
#        TRUFFLD_GPU_RUNS   runs per overhead configuration (default 5, minimum 5)
#        PYTHON             python with torch for the PyTorch parts (default python3)
#        CUDA_HOME          CUDA toolkit (default /usr/local/cuda)
# Exit status: 0 all checks passed (or no GPU: prints SKIP), 1 a check failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${TRUFFLD_GPU_BUILD:-$ROOT/build-gpu}
OUTDIR=${TRUFFLD_GPU_OUT:-${OUT:-$BUILD/out}}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
RUNS=${TRUFFLD_GPU_RUNS:-5}
status=0

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU visible (nvidia-smi -L failed); the GPU suite needs one"
  exit 0
fi
mkdir -p "$BUILD" "$OUTDIR"
nvidia-smi -L

# 1. The injector: through CMake when the project's dependencies are installed, otherwise a
#    direct compile of inject/src (needs only g++, libzstd and the CUDA headers).
INJ=""
if cmake -S "$ROOT" -B "$BUILD/cmake" -DCMAKE_BUILD_TYPE=Release -DTRUFFLD_BUILD_TESTS=OFF \
     -DTRUFFLD_BUILD_BENCHMARKS=OFF >"$OUTDIR/cmake.log" 2>&1 &&
   cmake --build "$BUILD/cmake" --target cupti_injector -j"$(nproc)" >>"$OUTDIR/cmake.log" 2>&1; then
  INJ="$BUILD/cmake/inject/libcupti_injector.so"
else
  echo "cmake build failed (see $OUTDIR/cmake.log); compiling inject/src directly"
  g++ -O2 -g -std=c++20 -fPIC -shared -fvisibility=hidden -I"$ROOT/inject/src" -I"$CUDA_HOME/include" \
    -DTRUFFLD_CUPTI_BUILD_PATH="\"$CUDA_HOME/lib64/libcupti.so\"" \
    "$ROOT"/inject/src/*.cc -o "$BUILD/libcupti_injector.so" -lzstd -ldl -pthread || exit 1
  INJ="$BUILD/libcupti_injector.so"
fi
echo "injector: $INJ"

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

# 4. Overhead: workload and a PyTorch loop, none / truffld / torch.profiler, median of >= 5.
"$PY" "$ROOT/tests/gpu/overhead.py" --workload "$BUILD/truffld_gpu_workload" --injector "$INJ" \
  --runs "$RUNS" --torch-loop "$ROOT/tests/gpu/torch_loop.py" --python "$PY" \
  | tee "$OUTDIR/overhead.txt" || status=1

# 5. The hooks colleague's GPU checks, if any.
for f in "$ROOT"/tests/gpu/hooks_*.py; do
  [ -e "$f" ] || continue
  echo "== $f"
  TRUFFLD_INJECTOR="$INJ" "$PY" "$f" || status=1
done
echo "GPU suite finished with status $status (reports in $OUTDIR)"
exit $status
