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
import torch.distributed
import torch.utils.data

from .._core import ConfigError, StateError
from ..mesh import DataWorld, Mesh
from ._common import PUBLIC_MODULE, _flag, _is_bool

__all__ = ["DataLoader", "MaskedBatch"]

_FORMAT = 1
_EXPECTED = ("a DistributedSampler or DistributedWeightedRandomSampler as sampler=, a DistributedBatchSampler, "
             "TokenBatchSampler, MixtureBatchSampler or PackedSequenceSampler as batch_sampler=, or an "
             "IterableDataset holding one "
             "ShardStream")
# What the loader asks a source to count, by how the DataLoader was given it.
_UNITS = {"sampler": ("samples",), "batch_sampler": ("batches",), "dataset": ("stream", "passes")}

MaskedBatch = collections.namedtuple("MaskedBatch", ["data", "is_padding"])
MaskedBatch.__module__ = PUBLIC_MODULE
MaskedBatch.__doc__ = ("A batch with its padding mask (``padding_mask=True``): ``is_padding[j]`` is True when sample "
                       "j is a padding duplicate (a bool tensor; a 0-d one with batch_size=None).")


def _unit_of(source):
    """The source's checkpoint unit (``_checkpoint_unit()``), None when it has no checkpoint protocol."""
    unit = getattr(source, "_checkpoint_unit", None)
    return unit() if callable(unit) else None


def _source_of(dataset):
    """The object an IterableDataset checkpoints by: itself when it answers the protocol, else its one attribute
    of a shard stream."""
    if _unit_of(dataset) is not None:
        return dataset
    streams = [v for v in vars(dataset).values() if _unit_of(v) == "stream"] if hasattr(dataset, "__dict__") else []
    if not streams and hasattr(dataset, "__dict__"):
        wrapped = [type(v).__name__ for v in vars(dataset).values() if type(v).__name__ == "ShardedDataset"]
        if wrapped:
            raise ConfigError(f"DataLoader: the IterableDataset {type(dataset).__name__} wraps a ShardedDataset, whose "
                              "position this loader cannot follow through your __iter__ (expected the ShardedDataset "
                              "itself as the dataset: to tokenize or transform its records, pass the function as "
                              "ShardedDataset(..., decode=fn))")
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
    stream; ``drop_last`` is refused there); or a ``StreamDataset`` with ``batch_size=None``
    (its ``state_dict()`` is this rank's part: see ``StreamDataset.job_state``). Anything
    else raises ``ConfigError``.

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

    ``guard=True`` (the default): when ``torch.distributed`` is initialised, the first
    iteration of each epoch runs ``distsampler.torch.guard`` on the sampler (one small
    exchange through the process group's store, a collective: every rank iterates its
    loader), so a sampler built with ``rank=LOCAL_RANK``, ``num_replicas=LOCAL_WORLD_SIZE``
    or ``seed=42 + rank`` raises ``ConfigError`` at the first epoch on every rank. A sampler
    of ``num_replicas=1`` (a loader of one rank's own, e.g. evaluation on rank 0) is not
    checked. Under tensor, context or pipeline parallelism (a data world smaller than the
    process group) pass ``guard=mesh_world(...)`` (``distsampler.mesh``): the mesh guard
    then checks the data-parallel groups. ``guard=False`` turns it off.
    """

    __module__ = PUBLIC_MODULE

    def __init__(self, dataset, *args, padding_mask=False, guard=True, **kwargs):
        if not (_is_bool(guard) or isinstance(guard, (DataWorld, Mesh))):
            raise ConfigError(f"DataLoader: guard {guard!r} is a {type(guard).__name__} (expected True, False, or the "
                              "DataWorld of distsampler.mesh.mesh_world (or its Mesh) under model parallelism)")
        super().__init__(dataset, *args, **kwargs)
        if isinstance(dataset, torch.utils.data.IterableDataset):
            arg, self._source = "dataset", _source_of(dataset)
        elif self.batch_size is None and self.batch_sampler is not None:
            arg, self._source = "batch_sampler", self.batch_sampler
        else:
            arg, self._source = "sampler", self.sampler
        self._kind = _unit_of(self._source)
        if self._kind not in _UNITS[arg]:
            raise ConfigError(f"DataLoader: {arg}={type(self._source).__name__} is not a sampler this loader can "
                              f"checkpoint (expected {_EXPECTED}; use torch.utils.data.DataLoader for other samplers)")
        self._source._loader_check(self)
        if padding_mask and not self._source._has_padding():
            raise ConfigError(f"DataLoader: padding_mask=True is not available for {type(self._source).__name__} "
                              "(its items carry no padding flag; expected padding_mask=False)")
        self._padding_mask = _flag("DataLoader", "padding_mask", padding_mask)
        self._guard = bool(guard) if _is_bool(guard) else guard
        self._guarded_epoch = None  # the epoch the guard last passed in
        self._step = 1 if self.batch_size is None else self.batch_size
        self._source._attach(self)
        self._pass = 0  # identifies the latest iteration; older iterators stop counting
        self._pass_epoch = None  # epoch of the latest iteration, None when there is none
        self._received = 0
        self._finished = False
        self._warned = False

    # -- iteration ------------------------------------------------------------------------
    def __iter__(self):
        self._begin_pass()
        return _LoopIterator(self, super().__iter__(), self._pass)

    def _begin_pass(self):
        source = self._source
        resumes = source._loader_begin(self)  # True: this pass reads a loaded state
        if (self._finished and not self._warned and source.epoch == self._pass_epoch and source.shuffle
                and not resumes):
            self._warned = True
            warnings.warn(f"DataLoader: epoch {source.epoch} starts again without a new set_epoch, so this pass "
                          "repeats the last one's order; call loader.set_epoch(epoch) (or the sampler's) before each "
                          "epoch", stacklevel=3)
        self._check_world(source)
        self._pass += 1
        self._pass_epoch = source.epoch
        self._received = 0
        self._finished = False
        self._length = len(source) if self._kind == "samples" else None

    def _check_world(self, source):
        """The guard of each epoch's first iteration (``guard=``, see the class)."""
        if self._guard is False or self._guarded_epoch == source.epoch:
            return
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
            return
        mesh = None if self._guard is True else self._guard
        if mesh is None and source.num_replicas == 1:
            return  # a loader of this rank's own: the other ranks may never iterate one
        from .guard import guard  # guard imports the mesh helpers; loaded when first needed
        try:
            guard(source, mesh=mesh)
        except ConfigError as e:
            if mesh is None and "num_replicas" in str(e):
                raise ConfigError(f"DataLoader: {e}; under tensor, context or pipeline parallelism pass "
                                  "guard=mesh_world(...) (distsampler.mesh) so that the data-parallel groups are "
                                  "checked, or guard=False") from None
            raise ConfigError(f"DataLoader: {e}") from None
        self._guarded_epoch = source.epoch

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
        """Samples (a ``sampler=``) or batches the loop received in the latest iteration."""
        if not self._current():
            return 0
        if self._kind == "samples":
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
        source = self._source
        inner = source.state_dict(received=self._received_units())
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
        self._source._loader_loaded(self)
        self._pass += 1  # an iteration in progress no longer counts
        self._pass_epoch = None
        self._received = 0
        self._finished = False

    # -- the padding mask -----------------------------------------------------------------
    def _mask(self, j):
        """The padding flags of batch j of the latest iteration (the source answers)."""
        flags = self._source._padding_flags(j, self._step)
        if self._kind == "samples" and self.batch_size is None:
            return torch.tensor(flags[0])
        return torch.tensor(flags, dtype=torch.bool)


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
        batch = loader._source._received_batch(batch, self._pass_id == loader._pass)
        if loader._padding_mask and self._pass_id == loader._pass:
            batch = MaskedBatch(batch, loader._mask(loader._received))
        loader._returned(self._pass_id)
        return batch

    def __getattr__(self, name):
        return getattr(self._inner, name)
