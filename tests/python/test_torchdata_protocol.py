# Every sampler family driven in torchdata's StatefulDataLoader call order (torchdata_protocol.py), in one process.
# SPDX-License-Identifier: MIT
import importlib.util
import pathlib

import distsampler
import numpy as np
import pytest

from distsampler.torch import (DistributedBatchSampler, DistributedSampler, DistributedWeightedRandomSampler,
                               MixtureBatchSampler, PackedSequenceSampler, TokenBatchSampler)

LENGTHS = np.array([(i * 37) % 61 + 3 for i in range(150)], dtype=np.uint32)

# name -> a fresh rank 1 of 2; the per-sample samplers go in as sampler= (batch_size 3), the others as batch_sampler=
FAMILIES = {
    "distributed": lambda: DistributedSampler(range(61), 2, 1, seed=3, tail="uneven"),
    "distributed_torch": lambda: DistributedSampler(range(61), 2, 1, seed=3, order="torch", drop_last=True),
    "weighted": lambda: DistributedWeightedRandomSampler([1.0, 0.0, 2.0, 4.0, 1.5], 40, num_replicas=2, rank=1,
                                                         seed=5),
    "batch": lambda: DistributedBatchSampler(range(97), 3, 2, 1, accumulation_steps=2, seed=5),
    "tokens": lambda: TokenBatchSampler(LENGTHS, 200, 2, 1, seed=7, window=64),
    "mixture": lambda: MixtureBatchSampler([40, 25, 60], [0.5, 0.2, 0.3], 4, 2, 1, seed=9, end="steps",
                                           end_count=12, accumulation_steps=2),
    "packing": lambda: PackedSequenceSampler(LENGTHS, 64, 2, 2, 1, accumulation_steps=2, seed=3),
}
MODES = [(0, False), (2, False), (2, True)]  # (num_workers, persistent_workers)


def protocol_module(name):
    path = pathlib.Path(__file__).with_name("torchdata_protocol.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Under its own name: the samplers recognise a loader that snapshots as it hands out by what it holds (the pass's
# iterator), not by its module.
PROTOCOL = protocol_module("torchdata_protocol")


def loader(sampler, num_workers, persistent):
    kw = {"num_workers": num_workers, "persistent_workers": persistent}
    if sampler._checkpoint_unit() == "samples":
        return PROTOCOL.StatefulLoader(sampler=sampler, batch_size=3, **kw)
    return PROTOCOL.StatefulLoader(batch_sampler=sampler, **kw)


def epoch_read(name, epoch, num_workers=0, persistent=False):
    s = FAMILIES[name]()
    s.set_epoch(epoch)
    return [list(b) for b in loader(s, num_workers, persistent)]


def same_items(name, got, want):
    if name == "tokens":  # a resumed token pass plans the rest of its window again: the same samples, each once
        assert sorted(i for b in got for i in b) == sorted(i for b in want for i in b)
    else:
        assert got == want


@pytest.mark.parametrize("num_workers,persistent", MODES)
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_state_saved_at_an_epochs_end_then_set_epoch_reads_the_next_epoch(name, num_workers, persistent):
    # The loop of torchdata's documentation: load the loader's state, then set_epoch(e + 1) and iterate. The loader
    # applies the sampler's state when iteration starts, after that set_epoch: epoch e must not be read again.
    sampler = FAMILIES[name]()
    dl = loader(sampler, num_workers, persistent)
    sampler.set_epoch(4)
    assert [list(b) for b in dl] == epoch_read(name, 4)
    state = dl.state_dict()  # the end of epoch 4

    resumed_sampler = FAMILIES[name]()
    resumed = loader(resumed_sampler, num_workers, persistent)
    resumed.load_state_dict(state)
    for epoch in (5, 6):
        resumed_sampler.set_epoch(epoch)
        got = [list(b) for b in resumed]
        assert got != epoch_read(name, 4)
        assert got == epoch_read(name, epoch), f"epoch {epoch}"


@pytest.mark.parametrize("num_workers,persistent", MODES)
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_state_saved_mid_epoch_resumes_the_rest_then_the_next_epoch(name, num_workers, persistent):
    whole = epoch_read(name, 4)
    sampler = FAMILIES[name]()
    dl = loader(sampler, num_workers, persistent)
    sampler.set_epoch(4)
    it = iter(dl)
    before = [list(next(it)) for _ in range(3)]
    state = dl.state_dict()  # paired with the third batch returned, whatever the workers drew ahead

    resumed_sampler = FAMILIES[name]()
    resumed = loader(resumed_sampler, num_workers, persistent)
    resumed.load_state_dict(state)
    resumed_sampler.set_epoch(4)
    rest = [list(b) for b in resumed]
    assert before == whole[:3]
    same_items(name, rest, whole[3:])
    resumed_sampler.set_epoch(5)
    assert [list(b) for b in resumed] == epoch_read(name, 5)


class Holder:
    """Draws from a sampler's pass itself and asks for the state between draws (as torchdata's iterators do)."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.sampler_iter = iter(sampler)

    def draw(self, k):
        return [next(self.sampler_iter) for _ in range(k)]

    def state_dict(self):
        return self.sampler.state_dict()


class Trainer:
    """Asks for the state of a sampler whose pass something else draws from (a prefetching loader)."""

    def __init__(self, sampler):
        self.sampler = sampler

    def state_dict(self):
        return self.sampler.state_dict()


MESSAGE = ("DistributedSampler.state_dict: this rank handed out 5 indices of epoch 0 but no distsampler.torch.DataLoader "
           "is attached to say what the training loop received (a DataLoader with workers prefetches): pass "
           "received=<indices the loop received per rank>, or iterate through distsampler.torch.DataLoader and "
           "checkpoint with its state_dict()")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_holder_of_a_pass_gets_what_it_drew_whatever_its_module(name):
    s = FAMILIES[name]()
    holder = Holder(s)
    holder.draw(5)
    assert holder.state_dict() == s.state_dict(received=5)


def test_an_asker_that_does_not_hold_the_pass_is_told_what_to_pass_even_under_torchdatas_module_path():
    # The samplers recognised torchdata by its module path: any caller there got what was handed out.
    module = protocol_module("torchdata.stateful_dataloader.lookalike")
    s = FAMILIES["distributed"]()
    s.rank = 0
    batches = iter(module._BatchSampler(s, 3, False))  # holds a pass it never draws from
    it = iter(s)  # the pass a prefetching loader draws from
    for _ in range(5):
        next(it)
    with pytest.raises(distsampler.ConfigError) as e:
        batches.state_dict()
    with pytest.raises(distsampler.ConfigError) as e2:
        Trainer(s).state_dict()
    assert str(e.value) == str(e2.value) == MESSAGE


def test_a_later_pass_is_not_recognised_through_an_earlier_one():
    s = FAMILIES["distributed"]()
    s.rank = 0
    holder = Holder(s)
    holder.draw(2)
    it = iter(s)  # a new pass, drawn by someone else: the holder of the old one does not speak for it
    for _ in range(5):
        next(it)
    with pytest.raises(distsampler.ConfigError) as e:
        holder.state_dict()
    assert str(e.value) == MESSAGE
