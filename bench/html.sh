#!/bin/sh
# What the HTML report costs on top of `analyze`, on bench/scale.sh's 4 GiB core.
#
# Usage: bench/html.sh [BUILD_DIR] [CORE]   (default: ./build, and a core it makes; from the repo root)
#
# CORE defaults to $DUMPSIFT_BENCH_DIR/big_heap-4096-x4.core (default dir /tmp/dumpsift-bench), the
# core `DUMPSIFT_BENCH_KEEP=1 bench/scale.sh BUILD 1024 4096` keeps: fixtures/programs/big_heap.c
# run as `big_heap 4096 4 4` (2,115 large buffers: JPEG slices, aws-chunked frames carrying JPEG
# data, copies, zeros, random), dumped with gcore. When it is missing it is made the same way (and
# kept, like scale.sh does with DUMPSIFT_BENCH_KEEP=1; delete it when done). Then, with the core in
# the page cache, best of 3 by wall time (GNU time):
#   - dumpsift analyze CORE --min-size 65536 --report r.json --threads 2
#   - the same with --html r.html
# and prints both, the difference, and the page's size and thumbnail count.
set -eu
. "$(dirname "$0")/lib.sh"

build=${1:-build}
dir=${DUMPSIFT_BENCH_DIR:-/tmp/dumpsift-bench}
core=${2:-$dir/big_heap-4096-x4.core}
cmake --build "$build" --target dumpsift fixture_big_heap >/dev/null
tool=$(cd "$build" && pwd)/dumpsift
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

if [ ! -s "$core" ]; then
  mkdir -p "$(dirname "$core")"
  dump_when_ready "$core" "$build/fixtures/big_heap" 4096 4 4
fi

# best_of CMD...: "wall cpu maxrss_kib" of the fastest of three runs of CMD.
best_of() {
  best=
  for _ in 1 2 3; do
    /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" ||
      { cat "$work/stderr" >&2; exit 1; }
    run=$(awk '{print $1, $2 + $3, $4}' "$work/time")
    best=$(echo "$run ${best:-1e9 1e9 0}" | awk '{print ($1 < $4 ? $1 " " $2 " " $3 : $4 " " $5 " " $6)}')
  done
  echo "$best"
}

echo "dumpsift HTML bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load: $(uptime | sed 's/.*load average: //')"
echo "core $core: $(wc -c <"$core") bytes; $(cat "$core.json" 2>/dev/null || true)"
cat "$core" >/dev/null
plain=$(best_of "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --threads 2 --quiet)
html=$(best_of "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --html "$work/r.html" --threads 2 --quiet)
echo "analyze --report:          wall $(echo "$plain" | cut -d' ' -f1) s, cpu $(echo "$plain" | cut -d' ' -f2) s, peak RSS $(echo "$plain" | cut -d' ' -f3) KiB"
echo "analyze --report --html:   wall $(echo "$html" | cut -d' ' -f1) s, cpu $(echo "$html" | cut -d' ' -f2) s, peak RSS $(echo "$html" | cut -d' ' -f3) KiB"
echo "$plain $html" | awk '{printf "HTML cost: wall +%.3f s (+%.1f%%), cpu +%.3f s (+%.1f%%)\n", $4 - $1, 100 * ($4 - $1) / $1, $5 - $2, 100 * ($5 - $2) / $2}'
echo "page: $(wc -c <"$work/r.html") bytes, $(grep -o '<img class="thumb"' "$work/r.html" | wc -l) thumbnails, $(grep -o '<tr id="b-' "$work/r.html" | wc -l) buffers listed"
grep -o 'Thumbnails: [^<]*' "$work/r.html" || true
