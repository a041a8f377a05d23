#!/usr/bin/env python3
"""A zipnet fault under real NCCL must surface as an NCCL error: no hang, no wrong result.

Two processes on ONE GPU posing as two hosts (as in torch_collectives.py) all_reduce 16 MiB of bf16
through zipnet while zipnet corrupts every compressed frame it sends (ZIPNET_FAULT_INJECT=
corrupt_frame, a test-only param). The receiver's checksum must catch it, the plugin returns an
error from test(), and NCCL must report that to PyTorch. Passes when both ranks end within the
time limit without a result, and a rank's output names the NCCL error and zipnet's WARN.

  python3 tools/nccl/torch_fault.py --plugin build/plugin/libnccl-net-zipnet.so
"""
import argparse
import os
import subprocess
import sys
import time

WORKER = r"""
import os, sys, datetime, torch, torch.distributed as dist
rank = int(sys.argv[1])
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%s" % sys.argv[2], rank=rank,
                        world_size=2, timeout=datetime.timedelta(seconds=60))
torch.cuda.set_device(0)
x = torch.ones(8 << 20, dtype=torch.bfloat16, device="cuda") * (rank + 1)
try:
    dist.all_reduce(x)
    torch.cuda.synchronize()
    ok = bool((x == 3).all())
    print("RESULT all_reduce returned, result %s" % ("correct" if ok else "WRONG"), flush=True)
except Exception as e:
    print("RESULT exception: %s: %s" % (type(e).__name__, str(e)[:300]), flush=True)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--limit", type=float, default=120, help="seconds before the run counts as hung")
    ap.add_argument("--port", type=int, default=29640)
    args = ap.parse_args()
    env = dict(os.environ, NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", NCCL_IB_DISABLE="1",
               NCCL_NET="zipnet", NCCL_NET_PLUGIN=os.path.abspath(args.plugin), NCCL_DEBUG="WARN",
               ZIPNET_FAULT_INJECT="corrupt_frame", ZIPNET_ADAPTIVE="0", ZIPNET_MIN_COMPRESS_BYTES="0",
               ZIPNET_TIMEOUT="10")
    t0 = time.time()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(r), str(args.port)],
                              env=dict(env, NCCL_HOSTID=f"zipnet-fault-host{r}"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(2)]
    outs, hung = [], False
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, args.limit - (time.time() - t0)))[0])
        except subprocess.TimeoutExpired:
            hung = True
            p.kill()
            outs.append(p.communicate()[0])
    elapsed = time.time() - t0
    text = "\n".join(outs)
    for r, o in enumerate(outs):
        lines = [l for l in o.splitlines() if "RESULT" in l or "zipnet" in l or "NCCL" in l.upper() and "WARN" in l]
        print(f"--- rank {r} (exit {procs[r].returncode}):")
        print("\n".join(lines[-8:]))
    wrong = "WRONG" in text or "result correct" in text
    named = "corrupt" in text and ("NCCL" in text)
    print(f"\nended in {elapsed:.1f} s; hung: {hung}; a result returned: {wrong}; "
          f"NCCL error naming zipnet's corrupt-frame WARN: {named}")
    sys.exit(0 if not hung and not wrong and named else 1)


if __name__ == "__main__":
    main()
