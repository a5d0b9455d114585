#!/bin/sh
# Times dumpsift against the warm `cat` floor in one hyperfine run, on cores that exist already.
#
# Usage: bench/floor.sh BUILD_DIR CORE...   (run from the repo root; make cores with scale.sh and
#                                           DUMPSIFT_BENCH_KEEP=1, hotspot.sh, heap_million.sh)
#
# For each CORE: one hyperfine run (warmed up, DUMPSIFT_BENCH_RUNS runs each, default 5) of
#   - cat CORE > /dev/null                                      the floor: one read of every byte
#   - dumpsift analyze CORE --min-size 65536 --threads 2 --report R --quiet
#   - dumpsift heap CORE --min-size 0 > /dev/null
# so that the ratios compare runs made under the same load; then the peak RSS of each dumpsift
# command (GNU time) and its peak heap (heaptrack, when installed). Prints one line per command:
# mean wall, its ratio to cat's mean, peak RSS, peak heap.
set -eu

build=${1:?usage: bench/floor.sh BUILD_DIR CORE...}
shift
runs=${DUMPSIFT_BENCH_RUNS:-5}
tool=$(cd "$build" && pwd)/dumpsift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

# peak_heap CMD...: peak heap of one run of CMD under heaptrack, or "-" without heaptrack.
peak_heap() {
  command -v heaptrack >/dev/null || { echo -; return; }
  rm -f "$work"/heaptrack.*
  heaptrack -o "$work/heaptrack" "$@" >/dev/null 2>&1
  heaptrack_print -f "$work"/heaptrack*.zst 2>/dev/null |
    awk '/^peak heap memory consumption:/ {print $5}'
}

# peak_rss CMD...: peak resident set of one run of CMD, in MiB.
peak_rss() {
  /usr/bin/time -f '%M' -o "$work/time" "$@" >/dev/null 2>&1
  awk '{printf "%.1fM\n", $1 / 1024}' "$work/time"
}

echo "dumpsift floor bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load: $(uptime | sed 's/.*load average: //')"
for core in "$@"; do
  analyze="$tool analyze $core --min-size 65536 --threads 2 --report $work/r.json --quiet"
  heap="$tool heap $core --min-size 0"
  cat "$core" >/dev/null
  hyperfine -N --warmup 1 --runs "$runs" --export-json "$work/h.json" \
    "cat $core" "$analyze" "$heap" >/dev/null 2>&1 ||
    { echo "hyperfine failed on $core" >&2; exit 1; }
  echo "core $core: $(wc -c <"$core") bytes"
  python3 - "$work/h.json" "$(peak_rss $analyze)" "$(peak_rss $heap)" \
    "$(peak_heap $analyze)" "$(peak_heap $heap)" <<'EOF'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
floor = results[0]["mean"]
extra = [("-", "-"), (sys.argv[2], sys.argv[4]), (sys.argv[3], sys.argv[5])]
print(f"{'command':10} {'wall_s':>8} {'stddev':>7} {'x_cat':>6} {'peak_rss':>9} {'peak_heap':>9}")
for name, r, (rss, heap) in zip(["cat", "analyze-t2", "heap"], results, extra):
    print(f"{name:10} {r['mean']:8.3f} {r['stddev']:7.3f} {r['mean'] / floor:6.2f} {rss:>9} {heap:>9}")
EOF
done
