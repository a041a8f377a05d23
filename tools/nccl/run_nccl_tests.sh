#!/usr/bin/env bash
# Runs nccl-tests through zipnet on ONE GPU made to look like two hosts (two MPI ranks, each with
# its own NCCL_HOSTID, both on GPU 0), for all_reduce, all_gather, reduce_scatter, alltoall and
# sendrecv in bfloat16, half and float, with data checking on (-c 1). Any "#wrong" > 0, any failed
# run, or NCCL not choosing NET/zipnet is a failure. For the GPU machine (docs in gpu-testing.md).
#
#   tools/nccl/run_nccl_tests.sh NCCL_TESTS_BUILD_DIR PLUGIN_SO [extra args for the *_perf binaries]
#
# nccl-tests must be built with MPI=1 (make MPI=1 MPI_HOME=... CUDA_HOME=... NCCL_HOME=...); its
# source is not part of this repository. Settings: ZIPNET_* variables in the environment pass
# through (e.g. ZIPNET_COMPRESS=0). Logs go to $LOG_DIR (default /tmp/zipnet-nccl-tests).
set -uo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0"
  exit 2
fi
tests_dir=$(realpath "$1")
plugin=$(realpath "$2")
shift 2
extra=("$@")
log_dir=${LOG_DIR:-/tmp/zipnet-nccl-tests}
mkdir -p "$log_dir"
[ -f "$plugin" ] || { echo "no plugin at $plugin"; exit 2; }
for b in all_reduce all_gather reduce_scatter alltoall sendrecv; do
  [ -x "$tests_dir/${b}_perf" ] || { echo "missing $tests_dir/${b}_perf (build nccl-tests with MPI=1)"; exit 2; }
done

# Each rank: its own host id (so NCCL routes everything through the network plugin) and GPU 0.
wrapper=$(mktemp /tmp/zipnet-rank-XXXXXX.sh)
trap 'rm -f "$wrapper"' EXIT
cat > "$wrapper" <<'WRAP'
#!/usr/bin/env bash
export NCCL_HOSTID="zipnet-host${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
export NCCL_TESTS_DEVICE=0
exec "$@"
WRAP
chmod +x "$wrapper"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1
export NCCL_NET=zipnet NCCL_NET_PLUGIN="$plugin"
export NCCL_DEBUG=${NCCL_DEBUG:-INFO} NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
pass_env=(-x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE -x NCCL_IB_DISABLE -x NCCL_NET -x NCCL_NET_PLUGIN
          -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x LD_LIBRARY_PATH -x PATH)
for v in $(env | grep -o '^\(ZIPNET\|NCCL_ALGO\|NCCL_PROTO\)[A-Z_]*=' | tr -d =); do pass_env+=(-x "$v"); done

failures=0
summary=()
for bench in all_reduce all_gather reduce_scatter alltoall sendrecv; do
  for dtype in bfloat16 half float; do
    log="$log_dir/${bench}_${dtype}.log"
    # NCCL's own log lines go to files of their own: interleaved into stdout they split the
    # result rows and garble the #wrong columns.
    nccl_log="$log_dir/${bench}_${dtype}.nccl"
    rm -f "$nccl_log".*
    export NCCL_DEBUG_FILE="$nccl_log.%h.%p"
    mpirun --allow-run-as-root --oversubscribe -np 2 "${pass_env[@]}" -x NCCL_DEBUG_FILE "$wrapper" \
      "$tests_dir/${bench}_perf" -b 8 -e 64M -f 4 -g 1 -d "$dtype" -c 1 -n 5 -w 2 "${extra[@]}" >"$log" 2>&1
    rc=$?
    # Data rows: size count type redop root | time algbw busbw #wrong (out of place) | same in place
    # The #wrong columns are integers, or N/A where a test has no in-place check.
    wrong=$(awk '!/^#/ && NF >= 12 && $1 ~ /^[0-9]+$/ {
                   if ($9 ~ /^[0-9]+$/) w += $9; if ($NF ~ /^[0-9]+$/) w += $NF } END {print w + 0}' "$log")
    avg=$(grep -o 'Avg bus bandwidth *: *[0-9.]*' "$log" | awk '{print $NF}')
    via=$(cat "$nccl_log".* 2>/dev/null | grep -c 'via NET/zipnet')
    status=ok
    if [ $rc -ne 0 ] || [ "$wrong" != 0 ] || [ "$via" = 0 ] || ! grep -q 'Out of bounds values : 0 OK' "$log"; then
      status=FAIL
      failures=$((failures + 1))
    fi
    line=$(printf '%-15s %-9s exit %-3s #wrong %-6s avg busbw %-8s GB/s  NET/zipnet channels %-4s %s' \
                  "$bench" "$dtype" "$rc" "$wrong" "${avg:-?}" "$via" "$status")
    echo "$line"
    summary+=("$line")
  done
done
echo
echo "logs: $log_dir   ($failures failure(s))"
[ $failures = 0 ]
