# distsampler benchmark: what distsampler.torch.DataLoader's default guard costs per epoch (one guard call), on P gloo
# processes of this machine, against an epoch of the loop without it.
# SPDX-License-Identifier: MIT
"""usage: /usr/bin/python3 bench/guard_cost.py [PROCESSES] [CALLS]   (default 4 processes, 200 calls)

Each process runs CALLS guard calls on one DistributedSampler (what the loader runs once per
epoch) and prints the median and the 95th percentile of a call's wall time, as rank 0 sees it."""
import datetime
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _rank(rank, world, port, calls, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    from distsampler.torch import DistributedSampler, guard
    sampler = DistributedSampler(range(1_000_000), seed=1)
    guard(sampler)  # warm-up: the first call imports and connects
    times = []
    for e in range(calls):
        sampler.set_epoch(e)
        start = time.perf_counter()
        guard(sampler)
        times.append(time.perf_counter() - start)
    if rank == 0:
        times.sort()
        out.put((statistics.median(times), times[int(0.95 * (len(times) - 1))]))
    dist.barrier()
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ["OMP_NUM_THREADS"] = "1"
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, world, port, calls, out)) for r in range(world)]
    for p in procs:
        p.start()
    median, p95 = out.get(timeout=600)
    for p in procs:
        p.join()
    print(f"guard per epoch on {world} gloo processes ({os.cpu_count()} cores), {calls} calls: "
          f"median {median * 1e3:.2f} ms, 95th percentile {p95 * 1e3:.2f} ms (torch {torch.__version__})")


if __name__ == "__main__":
    main()
