#!/usr/bin/python3
"""Validates truffld raw-event dumps (.jsonl) against schemas/events.schema.json.

Usage: validate_events.py SCHEMA DUMP [DUMP ...]
Prints one line per invalid record (file:line: problem) and exits 1 if any; 0 when all valid.
A truncated last line (killed process) is reported but allowed, as the contract says.
"""
import json
import sys

import jsonschema


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    for path in argv[2:]:
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        for no, raw in enumerate(lines, 1):
            if not raw:
                continue
            last = no == len(lines)
            try:
                rec = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                if last:
                    print(f"{path}:{no}: truncated last line (allowed): {e}")
                    continue
                print(f"{path}:{no}: not JSON: {e}")
                bad += 1
                continue
            for err in validator.iter_errors(rec):
                print(f"{path}:{no}: {err.message}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
