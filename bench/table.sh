#!/bin/sh
# The whole bench table of issue 21: dumpsift against the `cat` floor on four production-sized
# cores (two glibc heaps, a JVM, a CoreCLR process), one table.
#
# Usage: bench/table.sh [BUILD_DIR]   (default ./build; run from the repo root, without flock: the
#                                     script takes the CPU lock itself, around the timing only)
#
# Makes the cores missing in $DUMPSIFT_BENCH_DIR (default /tmp/dumpsift-bench) and reuses the others:
#   glibc-1G  big_heap-1024-x1.core  fixtures/programs/big_heap.c, `big_heap 1024 4 1`
#   glibc-4G  big_heap-4096-x4.core  `big_heap 4096 4 4`: the same buffers, four times larger
#                                    (the two cores of `bench/scale.sh BUILD 1024 4096`)
#   jvm       jvm-512-10.core        fixtures/java/BigHeap.java 512 10 on JDK 17, G1 (hotspot.sh's)
#   coreclr   coreclr-2048-5.core    bench/LohBench.cs 2048 5 on .NET Core 2.0 (bench/coreclr.sh,
#                                    which also checks that the coreclr walker finds its arrays)
# then runs bench/floor.sh on the four under `flock $DUMPSIFT_BENCH_LOCK` (default
# /tmp/dumpsift-cpu.lock; empty: no lock): per core one hyperfine run of cat, analyze --threads 2
# and heap --min-size 0 (DUMPSIFT_BENCH_RUNS runs each, default 5), peak RSS and peak heap; and
# prints its figures as one table: dump, size, command, mean wall, its stddev, ratio to cat's mean,
# peak RSS, peak heap.
#
# Cores this run made are kept when DUMPSIFT_BENCH_KEEP=1 and removed otherwise; cores that were
# there before are never removed. Needs gdb, ptrace permission, a JDK 17, what
# fixtures/dotnet/setup.sh installs, hyperfine, heaptrack (else no peak heap), about 10 GB of free
# disk for the cores (14 GB of apparent size: the CoreCLR core has holes) and RAM to cache the largest.
set -eu
. "$(dirname "$0")/lib.sh"

build=${1:-build}
dir=${DUMPSIFT_BENCH_DIR:-/tmp/dumpsift-bench}
keep=${DUMPSIFT_BENCH_KEEP:-0}
lock=${DUMPSIFT_BENCH_LOCK-/tmp/dumpsift-cpu.lock}
here=$(dirname "$0")

command -v hyperfine >/dev/null || { echo "bench/table.sh: hyperfine missing" >&2; exit 3; }
log=$(mktemp)
cmake --build "$build" --target dumpsift fixture_big_heap >"$log" 2>&1 ||
  { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
prog=$(cd "$build" && pwd)/fixtures/big_heap
mkdir -p "$dir"
work=$(mktemp -d "$dir/table.XXXXXX")
pid=
made=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
  if [ "$keep" != 1 ]; then
    for c in $made; do rm -f "$c" "$c.json"; done
  fi
}
trap cleanup EXIT INT TERM

# The cores, as "label path" lines in the table's order; made is the list of those made now.
cores=$work/cores
: >"$cores"
for spec in "glibc-1G 1024 1" "glibc-4G 4096 4"; do
  set -- $spec
  [ -s "$dir/big_heap-$2-x$3.core" ] || made="$made $dir/big_heap-$2-x$3.core"
  big_heap_core "$prog" "$2" "$3"
  echo "$1 $core" >>"$cores"
done
core=$dir/jvm-512-10.core
if [ ! -s "$core" ]; then
  made="$made $core"
  dump_jvm "$core" 512 10
fi
echo "jvm $core" >>"$cores"
core=$dir/coreclr-2048-5.core
[ -s "$core" ] || made="$made $core"
DUMPSIFT_BENCH_KEEP=1 "$here/coreclr.sh" "$build" 2048 5 >&2
echo "coreclr $core" >>"$cores"

paths=$(cut -d' ' -f2 "$cores")
if [ -n "$lock" ]; then
  flock "$lock" "$here/floor.sh" "$build" $paths >"$work/floor.txt"
else
  "$here/floor.sh" "$build" $paths >"$work/floor.txt"
fi

head -1 "$work/floor.txt"
awk -v cores="$cores" '
  BEGIN { while ((getline line < cores) > 0) { split(line, f, " "); label[f[2]] = f[1] }
          printf "%-9s %8s  %-10s %8s %7s %6s %9s %9s\n", "dump", "size", "command", "wall_s",
                 "stddev", "x_cat", "peak_rss", "peak_heap" }
  $1 == "core" { path = substr($2, 1, length($2) - 1); size = sprintf("%.2f GB", $3 / 1e9); next }
  $1 == "cat" || $1 ~ /^analyze/ || $1 == "heap" {
    printf "%-9s %8s  %-10s %8s %7s %6s %9s %9s\n", label[path], size, $1, $2, $3, $4, $5, $6 }
' "$work/floor.txt"
echo "load after: $(uptime | sed 's/.*load average: //')"
