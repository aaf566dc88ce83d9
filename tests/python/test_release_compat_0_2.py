# States and pickles written by release 0.2 (data/release_0_2, made by data/make_release_0_2.py) load and resume.
# SPDX-License-Identifier: MIT
"""Every expectation is computed here from a fresh sampler of the same configuration (its
epoch 3, less the items the 0.2 code had consumed), never from output stored by the code
under test beyond the committed files themselves."""

import json
import pathlib
import pickle

import numpy as np
import pytest

from distsampler.torch import (DataLoader, DistributedBatchSampler, DistributedSampler,
                               DistributedWeightedRandomSampler, MixtureBatchSampler, PackedSequenceSampler,
                               ShardedDataset, ShardStream, StreamDataset, TokenBatchSampler)

DATA = pathlib.Path(__file__).resolve().parent / "data" / "release_0_2"
EPOCH = 3
SHARD_SIZES = [7, 3, 9, 4, 6, 5]
TOKEN_LENGTHS = np.array([(i * 37) % 61 + 3 for i in range(150)], dtype=np.uint32)
WEIGHTS = [1.0, 0.0, 3.0, 2.0, 5.0, 1.5, 0.5, 4.0]
FILES = [f"shard_{k}.jsonl" for k in range(4)]

# The configurations of make_release_0_2.py (rank `rank` of 2).
FRESH = {
    "distributed_feistel": lambda rank: DistributedSampler(range(53), 2, rank, seed=11),
    "distributed_torch": lambda rank: DistributedSampler(range(53), 2, rank, seed=11, order="torch",
                                                         torch_generation="v1"),
    "distributed_uneven": lambda rank: DistributedSampler(range(53), 2, rank, seed=11, tail="uneven"),
    "batch_feistel": lambda rank: DistributedBatchSampler(range(97), 3, 2, rank, accumulation_steps=2, seed=5),
    "batch_torch": lambda rank: DistributedBatchSampler(range(97), 3, 2, rank, seed=5, tail="pad", order="torch",
                                                        torch_generation="v1"),
    "tokens": lambda rank: TokenBatchSampler(TOKEN_LENGTHS, 200, 2, rank, seed=7, window=64),
    "mixture": lambda rank: MixtureBatchSampler([40, 25, 60], [0.5, 0.2, 0.3], 4, 2, rank, seed=9, end="steps",
                                                end_count=12),
    "packing": lambda rank: PackedSequenceSampler(TOKEN_LENGTHS, 64, 2, 2, rank, accumulation_steps=2, seed=3),
    "weighted": lambda rank: DistributedWeightedRandomSampler(WEIGHTS, 40, num_replicas=2, rank=rank, seed=13),
    "weighted_without_replacement": lambda rank: DistributedWeightedRandomSampler(WEIGHTS, 6, replacement=False,
                                                                                  num_replicas=2, rank=rank, seed=13),
}
CONSUMED = {"distributed_feistel": 10, "distributed_torch": 10, "distributed_uneven": 7, "batch_feistel": 4,
            "batch_torch": 3, "tokens": 4, "mixture": 6, "packing": 4, "weighted": 9,
            "weighted_without_replacement": 1}
SHARD_BATCHES, SHARD_BATCH_SIZE, SHARD_WORKERS = 4, 2, 2
STREAM_ITEMS = 5


def read_json(name):
    return json.loads((DATA / f"{name}.json").read_text())


def load(name):
    with open(DATA / f"{name}.pkl", "rb") as f:
        return pickle.load(f)


def epoch_of(sampler, epoch=EPOCH):
    sampler.set_epoch(epoch)
    return list(sampler)


def padding_slots(name, rank):
    if not name.startswith("distributed_"):
        return 0
    fresh = FRESH[name](rank)
    fresh.set_epoch(EPOCH)
    return sum(fresh.is_padding(i) for i in range(len(fresh)))


def assert_rest(name, got, rest, rank):
    """`got`, a resumed pass, is `rest`, what a fresh sampler's epoch has after the consumed items."""
    if name == "tokens":
        # A resumed token pass plans the rest of the interrupted window again (documented): the
        # same samples, each once, possibly cut into other micro-batches.
        assert sorted(i for b in got for i in b) == sorted(i for b in rest for i in b)
        return
    pad = padding_slots(name, rank)
    if pad:
        # The resumed pass pads from the start of the rest of the epoch: the real indices are the same.
        assert len(got) == len(rest)
        assert got[:len(rest) - pad] == rest[:len(rest) - pad]
        return
    assert got == rest


def test_the_release_files_are_all_there():
    names = sorted(p.name for p in DATA.iterdir())
    expected = sorted([f"{n}.state.json" for n in FRESH] + [f"{n}.pkl" for n in FRESH] + FILES
                      + [f"{n}.{kind}" for n in ("shards", "sharded", "streams") for kind in ("state.json", "pkl")]
                      + ["loader_distributed_feistel.state.json", "loader_batch_feistel.state.json"])
    assert names == expected


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("name", sorted(FRESH))
def test_a_0_2_state_dict_resumes_with_the_rest_of_the_epoch(name, rank):
    state = read_json(f"{name}.state")
    assert (state["format"], state["epoch"]) == (1, EPOCH)
    expected = epoch_of(FRESH[name](rank))
    resumed = FRESH[name](rank)
    resumed.load_state_dict(state)
    assert resumed.epoch == EPOCH
    assert resumed.state_dict() == state  # a state is what load_state_dict takes back
    assert_rest(name, list(resumed), expected[CONSUMED[name]:], rank)
    assert list(resumed) == expected  # the pass after it is the whole epoch again


@pytest.mark.parametrize("name", sorted(FRESH))
def test_a_0_2_pickle_of_a_mid_epoch_sampler_resumes(name):
    old = load(name)
    assert type(old) is type(FRESH[name](0))
    assert old.epoch == EPOCH
    expected = epoch_of(FRESH[name](0))
    assert len(old) == len(_resumed(name))
    assert_rest(name, list(old), expected[CONSUMED[name]:], 0)
    assert epoch_of(old, EPOCH + 1) == epoch_of(FRESH[name](0), EPOCH + 1)


@pytest.mark.parametrize("name", sorted(FRESH))
def test_pickles_made_now_name_what_0_2_named(name):
    from test_release_compat import pickled_globals

    now = pickled_globals(pickle.dumps(_resumed(name), protocol=4))
    assert now == pickled_globals((DATA / f"{name}.pkl").read_bytes())


def _resumed(name):
    s = FRESH[name](0)
    s.load_state_dict(read_json(f"{name}.state"))
    return s


@pytest.mark.parametrize("name,size", [("distributed_feistel", 53), ("batch_feistel", 97)])
def test_a_0_2_loader_state_resumes_through_the_loader(name, size):
    state = read_json(f"loader_{name}.state")
    sampler = FRESH[name](0)
    kind = {"sampler": sampler, "batch_size": 4} if name.startswith("distributed") else {"batch_sampler": sampler}
    loader = DataLoader(range(size), collate_fn=list, **kind)
    loader.load_state_dict(state)
    loader.set_epoch(EPOCH)
    got = [i for b in loader for i in (b if isinstance(b[0], int) else b)]
    fresh = epoch_of(FRESH[name](0))
    if name.startswith("distributed"):
        rest = fresh[3 * 4:]
        assert got[:len(rest) - padding_slots(name, 0)] == rest[:len(rest) - padding_slots(name, 0)]
    else:
        assert got == [i for b in fresh[4:] for i in b]


def shard_streams(rank, num_workers=SHARD_WORKERS):
    stream = ShardStream(SHARD_SIZES, 2, rank, seed=4, tail="uneven")
    stream.set_epoch(EPOCH)
    return [list(stream.worker_samples(w, num_workers)) for w in range(num_workers)]


def test_a_0_2_shard_state_and_pickle_resume_every_worker_with_its_unread_samples():
    skip = SHARD_BATCHES // SHARD_WORKERS * SHARD_BATCH_SIZE  # 2 batches of 2 from each worker
    for rank in range(2):
        full = shard_streams(rank)
        resumed = ShardStream(SHARD_SIZES, 2, rank, seed=4, tail="uneven")
        resumed.load_state_dict(read_json("shards.state"))
        assert [list(resumed.worker_samples(w, 2)) for w in range(2)] == [w[skip:] for w in full]
    old = load("shards")
    assert [list(old.worker_samples(w, 2)) for w in range(2)] == [w[skip:] for w in shard_streams(0)]


def sharded(rank):
    return ShardedDataset(FILES, num_replicas=2, rank=rank, seed=6, tail="uneven", cache=False, threads=1)


def test_a_0_2_sharded_state_and_pickle_resume(monkeypatch):
    monkeypatch.chdir(DATA)  # the 0.2 files name their shards relative to this folder
    skip = SHARD_BATCHES // SHARD_WORKERS * SHARD_BATCH_SIZE
    for rank in range(2):
        fresh = sharded(rank)
        fresh.set_epoch(EPOCH)
        full = [[fresh.read(s.shard, s.offset) for s in fresh.stream.worker_samples(w, 2)] for w in range(2)]
        resumed = sharded(rank)
        resumed.load_state_dict(read_json("sharded.state"))
        got = [[resumed.read(s.shard, s.offset) for s in resumed.stream.worker_samples(w, 2)] for w in range(2)]
        assert got == [w[skip:] for w in full]
        if rank == 0:
            old = load("sharded")
            assert old.epoch == EPOCH
            assert [[old.read(s.shard, s.offset) for s in old.stream.worker_samples(w, 2)] for w in range(2)] == got


def stream_dataset():
    return StreamDataset(FILES, num_replicas=1, rank=0, micro_batch=3, seed=8)


def records(items):
    return [[(r.shard, r.index) for r in batch.data] for batch in items]


def test_a_0_2_stream_state_and_pickle_resume(monkeypatch):
    monkeypatch.chdir(DATA)
    fresh = iter(stream_dataset())
    expected = records([next(fresh) for _ in range(STREAM_ITEMS + 4)])[STREAM_ITEMS:]
    saved = read_json("streams.state")
    loader = DataLoader(stream_dataset(), batch_size=None)
    loader.load_state_dict({"format": 1, "sampler": "StreamDataset", "state": saved["job"]})
    it = iter(loader)
    assert [[(r.shard, r.index) for r in next(it)] for _ in range(4)] == expected
    it = iter(DataLoader(load("streams"), batch_size=None))
    assert [[(r.shard, r.index) for r in next(it)] for _ in range(4)] == expected
    resumed = stream_dataset()  # iterated directly, without a loader (0.2 applied a loaded state only through one)
    resumed.load_state_dict(saved["job"])
    it = iter(resumed)
    assert records([next(it) for _ in range(4)]) == expected
    it = iter(load("streams"))
    assert records([next(it) for _ in range(4)]) == expected
    part = stream_dataset()
    part.load_state_dict(saved["loader"]["state"])  # 0.2's part of a job of one rank, taken back on its own
    it = iter(part)
    assert records([next(it) for _ in range(4)]) == expected
