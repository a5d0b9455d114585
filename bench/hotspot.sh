#!/bin/sh
# Times the hotspot walker and analyze on a JVM core, against analyze on a glibc core of about
# the same size.
#
# Usage: bench/hotspot.sh [BUILD_DIR] [MIB] [MILLIONS]   (default: ./build 512 10; from the repo root)
#
# Runs fixtures/java/BigHeap.java on JDK 17 (G1, -Xmx = MIB + 64 bytes per small object + 256 MiB)
# holding MIB mebibytes of the story's large arrays and MILLIONS million small objects, dumps it
# with gcore into $DUMPSIFT_BENCH_DIR (default /tmp/dumpsift-bench), then times, best of 3 by CPU
# time (user + sys, GNU time), page cache warm:
#   - dumpsift heap CORE --walker hotspot --min-size 1G -q   the walk of every object, nothing listed
#   - dumpsift analyze CORE --min-size 65536 --report r.json --threads 1
# and the same analyze on a core of fixtures/programs/big_heap.c (glibc malloc) sized to match the
# JVM core's captured bytes. Prints objects walked per second and both analyze times.
# Needs a JDK 17 (DUMPSIFT_JAVA_HOME, default /usr/lib/jvm/java-17-openjdk-amd64), gdb, ptrace,
# and about 3 x (MIB + 64 x MILLIONS) MiB of free disk. DUMPSIFT_BENCH_KEEP=1 keeps the cores.
set -eu
. "$(dirname "$0")/lib.sh"

build=${1:-build}
mib=${2:-512}
millions=${3:-10}
dir=${DUMPSIFT_BENCH_DIR:-/tmp/dumpsift-bench}
mkdir -p "$dir"
log=$(mktemp)
cmake --build "$build" --target dumpsift fixture_big_heap >"$log" 2>&1 ||
  { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
tool=$build/dumpsift
work=$(mktemp -d "$dir/hotspot.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  [ "${DUMPSIFT_BENCH_KEEP:-0}" = 1 ] && echo "cores kept in $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT INT TERM

jvm_core=$work/jvm.core
dump_jvm "$jvm_core" "$mib" "$millions"

# best_of CMD...: three runs (output discarded); prints "wall cpu" of the run with the least CPU.
best_of() {
  best=
  for _ in 1 2 3; do
    /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1
    run=$(awk '{print $1, $2 + $3}' "$work/time")
    best=$(echo "$run ${best:-1e9 1e9}" | awk '{print ($2 < $4 ? $1 " " $2 : $3 " " $4)}')
  done
  echo "$best"
}

objects=$("$tool" heap "$jvm_core" --walker hotspot --min-size 1G -q | grep -o 'hotspot_objects=[0-9]*' | cut -d= -f2)
captured() { "$tool" info "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["dump"]["captured_bytes"])'; }
jvm_bytes=$(captured "$jvm_core")
walk=$(best_of "$tool" heap "$jvm_core" --walker hotspot --min-size 1G -q)
jvm_analyze=$(best_of "$tool" analyze "$jvm_core" --min-size 65536 --report "$work/r.json" --threads 1 -q)

# A glibc core with as many captured bytes: big_heap's MIB is what it holds in malloc.
glibc_mib=$((jvm_bytes / 1048576 * 9 / 10))
dump_when_ready "$work/glibc.core" "$build/fixtures/big_heap" "$glibc_mib" 4 1
glibc_bytes=$(captured "$work/glibc.core")
glibc_analyze=$(best_of "$tool" analyze "$work/glibc.core" --min-size 65536 --report "$work/r.json" --threads 1 -q)

echo "JVM core: $(wc -c <"$jvm_core") bytes, $jvm_bytes captured; $objects objects in the Java heap"
echo "$walk $objects" | awk '{printf "%-44s wall %.3f s, cpu %.3f s  (%.1f M objects/s by cpu)\n", "heap --walker hotspot --min-size 1G", $1, $2, $3 / $2 / 1e6}'
echo "$jvm_analyze $jvm_bytes" | awk '{printf "%-44s wall %.3f s, cpu %.3f s  (%.2f GB/s captured by cpu)\n", "analyze JVM core --threads 1", $1, $2, $3 / $2 / 1e9}'
echo "glibc core: $(wc -c <"$work/glibc.core") bytes, $glibc_bytes captured (big_heap $glibc_mib)"
echo "$glibc_analyze $glibc_bytes" | awk '{printf "%-44s wall %.3f s, cpu %.3f s  (%.2f GB/s captured by cpu)\n", "analyze glibc core --threads 1", $1, $2, $3 / $2 / 1e9}'
