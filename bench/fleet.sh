#!/bin/sh
# What `dumpsift fleet report` costs over a fleet of 5,000 small reports (docs/fleet.md).
#
# Usage: bench/fleet.sh [BUILD_DIR] [REPORTS]   (default: ./build and 5000; from the repo root)
#
# 1. Dumps fixtures/programs/fleet_service.c with gcore in two services (api, worker) and five
#    versions (1.0 to 1.4), and analyzes the ten dumps with `fleet task` (real reports, labelled).
# 2. Makes a fleet directory of REPORTS rows from them (bench/fleet_rows.py): 20 services (api-00,
#    worker-01, ...) of 5 versions each; each row's report is the real report of its base service
#    and version with the row's labels and dump path, and one row in 100 is a final bad-input
#    status without a report. A sample of 50 reports is validated against docs/report.schema.json
#    (scripts/validate_report.py).
# 3. Times `fleet report DIR --db FILE --json FILE --html FILE` (a new database), then the same
#    again into the same file (every dump's rows replaced), with GNU time: wall seconds,
#    CPU and peak RSS, and prints the database's and the page's sizes and the answers' counts.
set -eu
. "$(dirname "$0")/lib.sh"

build=${1:-build}
reports=${2:-5000}
cmake --build "$build" --target dumpsift fixture_fleet_service >/dev/null
tool=$(cd "$build" && pwd)/dumpsift
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# 1. Ten real dumps and their reports.
: >"$work/base.jsonl"
for service in api worker; do
  for version in 1.0 1.1 1.2 1.3 1.4; do
    dump_when_ready "$work/$service-$version.core" "$build/fixtures/fleet_service" "$service" "$version"
    printf '{"id":"%s-%s","dump":"%s-%s.core","labels":{"service":"%s","version":"%s"}}\n' \
      "$service" "$version" "$service" "$version" "$service" "$version" >>"$work/base.jsonl"
  done
done
for index in 0 1 2 3 4 5 6 7 8 9; do
  "$tool" fleet task "$work/base.jsonl" --out "$work/base" --index "$index" 2>>"$work/base.log"
done
rm -f "$work"/*.core

# 2. The fleet directory of REPORTS rows.
python3 "$(dirname "$0")/fleet_rows.py" "$work/base" "$work/fleet" "$reports"
sample=$(find "$work/fleet" -name '*.report.json' | sort | awk 'NR % 97 == 1' | head -50)
# shellcheck disable=SC2086  # a list of paths without spaces
python3 scripts/validate_report.py docs/report.schema.json $sample
echo "reports: $(find "$work/fleet" -name '*.report.json' | wc -l) valid per the schema (a sample" \
  "of $(echo "$sample" | wc -l) checked), $(du -sh "$work/fleet" | cut -f1) on disk"

# 3. fleet report, into a new database, then again into the same one.
for run in new again; do
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$tool" fleet report "$work/fleet" \
    --db "$work/fleet.sqlite" --json "$work/fleet.json" --html "$work/fleet.html" -q
  read -r wall user sys rss_kib <"$work/time"
  echo "fleet report ($run database): wall ${wall} s, CPU ${user} s user + ${sys} s sys," \
    "peak RSS $((rss_kib / 1024)) MiB"
done
echo "database $(du -h "$work/fleet.sqlite" | cut -f1), page $(du -h "$work/fleet.html" | cut -f1)"
python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
print("answers: outcomes %s, %d recurring groups, %d new groups, %d kind rows" % (
    a["outcome_counts"], len(a["recurring_groups"]), len(a["new_groups"]), len(a["kind_bytes"])))
' "$work/fleet.json"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
