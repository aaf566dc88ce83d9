# Tests that load_state_dict on the same world, batch shape and worker count continues the run that never stopped.
# SPDX-License-Identifier: MIT
import itertools
import random

import pytest

from distsampler._core import parse_state
from distsampler.torch import (DistributedBatchSampler, DistributedSampler, DistributedWeightedRandomSampler,
                               MixtureBatchSampler, ShardStream, TokenBatchSampler)


def rest_after(make, state_dict):
    """What a fresh sampler from ``make()`` yields after loading ``state_dict``."""
    fresh = make()
    fresh.load_state_dict(state_dict)
    return list(fresh)


@pytest.mark.parametrize("order", ["feistel", "torch"])
@pytest.mark.parametrize("tail", ["pad", "drop", "uneven"])
def test_distributed_sampler_resumes_as_the_uninterrupted_run_padding_included(order, tail):
    # 669 over 2 ranks (pad: rank 1's last slot repeats the epoch's first index), 100 over 3.
    for n, replicas in ((669, 2), (100, 3), (7, 4)):
        for rank in range(replicas):
            def make():
                s = DistributedSampler(range(n), replicas, rank, seed=21, order=order, tail=tail)
                s.set_epoch(2)
                return s
            whole = list(make())
            for stop in sorted({0, 1, 5, 17, len(whole) - 1, len(whole)}):
                if stop < 0 or stop > len(whole):
                    continue
                s = make()
                list(itertools.islice(iter(s), stop))
                assert rest_after(make, s.state_dict(samples=stop)) == whole[stop:], (n, rank, stop)


@pytest.mark.parametrize("tail", ["drop", "pad", "uneven"])
def test_batch_sampler_resumes_mid_step_as_the_uninterrupted_run(tail):
    # N = 97 (and 120), micro-batch 3, 2 ranks, accumulation 2: G = 12. A stop after 5
    # micro-batches is inside step 2; the resumed pass yields the rest of that step first.
    for n in (97, 120, 10):
        def make(rank):
            s = DistributedBatchSampler(range(n), 3, 2, rank, accumulation_steps=2, seed=8, tail=tail)
            s.set_epoch(1)
            return s
        wholes = [list(make(rank)) for rank in range(2)]
        for rank in range(2):
            whole = wholes[rank]
            for stop in range(len(whole) + 1):
                s = make(rank)
                list(itertools.islice(iter(s), stop))
                state = s.state_dict(batches=stop)
                after = rest_after(lambda: make(rank), state)
                if parse_state(state["state"])["consumed"] == n and stop < len(whole):
                    # Only padding (duplicates of what the ranks read) or empty micro-batches
                    # were left: the state records the epoch's end.
                    assert after == []
                    read = {i for w in wholes for b in w[:stop] for i in b}
                    assert all(i in read for b in whole[stop:] for i in b), (n, rank, stop)
                    continue
                assert after == whole[stop:], (n, rank, stop)
    # len() of a pass resumed mid-step counts the micro-batches left.
    s = DistributedBatchSampler(range(97), 3, 2, 0, accumulation_steps=2, seed=8, tail=tail)
    s.load_state_dict(DistributedBatchSampler(range(97), 3, 2, 0, accumulation_steps=2, seed=8,
                                              tail=tail).state_dict(batches=1))
    assert len(s) == {"drop": 15, "pad": 17, "uneven": 17}[tail]


def test_batch_sampler_reads_every_sample_of_a_drop_epoch_after_a_mid_step_stop():
    # The reported loss: 97 samples, G = 12, a stop after 2 steps + 1 micro-batch (30
    # consumed) read 10 more micro-batches per rank instead of 11.
    read = []
    for rank in range(2):
        def make():
            return DistributedBatchSampler(range(97), 3, 2, rank, accumulation_steps=2, seed=5, tail="drop")
        whole = list(make())
        read += [i for b in whole[:5] for i in b]
        after = rest_after(make, make().state_dict(batches=5))
        assert len(after) == 11
        read += [i for b in after for i in b]
    assert len(read) == 96 and len(set(read)) == 96


@pytest.mark.parametrize("tail", ["drop", "pad"])
def test_mixture_sampler_resumes_mid_step_as_the_uninterrupted_run(tail):
    for rank in range(2):
        def make():
            return MixtureBatchSampler([range(40), range(23)], [2.0, 1.0], 2, 2, rank, accumulation_steps=3, seed=4,
                                       tail=tail)
        whole = list(make())
        for stop in range(len(whole) + 1):
            assert rest_after(make, make().state_dict(batches=stop)) == whole[stop:], (rank, stop)


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("tail", ["pad", "drop", "uneven"])
def test_weighted_sampler_resumes_as_the_uninterrupted_run(replacement, tail):
    weights = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
    for rank in range(3):
        def make():
            return DistributedWeightedRandomSampler(weights, len(weights), replacement, 3, rank, seed=11, tail=tail)
        whole = list(make())
        for stop in range(len(whole) + 1):
            s = make()
            list(itertools.islice(iter(s), stop))
            assert rest_after(make, s.state_dict(samples=stop)) == whole[stop:], (rank, stop)


def test_token_batch_sampler_resumes_at_a_window_start_as_the_uninterrupted_run():
    # Window 1: every step boundary is a window's start, where the resumed plan is the
    # uninterrupted one (a stop inside a window re-plans the rest of that window).
    rng = random.Random(3)
    lengths = [rng.randint(1, 50) for _ in range(60)]
    for rank in range(2):
        def make():
            return TokenBatchSampler(lengths, 64, 2, rank, accumulation_steps=2, window=1, seed=9)
        whole = list(make())
        for stop in range(0, len(whole) + 1, 2):
            assert rest_after(make, make().state_dict(batches=stop)) == whole[stop:], (rank, stop)


@pytest.mark.parametrize("tail", ["pad", "drop", "uneven"])
def test_shard_stream_continues_every_real_sample_after_an_equal_stop(tail):
    sizes = [13, 0, 29, 7, 41, 5]
    replicas = 3

    def make(rank):
        return ShardStream(sizes, replicas, rank, seed=6, tail=tail, canonical_streams=1, max_open_shards=1,
                           run_length=1)
    full_rounds = sum(sizes) // replicas
    for rank in range(replicas):
        whole = list(make(rank))
        for stop in (0, 1, 7, full_rounds):
            resumed = make(rank)
            resumed.load_state_dict(make(rank).state_dict(stop, 1, 0))
            after = list(resumed)
            assert len(after) == len(whole) - stop
            for got, want in zip(after, whole[stop:]):
                assert got[3] == want[3]  # the padding flag
                if not want[3]:  # a pad tail's duplicates repeat the resumed segment's last samples
                    assert got == want, (rank, stop)
