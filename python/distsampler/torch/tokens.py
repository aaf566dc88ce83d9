# distsampler.torch.TokenBatchSampler (micro-batches under a token budget) and its collate wrapper EmptyToNone.
# SPDX-License-Identifier: MIT
import torch

from .. import _core
from .._core import ConfigError
from ._common import PUBLIC_MODULE, _flag, _options, _positive, _product, _resolve_world, _seed64, _unsigned
from .batch import _StepSampler

_COSTS = ("padded", "linear", "quadratic")
_OVERSIZE = ("error", "own_batch", "skip")
_U32_MAX = (1 << 32) - 1


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

    __module__ = PUBLIC_MODULE

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
    Any other integer array is checked and converted once. The sampler holds buffer exports
    on the array and on the memory map behind a ``numpy.memmap``, so closing that map
    raises ``BufferError``; ``lengths.resize(..., refcheck=False)`` reallocates anyway, and
    the sampler then raises ``StateError`` at its next use instead of reading freed memory.
    Truncating or rewriting the file under a ``numpy.memmap`` cannot be detected: reads of
    the lost pages fail with SIGBUS, and rewritten counts give other micro-batches. Keep the
    file unchanged while a sampler reads it (or pass ``np.array(memmap)``, a copy).
    ``num_replicas x accumulation_steps`` is at most 1048576 (``ConfigError`` beyond): every
    window plans at least one step of that many micro-batches.

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

    ``state_dict(received=None)`` / ``load_state_dict`` as ``DistributedBatchSampler``: the
    state counts samples of the epoch's plan, so it resumes exactly once on another world
    size or accumulation. ``received``: record instead that every rank consumed its first
    ``received`` micro-batches of the latest iteration (a DataLoader with workers draws
    ahead of what it delivered). The resumed pass plans the rest of the interrupted window
    again for its own world, so the micro-batches after the resume point may be cut
    differently from an uninterrupted run's: the same samples, each once, in whole steps.
    After the resumed pass, the next ``__iter__`` is the whole epoch again (as torch). A
    state of other lengths or budget options is refused (``StateError``).
    """

    __module__ = PUBLIC_MODULE

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        return {"sampler": "TokenBatchSampler", "dataset_size": len(self.lengths), "order": "feistel",
                "global_batch_size": 0, "token_layout": f"{self.layout_hash:#018x}"}  # the lengths and budget options

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
        self.accumulation_steps = _positive(who, "accumulation_steps", accumulation_steps)
        group = _product(who, ("num_replicas", self.num_replicas), ("accumulation_steps", self.accumulation_steps))
        most = _core.TokenBatchSampler.max_group
        if group > most:
            raise ConfigError(f"{who}: num_replicas {self.num_replicas} x accumulation_steps {self.accumulation_steps} "
                              f"= {group} micro-batches per step exceeds {most} (expected at most {most}: every "
                              "window plans at least one step of them)")
        self.longest_first = _flag(who, "longest_first", longest_first)
        self.shuffle = _flag(who, "shuffle", shuffle)
        self.seed = seed
        self.tail = "uneven"
        self.order = "feistel"
        self.epoch = 0
        self._init_life()
        self._start_core()

    _plans_epochs = True  # an epoch is planned once (in set_epoch), then copied

    def _config(self):
        return (self.rank, self.num_replicas, self.max_tokens, self.cost, self.quadratic_q, self.max_samples or 0,
                self.batch_multiple, self.window, self.accumulation_steps, self.longest_first, self.oversize,
                self.shuffle, _seed64("TokenBatchSampler", self.seed))

    def _build(self, key):
        (rank, world_size, max_tokens, cost, quadratic_q, max_samples, batch_multiple, window, accumulation_steps,
         longest_first, oversize, shuffle, seed) = key
        options = _options(_core.TokenBatchOptions, max_tokens=max_tokens, cost=cost, quadratic_q=quadratic_q,
                           max_samples=max_samples, batch_multiple=batch_multiple, window=window,
                           accumulation_steps=accumulation_steps, longest_first=longest_first, oversize=oversize,
                           shuffle=shuffle, seed=seed)
        return _core.make_token_batch_sampler(self.lengths, rank, world_size, options)

    def _padding_flags(self, j, batch_size):
        return [False] * len(self._fetcher(self._progress.core)(j, 1)[0])  # a token batch never pads

    @property
    def stats(self):
        """The epoch's plan over every rank (the same dict on every rank): steps, micro_batches,
        empty_micro_batches, splits, merges, skipped_samples, oversize_batches, tokens, padded,
        padding_efficiency, max_step_ratio, mean_step_ratio, steps_with_empty_rank."""
        return self._next_core().stats

    @property
    def layout_hash(self):
        """The 64-bit hash of the lengths and budget options that saved states must match."""
        return (self._base if self._base is not None else self._start_core()).layout_hash

    def micro_batch(self, step, k=0):
        """``(indices, tokens, padded, oversize)`` of this rank's micro-batch ``k`` of ``step``
        in the current epoch (random access; ``IndexError`` outside the epoch)."""
        return self._next_core().micro_batch(_unsigned("TokenBatchSampler", "step", step),
                                           _unsigned("TokenBatchSampler", "k", k))

    def _fetcher(self, core):
        return core.micro_batches
