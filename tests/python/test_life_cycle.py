# Every family's state round-trips through its own state_dict/load_state_dict, through pickle and through a DataLoader.
# SPDX-License-Identifier: MIT
"""The one life cycle (distsampler.torch._life), as torchdata's BaseNode states it: a state is
exactly what load_state_dict takes back. Each expectation comes from a fresh object of the
same configuration."""

import io
import json
import pathlib
import pickle
import re
import tokenize
import types

import numpy as np
import pytest
import torch
from torch.utils.data import IterableDataset

from distsampler import ConfigError, StateError
from distsampler.torch import (DataLoader, DistributedBatchSampler, DistributedSampler,
                               DistributedWeightedRandomSampler, MixtureBatchSampler, PackedSequenceSampler,
                               ShardedDataset, ShardStream, StreamDataset, TokenBatchSampler)

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")

LENGTHS = np.array([(i * 37) % 61 + 3 for i in range(150)], dtype=np.uint32)
EPOCH = 2

# name -> (a fresh rank 0 of 2, items to take before the state: a step boundary for the step samplers)
SAMPLERS = {
    "distributed": (lambda: DistributedSampler(range(61), 2, 0, seed=3, tail="uneven"), 9),
    "distributed_torch": (lambda: DistributedSampler(range(61), 2, 0, seed=3, order="torch", drop_last=True), 9),
    "weighted": (lambda: DistributedWeightedRandomSampler([1.0, 0.0, 2.0, 4.0, 1.5], 40, num_replicas=2, rank=0,
                                                          seed=5), 7),
    "batch": (lambda: DistributedBatchSampler(range(97), 3, 2, 0, accumulation_steps=2, seed=5), 4),
    "tokens": (lambda: TokenBatchSampler(LENGTHS, 200, 2, 0, seed=7, window=64), 4),
    "mixture": (lambda: MixtureBatchSampler([40, 25, 60], [0.5, 0.2, 0.3], 4, 2, 0, seed=9, end="steps",
                                            end_count=12, accumulation_steps=2), 4),
    "packing": (lambda: PackedSequenceSampler(LENGTHS, 64, 2, 2, 0, accumulation_steps=2, seed=3), 4),
}


def epoch_of(sampler):
    sampler.set_epoch(EPOCH)
    return list(sampler)


def same_rest(name, got, rest):
    if name == "tokens":  # a resumed token pass plans the rest of its window again: the same samples, each once
        assert sorted(i for b in got for i in b) == sorted(i for b in rest for i in b)
    else:
        assert got == rest


def taken(name):
    make, k = SAMPLERS[name]
    s = make()
    s.set_epoch(EPOCH)
    it = iter(s)
    for _ in range(k):
        next(it)
    return s, k


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_a_state_is_what_load_state_dict_takes_back(name):
    make, _ = SAMPLERS[name]
    s, k = taken(name)
    state = s.state_dict(received=k)
    assert json.loads(json.dumps(state)) == state  # plain data
    resumed = make()
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state  # before iterating: exactly what it took
    assert len(resumed) == len(epoch_of(make())) - k or name == "tokens"
    same_rest(name, list(resumed), epoch_of(make())[k:])
    assert epoch_of(resumed) == epoch_of(make())  # then the whole epoch again


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_the_0_2_keyword_names_the_same_count(name):
    s, k = taken(name)
    old = "samples" if s._checkpoint_unit() == "samples" else "batches"
    assert s.state_dict(**{old: k}) == s.state_dict(received=k) == s.state_dict(k)
    with pytest.raises(ConfigError, match="were both given"):
        s.state_dict(received=k, **{old: k})
    with pytest.raises(TypeError, match="unexpected keyword argument 'steps'"):
        s.state_dict(steps=k)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_a_pickled_sampler_keeps_its_settings_and_its_loaded_state(name):
    make, _ = SAMPLERS[name]
    s, k = taken(name)
    state = s.state_dict(received=k)
    loaded = make()
    loaded.load_state_dict(state)
    clone = pickle.loads(pickle.dumps(loaded, protocol=4))
    assert clone.state_dict() == state
    same_rest(name, list(clone), epoch_of(make())[k:])
    fresh = pickle.loads(pickle.dumps(s))  # mid-iteration: the copy keeps the settings and the epoch
    assert fresh.epoch == EPOCH and list(fresh) == epoch_of(make())


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_a_sampler_without_its_loader_says_what_to_pass(name):
    s, k = taken(name)
    noun = "indices" if s._checkpoint_unit() == "samples" else "micro-batches"
    with pytest.raises(ConfigError, match=re.escape(
            f"{type(s).__name__}.state_dict: this rank handed out {k} {noun} of epoch {EPOCH} but no "
            "distsampler.torch.DataLoader is attached to say what the training loop received (a DataLoader with "
            f"workers prefetches): pass received=<{noun} the loop received per rank>, or iterate through "
            "distsampler.torch.DataLoader and checkpoint with its state_dict()")):
        s.state_dict()


class Keys(torch.utils.data.Dataset):
    """Item k is k (a packed sequence's pieces included)."""

    def __len__(self):
        return 1000

    def __getitem__(self, k):
        return k


def loader_over(sampler, num_workers=2):
    if sampler._checkpoint_unit() == "samples":
        return DataLoader(Keys(), batch_size=2, sampler=sampler, num_workers=num_workers, collate_fn=list)
    return DataLoader(Keys(), batch_sampler=sampler, num_workers=num_workers, collate_fn=list)


@pytest.mark.processes
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_a_loader_state_with_two_workers_resumes_the_rest(name):
    make, k = SAMPLERS[name]
    sampler = make()
    loader = loader_over(sampler)
    loader.set_epoch(EPOCH)
    it = iter(loader)
    first = [next(it) for _ in range(k // 2 * 2)]  # the workers prefetched beyond these
    state = loader.state_dict()
    assert sampler.state_dict() == state["state"]  # the attached loader says what the loop received
    del it
    resumed_sampler = make()
    resumed = loader_over(resumed_sampler)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    resumed.set_epoch(EPOCH)
    rest = list(resumed)
    fresh = make()
    fresh.set_epoch(EPOCH)
    expected = [b for b in loader_over(fresh, num_workers=0)]
    if name == "tokens":
        assert sorted(i for b in first + rest for i in b) == sorted(i for b in expected for i in b)
    else:
        assert first + rest == expected


# -- the shard stream, ShardedDataset, StreamDataset ------------------------------------------------------------------

SHARD_SIZES = [7, 3, 9, 4, 6, 5]


class ShardData(IterableDataset):
    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        return (s.index for s in self.stream)


def shard_stream():
    # One rank: a resumed state re-deals the rest of the epoch over every rank, so one rank's reads
    # before and after a resume are the whole epoch only when it is the only one.
    return ShardStream(SHARD_SIZES, 1, 0, seed=4, tail="uneven", state_capacity=4096)


def test_a_shard_stream_takes_back_its_own_state():
    s = shard_stream()
    s.set_epoch(EPOCH)
    full = list(s)
    s = shard_stream()
    s.set_epoch(EPOCH)
    start = s.state_dict()  # nothing iterated: the epoch's start
    it = iter(s)
    head = [next(it) for _ in range(5)]  # iterated whole in this process: what it yielded is known
    state = s.state_dict()
    assert state == s.state_dict(received=5, batch_size=1, num_workers=0) == s.state_dict(5, 1, 0)
    resumed = shard_stream()
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    clone = pickle.loads(pickle.dumps(resumed))
    assert head + list(resumed) == full
    assert clone.state_dict() == state and list(clone) == full[5:]
    other = shard_stream()
    other.load_state_dict(start)
    assert list(other) == full


def test_a_shard_stream_copy_in_a_worker_says_what_it_cannot_know():
    s = shard_stream()
    s._iterated = (2, None)  # as a DataLoader worker's copy that read its own stream of 2
    with pytest.raises(ConfigError, match=re.escape("ShardStream.state_dict: this copy iterated one DataLoader "
                                                    "worker's stream of 2")):
        s.state_dict()
    with pytest.raises(ConfigError, match="batch_size and num_workers were not given"):
        s.state_dict(received=3)


def test_a_shard_stream_copy_in_a_worker_takes_back_its_own_state(monkeypatch):
    # torchdata's StatefulDataLoader with workers asks each worker's copy and restores each the same way.
    stream = shard_stream()
    stream.set_epoch(EPOCH)
    full = [list(stream.worker_samples(w, 2)) for w in range(2)]
    for w in range(2):
        info = types.SimpleNamespace(id=w, num_workers=2)
        monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: info)
        copy = pickle.loads(pickle.dumps(stream))
        it = iter(copy)
        head = [next(it) for _ in range(3)]
        state = copy.state_dict()
        assert (state["worker"], state["num_workers"], state["taken"]) == (w, 2, 3)
        again = pickle.loads(pickle.dumps(stream))
        again.load_state_dict(json.loads(json.dumps(state)))
        it = iter(again)
        assert head + [next(it)] == full[w][:4]
        assert again.state_dict() == dict(state, taken=4)  # counted from the resumed position on
        assert head + [full[w][3]] + list(it) == full[w]
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: None)
    with pytest.raises(StateError, match=re.escape("ShardStream.load_state_dict: the state of worker 1 of 2 was "
                                                   "loaded in the main process")):
        shard_stream().load_state_dict(state)


@pytest.mark.processes
def test_a_shard_stream_read_by_a_plain_loader_s_workers_says_what_to_pass():
    stream = shard_stream()
    stream.set_epoch(EPOCH)
    it = iter(torch.utils.data.DataLoader(ShardData(stream), batch_size=2, num_workers=2))
    first = [next(it) for _ in range(3)]
    with pytest.raises(ConfigError, match=re.escape("ShardStream.state_dict: copies of this stream in DataLoader "
                                                    "workers iterated it, so what the training loop received is "
                                                    "unknown here")):
        stream.state_dict()
    state = stream.state_dict(received=3, batch_size=2, num_workers=2)
    del it
    resumed = shard_stream()
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    rest = [i for b in torch.utils.data.DataLoader(ShardData(resumed), batch_size=2, num_workers=2) for i in b.tolist()]
    read = [i for b in first for i in b.tolist()]
    fresh = shard_stream()
    fresh.set_epoch(EPOCH)
    assert sorted(read + rest) == sorted(s.index for w in range(2) for s in fresh.worker_samples(w, 2))


@pytest.mark.processes
def test_a_shard_stream_through_a_loader_with_two_workers():
    stream = shard_stream()
    loader = DataLoader(ShardData(stream), batch_size=2, num_workers=2)
    loader.set_epoch(EPOCH)
    it = iter(loader)
    first = [next(it) for _ in range(4)]
    state = loader.state_dict()
    assert stream.state_dict() == state["state"]
    assert state["state"] == stream.state_dict(4, 2, 2)
    del it
    again = shard_stream()
    resumed = DataLoader(ShardData(again), batch_size=2, num_workers=2)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    rest = [i for b in resumed for i in b.tolist()]
    read = [i for b in first for i in b.tolist()]
    fresh = shard_stream()
    fresh.set_epoch(EPOCH)
    assert sorted(read + rest) == sorted(s.index for w in range(2) for s in fresh.worker_samples(w, 2))
    assert len(set(read + rest)) == len(read + rest)


def write_shards(folder, counts=(5, 8, 3, 6)):
    paths = []
    for k, n in enumerate(counts):
        path = folder / f"shard_{k}.jsonl"
        path.write_text("".join(json.dumps({"shard": k, "i": i}) + "\n" for i in range(n)))
        paths.append(str(path))
    return paths


def sharded(paths):
    return ShardedDataset(paths, num_replicas=1, rank=0, seed=6, tail="uneven", cache=False, threads=1)


def test_a_sharded_dataset_takes_back_its_own_state(tmp_path):
    paths = write_shards(tmp_path)
    full = list(sharded(paths))
    ds = sharded(paths)
    it = iter(torch.utils.data.DataLoader(ds, batch_size=None))  # a StatefulDataLoader's use: num_workers=0
    head = [next(it) for _ in range(7)]
    state = ds.state_dict()
    resumed = sharded(paths)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    assert head + list(resumed) == full
    clone = pickle.loads(pickle.dumps(resumed))
    assert list(clone) == full[7:]


@pytest.mark.processes
def test_a_sharded_dataset_through_a_loader_with_two_workers(tmp_path):
    paths = write_shards(tmp_path)
    ds = sharded(paths)
    loader = DataLoader(ds, batch_size=2, num_workers=2, collate_fn=list)
    it = iter(loader)
    first = [next(it) for _ in range(4)]
    state = loader.state_dict()
    assert ds.state_dict() == state["state"]
    del it
    resumed = DataLoader(sharded(paths), batch_size=2, num_workers=2, collate_fn=list)
    resumed.load_state_dict(state)
    got = [(r["shard"], r["i"]) for b in first + list(resumed) for r in b]
    assert sorted(got) == sorted((r["shard"], r["i"]) for r in sharded(paths))
    assert len(set(got)) == len(got)


def stream_dataset(paths, **kw):
    return StreamDataset(paths, micro_batch=3, seed=8, state_capacity=4096, **kw)


def records(items):
    return [[(r.shard, r.index, r.pass_) for r in (item.data if hasattr(item, "data") else item)] for item in items]


def test_a_stream_dataset_takes_back_its_own_state(tmp_path):
    paths = write_shards(tmp_path)
    it = iter(stream_dataset(paths, num_replicas=1, rank=0))
    full = records([next(it) for _ in range(12)])
    ds = stream_dataset(paths, num_replicas=1, rank=0)
    it = iter(ds)
    assert records([next(it) for _ in range(5)]) == full[:5]
    state = ds.state_dict()  # iterated directly: what it yielded is what the loop received
    resumed = stream_dataset(paths, num_replicas=1, rank=0)
    resumed.load_state_dict(json.loads(json.dumps(state)))
    assert resumed.state_dict()["step"] == 5
    it = iter(resumed)
    assert records([next(it) for _ in range(7)]) == full[5:]
    clone = pickle.loads(pickle.dumps(resumed))
    it = iter(clone)
    assert records([next(it) for _ in range(7)]) == full[5:]


def test_a_stream_dataset_part_of_many_ranks_is_refused_alone_and_taken_as_a_list(tmp_path):
    paths = write_shards(tmp_path)
    parts = []
    for rank in range(2):
        ds = stream_dataset(paths, num_replicas=2, rank=rank)
        it = iter(ds)
        for _ in range(2):
            next(it)
        parts.append(ds.state_dict())
    one = stream_dataset(paths, num_replicas=1, rank=0)
    with pytest.raises(StateError, match=re.escape("StreamDataset.load_state_dict: the part of rank 0 of 2 is not "
                                                   "the job's state")):
        one.load_state_dict(parts[0])
    one.load_state_dict(parts)
    assert one.state_dict()["step"] == 2
    assert one._base == stream_dataset(paths, num_replicas=1, rank=0).job_state(parts)


@pytest.mark.processes
def test_a_stream_dataset_through_a_loader_with_two_workers(tmp_path):
    paths = write_shards(tmp_path)
    it = iter(DataLoader(stream_dataset(paths, num_replicas=1, rank=0), batch_size=None, num_workers=2))
    full = records([next(it) for _ in range(12)])
    del it
    ds = stream_dataset(paths, num_replicas=1, rank=0)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    it = iter(loader)
    assert records([next(it) for _ in range(4)]) == full[:4]
    state = loader.state_dict()
    assert ds.state_dict() == state["state"]
    del it
    text = ds.job_state([state["state"]])
    resumed = DataLoader(stream_dataset(paths, num_replicas=1, rank=0), batch_size=None, num_workers=2)
    resumed.load_state_dict({"format": 1, "sampler": "StreamDataset", "state": text})
    it = iter(resumed)
    assert records([next(it) for _ in range(8)]) == full[4:]
    again = DataLoader(stream_dataset(paths, num_replicas=1, rank=0), batch_size=None, num_workers=2)
    again.load_state_dict(dict(state, state=state["state"]))  # the rank's part itself: a job of one rank
    it = iter(again)
    assert records([next(it) for _ in range(8)]) == full[4:]


@pytest.mark.processes
def test_a_stream_dataset_read_by_a_plain_loader_s_workers_says_what_to_use(tmp_path):
    paths = write_shards(tmp_path)
    ds = stream_dataset(paths, num_replicas=1, rank=0)
    it = iter(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2))
    next(it)
    with pytest.raises(ConfigError, match=re.escape("StreamDataset.state_dict: copies of this dataset in DataLoader "
                                                    "workers iterated it, so what the training loop received is "
                                                    "unknown here")):
        ds.state_dict()


def test_a_stream_dataset_copy_in_a_worker_takes_back_its_own_part(tmp_path, monkeypatch):
    # torchdata's StatefulDataLoader with workers asks each worker's copy and restores each the same way.
    paths = write_shards(tmp_path)
    ds = stream_dataset(paths, num_replicas=2, rank=1)
    for w in range(2):
        info = types.SimpleNamespace(id=w, num_workers=2)
        monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: info)
        it = iter(pickle.loads(pickle.dumps(ds)))
        full = records([next(it) for _ in range(6)])
        copy = pickle.loads(pickle.dumps(ds))
        it = iter(copy)
        assert records([next(it) for _ in range(2)]) == full[:2]
        part = copy.state_dict()
        assert part["consumers"] == 4 and list(part["progress"]) == [str(2 + w)]
        again = pickle.loads(pickle.dumps(ds))
        again.load_state_dict(json.loads(json.dumps(part)))
        it = iter(again)
        assert records([next(it) for _ in range(4)]) == full[2:]


def test_the_loader_names_no_family_in_its_code():
    import distsampler.torch as package

    families = {"DistributedSampler", "DistributedWeightedRandomSampler", "DistributedBatchSampler",
                "TokenBatchSampler", "MixtureBatchSampler", "PackedSequenceSampler", "ShardStream", "ShardedDataset",
                "StreamDataset"}
    source = (pathlib.Path(package.__file__).parent / "loader.py").read_text()
    names = {t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.NAME}
    assert names & families == set()  # messages and docstrings may name them; code asks the object
    imports = re.findall(r"^from \.(\w+) import", source, re.M)
    assert imports == ["_common"]
