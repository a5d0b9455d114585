#!/bin/sh
# What dumpsift reads from disk when the dump is not in the page cache (a production dump copied
# from a server and analyzed once), against the floor: `cat` of the same file, cold too. Each run
# drops the core's own pages from the page cache first (posix_fadvise DONTNEED: no root needed,
# other files stay cached; never a machine-wide drop), then times, alternating, `cat CORE`, the
# heap walk alone (`heap CORE --min-size 1G`) and a whole `analyze`.
#
# Usage: bench/cold.sh DUMPSIFT CORE [RUNS]   (RUNS of each command, default 2)
# Prints per run: wall time, major faults, and the bytes read from disk (GNU time's file system
# inputs, 512-byte blocks) against the core's size; then each command's mean wall time and its
# ratio to cat's (the issue 34 acceptance: analyze <= 1.0x cat), with the load average. Leaves the
# core in the page cache again (cat) for the warm benches.
set -eu
tool=${1:?usage: bench/cold.sh DUMPSIFT CORE [RUNS]}
core=${2:?usage: bench/cold.sh DUMPSIFT CORE [RUNS]}
runs=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
size=$(stat -c %s "$core")

drop() {
  python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$core"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
  for command in "cat" "heap --min-size 1G" "analyze --min-size 65536 --threads 2 --quiet --report $work/r.json"; do
    drop
    if [ "$command" = cat ]; then
      /usr/bin/time -f '%e %F %I' -o "$work/time" cat "$core" >/dev/null
    else
      # shellcheck disable=SC2086 # the command's words
      /usr/bin/time -f '%e %F %I' -o "$work/time" "$tool" $command "$core" >/dev/null 2>&1
    fi
    awk -v what="${command%% *}" -v size="$size" '{
      printf "%-8s wall %6.2f s  major faults %7d  read from disk %8.1f MiB (%.3f of the core)\n",
        what, $1, $2, $3 * 512 / 1048576, $3 * 512 / size }' "$work/time"
    awk -v what="${command%% *}" '{ print what, $1 }' "$work/time" >>"$work/walls"
  done
done
awk '{ sum[$1] += $2; n[$1]++ } END {
  floor = sum["cat"] / n["cat"]
  for (w in sum) printf "mean %-8s %6.2f s  %.2fx cold cat\n", w, sum[w] / n[w], sum[w] / n[w] / floor
}' "$work/walls" | sort
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$core" >/dev/null
