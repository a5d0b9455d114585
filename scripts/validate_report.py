#!/usr/bin/python3
"""Validates dumpsift JSON reports against docs/report.schema.json (Debian's python3-jsonschema).

Usage: validate_report.py SCHEMA REPORT [REPORT...]; exit 0 when all are valid, 1 otherwise."""
import json
import sys

import jsonschema


def main() -> int:
    schema = json.load(open(sys.argv[1]))
    validator = jsonschema.Draft202012Validator(schema)
    ok = True
    for path in sys.argv[2:]:
        report = json.load(open(path))
        for error in validator.iter_errors(report):
            ok = False
            where = "/".join(str(p) for p in error.absolute_path)
            print(f"{path}: {where}: {error.message}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
