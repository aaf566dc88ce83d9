# Broken samplers for the mesh guard's tests: other samples under the library's name, another data rank's share.
# SPDX-License-Identifier: MIT
import distsampler.torch


class DistributedSampler(distsampler.torch.DistributedSampler):
    """A subclass under the library class's name (so the guard's key is the same) that yields
    every index shifted by one: the same key, other samples."""

    def __iter__(self):
        n = len(self.dataset)
        return ((i + 1) % n for i in super().__iter__())


class Claimed:
    """A sampler reading data rank ``source``'s share of ``num_replicas`` while it reports rank
    ``rank``: a wrong rank passed one layer down (its own key, rank and read sums are the inner
    sampler's, but for the rank it claims)."""

    def __init__(self, dataset, num_replicas, rank, source, seed):
        self.inner = distsampler.torch.DistributedSampler(dataset, num_replicas, source, seed=seed)
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.seed, self.shuffle, self.tail, self.epoch = seed, True, "pad", 0

    def __iter__(self):
        return iter(self.inner)

    def __len__(self):
        return len(self.inner)

    def _guard_description(self):
        return self.inner._guard_description()

    def _guard_sums(self):
        return self.inner._guard_sums()
