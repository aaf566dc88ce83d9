# distsampler.torch._handout: what a sampler's state_dict() may record when it is not told what the loop received.
# SPDX-License-Identifier: MIT
"""A sampler knows what it handed out, not what the training loop received: a DataLoader
with workers draws up to ``prefetch_factor * num_workers`` batches ahead. A state saved
from what was handed out would skip the prefetched batches on resume, so a no-argument
``state_dict()`` in the middle of an epoch records a position only when someone who knows
it is at hand:

- ``distsampler.torch.DataLoader``, which counts the batches it returned and is attached
  to its sampler (``attach``);
- torchdata's ``StatefulDataLoader``, which calls ``state_dict()`` at the moment it hands a
  batch to a worker and pairs that state with that batch (recognised by its module path);
- nobody, at the epoch's boundaries: nothing handed out yet, or the iteration finished
  and the loader that ran it out (torch's multi-process iterator) delivered every batch.

Anywhere else it raises ``ConfigError`` naming the argument to pass instead.
"""

import sys
import weakref

from .._core import ConfigError

# Loaders that take a sampler's state when they hand the batch out and keep it with that batch.
_SNAPSHOT_AT_HANDOUT = ("torchdata.stateful_dataloader",)
_CALLER_DEPTH = 8


def attach(sampler, loader):
    """Tells `sampler` that `loader` (a distsampler DataLoader) iterates it and knows what it returned."""
    sampler._loop = weakref.ref(loader)


def detached_state(state):
    """`state` (a sampler's __dict__ copy) without the loader link, which does not pickle."""
    state.pop("_loop", None)
    return state


def prefetching_iterator():
    """A weak reference to torch's multi-process DataLoader iterator drawing from the
    sampler's iterator now (it hands batches to workers ahead of the loop), else None."""
    frame = sys._getframe(2)
    for _ in range(_CALLER_DEPTH):
        if frame is None:
            return None
        if frame.f_code.co_name == "_try_put_index":
            it = frame.f_locals.get("self")
            if hasattr(it, "_send_idx") and hasattr(it, "_rcvd_idx"):
                return weakref.ref(it)
        frame = frame.f_back
    return None


def _undelivered(progress):
    ref = progress.drawn_by
    it = ref() if ref is not None else None
    return 0 if it is None else max(0, it._send_idx - it._rcvd_idx)


def _snapshotting_caller():
    frame = sys._getframe(3)
    for _ in range(_CALLER_DEPTH):
        if frame is None:
            return False
        name = frame.f_globals.get("__name__", "")
        if any(name == m or name.startswith(m + ".") for m in _SNAPSHOT_AT_HANDOUT):
            return True
        frame = frame.f_back
    return False


def recorded(sampler, progress, who, argument, noun):
    """The count a no-argument ``state_dict()`` records for the iteration `progress` (None:
    none of this epoch): what the attached loader returned, else what was handed out where
    that is what the loop received, else raises ConfigError."""
    ref = sampler.__dict__.get("_loop")
    loader = ref() if ref is not None else None
    if loader is not None:
        received = loader._received_by(sampler)
        if received is not None:
            return received
    if progress is None:
        return 0
    taken = progress.taken()
    if taken == 0 or _snapshotting_caller():
        return taken
    if progress.finished:
        behind = _undelivered(progress)
        if behind == 0:
            return taken
        raise ConfigError(
            f"{who}: this rank handed out all {taken} {noun} of epoch {progress.epoch} but the DataLoader has not "
            f"delivered its last {behind} batches to the training loop yet: pass {argument}=<{noun} the loop "
            "received per rank> or checkpoint with distsampler.torch.DataLoader.state_dict()")
    raise ConfigError(
        f"{who}: this rank handed out {taken} {noun} of epoch {progress.epoch} but a DataLoader with workers "
        f"prefetches, so what the training loop received is unknown: pass {argument}=<{noun} the loop received "
        "per rank> or checkpoint with distsampler.torch.DataLoader.state_dict()"
    )
