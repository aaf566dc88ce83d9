# distsampler.torch.DistributedSampler: torch's DistributedSampler computed by the C++ DistributedSampler.
# SPDX-License-Identifier: MIT
from torch.utils.data.distributed import DistributedSampler as _TorchDistributedSampler

from .. import _core
from ._common import PUBLIC_MODULE, _options, _resolve_order, _resolve_tail, _resolve_world, _seed64
from ._life import _Life


class DistributedSampler(_Life, _TorchDistributedSampler):
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

    Checkpointing (torchdata ``StatefulDataLoader`` protocol; the life cycle every family
    shares, see ``distsampler.torch._life``): ``state_dict()`` records the
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
        self._init_life()

    # -- the family: its config, its build, its fetch -------------------------------------
    _who = "DistributedSampler"

    def _config(self):
        world_size, r = _resolve_world(self._who, self.num_replicas, self.rank)
        return (self.order, len(self.dataset), r, world_size, bool(self.shuffle), _seed64(self._who, self.seed),
                self.tail, self.torch_generation)

    @staticmethod
    def _build(key):
        order, n, rank, world_size, shuffle, seed, tail, generation = key
        options = _options(_core.SamplerOptions, shuffle=shuffle, seed=seed, tail=tail)
        torch = _options(_core.TorchRandpermOptions, generation=generation) if order == "torch" else None
        return _core.make_distributed_sampler(n, rank, world_size, options, torch=torch)

    @staticmethod
    def _fetcher(core):
        return core.chunk

    def _fresh_len(self):
        # A resumed pass in progress counts what it has; otherwise torch's num_samples (no core needed).
        p = self._progress
        if p is not None and p.epoch == self.epoch and p.core.start != 0:
            return p.core.size
        return self.num_samples

    # -- extras ---------------------------------------------------------------------------
    def is_padding(self, i):
        """True when slot i of this rank's epoch is a wrap-around duplicate (tail="pad")."""
        return self._cpp(self._epoch_value()).is_padding(i)

    def indices(self, as_numpy=False):
        """This rank's whole epoch at once (a list, or an int64 NumPy array computed with the GIL released)."""
        core = self._cpp(self._epoch_value())
        return core.array(0, core.size) if as_numpy else core.chunk(0, core.size)
