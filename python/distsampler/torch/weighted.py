# distsampler.torch.DistributedWeightedRandomSampler: torch's WeightedRandomSampler split over ranks.
# SPDX-License-Identifier: MIT
import sys

from torch.utils.data import Sampler

from .. import _core
from .._core import ConfigError
from ._common import (PUBLIC_MODULE, _STATE_FORMAT, _Progress, _check_state_dict, _check_tail, _generate,
                      _resolve_world, _seed64, _unsigned, _weights)
from ._handout import detached_state, recorded


class DistributedWeightedRandomSampler(Sampler):
    """torch's ``WeightedRandomSampler``, distributed: for a DataLoader's ``sampler``.

    Each epoch draws ``num_samples`` indices in total (not per rank) with probability
    proportional to ``weights``: with ``replacement`` (default) each draw independently
    (an alias table; O(1) per index, random access), without it a weighted shuffle
    (``num_samples`` at most the number of positive weights). Rank r reads positions r,
    r + num_replicas, ... of the epoch's draws, so ranks read disjoint positions; ``tail``
    ``"pad"`` (default; every rank the same count), ``"drop"`` or ``"uneven"``. Draws are
    keyed by (seed, epoch, position), not by a torch generator: call ``set_epoch`` for new
    draws, as with ``DistributedSampler``.

    ``state_dict(samples=None)`` / ``load_state_dict`` as ``DistributedSampler``.
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
        self._base = _core.make_weighted_sampler(*self._config())
        self._pending = None
        self._progress = None
        self._cache = None

    def _config(self):
        return (self.weights, self.rank, self.num_replicas, self.num_samples, self.replacement,
                _seed64("DistributedWeightedRandomSampler", self.seed), self.tail)

    def _core_at(self, epoch):
        # Cached: without replacement an epoch's order costs O(N log N) to build; cores are read-only.
        pending = self._pending if epoch == self.epoch else None
        if self._cache is None or self._cache[0] != (epoch, pending):
            core = self._base.copy()
            if pending is not None:
                core.resume(pending)
            else:
                core.set_epoch(epoch)
            self._cache = ((epoch, pending), core)
        return self._cache[1]

    def __len__(self):
        return self._core_at(self.epoch).size

    def set_epoch(self, epoch):
        """Selects the epoch (new draws). A loaded state of another epoch is discarded."""
        e = _unsigned("DistributedWeightedRandomSampler", "epoch", epoch)
        if self._pending is not None and e != self.epoch:
            self._pending = None
        self.epoch = e

    def __iter__(self):
        return self._iterate()

    def _iterate(self):
        # A generator: a loaded state is taken at the first next() (see DistributedSampler).
        core = self._core_at(self.epoch)
        self._pending = None
        progress = _Progress(core, core.epoch)
        self._progress = progress
        yield from _generate(progress, core.chunk, core.size)

    def state_dict(self, samples=None):
        """``{"format": 1, "epoch": e, "state": text}`` after the first ``samples`` indices of
        the latest iteration on every rank; without ``samples`` as
        ``DistributedSampler.state_dict`` (mid-epoch it raises unless a loader that knows asks)."""
        if self._pending is not None and samples is None:
            return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": self._pending}
        p = self._progress
        current = p is not None and p.epoch == self.epoch and self._pending is None
        core = p.core if current else self._core_at(self.epoch)
        if samples is None:
            done = recorded(self, p if current else None, "DistributedWeightedRandomSampler.state_dict", "samples",
                            "indices")
        else:
            done = _unsigned("DistributedWeightedRandomSampler.state_dict", "samples", samples)
        return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": core.state(done)}

    def load_state_dict(self, state_dict):
        """Validates now (``StateError`` with the C++ message); the next ``__iter__`` resumes."""
        text, epoch = _check_state_dict("DistributedWeightedRandomSampler.load_state_dict", state_dict)
        self._base.copy().resume(text)
        self._pending = text
        self.epoch = epoch
        self._progress = None

    def __getstate__(self):
        state = detached_state(self.__dict__.copy())
        state["_base"] = state["_progress"] = state["_cache"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._base = _core.make_weighted_sampler(*self._config())
