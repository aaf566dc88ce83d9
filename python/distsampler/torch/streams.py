# distsampler.torch.streams: StreamDataset, read-time streams over shard files of unknown size (filters, packing).
# SPDX-License-Identifier: MIT
"""``StreamDataset``: an ``IterableDataset`` over shard files whose record counts are unknown
until read (JSON Lines, WebDataset tar, ``.npy``; no index is built). Training runs by steps:
each consumer (rank x DataLoader worker) reads its own stream of passes, a pass being one
walk over every shard in a new order, and yields exactly ``micro_batch`` kept samples (or
packed sequences) per item, so every rank has the same number of steps with no collective.
Within a pass every kept sample is read once, by one consumer (docs/STREAMS.md).

Checkpoint through ``distsampler.torch.DataLoader``: ``loader.state_dict()`` is this rank's
part (what its loop received from each worker); gather the parts of every rank and
``StreamDataset.job_state(parts)`` gives the job's state text, which
``loader.load_state_dict`` takes on any world size and worker count.
"""

import collections
import copy
import hashlib
import json
import os

import torch
import torch.utils.data

from .. import _core
from .._core import ConfigError, StateError
from ._common import PUBLIC_MODULE, _resolve_world, _seed64, _sequence, _unsigned
from ._life import _Checkpointed
from ._readers import SequentialReader, format_of
from ._stream_cell import MAX_CAPACITY, StreamCell, pass_counter

__all__ = ["StreamDataset", "StreamPacker", "StreamItem", "StreamBatch"]

_FORMATS = ("jsonl", "tar", "npy")  # the formats of _readers.READERS that read without an index
_FORMAT = 1

StreamItem = collections.namedtuple("StreamItem", ["record", "pass_", "shard", "index"], module=PUBLIC_MODULE)
StreamItem.__doc__ = "A kept record, the pass it was read in, its shard and its record number in the shard."
StreamBatch = collections.namedtuple("StreamBatch", ["data", "consumer", "progress"], module=PUBLIC_MODULE)
StreamBatch.__doc__ = ("One micro-batch as a worker yields it: the data, the consumer (rank x num_workers + worker) "
                       "and its progress after it; distsampler.torch.DataLoader keeps the progress and passes on data.")


MAX_SEQUENCE_LENGTH = (1 << 23) - 1  # PackedSequenceSampler's seq_len bound
MAX_ITEM_OUTPUTS = 1 << 27  # samples or tokens of one item (the C++ StreamPacker's bound)
MAX_CONSUMERS = 1 << 20  # ranks x DataLoader workers (the C++ StreamPlan's bound)
MAX_STATE_CAPACITY = MAX_CAPACITY  # bytes of state text reserved in shared memory


class StreamPacker:
    """Packs documents into sequences of ``sequence_length`` tokens: ``tokenize(record)`` gives
    a document's token ids (known only once read); documents are concatenated and cut at
    sequence boundaries, a document's rest carried to the next micro-batch and across a
    checkpoint (a resume re-reads that document and continues it at the saved token)."""

    __module__ = PUBLIC_MODULE

    def __init__(self, sequence_length, tokenize):
        if (not isinstance(sequence_length, int) or isinstance(sequence_length, bool) or sequence_length < 1
                or sequence_length > MAX_SEQUENCE_LENGTH):
            raise ConfigError(f"StreamPacker: sequence_length {sequence_length!r} is out of range (expected an int "
                              f"from 1 to {MAX_SEQUENCE_LENGTH} tokens, as PackedSequenceSampler's seq_len)")
        if not callable(tokenize):
            raise ConfigError(f"StreamPacker: tokenize {tokenize!r} is not callable (expected record -> token ids)")
        self.sequence_length, self.tokenize = sequence_length, tokenize


class StreamDataset(_Checkpointed, torch.utils.data.IterableDataset):
    """Read-time streams over shard files of unknown size (see the module).

    ``paths``: the shard files; ``format``: ``"jsonl"``, ``"tar"``, ``"npy"`` or None (from the
    extension). ``micro_batch``: kept samples (or, with ``packer``, sequences) per item.
    ``filter(record) -> bool``: the read-time keep decision. ``packer``: a ``StreamPacker``;
    items are then int64 tensors ``[micro_batch, sequence_length]``, else lists of
    ``StreamItem``. ``byte_sizes``: balance hints, by default the files' sizes (``None``: none).
    ``num_replicas``/``rank``: the world (default: torch.distributed, else the environment).
    Raises ``ConfigError`` for bad arguments; ``StateError`` for a bad or mismatched state.

    ``state_dict()`` is this rank's part: what its loop received (through
    ``distsampler.torch.DataLoader``) or what its own iteration yielded (iterated directly).
    ``load_state_dict`` takes back a job state text (``job_state``), every rank's parts (a
    list), or one part when it is the whole job's (``num_replicas=1``). Inside a DataLoader
    worker (torchdata's ``StatefulDataLoader`` asks and restores each worker's copy) the part
    is that worker's consumer's, and ``load_state_dict`` takes it back for that copy's next pass.
    """

    __module__ = PUBLIC_MODULE

    def __init__(self, paths, format=None, num_replicas=None, rank=None, *, micro_batch, seed=0, filter=None,
                 packer=None, byte_sizes="auto", share=1, state_capacity=1 << 20):
        who = type(self).__name__
        if isinstance(paths, (str, bytes, os.PathLike)) or not paths:
            raise ConfigError(f"{who}: paths {paths!r} is not a non-empty list of shard files")
        self.paths = [os.fsdecode(os.fspath(p)) for p in paths]
        if format == "raw":
            raise ConfigError(f"{who}: format 'raw' is not read without an index (a raw token file's documents are "
                              "found by scanning it for eos; expected ShardedDataset(paths, format=\"raw\", dtype=, "
                              "eos=) or raw_documents)")
        self.formats = [format_of(who, p, format, _FORMATS) for p in self.paths]
        if not isinstance(micro_batch, int) or isinstance(micro_batch, bool) or micro_batch < 1:
            raise ConfigError(f"{who}: micro_batch {micro_batch!r} is out of range (expected an int >= 1)")
        # An item is filled before it is yielded: its size bounds what one read holds in memory.
        length = 1 if not isinstance(packer, StreamPacker) else packer.sequence_length
        if micro_batch * length > MAX_ITEM_OUTPUTS:
            what = f"micro_batch {micro_batch}" + ("" if length == 1 else f" x packer sequence_length {length}")
            raise ConfigError(f"{who}: {what} is more than {MAX_ITEM_OUTPUTS} {'samples' if length == 1 else 'tokens'} "
                              "per item (expected a smaller micro_batch)")
        if filter is not None and not callable(filter):
            raise ConfigError(f"{who}: filter {filter!r} is not callable (expected record -> bool, or None)")
        if packer is not None and not isinstance(packer, StreamPacker):
            raise ConfigError(f"{who}: packer {packer!r} is not a StreamPacker (expected one, or None)")
        if byte_sizes == "auto":
            byte_sizes = [os.path.getsize(p) if os.path.exists(p) else 0 for p in self.paths]
        self.byte_sizes = [] if byte_sizes is None else [_unsigned(who, "byte size", b) for b in _sequence(
            who, "byte_sizes", byte_sizes, "a list of byte sizes, 'auto' or None")]
        if self.byte_sizes and len(self.byte_sizes) != len(self.paths):
            raise ConfigError(f"{who}: byte_sizes has {len(self.byte_sizes)} entries for {len(self.paths)} paths "
                              "(expected one per path, 'auto' or None)")
        if share != "all" and (not isinstance(share, int) or isinstance(share, bool) or share < 1):
            raise ConfigError(f"{who}: share {share!r} is not a consumer count or 'all' (expected an int >= 1, or "
                              "'all')")
        self.share = share
        self.world_size, self.rank = _resolve_world(who, num_replicas, rank)
        if self.world_size > MAX_CONSUMERS:
            raise ConfigError(f"{who}: num_replicas {self.world_size} is more than {MAX_CONSUMERS} (expected at most "
                              f"{MAX_CONSUMERS} ranks x DataLoader workers: every pass holds a share for each)")
        self.micro_batch, self.seed, self.filter, self.packer = micro_batch, _seed64(who, seed), filter, packer
        if (not isinstance(state_capacity, int) or isinstance(state_capacity, bool) or state_capacity < 1
                or state_capacity > MAX_STATE_CAPACITY):
            # Reserved in shared memory up front: a number, not what is read, must not decide the allocation.
            raise ConfigError(f"{who}: state_capacity {state_capacity!r} is out of range (expected an int from 1 to "
                              f"{MAX_STATE_CAPACITY} bytes of state text)")
        self._cell = StreamCell(state_capacity, who)
        self._passes, self._passes_seen = pass_counter(), 0
        self._base = None  # the job state text this run resumed from
        self._received = {}  # consumer -> progress after the last micro-batch the loop received
        self._step0, self._steps = 0, 0
        self._consumers = None

    # The loader's hooks (DataLoader checks epoch and shuffle for its warnings).
    epoch = 0
    shuffle = False

    @property
    def num_replicas(self):
        """``world_size``, under the name torch's samplers take it (and ``guard`` reads)."""
        return self.world_size

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world: the
        shard count, a digest of the byte hints and of the state it resumed from (order), the
        kept samples of every step (global_batch_size) and the packer's sequence length."""
        digest = hashlib.sha256(json.dumps([self.byte_sizes, self._base]).encode()).hexdigest()[:16]
        return {"sampler": type(self).__name__, "dataset_size": len(self.paths), "order": f"streams {digest}",
                "global_batch_size": self.micro_batch * self.world_size,
                "token_layout": 0 if self.packer is None else self.packer.sequence_length}

    def _guard_reads(self, micro_batches=4):
        """ReadSums words of the first ``micro_batches`` micro-batches this rank reads as its
        loader's one worker, from a copy (nothing is consumed): each kept sample's (pass, shard,
        record), or the packed token ids. Reads those records' shard files."""
        sums, it = _core.ReadSums(), iter(copy.deepcopy(self))
        for _ in range(micro_batches):
            data = next(it).data
            if self.packer is None:
                sums.read([((item.pass_ << 40) + (item.shard << 20) + item.index) % (1 << 64) for item in data])
            else:
                sums.read([t % (1 << 64) for t in data.flatten().tolist()])
        return sums.words

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cell"] = self._cell.tensors()
        state.pop("_loop", None)  # the loader stays in this process
        state.pop("_iterated_here", None)
        state.pop("_worker_resume", None)
        return state

    def __setstate__(self, state):
        head, text, capacity = state["_cell"]
        state["_cell"] = StreamCell.from_tensors(head, text, capacity, type(self).__name__)
        if "_passes" not in state:  # a pickle of 0.2
            state["_passes"], state["_passes_seen"] = pass_counter(), 0
        self.__dict__.update(state)

    # -- reading --------------------------------------------------------------------------
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        consumers = self.world_size * workers
        if consumers > MAX_CONSUMERS:
            raise ConfigError(f"StreamDataset: num_replicas {self.world_size} x num_workers {workers} is more than "
                              f"{MAX_CONSUMERS} consumers (expected fewer DataLoader workers)")
        shared = json.loads(self._cell.text) if self._cell.text else {"base": self._base, "consumers": consumers,
                                                                        "progress": {}}
        consumer = self.rank * workers + worker
        own = self.__dict__.get("_worker_resume")  # a worker's own part (torchdata restores each worker): one pass
        if own is not None and own["consumers"] == consumers and str(consumer) in own["progress"]:
            self._worker_resume = None
            shared = {"base": own["base"], "consumers": consumers, "progress": own["progress"]}
        progress = shared["progress"].get(str(consumer)) if shared["consumers"] == consumers else None
        if shared["progress"] and shared["consumers"] != consumers:
            raise ConfigError(f"StreamDataset: the loader's num_workers changed between iterations ({consumers} "
                              f"consumers now, {shared['consumers']} before; expected the same, or a state "
                              "loaded through load_state_dict)")
        cursor = _core.StreamCursor(len(self.paths), self.byte_sizes, self.seed, consumers, consumer,
                                    shared["base"], None if progress is None else _to_progress(progress),
                                    self._share_for(consumers))
        readers, docs = {}, {}
        direct = self._attached() is None  # iterated without distsampler's loader: what it yields is received
        if direct:
            self._received, self._consumers, self._steps = {}, consumers, 0
            self._iterated_here = True
        self._passes += 1  # shared: the main process sees that a worker's copy iterated

        def record(shard, index):
            if shard not in readers:
                readers[shard] = SequentialReader(self.paths[shard], self.formats[shard])
            return readers[shard].get(index)

        def read(pass_, shard, index):
            rec = record(shard, index)
            if rec is None:
                return None
            if self.filter is not None and not self.filter(rec):
                return 0
            if self.packer is None:
                docs[(shard, index)] = rec
                return 1
            tokens = list(self.packer.tokenize(rec))
            if tokens:
                docs[(shard, index)] = tokens
            return len(tokens)

        while True:
            size = self.micro_batch * (1 if self.packer is None else self.packer.sequence_length)
            emits = cursor.next(size, read)
            data = []
            for pass_, shard, index, begin, end in emits:
                got = docs.pop((shard, index), None)
                if got is None:  # a carried document after a resume: read it again
                    rec = record(shard, index)
                    got = list(self.packer.tokenize(rec)) if self.packer is not None else rec
                if self.packer is None:
                    data.append(StreamItem(got, pass_, shard, index))
                else:
                    data.extend(got[begin:end])
                    if end < len(got):
                        docs[(shard, index)] = got
            if self.packer is not None:
                data = torch.tensor(data, dtype=torch.int64).view(self.micro_batch, self.packer.sequence_length)
            progress = cursor.progress()
            if direct:
                self._received[consumer] = progress
                self._steps += 1
            yield StreamBatch(data, consumer, progress)

    def _share_for(self, consumers):
        """The C++ share (0: every consumer) for `consumers`; ConfigError naming `share` when too large."""
        if self.share == "all":
            return 0
        if self.share > consumers:
            raise ConfigError(f"StreamDataset: share {self.share} is above the {consumers} consumers (num_replicas x "
                              f"num_workers; expected 1..{consumers}, or 'all')")
        return self.share

    # -- the loader's protocol ------------------------------------------------------------
    def _begin(self, num_workers):
        """Before a DataLoader iteration: the workers continue from what the loop received."""
        consumers = self.world_size * max(1, num_workers)
        self._share_for(consumers)
        if self._consumers is not None and self._consumers != consumers and self._received:
            raise ConfigError(f"StreamDataset: the loader's num_workers changed between iterations ({consumers} "
                              f"consumers now, {self._consumers} before; expected the same, or a state loaded "
                              "through load_state_dict)")
        self._consumers = consumers
        payload = {"base": self._base, "consumers": consumers,
                   "progress": {str(c): _from_progress(p) for c, p in self._received.items()}}
        self._cell.write(0, json.dumps(payload, separators=(",", ":")))

    def _received_batch(self, batch, counts):
        if not isinstance(batch, StreamBatch):
            return batch
        if counts:
            self._received[batch.consumer] = batch.progress
            self._steps += 1
        return batch.data

    def state_dict(self, received=None):
        """This rank's part of the job state: the progress of its consumers the loop received
        (``received``, the loader's count, adds nothing: each micro-batch carries its progress).
        Raises ``ConfigError`` when copies in a plain DataLoader's workers iterated it: this process
        cannot know what their loop received."""
        if (self._attached() is None and not self.__dict__.get("_iterated_here")
                and int(self._passes) != self._passes_seen):
            raise ConfigError("StreamDataset.state_dict: copies of this dataset in DataLoader workers iterated it, "
                              "so what the training loop received is unknown here (expected to iterate through "
                              "distsampler.torch.DataLoader, which records each micro-batch the loop received, and "
                              "to checkpoint with its state_dict())")
        return {"format": _FORMAT, "epoch": 0, "base": self._base, "rank": self.rank, "world_size": self.world_size,
                "consumers": self._consumers or self.world_size, "step": self._step0 + self._steps,
                "progress": {str(c): _from_progress(p) for c, p in self._received.items()}}

    def job_state(self, parts):
        """The job's state text from every rank's ``state_dict()`` part (gathered by the caller)."""
        who = "StreamDataset.job_state"
        if not parts:
            raise StateError(f"{who}: parts is empty (expected every rank's state_dict())")
        consumers, base = parts[0]["consumers"], parts[0]["base"]
        progress = {}
        for part in parts:
            if part.get("format") != _FORMAT or part["consumers"] != consumers or part["base"] != base:
                raise StateError(f"{who}: the parts come from different runs (expected every rank's state_dict() "
                                 "of one step)")
            progress.update(part["progress"])
        share = self._share_for(consumers)
        start = _core.resume_stream(len(self.paths), self.byte_sizes, self.seed, consumers, base, share)
        full = [_to_progress(progress[str(c)]) if str(c) in progress else start[c] for c in range(consumers)]
        return _core.assemble_stream_state(len(self.paths), self.byte_sizes, self.seed, consumers, base, full,
                                           max(p["step"] for p in parts), share)

    def load_state_dict(self, state):
        """Loads a job state: its text (``job_state``), a list of every rank's ``state_dict()``
        parts, or one part of a job of one rank; for any world size and worker count."""
        who = "StreamDataset.load_state_dict"
        if isinstance(state, dict) and "progress" in state and torch.utils.data.get_worker_info() is not None:
            self._worker_resume = state  # in a DataLoader worker: this copy's consumers only, not the shared cell
            return
        if isinstance(state, dict) and "progress" in state:
            if state.get("world_size") != 1:
                raise StateError(f"{who}: the part of rank {state.get('rank')} of {state.get('world_size')} is not "
                                 "the job's state (expected the text of job_state(parts) over every rank's "
                                 "state_dict(), or the list of those parts)")
            state = self.job_state([state])
        elif isinstance(state, (list, tuple)):
            state = self.job_state(list(state))
        if not isinstance(state, str):
            raise StateError(f"{who}: expected the job state text from job_state(), a list of every rank's "
                             f"state_dict(), or the state_dict() of a job of one rank, got {type(state).__name__}")
        _core.resume_stream(len(self.paths), self.byte_sizes, self.seed, 1, state)  # validates
        self._base, self._received, self._consumers = state, {}, None
        self._iterated_here, self._passes_seen = False, int(self._passes)
        self._step0, self._steps = _core.StreamJobState.from_text(state).step, 0
        # Read by the next iteration, in this process and in every worker's copy.
        self._cell.write(0, json.dumps({"base": state, "consumers": 0, "progress": {}}, separators=(",", ":")))

    # -- what distsampler.torch.DataLoader asks -------------------------------------------
    _unit = "passes"

    def _loader_check(self, loader):
        if loader.batch_size is not None:
            raise ConfigError(f"DataLoader: batch_size={loader.batch_size} with a StreamDataset batches its "
                              "micro-batches again (expected batch_size=None: each item is one micro-batch of "
                              "micro_batch samples)")

    def _loader_begin(self, loader):
        self._begin(loader.num_workers)
        return False

    def _has_padding(self):
        return False  # every item is exactly micro_batch kept samples


def _from_progress(p):
    return [p[0], p[1], p[2], [list(c) for c in p[3]]]


def _to_progress(p):
    return (p[0], p[1], p[2], [tuple(c) for c in p[3]])
