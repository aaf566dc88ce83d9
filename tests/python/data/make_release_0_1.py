# Writes tests/python/data/release_0_1/*.pkl: pickles and state_dicts made by distsampler 0.1.0, for the compat test.
# SPDX-License-Identifier: MIT
"""Pickles of release 0.1.0, read back by the current package in test_release_compat.py.

How the committed files were made: with the Python of a venv in which distsampler 0.1.0
is installed (``sh python/run_tests.sh`` in a checkout of the 0.1.0 release builds one at
``build/python-venv`` of that checkout), from the root of this repository:

    ../release-0.1/build/python-venv/bin/python -B tests/python/data/make_release_0_1.py

(``../release-0.1`` standing for the release checkout). The script refuses to run under
any other version, since the point of the files is that an old release wrote them. Each
``<name>.pkl`` holds one configured instance of a public class (protocol 4, as a
DataLoader's spawned workers receive a dataset); ``<name>.state.pkl`` the ``state_dict()``
of a sampler that consumed part of an epoch. test_release_compat.py builds the same
samplers afresh and compares: keep the configurations of both files equal.
"""

import os
import pickle
import sys

import numpy as np

import distsampler
import distsampler.torch
from distsampler.torch import (
    DistributedBatchSampler,
    DistributedSampler,
    DistributedWeightedRandomSampler,
    EmptyToNone,
    MixtureBatchSampler,
    ScheduledShard,
    ShardSample,
    ShardStream,
    TokenBatchSampler,
    default_torch_generation,
    guard,
)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "release_0_1")
EPOCH = 3
SHARD_SIZES = [7, 3, 9, 4, 6, 5]
TOKEN_LENGTHS = np.array([(i * 37) % 61 + 3 for i in range(150)], dtype=np.uint32)


def samplers():
    """name -> a fresh sampler of rank 0 of 2 (the same table is in test_release_compat.py)."""
    return {
        "distributed_feistel": DistributedSampler(range(53), 2, 0, seed=11),
        "distributed_torch": DistributedSampler(range(53), 2, 0, seed=11, order="torch", torch_generation="v1"),
        "batch_feistel": DistributedBatchSampler(range(97), 3, 2, 0, accumulation_steps=2, seed=5),
        "batch_torch": DistributedBatchSampler(range(97), 3, 2, 0, seed=5, tail="pad", order="torch",
                                               torch_generation="v1"),
        "tokens": TokenBatchSampler(TOKEN_LENGTHS, 200, 2, 0, seed=7, window=64),
        "mixture": MixtureBatchSampler([40, 25, 60], [0.5, 0.2, 0.3], 4, 2, 0, seed=9, end="steps", end_count=12),
        "weighted": DistributedWeightedRandomSampler([1.0, 0.0, 3.0, 2.0, 5.0, 1.5, 0.5, 4.0], 40, num_replicas=2,
                                                     rank=0, seed=13),
        "weighted_without_replacement": DistributedWeightedRandomSampler([1.0, 0.0, 3.0, 2.0, 5.0, 1.5, 0.5, 4.0],
                                                                         6, replacement=False, num_replicas=2,
                                                                         rank=0, seed=13),
    }


# How far each sampler's iteration got before its state_dict() (items of its iterator). The
# batch samplers stop at a step boundary (4 micro-batches = 2 steps of accumulation 2): a
# state saved inside a step resumes in whole steps of the rest, which is not a slice of the
# uninterrupted epoch.
CONSUMED = {"distributed_feistel": 10, "distributed_torch": 10, "batch_feistel": 4, "batch_torch": 3, "tokens": 4,
            "mixture": 7, "weighted": 9, "weighted_without_replacement": 1}


def dump(name, value):
    with open(os.path.join(OUT, name + ".pkl"), "wb") as f:
        pickle.dump(value, f, protocol=4)


def main():
    # 0.1.0 is also the version of the development line after it, until the next release:
    # the release is the one whose distsampler.torch is a single module file.
    layout = os.path.basename(distsampler.torch.__file__)
    if distsampler.__version__ != "0.1.0" or layout != "torch.py":
        sys.exit(f"make_release_0_1.py: distsampler {distsampler.__version__} with distsampler.torch in {layout} is "
                 "installed (expected the 0.1.0 release, whose distsampler.torch is torch.py)")
    os.makedirs(OUT, exist_ok=True)
    for name, sampler in samplers().items():
        sampler.set_epoch(EPOCH)
        dump(name, sampler)  # as configured, before any iteration
        it = iter(sampler)
        for _ in range(CONSUMED[name]):
            next(it)
        dump(name + ".state", sampler.state_dict())

    stream = ShardStream(SHARD_SIZES, 2, 0, seed=4, tail="uneven")
    stream.set_epoch(EPOCH)
    dump("shards", stream)
    # A DataLoader of 2 workers, batch_size 2, yielded 4 batches on every rank: 2 of each worker.
    state = stream.state_dict(4, 2, 2)
    dump("shards.state", state)
    resumed = ShardStream(SHARD_SIZES, 2, 0, seed=4, tail="uneven")
    resumed.load_state_dict(state)
    dump("shards_pending", resumed)  # what a spawned worker receives after load_state_dict

    batches = DistributedBatchSampler(range(97), 3, 2, 0, accumulation_steps=2, seed=5)
    batches.load_state_dict(_partly_consumed(DistributedBatchSampler(range(97), 3, 2, 0, accumulation_steps=2,
                                                                     seed=5), 4))
    dump("batch_pending", batches)  # a loaded state travels with the pickle

    dump("shard_sample", ShardSample(2, 5, 12, False))
    dump("scheduled_shard", ScheduledShard(4, 0, 6, 3))
    dump("empty_to_none", EmptyToNone())
    dump("functions", [guard, default_torch_generation])


def _partly_consumed(sampler, items):
    sampler.set_epoch(EPOCH)
    it = iter(sampler)
    for _ in range(items):
        next(it)
    return sampler.state_dict()


if __name__ == "__main__":
    main()
