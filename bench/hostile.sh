#!/bin/sh
# Issue 24's hostile dumps, one per class (bench/hostile_dumps.py writes them into BUILD/hostile),
# through `info` and `analyze`: wall time and peak RSS of each run from /usr/bin/time -v. The
# budget is 5 s and 256 MiB per run.
# Usage: bench/hostile.sh [BUILD_DIR]   (default build; the dumps are kept for the next run)
set -eu
build=${1:-build}
out=$build/hostile
here=$(dirname "$0")
for dump in aliased.core aliased.dmp ranges.dmp gzip.core escapes.dmp jpegs.core pointers.core; do
  [ -f "$out/$dump" ] || python3 "$here/hostile_dumps.py" "$out" "$dump"
done
for dump in aliased.core aliased.dmp ranges.dmp gzip.core escapes.dmp jpegs.core pointers.core; do
  # analyze without --quiet: its summary is part of the run the budget bounds.
  for command in info analyze; do
    /usr/bin/time -v "$build/dumpsift" $command "$out/$dump" >/dev/null 2>"$out/time.txt" || true
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out/time.txt")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/time.txt")
    printf '%-14s %-8s %10s %8s MiB\n' "$dump" "$command" "$wall" "$((rss / 1024))"
  done
done
