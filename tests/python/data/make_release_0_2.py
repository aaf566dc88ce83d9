# Writes tests/python/data/release_0_2/: state_dicts and pickles made by distsampler 0.2, for test_release_compat_0_2.py.
# SPDX-License-Identifier: MIT
"""States and pickles of release 0.2, read back by the current package in test_release_compat_0_2.py.

How the committed files were made: with the Python of a venv in which distsampler 0.2 is
installed (``sh python/run_tests.sh`` builds one at ``build/python-venv``), from the root of
a checkout of the 0.2 line (the last commit before ``distsampler.torch._life``, the one life cycle):

    build/python-venv/bin/python -B tests/python/data/make_release_0_2.py

For each family, rank 0 of 2 (the stream dataset: 1 of 1):

- ``<name>.state.json``: the ``state_dict()`` after ``CONSUMED[name]`` items of epoch 3 (the
  Python states have no byte form: the text is the C++ ``SamplerState`` text);
- ``<name>.pkl``: a pickle (protocol 4) of a sampler that loaded that state and has not yet
  iterated, i.e. a sampler in the middle of epoch 3;
- ``loader_<name>.state.json``: a ``distsampler.torch.DataLoader`` state after some batches.

The shard files the two file datasets read are written next to them (``shard_<k>.jsonl``) and
named by relative paths: the test reads them from inside this folder. test_release_compat_0_2.py
builds the same configurations afresh: keep the two tables equal.
"""

import importlib.util
import json
import os
import pickle
import sys

import numpy as np
from torch.utils.data import IterableDataset

from distsampler.torch import (DataLoader, DistributedBatchSampler, DistributedSampler,
                               DistributedWeightedRandomSampler, MixtureBatchSampler, PackedSequenceSampler,
                               ShardedDataset, ShardStream, StreamDataset, TokenBatchSampler)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "release_0_2")
EPOCH = 3
SHARD_SIZES = [7, 3, 9, 4, 6, 5]
TOKEN_LENGTHS = np.array([(i * 37) % 61 + 3 for i in range(150)], dtype=np.uint32)
WEIGHTS = [1.0, 0.0, 3.0, 2.0, 5.0, 1.5, 0.5, 4.0]
FILE_RECORDS = [5, 8, 3, 6]  # records of shard_<k>.jsonl
CAPACITY = 4096  # bytes of a stream's shared state cell (the default 1 MiB would be pickled whole)


def samplers(rank):
    """name -> a fresh sampler of rank `rank` of 2 (the same table is in test_release_compat_0_2.py)."""
    return {
        "distributed_feistel": DistributedSampler(range(53), 2, rank, seed=11),
        "distributed_torch": DistributedSampler(range(53), 2, rank, seed=11, order="torch", torch_generation="v1"),
        "distributed_uneven": DistributedSampler(range(53), 2, rank, seed=11, tail="uneven"),
        "batch_feistel": DistributedBatchSampler(range(97), 3, 2, rank, accumulation_steps=2, seed=5),
        "batch_torch": DistributedBatchSampler(range(97), 3, 2, rank, seed=5, tail="pad", order="torch",
                                               torch_generation="v1"),
        "tokens": TokenBatchSampler(TOKEN_LENGTHS, 200, 2, rank, seed=7, window=64),
        "mixture": MixtureBatchSampler([40, 25, 60], [0.5, 0.2, 0.3], 4, 2, rank, seed=9, end="steps", end_count=12),
        "packing": PackedSequenceSampler(TOKEN_LENGTHS, 64, 2, 2, rank, accumulation_steps=2, seed=3),
        "weighted": DistributedWeightedRandomSampler(WEIGHTS, 40, num_replicas=2, rank=rank, seed=13),
        "weighted_without_replacement": DistributedWeightedRandomSampler(WEIGHTS, 6, replacement=False,
                                                                         num_replicas=2, rank=rank, seed=13),
    }


# Items of epoch EPOCH each sampler's iteration took before its state_dict(); the step samplers stop
# at a step boundary (a state saved inside a step resumes in whole steps of the rest).
CONSUMED = {"distributed_feistel": 10, "distributed_torch": 10, "distributed_uneven": 7, "batch_feistel": 4,
            "batch_torch": 3, "tokens": 4, "mixture": 6, "packing": 4, "weighted": 9,
            "weighted_without_replacement": 1}
PER_SAMPLE = ("distributed_feistel", "distributed_torch", "distributed_uneven", "weighted",
              "weighted_without_replacement")


def shard_stream(rank):
    return ShardStream(SHARD_SIZES, 2, rank, seed=4, tail="uneven", state_capacity=CAPACITY)


def sharded(rank):
    return ShardedDataset([f"shard_{k}.jsonl" for k in range(len(FILE_RECORDS))], num_replicas=2, rank=rank, seed=6,
                          tail="uneven", cache=False, threads=1)


def stream_dataset():
    return StreamDataset([f"shard_{k}.jsonl" for k in range(len(FILE_RECORDS))], num_replicas=1, rank=0,
                         micro_batch=3, seed=8, state_capacity=CAPACITY)


# ShardStream / ShardedDataset: saved after a DataLoader of 2 workers, batch_size 2, yielded 4 batches.
SHARD_BATCHES, SHARD_BATCH_SIZE, SHARD_WORKERS = 4, 2, 2
STREAM_ITEMS = 5  # micro-batches of the stream dataset received before its state


class Indices(IterableDataset):
    """The indices of a shard stream, as a DataLoader's dataset (the same class is in the test)."""

    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        return (s.index for s in self.stream)


def write_json(name, value):
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(value, f, indent=1, sort_keys=True)
        f.write("\n")


def dump(name, value):
    with open(os.path.join(OUT, name + ".pkl"), "wb") as f:
        pickle.dump(value, f, protocol=4)


def write_shards():
    for k, n in enumerate(FILE_RECORDS):
        with open(f"shard_{k}.jsonl", "w") as f:
            for i in range(n):
                f.write(json.dumps({"shard": k, "i": i, "text": "x" * (i + k)}) + "\n")


def main():
    if importlib.util.find_spec("distsampler.torch._life") is not None:
        sys.exit("make_release_0_2.py: the installed distsampler has the 0.3 life cycle (distsampler.torch._life; "
                 "expected the 0.2 line: the files must be written by the release's code)")
    os.makedirs(OUT, exist_ok=True)
    for name, sampler in samplers(0).items():
        sampler.set_epoch(EPOCH)
        it = iter(sampler)
        for _ in range(CONSUMED[name]):
            next(it)
        unit = "samples" if name in PER_SAMPLE else "batches"
        state = sampler.state_dict(**{unit: CONSUMED[name]})
        write_json(f"{name}.state", state)
        mid = samplers(0)[name]
        mid.load_state_dict(state)
        dump(name, mid)

    # The loader's own state, over two families (a per-sample sampler and a batch sampler).
    sampler = samplers(0)["distributed_feistel"]
    loader = DataLoader(range(53), batch_size=4, sampler=sampler)
    loader.set_epoch(EPOCH)
    it = iter(loader)
    for _ in range(3):
        next(it)
    write_json("loader_distributed_feistel.state", loader.state_dict())
    batches = samplers(0)["batch_feistel"]
    loader = DataLoader(range(97), batch_sampler=batches)
    loader.set_epoch(EPOCH)
    it = iter(loader)
    for _ in range(4):
        next(it)
    write_json("loader_batch_feistel.state", loader.state_dict())

    stream = shard_stream(0)
    stream.set_epoch(EPOCH)
    state = stream.state_dict(SHARD_BATCHES, SHARD_BATCH_SIZE, SHARD_WORKERS)
    write_json("shards.state", state)
    mid = shard_stream(0)
    mid.load_state_dict(state)
    dump("shards", mid)

    os.chdir(OUT)
    write_shards()
    data = sharded(0)
    data.set_epoch(EPOCH)
    state = data.state_dict(SHARD_BATCHES, SHARD_BATCH_SIZE, SHARD_WORKERS)
    write_json("sharded.state", state)
    mid = sharded(0)
    # A stream of the same settings with a small cell (ShardedDataset takes no state_capacity).
    mid.stream = ShardStream(mid.record_counts, 2, 0, seed=6, tail="uneven", state_capacity=CAPACITY)
    mid.load_state_dict(state)
    dump("sharded", mid)

    data = stream_dataset()
    loader = DataLoader(data, batch_size=None)
    it = iter(loader)
    for _ in range(STREAM_ITEMS):
        next(it)
    part = loader.state_dict()
    text = data.job_state([part["state"]])
    write_json("streams.state", {"loader": part, "job": text})
    mid = stream_dataset()
    mid.load_state_dict(text)
    dump("streams", mid)


if __name__ == "__main__":
    main()
