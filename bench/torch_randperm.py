# torch.randperm(n) on the CPU generator, timed in-process, for scripts/bench.
# SPDX-License-Identifier: MIT
import sys
import time

import torch


def main():
    n = int(sys.argv[1])
    torch.set_num_threads(1)
    g = torch.Generator()
    g.manual_seed(0)
    start = time.perf_counter()
    p = torch.randperm(n, generator=g)
    seconds = time.perf_counter() - start
    print(f"torch.randperm n={n}: {seconds:.3f} s (first {int(p[0])})")


if __name__ == "__main__":
    main()
