#!/usr/bin/env bash
# One batched GPU session on the H200 machine (the `run` tool, repository root, $OUT for logs):
# configure and build the CUDA codec, its tests and zipbench; run suite codec-gpu; benchmark the
# shipped tensors (512 KiB messages, batch 16) and a 64 MiB bf16 buffer. Every log goes to $OUT.
# Usage: tools/gpu/run_h200.sh [quick]   (quick: tests only, no benchmarks)
set -uo pipefail
OUT=${OUT:-/tmp/zipnet-gpu-out}
mkdir -p "$OUT"
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
B=/tmp/b-codec-gpu
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nproc
} >"$OUT/machine.txt" 2>&1

if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dvendor_include="$PWD/.ext/include" -Dbuildtype=release -Dcuda=enabled >"$OUT/setup.log" 2>&1 ||
    { tail -40 "$OUT/setup.log"; exit 1; }
fi
ninja -C "$B" -j16 test/codec/gpu/test_codec_gpu test/codec/gpu/test_xxh3_host test/codec/test_codec tools/zipbench/zipbench >"$OUT/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
echo "build ok"

"$B/test/codec/gpu/test_xxh3_host" >"$OUT/test_xxh3_host.log" 2>&1; echo "xxh3 host rc=$?"
# The whole GPU binary with durations first; the suites through meson (what CI would run here)
# come after the benchmarks, so that a run cut short by its time limit still has the numbers.
timeout 200 "$B/test/codec/gpu/test_codec_gpu" --durations yes >"$OUT/test_codec_gpu.log" 2>&1
echo "test_codec_gpu rc=$?"; tail -5 "$OUT/test_codec_gpu.log"
grep -B3 -A12 "FAILED\|failed" "$OUT/test_codec_gpu.log" | head -60
meson_suites() {
  meson test -C "$B" --no-rebuild --suite codec-gpu --suite codec --print-errorlogs >"$OUT/meson_test.log" 2>&1
  echo "meson test rc=$?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|Skipped:" "$OUT/meson_test.log" | tail -16
}
[ "${1:-}" = quick ] && { meson_suites; exit 0; }
ZB="$B/tools/zipbench/zipbench"
T=test/data/tensors
for i in 1 2 3 4 5 6; do cat $T/*.bf16; done | head -c 64M >/tmp/bf16-64M.bf16
{
  echo "# $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader)"
  echo "# zipbench --device cuda --json --chunk 512K --batch 16 --iters 20 <tensors>"
  timeout 60 "$ZB" --device cuda --json --chunk 512K --batch 16 --iters 20 $T/*.bf16 $T/*.fp16 $T/*.fp32
  echo "# zipbench --device cuda --json --chunk 64M --batch 1 --iters 20 /tmp/bf16-64M.bf16"
  timeout 60 "$ZB" --device cuda --json --chunk 64M --batch 1 --iters 20 /tmp/bf16-64M.bf16
  echo "# zipbench --device cuda --json --chunk 512K --batch 16 --iters 20 /tmp/bf16-64M.bf16"
  timeout 60 "$ZB" --device cuda --json --chunk 512K --batch 16 --iters 20 /tmp/bf16-64M.bf16
  echo "# zipbench --device cuda --json --chunk 512K --batch 128 --iters 20 /tmp/bf16-64M.bf16"
  timeout 60 "$ZB" --device cuda --json --chunk 512K --batch 128 --iters 20 /tmp/bf16-64M.bf16
  # Each decoder forced (default: chosen by batch size): 16 the warp decoder, 4 the group decoder.
  for cfg in "16 64M 1" "16 512K 16" "4 64M 1" "4 512K 128"; do
    set -- $cfg
    echo "# ZIPNET_CUDA_DECODE_WARPS=$1 zipbench --device cuda --json --chunk $2 --batch $3 --iters 20 /tmp/bf16-64M.bf16"
    ZIPNET_CUDA_DECODE_WARPS=$1 timeout 60 "$ZB" --device cuda --json --chunk $2 --batch $3 --iters 20 /tmp/bf16-64M.bf16
  done
  echo "# zipbench --device cuda --json --chunk 512K --batch 16 --iters 20 /tmp/mixed-64M.fp32 (grads-upcast.fp32 + grads.fp32 cycled)"
  for i in $(seq 16); do cat $T/grads-upcast.fp32 $T/grads.fp32; done | head -c 64M >/tmp/mixed-64M.fp32
  timeout 60 "$ZB" --device cuda --json --chunk 512K --batch 16 --iters 20 /tmp/mixed-64M.fp32
  export ZIPNET_CUDA_BENCH_DETAIL=1
  for sms in 132 66 32; do
    echo "# ZIPNET_CUDA_SMS=$sms zipbench --device cuda --json --chunk 512K --batch 16 --iters 20 weights.bf16 + 64M"
    ZIPNET_CUDA_SMS=$sms timeout 60 "$ZB" --device cuda --json --chunk 512K --batch 16 --iters 20 $T/weights.bf16
    ZIPNET_CUDA_SMS=$sms timeout 60 "$ZB" --device cuda --json --chunk 64M --batch 1 --iters 20 /tmp/bf16-64M.bf16
  done
} >"$OUT/zipbench.jsonl" 2>"$OUT/zipbench.err"
echo "zipbench rc=$?"; cat "$OUT/zipbench.jsonl"; tail -5 "$OUT/zipbench.err"
meson_suites
# Optional: stall reasons of the block kernels with Nsight Compute (ZIPNET_NCU=1).
if [ "${ZIPNET_NCU:-0}" = 1 ] && command -v ncu >/dev/null 2>&1; then
  timeout 100 ncu -k regex:"encode_kernel|decode_kernel" -c 2 --section SpeedOfLight --section WarpStateStats \
    --section Occupancy --section LaunchStats "$ZB" --device cuda --chunk 512K --batch 16 --iters 1 $T/weights.bf16 \
    >"$OUT/ncu.txt" 2>&1
  echo "ncu rc=$?"
fi
