# distsampler.torch.ShardStream: the Python face of the C++ StreamingShardSampler, for an IterableDataset.
# SPDX-License-Identifier: MIT
import collections

import torch

from .. import _core
from .._core import ConfigError, StateError
from ._common import (PUBLIC_MODULE, _STATE_FORMAT, _Progress, _check_state_dict, _check_tail, _flag,
                      _generate, _resolve_world, _seed64, _sequence, _unsigned)
from ._life import _Checkpointed, received_count
from ._stream_cell import StreamCell, pass_counter

ShardSample = collections.namedtuple("ShardSample", ["shard", "offset", "index", "is_padding"],
                                     module=PUBLIC_MODULE)
ShardSample.__doc__ = "One sample of a shard stream: shard number, record offset in it, global index, padding flag."
ScheduledShard = collections.namedtuple("ScheduledShard", ["shard", "first_slot", "last_slot", "samples"],
                                        module=PUBLIC_MODULE)
ScheduledShard.__doc__ = ("One shard of a shard schedule: shard number, first and last stream slot reading it, "
                          "records read from it.")


_DEFAULT_STATE_CAPACITY = 1 << 20


_PRESETS = ("mixed", "sequential")


def _locality(who, preset, options):
    """The read-locality options given (None: the preset's value), checked; the C++ ShardSamplerOptions' names."""
    if preset not in _PRESETS:
        raise _core.ConfigError(f'{who}: preset {preset!r} is unknown (expected "mixed", the default: batches mixed '
                                'like a full shuffle, or "sequential": each shard read in increasing offsets, one at '
                                'a time)')
    out = {}
    for name, value in options.items():
        if value is None:
            continue
        if name == "rotate_shards":
            if not isinstance(value, bool):
                raise _core.ConfigError(f"{who}: rotate_shards {value!r} is not a bool (expected True, False or None)")
        else:
            if isinstance(value, bool):
                raise _core.ConfigError(f"{who}: {name} {value!r} is a bool (expected an integer, or None)")
            value = _unsigned(who, name, value)
            if value == 0:
                raise _core.ConfigError(f"{who}: {name} is 0 (expected at least 1, or None for the preset's value)")
        out[name] = value
    return out


class ShardStream(_Checkpointed):
    """The samples one (rank, DataLoader worker) reads from a dataset stored as shards.

    The Python face of the C++ ``distsampler::StreamingShardSampler``: the same order, and
    ``state_dict()["state"]`` is its state text.

    Use it inside ``IterableDataset.__iter__``: ``for shard, offset, index, pad in
    stream:`` reads this rank's, this worker's stream (the worker from
    ``torch.utils.data.get_worker_info()``; one stream when not in a worker). Every
    (rank, worker) slot gets the same count (``tail="pad"``, padding flagged; ``"drop"``;
    ``"uneven"``: counts differ by at most one), all slots together are disjoint and
    cover the epoch. ``shard_sizes`` are the record counts of the shard files, in a fixed order.

    Read locality is chosen by ``preset`` (docs/SHARDS.md has the measured table):
    ``"mixed"`` (the default) mixes batches like a full shuffle, at the cost of a shard
    change on nearly every sample and offsets read out of order within a shard (about 64
    runs open per worker); ``"sequential"`` reads each shard in strictly increasing
    offsets, one shard at a time per worker, with less mixed batches. ``canonical_streams``,
    ``max_open_shards``, ``run_length``, ``shuffle_window`` and ``rotate_shards`` (the C++
    ``ShardSamplerOptions``) override the preset's values; all must be the same on every rank.

    Checkpointing from the main process: ``state_dict(received, batch_size, num_workers)``
    after the DataLoader (``batch_size`` per worker batch, ``num_workers`` workers) yielded
    ``received`` batches on every rank (0.2's ``batches=`` still works; through
    ``distsampler.torch.DataLoader`` the loader says all three); ``load_state_dict`` before
    the next epoch's iteration (the DataLoader pickles the dataset to its workers, pending
    state included), and every stream continues with exactly the unread samples, on any
    world size or worker count. ``state_dict()`` alone is the loaded state before any
    iteration, or the position this process's own iteration reached when it read the whole
    rank's stream (no DataLoader workers); ``load_state_dict(stream.state_dict())`` takes
    back what it gave. Inside a DataLoader worker (torchdata's ``StatefulDataLoader`` asks
    each worker's copy) it is that worker's own position, which ``load_state_dict`` takes
    back in the same worker of as many for one pass.

    Epochs reach every worker: ``epoch`` and a loaded state live in a small shared-memory
    cell made at construction, which the workers' copies share (``fork`` and ``spawn``,
    ``persistent_workers`` or not), so ``set_epoch`` / ``load_state_dict`` in the main
    process set what the next pass of every worker reads. As with torch's samplers, call
    ``set_epoch`` before each epoch: without it every pass reads the same epoch again
    (``distsampler.torch.DataLoader`` warns then). A loaded state stays in effect for the
    passes of its epoch until ``set_epoch`` selects another (``distsampler.torch.DataLoader``
    applies it to one pass, then reads the whole epoch). ``state_capacity``: bytes reserved
    for a loaded state's text (``StateError`` when one is longer).
    """

    __module__ = PUBLIC_MODULE

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        # The locality options shape the epoch's order: every rank must have the same.
        order = " ".join(["shard", self.preset] + [f"{k}={v}" for k, v in sorted(self.locality.items())])
        return {"sampler": "ShardStream", "dataset_size": sum(self.shard_sizes), "order": order,
                "global_batch_size": 0, "token_layout": 0}

    def __init__(self, shard_sizes, num_replicas=None, rank=None, *, shuffle=True, seed=0, tail="pad",
                 state_capacity=_DEFAULT_STATE_CAPACITY, preset="mixed", canonical_streams=None,
                 max_open_shards=None, run_length=None, shuffle_window=None, rotate_shards=None):
        who = "ShardStream"
        self.preset = preset
        self.locality = _locality(who, preset, {"canonical_streams": canonical_streams,
                                                "max_open_shards": max_open_shards, "run_length": run_length,
                                                "shuffle_window": shuffle_window, "rotate_shards": rotate_shards})
        self.num_replicas, self.rank = _resolve_world(who, num_replicas, rank)
        _check_tail(who, tail)
        self.shard_sizes = [_unsigned(who, "shard size", s)
                            for s in _sequence(who, "shard_sizes", shard_sizes, "a list of shard sizes")]
        self.shuffle = _flag(who, "shuffle", shuffle)
        self.seed = seed
        self.tail = tail
        self._cell = StreamCell(_unsigned(who, "state_capacity", state_capacity), who)
        self._passes = pass_counter()
        self._sampler(1)

    @property
    def epoch(self):
        """The epoch every pass reads, in this process and in every DataLoader worker."""
        return self._cell.epoch

    @epoch.setter
    def epoch(self, epoch):
        e = _unsigned("ShardStream", "epoch", epoch)
        if e != self._cell.epoch:  # the same epoch again changes nothing (a loaded state stays used)
            self._cell.write(e, self._cell.text)

    @property
    def _pending(self):
        return self._cell.text

    @_pending.setter
    def _pending(self, text):
        self._cell.write(self._cell.epoch, text)

    def __getstate__(self):
        # The cell as its tensors: a worker's copy shares them (torch passes shared tensors by handle).
        # The loader link, the mask's slots and the progress of an iteration stay in this process.
        state = self.__dict__.copy()
        state["_cell"] = state["_cell"].tensors()
        for name in ("_loop", "_mask_slots", "_iterated", "_worker_resume"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        state.setdefault("preset", "mixed")  # release 0.1 streams had the defaults
        state.setdefault("locality", {})
        if "_cell" not in state:
            # A pickle of release 0.1, whose stream kept its epoch and pending state as attributes.
            cell = StreamCell(_DEFAULT_STATE_CAPACITY, "ShardStream")
            cell.write(state.pop("epoch", 0), state.pop("_pending", None))
            state["_cell"] = cell
        else:
            state["_cell"] = StreamCell.from_tensors(*state["_cell"], "ShardStream")
        if "_passes" not in state:  # pickles of 0.1 and 0.2
            state["_passes"] = pass_counter()
        self.__dict__.update(state)

    def _sampler(self, num_workers, rank=None):
        """The C++ StreamingShardSampler of this stream's settings for `num_workers` workers per rank."""
        # The preset first, then every option given explicitly.
        options = _core.ShardSamplerOptions.sequential() if self.preset == "sequential" else \
            _core.ShardSamplerOptions.mixed()
        for name, value in dict(self.locality, num_workers=num_workers, shuffle=self.shuffle,
                                seed=_seed64("ShardStream", self.seed), tail=self.tail).items():
            setattr(options, name, value)
        return _core.make_streaming_shard_sampler(self.shard_sizes, self.rank if rank is None else rank,
                                                  self.num_replicas, options)

    def _positioned(self, num_workers, rank=None):
        core = self._sampler(num_workers, rank)
        if self._pending is not None:
            core.resume(self._pending)
        else:
            core.set_epoch(self.epoch)
        return core

    def set_epoch(self, epoch):
        """Selects the epoch; a loaded state of another epoch is discarded."""
        e = _unsigned("ShardStream", "epoch", epoch)
        if e != self.epoch:  # nothing of the new epoch was read yet
            self._pending = None
            self._iterated = None
            self._passes_seen = int(self._passes)
        self.epoch = e

    def worker_samples(self, worker, num_workers):
        """The stream of one worker slot of this rank as a generator of ``ShardSample``."""
        return self._samples(worker, num_workers)[1]

    def _samples(self, worker, num_workers):
        core = self._positioned(num_workers)
        size = core.worker_size(worker)

        def fetch(first, count):
            return [ShardSample(*t) for t in core.samples(worker, first, count)]

        progress = _Progress(core, core.epoch)
        return progress, _generate(progress, fetch, size)

    def shard_schedule(self, worker, num_workers):
        """The shards one worker slot of this rank reads this epoch (or in the rest of a loaded
        state), in the order it first needs them, as ``ScheduledShard`` tuples: the first and
        last slot of its stream reading the shard and how many of its records it reads
        (padding included). A loader of remote shard files fetches in this order and evicts a
        shard once its last slot has passed. Computed without walking the stream."""
        who = "ShardStream.shard_schedule"
        core = self._positioned(max(1, _unsigned(who, "num_workers", num_workers)))
        return [ScheduledShard(*t) for t in core.shard_schedule(_unsigned(who, "worker", worker))]

    def rank_shard_schedule(self, num_workers):
        """``shard_schedule`` merged over this rank's ``num_workers`` workers: per shard the
        earliest first slot, the latest last slot and the records all of them read."""
        core = self._positioned(max(1, _unsigned("ShardStream.rank_shard_schedule", "num_workers", num_workers)))
        return [ScheduledShard(*t) for t in core.rank_shard_schedule()]

    def __len__(self):
        """Samples of this worker's stream (worker 0 of 1 outside a DataLoader worker)."""
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return self._positioned(num_workers).worker_size(worker)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        resume = self.__dict__.get("_worker_resume")
        if resume is not None and resume["worker"] == worker and resume["num_workers"] == num_workers:
            # A worker's own state (torchdata's StatefulDataLoader restores each worker's copy): one pass.
            self._worker_resume = None
            base, skip = resume["state"], resume["taken"]
            core = self._sampler(num_workers)
            core.resume(base)
        else:
            core, skip = self._positioned(num_workers), 0
            base = self._pending if self._pending is not None else core.state_after_batches(0, 1)

        def fetch(first, count):
            return [ShardSample(*t) for t in core.samples(worker, skip + first, count)]

        progress = _Progress(core, core.epoch)
        self._iterated = (num_workers, progress, skip, base, worker)
        self._passes += 1  # shared: the main process sees that a worker's copy iterated
        return _generate(progress, fetch, core.worker_size(worker) - skip)

    def state_dict(self, received=None, batch_size=None, num_workers=None, *, batches=None):
        """The state once every rank's DataLoader (``num_workers`` workers, 0 meaning the main
        process, each batching its stream by ``batch_size``) yielded ``received`` batches (or
        all it had); the attached ``distsampler.torch.DataLoader`` supplies what is not given.
        Without any: see the class (``ConfigError`` when this process cannot know)."""
        who = "ShardStream.state_dict"
        _, done = received_count(who, "batches", received, {} if batches is None else {"batches": batches})
        loader = self._attached()
        if done is None and loader is not None:
            done = loader._received_by(self) or 0
        if done is not None:
            if loader is not None:
                batch_size = loader._step if batch_size is None else batch_size
                num_workers = loader.num_workers if num_workers is None else num_workers
            if batch_size is None or num_workers is None:
                raise ConfigError(f"{who}: received {done} batches but batch_size and num_workers were not given "
                                  "(expected the DataLoader's batch_size= and num_workers=, or iterate through "
                                  "distsampler.torch.DataLoader, which says them)")
            core = self._positioned(max(1, _unsigned(who, "num_workers", num_workers)))
            text = core.state_after_batches(done, _unsigned(who, "batch_size", batch_size))
            return {"format": _STATE_FORMAT, "epoch": _core.parse_state(text)["epoch"], "state": text}
        iterated = self.__dict__.get("_iterated")
        if iterated is None and int(self._passes) != self.__dict__.get("_passes_seen", 0):
            raise ConfigError(f"{who}: copies of this stream in DataLoader workers iterated it, so what the training "
                              "loop received is unknown here (expected state_dict(received, batch_size, num_workers) "
                              "with what the loop received, or iterate through distsampler.torch.DataLoader and "
                              "checkpoint with its state_dict())")
        if iterated is None:
            if self._pending is not None:
                return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": self._pending}
            text = self._positioned(1).state_after_batches(0, 1)
        elif iterated[0] == 1:
            progress = iterated[1]
            text = progress.core.state_after_batches(iterated[2] + progress.taken(), 1)
        elif torch.utils.data.get_worker_info() is not None:
            # A DataLoader worker's copy (torchdata's StatefulDataLoader asks each worker): its own
            # stream's position, which only load_state_dict in the same worker of as many takes back.
            num, progress, skip, base, worker = iterated
            return {"format": _STATE_FORMAT, "epoch": _core.parse_state(base)["epoch"], "state": base,
                    "worker": worker, "num_workers": num, "taken": skip + progress.taken()}
        else:
            raise ConfigError(f"{who}: this copy iterated one DataLoader worker's stream of {iterated[0]}, so what "
                              "the other workers read is unknown here (expected state_dict(received, batch_size, "
                              "num_workers) in the main process, or distsampler.torch.DataLoader.state_dict())")
        return {"format": _STATE_FORMAT, "epoch": _core.parse_state(text)["epoch"], "state": text}

    def load_state_dict(self, state_dict):
        """Validates now (``StateError`` with the C++ message); the next iteration resumes. A
        worker's own state (``"worker"`` in it) applies to that worker's copy only. A state at
        the end of an epoch older than the one ``set_epoch`` selected (the loop moved on before
        the state was applied, as torchdata's ``StatefulDataLoader`` applies it when iteration
        starts) leaves the selected epoch to be read from its start."""
        text, epoch = _check_state_dict("ShardStream.load_state_dict", state_dict)
        core = self._sampler(1)
        core.resume(text)
        if "worker" in state_dict:
            num, worker, taken = (state_dict.get(k) for k in ("num_workers", "worker", "taken"))
            ended = False
            if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (num, worker, taken)) and \
                    worker < num:
                own = self._sampler(num)
                own.resume(text)
                ended = taken >= own.worker_size(worker)
            if ended and self.epoch > epoch:
                # The end of an epoch the loop has left (below): this worker's next pass reads the selected epoch.
                return
        elif core.worker_size(0) == 0 and self.epoch > epoch:
            # The end of an epoch the loop has left: set_epoch chose a later one before the state came
            # (torchdata's StatefulDataLoader loads the dataset when iteration starts, after the loop's
            # set_epoch). The later epoch is read from its start: the finished one is not read again, and
            # the later one is not taken for finished.
            self._iterated = None
            self._passes_seen = int(self._passes)
            return
        if "worker" in state_dict:
            info = torch.utils.data.get_worker_info()
            if info is None or (info.id, info.num_workers) != (state_dict["worker"], state_dict["num_workers"]):
                where = "the main process" if info is None else f"worker {info.id} of {info.num_workers}"
                raise StateError(f"ShardStream.load_state_dict: the state of worker {state_dict['worker']} of "
                                 f"{state_dict['num_workers']} was loaded in {where} (expected the same worker of as "
                                 "many, as torchdata's StatefulDataLoader restores them)")
            self._worker_resume = dict(state_dict)
            return
        self._pending = text
        self.epoch = epoch
        self._iterated = None
        self._passes_seen = int(self._passes)

    # -- what distsampler.torch.DataLoader asks -------------------------------------------
    _unit = "stream"

    def _loader_check(self, loader):
        if loader.drop_last:
            raise ConfigError("DataLoader: drop_last=True with a ShardStream dataset drops each worker's last "
                              "partial batch (expected drop_last=False; the stream's tail option decides the "
                              "epoch's end)")

    def _loader_begin(self, loader):
        # A loaded state applies to one pass of the loader; then the whole epoch again.
        if self._pending is not None and self._cell.version == self.__dict__.get("_loader_version"):
            self._pending = None
        self._loader_version = self._cell.version
        self._mask_slots = None
        return False

    def _loader_loaded(self, loader):
        self._loader_version = None

    def _padding_flags(self, j, batch_size):
        # Batch j comes from the workers in turn, skipping the exhausted ones
        # (detail::round_robin_done): turn t gives one batch of each worker that has more than t.
        if self.__dict__.get("_mask_slots") is None:
            workers = max(1, self._attached().num_workers)
            core = self._positioned(workers)
            counts = [-(-core.worker_size(w) // batch_size) for w in range(workers)]
            order = [(w, t) for t in range(max(counts, default=0)) for w in range(workers) if counts[w] > t]
            self._mask_slots = (core, order)
        core, order = self._mask_slots
        worker, t = order[j]
        return [sample[3] for sample in core.samples(worker, t * batch_size, batch_size)]
