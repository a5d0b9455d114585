# Shell functions shared by the bench scripts (sourced: `. "$(dirname "$0")/lib.sh"`). The caller
# sets $work (a scratch directory) and kills $pid, while it is set, in its cleanup trap.

# dump_when_ready CORE PROGRAM [ARGS...]: runs PROGRAM until it prints the line READY, dumps it
# with gcore into CORE, stops it, and keeps its first output line (its manifest) in CORE.json.
dump_when_ready() {
  dump_core=$1
  shift
  "$@" >"$work/stdout" &
  pid=$!
  until grep -qx READY "$work/stdout" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "$* failed before printing READY" >&2; exit 1; }
    sleep 0.2
  done
  gcore -o "$work/core" "$pid" >"$work/gcore.log" 2>&1 || { cat "$work/gcore.log" >&2; exit 1; }
  mv "$work/core.$pid" "$dump_core"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
  head -1 "$work/stdout" >"$dump_core.json"
}

# big_heap_core PROG MIB SCALE: sets core to $dir/big_heap-MIB-xSCALE.core, a core of PROG
# (fixtures/programs/big_heap.c) holding MIB mebibytes on 4 threads, its large buffers SCALE times
# the story's sizes; dumps it only when that file does not exist yet.
big_heap_core() {
  core=$dir/big_heap-$2-x$3.core
  [ -s "$core" ] || dump_when_ready "$core" "$1" "$2" 4 "$3"
}

# dump_jvm CORE MIB MILLIONS: compiles fixtures/java/BigHeap.java into $work and dumps it into
# CORE: a G1 JVM (JDK 17, DUMPSIFT_JAVA_HOME, default /usr/lib/jvm/java-17-openjdk-amd64; -Xms =
# -Xmx = MIB + 64 bytes per small object + 256 MiB) holding MIB mebibytes of the story's large
# arrays and MILLIONS million small objects.
dump_jvm() {
  java_home=${DUMPSIFT_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
  "$java_home/bin/javac" -d "$work" "$(dirname "$0")/../fixtures/java/BigHeap.java"
  heap_mib=$(($2 + $3 * 64 + 256))
  dump_when_ready "$1" env MALLOC_ARENA_MAX=2 "$java_home/bin/java" -XX:+UseG1GC \
    -Xms${heap_mib}m -Xmx${heap_mib}m -XX:-UsePerfData -cp "$work" BigHeap "$2" "$3"
}
