#!/usr/bin/env python3
"""Adds up meson's testlog.json of each build directory given and prints the CI summary line."""
import json, sys, pathlib

passed = failed = skipped = 0
for d in sys.argv[1:]:
    log = pathlib.Path(d) / "meson-logs" / "testlog.json"
    if not log.exists():
        print(f"{d}: no test log", file=sys.stderr)
        failed += 1
        continue
    for line in log.read_text().splitlines():
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
