#!/bin/sh
# The holders pass (docs/holders.md) on the 4 GiB glibc core of bench/table.sh (big_heap-4096-x4,
# fixtures/programs/big_heap.c `big_heap 4096 4 4`): one hyperfine run of a warm `cat` of the core,
# `analyze --holders none` and `analyze --holders chains` (DUMPSIFT_BENCH_RUNS runs each, default
# 5, --threads $DUMPSIFT_BENCH_THREADS, default 0: all cores, analyze's default), then one
# `analyze --threads 1 --timings` for the pass's own time and the report's `holders.scanned_bytes`
# and `opaque_bytes`, from which the pass's throughput on one thread: of the bytes it read, and of
# the captured writable memory it covered (read, or left out as opaque).
#
# Usage: bench/holders.sh [BUILD_DIR]   (default ./build; run from the repo root)
#
# Makes the core in $DUMPSIFT_BENCH_DIR (default /tmp/dumpsift-bench) when it is missing and keeps
# it (about 4.3 GB). Needs gdb, ptrace permission, hyperfine and RAM to cache the core. Prints the
# load (uptime) before and after: timings on a shared machine mean little without it.
set -eu
. "$(dirname "$0")/lib.sh"

build=${1:-build}
dir=${DUMPSIFT_BENCH_DIR:-/tmp/dumpsift-bench}
runs=${DUMPSIFT_BENCH_RUNS:-5}
threads=${DUMPSIFT_BENCH_THREADS:-0}

command -v hyperfine >/dev/null || { echo "bench/holders.sh: hyperfine missing" >&2; exit 3; }
cmake --build "$build" --target dumpsift fixture_big_heap >/dev/null
prog=$(cd "$build" && pwd)/fixtures/big_heap
tool=$(cd "$build" && pwd)/dumpsift
mkdir -p "$dir"
work=$(mktemp -d "$dir/holders.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM

big_heap_core "$prog" 4096 4 # sets core (kept)
echo "core: $core ($(stat -c %s "$core") bytes)"
echo "load before: $(uptime)"
hyperfine --warmup 1 --runs "$runs" --export-json "$work/hyperfine.json" \
  "cat '$core' >/dev/null" \
  "'$tool' analyze --quiet --threads $threads --holders none '$core' >/dev/null" \
  "'$tool' analyze --quiet --threads $threads --holders chains '$core' >/dev/null"
/usr/bin/time -f "analyze --threads 1 --holders chains: %U s user, %S s system, peak RSS %M KiB" \
  "$tool" analyze --quiet --threads 1 --timings --report "$work/report.json" "$core" \
  2>"$work/timings.txt" >/dev/null
echo "load after: $(uptime)"
cat "$work/timings.txt"
python3 - "$work/hyperfine.json" "$work/report.json" "$work/timings.txt" <<'EOF'
import json, re, sys
runs = json.load(open(sys.argv[1]))["results"]
cat, none, chains = (r["mean"] for r in runs)
print(f"analyze --holders none:   {none:.3f} s  ({none / cat:.2f}x cat {cat:.3f} s)")
print(f"analyze --holders chains: {chains:.3f} s  ({chains / cat:.2f}x cat)")
holders = json.load(open(sys.argv[2]))["holders"]
print("holders run:", json.dumps(holders))
for line in open(sys.argv[3]):
    m = re.search(r"finding holders: ([0-9.]+) s", line)
    if m:
        seconds = float(m.group(1))
        read, opaque = holders['scanned_bytes'], holders['opaque_bytes']
        print(f"reference pass, one thread: {read / seconds / 1e9:.2f} GB/s of the bytes read "
              f"({read} bytes in {seconds:.3f} s); {(read + opaque) / seconds / 1e9:.2f} GB/s of "
              f"the captured writable memory covered ({opaque} opaque bytes not read)")
EOF
