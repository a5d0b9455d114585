#!/bin/sh
# What dumpsift reads from disk when the dump is not in the page cache: the heap walk alone
# (`heap CORE --min-size 1G`) and a whole `analyze`, each run after the core's pages are dropped
# from the page cache (posix_fadvise DONTNEED: no root needed, other files stay cached).
#
# Usage: bench/cold.sh DUMPSIFT CORE [RUNS]   (RUNS per command, default 2)
# Prints per run: wall time, major faults, and the bytes read from disk (GNU time's file system
# inputs, 512-byte blocks) against the core's size. The walk reads chunk headers all over the
# heaps; the kernel's readahead around each one is what AddressSpace::adviseAccess(Random)
# turns off. Leaves the core in the page cache again (cat) for the warm benches.
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

for command in "heap --min-size 1G" "analyze --min-size 65536 --threads 2 --quiet --report $work/r.json"; do
  for _ in $(seq "$runs"); do
    drop
    # shellcheck disable=SC2086 # the command's words
    /usr/bin/time -f '%e %F %I' -o "$work/time" "$tool" $command "$core" >/dev/null 2>&1
    awk -v what="${command%% *}" -v size="$size" '{
      printf "%-8s wall %6.2f s  major faults %7d  read from disk %8.1f MiB (%.3f of the core)\n",
        what, $1, $2, $3 * 512 / 1048576, $3 * 512 / size }' "$work/time"
  done
done
cat "$core" >/dev/null
