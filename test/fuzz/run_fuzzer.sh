#!/bin/sh
# Runs one libFuzzer target for a bounded time, the way the CI `fuzz` suite and tools/fuzz-long.sh do.
# New inputs go to WORK_DIR/new, never into the committed corpus; a crash leaves its input in
# WORK_DIR (artifact_prefix) and fails the run.
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR WORK_DIR SECONDS [more libFuzzer flags]
set -eu
fuzzer=$1 corpus=$2 work=$3 seconds=$4
shift 4
mkdir -p "$work/new"
exec "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$work/" "$@" "$work/new" "$corpus"
