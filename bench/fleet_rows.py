#!/usr/bin/env python3
"""Makes a fleet directory of many rows from a few real ones, for bench/fleet.sh.

Usage: fleet_rows.py BASE_DIR OUT_DIR ROWS

BASE_DIR is a `dumpsift fleet task --out` directory whose rows are real reports labelled with a
service (api, worker) and a version. OUT_DIR gets a manifest.jsonl of ROWS rows and, per row, the
status and report `fleet task` would have written: row k is of service "<base>-<k % 20>" (the
base service alternating api, worker) and version number (k // 20) % 5 among the base's versions
in order; its report is the base report of that base service and version with the row's labels
and dump path. One row in 100 is a final bad-input status without a report, as a file that is not
a dump leaves it.
"""
import json
import os
import sys

SERVICES = 20


def main():
    base_dir, out_dir, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    base = {}
    versions = []
    with open(os.path.join(base_dir, "manifest.jsonl")) as manifest:
        for line in manifest:
            row = json.loads(line)
            labels = row["labels"]
            with open(os.path.join(base_dir, row["id"] + ".report.json")) as f:
                base[(labels["service"], labels["version"])] = json.load(f)
            if labels["version"] not in versions:
                versions.append(labels["version"])
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "manifest.jsonl"), "w") as manifest:
        for k in range(rows):
            base_service = "api" if k % SERVICES % 2 == 0 else "worker"
            service = "%s-%02d" % (base_service, k % SERVICES)
            version = versions[(k // SERVICES) % len(versions)]
            row_id = "%s-%s-%05d" % (service, version, k)
            dump = "/data/fleet/%s.core" % row_id
            labels = {"service": service, "version": version}
            manifest.write(json.dumps({"id": row_id, "dump": dump, "labels": labels}) + "\n")
            status = {"attempts": 1, "dump": dump, "id": row_id, "outcome": "ok", "row": k}
            if k % 100 == 99:
                status["outcome"] = "bad-input"
                status["error"] = "'%s': not a core dump or minidump (unrecognised magic)" % dump
            else:
                report = base[(base_service, version)]
                report["dump"]["path"] = dump
                report["labels"] = labels
                with open(os.path.join(out_dir, row_id + ".report.json"), "w") as f:
                    json.dump(report, f, indent=2, ensure_ascii=False)
                    f.write("\n")
            with open(os.path.join(out_dir, row_id + ".status.json"), "w") as f:
                f.write(json.dumps(status, separators=(",", ":"), sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
