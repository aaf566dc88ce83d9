# Tests of distsampler.torch.ShardStream inside an IterableDataset read by DataLoader workers, with resume.
# SPDX-License-Identifier: MIT
import pickle

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

import distsampler
from distsampler import _core
from distsampler.torch import ScheduledShard, ShardSample, ShardStream

SIZES = [37, 5, 120, 64, 1, 80, 33]  # 340 samples in 7 shard files
N = sum(SIZES)


class Sharded(IterableDataset):
    """Reads (index, is_padding) of each sample its stream names; a real dataset would open the shard files."""

    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        for s in self.stream:
            yield torch.tensor([s.index, int(s.is_padding)])


def read(stream, num_workers, batch_size=4, limit=None):
    loader = DataLoader(Sharded(stream), batch_size=batch_size, num_workers=num_workers)
    out = []
    for j, batch in enumerate(loader):
        out += [tuple(row) for row in batch.tolist()]
        if limit is not None and j + 1 == limit:
            break
    return out


@pytest.mark.processes
@pytest.mark.parametrize("tail", ["pad", "uneven"])
def test_ranks_and_workers_are_disjoint_and_covering(tail):
    got = []
    for rank in range(3):
        stream = ShardStream(SIZES, 3, rank, seed=4, tail=tail)
        sizes = [len(list(stream.worker_samples(w, 2))) for w in range(2)]
        assert max(sizes) - min(sizes) <= (1 if tail == "uneven" else 0)
        got += read(stream, num_workers=2)
    real = sorted(i for i, pad in got if not pad)
    assert real == list(range(N))
    if tail == "pad":
        assert len(got) == 6 * 57  # ceil(340 / 6) per (rank, worker) slot


def test_samples_name_their_shard_and_offset():
    starts = [sum(SIZES[:k]) for k in range(len(SIZES))]
    stream = ShardStream(SIZES, 1, 0, seed=1)
    samples = list(stream)
    assert all(isinstance(s, ShardSample) for s in samples)
    assert all(starts[s.shard] + s.offset == s.index and s.offset < SIZES[s.shard] for s in samples)
    assert sorted(s.index for s in samples) == list(range(N))


def test_epochs_differ_and_repeat():
    a = ShardStream(SIZES, 2, 1, seed=3)
    first = list(a)
    a.set_epoch(1)
    assert list(a) != first
    a.set_epoch(0)
    assert list(a) == first


@pytest.mark.processes
def test_stop_on_two_ranks_with_two_workers_resume_on_three_ranks_with_one():
    first = []
    states = []
    for rank in range(2):
        stream = ShardStream(SIZES, 2, rank, seed=6, tail="uneven")
        first += read(stream, num_workers=2, batch_size=4, limit=7)
        states.append(stream.state_dict(batches=7, batch_size=4, num_workers=2))
    assert states[0] == states[1]
    rest = []
    for rank in range(3):
        stream = pickle.loads(pickle.dumps(ShardStream(SIZES, 3, rank, seed=6, tail="uneven")))
        stream.load_state_dict(states[0])
        rest += read(stream, num_workers=1)
    assert len(first) == 2 * 7 * 4
    assert sorted(i for i, _ in first + rest) == list(range(N))


def test_a_state_of_workers_blocks_apart_is_compact_and_resumes_exactly_once():
    # 40 shards of 500 = 20000 samples, 2 ranks x 4 workers (8 consumers), blocks of 64:
    # after 7 batches of 1024 taken in turn, workers 0..2 of each rank (consumers 0..5) read
    # 2048 samples, 32 blocks, and worker 3 read 1024, 16 blocks. Rounds 0..15 of 8 blocks
    # are done ([0, 8192)); round 16's first 6 blocks continue the prefix (to 8576); rounds
    # 17..31 hold 6 blocks each from 8704 + 512 j: one strided entry (version 4) where one
    # range per round would be 15.
    sizes = [500] * 40
    n = sum(sizes)
    first, states = [], []
    for rank in range(2):
        stream = ShardStream(sizes, 2, rank, seed=9)
        for worker, count in enumerate([2048, 2048, 2048, 1024]):
            samples = stream.worker_samples(worker, 4)
            first += [next(samples) for _ in range(count)]
        states.append(stream.state_dict(batches=7, batch_size=1024, num_workers=4))
    assert states[0] == states[1]
    text = states[0]["state"]
    assert text.startswith("distsampler-state v4 ")
    assert " consumed=8576 strided=8704-9088/512x15 checksum=" in text
    # The state round-trips: a sampler resumed from it, with nothing read yet, saves the same text.
    options = _core.ShardSamplerOptions()
    options.num_workers = 4
    options.seed = 9
    core = _core.make_streaming_shard_sampler(sizes, 0, 2, options)
    core.resume(text)
    assert core.state_per_worker([0, 0, 0, 0]) == text
    rest = []
    for rank in range(3):
        stream = ShardStream(sizes, 3, rank, seed=9)
        stream.load_state_dict(states[0])
        rest += list(stream.worker_samples(0, 1))
    real = sorted(s.index for s in first + rest if not s.is_padding)
    assert real == list(range(n))


def test_errors():
    with pytest.raises(distsampler.ConfigError, match=r"tail 'x' is unknown"):
        ShardStream(SIZES, 1, 0, tail="x")
    with pytest.raises(distsampler.ConfigError, match=r"shard size -1 is out of range"):
        ShardStream([3, -1], 1, 0)
    stream = ShardStream(SIZES, 2, 0, seed=6)
    with pytest.raises(distsampler.ConfigError, match=r"batch_size is 0 \(expected at least 1\)"):
        stream.state_dict(batches=1, batch_size=0, num_workers=1)
    other = ShardStream(SIZES[:-1], 2, 0, seed=6)
    expected = (r"^StreamingShardSampler::(load_state|resume): dataset_size differs \(state 340, sampler 307\); "
                r"shard sizes differ \(state layout 0x")
    with pytest.raises(distsampler.StateError, match=expected):
        other.load_state_dict(stream.state_dict(batches=1, batch_size=2, num_workers=1))


def schedule_by_walk(streams):
    """(shard, first slot, last slot, records) per shard from walking the given worker streams."""
    seen = {}
    for samples in streams:
        for slot, s in enumerate(samples):
            first, last, count = seen.get(s.shard, (slot, slot, 0))
            seen[s.shard] = (min(first, slot), max(last, slot), count + 1)
    return sorted(((shard, f, l, c) for shard, (f, l, c) in seen.items()), key=lambda e: (e[1], e[0]))


def test_shard_schedule_matches_the_streams_fresh_and_resumed():
    big = [37 * (i % 5) + 3 for i in range(40)]  # 40 shards of 3..151 records
    stream = ShardStream(big, 3, 1, seed=11)
    stream.set_epoch(2)
    streams = [list(stream.worker_samples(w, 2)) for w in range(2)]
    for w in range(2):
        got = stream.shard_schedule(w, 2)
        assert all(isinstance(e, ScheduledShard) for e in got)
        assert [tuple(e) for e in got] == schedule_by_walk([streams[w]])
    assert [tuple(e) for e in stream.rank_shard_schedule(2)] == schedule_by_walk(streams)
    # After a loaded state the schedule covers the rest of the epoch only.
    state = stream.state_dict(batches=5, batch_size=3, num_workers=2)
    resumed = ShardStream(big, 2, 0, seed=11)
    resumed.load_state_dict(state)
    rest = list(resumed.worker_samples(0, 3))
    assert [tuple(e) for e in resumed.shard_schedule(0, 3)] == schedule_by_walk([rest])
    assert sum(e.samples for e in resumed.shard_schedule(0, 3)) == len(rest)
    with pytest.raises(distsampler.ConfigError, match=r"worker 3 is out of range for num_workers 3 \(expected 0..2\)"):
        resumed.shard_schedule(3, 3)
