# distsampler.torch._handout: what a sampler's state_dict() may record when it is not told what the loop received.
# SPDX-License-Identifier: MIT
"""A sampler knows what it handed out, not what the training loop received: a DataLoader
with workers draws up to ``prefetch_factor * num_workers`` batches ahead. A state saved
from what was handed out would skip the prefetched batches on resume, so a ``state_dict()``
that is not told ``received=`` records a position only when it is known:

- ``distsampler.torch.DataLoader`` attaches itself to its sampler (``sampler._attach``) and
  counts the batches it returned to the loop: the sampler asks it;
- torchdata's ``StatefulDataLoader`` calls ``state_dict()`` at the moment it hands a batch
  to a worker and pairs that state with that batch (recognised by its public module path);
- at the epoch's boundaries: nothing handed out yet, or the iteration ran out (the end).

Anywhere else it raises ``ConfigError`` saying what to do instead. Nothing here reads
torch's private frames or attributes.
"""

import sys

from .._core import ConfigError

# Loaders that take a sampler's state when they hand the batch out and keep it with that batch.
_SNAPSHOT_AT_HANDOUT = ("torchdata.stateful_dataloader",)
_CALLER_DEPTH = 8


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
    if taken == 0 or progress.finished or _snapshotting_caller():
        return taken
    raise ConfigError(
        f"{who}: this rank handed out {taken} {noun} of epoch {progress.epoch} but no distsampler.torch.DataLoader "
        f"is attached to say what the training loop received (a DataLoader with workers prefetches): pass "
        f"{argument}=<{noun} the loop received per rank>, or iterate through distsampler.torch.DataLoader and "
        "checkpoint with its state_dict()"
    )
