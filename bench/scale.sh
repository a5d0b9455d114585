#!/bin/sh
# Times dumpsift on production-sized cores against the speed of reading the file once.
#
# Usage: bench/scale.sh [BUILD_DIR] [MIB...]   (default: ./build 1024 4096; run from the repo root)
#
# For each MIB it runs fixtures/programs/big_heap.c (about MIB mebibytes in glibc malloc across 4
# threads: a million small allocations, thousands of large JPEG slices, aws-chunked frames, copies,
# zeros and random buffers), dumps it with gcore into $DUMPSIFT_BENCH_DIR (default
# /tmp/dumpsift-bench), then times, with the core in the page cache, best of 3 by wall time:
#   - cat CORE > /dev/null                                     the floor: one read of every byte
#   - dumpsift analyze CORE --min-size 65536 --report r.json --threads 1, and --threads 2
#   - dumpsift heap CORE --min-size 0                          (every allocation printed)
# Wall, CPU (user + sys) and peak RSS come from GNU time (/usr/bin/time); peak heap comes from
# heaptrack (one extra run of each dumpsift command, heaptrack_print's "peak heap memory
# consumption"). The last table shows how each figure grows from the first size to the last.
#
# The tool's heap may grow with the number of buffers it reports, not with the dump's bytes. To
# measure that, every core holds the same large buffers as the first one, scaled: big_heap's SCALE
# is MIB / (the first MIB), so the 4 GiB core's buffers are those of the 1 GiB core, each four
# times larger. DUMPSIFT_BENCH_SIZES=fixed keeps the story's sizes instead (then a 4 GiB core holds
# four times as many buffers, and the heap grows with them).
#
# Cores are kept for the next run when DUMPSIFT_BENCH_KEEP=1 (delete the directory when done),
# and removed otherwise. Needs gdb (gcore), ptrace permission, about 2 x MIB of free disk and RAM.
# Run it alone on the machine: `flock /tmp/dumpsift-cpu.lock bench/scale.sh build-bench`.
set -eu
. "$(dirname "$0")/lib.sh"

build=${1:-build}
[ $# -gt 0 ] && shift
sizes=${*:-1024 4096}
dir=${DUMPSIFT_BENCH_DIR:-/tmp/dumpsift-bench}
keep=${DUMPSIFT_BENCH_KEEP:-0}
mode=${DUMPSIFT_BENCH_SIZES:-scaled}
case $mode in scaled | fixed) ;; *) echo "DUMPSIFT_BENCH_SIZES: scaled or fixed" >&2; exit 2 ;; esac
first_mib=$(echo "$sizes" | awk '{print $1}')

log=$(mktemp)
cmake --build "$build" --target dumpsift fixture_big_heap >"$log" 2>&1 ||
  { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
tool=$(cd "$build" && pwd)/dumpsift
prog=$(cd "$build" && pwd)/fixtures/big_heap
mkdir -p "$dir"
work=$(mktemp -d "$dir/run.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
  [ "$keep" = 1 ] || rm -f "$dir"/big_heap-*.core "$dir"/big_heap-*.core.json
}
trap cleanup EXIT INT TERM

# best_of CMD...: runs CMD three times (stdout discarded); prints "wall cpu maxrss_kib" of the run
# with the least wall time.
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

# peak_heap CMD...: peak heap bytes of one run of CMD under heaptrack.
peak_heap() {
  rm -f "$work"/heaptrack.*
  heaptrack -o "$work/heaptrack" "$@" >/dev/null 2>&1
  heaptrack_print -f "$work"/heaptrack*.zst 2>/dev/null |
    awk '/^peak heap memory consumption:/ {v = $5; u = substr(v, length(v)); n = v + 0;
         if (u == "K") n *= 1e3; else if (u == "M") n *= 1e6; else if (u == "G") n *= 1e9;
         printf "%d\n", n}'
}

echo "dumpsift scale bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load: $(uptime | sed 's/.*load average: //'); buffer sizes: $mode"
results=$work/results
: >"$results"
for mib in $sizes; do
  scale=1
  [ "$mode" = scaled ] && scale=$((mib / first_mib > 0 ? mib / first_mib : 1))
  big_heap_core "$prog" "$mib" "$scale" # sets core (reused when kept)
  bytes=$(wc -c <"$core")
  echo "core $core: $bytes bytes; $(cat "$core.json")"
  cat "$core" >/dev/null # warm the page cache
  floor=$(best_of cat "$core")
  a1=$(best_of "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --threads 1 --quiet)
  a2=$(best_of "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --threads 2 --quiet)
  hp=$(best_of "$tool" heap "$core" --min-size 0)
  "$tool" heap "$core" --min-size 0 >"$work/heap.txt"
  chunks=$(grep -o ' chunks=[0-9]*' "$work/heap.txt" | awk -F= '{n += $2} END {print n + 0}')
  h1=$(peak_heap "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --threads 1 --quiet)
  h2=$(peak_heap "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --threads 2 --quiet)
  hh=$(peak_heap "$tool" heap "$core" --min-size 0)
  # The heap that does not depend on what is reported: the same walk and scan, nothing kept.
  h0=$(peak_heap "$tool" analyze "$core" --min-size 1024G --report "$work/r.json" --threads 2 --quiet)
  "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --threads 2 --quiet --timings \
    2>"$work/timings"
  "$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --threads 2 --quiet
  reported=$(grep -c '"hash": "xxh64' "$work/r.json")
  echo "phases of one analyze --threads 2 run ($reported buffers reported; peak heap with none reported: $(echo "$h0" | awk '{printf "%.1fM", $1 / 1048576}')):"
  sed 's/^dumpsift: timing: /  /' "$work/timings"
  fw=$(echo "$floor" | cut -d' ' -f1)
  {
    echo "$mib cat $floor 0 $fw"
    echo "$mib analyze-t1 $a1 $h1 $fw $reported"
    echo "$mib analyze-t2 $a2 $h2 $fw $reported"
    echo "$mib heap $hp $hh $fw $chunks"
  } >>"$results"
  echo "load after $mib MiB: $(uptime | sed 's/.*load average: //')"
done

echo
printf '%-6s %-11s %8s %8s %7s %10s %10s %s\n' MiB command wall_s cpu_s x_floor peak_rss peak_heap extra
awk '{
  ratio = $7 > 0 ? $3 / $7 : 0
  extra = $2 == "heap" ? sprintf("%d chunks, %.1f M chunks/s by wall, %.1f by cpu", $8, $8 / $3 / 1e6, $8 / $4 / 1e6) : ""
  if ($2 ~ /^analyze/) extra = sprintf("%d buffers reported, %.1f KB of peak heap per buffer", $8, $6 / $8 / 1e3)
  heap = $2 == "cat" ? "-" : sprintf("%.1fM", $6 / 1048576)
  printf "%-6s %-11s %8.2f %8.2f %7.2f %9.1fM %10s %s\n", $1, $2, $3, $4, ratio, $5 / 1024, heap, extra
}' "$results"

first=$(echo "$sizes" | awk '{print $1}')
last=$(echo "$sizes" | awk '{print $NF}')
if [ "$first" != "$last" ]; then
  echo
  echo "growth from $first MiB to $last MiB (last / first):"
  awk -v a="$first" -v b="$last" '
    $1 == a { w[$2] = $3; c[$2] = $4; r[$2] = $5; h[$2] = $6 }
    $1 == b { W[$2] = $3; C[$2] = $4; R[$2] = $5; H[$2] = $6; order[++n] = $2 }
    END { for (i = 1; i <= n; ++i) { k = order[i]
      printf "%-11s wall x%.2f  cpu x%.2f  peak_rss x%.2f  peak_heap %s\n", k, W[k] / w[k], C[k] / c[k],
             R[k] / r[k], (h[k] > 0 ? sprintf("x%.3f", H[k] / h[k]) : "-") } }' "$results"
fi
