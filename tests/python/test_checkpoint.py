# Tests of state_dict / load_state_dict (torchdata StatefulDataLoader protocol) for DistributedSampler.
# SPDX-License-Identifier: MIT
import itertools
import re

import pytest

import distsampler
from distsampler.torch import DistributedSampler


def make(rank=0, replicas=3, n=100, **kw):
    kw.setdefault("seed", 17)
    return DistributedSampler(range(n), replicas, rank, **kw)


@pytest.mark.parametrize("order", ["feistel", "torch"])
@pytest.mark.parametrize("tail", ["pad", "drop", "uneven"])
def test_resume_after_k_yields_exactly_the_rest(order, tail):
    for k in (0, 1, 5, 33, 34):  # 34 = the whole epoch of a rank under pad
        s = make(order=order, tail=tail)
        s.set_epoch(4)
        full = list(s)
        it = iter(s)
        taken = list(itertools.islice(it, k))
        assert taken == full[:k]
        if 0 < k == len(taken):  # handed out, maybe ahead of a loop: only the caller knows what was received
            with pytest.raises(distsampler.ConfigError, match=rf"this rank handed out {k} indices of epoch 4"):
                s.state_dict()
        elif k:  # the iterator ran out: the epoch's end, as before
            assert s.state_dict() == s.state_dict(samples=len(taken))
        sd = s.state_dict(samples=len(taken))
        assert sd["epoch"] == 4
        fresh = make(order=order, tail=tail)
        fresh.load_state_dict(sd)
        assert fresh.epoch == 4
        assert len(fresh) == len(full) - len(taken)
        assert list(fresh) == full[len(taken):]


def test_resume_across_chunk_boundaries():
    n = 50000
    s = make(n=n, replicas=1)
    full = list(s)
    for k in (63, 64, 65, 4159, 4160, 4161, n - 1, n):
        it = iter(s)
        for _ in range(k):
            next(it)
        fresh = make(n=n, replicas=1)
        fresh.load_state_dict(s.state_dict(samples=k))
        assert list(fresh) == full[k:], k


def test_exhausted_iterator_state_yields_nothing_and_next_epoch_starts_fresh():
    s = make()
    list(s)
    sd = s.state_dict()
    fresh = make()
    fresh.load_state_dict(sd)
    assert list(fresh) == []
    fresh.set_epoch(1)
    other = make()
    other.set_epoch(1)
    assert list(fresh) == list(other)


def test_load_applies_once_then_epochs_restart():
    s = make()
    it = iter(s)
    next(it)
    fresh = make()
    fresh.load_state_dict(s.state_dict(samples=1))
    fresh.set_epoch(0)  # the usual loop calls set_epoch(saved epoch) after loading: keeps the state
    rest = list(fresh)
    assert len(rest) == 33
    assert list(fresh) == list(make())  # the next pass is the whole epoch again, as torch


def test_set_epoch_to_another_epoch_discards_loaded_state():
    s = make()
    it = iter(s)
    next(it)
    fresh = make()
    fresh.load_state_dict(s.state_dict(samples=1))
    fresh.set_epoch(2)
    expected = make()
    expected.set_epoch(2)
    assert list(fresh) == list(expected)


def test_state_before_iteration_is_the_epoch_start_and_round_trips():
    s = make()
    s.set_epoch(3)
    sd = s.state_dict()
    assert sd["epoch"] == 3 and "consumed=0 " in sd["state"]
    fresh = make()
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd
    assert list(fresh) == list(s)


def test_state_moves_to_another_world_size():
    n = 101
    epoch_order = []
    olds = [make(r, 4, n, tail="uneven") for r in range(4)]
    iters = [iter(x) for x in olds]
    for it in iters:
        epoch_order += list(itertools.islice(it, 10))
    sd = olds[0].state_dict(samples=10)
    assert all(o.state_dict(samples=10) == sd for o in olds)  # every rank saves the same state
    rest = []
    for r in range(3):
        fresh = make(r, 3, n, tail="uneven")
        fresh.load_state_dict(sd)
        rest += list(fresh)
    assert sorted(epoch_order + rest) == list(range(n))


@pytest.mark.parametrize(
    "mutate,error,message",
    [
        (lambda sd: 5, distsampler.StateError,
         r"expected a dict with keys 'epoch' and 'state' from state_dict\(\), got int"),
        (lambda sd: {"epoch": 0}, distsampler.StateError, r"expected a dict with keys 'epoch' and 'state'"),
        (lambda sd: dict(sd, state=b"x"), distsampler.StateError, r"'state' is a bytes"),
        (lambda sd: dict(sd, epoch=7), distsampler.StateError, r"'epoch' 7 disagrees with the state's epoch 0"),
        (lambda sd: dict(sd, format=2), distsampler.StateError,
         r"'format' 2 is unknown \(expected 1; saved by a newer"),
        (lambda sd: dict(sd, state=re.sub(r"^distsampler-state v\d+", "distsampler-state v9", sd["state"])),
         distsampler.StateError, r"SamplerState::from_text: unsupported version 9 \(expected 1 to 5\)"),
        (lambda sd: dict(sd, state=sd["state"][:30]), distsampler.StateError,
         r'SamplerState::from_text: expected key " dataset_size=" at offset 30'),
    ],
)
def test_corrupt_state_raises_state_error(mutate, error, message):
    s = make()
    with pytest.raises(error, match=message) as info:
        make().load_state_dict(mutate(s.state_dict()))
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "other,message",
    [
        (dict(seed=18), r"^DistributedSampler::resume: seed differs \(state 17, sampler 18\)$"),
        (dict(n=99), r"^DistributedSampler::resume: dataset_size differs \(state 100, sampler 99\)$"),
        (dict(tail="drop"), r"^DistributedSampler::resume: tail differs \(state pad, sampler drop\)$"),
        (dict(order="torch"), r"^DistributedSampler::resume: engine differs \(state feistel/2, sampler torch-v1/1\)$"),
    ],
)
def test_mismatched_state_raises_with_the_cpp_message(other, message):
    s = make()
    sd = s.state_dict()
    target = make(**other)
    with pytest.raises(distsampler.StateError, match=message):
        target.load_state_dict(sd)
    assert list(target) == list(make(**other))  # unchanged


def test_an_iterator_never_advanced_does_not_consume_a_loaded_state():
    s = make()
    it = iter(s)
    next(it)
    fresh = make()
    fresh.load_state_dict(s.state_dict(samples=1))
    unused = iter(fresh)
    assert fresh.state_dict() == s.state_dict(samples=1)
    assert list(iter(fresh)) == list(it)
    del unused


def test_state_after_explicit_samples_for_loaders_that_draw_ahead():
    s = make()
    full = list(s)
    it = iter(s)
    for _ in range(20):  # a DataLoader with workers drew 20 indices but delivered 8
        next(it)
    sd = s.state_dict(samples=8)
    fresh = make()
    fresh.load_state_dict(sd)
    assert list(fresh) == full[8:]
    with pytest.raises(distsampler.ConfigError,
                       match=r"^DistributedSampler::state: samples_done 35 exceeds the samples per rank 34 "
                             r"\(expected 0..34\)"):
        s.state_dict(samples=35)


def test_pickled_sampler_keeps_its_loaded_state():
    import pickle

    s = make(order="torch")
    it = iter(s)
    for _ in range(5):
        next(it)
    fresh = make(order="torch")
    fresh.load_state_dict(s.state_dict(samples=5))
    clone = pickle.loads(pickle.dumps(fresh))
    assert clone.state_dict() == s.state_dict(samples=5)
    assert len(clone) == 34 - 5
    assert list(clone) == list(it)
