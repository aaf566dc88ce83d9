# distsampler.torch: drop-in torch samplers (index, batch, shard stream) with checkpoints; a torch.distributed guard.
# SPDX-License-Identifier: MIT
"""torch adapters of the distsampler C++ samplers.

- ``DistributedSampler``: a subclass of ``torch.utils.data.distributed.DistributedSampler``
  with O(1) memory (``order="feistel"``, the default) or torch's exact order
  (``order="torch"``), exact evaluation (``tail="uneven"``) and ``state_dict`` /
  ``load_state_dict`` for mid-epoch checkpoints.
- ``DistributedBatchSampler``: micro-batches of each optimizer step, for a DataLoader's
  ``batch_sampler``; resumable on another world size.
- ``ShardStream``: one (rank, DataLoader worker) stream of a sharded dataset, for an
  ``IterableDataset``.
- ``TokenBatchSampler``: micro-batches under a token budget from per-sample lengths, the
  same number on every rank in every step (empty micro-batches flagged, never dropped),
  for a DataLoader's ``batch_sampler``; ``EmptyToNone`` is its ``collate_fn`` wrapper.
- ``MixtureBatchSampler``: micro-batches mixing several sources in exact per-step
  proportions, as global indices into their concatenation (``ConcatDataset``).
- ``DistributedWeightedRandomSampler``: torch's ``WeightedRandomSampler``, split over ranks.
- ``guard``: checks with ``torch.distributed`` that every rank built the same sampler.

The world (rank and world size) comes from the explicit arguments when given, else from
``torch.distributed`` when it is initialized, else from the launcher's environment
(``RANK``/``WORLD_SIZE``, Open MPI, PMI, SLURM; strict parsing, errors raise
``ConfigError``). There is no silent single-process default: pass ``num_replicas=1,
rank=0`` for one process.
"""

import collections
import operator
from collections.abc import Mapping

import torch
import torch.distributed as dist
from torch.utils.data import Sampler
from torch.utils.data.distributed import DistributedSampler as _TorchDistributedSampler

from . import _core
from ._core import ConfigError, StateError

__all__ = [
    "DistributedSampler",
    "DistributedBatchSampler",
    "ShardStream",
    "ShardSample",
    "ScheduledShard",
    "TokenBatchSampler",
    "EmptyToNone",
    "MixtureBatchSampler",
    "DistributedWeightedRandomSampler",
    "guard",
    "default_torch_generation",
]

_U64 = 1 << 64
_FIRST_CHUNK = 64
_CHUNK = 4096
_TAILS = ("pad", "drop", "uneven")
_ORDERS = ("feistel", "torch")
_GENERATIONS = ("v1", "v2.7")
_STATE_FORMAT = 1
_COSTS = ("padded", "linear", "quadratic")
_OVERSIZE = ("error", "own_batch", "skip")
_U32_MAX = (1 << 32) - 1
_ENDS = ("first_exhausted", "all_seen", "samples", "steps")


def default_torch_generation(version=None):
    """The generation of torch's large-n ``randperm`` the installed torch uses.

    ``"v1"`` for torch before 2.7 (one 32-bit draw per swap), ``"v2.7"`` from 2.7 on.
    The generations differ only for datasets of 214748364 samples or more.
    """
    text = torch.__version__ if version is None else version
    parts = []
    for piece in str(text).split(".")[:2]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits) if digits else 0)
    while len(parts) < 2:
        parts.append(0)
    return "v1" if tuple(parts) < (2, 7) else "v2.7"


def _index(who, name, value):
    try:
        return operator.index(value)
    except TypeError:
        raise ConfigError(f"{who}: {name} {value!r} is not an integer (expected an int)") from None


def _unsigned(who, name, value):
    v = _index(who, name, value)
    if v < 0 or v >= _U64:
        raise ConfigError(f"{who}: {name} {v} is out of range (expected 0..{_U64 - 1})")
    return v


def _seed64(who, seed):
    """torch's seeds are int64 or uint64; negative seeds are taken mod 2^64 as torch does."""
    v = _index(who, "seed", seed)
    if v < -(1 << 63) or v >= _U64:
        raise ConfigError(f"{who}: seed {v} is out of range (expected -2^63..2^64-1, as torch.manual_seed)")
    return v % _U64


def _resolve_world(who, num_replicas, rank):
    if num_replicas is None or rank is None:
        if dist.is_available() and dist.is_initialized():
            found = (dist.get_rank(), dist.get_world_size())
        else:
            env = _core.world_from_env()
            if env is None:
                missing = " and ".join(n for n, v in (("num_replicas", num_replicas), ("rank", rank)) if v is None)
                raise ConfigError(
                    f"{who}: {missing} not given, torch.distributed is not initialized and no "
                    "launcher environment was found (looked for RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/"
                    "OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS); pass num_replicas= and "
                    "rank= (num_replicas=1, rank=0 for one process)"
                )
            found = (env[0], env[1])
        if rank is None:
            rank = found[0]
        if num_replicas is None:
            num_replicas = found[1]
    world_size = _unsigned(who, "num_replicas", num_replicas)
    r = _index(who, "rank", rank)
    if r < 0:
        bound = f"0..{world_size - 1}" if world_size else "none: num_replicas is 0"
        raise ConfigError(f"{who}: rank {r} is out of range for num_replicas {world_size} (expected {bound})")
    _core.validate_world(r, world_size)
    return world_size, r


def _check_tail(who, tail):
    if tail not in _TAILS:
        raise ConfigError(f'{who}: tail {tail!r} is unknown (expected "pad", "drop" or "uneven")')


def _resolve_tail(who, tail, drop_last):
    if tail is None:
        return "drop" if drop_last else "pad"
    _check_tail(who, tail)
    if drop_last and tail != "drop":
        raise ConfigError(
            f'{who}: drop_last=True conflicts with tail="{tail}" (drop_last=True means tail="drop"; pass one of them)'
        )
    return tail


def _resolve_order(who, order, generation):
    if order not in _ORDERS:
        raise ConfigError(f'{who}: order {order!r} is unknown (expected "feistel" or "torch")')
    if generation is None:
        return default_torch_generation()
    if generation not in _GENERATIONS:
        raise ConfigError(f'{who}: torch_generation {generation!r} is unknown (expected "v1" or "v2.7")')
    return generation


class _Progress:
    """How far one iterator got: its C++ sampler, and the end of the chunk it hands out."""

    __slots__ = ("core", "epoch", "end", "it")

    def __init__(self, core, epoch):
        self.core = core
        self.epoch = epoch
        self.end = 0
        self.it = None

    def taken(self):
        # A list iterator's length hint is exactly what it has not handed out yet.
        return self.end if self.it is None else self.end - self.it.__length_hint__()


def _generate(progress, fetch, total):
    """Yields items fetched in chunks, keeping `progress` exact after every item."""
    first, size = 0, _FIRST_CHUNK
    while first < total:
        chunk = fetch(first, size)
        if not chunk:
            break
        first += len(chunk)
        it = iter(chunk)
        progress.it = it
        progress.end = first
        yield from it
        size = _CHUNK
    progress.it = None


def _check_state_dict(who, sd):
    if not isinstance(sd, Mapping) or "state" not in sd or "epoch" not in sd:
        kind = type(sd).__name__ if not isinstance(sd, Mapping) else f"keys {sorted(map(str, sd.keys()))}"
        raise StateError(f"{who}: expected a dict with keys 'epoch' and 'state' from state_dict(), got {kind}")
    if sd.get("format", _STATE_FORMAT) != _STATE_FORMAT:
        raise StateError(f"{who}: 'format' {sd['format']!r} is unknown (expected {_STATE_FORMAT}; saved by a newer "
                         "distsampler?)")
    text = sd["state"]
    if not isinstance(text, str):
        raise StateError(f"{who}: 'state' is a {type(text).__name__} (expected the str from state_dict())")
    parsed = _core.parse_state(text)
    epoch = sd["epoch"]
    if not isinstance(epoch, int) or epoch != parsed["epoch"]:
        raise StateError(f"{who}: 'epoch' {epoch!r} disagrees with the state's epoch {parsed['epoch']} (edited dict?)")
    return text, parsed["epoch"]


class DistributedSampler(_TorchDistributedSampler):
    """torch's ``DistributedSampler``, computed by the distsampler C++ library.

    Args:
        dataset: anything with ``len()``.
        num_replicas, rank: the world; when omitted, from ``torch.distributed`` if it is
            initialized, else from the launcher's environment (strict; ``ConfigError``).
        shuffle, seed, drop_last: as torch. ``seed`` may be negative (taken mod 2^64, as
            torch does). All ranks must pass the same seed (see ``guard``).
        order: ``"feistel"`` (default): a keyed O(1)-memory permutation; each rank computes
            only its own indices, so N = 10**9 needs no memory and the first index comes at
            once. ``"torch"``: exactly the indices torch's own sampler yields (O(N) memory).
        tail: ``"pad"`` (torch's default, equal counts with wrap-around duplicates),
            ``"drop"`` (= ``drop_last=True``) or ``"uneven"`` (every index exactly once;
            counts differ by at most one, for exact evaluation). Default from ``drop_last``.
        torch_generation: for ``order="torch"``, which torch ``randperm`` generation to
            reproduce (``"v1"`` before torch 2.7, ``"v2.7"`` after); default: the installed one.

    Attributes are torch's: ``dataset``, ``num_replicas``, ``rank``, ``epoch``, ``seed``,
    ``shuffle``, ``drop_last``, ``num_samples`` (this rank's count), ``total_size``
    (``num_samples * num_replicas``; N under ``tail="uneven"``), plus ``order``, ``tail``.

    Checkpointing (torchdata ``StatefulDataLoader`` protocol): ``state_dict()`` records the
    epoch and how many indices the latest iterator handed out (as a position of the
    epoch's global order, so it loads on any world size); ``load_state_dict(sd)`` takes
    effect at the next ``__iter__``, which yields exactly the rest of that epoch.
    ``set_epoch`` with another epoch discards a loaded state that was not yet iterated.

    Raises ``ConfigError`` (a ``ValueError``) for bad arguments, ``StateError`` (a
    ``ValueError``) for corrupt or mismatched state; both carry the C++ library's message.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False, *,
                 order="feistel", tail=None, torch_generation=None):
        who = "DistributedSampler"
        world_size, r = _resolve_world(who, num_replicas, rank)
        self.tail = _resolve_tail(who, tail, drop_last)
        self.torch_generation = _resolve_order(who, order, torch_generation)
        self.order = order
        _seed64(who, seed)
        super().__init__(dataset, num_replicas=world_size, rank=r, shuffle=shuffle, seed=seed, drop_last=drop_last)
        n = len(dataset)
        if self.tail == "uneven":
            self.num_samples = n // world_size + (1 if r < n % world_size else 0)
            self.total_size = n
        self._base = None
        self._base_key = None
        self._pending = None
        self._prepared = None
        self._progress = None

    # -- the C++ sampler ------------------------------------------------------------------
    def _config(self):
        who = "DistributedSampler"
        world_size, r = _resolve_world(who, self.num_replicas, self.rank)
        return (self.order, len(self.dataset), r, world_size, bool(self.shuffle), _seed64(who, self.seed),
                self.tail, self.torch_generation)

    def _cpp(self, epoch):
        """A private C++ sampler at the start of `epoch` (copies share torch-order tables)."""
        key = self._config()
        if self._base is None or self._base_key != key:
            self._base = _core.sampler(*key)
            self._base_key = key
        self._base.set_epoch(epoch)
        return self._base.copy()

    def _epoch64(self):
        return _unsigned("DistributedSampler", "epoch", self.epoch)

    # -- torch's interface ----------------------------------------------------------------
    def __iter__(self):
        if self._pending is not None:
            return self._resume_pass()
        return self._pass(self._cpp(self._epoch64()))

    def _pass(self, core):
        progress = _Progress(core, core.epoch)
        self._progress = progress
        return _generate(progress, core.chunk, core.size)

    def _resume_pass(self):
        # A generator: the loaded state is taken at the first next(), not at iter().
        # DataLoader calls iter() twice when it has workers and drops the first iterator
        # unused; that one must not consume the state.
        if self._pending is None:
            core = self._cpp(self._epoch64())
        elif self._prepared is not None and self._prepared[0] == self._config():
            core = self._prepared[1]
        else:
            core = self._resumed(self._pending)
        self._pending = self._prepared = None
        yield from self._pass(core)

    def __len__(self):
        if self._pending is not None:
            if self._prepared is None or self._prepared[0] != self._config():
                self._prepared = (self._config(), self._resumed(self._pending))
            return self._prepared[1].size
        p = self._progress
        if p is not None and p.epoch == self.epoch and p.core.start != 0:
            return p.core.size
        return self.num_samples

    def set_epoch(self, epoch):
        """Selects the epoch (as torch). A loaded state of another epoch is discarded."""
        e = _unsigned("DistributedSampler", "epoch", epoch)
        if self._pending is not None and e != self.epoch:
            self._pending = self._prepared = None
        self.epoch = epoch

    # -- checkpointing --------------------------------------------------------------------
    def state_dict(self, samples=None):
        """``{"format": 1, "epoch": e, "state": text}``: the epoch and the position reached.

        The position is what the latest ``iter()`` of this epoch handed out (all of it once
        exhausted); before any iteration of the epoch, its start. A state loaded but not
        yet iterated is returned as loaded. ``state`` is the C++ ``SamplerState`` text.

        ``samples``: record instead that every rank consumed its first ``samples`` indices
        of the latest iteration (a plain DataLoader with workers draws indices ahead of the
        batches it delivered: pass ``batches_done * batch_size`` there). Raises
        ``ConfigError`` when it exceeds what this rank's iteration has.
        """
        if self._pending is not None and samples is None:
            return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": self._pending}
        epoch = self._epoch64()
        p = self._progress
        if samples is not None:
            core = p.core if p is not None and p.epoch == epoch else self._cpp(epoch)
            if self._pending is not None:
                core = self._prepared[1] if self._prepared is not None else self._resumed(self._pending)
            text = core.state(_unsigned("DistributedSampler.state_dict", "samples", samples))
        elif p is not None and p.epoch == epoch:
            text = p.core.state(p.taken())
        else:
            text = self._cpp(epoch).state(0)
        return {"format": _STATE_FORMAT, "epoch": epoch, "state": text}

    def load_state_dict(self, state_dict):
        """Validates ``state_dict`` now and resumes from it at the next ``__iter__``.

        Raises ``StateError`` with the C++ message when it is malformed or belongs to
        another dataset size, seed, shuffle, tail or order. World size may differ.
        """
        text, epoch = _check_state_dict("DistributedSampler.load_state_dict", state_dict)
        core = self._resumed(text)
        self._prepared = (self._config(), core)
        self._pending = text
        self.epoch = epoch
        self._progress = None

    def _resumed(self, text):
        epoch = _core.parse_state(text)["epoch"]
        core = self._cpp(epoch)
        core.resume(text)
        return core

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("_base", "_base_key", "_prepared", "_progress"):
            state[name] = None
        return state

    # -- extras ---------------------------------------------------------------------------
    def is_padding(self, i):
        """True when slot i of this rank's epoch is a wrap-around duplicate (tail="pad")."""
        return self._cpp(self._epoch64()).is_padding(i)

    def indices(self, as_numpy=False):
        """This rank's whole epoch at once (a list, or an int64 NumPy array computed with the GIL released)."""
        core = self._cpp(self._epoch64())
        return core.array(0, core.size) if as_numpy else core.chunk(0, core.size)


class _StepSampler(Sampler):
    """What the batch and mixture samplers share: a C++ sampler of optimizer steps, each of
    ``accumulation_steps`` micro-batches per rank, its epoch, and its checkpoints."""

    _who = ""

    def _shape(self, micro_batch_size, num_replicas, rank, accumulation_steps, global_batch_size, tail):
        who = self._who
        self.num_replicas, self.rank = _resolve_world(who, num_replicas, rank)
        _check_tail(who, tail)
        if accumulation_steps is not None and global_batch_size is not None:
            raise ConfigError(f"{who}: accumulation_steps {accumulation_steps} and global_batch_size "
                              f"{global_batch_size} were both given (expected one of them)")
        self.micro_batch_size = _unsigned(who, "micro_batch_size", micro_batch_size)
        self._accumulation = 1 if accumulation_steps is None else _unsigned(who, "accumulation_steps",
                                                                            accumulation_steps)
        self._global = 0 if global_batch_size is None else _unsigned(who, "global_batch_size", global_batch_size)
        if global_batch_size is not None and self._global == 0:
            raise ConfigError(f"{who}: global_batch_size is 0 (expected a positive multiple of micro_batch_size "
                              f"{self.micro_batch_size} x num_replicas {self.num_replicas})")
        self.tail = tail
        self.epoch = 0
        self._pending = None
        self._prepared = None
        self._progress = None

    def _start(self):
        """Builds the C++ sampler once the settings are in place (raises its ConfigError)."""
        self._base_key = self._config()
        self._base = self._build(self._base_key)
        self.accumulation_steps = self._base.accumulation_steps
        self.global_batch_size = self._base.global_batch_size

    def _cpp(self, epoch):
        """A private C++ sampler at the start of `epoch`."""
        key = self._config()
        if self._base is None or self._base_key != key:
            self._base = self._build(key)
            self._base_key = key
        self._base.set_epoch(epoch)
        return self._base.copy()

    @property
    def num_steps(self):
        """Optimizer steps in this epoch (or in what remains of a loaded state's epoch)."""
        if self._pending is not None:
            return self._prepared.num_steps
        return self._cpp(self.epoch).num_steps

    def __len__(self):
        return self.num_steps * self.accumulation_steps

    def set_epoch(self, epoch):
        """Selects the epoch. A loaded state of another epoch is discarded."""
        e = _unsigned(self._who, "epoch", epoch)
        if self._pending is not None and e != self.epoch:
            self._pending = self._prepared = None
        self.epoch = e

    def __iter__(self):
        if self._pending is not None:
            return self._resume_pass()
        return self._pass(self._cpp(self.epoch))

    def _pass(self, core):
        progress = _Progress(core, core.epoch)
        self._progress = progress
        return _generate(progress, self._fetcher(core), core.num_steps * core.accumulation_steps)

    def _resume_pass(self):
        # A generator, for the reason given in DistributedSampler._resume_pass.
        core = self._prepared if self._pending is not None else self._cpp(self.epoch)
        self._pending = self._prepared = None
        yield from self._pass(core)

    def state_dict(self, batches=None):
        """``{"format": 1, "epoch": e, "state": text}`` after the micro-batches handed out so
        far, or after the first ``batches`` micro-batches of the latest iteration on
        every rank (a DataLoader with workers draws ahead: pass what the loop consumed)."""
        if self._pending is not None and batches is None:
            return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": self._pending}
        p = self._progress
        if self._pending is not None:
            core = self._prepared
        elif p is not None and p.epoch == self.epoch:
            core = p.core
        else:
            core = self._cpp(self.epoch)
        k = core.accumulation_steps
        if batches is None:
            taken = p.taken() if p is not None and core is p.core else 0
        else:
            who = f"{self._who}.state_dict"
            taken = _unsigned(who, "batches", batches)
            if taken > core.num_steps * k:
                raise ConfigError(f"{who}: batches {taken} exceeds the {core.num_steps * k} micro-batches of "
                                  f"this rank's pass (expected 0..{core.num_steps * k})")
        return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": core.state(taken // k, taken % k)}

    def load_state_dict(self, state_dict):
        """Validates now (``StateError`` with the C++ message) and resumes at the next ``__iter__``."""
        text, epoch = _check_state_dict(f"{self._who}.load_state_dict", state_dict)
        core = self._cpp(epoch)
        core.resume(text)
        self._prepared = core
        self._pending = text
        self.epoch = epoch
        self._progress = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_base"] = state["_prepared"] = state["_progress"] = None
        if state["_pending"] is not None:
            state["_pending"] = None
            state["_pickled_pending"] = self._pending
        return state

    def __setstate__(self, state):
        pending = state.pop("_pickled_pending", None)
        self.__dict__.update(state)
        if pending is not None:
            self.load_state_dict({"epoch": self.epoch, "state": pending})


def _token_lengths(who, lengths):
    """The lengths as a 1-D C-contiguous uint32 array: the same array when it already is
    one (no copy), else one checked conversion."""
    import numpy as np

    try:
        a = lengths if isinstance(lengths, np.ndarray) else np.asarray(lengths)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{who}: lengths cannot be read as an array ({e}; expected a 1-D sequence of "
                          "integers, one token count per sample)") from None
    if a.ndim != 1:
        raise ConfigError(f"{who}: lengths has shape {tuple(a.shape)} (expected a 1-D array: one token count per "
                          "sample)")
    if a.dtype == np.uint32:
        return np.ascontiguousarray(a)
    if a.size == 0:
        return np.zeros(0, dtype=np.uint32)
    if a.dtype.kind not in "iu":
        raise ConfigError(f"{who}: lengths has dtype {a.dtype} (expected integers, best uint32: one token count "
                          "per sample)")
    if a.dtype.kind == "i":
        negative = np.flatnonzero(a < 0)
        if negative.size:
            i = int(negative[0])
            raise ConfigError(f"{who}: sample {i} has length {int(a[i])} (expected a token count of at least 1)")
    if a.dtype.itemsize > 4:
        large = np.flatnonzero(a > _U32_MAX)
        if large.size:
            i = int(large[0])
            raise ConfigError(f"{who}: sample {i} has length {int(a[i])} (expected at most {_U32_MAX}: lengths are "
                              "uint32)")
    return a.astype(np.uint32)


class EmptyToNone:
    """A ``collate_fn`` for ``TokenBatchSampler``: an empty micro-batch becomes ``None``;
    any other is passed to ``collate_fn`` (default: torch's ``default_collate``, which
    fails on an empty list). Picklable, so DataLoader workers can use it."""

    def __init__(self, collate_fn=None):
        self.collate_fn = collate_fn

    def __call__(self, batch):
        if len(batch) == 0:
            return None
        if self.collate_fn is None:
            return torch.utils.data.default_collate(batch)
        return self.collate_fn(batch)


class TokenBatchSampler(_StepSampler):
    """This rank's micro-batches under a token budget, for a DataLoader's ``batch_sampler``.

    ``lengths[i]`` is the token count of sample i (a NumPy array, a list, a CPU tensor or
    a ``numpy.memmap`` of a file of uint32 counts). A 1-D C-contiguous uint32 array is used
    in place, without a copy, and kept alive by the sampler: do not change it afterwards.
    Any other integer array is checked and converted once.

    Each window of ``window`` samples of the epoch's shuffled order is sorted by length and
    cut into micro-batches whose cost stays within ``max_tokens``: ``cost="padded"``
    (count x longest), ``"linear"`` (sum of lengths) or ``"quadratic"`` (sum of d + d*d //
    ``quadratic_q``), with at most ``max_samples`` samples (None: no limit) and counts a
    multiple of ``batch_multiple`` where possible. Every rank gets the same number of
    micro-batches in every step (``accumulation_steps`` per step), known without
    communication; ``len(sampler)`` is that number for the epoch, equal on every rank.
    ``longest_first=True`` puts the epoch's longest sample into step 0 (an out-of-memory
    shows at once). A sample over the budget on its own: ``oversize="error"`` (default,
    ``ConfigError`` naming it), ``"own_batch"`` or ``"skip"`` (counted in ``stats``).

    **Empty micro-batches.** When a window cannot be balanced by merging or splitting, a
    rank short of a micro-batch gets an *empty* one: the sampler yields ``[]`` in its
    place (never duplicated data, never dropped, so every rank runs the same steps). The
    default collate fails on an empty list: pass ``collate_fn=EmptyToNone()`` (or your own
    wrapper) and treat ``batch is None`` as an empty micro-batch. The rank must still take
    part in the step's collectives: run the forward and backward pass on any dummy input
    with the loss multiplied by 0 (DDP then all-reduces zero gradients), or skip the
    forward pass and join the all-reduce with zero gradients yourself. ``stats`` counts
    them (``empty_micro_batches``); they occur only in windows too small for the world.

    ``state_dict(batches=None)`` / ``load_state_dict`` as ``DistributedBatchSampler``: the
    state counts samples of the epoch's plan, so it resumes exactly once on another world
    size or accumulation. ``batches``: record instead that every rank consumed its first
    ``batches`` micro-batches of the latest iteration (a DataLoader with workers draws
    ahead of what it delivered). The resumed pass plans the rest of the interrupted window
    again for its own world, so the micro-batches after the resume point may be cut
    differently from an uninterrupted run's: the same samples, each once, in whole steps.
    After the resumed pass, the next ``__iter__`` is the whole epoch again (as torch). A
    state of other lengths or budget options is refused (``StateError``).
    """

    _who = "TokenBatchSampler"

    def __init__(self, lengths, max_tokens, num_replicas=None, rank=None, *, accumulation_steps=1, cost="padded",
                 quadratic_q=1024, max_samples=None, batch_multiple=1, window=1 << 20, longest_first=False,
                 oversize="error", shuffle=True, seed=0):
        who = "TokenBatchSampler"
        self.num_replicas, self.rank = _resolve_world(who, num_replicas, rank)
        self.lengths = _token_lengths(who, lengths)
        self.max_tokens = _unsigned(who, "max_tokens", max_tokens)
        if cost not in _COSTS:
            raise ConfigError(f'{who}: cost {cost!r} is unknown (expected "padded", "linear" or "quadratic")')
        if oversize not in _OVERSIZE:
            raise ConfigError(f'{who}: oversize {oversize!r} is unknown (expected "error", "own_batch" or "skip")')
        self.cost = cost
        self.oversize = oversize
        self.quadratic_q = _unsigned(who, "quadratic_q", quadratic_q)
        self.max_samples = None if max_samples is None else _unsigned(who, "max_samples", max_samples)
        if self.max_samples == 0:
            raise ConfigError(f"{who}: max_samples is 0 (expected at least 1, or None for no limit)")
        self.batch_multiple = _unsigned(who, "batch_multiple", batch_multiple)
        self.window = _unsigned(who, "window", window)
        self.accumulation_steps = _unsigned(who, "accumulation_steps", accumulation_steps)
        self.longest_first = bool(longest_first)
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.tail = "uneven"
        self.order = "feistel"
        self.epoch = 0
        self._base_key = self._config()
        self._base = _core.token_sampler(self.lengths, *self._base_key)
        self._pending = None
        self._prepared = None
        self._progress = None

    def _config(self):
        return (self.rank, self.num_replicas, self.max_tokens, self.cost, self.quadratic_q, self.max_samples or 0,
                self.batch_multiple, self.window, self.accumulation_steps, self.longest_first, self.oversize,
                self.shuffle, _seed64("TokenBatchSampler", self.seed))

    def _cpp(self, epoch):
        """A private C++ sampler at the start of `epoch` (an epoch is planned once, then copied)."""
        key = self._config()
        if self._base is None or self._base_key != key:
            self._base = _core.token_sampler(self.lengths, *key)
            self._base_key = key
        if self._base.epoch != epoch:
            self._base.set_epoch(epoch)
        return self._base.copy()

    def _current(self):
        if self._pending is not None:
            return self._prepared
        return self._cpp(self.epoch)

    @property
    def stats(self):
        """The epoch's plan over every rank (the same dict on every rank): steps, micro_batches,
        empty_micro_batches, splits, merges, skipped_samples, oversize_batches, tokens, padded,
        padding_efficiency, max_step_ratio, mean_step_ratio, steps_with_empty_rank."""
        return self._current().stats

    @property
    def layout_hash(self):
        """The 64-bit hash of the lengths and budget options that saved states must match."""
        return self._base.layout_hash if self._base is not None else self._cpp(self.epoch).layout_hash

    def micro_batch(self, step, k=0):
        """``(indices, tokens, padded, oversize)`` of this rank's micro-batch ``k`` of ``step``
        in the current epoch (random access; ``IndexError`` outside the epoch)."""
        return self._current().micro_batch(_unsigned("TokenBatchSampler", "step", step),
                                           _unsigned("TokenBatchSampler", "k", k))

    def _fetcher(self, core):
        return core.micro_batches


class DistributedBatchSampler(_StepSampler):
    """This rank's micro-batches of each optimizer step, for a DataLoader's ``batch_sampler``.

    The global batch G = micro_batch_size x num_replicas x accumulation_steps; step s
    consumes positions [s*G, (s+1)*G) of the epoch's global order, micro-batch round k
    its next micro_batch_size x num_replicas, and rank r the r-th run of those. Yields
    ``num_steps * accumulation_steps`` micro-batches: lists of ints, or int64 NumPy
    arrays with ``as_numpy=True`` (computed in C++ with the GIL released).

    Give ``accumulation_steps`` (default 1) or ``global_batch_size`` (a multiple of
    micro_batch_size x num_replicas), not both. ``tail``: ``"drop"`` (default; the last
    partial global batch waits for the next epoch), ``"pad"`` (one more step, completed
    from the epoch's start) or ``"uneven"`` (one more step with exactly the remaining
    samples spread over the micro-batches; some may be empty, so that every rank runs the
    same steps: give the DataLoader a ``collate_fn`` that accepts an empty list).

    ``state_dict()`` / ``load_state_dict()`` as ``DistributedSampler``
    (``state_dict(batches=...)`` with the micro-batches the loop consumed when
    DataLoader workers draw ahead); the state counts positions of the global order, so it
    resumes on another world size, micro-batch size or accumulation (elastic resume) with
    nothing repeated or skipped.
    """

    _who = "DistributedBatchSampler"

    def __init__(self, dataset, micro_batch_size, num_replicas=None, rank=None, *, accumulation_steps=None,
                 global_batch_size=None, shuffle=True, seed=0, tail="drop", order="feistel", torch_generation=None,
                 as_numpy=False):
        self._shape(micro_batch_size, num_replicas, rank, accumulation_steps, global_batch_size, tail)
        self.torch_generation = _resolve_order(self._who, order, torch_generation)
        self.dataset = dataset
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.order = order
        self.as_numpy = bool(as_numpy)
        self._start()

    def _config(self):
        return (self.order, len(self.dataset), self.rank, self.num_replicas, self.micro_batch_size,
                self._accumulation, self._global, self.shuffle, _seed64(self._who, self.seed), self.tail,
                self.torch_generation)

    @staticmethod
    def _build(key):
        return _core.batch_sampler(*key)

    def _fetcher(self, core):
        if not self.as_numpy:
            return core.micro_batches
        m = core.micro_batch_size

        def fetch(first, count):
            block, lengths = core.micro_batch_block(first, min(count, max(1, (1 << 16) // max(1, m))))
            return [row if n == m else row[:n] for row, n in zip(block, lengths)]
        return fetch


ShardSample = collections.namedtuple("ShardSample", ["shard", "offset", "index", "is_padding"])
ShardSample.__doc__ = "One sample of a shard stream: shard number, record offset in it, global index, padding flag."
ScheduledShard = collections.namedtuple("ScheduledShard", ["shard", "first_slot", "last_slot", "samples"])
ScheduledShard.__doc__ = ("One shard of a shard schedule: shard number, first and last stream slot reading it, "
                          "records read from it.")


class ShardStream:
    """The samples one (rank, DataLoader worker) reads from a dataset stored as shards.

    Use it inside ``IterableDataset.__iter__``: ``for shard, offset, index, pad in
    stream:`` reads this rank's, this worker's stream (the worker from
    ``torch.utils.data.get_worker_info()``; one stream when not in a worker). Every
    (rank, worker) slot gets the same count (``tail="pad"``, padding flagged; ``"drop"``;
    ``"uneven"``: counts differ by at most one), all slots together are disjoint and
    cover the epoch, and each worker reads few shards at a time, each in increasing
    offsets. ``shard_sizes`` are the record counts of the shard files, in a fixed order.

    Checkpointing from the main process: ``state_dict(batches, batch_size, num_workers)``
    after the DataLoader (``batch_size`` per worker batch, ``num_workers`` workers) yielded
    ``batches`` batches on every rank; ``load_state_dict`` before the next epoch's
    iteration (the DataLoader pickles the dataset to its workers, pending state included),
    and every stream continues with exactly the unread samples, on any world size or
    worker count. With ``persistent_workers=True`` the workers keep the copy they were
    started with, so ``set_epoch`` must reach them another way (torch's usual caveat).
    """

    def __init__(self, shard_sizes, num_replicas=None, rank=None, *, shuffle=True, seed=0, tail="pad"):
        who = "ShardStream"
        self.num_replicas, self.rank = _resolve_world(who, num_replicas, rank)
        _check_tail(who, tail)
        self.shard_sizes = [_unsigned(who, "shard size", s) for s in shard_sizes]
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.tail = tail
        self.epoch = 0
        self._pending = None
        self._sampler(1)

    def _sampler(self, num_workers, rank=None):
        return _core.shard_sampler(self.shard_sizes, self.rank if rank is None else rank, self.num_replicas,
                                   num_workers, self.shuffle, _seed64("ShardStream", self.seed), self.tail)

    def _positioned(self, num_workers, rank=None):
        core = self._sampler(num_workers, rank)
        if self._pending is not None:
            core.resume(self._pending)
        else:
            core.set_epoch(self.epoch)
        return core

    def set_epoch(self, epoch):
        """Selects the epoch; a loaded state of another epoch is discarded."""
        e = _unsigned("ShardStream", "epoch", epoch)
        if self._pending is not None and e != self.epoch:
            self._pending = None
        self.epoch = e

    def worker_samples(self, worker, num_workers):
        """The stream of one worker slot of this rank as a generator of ``ShardSample``."""
        core = self._positioned(num_workers)
        size = core.worker_size(worker)

        def fetch(first, count):
            return [ShardSample(*t) for t in core.samples(worker, first, count)]

        return _generate(_Progress(core, core.epoch), fetch, size)

    def shard_schedule(self, worker, num_workers):
        """The shards one worker slot of this rank reads this epoch (or in the rest of a loaded
        state), in the order it first needs them, as ``ScheduledShard`` tuples: the first and
        last slot of its stream reading the shard and how many of its records it reads
        (padding included). A loader of remote shard files fetches in this order and evicts a
        shard once its last slot has passed. Computed without walking the stream."""
        who = "ShardStream.shard_schedule"
        core = self._positioned(max(1, _unsigned(who, "num_workers", num_workers)))
        return [ScheduledShard(*t) for t in core.shard_schedule(_unsigned(who, "worker", worker))]

    def rank_shard_schedule(self, num_workers):
        """``shard_schedule`` merged over this rank's ``num_workers`` workers: per shard the
        earliest first slot, the latest last slot and the records all of them read."""
        core = self._positioned(max(1, _unsigned("ShardStream.rank_shard_schedule", "num_workers", num_workers)))
        return [ScheduledShard(*t) for t in core.rank_shard_schedule()]

    def __len__(self):
        """Samples of this worker's stream (worker 0 of 1 outside a DataLoader worker)."""
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return self._positioned(num_workers).worker_size(worker)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return self.worker_samples(worker, num_workers)

    def state_dict(self, batches, batch_size, num_workers):
        """The state once every rank's DataLoader (``num_workers`` workers, 0 meaning the
        main process, each batching its stream by ``batch_size``) yielded ``batches``
        batches (or all it had)."""
        core = self._positioned(max(1, _unsigned("ShardStream", "num_workers", num_workers)))
        text = core.state_after_batches(_unsigned("ShardStream", "batches", batches),
                                        _unsigned("ShardStream", "batch_size", batch_size))
        return {"format": _STATE_FORMAT, "epoch": _core.parse_state(text)["epoch"], "state": text}

    def load_state_dict(self, state_dict):
        """Validates now (``StateError`` with the C++ message); the next iteration resumes."""
        text, epoch = _check_state_dict("ShardStream.load_state_dict", state_dict)
        self._sampler(1).resume(text)
        self._pending = text
        self.epoch = epoch


def _weights(who, name, weights):
    """A list of floats from a sequence or a 1-D tensor of numbers."""
    if isinstance(weights, torch.Tensor):
        if weights.dim() != 1:
            raise ConfigError(f"{who}: {name} is a {weights.dim()}-D tensor (expected a 1-D sequence of weights)")
        return [float(w) for w in weights.tolist()]
    try:
        return [float(w) for w in weights]
    except (TypeError, ValueError):
        raise ConfigError(f"{who}: {name} {weights!r} is not a sequence of numbers (expected floats >= 0)") from None


class MixtureBatchSampler(_StepSampler):
    """This rank's micro-batches of a mixture of sources, for a DataLoader's ``batch_sampler``.

    ``sources`` are the datasets (anything with ``len()``) or their sizes, in the order of
    a ``torch.utils.data.ConcatDataset`` over them; ``weights`` their shares of every
    global batch (any non-negative scale). Every global batch of G = micro_batch_size x
    num_replicas x accumulation_steps samples holds floor(G w_i) or ceil(G w_i) samples of
    source i; each source walks its own shuffled order without replacement and starts a
    new one when exhausted, independently of the others. Ranks and micro-batches split
    each global batch as ``DistributedBatchSampler`` does (disjoint positions).

    Yields ``len(self)`` micro-batches (the same count on every rank): lists of global
    indices ``offsets[source] + index`` into the concatenation, or of ``(source, index)``
    pairs with ``as_pairs=True``. ``pairs_of(global_indices)`` converts back.

    ``end``: where the mixture epoch stops: ``"first_exhausted"`` (default; when the first
    source finishes its pass, so nothing repeats), ``"all_seen"`` (when the last one
    does), ``"samples"`` or ``"steps"`` (after ``end_count`` of them). ``schedule``: weight
    changes as ``[(step, weights), ...]`` (steps strictly increasing from 1).
    ``replacement=True`` draws each source's samples uniformly with replacement.

    ``state_dict(batches=None)`` records the position reached (of the global
    stream, so it loads on another world size or accumulation with the same global batch);
    ``batches`` is the number of micro-batches every rank consumed in the latest
    iteration (a DataLoader with workers draws ahead; pass what the training loop got).
    ``load_state_dict`` takes effect at the next ``__iter__``. Raises ``ConfigError`` /
    ``StateError`` (``ValueError``) with the C++ library's message.
    """

    _who = "MixtureBatchSampler"

    def __init__(self, sources, weights, micro_batch_size, num_replicas=None, rank=None, *, accumulation_steps=None,
                 global_batch_size=None, shuffle=True, seed=0, tail="drop", end="first_exhausted", end_count=None,
                 replacement=False, schedule=None, mixing_block=None, as_pairs=False):
        who = self._who
        self._shape(micro_batch_size, num_replicas, rank, accumulation_steps, global_batch_size, tail)
        if end not in _ENDS:
            raise ConfigError(f'{who}: end {end!r} is unknown (expected "first_exhausted", "all_seen", "samples" '
                              'or "steps")')
        if (end in ("samples", "steps")) != (end_count is not None):
            raise ConfigError(f'{who}: end_count {end_count!r} does not go with end="{end}" (expected end_count for '
                              'end="samples" or "steps" only)')
        self.source_sizes = [_unsigned(who, "source size", len(s) if hasattr(s, "__len__") else s) for s in sources]
        self.offsets = []
        total = 0
        for size in self.source_sizes:
            self.offsets.append(total)
            total += size
        self.weights = _weights(who, "weights", weights)
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.end = end
        self.end_count = 0 if end_count is None else _unsigned(who, "end_count", end_count)
        self.replacement = bool(replacement)
        self.schedule = [(_unsigned(who, "schedule step", step), _weights(who, "schedule weights", w))
                         for step, w in (schedule or [])]
        self._block = 0 if mixing_block is None else _unsigned(who, "mixing_block", mixing_block)
        self.as_pairs = bool(as_pairs)
        self._start()
        self.mixing_block = self._base.mixing_block

    @property
    def dataset_size(self):
        """Samples of all sources together (the concatenation's length)."""
        return sum(self.source_sizes)

    def _config(self):
        return (self.source_sizes, self.weights, self.rank, self.num_replicas, self.micro_batch_size,
                self._accumulation, self._global, self.shuffle, _seed64(self._who, self.seed), self.tail,
                self.end, self.end_count, self.replacement, self._block, self.schedule)

    @staticmethod
    def _build(key):
        return _core.mixture_sampler(*key)

    def pairs_of(self, global_indices):
        """``(source, index)`` of each global index of the concatenation."""
        out = []
        for g in global_indices:
            g = _unsigned("MixtureBatchSampler.pairs_of", "index", g)
            if g >= self.dataset_size:
                raise ConfigError(f"MixtureBatchSampler.pairs_of: index {g} is out of range for the "
                                  f"{self.dataset_size} samples of the sources (expected 0..{self.dataset_size - 1})")
            source = max(i for i, o in enumerate(self.offsets) if o <= g and self.source_sizes[i] > 0)
            out.append((source, g - self.offsets[source]))
        return out

    def _fetcher(self, core):
        if self.as_pairs:
            return core.micro_batches
        offsets = self.offsets

        def fetch(first, count):
            return [[offsets[s] + i for s, i in batch] for batch in core.micro_batches(first, count)]
        return fetch


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
        self.replacement = replacement
        self.seed = seed
        self.shuffle = True
        self.tail = tail
        self.epoch = 0
        self._base = _core.weighted_sampler(*self._config())
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
        """``{"format": 1, "epoch": e, "state": text}``: what the latest iteration handed
        out, or its first ``samples`` indices on every rank."""
        if self._pending is not None and samples is None:
            return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": self._pending}
        p = self._progress
        current = p is not None and p.epoch == self.epoch and self._pending is None
        core = p.core if current else self._core_at(self.epoch)
        if samples is None:
            done = p.taken() if p is not None and core is p.core else 0
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
        state = self.__dict__.copy()
        state["_base"] = state["_progress"] = state["_cache"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._base = _core.weighted_sampler(*self._config())


def _describe(sampler):
    # What every rank must agree on, and what differs by rank.
    layout, accumulation = 0, getattr(sampler, "accumulation_steps", 1)
    if isinstance(sampler, ShardStream):
        size = sum(sampler.shard_sizes)
        kind, order, batch = "ShardStream", "shard", 0
    elif isinstance(sampler, TokenBatchSampler):
        size = len(sampler.lengths)
        kind, order, batch = "TokenBatchSampler", "feistel", 0
        layout = f"{sampler.layout_hash:#018x}"  # the lengths and budget options
    elif isinstance(sampler, (MixtureBatchSampler, DistributedWeightedRandomSampler)):
        size = sampler.dataset_size if isinstance(sampler, MixtureBatchSampler) else len(sampler.weights)
        kind, order = type(sampler).__name__, "feistel"
        batch = getattr(sampler, "global_batch_size", 0)
    else:
        size = len(sampler.dataset)
        kind = type(sampler).__name__
        order = getattr(sampler, "order", "torch")
        batch = getattr(sampler, "global_batch_size", 0)
    return {
        "sampler": kind,
        "dataset_size": size,
        "seed": sampler.seed,
        "shuffle": bool(sampler.shuffle),
        "tail": getattr(sampler, "tail", "drop" if getattr(sampler, "drop_last", False) else "pad"),
        "order": order,
        "epoch": sampler.epoch,
        "global_batch_size": batch,
        "accumulation_steps": accumulation,
        "token_layout": layout,
        "num_replicas": sampler.num_replicas,
        "rank": sampler.rank,
    }


def guard(sampler, group=None):
    """Checks, with one all-gather over ``torch.distributed``, that every rank built the
    same sampler: same dataset size, seed, shuffle, tail, order, epoch, accumulation, world
    and, for ``TokenBatchSampler``, the same lengths and budget options, and that
    each rank's ``rank`` / ``num_replicas`` are its process rank and the group size.

    Call it on every rank (a collective) after building the sampler, or after
    ``set_epoch``. Raises ``ConfigError`` on every rank, naming the first rank that
    differs, the field, and both values (the ``shuffle(42 + rank)`` bug shows up as
    "rank 1 has seed 43 but rank 0 has seed 42"). Works with any torch sampler that has
    these attributes, torch's own DistributedSampler included.
    """
    if not (dist.is_available() and dist.is_initialized()):
        raise ConfigError("guard: torch.distributed is not initialized (call init_process_group first)")
    mine = _describe(sampler)
    size = dist.get_world_size(group)
    gathered = [None] * size
    dist.all_gather_object(gathered, mine, group=group)
    for r, d in enumerate(gathered):
        if d["num_replicas"] != size:
            raise ConfigError(f"guard: rank {r} has num_replicas {d['num_replicas']} but the process group has "
                              f"{size} processes (expected num_replicas={size})")
        if d["rank"] != r:
            raise ConfigError(f"guard: process {r} of the group built its sampler with rank {d['rank']} "
                              f"(expected rank={r})")
    reference = gathered[0]
    for r, d in enumerate(gathered[1:], start=1):
        for field in ("sampler", "dataset_size", "seed", "shuffle", "tail", "order", "epoch", "global_batch_size",
                      "accumulation_steps", "token_layout"):
            if d[field] != reference[field]:
                raise ConfigError(
                    f"guard: rank {r} has {field} {d[field]!r} but rank 0 has {field} {reference[field]!r} "
                    f"(every rank must build the sampler with the same {field}; ranks then read disjoint shares)"
                )
    return gathered
from .sharded import ShardedDataset, ShardedItem  # noqa: E402,F401  (the files family, re-exported)
