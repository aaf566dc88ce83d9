# distsampler.torch.loader: DataLoader, torch's DataLoader that checkpoints what the training loop received.
# SPDX-License-Identifier: MIT
"""``DataLoader``: a subclass of ``torch.utils.data.DataLoader`` (every argument and
``isinstance`` check keep working) with torchdata's ``StatefulDataLoader`` protocol,
``state_dict()`` / ``load_state_dict()``, over the distsampler samplers. It counts the
batches it returned to the loop, so a state names exactly what the loop received, never
what the workers prefetched, and resumes on any world size and worker count.
"""

import collections
import warnings
from collections.abc import Mapping

import torch
import torch.utils.data

from .._core import ConfigError, StateError
from ._common import PUBLIC_MODULE
from ._handout import attach
from .batch import DistributedBatchSampler
from .mixture import MixtureBatchSampler
from .packing import PackedSequenceSampler
from .sampler import DistributedSampler
from .shards import ShardStream
from .tokens import TokenBatchSampler
from .weighted import DistributedWeightedRandomSampler

__all__ = ["DataLoader", "MaskedBatch"]

_FORMAT = 1
_PER_SAMPLE = (DistributedSampler, DistributedWeightedRandomSampler)
_BATCH = (DistributedBatchSampler, TokenBatchSampler, MixtureBatchSampler, PackedSequenceSampler)
_EXPECTED = ("a DistributedSampler or DistributedWeightedRandomSampler as sampler=, a DistributedBatchSampler, "
             "TokenBatchSampler, MixtureBatchSampler or PackedSequenceSampler as batch_sampler=, or an "
             "IterableDataset holding one "
             "ShardStream")

MaskedBatch = collections.namedtuple("MaskedBatch", ["data", "is_padding"])
MaskedBatch.__module__ = PUBLIC_MODULE
MaskedBatch.__doc__ = ("A batch with its padding mask (``padding_mask=True``): ``is_padding[j]`` is True when sample "
                       "j is a padding duplicate (a bool tensor; a 0-d one with batch_size=None).")


def _stream_of(dataset):
    streams = [v for v in vars(dataset).values() if isinstance(v, ShardStream)] if hasattr(dataset, "__dict__") else []
    if len(streams) != 1:
        found = "no ShardStream attribute" if not streams else f"{len(streams)} ShardStream attributes"
        raise ConfigError(f"DataLoader: the IterableDataset {type(dataset).__name__} holds {found} "
                          "(expected exactly one, whose samples __iter__ yields one item each, in order; "
                          "use torch.utils.data.DataLoader for other iterable datasets: their position is unknown)")
    return streams[0]


class DataLoader(torch.utils.data.DataLoader):
    """torch's ``DataLoader`` (same arguments) that knows which batches the loop received.

    The sampler is one of this library's: ``sampler=DistributedSampler(...)`` or
    ``DistributedWeightedRandomSampler`` with ``batch_size`` / ``drop_last``;
    ``batch_sampler=`` a ``DistributedBatchSampler``, ``TokenBatchSampler`` or
    ``MixtureBatchSampler``; or an ``IterableDataset`` with one ``ShardStream`` attribute
    whose ``__iter__`` yields one item per stream sample, in order (worker w batches its own
    stream; ``drop_last`` is refused there). Anything else raises ``ConfigError``.

    ``state_dict()``: ``{"format", "sampler", "epoch", "batches", "state"}``: the position
    after the batches this loader returned in its latest iteration of the current epoch
    (the epoch's start before any), as the sampler's own state (a position of the epoch's
    global order: it loads on any world size, worker count, ``prefetch_factor``).
    ``load_state_dict(sd)`` before iterating (as torchdata's): the next iteration yields
    exactly the rest of that epoch; ``{}`` loads nothing. While this loader drives its
    sampler, ``sampler.state_dict()`` records what the loop received too.

    ``padding_mask=True``: each batch comes as ``MaskedBatch(data, is_padding)``, the mask
    True exactly at padding duplicates (``tail="pad"``), so exact evaluation drops them.
    Not available for ``DistributedWeightedRandomSampler`` (``ConfigError``).

    ``set_epoch(epoch)`` forwards to the sampler. Re-iterating a shuffled epoch after a
    complete pass without ``set_epoch`` repeats its order: a ``UserWarning`` says so once.
    """

    __module__ = PUBLIC_MODULE

    def __init__(self, dataset, *args, padding_mask=False, **kwargs):
        super().__init__(dataset, *args, **kwargs)
        if isinstance(dataset, torch.utils.data.IterableDataset):
            self._source, self._kind = _stream_of(dataset), "stream"
            if self.drop_last:
                raise ConfigError("DataLoader: drop_last=True with a ShardStream dataset drops each worker's last "
                                  "partial batch (expected drop_last=False; the stream's tail option decides the "
                                  "epoch's end)")
        elif self.batch_size is None and self.batch_sampler is not None:
            self._source, self._kind = self.batch_sampler, "batch"
        else:
            self._source, self._kind = self.sampler, "sample"
        allowed = {"stream": (ShardStream,), "batch": _BATCH, "sample": _PER_SAMPLE}[self._kind]
        if not isinstance(self._source, allowed):
            arg = "batch_sampler" if self._kind == "batch" else "sampler"
            raise ConfigError(f"DataLoader: {arg}={type(self._source).__name__} is not a sampler this loader can "
                              f"checkpoint (expected {_EXPECTED}; use torch.utils.data.DataLoader for other samplers)")
        if padding_mask and isinstance(self._source, DistributedWeightedRandomSampler):
            raise ConfigError("DataLoader: padding_mask=True is not available for DistributedWeightedRandomSampler "
                              "(its draws carry no padding flag; expected padding_mask=False)")
        self._padding_mask = bool(padding_mask)
        self._step = 1 if self.batch_size is None else self.batch_size
        if self._kind != "stream":
            attach(self._source, self)
        self._pass = 0  # identifies the latest iteration; older iterators stop counting
        self._pass_epoch = None  # epoch of the latest iteration, None when there is none
        self._received = 0
        self._finished = False
        self._warned = False
        self._stream_version = None  # the stream cell's version its latest pass read
        self._slots = None  # per-pass data for the padding mask

    # -- iteration ------------------------------------------------------------------------
    def __iter__(self):
        self._begin_pass()
        return _LoopIterator(self, super().__iter__(), self._pass)

    def _begin_pass(self):
        source = self._source
        if self._kind == "stream" and source._pending is not None and source._cell.version == self._stream_version:
            source._pending = None  # a loaded state applies to one pass; then the whole epoch again
        if (self._finished and not self._warned and source.epoch == self._pass_epoch and source.shuffle
                and (self._kind == "stream" or source._pending is None)):
            self._warned = True
            warnings.warn(f"DataLoader: epoch {source.epoch} starts again without a new set_epoch, so this pass "
                          "repeats the last one's order; call loader.set_epoch(epoch) (or the sampler's) before each "
                          "epoch", stacklevel=3)
        self._pass += 1
        self._pass_epoch = source.epoch
        self._received = 0
        self._finished = False
        self._slots = None
        if self._kind == "stream":
            self._stream_version = source._cell.version
        self._length = len(source) if self._kind == "sample" else None

    def _returned(self, pass_id):
        if pass_id == self._pass:
            self._received += 1

    def _ended(self, pass_id):
        if pass_id == self._pass:
            self._finished = True

    def set_epoch(self, epoch):
        """Selects the epoch on the sampler (or the dataset's ShardStream)."""
        self._source.set_epoch(epoch)

    # -- what the loop received -----------------------------------------------------------
    def _current(self):
        return self._pass_epoch is not None and self._pass_epoch == self._source.epoch

    def _received_units(self):
        """Samples (per-sample samplers) or batches the loop received in the latest iteration."""
        if not self._current():
            return 0
        if self._kind == "sample":
            return self._length if self._finished else min(self._received * self._step, self._length)
        return self._received

    def _received_by(self, sampler):
        """What `sampler` (attached to this loader) records for its latest iteration, or None."""
        if sampler is not self._source or self._pass_epoch is None or not self._current():
            return None
        return self._received_units()

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self):
        """The position after what this loader returned (see the class); the same on every rank."""
        source, done = self._source, self._received_units()
        if self._kind == "sample":
            inner = source.state_dict(samples=done)
        elif self._kind == "batch":
            inner = source.state_dict(batches=done)
        else:
            inner = source.state_dict(done, self._step, self.num_workers)
        return {"format": _FORMAT, "sampler": type(source).__name__, "epoch": inner["epoch"],
                "batches": self._received if self._current() else 0, "state": inner}

    def load_state_dict(self, state_dict):
        """Loads a ``state_dict()`` for the next iteration (``{}``: nothing). Raises
        ``StateError`` for another sampler's state or a malformed or mismatched one."""
        who = "DataLoader.load_state_dict"
        if isinstance(state_dict, Mapping) and len(state_dict) == 0:
            return
        if not isinstance(state_dict, Mapping) or not {"format", "sampler", "state"} <= set(state_dict):
            kind = f"keys {sorted(map(str, state_dict))}" if isinstance(state_dict, Mapping) else \
                type(state_dict).__name__
            raise StateError(f"{who}: expected a dict with keys 'format', 'sampler' and 'state' from "
                             f"DataLoader.state_dict(), got {kind}")
        if state_dict["format"] != _FORMAT:
            raise StateError(f"{who}: 'format' {state_dict['format']!r} is unknown (expected {_FORMAT}; saved by a "
                             "newer distsampler?)")
        name = type(self._source).__name__
        if state_dict["sampler"] != name:
            raise StateError(f"{who}: the state is of a {state_dict['sampler']} but this loader reads a {name} "
                             f"(expected a state saved by a DataLoader over a {name})")
        self._source.load_state_dict(state_dict["state"])
        self._pass += 1  # an iteration in progress no longer counts
        self._pass_epoch = None
        self._received = 0
        self._finished = False
        self._stream_version = None

    # -- the padding mask -----------------------------------------------------------------
    def _mask(self, j):
        """The padding flags of batch j of the latest iteration."""
        source = self._source
        if self._kind == "sample":
            core = source._progress.core
            first = j * self._step
            flags = [core.is_padding(i) for i in range(first, min(first + self._step, core.size))]
        elif self._kind == "batch":
            core = source._progress.core
            if isinstance(source, TokenBatchSampler):
                flags = [False] * len(source._fetcher(core)(j, 1)[0])
            else:
                k = core.accumulation_steps
                size = len(source._fetcher(core)(j, 1)[0])
                flags = [core.is_padding(j // k, j % k, e) for e in range(size)]
        else:
            flags = self._stream_flags(j)
        if self._kind == "sample" and self.batch_size is None:
            return torch.tensor(flags[0])
        return torch.tensor(flags, dtype=torch.bool)

    def _stream_flags(self, j):
        # Batch j comes from the workers in turn, skipping the exhausted ones
        # (detail::round_robin_done): turn t gives one batch of each worker that has more than t.
        if self._slots is None:
            workers = max(1, self.num_workers)
            core = self._source._positioned(workers)
            counts = [-(-core.worker_size(w) // self._step) for w in range(workers)]
            order = [(w, t) for t in range(max(counts, default=0)) for w in range(workers) if counts[w] > t]
            self._slots = (core, order)
        core, order = self._slots
        worker, t = order[j]
        return [sample[3] for sample in core.samples(worker, t * self._step, self._step)]


class _LoopIterator:
    """The loader's iterator: torch's, counting each batch it returns to the loop."""

    def __init__(self, loader, inner, pass_id):
        self._loader = loader
        self._inner = inner
        self._pass_id = pass_id

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._inner)

    def __next__(self):
        loader = self._loader
        try:
            batch = next(self._inner)
        except StopIteration:
            loader._ended(self._pass_id)
            raise
        if loader._padding_mask and self._pass_id == loader._pass:
            batch = MaskedBatch(batch, loader._mask(loader._received))
        loader._returned(self._pass_id)
        return batch

    def __getattr__(self, name):
        return getattr(self._inner, name)
