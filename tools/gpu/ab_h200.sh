#!/usr/bin/env bash
# A/B of the GPU codec on the H200 machine (the `run` tool, repository root, $OUT for logs): this
# tree against a base tree, built side by side on the machine. Runs test_codec_gpu on this tree,
# then alternates zipbench rounds (base, this) on a 64 MiB bf16 buffer at three batch shapes and a
# 64 MiB fp32 one (the shipped fp32 gradients, upcast and not) in 512 KiB messages, with
# the per-kernel times of ZIPNET_CUDA_BENCH_DETAIL. Ratios between the two builds of one run are
# what to compare: the machines are noisy from one run to the next.
# Usage: tools/gpu/ab_h200.sh BASE_DIR [ROUNDS]
#   BASE_DIR: the base commit's files, e.g. `git archive REV | tar -x -C BASE_DIR --exclude=test/data`
#   (carry it to the machine); ROUNDS: default 2.
set -uo pipefail
BASE=${1:?usage: tools/gpu/ab_h200.sh BASE_DIR [ROUNDS]}
ROUNDS=${2:-2}
OUT=${OUT:-/tmp/zipnet-gpu-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
R=$PWD
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$OUT/machine.txt"
meson setup /tmp/ab-this -Dvendor_include="$R/.ext/include" -Dbuildtype=release -Dcuda=enabled >"$OUT/setup.log" 2>&1 ||
  { tail -30 "$OUT/setup.log"; exit 1; }
(cd "$BASE" && meson setup /tmp/ab-base -Dvendor_include="$R/.ext/include" -Dbuildtype=release -Dcuda=enabled \
  -Dtests=false >"$OUT/setup-base.log" 2>&1) || { tail -20 "$OUT/setup-base.log"; exit 1; }
ninja -C /tmp/ab-base -j6 tools/zipbench/zipbench >"$OUT/build-base.log" 2>&1 &
ninja -C /tmp/ab-this -j10 tools/zipbench/zipbench test/codec/gpu/test_codec_gpu >"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
wait || { grep -E "error" -A3 "$OUT/build-base.log" | head -20; exit 1; }
echo "built $(date -u +%T)"
timeout 200 /tmp/ab-this/test/codec/gpu/test_codec_gpu >"$OUT/test_codec_gpu.log" 2>&1
echo "test_codec_gpu rc=$?"; tail -3 "$OUT/test_codec_gpu.log"; grep -B3 -A14 "FAILED" "$OUT/test_codec_gpu.log" | head -60
T=test/data/tensors
for i in 1 2 3 4 5 6; do cat $T/*.bf16; done | head -c 64M >/tmp/bf16-64M.bf16
for i in $(seq 16); do cat $T/grads-upcast.fp32 $T/grads.fp32; done | head -c 64M >/tmp/mixed-64M.fp32
for round in $(seq "$ROUNDS"); do
  for v in base this; do
    for c in "64M 1 bf16-64M.bf16" "512K 16 bf16-64M.bf16" "512K 128 bf16-64M.bf16" "512K 16 mixed-64M.fp32"; do
      set -- $c
      echo "$v r$round $3 $1x$2 $(ZIPNET_CUDA_BENCH_DETAIL=1 timeout 40 /tmp/ab-$v/tools/zipbench/zipbench --device cuda --json \
        --chunk $1 --batch $2 --iters 20 /tmp/$3 2>&1 | grep -o 'per batch.*\|"ratio":[0-9.]*\|"compress_gbps":[0-9.]*\|"decompress_gbps":[0-9.]*\|"matches_cpu_bytes":[a-z]*\|"roundtrip_ok":[a-z]*' | paste -sd' ')"
    done
  done
done | tee "$OUT/ab.txt"
date -u
