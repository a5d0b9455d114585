#!/bin/sh
# Makes a production-sized CoreCLR core for the bench, and checks that the coreclr walker finds
# every large byte[] in it.
#
# Usage: bench/coreclr.sh [BUILD_DIR] [MIB] [MILLIONS]   (default: ./build 2048 5; from the repo root)
#
# Compiles bench/LohBench.cs with mcs and runs it on the .NET Core 2.0 runtime that
# fixtures/dotnet/setup.sh unpacks (workstation GC, the runtime's defaults, as
# fixtures/dotnet/make_cores.sh runs LohArrays.exe): about MIB mebibytes of byte[] on the Large
# Object Heap (slices of the JPEG that make_cores.sh makes, aws-chunked frames carrying them,
# copies, zero-filled and random arrays, 128 KiB to 2 MiB) and MILLIONS million small objects.
# Dumps it with gcore into $DUMPSIFT_BENCH_DIR/coreclr-MIB-MILLIONS.core (default
# /tmp/dumpsift-bench; the program's JSON line in CORE.json) and punches holes in the core's zero
# ranges (`fallocate --dig-holes`: gdb writes the runtime's reserved address space, about 2.5 GB,
# as zeros). Then runs `dumpsift analyze CORE --min-size 65536` once and checks that the coreclr
# walker reported as many byte[] as the program held, with as many payload bytes; exit status 1
# when not. Times nothing (bench/floor.sh and bench/table.sh do).
#
# A core that exists already is reused. A core this run made is kept when DUMPSIFT_BENCH_KEEP=1
# and removed otherwise. Needs mcs, mono, cjpeg, gdb and the runtime (fixtures/dotnet/setup.sh),
# ptrace permission, about MIB + 1 GiB of free RAM and disk (more apparent size: the holes).
set -eu
. "$(dirname "$0")/lib.sh"

build=${1:-build}
mib=${2:-2048}
millions=${3:-5}
dir=${DUMPSIFT_BENCH_DIR:-/tmp/dumpsift-bench}
keep=${DUMPSIFT_BENCH_KEEP:-0}
here=$(cd "$(dirname "$0")" && pwd)
dotnet=${DUMPSIFT_CACHE:-$HOME/.cache/dumpsift}/dotnet/package/dotnet

for t in mcs mono cjpeg gcore; do
  command -v "$t" >/dev/null 2>&1 ||
    { echo "bench/coreclr.sh: $t missing; run fixtures/dotnet/setup.sh" >&2; exit 3; }
done
[ -x "$dotnet" ] || { echo "bench/coreclr.sh: $dotnet missing; run fixtures/dotnet/setup.sh" >&2; exit 3; }
log=$(mktemp)
cmake --build "$build" --target dumpsift >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
tool=$(cd "$build" && pwd)/dumpsift
mkdir -p "$dir"
core=$dir/coreclr-$mib-$millions.core
work=$(mktemp -d "$dir/coreclr.XXXXXX")
pid=
made=0
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
  [ "$made" = 1 ] && [ "$keep" != 1 ] && rm -f "$core" "$core.json" || true
}
trap cleanup EXIT INT TERM

if [ ! -s "$core" ]; then
  made=1
  mcs -nologo -optimize+ -out:"$work/LohBench.exe" "$here/LohBench.cs"
  mcs -nologo -optimize+ -out:"$work/MakeImage.exe" "$here/../fixtures/dotnet/MakeImage.cs"
  mono "$work/MakeImage.exe" "$work/image.ppm"
  cjpeg -quality 90 -outfile "$work/image.jpg" "$work/image.ppm"
  cat >"$work/LohBench.runtimeconfig.json" <<'JSON'
{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"2.0.0"},
 "configProperties":{"System.Globalization.Invariant":true}}}
JSON
  dump_when_ready "$core" "$dotnet" exec --runtimeconfig "$work/LohBench.runtimeconfig.json" \
    "$work/LohBench.exe" "$work/image.jpg" "$mib" "$millions"
  fallocate --dig-holes "$core" 2>/dev/null || true
fi
echo "core $core: $(wc -c <"$core") bytes ($(du -h "$core" | cut -f1) on disk); $(cat "$core.json")"

"$tool" analyze "$core" --min-size 65536 --report "$work/r.json" --quiet
python3 - "$work/r.json" "$core.json" <<'EOF'
import collections, json, sys
report = json.load(open(sys.argv[1]))
held = json.load(open(sys.argv[2]))
arrays = [b for b in report["buffers"]
          if b["allocator"] == "coreclr" and b.get("managed", {}).get("type") == "byte[]"]
elements = sum(b["managed"]["length"] for b in arrays)
kinds = collections.Counter(b["kind"] for b in arrays)
places = collections.Counter(b["managed"].get("heap_kind") or "?" for b in arrays)
facts = next((h["facts"] for h in report["heaps"] if h["walker"] == "coreclr"), {})
print(f"coreclr walker: {len(arrays)} byte[] of 65,536 bytes or more, {elements} bytes of elements "
      f"(the program held {held['large_arrays']}, {held['large_bytes']} bytes)")
print("  kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()) +
      "; heap_kind: " + ", ".join(f"{k} {n}" for k, n in places.most_common()))
print(f"  segments {facts.get('coreclr_segments', '?')}, objects walked "
      f"{facts.get('coreclr_objects_walked', '?')} (the program held {held['small_objects']} small ones), "
      f"{len(report['diagnostics'])} diagnostics")
if len(arrays) != held["large_arrays"] or elements != held["large_bytes"]:
    print("bench/coreclr.sh: the coreclr walker did not report every large byte[]", file=sys.stderr)
    sys.exit(1)
EOF
