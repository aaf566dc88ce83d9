# Datasets and helpers the loader tests share (importable by spawned DataLoader workers).
# SPDX-License-Identifier: MIT
import itertools

from torch.utils.data import IterableDataset

from distsampler.torch import MaskedBatch


class ShardData(IterableDataset):
    """Yields the global index of each sample of its stream (one item per stream sample, in order)."""

    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        for sample in self.stream:
            yield sample.index


class Unknown(IterableDataset):
    """An iterable dataset without a ShardStream."""

    def __iter__(self):
        return iter(range(10))


def as_list(batch):
    """A collate_fn keeping a batch as a list of ints."""
    return [int(x) for x in batch]


def flat(batches):
    """The indices of a sequence of batches (MaskedBatch or lists), in order."""
    out = []
    for b in batches:
        out.extend(b.data if isinstance(b, MaskedBatch) else b)
    return out


def take(loader, k):
    """The first k batches of a new iteration of `loader` (the iterator stays alive in the loader)."""
    return list(itertools.islice(iter(loader), k))
