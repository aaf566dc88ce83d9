# distsampler.torch._stream_cell: a stream's epoch and loaded state in shared memory, read by every worker's copy.
# SPDX-License-Identifier: MIT
"""A DataLoader pickles (``spawn``) or forks its dataset into each worker once; with
``persistent_workers=True`` the workers keep that copy for every later pass, so an epoch
set in the main process afterwards never reached them. A ``StreamCell`` is made at the
stream's construction from two shared-memory tensors; the copies in the workers share
them (torch moves a shared tensor between processes by handle, under ``fork`` and
``spawn``), so whatever the main process writes there is what the next pass of every
worker reads. Only the main process writes, between passes: a worker reads the cell when
it starts a pass, which the DataLoader asks for after ``__iter__``.
"""

import torch

from .._core import ConfigError, StateError

MAX_CAPACITY = 1 << 30  # bytes of state text a stream reserves in shared memory

_U64 = 1 << 64
_I64 = 1 << 63
_VERSION, _EPOCH, _LENGTH = 0, 1, 2
# The most bytes a cell reserves for a loaded state's text (a state is O(shards) bytes: 1 GiB is
# far above any real one, and below what reserving shared memory may take on a node).
MAX_CAPACITY = 1 << 30


class StreamCell:
    """Epoch (uint64), loaded state text (or None) and a version counter, shared with workers.

    ``capacity`` bytes are reserved for the state text (shared memory is committed only
    where written). Not thread-safe for concurrent writers; one writer (the main process).
    """

    def __init__(self, capacity, who):
        if capacity > MAX_CAPACITY:  # reserved up front: refused before a tensor of that size is made
            raise ConfigError(f"{who}: state_capacity {capacity} is out of range (expected an int from 1 to "
                              f"{MAX_CAPACITY} bytes of state text)")
        self.capacity = capacity
        self._who = who
        self._head = torch.zeros(3, dtype=torch.int64).share_memory_()
        self._head[_LENGTH] = -1
        self._text = torch.zeros(max(1, capacity), dtype=torch.uint8).share_memory_()

    def tensors(self):
        """What a pickle of the stream carries: the two shared tensors and the capacity."""
        return self._head, self._text, self.capacity

    @classmethod
    def from_tensors(cls, head, text, capacity, who):
        """The cell over `head` and `text` (from ``tensors()``), shared with whoever holds them."""
        cell = cls.__new__(cls)
        cell.capacity, cell._who, cell._head, cell._text = capacity, who, head, text
        return cell

    @property
    def epoch(self):
        return int(self._head[_EPOCH]) % _U64

    @property
    def text(self):
        n = int(self._head[_LENGTH])
        return None if n < 0 else bytes(self._text[:n].numpy()).decode("ascii")

    @property
    def version(self):
        """Counts the writes: a reader sees whether anything changed since it last looked."""
        return int(self._head[_VERSION])

    def write(self, epoch, text):
        """Sets both (``text`` None: no loaded state). Raises StateError when the text exceeds the capacity."""
        if text is not None:
            data = text.encode("ascii")
            if len(data) > self.capacity:
                raise StateError(f"{self._who}.load_state_dict: the state text has {len(data)} bytes but "
                                 f"state_capacity is {self.capacity} (expected at most {self.capacity}; build the "
                                 f"stream with state_capacity={len(data)} or more)")
            if data:
                self._text[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        self._head[_EPOCH] = epoch - _U64 if epoch >= _I64 else epoch
        self._head[_LENGTH] = -1 if text is None else len(data)
        self._head[_VERSION] += 1


def pass_counter():
    """A count of the passes started over a stream, in shared memory: a DataLoader worker's copy
    increments the count the main process reads (whose own copy never iterated)."""
    return torch.zeros((), dtype=torch.int64).share_memory_()
