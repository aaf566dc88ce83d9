# distsampler.torch.DistributedBatchSampler and _StepSampler, the base of every sampler of optimizer steps.
# SPDX-License-Identifier: MIT
from torch.utils.data import Sampler

from .. import _core
from .._core import ConfigError
from ._common import (PUBLIC_MODULE, _check_tail, _flag, _options, _positive, _product, _resolve_order,
                      _resolve_world, _seed64, _unsigned)
from ._life import _Life


class _StepSampler(_Life, Sampler):
    """What the samplers of optimizer steps share (batch, token, mixture, packing): the shape of a
    step (``accumulation_steps`` micro-batches per rank) and the life cycle's hooks for a sampler of
    micro-batches; the life cycle itself is ``_Life``'s."""

    _who = ""

    def _shape(self, micro_batch_size, num_replicas, rank, accumulation_steps, global_batch_size, tail):
        who = self._who
        self.num_replicas, self.rank = _resolve_world(who, num_replicas, rank)
        _check_tail(who, tail)
        if accumulation_steps is not None and global_batch_size is not None:
            raise ConfigError(f"{who}: accumulation_steps {accumulation_steps} and global_batch_size "
                              f"{global_batch_size} were both given (expected one of them)")
        self.micro_batch_size = _positive(who, "micro_batch_size", micro_batch_size)
        self._accumulation = 1 if accumulation_steps is None else _positive(who, "accumulation_steps",
                                                                            accumulation_steps)
        self._global = 0 if global_batch_size is None else _unsigned(who, "global_batch_size", global_batch_size)
        _product(who, ("micro_batch_size", self.micro_batch_size), ("num_replicas", self.num_replicas),
                 ("accumulation_steps", self._accumulation))
        if global_batch_size is not None and self._global == 0:
            raise ConfigError(f"{who}: global_batch_size is 0 (expected a positive multiple of micro_batch_size "
                              f"{self.micro_batch_size} x num_replicas {self.num_replicas})")
        self.tail = tail
        self.epoch = 0
        self._init_life()

    # The life cycle's hooks for a sampler of micro-batches.
    _unit = "batches"

    @staticmethod
    def _total(core):
        return core.micro_batch_count

    @staticmethod
    def _state_text(core, done):
        return core.state_after_micro_batches(done)

    def _check_done(self, who, name, done, core):
        total = core.micro_batch_count
        if done > total:
            raise ConfigError(f"{who}: {name} {done} exceeds the {total} micro-batches of this rank's pass "
                              f"(expected 0..{total})")

    def _start(self):
        """Builds the C++ sampler once the settings are in place (raises its ConfigError)."""
        base = self._start_core()
        self.accumulation_steps = base.accumulation_steps
        self.global_batch_size = base.global_batch_size

    @property
    def num_steps(self):
        """Optimizer steps in this epoch (or in what remains of a loaded state's epoch)."""
        return self._next_core().num_steps


class DistributedBatchSampler(_StepSampler):
    """This rank's micro-batches of each optimizer step, for a DataLoader's ``batch_sampler``.

    The global batch G = micro_batch_size x num_replicas x accumulation_steps; step s
    consumes positions [s*G, (s+1)*G) of the epoch's global order, micro-batch round k
    its next micro_batch_size x num_replicas, and rank r the r-th run of those. Yields
    ``len(self)`` micro-batches, ``accumulation_steps`` per step: lists of ints, or int64
    NumPy arrays with ``as_numpy=True`` (computed in C++ with the GIL released).

    Give ``accumulation_steps`` (default 1) or ``global_batch_size`` (a multiple of
    micro_batch_size x num_replicas), not both. ``tail``: ``"drop"`` (default; the last
    partial global batch waits for the next epoch), ``"pad"`` (one more step, completed
    from the epoch's start) or ``"uneven"`` (one more step with exactly the remaining
    samples spread over the micro-batches; some may be empty, so that every rank runs the
    same steps: give the DataLoader a ``collate_fn`` that accepts an empty list).

    ``state_dict()`` / ``load_state_dict()`` as ``DistributedSampler``
    (``state_dict(received=...)`` with the micro-batches the loop consumed when
    DataLoader workers draw ahead); the state counts positions of the global order, so it
    resumes on another world size, micro-batch size or accumulation (elastic resume) with
    nothing repeated or skipped. With the same shape the resumed pass is the rest of the
    uninterrupted one, padding and tail included: a state saved mid-step resumes with the
    interrupted step's remaining micro-batches first (fewer than ``accumulation_steps``;
    count them from the saved micro-batch when stepping the optimizer).
    """

    __module__ = PUBLIC_MODULE

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        return {"sampler": type(self).__name__, "dataset_size": len(self.dataset), "order": self.order,
                "global_batch_size": self.global_batch_size, "token_layout": 0}

    _who = "DistributedBatchSampler"

    def __init__(self, dataset, micro_batch_size, num_replicas=None, rank=None, *, accumulation_steps=None,
                 global_batch_size=None, shuffle=True, seed=0, tail="drop", order="feistel", torch_generation=None,
                 as_numpy=False):
        self._shape(micro_batch_size, num_replicas, rank, accumulation_steps, global_batch_size, tail)
        self.torch_generation = _resolve_order(self._who, order, torch_generation)
        size = len(dataset)
        if tail == "pad" and 0 < size < self.micro_batch_size:
            # Each micro-batch is a list of micro_batch_size indices, here mostly repeats.
            raise ConfigError(f'{self._who}: micro_batch_size {self.micro_batch_size} exceeds the dataset\'s {size} '
                              'samples under tail="pad" (expected at most the dataset size: every micro-batch would '
                              'repeat samples; use tail="drop" or "uneven", or a smaller micro_batch_size)')
        if as_numpy and self.micro_batch_size > max(size, 1):
            raise ConfigError(f"{self._who}: micro_batch_size {self.micro_batch_size} exceeds the dataset's {size} "
                              "samples with as_numpy=True (expected at most the dataset size: the arrays have "
                              "micro_batch_size columns)")
        self.dataset = dataset
        self.shuffle = _flag(self._who, "shuffle", shuffle)
        self.seed = seed
        self.order = order
        self.as_numpy = _flag(self._who, "as_numpy", as_numpy)
        self._start()

    def _config(self):
        return (self.order, len(self.dataset), self.rank, self.num_replicas, self.micro_batch_size,
                self._accumulation, self._global, self.shuffle, _seed64(self._who, self.seed), self.tail,
                self.torch_generation)

    @staticmethod
    def _build(key):
        order, n, rank, world_size, micro, accumulation, global_batch, shuffle, seed, tail, generation = key
        options = _options(_core.BatchSamplerOptions, micro_batch_size=micro, shuffle=shuffle, seed=seed, tail=tail)
        if global_batch != 0:  # 0: accumulation_steps decides the global batch
            options.global_batch_size = global_batch
        else:
            options.accumulation_steps = accumulation
        torch = _options(_core.TorchRandpermOptions, generation=generation) if order == "torch" else None
        return _core.make_distributed_batch_sampler(n, rank, world_size, options, torch=torch)

    def _fetcher(self, core):
        if not self.as_numpy:
            return core.micro_batches
        m = core.micro_batch_size

        def fetch(first, count):
            block, lengths = core.micro_batch_block(first, min(count, max(1, (1 << 16) // max(1, m))))
            return [row if n == m else row[:n] for row, n in zip(block, lengths)]
        return fetch
