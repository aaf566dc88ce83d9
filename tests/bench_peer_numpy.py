# Checks that the Megatron-style peer of bench/pack_peers.hpp shuffles exactly as numpy's RandomState does (GPTDataset's generator).
# SPDX-License-Identifier: MIT
"""usage: bench_peer_numpy.py PROGRAM

Runs PROGRAM (tests/bench_peer_vectors.cpp) for a few sizes and seeds and compares its
document and shuffle indices with numpy.random.RandomState(seed): shuffle an int32 arange
of the documents, then, with the same generator, a uint32 arange of the samples."""
import subprocess
import sys

import numpy as np


def expected(n, seq_len, seed):
    sizes = np.array([1 + (7919 * i) % 97 for i in range(n)], dtype=np.int64)
    rs = np.random.RandomState(seed)
    document_index = np.arange(n, dtype=np.int32)
    rs.shuffle(document_index)
    tokens = int(sizes.sum())
    samples = 0 if tokens == 0 else (tokens - 1) // seq_len
    shuffle_index = np.arange(samples, dtype=np.uint32)
    rs.shuffle(shuffle_index)
    return document_index.tolist(), shuffle_index.tolist()


def main():
    program = sys.argv[1]
    checked = 0
    for n, seq_len, seed in [(1, 8, 0), (2, 8, 1), (1000, 64, 1), (5000, 17, 1234), (3000, 4096, 4294967295)]:
        out = subprocess.run([program, str(n), str(seq_len), str(seed)], check=True, capture_output=True,
                             text=True).stdout.splitlines()
        got_doc = [int(v) for v in out[0].split()[1:]]
        got_shuffle = [int(v) for v in out[1].split()[1:]]
        want_doc, want_shuffle = expected(n, seq_len, seed)
        if got_doc != want_doc or got_shuffle != want_shuffle:
            print(f"bench_peer_numpy: n {n}, seq_len {seq_len}, seed {seed}: the peer's shuffles differ from numpy's "
                  f"(document index {got_doc[:8]} vs {want_doc[:8]}, shuffle index {got_shuffle[:8]} vs "
                  f"{want_shuffle[:8]})")
            return 1
        checked += 1
    print(f"bench_peer_numpy: ok: {checked} builds shuffle as numpy's RandomState")
    return 0


if __name__ == "__main__":
    sys.exit(main())
