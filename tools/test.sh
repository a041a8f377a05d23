#!/usr/bin/env bash
# Runs every test zipnet has, the way CI does: a release build (all suites; GPU tests skip without a
# GPU), the same suites under ASan+UBSan, and a short bounded libFuzzer pass. Ends with one line:
# "N passed, N failed, N skipped". Pass --quick to run only the release build.
set -uo pipefail
cd "$(dirname "$0")/.."
./tools/install-deps.sh
source tools/env.sh
jobs=$(nproc)
quick=0; [ "${1:-}" = "--quick" ] && quick=1
builds=()
broken=()  # builds whose setup or compile failed: each counts as one failed test in the summary

run_build() {  # run_build DIR "meson setup args" "meson test args"
  local dir=$1 setup_args=$2 test_args=$3
  echo "=== $dir: meson setup $setup_args"
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" $setup_args >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; echo "setup of $dir failed"; broken+=("$dir"); return 1; }
  fi
  ninja -C "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || { tail -50 "$dir.build.log"; echo "build of $dir failed"; broken+=("$dir"); return 1; }
  echo "=== $dir: meson test $test_args"
  meson test -C "$dir" --num-processes "$jobs" --print-errorlogs $test_args
  builds+=("$dir")
}

status=0
run_build build "--buildtype=release" "--no-suite fuzz" || status=1
if [ $quick = 0 ]; then
  # Bad input must never read or write out of bounds: the CPU suites again under the sanitizers.
  run_build build-asan "--buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled" \
    "--no-suite fuzz --no-suite soak --no-suite netns" || status=1
  # A short, bounded fuzz pass (long runs: tools/fuzz-long.sh, recorded in docs/reliability.md).
  CC=clang CXX=clang++ run_build build-fuzz "--buildtype=debugoptimized -Dfuzz=true -Dcuda=disabled -Dtests=false" \
    "--suite fuzz" || status=1
fi
python3 tools/test_summary.py "${builds[@]}" ${broken[@]/#/--broken=} || status=1
exit $status
