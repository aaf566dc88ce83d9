# The per-rank seed bug in Python: four data-parallel ranks seeded 42 + rank overlap; one shared seed partitions.
# SPDX-License-Identifier: MIT
"""Usage: python seed_bug.py [dataset_size] [world_size]

Simulates the data side of an FSDP/DDP training loop on W ranks for one epoch, twice:
  1. the bug: each rank shuffles with its own seed (torch's sampler with seed=42 + rank),
  2. the fix: distsampler.torch.DistributedSampler with one shared seed,
and counts, from what the ranks' DataLoaders yielded, the samples read twice or more and
the samples never read. Exits 0 when the bug shows and the fix reads every sample once.
"""

import sys

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler as TorchSampler

from distsampler.torch import DistributedSampler
from distsampler.verify import check_partition


def epoch_of(sampler, dataset):
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    return [int(i) for batch in loader for i in batch]


def count(n, per_rank):
    seen = [0] * n
    for indices in per_rank:
        for i in indices:
            seen[i] += 1
    return sum(1 for c in seen if c > 1), sum(1 for c in seen if c == 0)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    dataset = torch.arange(n)
    buggy = [epoch_of(TorchSampler(dataset, world, r, seed=42 + r), dataset) for r in range(world)]
    fixed = [epoch_of(DistributedSampler(dataset, world, r, seed=42, tail="uneven"), dataset) for r in range(world)]
    for name, per_rank in (("seed = 42 + rank (torch)", buggy), ("shared seed (distsampler)", fixed)):
        dup, miss = count(n, per_rank)
        print(f"{name:28s} N={n} W={world}: {dup} samples read more than once, {miss} never read")
    report = check_partition(n, fixed, tail="uneven")
    print("distsampler.verify:", report.summary)
    bug_dup, bug_miss = count(n, buggy)
    return 0 if bug_dup > 0 and bug_miss > 0 and report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
