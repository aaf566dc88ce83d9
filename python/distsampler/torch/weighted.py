# distsampler.torch.DistributedWeightedRandomSampler: torch's WeightedRandomSampler split over ranks.
# SPDX-License-Identifier: MIT
import sys

from torch.utils.data import Sampler

from .. import _core
from .._core import ConfigError
from ._common import PUBLIC_MODULE, _check_tail, _options, _resolve_world, _seed64, _unsigned, _weights
from ._life import _Life


class DistributedWeightedRandomSampler(_Life, Sampler):
    """torch's ``WeightedRandomSampler``, distributed: for a DataLoader's ``sampler``.

    Each epoch draws ``num_samples`` indices in total (not per rank) with probability
    proportional to ``weights``: with ``replacement`` (default) each draw independently
    (an alias table; O(1) per index, random access), without it a weighted shuffle
    (``num_samples`` at most the number of positive weights). Rank r reads positions r,
    r + num_replicas, ... of the epoch's draws, so ranks read disjoint positions; ``tail``
    ``"pad"`` (default; every rank the same count), ``"drop"`` or ``"uneven"``. Draws are
    keyed by (seed, epoch, position), not by a torch generator: call ``set_epoch`` for new
    draws, as with ``DistributedSampler``.

    ``state_dict(received=None)`` / ``load_state_dict`` as ``DistributedSampler`` (the one life
    cycle of ``distsampler.torch._life``).
    """

    __module__ = PUBLIC_MODULE

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        # The layout: the C++ guard layout (a hash of the weights, num_samples and replacement), so a
        # rank built with other weights is named, not only one seeded apart.
        return {"sampler": type(self).__name__, "dataset_size": len(self.weights), "order": "feistel",
                "global_batch_size": 0, "token_layout": f"{self._base.guard_layout:#018x}"}

    def _guard_sums(self):
        """(slots, ReadSums words, start) of the pass a copy would read, for ``guard``'s mesh cover check (the
        C++ weighted guard point: the draw positions this rank reads, padding flagged)."""
        core = self._core_at(self.epoch)
        return (*core.guard_sums(), core.start)

    def __init__(self, weights, num_samples, replacement=True, num_replicas=None, rank=None, *, seed=0, tail="pad"):
        who = "DistributedWeightedRandomSampler"
        self.num_replicas, self.rank = _resolve_world(who, num_replicas, rank)
        if not isinstance(replacement, bool):
            raise ConfigError(f"{who}: replacement {replacement!r} is not a bool (expected True or False)")
        _check_tail(who, tail)
        self.weights = _weights(who, "weights", weights)
        self.num_samples = _unsigned(who, "num_samples", num_samples)
        if self.num_samples == 0:
            raise ConfigError(f"{who}: num_samples is 0 (expected a positive number of draws per epoch)")
        per_rank = -(-self.num_samples // self.num_replicas)
        if per_rank > sys.maxsize:
            raise ConfigError(f"{who}: num_samples {self.num_samples} on num_replicas {self.num_replicas} gives "
                              f"{per_rank} draws per rank (expected at most {sys.maxsize} per rank: len() is a "
                              "Python int of the platform's index size)")
        self.replacement = replacement
        self.seed = seed
        self.shuffle = True
        self.tail = tail
        self.epoch = 0
        self._init_life()
        self._start_core()

    # -- the family: its config, its build, its fetch -------------------------------------
    _who = "DistributedWeightedRandomSampler"

    def _config(self):
        return (tuple(self.weights), self.rank, self.num_replicas, self.num_samples, self.replacement,
                _seed64(self._who, self.seed), self.tail)

    @staticmethod
    def _build(key):
        weights, rank, world_size, num_samples, replacement, seed, tail = key
        options = _options(_core.WeightedSamplerOptions, num_samples=num_samples, replacement=replacement, seed=seed,
                           tail=tail)
        return _core.make_weighted_sampler(list(weights), rank, world_size, options)

    @staticmethod
    def _fetcher(core):
        return core.chunk

    def _has_padding(self):
        return False  # its draws carry no padding flag
