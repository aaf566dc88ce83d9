# distsampler.torch.DistributedSampler: torch's DistributedSampler computed by the C++ DistributedSampler.
# SPDX-License-Identifier: MIT
from torch.utils.data.distributed import DistributedSampler as _TorchDistributedSampler

from .. import _core
from ._common import (PUBLIC_MODULE, _STATE_FORMAT, _Progress, _check_state_dict, _generate, _resolve_order,
                      _resolve_tail, _resolve_world, _seed64, _unsigned)
from ._handout import detached_state, recorded


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
    epoch and the position the training loop reached (a position of the epoch's global
    order, so it loads on any world size; see ``state_dict``); ``load_state_dict(sd)`` takes
    effect at the next ``__iter__``, which yields exactly the rest of that epoch: on the same
    world the uninterrupted pass's remaining indices, ``tail="pad"``'s duplicates included
    (they repeat the epoch's first indices); on another world each remaining index once.
    ``set_epoch`` with another epoch discards a loaded state that was not yet iterated.

    Raises ``ConfigError`` (a ``ValueError``) for bad arguments, ``StateError`` (a
    ``ValueError``) for corrupt or mismatched state; both carry the C++ library's message.
    """

    __module__ = PUBLIC_MODULE

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        return {"sampler": type(self).__name__, "dataset_size": len(self.dataset), "order": self.order,
                "global_batch_size": 0, "token_layout": 0}

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
            self._base = _core.make_distributed_sampler(*key)
            self._base_key = key
        self._base.set_epoch(epoch)
        return self._base.copy()

    def _guard_sums(self):
        """(dataset_size, ReadSums words, start) of the pass a copy would read, for ``guard``'s mesh cover check
        (the C++ segment_sums: padding flagged, the resumed segment's consumed samples as skips)."""
        core = self._next_core()
        return (*core.guard_sums(), core.start)

    def _next_core(self):
        """The C++ sampler the next pass reads: this epoch's, or the loaded state's (prepared once)."""
        if self._pending is None:
            return self._cpp(self._epoch64())
        if self._prepared is not None and self._prepared[0] == self._config():
            return self._prepared[1]
        return self._resumed(self._pending)

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
        core = self._next_core()
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

        ``samples``: every rank's loop received the first ``samples`` indices of the latest
        iteration (``batches_done * batch_size``). Without it: the epoch's start before any
        iteration, its end once the iteration finished (and a prefetching DataLoader
        delivered all), what ``distsampler.torch.DataLoader`` returned when it drives this
        sampler, or what was handed out when torchdata's ``StatefulDataLoader`` asks (it
        pairs the state with the batch handed out); anywhere else mid-epoch a DataLoader
        may have prefetched, so it raises ``ConfigError`` naming ``samples=``. A state
        loaded but not yet iterated is returned as loaded. ``state`` is the C++
        ``SamplerState`` text. Raises ``ConfigError`` when ``samples`` exceeds what this
        rank's iteration has.
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
        else:
            current = p if p is not None and p.epoch == epoch else None
            done = recorded(self, current, "DistributedSampler.state_dict", "samples", "indices")
            text = (current.core if current is not None else self._cpp(epoch)).state(done)
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
        state = detached_state(self.__dict__.copy())
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
