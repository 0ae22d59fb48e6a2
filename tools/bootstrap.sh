#!/usr/bin/env bash
# Installs the Debian packages truffld needs to build and test. Idempotent and quick when
# everything is present (one dpkg-query). As root it installs what is missing; otherwise it
# prints the exact apt-get line to run and exits 1 if anything is missing.
#
# Usage: tools/bootstrap.sh [--check]     --check: only report, never install
# Then it tries to fetch the speedscope trace viewer (npm registry, pinned and checksummed) into
# ~/.cache/truffld for the test that opens diagnosis.trace.json in it (tools/fetch-speedscope.sh);
# offline that is a warning here (the demo does not need it) and an error in tools/test.sh.
# The CUDA toolkit (CUPTI + NVTX 3 headers, default /usr/local/cuda) is not a Debian package
# here: without it everything but libcupti_injector.so and the NVTX shim still builds.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git
  # libraries
  nlohmann-json3-dev libeigen3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev libsimdjson-dev libzstd-dev libsqlite3-dev zlib1g-dev libisal-dev libre2-dev
  # truffld-diagnose's malloc (TRUFFLD_DIAGNOSE_ALLOCATOR=auto takes it when present)
  libjemalloc-dev
  # tests: schema validation, scikit-learn reference values and baselines, CPU torch for hooks,
  # pandas.read_sql on truffld-export's database
  python3 python3-jsonschema python3-numpy python3-sklearn python3-torch python3-pandas
  # the hooks' step calls as a CPython extension module (ctypes without it)
  python3-dev
  # truffld-fleet: shards on a Dask cluster (and its integration test's scheduler and workers)
  python3-distributed
  # libFuzzer targets
  clang libclang-rt-14-dev
  # command-line tools used by tests and benchmarks (chromium: report.html in a real browser)
  sqlite3 zstd time chromium
)

check_only=0
[[ "${1:-}" == "--check" ]] && check_only=1

missing=()
while read -r pkg status; do
  [[ "$status" == "installed" ]] || missing+=("$pkg")
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)
# dpkg-query prints nothing for packages it has never heard of: find those too.
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || {
    [[ " ${missing[*]-} " == *" $p "* ]] || missing+=("$p")
  }
done

viewer() {
  if [[ $check_only -eq 1 ]]; then
    [[ -f "$("$(dirname "$0")"/fetch-speedscope.sh --print-dir)/index.html" ]] ||
      echo "bootstrap: note: speedscope (a test dependency) missing: run tools/fetch-speedscope.sh" >&2
  else
    "$(dirname "$0")"/fetch-speedscope.sh ||
      echo "bootstrap: warning: speedscope not fetched; tools/test.sh needs it (tools/fetch-speedscope.sh)" >&2
  fi
  return 0
}

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  viewer
  exit 0
fi

line="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $check_only -eq 1 || $(id -u) -ne 0 ]]; then
  echo "bootstrap: missing packages: ${missing[*]}" >&2
  echo "bootstrap: run as root:" >&2
  echo "  $line" >&2
  exit 1
fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
viewer
echo "bootstrap: done"
