# distsampler.torch._handout: what a sampler's state_dict() may record when it is not told what the loop received.
# SPDX-License-Identifier: MIT
"""A sampler knows what it handed out, not what the training loop received: a DataLoader
with workers draws up to ``prefetch_factor * num_workers`` batches ahead. A state saved
from what was handed out would skip the prefetched batches on resume, so a ``state_dict()``
that is not told ``received=`` records a position only when it is known:

- ``distsampler.torch.DataLoader`` attaches itself to its sampler (``sampler._attach``) and
  counts the batches it returned to the loop: the sampler asks it;
- the object that holds the pass's iterator (the one ``iter()`` returned) asks: it drew
  every item handed out, so what was handed out is what it received. torchdata's
  ``StatefulDataLoader`` is such an asker: it calls ``state_dict()`` from the iterator
  that holds the sampler's iterator (its own, or its ``BatchSampler``'s), at the moment it
  hands a batch out, and pairs that state with that batch. It is recognised by what it
  holds, not by its name: any loader that asks the same way is;
- at the epoch's boundaries: nothing handed out yet, or the iteration ran out (the end).

Anywhere else it raises ``ConfigError`` saying what to do instead. Nothing here names a
loader, a module or a private attribute: the callers' ``self`` objects are only compared,
by identity, with the pass's iterator.
"""

import sys

from .._core import ConfigError

_CALLER_DEPTH = 6


def _asker_holds_the_pass(sampler):
    """Whether an object among the callers of ``state_dict()`` holds the latest pass's iterator
    as one of its attributes (it draws from that pass itself)."""
    ref = sampler.__dict__.get("_pass_iter")
    it = ref() if ref is not None else None
    if it is None:
        return False
    frame = sys._getframe(3)  # the caller of the sampler's state_dict()
    for _ in range(_CALLER_DEPTH):
        if frame is None:
            return False
        owner = frame.f_locals.get("self")
        fields = getattr(owner, "__dict__", None) if owner is not sampler else None
        if isinstance(fields, dict) and any(value is it for value in fields.values()):
            return True
        frame = frame.f_back
    return False


def recorded(sampler, progress, who, argument, noun):
    """The count a ``state_dict()`` without ``received=`` records for the iteration `progress`
    (None: none of this epoch): what the attached loader returned, else what was handed out
    where that is what the loop received, else raises ConfigError."""
    ref = sampler.__dict__.get("_loop")
    loader = ref() if ref is not None else None
    if loader is not None:
        received = loader._received_by(sampler)
        if received is not None:
            return received
    if progress is None:
        return 0
    taken = progress.taken()
    if taken == 0 or progress.finished or _asker_holds_the_pass(sampler):
        return taken
    raise ConfigError(
        f"{who}: this rank handed out {taken} {noun} of epoch {progress.epoch} but no distsampler.torch.DataLoader "
        f"is attached to say what the training loop received (a DataLoader with workers prefetches): pass "
        f"{argument}=<{noun} the loop received per rank>, or iterate through distsampler.torch.DataLoader and "
        "checkpoint with its state_dict()"
    )
