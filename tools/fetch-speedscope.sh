#!/usr/bin/env bash
# Fetches speedscope (https://github.com/jlfwong/speedscope, MIT), an offline trace viewer that
# reads Chrome trace JSON, from the npm registry into a cache folder: the tests open
# diagnosis.trace.json in it with headless Chromium to check that a real viewer loads it.
# Pinned version, checked against the registry's sha512 before it is unpacked. Idempotent.
#
# Usage: tools/fetch-speedscope.sh [--print-dir]
#   --print-dir   print the folder it would use and exit
# Environment: TRUFFLD_CACHE_DIR (default ~/.cache/truffld); the viewer lands in
# $TRUFFLD_CACHE_DIR/speedscope-<version>/ (index.html at its top). Under sudo, HOME is root's:
# set TRUFFLD_CACHE_DIR (and the same for the tests) to share one copy. Offline, download it
# elsewhere and unpack package/dist/release/ there.
# Exit: 0 present or fetched; 1 download or checksum failed (message on stderr).
set -euo pipefail

version=1.25.0
sha512=cpf9HWTZf1ijLXBJrk87Ve/54tnYx6rlf0gUThvn3ook6h63hLXVOQiMf44PT+XoV503cPfvfiT5gP5vojp6Ag==
url="https://registry.npmjs.org/speedscope/-/speedscope-$version.tgz"
cache=${TRUFFLD_CACHE_DIR:-${HOME:-/root}/.cache/truffld}
dir="$cache/speedscope-$version"

if [[ "${1:-}" == "--print-dir" ]]; then echo "$dir"; exit 0; fi
if [[ -f "$dir/index.html" ]]; then exit 0; fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.speedscope.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if command -v curl >/dev/null; then
  curl -fsSL --retry 2 --connect-timeout 20 --max-time 300 -o "$tmp/s.tgz" "$url" ||
    { echo "fetch-speedscope: cannot download $url" >&2; exit 1; }
else
  python3 -c 'import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as r, open(sys.argv[2], "wb") as f: shutil.copyfileobj(r, f)' "$url" "$tmp/s.tgz" ||
    { echo "fetch-speedscope: cannot download $url" >&2; exit 1; }
fi
got=$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tmp/s.tgz") ||
  { echo "fetch-speedscope: cannot checksum the download (python3)" >&2; exit 1; }
if [[ "$got" != "$sha512" ]]; then
  echo "fetch-speedscope: $url: sha512 $got, expected $sha512; not unpacked" >&2
  exit 1
fi
tar -xzf "$tmp/s.tgz" -C "$tmp" --no-same-owner package/dist/release package/LICENSE
mv "$tmp/package/LICENSE" "$tmp/package/dist/release/LICENSE"
rm -rf "$dir"
mv "$tmp/package/dist/release" "$dir"
echo "fetch-speedscope: speedscope $version in $dir"
