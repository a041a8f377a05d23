#!/usr/bin/env bash
# The README's first command on a fresh Debian 12 machine: installs the build dependencies, builds
# zipnet (release, in build/), then drives the real plugin through zipperf, exactly as NCCL's proxy
# thread would, between two processes:
#   1. over loopback, on the real training tensors shipped in test/data/tensors: compressed
#      against raw (ZIPNET_COMPRESS=0), with the compression ratio;
#   2. the same on random bytes (nothing to gain: zipnet must not lose either);
#   3. as root, where namespaces and tc exist: through two network namespaces joined by a veth
#      pair shaped to 10 Gbit/s, the link zipnet is made for.
# Every byte received is compared with what was sent. Takes a few seconds to a minute once built.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install-deps.sh
source tools/env.sh

build=${ZIPNET_DEMO_BUILD_DIR:-build}  # override only to test this script without touching build/
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release >/dev/null
fi
echo "== building the plugin and zipperf ($build/, release)"
ninja -C "$build" plugin/libnccl-net-zipnet.so tools/zipperf/zipperf >/dev/null

zipperf=$build/tools/zipperf/zipperf
tensors=(test/data/tensors/*.bf16)

echo
echo "== 1. loopback, real bf16 training tensors (${#tensors[@]} files, cycled), 4 MiB messages"
"$zipperf" --input "${tensors[@]}" --size 4M --iters 96

echo
echo "== 2. loopback, random bytes (incompressible), 4 MiB messages"
"$zipperf" --size 4M --iters 96

echo
echo "== 3. two network namespaces, veth shaped to 10 Gbit/s, real bf16 tensors then random bytes"
rc=0
"$zipperf" --netns 10gbit --input "${tensors[@]}" --size 4M --iters 192 || rc=$?
if [ "$rc" = 77 ]; then
  echo "(skipped: the namespace run needs root, ip and tc; the loopback runs above are the demo here)"
elif [ "$rc" = 0 ]; then
  "$zipperf" --netns 10gbit --size 4M --iters 192
else
  exit "$rc"
fi

echo
echo "Speedup = compressed Gbit/s over raw Gbit/s, measured in the same run. On loopback the two"
echo "ends share this machine's CPUs with the codec, so the 10 Gbit/s run is the one that shows"
echo "what a real link gains. More: build/tools/zipperf/zipperf --help, docs/benchmarks.md."
