#!/bin/bash
# Runs the libFuzzer targets (docs/fuzzing.md), one after the other, one job each.
#
#   bench/fuzz.sh [-t SECONDS] [-b BUILD_DIR] [TARGET...]
#   bench/fuzz.sh -l
#
# SECONDS per target (default 600); BUILD_DIR is a -DDUMPSIFT_FUZZ=ON build (default build-fuzz);
# TARGETs default to every target of tests/fuzz/fuzz_targets.def, which -l prints, one a line.
# Each run starts from the seeds in fixtures/corpus/<target>/ (pipeline: those of elf_core,
# minidump and glibc_walker too) and keeps what it finds in
# BUILD_DIR/fuzz-work/<target>/ (the committed corpus stays small). A crash, leak, timeout
# (-timeout=5) or out-of-memory (-rss_limit_mb=2048) stops the target and leaves the input in
# fixtures/corpus/crashes/; fix it, then move the file to fixtures/corpus/<target>/regress-<what>.
# Prints one line per target: executions per second, coverage (cov: edges, ft: features), corpus
# size, result. Exit status 1 when any target failed.
set -uo pipefail

seconds=600
build=""
list=false
while getopts "t:b:l" opt; do
  case "$opt" in
  t) seconds="$OPTARG" ;;
  b) build="$OPTARG" ;;
  l) list=true ;;
  *) sed -n '2,15p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The rows "DUMPSIFT_FUZZ_TARGET(name, function)" of the target list.
mapfile -t all < <(sed -n 's/^DUMPSIFT_FUZZ_TARGET(\([a-z0-9_]*\),.*/\1/p' \
  "$root/tests/fuzz/fuzz_targets.def")
if $list; then
  printf '%s\n' "${all[@]}"
  exit 0
fi
build="$(cd "${build:-$root/build-fuzz}" && pwd)"
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
crashes="$root/fixtures/corpus/crashes"
mkdir -p "$crashes" "$build/fuzz-work"

status=0
printf '%-16s %8s %8s %8s %10s %s\n' target exec/s cov ft corpus result
for t in "${targets[@]}"; do
  exe="$build/tests/fuzz_$t"
  if [[ ! -x "$exe" ]]; then
    echo "fuzz.sh: $exe missing: cmake --build $build --target fuzzers" >&2
    status=1
    continue
  fi
  work="$build/fuzz-work/$t"
  log="$build/fuzz-work/$t.log"
  mkdir -p "$work"
  seeds=("$root/fixtures/corpus/$t")
  [[ $t == pipeline ]] && seeds+=("$root"/fixtures/corpus/{elf_core,minidump,glibc_walker})
  # A minidump's structure (directory, lists, strings) fits in 24 KiB; left to the largest seed
  # (92 KB), the corpus fills with copies of its memory and runs at half the rate, for the same
  # coverage (docs/fuzzing.md). Seeds past the limit are read cut there; the replay test runs
  # them whole.
  limit=()
  [[ $t == minidump ]] && limit=(-max_len=24576)
  "$exe" "$work" "${seeds[@]}" -max_total_time="$seconds" -timeout=5 "${limit[@]}" \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/$t-" >"$log" 2>&1
  rc=$?
  last="$(grep -E '^#[0-9]+' "$log" | tail -1)"
  execs="$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$')"
  cov="$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+')"
  ft="$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+')"
  corp="$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$last" | cut -d' ' -f2)"
  result=ok
  if ((rc != 0)); then
    result="FAILED (exit $rc): $(grep -m1 -oE 'ERROR: [A-Za-z]+: [^ ]+( [^ ]+)?|fuzz check failed.*|Test unit written to .*' "$log" | head -1); log $log"
    status=1
  fi
  printf '%-16s %8s %8s %8s %10s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
exit $status
