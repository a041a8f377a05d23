#!/usr/bin/env python3
"""Adds up meson's testlog.json of each build directory given and prints the CI summary line.

An argument --broken=DIR names a build whose setup or compile failed; it counts as one failure."""
import json, sys, pathlib

passed = failed = skipped = 0
for arg in sys.argv[1:]:
    if arg.startswith("--broken="):  # a build that did not set up or compile: one failure
        print(f"{arg[len('--broken='):]}: build failed, its tests did not run", file=sys.stderr)
        failed += 1
        continue
    d = arg
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
