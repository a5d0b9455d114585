#!/bin/sh
# Times the go walker on a core of a Go program holding 4,000,000 live small objects.
#
# Usage: bench/go_heap.sh [BUILD_DIR]   (default ./build; a Release build for figures; run from
# the repository root)
# Builds dumpsift and bench/go_million.go (Debian's Go), runs the program, dumps it with gcore
# into a scratch directory of BUILD_DIR (about 1.1 GB, deleted at the end), then times (best of 3
# by CPU, page cache warm) `dumpsift heap CORE --walker go --min-size 1G` (the whole walk, nothing
# listed) and prints objects per second (the walker's used + free count) by CPU and by wall.
# Needs go, gdb (gcore) and permission to ptrace a child.
set -eu

build=${1:-build}
cmake --build "$build" --target dumpsift >/dev/null
tool=$build/dumpsift
work=$(mktemp -d "$build/go_heap.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

GOCACHE=$work/go-cache GOPATH=$work/go-path GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
  go build -o "$work/go_million" bench/go_million.go
"$work/go_million" >"$work/stdout" &
pid=$!
tries=0
until grep -qx READY "$work/stdout" 2>/dev/null; do
  tries=$((tries + 1))
  [ "$tries" -lt 600 ] || { echo "go_million did not print READY" >&2; exit 1; }
  sleep 0.1
done
gcore -o "$work/core" "$pid" >"$work/gcore.log" 2>&1 || { cat "$work/gcore.log" >&2; exit 1; }
core=$work/core.$pid
kill "$pid"
pid=

objects=$("$tool" heap "$core" --walker go --min-size 1G |
  awk '/^  used /{gsub(",", ""); print $2 + $6; exit}')
best=
for _ in 1 2 3; do
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$tool" heap "$core" --walker go --min-size 1G \
    >/dev/null 2>&1
  run=$(awk '{print $1, $2 + $3, $4}' "$work/time")
  cpu=$(echo "$run" | cut -d' ' -f2)
  if [ -z "$best" ] || awk -v a="$cpu" -v b="$(echo "$best" | cut -d' ' -f2)" 'BEGIN{exit !(a < b)}'; then
    best=$run
  fi
done
echo "$best" | awk -v n="$objects" -v size="$(stat -c %s "$core")" '{
  printf "core %.0f MB, %d objects: wall %.3f s, cpu %.3f s, peak RSS %.1f MB, %.1f M objects/s by cpu, %.1f M by wall\n",
    size / 1e6, n, $1, $2, $3 / 1024, n / ($2 > 0 ? $2 : 0.001) / 1e6, n / ($1 > 0 ? $1 : 0.001) / 1e6 }'
