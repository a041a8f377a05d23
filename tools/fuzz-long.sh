#!/usr/bin/env bash
# Long libFuzzer pass over every zipnet fuzz target (the CI `fuzz` suite runs the same targets for
# seconds). One worker per target, one target after another, at nice 19: it shares the machine.
# Prints each target's final libFuzzer stats (executions, corpus, coverage) and keeps the logs and any
# crash inputs under the work directory. Record a run in docs/reliability.md.
#
# Usage: tools/fuzz-long.sh [--seconds N] [--build DIR] [--work DIR] [--reseed] [TARGET...]
#   --seconds N  time per target (default 1800)
#   --build DIR  clang fuzz build directory (default build-fuzz-long; set up here if missing)
#   --work DIR   logs, new inputs and crashes (default DIR/fuzz-long)
#   --reseed     regenerate test/fuzz/corpus/{decode,roundtrip} from the shipped tensors first
#   TARGET       fuzz_decode, fuzz_roundtrip, fuzz_handshake (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=1800 build=build-fuzz-long work="" reseed=0 targets=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --reseed) reseed=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(fuzz_decode fuzz_roundtrip fuzz_handshake)
work=${work:-$build/fuzz-long}

if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" --buildtype=debugoptimized -Dfuzz=true -Dcuda=disabled -Dtests=false
fi
nice -n 19 ninja -C "$build" -j 1 "${targets[@]/#/test/fuzz/}" test/fuzz/fuzz_make_seeds
if ((reseed)); then
  rm -f test/fuzz/corpus/decode/* test/fuzz/corpus/roundtrip/*
  "$build/test/fuzz/fuzz_make_seeds" test/data/tensors test/fuzz/corpus
fi

mkdir -p "$work"
status=0
for t in "${targets[@]}"; do
  corpus=test/fuzz/corpus/${t#fuzz_}
  log=$work/$t.log
  echo "=== $t: ${seconds}s, corpus $corpus, log $log"
  start=$(date +%s)
  if nice -n 19 test/fuzz/run_fuzzer.sh "$build/test/fuzz/$t" "$corpus" "$work/$t" "$seconds" \
       -workers=1 >"$log" 2>&1; then
    result="no findings"
  else
    result="FAILED (see $log; crash inputs in $work/$t/)"; status=1
  fi
  echo "$t: $result after $(( $(date +%s) - start ))s"
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log" || true
  grep -E '^#[0-9]+ +DONE' "$log" | tail -1 || true
done
exit $status
