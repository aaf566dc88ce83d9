# One rank of a 4-process gloo job: distsampler.torch.DataLoader's default guard over right and wrong samplers.
# SPDX-License-Identifier: MIT
"""usage: loader_guard_worker.py PORT RANK WORLD OUT

Runs every scenario in order on every rank and writes {scenario: outcome} as JSON to OUT.RANK,
the outcome being "ok ..." or "error: <message>"."""
import datetime
import json
import sys

import torch
import torch.distributed as dist

import distsampler
from distsampler.mesh import mesh_world
from distsampler.torch import DataLoader, DistributedSampler


def epochs(loader, count):
    """Iterates `count` epochs (set_epoch before each); the number of samples this rank read."""
    read = 0
    for e in range(count):
        loader.set_epoch(e)
        for batch in loader:
            read += len(batch)
    return read


def main():
    port, rank, world, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    data = torch.arange(40)
    store = dist.distributed_c10d._get_default_store()
    scenarios = {
        # a correct sampler: two epochs, the second read twice; the guard runs once per epoch
        "ok": lambda: DataLoader(data, batch_size=5, sampler=DistributedSampler(data, seed=1)),
        # the three silent misuses: per-rank seeds, LOCAL_RANK / LOCAL_WORLD_SIZE on 2 nodes of 2, LOCAL_RANK alone
        "seed": lambda: DataLoader(data, batch_size=5, sampler=DistributedSampler(data, seed=42 + rank)),
        "local_world": lambda: DataLoader(data, batch_size=5,
                                          sampler=DistributedSampler(data, num_replicas=2, rank=rank % 2, seed=1)),
        "local_rank": lambda: DataLoader(data, batch_size=5,
                                         sampler=DistributedSampler(data, num_replicas=world, rank=0, seed=1)),
        # turned off: the per-rank seeds go unchecked
        "off": lambda: DataLoader(data, batch_size=5, sampler=DistributedSampler(data, seed=42 + rank), guard=False),
        # dp=2, tp=2: the data world is 2 of the 4 processes; the mesh guard checks it
        "mesh": lambda: DataLoader(data, batch_size=5, sampler=DistributedSampler(
            data, num_replicas=2, rank=mesh_world({"dp": 2, "tp": 2}, rank=rank, world_size=world).rank, seed=1),
            guard=mesh_world({"dp": 2, "tp": 2}, rank=rank, world_size=world)),
    }
    result = {}
    for name, make in scenarios.items():
        before = store.add("distsampler/guard/py/all/calls/%d" % rank, 0)
        try:
            loader = make()
            read = epochs(loader, 2)
            if name == "ok":
                read += sum(len(b) for b in loader)  # epoch 1 again: no new guard call
            calls = store.add("distsampler/guard/py/all/calls/%d" % rank, 0) - before
            result[name] = f"ok read {read} guard calls {calls}"
        except distsampler.ConfigError as e:
            result[name] = f"error: {e}"
        dist.barrier()
    # A loader of rank 0's own (num_replicas=1), iterated on rank 0 only: no guard, no wait for the others.
    if rank == 0:
        read = epochs(DataLoader(data, batch_size=5, sampler=DistributedSampler(data, num_replicas=1, rank=0)), 1)
        result["rank_zero_only"] = f"ok read {read}"
    dist.barrier()
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
