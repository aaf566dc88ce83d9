# distsampler soak benchmark: 10,000 set_epoch/iterate cycles of every Python sampler family, RSS before and after.
# SPDX-License-Identifier: MIT
"""Builds one sampler per family (rank 1 of 4, small datasets), runs WARMUP cycles of
``set_epoch(e)`` + full iteration (+ a state_dict where the family has one), reads the
process's resident set size, runs CYCLES more, and reads it again. A leak of even a few
bytes per cycle shows as growth of tens of KiB; allocator noise stays within a few
hundred KiB. Prints one line per family; asserts nothing (see docs/PERFORMANCE.md).

    python3 python/bench_soak.py [--cycles 10000]
"""
import argparse
import gc
import time

from distsampler.torch import (DistributedBatchSampler, DistributedSampler, DistributedWeightedRandomSampler,
                               MixtureBatchSampler, ShardStream, TokenBatchSampler)

WARMUP = 200


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def families():
    """(name, sampler): one sampler per family, rank 1 of 4."""
    data = list(range(1000))
    lengths = [16 + (i * 37) % 480 for i in range(1000)]
    return [
        ("DistributedSampler", DistributedSampler(data, num_replicas=4, rank=1, seed=3)),
        ("DistributedBatchSampler", DistributedBatchSampler(data, 8, 4, 1, accumulation_steps=2, seed=3)),
        ("ShardStream", ShardStream([100, 250, 3, 400, 247], 4, 1, seed=3)),
        ("TokenBatchSampler", TokenBatchSampler(lengths, 2048, 4, 1, window=100, seed=3)),
        ("MixtureBatchSampler", MixtureBatchSampler([600, 300, 100], [0.5, 0.3, 0.2], 4, 4, 1, accumulation_steps=2,
                                                    seed=3)),
        ("DistributedWeightedRandomSampler",
         DistributedWeightedRandomSampler([1.0 + i % 7 for i in range(1000)], 1000, True, 4, 1, seed=3)),
    ]


def cycle(sampler, epoch):
    sampler.set_epoch(epoch)
    n = 0
    for _ in sampler:
        n += 1
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cycles", type=int, default=10000)
    args = p.parse_args()
    print(f"{'family':34} {'items/epoch':>11} {'RSS before':>11} {'RSS after':>10} {'growth':>8} {'seconds':>8}")
    for name, sampler in families():
        for e in range(WARMUP):
            cycle(sampler, e)
        gc.collect()
        before, start = rss_kib(), time.perf_counter()
        for e in range(WARMUP, WARMUP + args.cycles):
            items = cycle(sampler, e)
        gc.collect()
        after = rss_kib()
        print(f"{name:34} {items:>11} {before:>8} KiB {after:>6} KiB {after - before:>+5} KiB "
              f"{time.perf_counter() - start:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
