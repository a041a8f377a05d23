#!/usr/bin/env python3
"""zipnet faults under real NCCL must surface as NCCL errors: no hang, no wrong result.

Two processes on ONE GPU posing as two hosts (as in torch_collectives.py) all_reduce 16 MiB of bf16
through zipnet while one fault is made, either by zipnet's test-only ZIPNET_FAULT_INJECT or by
killing a rank. A fault passes when every rank ends within --limit seconds (no hang), no rank
reports a result of a faulted collective as correct or wrong (none returns one), and the output
names zipnet's WARN for it (the error reached NCCL through the plugin API).

  python3 tools/nccl/torch_fault.py --plugin build/plugin/libnccl-net-zipnet.so [--fault NAME|all]

Each rank waits with TORCH_NCCL_BLOCKING_WAIT=1, so an NCCL error reaches Python as an exception
(without it PyTorch's watchdog ends the process, after its timeout and a debug dump).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

# Each rank all_reduces `iters` times; a result is only printed for the first one that returns.
WORKER = r"""
import os, sys, datetime, torch, torch.distributed as dist
rank, port, iters, timeout = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%s" % port, rank=rank,
                        world_size=2, timeout=datetime.timedelta(seconds=timeout))
torch.cuda.set_device(0)
x = torch.ones(8 << 20, dtype=torch.bfloat16, device="cuda") * (rank + 1)
try:
    for i in range(iters):
        y = x.clone()
        # TORCH_NCCL_BLOCKING_WAIT=1: wait() polls NCCL for errors and raises, as a training loop sees it.
        dist.all_reduce(y, async_op=True).wait()
        print("ITER %d %s" % (i, "correct" if bool((y == 3).all()) else "WRONG"), flush=True)
    print("RESULT all %d all_reduces returned" % iters, flush=True)
except Exception as e:
    print("RESULT exception: %s: %s" % (type(e).__name__, " | ".join(str(e).splitlines())), flush=True)
"""

# name: (ZIPNET_* for both ranks, ZIPNET_* for rank 1 only, iterations, WARN words (regex), kill rank 1)
FAULTS = {
    "corrupt_frame": ({"ZIPNET_FAULT_INJECT": "corrupt_frame"}, {}, 1, r"corrupt frame", False),
    "corrupt_raw": ({"ZIPNET_FAULT_INJECT": "corrupt_raw", "ZIPNET_COMPRESS": "0"}, {}, 1,
                    r"checksum mismatch", False),
    "short_frame": ({"ZIPNET_FAULT_INJECT": "short_frame"}, {}, 1, r"frame truncated", False),
    # Rank 1 sends half a frame, then closes the connection; rank 0 must name the close (rank 1's
    # own WARN says "fault injected", so the words can only come from rank 0).
    "truncate_frame": ({}, {"ZIPNET_FAULT_INJECT": "truncate_frame"}, 1, r"closed by peer", False),
    # Rank 1 resets (RST) its connection after its first sub-chunk; rank 0 must name the reset.
    "reset": ({}, {"ZIPNET_FAULT_INJECT": "reset"}, 1, r"[Rr]eset by peer", False),
    "wrong_version": ({}, {"ZIPNET_FAULT_INJECT": "wrong_version"}, 1, r"wire version \d+, this side", False),
    "regmr_fail": ({"ZIPNET_FAULT_INJECT": "regmr_fail"}, {}, 1, r"registration of \d+ bytes failed", False),
    "staging_exhausted": ({"ZIPNET_FAULT_INJECT": "staging_exhausted"}, {}, 1, r"staging memory exhausted",
                          False),
    # Rank 1 is SIGKILLed once both ranks have finished 3 all_reduces of a 400-long loop.
    "peer_killed": ({}, {}, 400, r"closed by peer|reset by peer|connection to .* failed", True),
}


def run_fault(name, plugin, port, limit, nccl_timeout, log_dir):
    both, rank1, iters, words, kill = FAULTS[name]
    env = dict(os.environ, NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", NCCL_IB_DISABLE="1",
               TORCH_NCCL_BLOCKING_WAIT="1",
               NCCL_NET="zipnet", NCCL_NET_PLUGIN=os.path.abspath(plugin), NCCL_DEBUG=os.environ.get("NCCL_DEBUG", "WARN"),
               ZIPNET_ADAPTIVE="0", ZIPNET_MIN_COMPRESS_BYTES="0", ZIPNET_TIMEOUT="10", **both)
    t0 = time.time()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(r), str(port), str(iters), str(nccl_timeout)],
                              env=dict(env, NCCL_HOSTID=f"zipnet-fault-host{r}", **(rank1 if r else {})),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(2)]
    outs = [[], []]
    iters_seen = [0, 0]

    def reader(r):
        for line in procs[r].stdout:
            outs[r].append(line.rstrip("\n"))
            if line.startswith("ITER"):
                iters_seen[r] += 1

    threads = [threading.Thread(target=reader, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    killed_at = None
    hung = False
    while any(p.poll() is None for p in procs):
        if kill and killed_at is None and min(iters_seen) >= 3:
            procs[1].send_signal(signal.SIGKILL)
            killed_at = time.time()
        if time.time() - t0 > limit:
            hung = True
            for p in procs:
                p.kill()
            break
        time.sleep(0.05)
    for p in procs:
        p.wait()
    for t in threads:
        t.join()
    elapsed = time.time() - t0
    text = "\n".join(outs[0] + outs[1])
    # A faulted collective must not return. When rank 1 is killed, the all_reduces before the kill
    # legitimately returned (all correct, checked here); none may return WRONG.
    wrong = "WRONG" in text
    returned = any("RESULT all" in l for l in text.splitlines()) or (not kill and "ITER" in text)
    named = re.search(words, text) is not None and "NET/zipnet" in text
    if kill:
        named = named and killed_at is not None
    # A rank ended by a signal that neither this script (hang, kill) nor PyTorch's watchdog (SIGABRT)
    # sent crashed; that must not happen after a plugin error either.
    crashed = [r for r, p in enumerate(procs)
               if p.returncode < 0 and p.returncode not in (-signal.SIGKILL, -signal.SIGABRT)]
    ok = not hung and not wrong and not returned and named and not crashed
    print(f"=== fault {name}: {'PASS' if ok else 'FAIL'}; ended in {elapsed:.1f} s"
          + (f" ({time.time() - killed_at:.1f} s after the kill)" if killed_at else "")
          + f"; hung: {hung}; crashed ranks: {crashed or 'none'}; a faulted collective returned: {returned}; "
          f"wrong result: {wrong}; "
          f"zipnet's WARN ({words}) reached the output: {named}")
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        for r in range(2):
            with open(os.path.join(log_dir, f"{name}.rank{r}.log"), "w") as f:
                f.write("\n".join(outs[r]) + "\n")
    for r in range(2):
        keep = [l for l in outs[r] if "RESULT" in l or "zipnet" in l or ("NCCL" in l and "WARN" in l)]
        print(f"--- rank {r} (exit {procs[r].returncode}, {iters_seen[r]} all_reduces returned):")
        print("\n".join(l[:400] for l in keep[-6:]))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--fault", default="corrupt_frame", choices=sorted(FAULTS) + ["all"])
    ap.add_argument("--limit", type=float, default=120, help="seconds per fault before it counts as hung")
    ap.add_argument("--nccl-timeout", type=int, default=30, help="PyTorch's collective timeout, seconds")
    ap.add_argument("--port", type=int, default=29640)
    ap.add_argument("--log-dir", default="", help="keep each rank's whole output here")
    args = ap.parse_args()
    names = sorted(FAULTS) if args.fault == "all" else [args.fault]
    results = {n: run_fault(n, args.plugin, args.port + i, args.limit, args.nccl_timeout, args.log_dir)
               for i, n in enumerate(names)}
    print("\nsummary: " + ", ".join(f"{n} {'PASS' if ok else 'FAIL'}" for n, ok in results.items()))
    sys.exit(0 if all(results.values()) else 1)


if __name__ == "__main__":
    main()
