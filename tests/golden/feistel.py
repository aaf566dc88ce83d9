#!/usr/bin/env python3
# distsampler golden values: FeistelPermutation format_version 2, computed from its documented algorithm.
# SPDX-License-Identifier: MIT
"""Prints p(0), p(1), ... of FeistelPermutation(n, seed, epoch) for the golden cases of
tests/test_feistel.cpp, from the algorithm documented in include/distsampler/feistel.hpp,
without using the library. Usage: python3 tests/golden/feistel.py"""

M = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
TAG = 0x6665697374656C31  # "feistel1"


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def splitmix64(x):
    return mix64((x + GAMMA) & M)


class Stream:
    def __init__(self, state):
        self.state = state

    def __call__(self):
        self.state = (self.state + GAMMA) & M
        return mix64(self.state)


def permutation(n, seed, epoch):
    """The function position -> index of format_version 2."""
    stream = Stream(splitmix64(splitmix64(splitmix64(seed ^ TAG) ^ epoch) ^ n))
    if n <= 16:
        # Fisher-Yates from one word read as a fraction: j = floor(x * (s + 1)), keep the rest.
        x = stream()
        table = list(range(n))
        for s in range(n - 1, 0, -1):
            product = x * (s + 1)
            j, x = product >> 64, product & M
            table[s], table[j] = table[j], table[s]
        return lambda i: table[i]
    bits = (n - 1).bit_length()
    right_bits = bits // 2
    left_bits = bits - right_bits
    rounds = 8 if bits >= 9 else 16
    keys = []
    for _ in range(rounds):
        keys.append(stream())
        keys.append(stream() | 1)

    def encrypt(v):
        left, right = v >> right_bits, v & ((1 << right_bits) - 1)
        for r in range(rounds):
            a, m = keys[2 * r], keys[2 * r + 1]
            if r % 2 == 0:
                left ^= (((right + a) * m) & M) >> (64 - left_bits)
            else:
                right ^= (((left + a) * m) & M) >> (64 - right_bits)
        return (left << right_bits) | right

    def at(i):
        v = encrypt(i)
        while v >= n:  # cycle walking
            v = encrypt(v)
        return v

    return at


CASES = [(1, 9, 9, 1), (2, 0, 0, 2), (3, 5, 1, 3), (10, 42, 0, 10), (16, 3, 4, 16), (17, 1, 2, 17), (100, 0, 0, 16),
         (1000, 42, 1, 16), (1048577, 7, 3, 8), (1000000000, 42, 1, 8), (M, 0, 0, 4)]

if __name__ == "__main__":
    for n, seed, epoch, count in CASES:
        p = permutation(n, seed, epoch)
        print("{%du, %d, %d, {%s}}," % (n, seed, epoch, ", ".join("%du" % p(i) if p(i) > 2**63 else str(p(i))
                                                                   for i in range(count))))
