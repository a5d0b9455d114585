# Shell functions shared by the bench scripts (sourced: `. "$(dirname "$0")/lib.sh"`). The caller
# sets $work (a scratch directory) and kills $pid, while it is set, in its cleanup trap.

# dump_when_ready CORE PROGRAM [ARGS...]: runs PROGRAM until it prints the line READY, dumps it
# with gcore into CORE, stops it, and keeps its first output line (its manifest) in CORE.json.
dump_when_ready() {
  dump_core=$1
  shift
  "$@" >"$work/stdout" &
  pid=$!
  until grep -qx READY "$work/stdout" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "$* failed before printing READY" >&2; exit 1; }
    sleep 0.2
  done
  gcore -o "$work/core" "$pid" >"$work/gcore.log" 2>&1 || { cat "$work/gcore.log" >&2; exit 1; }
  mv "$work/core.$pid" "$dump_core"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
  head -1 "$work/stdout" >"$dump_core.json"
}
