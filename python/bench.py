# Benchmarks one rank's epoch in Python: distsampler vs torch's DistributedSampler (time, first index, peak RSS).
# SPDX-License-Identifier: MIT
"""Usage: python bench.py [N ...]   (default 1000000 10000000; world size 8, rank 3)

Each measurement runs in a fresh interpreter (so peak RSS is its own) and reports the
time to iterate one rank's whole epoch, the time to the first index, and the process's
peak RSS. Sizes above 10**8 run distsampler only (torch would build N Python ints).
Prints a Markdown table with ratios against torch.
"""

import subprocess
import sys

WORLD, RANK = 8, 3

CASES = {
    "torch DistributedSampler": (
        "from torch.utils.data.distributed import DistributedSampler as S\n"
        "make = lambda: S(range(N), WORLD, RANK, seed=1)"),
    "distsampler (feistel)": (
        "from distsampler.torch import DistributedSampler as S\n"
        "make = lambda: S(range(N), WORLD, RANK, seed=1)"),
    "distsampler (order=torch)": (
        "from distsampler.torch import DistributedSampler as S\n"
        "make = lambda: S(range(N), WORLD, RANK, seed=1, order='torch')"),
    "torch DistributedSampler + BatchSampler(64)": (
        "from torch.utils.data.distributed import DistributedSampler as S\n"
        "from torch.utils.data import BatchSampler\n"
        "make = lambda: BatchSampler(S(range(N), WORLD, RANK, seed=1), 64, True)"),
    "distsampler DistributedBatchSampler(64), lists": (
        "from distsampler.torch import DistributedBatchSampler as B\n"
        "make = lambda: B(range(N), 64, WORLD, RANK, seed=1)"),
    "distsampler DistributedBatchSampler(64), NumPy": (
        "from distsampler.torch import DistributedBatchSampler as B\n"
        "make = lambda: B(range(N), 64, WORLD, RANK, seed=1, as_numpy=True)"),
}

MEASURE = """
import resource, time
N, WORLD, RANK = {n}, {world}, {rank}
{setup}
t0 = time.perf_counter()
first = next(iter(make()))
t_first = time.perf_counter() - t0
t0 = time.perf_counter()
count = 0
for _ in make():
    count += 1
t_epoch = time.perf_counter() - t0
print(t_epoch, t_first, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
"""


def measure(name, n):
    code = MEASURE.format(n=n, world=WORLD, rank=RANK, setup=CASES[name])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [10**6, 10**7]
    print(f"World size {WORLD}, rank {RANK}; one epoch of one rank iterated in Python.\n")
    print("| N | sampler | epoch (s) | vs torch | first index (ms) | peak RSS (MiB) |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        baseline = {}
        for name in CASES:
            if n > 10**8 and not name.startswith("distsampler") or (n > 10**8 and "order=torch" in name):
                continue
            epoch, first, rss = measure(name, n)
            if name.startswith("torch"):
                baseline["batch" if "Batch" in name else "index"] = epoch
            ref = baseline.get("batch" if "Batch" in name else "index")
            ratio = f"{ref / epoch:.1f}x" if ref and not name.startswith("torch") else "-"
            print(f"| {n:,} | {name} | {epoch:.3f} | {ratio} | {first * 1e3:.2f} | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
