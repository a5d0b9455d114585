#!/bin/sh
# The floor under `analyze`: how fast this machine reads the bytes an analyze report needs, timed
# against `cat` (every byte) and `dumpsift analyze` in one hyperfine run.
#
# Usage: bench/needed_floor.sh BUILD_DIR CORE   (run from the repo root)
#
# Runs `dumpsift analyze CORE --min-size 65536 --threads 2 --report R` once, lists the file
# ranges that report cannot be made without (bench/needed_reads.py: zero proofs, both sides of
# copies, zero tails, JPEG streams to their end, fingerprint windows and heads; and the same
# without the JPEG walks), builds bench/read_ranges.cpp, then times with the core in the page
# cache (DUMPSIFT_BENCH_RUNS runs each, default 10):
#   - cat CORE > /dev/null                      the floor of issue 21's ratio
#   - read_ranges CORE NEEDED 1 / 2             the needed bytes through mmap on 1 and 2 threads,
#                                               pages released behind (as dumpsift reads them)
#   - read_ranges CORE NEEDED 2 pread           the same copied with pread (as cat reads)
#   - read_ranges CORE NEEDED_NO_JPEG 2         without the JPEG marker walks
#   - dumpsift analyze CORE --min-size 65536 --threads 2 --report R --quiet
# and prints each command's mean and best wall time, CPU (user + sys) and ratio to cat's mean.
# Run it alone on the machine (`flock /tmp/dumpsift-cpu.lock bench/needed_floor.sh ...`).
set -eu

build=${1:?usage: bench/needed_floor.sh BUILD_DIR CORE}
core=${2:?usage: bench/needed_floor.sh BUILD_DIR CORE}
runs=${DUMPSIFT_BENCH_RUNS:-10}
here=$(cd "$(dirname "$0")" && pwd)
tool=$(cd "$build" && pwd)/dumpsift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

c++ -std=c++20 -O2 -pthread "$here/read_ranges.cpp" -o "$work/read_ranges"
"$tool" analyze "$core" --min-size 65536 --threads 2 --report "$work/r.json" --quiet
python3 "$here/needed_reads.py" "$core" "$work/r.json" >"$work/needed" 2>"$work/needed.txt"
python3 "$here/needed_reads.py" "$core" "$work/r.json" --no-jpeg >"$work/nojpeg" 2>"$work/nojpeg.txt"
echo "needed: $(cat "$work/needed.txt"); without JPEG walks: $(cat "$work/nojpeg.txt")"
echo "load before: $(uptime | sed 's/.*load average: //')"

reader=$work/read_ranges
cat "$core" >/dev/null
hyperfine -N --warmup 1 --runs "$runs" --export-json "$work/h.json" \
  "cat $core" \
  "$reader $core $work/needed 1" \
  "$reader $core $work/needed 2" \
  "$reader $core $work/needed 2 pread" \
  "$reader $core $work/nojpeg 2" \
  "$tool analyze $core --min-size 65536 --threads 2 --report $work/r2.json --quiet" \
  >/dev/null 2>&1 || { echo "hyperfine failed" >&2; exit 1; }
python3 - "$work/h.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
names = ["cat", "needed, mmap, 1 thread", "needed, mmap, 2 threads", "needed, pread, 2 threads",
         "needed without JPEG walks, mmap, 2", "dumpsift analyze --threads 2"]
floor = results[0]["mean"]
print(f"{'command':36} {'mean_s':>7} {'best_s':>7} {'cpu_s':>6} {'x_cat':>6}")
for name, r in zip(names, results):
    print(f"{name:36} {r['mean']:7.3f} {r['min']:7.3f} {r['user'] + r['system']:6.3f} "
          f"{r['mean'] / floor:6.2f}")
PY
echo "load after: $(uptime | sed 's/.*load average: //')"
