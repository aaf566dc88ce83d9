# distsampler.torch.MixtureBatchSampler: micro-batches mixing several sources in exact per-step proportions.
# SPDX-License-Identifier: MIT
from .. import _core
from .._core import ConfigError
from ._common import PUBLIC_MODULE, _flag, _options, _seed64, _sequence, _unsigned, _weights
from .batch import _StepSampler

_ENDS = ("first_exhausted", "all_seen", "samples", "steps")


def _schedule_entry(who, i, entry):
    """(step, weights) of schedule[i], ConfigError naming it when it is not such a pair."""
    if isinstance(entry, (str, bytes)) or not hasattr(entry, "__len__") or len(entry) != 2:
        raise ConfigError(f"{who}: schedule[{i}] {entry!r} is not a (step, weights) pair (expected a list of "
                          "(step, weights) pairs)")
    step, weights = entry
    return _unsigned(who, f"schedule[{i}] step", step), _weights(who, f"schedule[{i}] weights", weights)


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

    ``state_dict(received=None)`` records the position reached (of the global
    stream, so it loads on another world size or accumulation with the same global batch);
    ``received`` is the number of micro-batches every rank consumed in the latest
    iteration (a DataLoader with workers draws ahead; pass what the training loop got).
    ``load_state_dict`` takes effect at the next ``__iter__``. Raises ``ConfigError`` /
    ``StateError`` (``ValueError``) with the C++ library's message.
    """

    __module__ = PUBLIC_MODULE

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        # The layout: the C++ guard layout, a hash of the mixture settings (sizes, weights, schedule,
        # block, end), so a rank built with other weights is named, not only one seeded apart.
        return {"sampler": type(self).__name__, "dataset_size": self.dataset_size, "order": "feistel",
                "global_batch_size": self.global_batch_size, "token_layout": f"{self._base.guard_layout:#018x}"}

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
        self.source_sizes = [_unsigned(who, "source size", len(s) if hasattr(s, "__len__") else s)
                             for s in _sequence(who, "sources", sources, "a list of datasets or sizes")]
        self.offsets = []
        total = 0
        for size in self.source_sizes:
            self.offsets.append(total)
            total += size
        self.weights = _weights(who, "weights", weights)
        self.shuffle = _flag(who, "shuffle", shuffle)
        self.seed = seed
        self.end = end
        self.end_count = 0 if end_count is None else _unsigned(who, "end_count", end_count)
        self.replacement = _flag(who, "replacement", replacement)
        self.schedule = [_schedule_entry(who, i, entry) for i, entry in enumerate(
            _sequence(who, "schedule", [] if schedule is None else schedule, "a list of (step, weights) pairs"))]
        self._block = 0 if mixing_block is None else _unsigned(who, "mixing_block", mixing_block)
        self.as_pairs = _flag(who, "as_pairs", as_pairs)
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
        (sizes, weights, rank, world_size, micro, accumulation, global_batch, shuffle, seed, tail, end, end_count,
         replacement, mixing_block, schedule) = key
        options = _options(_core.MixtureOptions, micro_batch_size=micro, shuffle=shuffle, seed=seed, tail=tail,
                           end=end, end_count=end_count, replacement=replacement, mixing_block=mixing_block,
                           schedule=schedule)
        if global_batch != 0:  # 0: accumulation_steps decides the global batch
            options.global_batch_size = global_batch
        else:
            options.accumulation_steps = accumulation
        return _core.make_mixture_sampler(sizes, rank, world_size, options, weights=weights)

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
