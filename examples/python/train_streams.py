# distsampler example: train by steps over shards of unknown size with a read-time filter, checkpoint, resume elsewhere.
# SPDX-License-Identifier: MIT
"""Trains a one-layer model under torchrun (gloo) over a folder of JSON Lines shards whose
record counts nobody indexed, one record ``{"id": i, "lang": ..., "x": ..., "y": ...}`` per
line, keeping only ``lang == "en"`` (a filter decided when the record is read). Training runs
by steps: every rank gets exactly ``--micro-batch`` kept records per step from its
``distsampler.torch.DataLoader`` workers, so the ranks' allreduces never wait for a rank that
ran out, and no collective is needed to agree on the steps.

    torchrun --nproc_per_node 2 --redirects 2 --tee 2 train_streams.py --data DIR --out RUN \\
        --workers 2 --steps 8 --checkpoint-at 5
    torchrun --nproc_per_node 2 --redirects 2 --tee 2 train_streams.py --data DIR --out RUN2 \\
        --workers 1 --steps 30 --resume RUN/checkpoint.pt

At step ``--checkpoint-at`` every rank's part of the stream state (what its loop received
from each worker, ``loader.state_dict()``) is gathered with ``all_gather_object``; rank 0
assembles the job state (``StreamDataset.job_state``) and saves it with the model and the
optimizer. The first run reads on past its checkpoint; the second one resumes it on another
worker count. Each rank logs ``pass id`` of every record its loop received (``RUN/rankR.log``,
the step first) and, at the end, rank 0 writes the job state (``RUN/final.txt``).
``--share all`` (the default here) cuts every shard among every consumer, so the consumers
stay within a pass of each other without byte-size hints. (``--redirects 2 --tee 2``:
Debian 12's torchrun from torch 1.13 crashes on Python 3.11 without them.)
"""

import argparse
import glob
import json
import os
import sys

import torch
import torch.distributed as dist

from distsampler.torch import DataLoader, StreamDataset


def english(record):
    """The read-time filter: only English records are trained on."""
    return record["lang"] == "en"


def train(args):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    os.makedirs(args.out, exist_ok=True)
    paths = sorted(glob.glob(os.path.join(args.data, "*.jsonl")))
    if not paths:
        sys.exit(f"train_streams: no *.jsonl shards in {args.data}")
    share = args.share if args.share == "all" else int(args.share)
    dataset = StreamDataset(paths, micro_batch=args.micro_batch, seed=3, filter=english, share=share)
    loader = DataLoader(dataset, batch_size=None, num_workers=args.workers, persistent_workers=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)  # gradients averaged by hand below: every rank has every step
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    step = 0
    if args.resume:
        ckpt = torch.load(args.resume)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        loader.load_state_dict({"format": 1, "sampler": "StreamDataset", "state": ckpt["stream"]})
        step = ckpt["step"]
    log = open(os.path.join(args.out, f"rank{rank}.log"), "w")
    batches = iter(loader)
    for step in range(step, step + args.steps):
        items = next(batches)  # exactly --micro-batch kept records, on every rank, at every step
        x = torch.tensor([[item.record["x"]] for item in items])
        y = torch.tensor([[item.record["y"]] for item in items])
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        for p in model.parameters():  # the allreduce every rank reaches, since every rank has this step
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
        log.write(f"{step} " + " ".join(f"{item.pass_}:{item.record['id']}" for item in items) + "\n")
        log.flush()
        if step + 1 == args.checkpoint_at:
            parts = [None] * world
            dist.all_gather_object(parts, loader.state_dict()["state"])  # what each rank's loop received
            if rank == 0:
                ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step + 1,
                        "stream": dataset.job_state(parts)}
                torch.save(ckpt, os.path.join(args.out, "checkpoint.tmp"))
                os.replace(os.path.join(args.out, "checkpoint.tmp"), os.path.join(args.out, "checkpoint.pt"))
            dist.barrier()
    parts = [None] * world
    dist.all_gather_object(parts, loader.state_dict()["state"])
    if rank == 0:
        with open(os.path.join(args.out, "final.txt"), "w") as f:
            f.write(dataset.job_state(parts))
    log.close()
    print(f"rank {rank}/{world}: {args.steps} steps done, last step {step}, loss {float(loss):.4f}", flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--checkpoint-at", type=int, default=0)
    parser.add_argument("--share", default="all")
    parser.add_argument("--resume")
    train(parser.parse_args())


if __name__ == "__main__":
    main()
