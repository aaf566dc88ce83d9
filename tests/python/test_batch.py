# Tests of distsampler.torch.DistributedBatchSampler: layout, tails, DataLoader use, NumPy path, state, errors.
# SPDX-License-Identifier: MIT
import itertools
import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import distsampler
from distsampler.torch import DistributedBatchSampler, DistributedSampler


def ranks(n, w, micro, **kw):
    return [DistributedBatchSampler(range(n), micro, w, r, **kw) for r in range(w)]


def test_unshuffled_layout_is_megatrons():
    # G = 2 x 2 x 2 = 8: step s, round k, rank r reads positions s*8 + (k*2 + r)*2 + e.
    b0, b1 = ranks(18, 2, 2, accumulation_steps=2, shuffle=False)
    assert list(b0) == [[0, 1], [4, 5], [8, 9], [12, 13]]
    assert list(b1) == [[2, 3], [6, 7], [10, 11], [14, 15]]
    assert (len(b0), b0.num_steps, b0.accumulation_steps, b0.global_batch_size) == (4, 2, 2, 8)


def test_global_batch_gives_the_accumulation():
    b = DistributedBatchSampler(range(100), 3, 2, 0, global_batch_size=12)
    assert (b.accumulation_steps, b.global_batch_size, b.num_steps) == (2, 12, 8)


@pytest.mark.parametrize("tail", ["drop", "pad", "uneven"])
def test_tails_partition_the_epoch(tail):
    n = 103
    got = [list(b) for b in ranks(n, 4, 5, accumulation_steps=2, seed=3, tail=tail)]
    steps = {len(x) for x in got}
    assert len(steps) == 1  # every rank runs the same number of micro-batches
    flat = [i for x in got for mb in x for i in mb]
    if tail == "drop":
        assert len(flat) == 80 and len(set(flat)) == 80
    elif tail == "pad":
        assert len(flat) == 120 and set(flat) == set(range(n))
    else:
        assert sorted(flat) == list(range(n))


@pytest.mark.parametrize("tail", ["drop", "pad", "uneven"])
def test_numpy_path_equals_lists(tail):
    lists = list(DistributedBatchSampler(range(1000), 16, 4, 1, seed=9, tail=tail))
    arrays = list(DistributedBatchSampler(range(1000), 16, 4, 1, seed=9, tail=tail, as_numpy=True))
    assert len(lists) == (15 if tail == "drop" else 16)
    assert all(isinstance(a, np.ndarray) and a.dtype == np.int64 for a in arrays)
    assert [a.tolist() for a in arrays] == lists


@pytest.mark.processes
def test_as_dataloader_batch_sampler_with_workers():
    data = torch.arange(500) * 10
    expected = [torch.tensor(mb) * 10 for mb in DistributedBatchSampler(range(500), 8, 2, 1, seed=4)]
    loader = DataLoader(data, batch_sampler=DistributedBatchSampler(data, 8, 2, 1, seed=4), num_workers=2)
    got = list(loader)
    assert len(got) == len(expected) == 31
    assert all(torch.equal(a, b) for a, b in zip(got, expected))


def test_same_global_batches_on_any_factoring():
    # 4 ranks x 1 and 2 ranks x 2 (same micro-batch) read the same samples per step.
    def step_sets(w, k):
        per = [list(b) for b in ranks(96, w, 3, accumulation_steps=k, seed=1)]
        return [sorted(i for r in per for mb in r[s * k:(s + 1) * k] for i in mb) for s in range(len(per[0]) // k)]

    assert step_sets(4, 1) == step_sets(2, 2) == step_sets(1, 4)


@pytest.mark.parametrize("tail", ["drop", "pad", "uneven"])
def test_resume_at_a_step_boundary_yields_exactly_the_rest(tail):
    for k in (0, 2, 4, 8, 10):  # 2 micro-batches per step
        b = DistributedBatchSampler(range(101), 5, 2, 1, accumulation_steps=2, seed=6, tail=tail)
        b.set_epoch(2)
        full = list(b)
        it = iter(b)
        taken = list(itertools.islice(it, k))
        assert taken == full[:k]
        sd = b.state_dict(batches=k)  # the loop received k micro-batches
        assert sd["epoch"] == 2
        fresh = DistributedBatchSampler(range(101), 5, 2, 1, accumulation_steps=2, seed=6, tail=tail)
        fresh.load_state_dict(sd)
        assert len(fresh) == len(full) - k
        assert list(fresh) == full[k:], (tail, k)


def test_resume_inside_a_step_reads_every_sample_once_over_both_runs():
    def make(rank):
        return DistributedBatchSampler(range(101), 5, 2, rank, accumulation_steps=2, seed=6, tail="uneven")

    first, states = [], []
    for r in range(2):
        b = make(r)
        it = iter(b)
        first += [i for mb in itertools.islice(it, 3) for i in mb]  # a step and a half
        states.append(b.state_dict(batches=3))
    assert states[0] == states[1]
    rest = []
    for r in range(2):
        b = make(r)
        b.load_state_dict(states[0])
        rest += [i for mb in b for i in mb]
    assert sorted(first + rest) == list(range(101))


@pytest.mark.processes
def test_resumed_batch_sampler_through_a_dataloader_with_workers_yields_the_rest():
    # DataLoader with workers calls iter() twice and drops the first iterator unused.
    b = DistributedBatchSampler(range(300), 4, 2, 1, seed=5)
    full = list(b)
    it = iter(b)
    for _ in range(6):
        next(it)
    c = DistributedBatchSampler(range(300), 4, 2, 1, seed=5)
    c.load_state_dict(b.state_dict(batches=6))
    got = [batch.tolist() for batch in DataLoader(range(300), batch_sampler=c, num_workers=2)]
    assert got == full[6:]


def test_pickle_keeps_a_loaded_state():
    b = DistributedBatchSampler(range(64), 4, 1, 0, seed=2)
    it = iter(b)
    next(it)
    c = DistributedBatchSampler(range(64), 4, 1, 0, seed=2)
    c.load_state_dict(b.state_dict(batches=1))
    d = pickle.loads(pickle.dumps(c))
    assert list(d) == list(it)


def test_mismatched_state_raises():
    sd = DistributedSampler(range(64), 1, 0, seed=2).state_dict()
    b = DistributedBatchSampler(range(64), 4, 1, 0, seed=2, tail="pad")
    expected = r"^DistributedBatchSampler: sampler family differs \(state distributed, sampler batch\)$"
    with pytest.raises(distsampler.StateError, match=expected):
        b.load_state_dict(sd)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(micro_batch_size=0), r"micro_batch_size is 0"),
        (dict(micro_batch_size=4, accumulation_steps=0), r"accumulation_steps is 0 \(expected at least 1\)"),
        (dict(micro_batch_size=4, global_batch_size=10),
         r"global_batch_size 10 is not a multiple of micro_batch_size 4 x world_size 2 "
         r"\(expected a positive multiple of 8\)"),
        (dict(micro_batch_size=4, global_batch_size=0), r"global_batch_size is 0"),
        (dict(micro_batch_size=4, accumulation_steps=2, global_batch_size=16),
         r"accumulation_steps 2 and global_batch_size 16 were both given"),
        (dict(micro_batch_size=4, tail="nope"), r"tail 'nope' is unknown"),
    ],
)
def test_configuration_errors(kwargs, message):
    with pytest.raises(distsampler.ConfigError, match=message):
        DistributedBatchSampler(range(64), num_replicas=2, rank=0, **kwargs)
