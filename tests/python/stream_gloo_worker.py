# A gloo process of the StreamDataset test: reads steps, checkpoints (gathered), reads on until killed, or resumes.
# SPDX-License-Identifier: MIT
"""argv: port rank world shard_dir out_dir phase. Phase "first": read CHECKPOINT steps, gather
every rank's part, rank 0 writes the job state, every rank logs what its loop received, then
reads on (logging to another file) until the test kills it. Phase "resume": load the state,
read RESUMED steps, log them, and rank 0 writes the job state after them."""

import datetime
import json
import os
import sys
import time

import torch.distributed as dist

from distsampler.torch import DataLoader, StreamDataset

CHECKPOINT, RESUMED, MICRO_BATCH = 6, 40, 2


def keep(rec):
    return rec["id"] % 3 != 0


def main():
    port, rank, world, shard_dir, out_dir, phase = sys.argv[1:7]
    rank, world = int(rank), int(world)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    paths = sorted(os.path.join(shard_dir, f) for f in os.listdir(shard_dir) if f.endswith(".jsonl"))
    ds = StreamDataset(paths, micro_batch=MICRO_BATCH, seed=9, filter=keep)  # world from torch.distributed
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    log = []
    if phase == "resume":
        with open(os.path.join(out_dir, "state.txt")) as f:
            loader.load_state_dict({"format": 1, "sampler": "StreamDataset", "state": f.read()})
    it = iter(loader)
    steps = CHECKPOINT if phase == "first" else RESUMED
    for _ in range(steps):
        log += [[item.pass_, item.record["id"]] for item in next(it)]
    name = "before" if phase == "first" else "resumed"
    with open(os.path.join(out_dir, f"{name}{rank}.json"), "w") as f:
        json.dump(log, f)
    if phase == "first":
        parts = [None] * world
        dist.all_gather_object(parts, loader.state_dict()["state"])
        if rank == 0:
            with open(os.path.join(out_dir, "state.tmp"), "w") as f:
                f.write(ds.job_state(parts))
            os.replace(os.path.join(out_dir, "state.tmp"), os.path.join(out_dir, "state.txt"))
        while True:  # reads on, as training would, until killed
            next(it)
            time.sleep(0.01)
    parts = [None] * world
    dist.all_gather_object(parts, loader.state_dict()["state"])
    if rank == 0:
        with open(os.path.join(out_dir, "final.txt"), "w") as f:
            f.write(ds.job_state(parts))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
