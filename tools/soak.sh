#!/usr/bin/env bash
# Long soak of the zipnet plugin: many comms, millions of messages of mixed sizes, compressed
# (real bf16 gradients) and raw (random bytes), every byte checked, RSS sampled and required flat
# (test/reliability/soak.cpp; the CI suite `soak` runs a short pass of the same tool).
#
# Usage: tools/soak.sh [--messages N] [--build DIR] [--asan | --valgrind] [-- soak options...]
#   --messages N  messages in all (default 2000000)
#   --build DIR   build directory (default build-soak, release; build-soak-asan with --asan)
#   --asan        build with ASan+UBSan, fail on leaks (LeakSanitizer at exit); quarantine off (see below)
#   --valgrind    run under valgrind memcheck (leaks and invalid accesses); use a few thousand messages
# Record results in docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
messages=2000000 build="" mode=release extra=()
while (($#)); do
  case $1 in
    --messages) messages=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --asan) mode=asan; shift ;;
    --valgrind) mode=valgrind; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$build" ]; then build=build-soak; [ $mode = asan ] && build=build-soak-asan; fi
if [ ! -f "$build/build.ninja" ]; then
  if [ $mode = asan ]; then
    meson setup "$build" --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled
  else
    meson setup "$build" --buildtype=release -Dcuda=disabled
  fi
fi
ninja -C "$build" test/reliability/soak plugin/libnccl-net-zipnet.so
export ZIPNET_TEST_PLUGIN=$PWD/$build/plugin/libnccl-net-zipnet.so ZIPNET_TEST_DATA_DIR=$PWD/test/data
cmd=("$build/test/reliability/soak" --messages "$messages" "${extra[@]}")
case $mode in
  # ASan's quarantine holds freed memory up to its cap (256 MiB), and this soak frees only tens of
  # bytes per message, so the quarantine is still filling at the end of any affordable run and reads
  # as RSS growth. The flat-RSS check runs with it off; LeakSanitizer stays on, and use-after-free is
  # checked (quarantine on) by the ASan build of every other suite in CI.
  asan) ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:quarantine_size_mb=0:thread_local_quarantine_size_kb=0 "${cmd[@]}" ;;
  valgrind) valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
              --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 "${cmd[@]}" ;;
  *) "${cmd[@]}" ;;
esac
