# distsampler.torch.ShardedDataset: an IterableDataset over real shard files (JSON Lines, tar, Megatron, .npy, raw tokens).
# SPDX-License-Identifier: MIT
"""``ShardedDataset``: shard files read as a ``ShardStream`` says, with their sizes found for you.

The record counts and byte ranges of the shards come from the C++ index builder
(``distsampler._core.index_shards``), cached beside each shard (``<shard>.dsidx``) or in
``cache_dir``; a cached index of a shard that changed since is built again (a warning names
the shard), or refused with ``strict=True``. Which (shard, record) each rank and DataLoader worker reads is the
``ShardStream``'s decision, with its promises: disjoint and covering per epoch, the same
count on every rank and worker, padding flagged, resumable on any world.
"""

import collections
import operator
import os
from collections.abc import Iterable

import torch

from .. import _core
from .._core import ConfigError
from ._common import PUBLIC_MODULE, _check_tail, _resolve_world
from ._readers import READERS, raw_options, warn_rebuilt
from ._shard_file import ShardFile, changed_error, file_identity
from .shards import ShardStream

__all__ = ["ShardedDataset", "ShardedItem"]

_FORMATS = ("jsonl", "tar", "megatron", "npy", "raw")  # the formats of _readers.READERS the C++ index reads

ShardedItem = collections.namedtuple("ShardedItem", ["record", "is_padding"], module=PUBLIC_MODULE)
ShardedItem.__doc__ = ("A record and whether its slot is tail padding (a repeat of a record read elsewhere this "
                       "epoch, which exact evaluation masks).")


def _positive(who, name, value):
    if isinstance(value, bool):
        raise ConfigError(f"{who}: {name} {value!r} is a bool (expected an int >= 1)")
    try:
        v = operator.index(value)
    except TypeError:
        raise ConfigError(f"{who}: {name} {value!r} is not an integer (expected an int >= 1)") from None
    if v < 1:
        raise ConfigError(f"{who}: {name} {v} is out of range (expected at least 1)")
    return v


def _paths(who, paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise ConfigError(f"{who}: paths {os.fsdecode(paths)!r} is one path (expected a list of shard paths; "
                          "wrap a single path in a list)")
    if not isinstance(paths, Iterable):
        raise ConfigError(f"{who}: paths {paths!r} is not a list (expected a list of shard paths)")
    out = []
    for i, p in enumerate(paths):
        if not isinstance(p, (str, os.PathLike)):
            raise ConfigError(f"{who}: paths[{i}] {p!r} is not a path (expected a str or os.PathLike)")
        out.append(os.fsdecode(os.fspath(p)))
    if not out:
        raise ConfigError(f"{who}: paths is empty (expected at least one shard file)")
    return out


_CHANGED_FIX = ("rebuild its index (ShardedDataset(..., rebuild=True)) and restart the job from its last checkpoint "
                "(or restore the file as it was)")


def _identities(indexes):
    """Each data file's identity now, which every read checks: a file changed under a running job is
    refused, never read as other records (and never through a memory map, which would SIGBUS)."""
    out = []
    for x in indexes:
        try:
            now = file_identity(os.stat(x["data_path"]))
        except OSError:
            now = None
        if now is None or now[0] != x["data_size"]:
            then = (x["data_size"],) + (now[1:] if now is not None else (0, 0))
            raise changed_error("ShardedDataset", x["path"], then, now, _CHANGED_FIX)
        out.append(now)
    return out


class _OpenFiles:
    """At most `limit` open shard files (ShardFile objects), least recently used closed first."""

    def __init__(self, limit):
        self.limit = limit
        self.open = collections.OrderedDict()

    def get(self, key, opener):
        handle = self.open.get(key)
        if handle is not None:
            self.open.move_to_end(key)
            return handle
        while len(self.open) >= self.limit:
            _, old = self.open.popitem(last=False)
            close = getattr(old, "close", None)
            if close is not None:
                close()
        handle = opener()
        self.open[key] = handle
        return handle

    def close(self):
        while self.open:
            _, old = self.open.popitem(last=False)
            close = getattr(old, "close", None)
            if close is not None:
                close()


class ShardedDataset(torch.utils.data.IterableDataset):
    """This rank's and DataLoader worker's records of a dataset stored as shard files.

    ``paths`` are the shard files in a fixed order (the same on every rank); ``format`` is
    ``"jsonl"``, ``"tar"``, ``"megatron"``, ``"npy"`` or ``"raw"`` for all of them, or ``None``
    to take each file's from its extension (.jsonl/.ndjson, .tar, .idx/.bin, .npy; never raw).
    A record is:

    - JSON Lines: a non-empty line, yielded as ``json.loads`` of it;
    - tar (WebDataset layout): a sample, the consecutive members sharing a key, yielded as
      ``{suffix: bytes, ..., "__key__": key}``;
    - Megatron (``.idx``/``.bin``, give either): a sequence, yielded as a NumPy array of its
      tokens read from the ``.bin`` (uint16 tokens widened to int32, which
      torch converts; every other token type as stored);
    - ``.npy``: a row along axis 0;
    - raw token files (``format="raw"``, with ``dtype`` and ``eos``; headerless little-endian
      token ids, as OLMo's ``.npy``-named token files): a document, its tokens up to and
      including the end-of-document token ``eos`` (the tokens after the last one are the last
      document), yielded as a NumPy array of ``dtype`` (``decode`` can convert it: torch 1.13
      has no uint16 or uint32 tensors).

    Files are read by positioned reads, never memory-mapped. Before every read the file's
    size, modification time and inode must be what they were when the dataset was built: a
    shard truncated, rewritten or replaced under a running job raises ``ConfigError`` naming
    it (rebuild its index with ``rebuild=True`` and restart from the last checkpoint).

    ``decode`` (a function of one record) is applied to each record after that.

    Each epoch every record is yielded exactly once over all ranks and workers, except
    padding: with ``tail="pad"`` (the default) each (rank, worker) stream gets the same
    count and the extra slots repeat records read elsewhere. Padding is never silent: with
    ``tail="pad"`` the dataset yields ``ShardedItem(record, is_padding)`` pairs
    (``return_padding`` defaults to True and False is refused); with ``"drop"`` or
    ``"uneven"`` it yields plain records unless ``return_padding=True``.

    Indexes: built with ``threads`` threads (default: one per file up to 8 and the CPU
    count; 1 starts no thread), cached beside each shard or in ``cache_dir`` (``cache=False``:
    kept in memory only; ``rebuild=True``: every index built again); a cached index of a
    shard whose size or modification time changed is built again and saved in its place,
    with one ``UserWarning`` naming the shard, or with ``strict=True`` raises ``ConfigError``
    naming the shard.

    ``preset`` (``"mixed"``, the default, or ``"sequential"``: each shard file read in
    increasing offsets, one at a time per worker) and ``canonical_streams``,
    ``max_open_shards``, ``run_length``, ``shuffle_window``, ``rotate_shards`` choose the
    read locality, as for ``ShardStream``.

    ``len()``: inside a DataLoader worker, that worker's count; elsewhere this rank's count
    when read by ``num_workers`` workers (pass the DataLoader's; 0 counts as 1). Open files
    are bounded by ``max_open_files`` per worker. ``set_epoch``, ``state_dict(received,
    batch_size, num_workers)`` (or ``state_dict()`` in the process that iterated it whole) and
    ``load_state_dict`` are those of the ``ShardStream`` (``self.stream``) underneath.
    """

    __module__ = PUBLIC_MODULE

    def __init__(self, paths, format=None, num_replicas=None, rank=None, *, shuffle=True, seed=0, tail="pad",
                 cache_dir=None, threads=None, decode=None, return_padding=None, rebuild=False, cache=True,
                 max_open_files=8, num_workers=1, preset="mixed", canonical_streams=None, max_open_shards=None,
                 run_length=None, shuffle_window=None, rotate_shards=None, dtype=None, eos=None, strict=False):
        who = "ShardedDataset"
        super().__init__()
        paths = _paths(who, paths)
        if format is not None and format not in _FORMATS:
            raise ConfigError(f'{who}: format {format!r} is unknown (expected None, "jsonl", "tar", "megatron", '
                              '"npy" or "raw")')
        raw_dtype, raw_eos = raw_options(who, format, dtype, eos)
        if not isinstance(strict, bool):
            raise ConfigError(f"{who}: strict {strict!r} is not a bool (expected True or False)")
        if strict and (rebuild or not cache):
            raise ConfigError(f"{who}: strict=True with {'rebuild=True' if rebuild else 'cache=False'} (strict refuses "
                              "a stale cached index, and no cached index is read; expected one of them)")
        if decode is not None and not callable(decode):
            raise ConfigError(f"{who}: decode {decode!r} is not callable (expected a function of one record, or None)")
        if return_padding not in (None, True, False):
            raise ConfigError(f"{who}: return_padding {return_padding!r} is not a bool (expected None, True or False)")
        if tail == "pad" and return_padding is False:
            raise ConfigError(f'{who}: return_padding=False with tail="pad" would repeat records silently (expected '
                              'return_padding=True or None to get ShardedItem(record, is_padding), or tail="drop" or '
                              '"uneven")')
        if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
            raise ConfigError(f"{who}: cache_dir {cache_dir!r} is not a path (expected None, a str or os.PathLike)")
        if cache_dir is not None and not os.fspath(cache_dir):
            raise ConfigError(f"{who}: cache_dir is empty (expected None for beside each shard, or a folder)")
        if threads is None:
            threads = max(1, min(len(paths), 8, os.cpu_count() or 1))
        threads = _positive(who, "threads", threads)
        self.max_open_files = _positive(who, "max_open_files", max_open_files)
        self.num_workers = 1 if num_workers == 0 else _positive(who, "num_workers", num_workers)
        # The world and tail are checked before any file is read.
        num_replicas, rank = _resolve_world(who, num_replicas, rank)
        _check_tail(who, tail)
        mode = ("rebuild" if rebuild else "use") if cache else "off"
        try:
            self.indexes = _core.index_shards(paths, format, os.fsdecode(os.fspath(cache_dir)) if cache_dir else "",
                                              mode, threads, dtype=raw_dtype, eos=raw_eos, strict=strict)
        except ConfigError as e:
            hint = " (rebuild=True rebuilds it)" if "rebuild the index" in str(e) else ""
            raise ConfigError(f"{who}: {e}{hint}") from None
        warn_rebuilt(who, self.indexes)
        self._identities = _identities(self.indexes)
        self.paths = paths
        self.decode = decode
        self.return_padding = tail == "pad" if return_padding is None else return_padding
        self.record_counts = [x["records"] for x in self.indexes]
        self.stream = ShardStream(self.record_counts, num_replicas, rank, shuffle=shuffle, seed=seed, tail=tail,
                                  preset=preset, canonical_streams=canonical_streams, max_open_shards=max_open_shards,
                                  run_length=run_length, shuffle_window=shuffle_window, rotate_shards=rotate_shards)
        self._files = None

    # The open files stay in the process that opened them: a DataLoader worker starts with none.
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_files"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "_identities" not in state:  # a pickle of 0.2: the files as they are now, if they still match the index
            self._identities = _identities(self.indexes)

    def _guard_target(self):
        # guard(dataset, mesh=...) hashes what the stream hands out (shard, offset), never the records.
        return self.stream

    def _guard_description(self):
        # guard() checks the stream: the shard sizes, seed, tail and epoch every rank must share.
        return self.stream._guard_description()

    @property
    def num_replicas(self):
        return self.stream.num_replicas

    @property
    def rank(self):
        return self.stream.rank

    @property
    def epoch(self):
        return self.stream.epoch

    @property
    def seed(self):
        return self.stream.seed

    @property
    def shuffle(self):
        return self.stream.shuffle

    @property
    def tail(self):
        return self.stream.tail

    def set_epoch(self, epoch):
        """Selects the epoch (every rank the same); a loaded state of another epoch is discarded."""
        self.stream.set_epoch(epoch)

    def __len__(self):
        info = torch.utils.data.get_worker_info()
        if info is not None:
            return len(self.stream)
        return sum(s.samples for s in self.stream.rank_shard_schedule(self.num_workers))

    def state_dict(self, received=None, batch_size=None, num_workers=None, *, batches=None):
        """The ``ShardStream`` state (``ShardStream.state_dict``: once every rank's DataLoader yielded
        ``received`` batches; without arguments the loaded state, or where this process's own
        iteration got); ``load_state_dict`` takes it back."""
        return self.stream.state_dict(received, batch_size, num_workers, batches=batches)

    def load_state_dict(self, state_dict):
        """Resumes the next iteration where the state says (validated now)."""
        self.stream.load_state_dict(state_dict)

    def __iter__(self):
        if self._files is None:
            self._files = _OpenFiles(self.max_open_files)
        for sample in self.stream:
            record = self.read(sample.shard, sample.offset)
            if self.decode is not None:
                record = self.decode(record)
            yield ShardedItem(record, sample.is_padding) if self.return_padding else record

    def read(self, shard, offset):
        """Record ``offset`` of shard ``shard`` (positions in ``paths`` and in that shard), decoded by format."""
        if self._files is None:
            self._files = _OpenFiles(self.max_open_files)
        x = self.indexes[shard]
        file = self._files.get(shard, lambda: ShardFile("ShardedDataset", x["data_path"], self._identities[shard],
                                                        _CHANGED_FIX))
        return READERS[x["format"]].indexed(x, offset, file)

    def close(self):
        """Closes the open shard files of this process (they reopen on the next read)."""
        if self._files is not None:
            self._files.close()

