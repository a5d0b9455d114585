#!/bin/sh
# Times a heap walker on a core holding 1,000,000 live small allocations.
#
# Usage: bench/heap_million.sh [BUILD_DIR]   (default ./build; run from the repository root)
# Builds dumpsift and fixtures/programs/million_allocs.c, runs the program, dumps it with gcore
# into /tmp, then times (best of 3, page cache warm):
#   - `dumpsift heap CORE --min-size 0`   end to end: open, walk, sort, print 1M lines
#   - `dumpsift heap CORE --min-size 1G`  the same walk with nothing listed (walk cost)
#   - `gdb -batch -ex 'info proc mappings' -c CORE`, as a reference for just opening the core
# and prints chunks per second (the chunk count is the walker's `chunks` fact where it has one,
# else the number of allocations `heap --min-size 0` lists).
# Other allocators than glibc's:
#   DUMPSIFT_BENCH_PRELOAD=LIB     runs the program with LD_PRELOAD=LIB (jemalloc, tcmalloc, ...)
#   DUMPSIFT_BENCH_PROGRAM=PATH    runs PATH instead (a build of million_allocs.c for another
#                                  allocator, e.g. musl-gcc -static); it must behave the same
# Needs gdb (gcore) and permission to ptrace a child (yama ptrace_scope 0, or root).
set -eu

build=${1:-build}
log=$(mktemp)
cmake --build "$build" --target dumpsift fixture_million_allocs >"$log" 2>&1 ||
  { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
tool=$build/dumpsift
prog=${DUMPSIFT_BENCH_PROGRAM:-$build/fixtures/million_allocs}

work=$(mktemp -d /tmp/heap_million.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

if [ -n "${DUMPSIFT_BENCH_PRELOAD:-}" ]; then
  LD_PRELOAD=$DUMPSIFT_BENCH_PRELOAD "$prog" >"$work/stdout" &
else
  "$prog" >"$work/stdout" &
fi
pid=$!
tries=0
until grep -qx READY "$work/stdout" 2>/dev/null; do
  tries=$((tries + 1))
  [ "$tries" -lt 300 ] || { echo "million_allocs did not print READY" >&2; exit 1; }
  sleep 0.1
done
gcore -o "$work/core" "$pid" >"$work/gcore.log" 2>&1 || { cat "$work/gcore.log" >&2; exit 1; }
core=$work/core.$pid
kill "$pid"
pid=

# best_of CMD...: runs CMD three times (output discarded); prints "wall cpu" in seconds for the run
# with the least CPU time (user + sys, from GNU time; wall clock alone when it is missing). CPU
# time is the figure to compare: wall time includes waiting for a CPU on a loaded machine.
best_of() {
  best=
  for _ in 1 2 3; do
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1
      run=$(awk '{print $1, $2 + $3}' "$work/time")
    else
      t0=$(date +%s.%N)
      "$@" >/dev/null 2>&1
      t1=$(date +%s.%N)
      run=$(echo "$t0 $t1" | awk '{print $2 - $1, $2 - $1}')
    fi
    best=$(echo "$run ${best:-1e9 1e9}" | awk '{print ($2 < $4 ? $1 " " $2 : $3 " " $4)}')
  done
  echo "$best"
}

"$tool" heap "$core" --min-size 0 >"$work/heap.txt"
chunks=$(grep -o ' chunks=[0-9]*' "$work/heap.txt" | head -1 | cut -d= -f2)
listed=$(awk '/allocations of at least/ {print $1}' "$work/heap.txt")
[ -n "$chunks" ] || chunks=$(echo "$listed" | tr -d ,)
full=$(best_of "$tool" heap "$core" --min-size 0)
walk=$(best_of "$tool" heap "$core" --min-size 1G)
gdbref=$(best_of gdb -batch -ex 'info proc mappings' -c "$core")

echo "core: $(wc -c <"$core") bytes; chunks walked: $chunks; allocations listed: $listed"
report() {
  echo "$2 $chunks" | awk -v what="$1" '{printf "%-28s wall %.3f s, cpu %.3f s  (%.1f M chunks/s by cpu, %.1f by wall)\n", what, $1, $2, $3 / $2 / 1e6, $3 / $1 / 1e6}'
}
report "dumpsift heap --min-size 0" "$full"
report "dumpsift heap --min-size 1G" "$walk"
echo "$gdbref" | awk '{printf "%-28s wall %.3f s, cpu %.3f s  (reference: opening the core)\n", "gdb info proc mappings", $1, $2}'
echo "(--min-size 0 prints all $listed allocations; --min-size 1G does the same walk and prints none)"
