#!/usr/bin/env python3
"""Real NCCL through zipnet, with PyTorch, on ONE GPU posing as two hosts.

Two processes share GPU 0; each gets its own NCCL_HOSTID, and P2P and SHM are off, so NCCL sees two
nodes and sends all traffic through the network transport. The script runs all_gather,
reduce_scatter, all_to_all and all_reduce on the real training tensors (test/data/tensors, tiled to
--mib MiB per rank) three times:

  zipnet      NCCL_NET=zipnet, NCCL_NET_PLUGIN=<the .so>          (compression on)
  zipnet-raw  the same with ZIPNET_COMPRESS=0                     (zipnet's transport, raw)
  socket      NCCL_NET=Socket, NCCL_NET_PLUGIN=none               (NCCL's built-in TCP transport)

all with NCCL_ALGO=Ring NCCL_PROTO=Simple, so the reductions run in the same order everywhere.
With --netns RATE (root, iproute2) each rank runs in its own network namespace and the two are
joined by a veth pair shaped with tc to RATE (e.g. 10gbit): an inter-node link in miniature, the
same for all three modes. Each
output is hashed (SHA-256 of its bytes) per rank and collective, and the zipnet runs must match the
Socket run bit for bit. It then prints bus bandwidth side by side (nccl-tests' definitions).
Exit status 0 only if every result matches.

  python3 tools/nccl/torch_collectives.py --plugin build/plugin/libnccl-net-zipnet.so
"""
import argparse
import contextlib
import glob
import hashlib
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIVES = ("all_gather", "reduce_scatter", "all_to_all", "all_reduce")
# busbw = algbw * factor (nccl-tests, n = 2 ranks); algbw = S / t with S as in nccl-tests.
BUS_FACTOR = {"all_gather": 0.5, "reduce_scatter": 0.5, "all_to_all": 0.5, "all_reduce": 1.0}


def load_tensor(path):
    """A shipped tensor file as a 1-D torch tensor of its dtype (little-endian raw values)."""
    raw = np.fromfile(path, dtype=np.uint8)
    ext = os.path.splitext(path)[1]
    if ext == ".bf16":
        return torch.from_numpy(raw.view(np.int16).copy()).view(torch.bfloat16)
    if ext == ".fp16":
        return torch.from_numpy(raw.view(np.float16).copy())
    if ext == ".fp32":
        return torch.from_numpy(raw.view(np.float32).copy())
    raise ValueError(f"unknown tensor file type: {path}")


def rank_input(files, rank, elems, dtype):
    """Rank r's input: the files of this dtype, rotated by r (ranks differ), tiled to `elems`."""
    parts = [load_tensor(f) for f in files]
    parts = parts[rank % len(parts):] + parts[:rank % len(parts)]
    base = torch.cat(parts)
    reps = -(-elems // base.numel())
    return base.repeat(reps)[:elems].contiguous()


def digest(t):
    return hashlib.sha256(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


NETNS_ADDR = "10.214.77.{}"  # a private /30 that exists only inside the two namespaces


@contextlib.contextmanager
def shaped_namespaces(rate):
    """Two namespaces, zt0 <-> zt1 veth pair, each end shaped by tc tbf to `rate`; removed on exit."""
    names = [f"zipnet-torch-{os.getpid()}-{i}" for i in range(2)]
    def ip(*a):
        subprocess.run(["ip", *a], check=True)
    try:
        for n in names:
            ip("netns", "add", n)
        ip("link", "add", "zt0", "netns", names[0], "type", "veth", "peer", "name", "zt1", "netns", names[1])
        for i, n in enumerate(names):
            ip("-n", n, "addr", "add", NETNS_ADDR.format(i + 1) + "/30", "dev", f"zt{i}")
            ip("-n", n, "link", "set", f"zt{i}", "up")
            ip("-n", n, "link", "set", "lo", "up")
            subprocess.run(["ip", "netns", "exec", n, "tc", "qdisc", "add", "dev", f"zt{i}", "root",
                            "tbf", "rate", rate, "burst", "2mb", "latency", "20ms"], check=True)
        yield names
    finally:
        for n in names:
            subprocess.run(["ip", "netns", "delete", n], stderr=subprocess.DEVNULL)


def worker(rank, world, mode, args, port, queue):
    master = "127.0.0.1"
    if args.netns_names:  # join this rank's namespace before any socket is made
        fd = os.open(f"/var/run/netns/{args.netns_names[rank]}", os.O_RDONLY)
        os.setns(fd, os.CLONE_NEWNET)
        os.close(fd)
        master = NETNS_ADDR.format(1)
        os.environ.update({"NCCL_SOCKET_IFNAME": "zt", "ZIPNET_SOCKET_IFNAME": "zt"})
    env = {
        "NCCL_HOSTID": f"zipnet-torch-host{rank}",
        "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_IB_DISABLE": "1",
        "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple",
    }
    if mode == "socket":
        env.update({"NCCL_NET": "Socket", "NCCL_NET_PLUGIN": "none"})
    else:
        env.update({"NCCL_NET": "zipnet", "NCCL_NET_PLUGIN": args.plugin,
                    "ZIPNET_COMPRESS": "0" if mode == "zipnet-raw" else "1"})
        if args.stats_dir:
            env["ZIPNET_STATS_FILE"] = os.path.join(args.stats_dir, f"{mode}.jsonl")
    os.environ.update(env)
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://{master}:{port}", rank=rank, world_size=world)
    dev = torch.device("cuda", 0)
    out = {"hashes": {}, "busbw": {}}
    per_rank_bytes = args.mib << 20
    for ext, dtype in ((".bf16", torch.bfloat16), (".fp16", torch.float16), (".fp32", torch.float32)):
        files = sorted(glob.glob(os.path.join(args.tensors, "*" + ext)))
        if not files:
            continue
        esize = torch.tensor([], dtype=dtype).element_size()
        elems = per_rank_bytes // esize // world * world
        x = rank_input(files, rank, elems, dtype).to(dev)
        ops = {
            "all_gather": (torch.empty(elems * world, dtype=dtype, device=dev),
                           lambda o: dist.all_gather_into_tensor(o, x), elems * world * esize),
            "reduce_scatter": (torch.empty(elems // world, dtype=dtype, device=dev),
                               lambda o: dist.reduce_scatter_tensor(o, x), elems * esize),
            "all_to_all": (torch.empty(elems, dtype=dtype, device=dev),
                           lambda o: dist.all_to_all_single(o, x), elems * esize),
            "all_reduce": (torch.empty(elems, dtype=dtype, device=dev),
                           lambda o: (o.copy_(x), dist.all_reduce(o)), elems * esize),
        }
        for name in COLLECTIVES:
            o, run, s_bytes = ops[name]
            run(o)  # the checked result
            torch.cuda.synchronize()
            out["hashes"][f"{name}/{ext[1:]}"] = digest(o)
            if dtype != torch.bfloat16:
                continue  # bandwidth on the bf16 tensors only (the 64 MiB-per-rank target)
            for _ in range(args.warmup):
                run(o)
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(args.iters):
                run(o)
            torch.cuda.synchronize()
            dt = (time.perf_counter() - t0) / args.iters
            out["busbw"][name] = s_bytes / dt / 1e9 * BUS_FACTOR[name]
    dist.barrier()
    dist.destroy_process_group()
    queue.put((rank, out))


def run_mode(mode, args, port):
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = [ctx.Process(target=worker, args=(r, 2, mode, args, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    deadline = time.time() + args.timeout
    for p in procs:
        p.join(max(1, deadline - time.time()))
    ok = True
    for p in procs:
        if p.is_alive():
            p.kill()
            ok = False
        elif p.exitcode != 0:
            ok = False
    results = {}
    while not queue.empty():
        rank, out = queue.get()
        results[rank] = out
    if not ok or len(results) != 2:
        print(f"[{mode}] FAILED: a rank crashed, hung or reported nothing (exit codes "
              f"{[p.exitcode for p in procs]})", file=sys.stderr)
        return None
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", default=os.path.join(REPO, "build/plugin/libnccl-net-zipnet.so"))
    ap.add_argument("--tensors", default=os.path.join(REPO, "test/data/tensors"))
    ap.add_argument("--mib", type=int, default=64, help="MiB of input per rank (default 64)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--modes", default="zipnet,zipnet-raw,socket")
    ap.add_argument("--port", type=int, default=29561)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per mode before it counts as hung")
    ap.add_argument("--stats-dir", default="", help="write zipnet's per-comm stats (ZIPNET_STATS_FILE) here")
    ap.add_argument("--netns", default="", metavar="RATE",
                    help="run the ranks in two namespaces joined by a veth pair shaped to RATE (e.g. 10gbit)")
    args = ap.parse_args()
    args.netns_names = []
    args.plugin = os.path.abspath(args.plugin)
    if not os.path.exists(args.plugin):
        sys.exit(f"no plugin at {args.plugin} (build it, or pass --plugin)")
    if not torch.cuda.is_available():
        print("no GPU: this script needs one (it runs on the GPU machine)")
        sys.exit(77)
    modes = args.modes.split(",")
    results = {}
    with (shaped_namespaces(args.netns) if args.netns else contextlib.nullcontext([])) as names:
        args.netns_names = names
        for i, mode in enumerate(modes):
            print(f"[{mode}] running ...", flush=True)
            results[mode] = run_mode(mode, args, args.port + i)

    # Bit-exact: every zipnet result equals NCCL Socket's, rank by rank.
    ok = all(results[m] is not None for m in modes)
    ref = results.get("socket")
    if ref is not None:
        for mode in modes:
            if mode == "socket" or results[mode] is None:
                continue
            for rank in (0, 1):
                for key, h in ref[rank]["hashes"].items():
                    got = results[mode][rank]["hashes"].get(key)
                    if got != h:
                        ok = False
                        print(f"MISMATCH {mode} rank {rank} {key}: {got} != socket {h}")
        print("results bit for bit equal to NCCL Socket:", "yes" if ok else "NO")
    else:
        print("(no socket run: nothing to compare results against)")

    # Bus bandwidth (rank 0's timing), bf16, --mib MiB per rank.
    link = f"netns veth shaped to {args.netns}" if args.netns else "loopback"
    print(f"\nbus bandwidth, GB/s, real bf16 tensors, {args.mib} MiB per rank, Ring/Simple, 2 ranks on one GPU, {link}")
    print(f"{'collective':<16}" + "".join(f"{m:>12}" for m in modes) +
          ("  zipnet/raw  zipnet/socket" if {"zipnet", "zipnet-raw", "socket"} <= set(modes) else ""))
    for name in COLLECTIVES:
        row = f"{name:<16}"
        bw = {}
        for m in modes:
            v = results[m][0]["busbw"].get(name) if results[m] else None
            bw[m] = v
            row += f"{v:>12.3f}" if v else f"{'-':>12}"
        if all(bw.get(m) for m in ("zipnet", "zipnet-raw", "socket")):
            row += f"  {bw['zipnet'] / bw['zipnet-raw']:>10.2f}x {bw['zipnet'] / bw['socket']:>12.2f}x"
        print(row)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
