# One rank's epoch with torch.utils.data.DistributedSampler, iterated fully, for scripts/bench.
# SPDX-License-Identifier: MIT
import sys
import time

from torch.utils.data import DistributedSampler


def main():
    n, world, rank = (int(a) for a in sys.argv[1:4])
    start = time.perf_counter()
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True, seed=0)
    sampler.set_epoch(0)
    total = 0
    count = 0
    for index in sampler:
        total += index
        count += 1
    seconds = time.perf_counter() - start
    print(f"torch-python N={n} W={world} rank={rank}: {count} indices in {seconds:.3f} s (checksum {total % 2**64})")


if __name__ == "__main__":
    main()
