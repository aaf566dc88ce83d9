# Pickles and state_dicts written by release 0.1.0 (data/release_0_1, made by data/make_release_0_1.py) load and work.
# SPDX-License-Identifier: MIT
import pathlib
import pickle
import pickletools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

import distsampler.torch
from distsampler.torch import (
    DistributedBatchSampler,
    DistributedSampler,
    DistributedWeightedRandomSampler,
    EmptyToNone,
    MixtureBatchSampler,
    ScheduledShard,
    ShardSample,
    ShardStream,
    TokenBatchSampler,
)

DATA = pathlib.Path(__file__).resolve().parent / "data" / "release_0_1"
EPOCH = 3
SHARD_SIZES = [7, 3, 9, 4, 6, 5]
TOKEN_LENGTHS = np.array([(i * 37) % 61 + 3 for i in range(150)], dtype=np.uint32)
WEIGHTS = [1.0, 0.0, 3.0, 2.0, 5.0, 1.5, 0.5, 4.0]

# The configurations make_release_0_1.py used; its files are of rank 0 of 2, and a state of
# rank 0 also resumes rank 1 (it records the position of the epoch's global order).
FRESH = {
    "distributed_feistel": lambda rank: DistributedSampler(range(53), 2, rank, seed=11),
    "distributed_torch": lambda rank: DistributedSampler(range(53), 2, rank, seed=11, order="torch",
                                                         torch_generation="v1"),
    "batch_feistel": lambda rank: DistributedBatchSampler(range(97), 3, 2, rank, accumulation_steps=2, seed=5),
    "batch_torch": lambda rank: DistributedBatchSampler(range(97), 3, 2, rank, seed=5, tail="pad", order="torch",
                                                        torch_generation="v1"),
    "tokens": lambda rank: TokenBatchSampler(TOKEN_LENGTHS, 200, 2, rank, seed=7, window=64),
    "mixture": lambda rank: MixtureBatchSampler([40, 25, 60], [0.5, 0.2, 0.3], 4, 2, rank, seed=9, end="steps",
                                                end_count=12),
    "weighted": lambda rank: DistributedWeightedRandomSampler(WEIGHTS, 40, num_replicas=2, rank=rank, seed=13),
    "weighted_without_replacement": lambda rank: DistributedWeightedRandomSampler(WEIGHTS, 6, replacement=False,
                                                                                  num_replicas=2, rank=rank, seed=13),
}
# Items of the iteration make_release_0_1.py consumed before each state_dict().
CONSUMED = {"distributed_feistel": 10, "distributed_torch": 10, "batch_feistel": 4, "batch_torch": 3, "tokens": 4,
            "mixture": 7, "weighted": 9, "weighted_without_replacement": 1}
OTHER_FILES = ["shards", "shards.state", "shards_pending", "batch_pending", "shard_sample", "scheduled_shard",
               "empty_to_none", "functions"]


def load(name):
    with open(DATA / f"{name}.pkl", "rb") as f:
        return pickle.load(f)


def epoch_of(sampler, epoch=EPOCH):
    sampler.set_epoch(epoch)
    return list(sampler)


def padding_slots(name, rank, epoch=EPOCH):
    """Wrap-around duplicates at the end of a fresh DistributedSampler's epoch (tail="pad")."""
    if not name.startswith("distributed_"):
        return 0
    fresh = FRESH[name](rank)
    fresh.set_epoch(epoch)
    return sum(fresh.is_padding(i) for i in range(len(fresh)))


def assert_rest(name, got, rest, rank, epoch=EPOCH):
    """`got`, a resumed pass, is `rest`, what the uninterrupted epoch had left."""
    if name == "tokens":
        # A resumed token pass plans the rest of the interrupted window again (documented):
        # the same samples, each once, possibly cut into other micro-batches.
        assert sorted(i for b in got for i in b) == sorted(i for b in rest for i in b)
        assert len({i for b in got for i in b}) == sum(len(b) for b in got)
        return
    pad = padding_slots(name, rank, epoch)
    if pad:
        # The resumed pass pads from the start of the rest of the epoch, not of the epoch:
        # the real indices are the same, the duplicates at the end may differ.
        real = len(rest) - pad
        assert len(got) == len(rest)
        assert got[:real] == rest[:real]
        whole = set(epoch_of(FRESH[name](0), epoch)) | set(epoch_of(FRESH[name](1), epoch))
        assert set(got[real:]) <= whole
        return
    assert got == rest


def shard_streams(rank, num_workers=2, epoch=EPOCH):
    stream = ShardStream(SHARD_SIZES, 2, rank, seed=4, tail="uneven")
    stream.set_epoch(epoch)
    return [list(stream.worker_samples(w, num_workers)) for w in range(num_workers)]


def test_every_file_is_a_protocol_4_pickle_naming_the_package_path():
    assert sorted(p.name for p in DATA.glob("*.pkl")) == sorted(
        [f"{n}.pkl" for n in FRESH] + [f"{n}.state.pkl" for n in FRESH] + [f"{n}.pkl" for n in OTHER_FILES])
    for name in list(FRESH) + ["shards", "shards_pending", "batch_pending", "shard_sample", "empty_to_none"]:
        data = (DATA / f"{name}.pkl").read_bytes()
        assert data[:2] == b"\x80\x04", name
        assert b"\x8c\x11distsampler.torch\x94" in data, name  # the module path 0.1 recorded


@pytest.mark.parametrize("name", sorted(FRESH))
def test_an_unpickled_sampler_iterates_as_a_fresh_one(name):
    old = load(name)
    assert type(old) is type(FRESH[name](0))
    assert old.epoch == EPOCH
    expected = epoch_of(FRESH[name](0))
    assert len(expected) > CONSUMED[name]
    assert len(old) == len(expected)
    assert list(old) == expected
    assert epoch_of(old, EPOCH + 1) == epoch_of(FRESH[name](0), EPOCH + 1)


@pytest.mark.parametrize("name", sorted(FRESH))
def test_an_unpickled_sampler_checkpoints_as_a_fresh_one(name):
    old = load(name)
    old.set_epoch(EPOCH + 1)
    it = iter(old)
    next(it)
    next(it)
    resumed = FRESH[name](1)
    # Iterated by hand, the loop received the 2 items it took: said explicitly (a bare state_dict()
    # mid-epoch raises, since a DataLoader with workers would have prefetched).
    received = {"samples": 2} if name.startswith(("distributed", "weighted")) else {"batches": 2}
    resumed.load_state_dict(old.state_dict(**received))
    assert_rest(name, list(resumed), epoch_of(FRESH[name](1), EPOCH + 1)[2:], 1, EPOCH + 1)


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("name", sorted(FRESH))
def test_a_release_state_dict_resumes_with_the_rest_of_the_epoch(name, rank):
    state = load(f"{name}.state")
    assert (state["format"], state["epoch"]) == (1, EPOCH)
    expected = epoch_of(FRESH[name](rank))
    resumed = FRESH[name](rank)
    resumed.load_state_dict(state)
    assert resumed.epoch == EPOCH
    assert_rest(name, list(resumed), expected[CONSUMED[name]:], rank)
    assert list(resumed) == expected  # the pass after the resumed one is the whole epoch again


def test_a_release_state_dict_is_refused_by_another_configuration():
    other = DistributedSampler(range(54), 2, 0, seed=11)
    with pytest.raises(distsampler.StateError):
        other.load_state_dict(load("distributed_feistel.state"))


def test_an_unpickled_batch_sampler_keeps_its_loaded_state():
    old = load("batch_pending")
    assert list(old) == epoch_of(FRESH["batch_feistel"](0))[CONSUMED["batch_feistel"]:]


def test_an_unpickled_shard_stream_streams_as_a_fresh_one():
    old = load("shards")
    assert type(old) is ShardStream and old.epoch == EPOCH
    assert [list(old.worker_samples(w, 2)) for w in range(2)] == shard_streams(0)
    assert list(old) == shard_streams(0, num_workers=1)[0]
    assert all(type(s) is ShardSample for s in old)
    fresh = ShardStream(SHARD_SIZES, 2, 0, seed=4, tail="uneven")
    fresh.set_epoch(EPOCH)
    assert old.shard_schedule(1, 2) == fresh.shard_schedule(1, 2)


@pytest.mark.parametrize("rank", [0, 1])
def test_a_release_shard_state_resumes_every_worker_with_its_unread_samples(rank):
    # Saved after a DataLoader of 2 workers (batch_size 2) yielded 4 batches: 2 of each worker.
    full = shard_streams(rank)
    resumed = ShardStream(SHARD_SIZES, 2, rank, seed=4, tail="uneven")
    resumed.load_state_dict(load("shards.state"))
    assert [list(resumed.worker_samples(w, 2)) for w in range(2)] == [full[w][4:] for w in range(2)]


def test_a_release_shard_state_resumes_on_another_worker_count():
    unread = sorted(s.index for rank in range(2) for w in shard_streams(rank) for s in w[4:])
    got = []
    for rank in range(2):
        one = ShardStream(SHARD_SIZES, 2, rank, seed=4, tail="uneven")
        one.load_state_dict(load("shards.state"))
        got += [s.index for s in one.worker_samples(0, 1)]
    assert sorted(got) == unread  # every unread sample once, none of the read ones
    assert len(unread) == sum(SHARD_SIZES) - 2 * 2 * 4


def test_an_unpickled_shard_stream_keeps_its_loaded_state():
    old = load("shards_pending")
    full = shard_streams(0)
    assert [list(old.worker_samples(w, 2)) for w in range(2)] == [full[w][4:] for w in range(2)]


class _Indices(IterableDataset):
    """The indices of a shard stream, as a DataLoader's dataset."""

    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        return (s.index for s in self.stream)


@pytest.mark.processes
def test_a_release_shard_stream_reaches_spawned_dataloader_workers():
    loader = DataLoader(_Indices(load("shards_pending")), batch_size=2, num_workers=2,
                        multiprocessing_context="spawn")
    got = [b.tolist() for b in loader]
    full = [[s.index for s in w] for w in shard_streams(0)]
    rest = [full[0][4:], full[1][4:]]
    # The DataLoader takes the workers' batches in turn.
    expected = []
    batches = [[r[i:i + 2] for i in range(0, len(r), 2)] for r in rest]
    for j in range(max(len(b) for b in batches)):
        expected += [b[j] for b in batches if j < len(b)]
    assert got == expected


def test_release_namedtuples_and_collate_wrapper_load():
    sample = load("shard_sample")
    assert type(sample) is ShardSample and sample == ShardSample(shard=2, offset=5, index=12, is_padding=False)
    scheduled = load("scheduled_shard")
    assert type(scheduled) is ScheduledShard and scheduled == ScheduledShard(4, 0, 6, 3)
    collate = load("empty_to_none")
    assert type(collate) is EmptyToNone and collate.collate_fn is None
    assert collate([]) is None
    assert torch.equal(collate([1, 2]), torch.tensor([1, 2]))


def test_release_function_references_load():
    assert load("functions") == [distsampler.torch.guard, distsampler.torch.default_torch_generation]


def pickled_globals(data):
    """The (module, name) pairs a pickle refers to: protocol 4's STACK_GLOBAL takes the two
    strings before it, each written out or fetched from the memo."""
    found, strings, memo, last = [], [], [], None
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            last = arg
            strings.append(arg)
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            last = memo[int(arg)]
            if isinstance(last, str):
                strings.append(last)
        elif op.name == "MEMOIZE":
            memo.append(last)
        else:
            last = None
            if op.name == "STACK_GLOBAL":
                found.append((strings[-2], strings[-1]))
            elif op.name == "GLOBAL":
                found.append(tuple(arg.split(" ", 1)))
    return sorted(set(found))


@pytest.mark.parametrize("name", sorted(FRESH))
def test_pickles_made_now_name_what_the_release_named(name):
    sampler = FRESH[name](0)
    sampler.set_epoch(EPOCH)
    now = pickled_globals(pickle.dumps(sampler, protocol=4))
    assert now == pickled_globals((DATA / f"{name}.pkl").read_bytes())
    assert (distsampler.torch.__name__, type(sampler).__name__) in now
