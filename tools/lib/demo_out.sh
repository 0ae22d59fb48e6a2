# Sourced by tools/demo.sh and tools/eval/demo.sh: the demo's output folder, made safe.
#
# demo_check_out DIR    exits 2 with a message unless DIR is new, empty, or made by an earlier
#                       demo (it holds the marker file .truffld-demo): a demo never deletes a
#                       folder it did not create (`tools/demo.sh .` in a checkout is refused).
# demo_prepare_out DIR  creates DIR with its marker and removes the demo's own dump/, merged/
#                       and diag/ from an earlier run; nothing else in DIR is touched.
DEMO_MARKER=.truffld-demo

demo_check_out() {
  local out=$1
  if [[ -L "$out" || ( -e "$out" && ! -d "$out" ) ]]; then
    echo "demo: $out exists and is not a directory; choose a new or empty directory" >&2
    exit 2
  fi
  if [[ -d "$out" && ! -f "$out/$DEMO_MARKER" && -n "$(ls -A -- "$out")" ]]; then
    echo "demo: refusing to use $out: it is not empty and was not made by a truffld demo" \
         "(no $DEMO_MARKER file in it); choose a new or empty directory" >&2
    exit 2
  fi
}

demo_prepare_out() {
  local out=$1
  demo_check_out "$out"
  mkdir -p -- "$out"
  echo "made by a truffld demo; a rerun replaces dump/, merged/ and diag/ here" >"$out/$DEMO_MARKER"
  rm -rf -- "$out/dump" "$out/merged" "$out/diag"
}
