# Tests of the samplers inside torchdata's StatefulDataLoader (its stand-in when torchdata is not installed).
# SPDX-License-Identifier: MIT
import importlib.util
import pathlib
import re

import pytest

from distsampler.torch import DistributedBatchSampler, DistributedSampler, TokenBatchSampler
from loader_helpers import as_list, flat

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")

N = 120
LENGTHS = [(i * 7) % 13 + 1 for i in range(N)]


def stateful_loader_class():
    try:
        from torchdata.stateful_dataloader import StatefulDataLoader
        return StatefulDataLoader
    except ImportError:
        pass
    # Under its own name: the samplers recognise that loader by what it holds, not by its module.
    path = pathlib.Path(__file__).with_name("stateful_standin.py")
    spec = importlib.util.spec_from_file_location("stateful_standin", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StatefulDataLoader


StatefulDataLoader = stateful_loader_class()


def build(family, world, rank, num_workers, persistent=False):
    data = list(range(N))
    kw = {"num_workers": num_workers, "collate_fn": as_list, "persistent_workers": persistent}
    if family == "sampler":
        return StatefulDataLoader(data, batch_size=4, sampler=DistributedSampler(data, world, rank, seed=5,
                                                                                 tail="uneven"), **kw)
    if family == "batch":
        s = DistributedBatchSampler(data, 3, world, rank, global_batch_size=12, seed=5, tail="uneven")
    else:
        s = TokenBatchSampler(LENGTHS, 40, world, rank, seed=5)
    return StatefulDataLoader(data, batch_sampler=s, **kw)


def stop(loader, k):
    it = iter(loader)
    return [next(it) for _ in range(k)]


def sampler_state(state):
    """The sampler's own state inside a StatefulDataLoader state (single- or multi-process form)."""
    main = state.get("_snapshot", {}).get("_main_snapshot", state)
    return main["_index_sampler_state"] or main["_sampler_iter_state"]["sampler_state"]


@pytest.mark.processes
@pytest.mark.parametrize("family", ["sampler", "batch", "token"])
@pytest.mark.parametrize("num_workers", [0, 2])
def test_samplers_inside_a_stateful_dataloader_resume_on_two_ranks(family, num_workers):
    read, states = [], []
    for r in range(4):
        dl = build(family, 4, r, num_workers)
        read += flat(stop(dl, 3))
        states.append(dl.state_dict())  # no ConfigError: the loader pairs the sampler's state with the batch
    inner = [sampler_state(s) for s in states]
    assert all(x == inner[0] for x in inner)
    if family == "sampler":  # what the loop received (3 batches of 4 on 4 ranks), not what was prefetched
        assert re.search(r" consumed=48 ", inner[0]["state"])
    for r in range(2):
        dl = build(family, 2, r, num_workers)
        dl.load_state_dict(states[r])
        read += flat(dl)
    assert sorted(read) == list(range(N))


@pytest.mark.processes
@pytest.mark.parametrize("family", ["sampler", "batch"])
def test_a_stateful_dataloader_on_the_same_world_continues_the_uninterrupted_sequence(family):
    for r in (0, 3):
        whole = list(build(family, 4, r, 0))
        dl = build(family, 4, r, 2)
        before = stop(dl, 5)
        state = dl.state_dict()
        resumed = build(family, 4, r, 2)
        resumed.load_state_dict(state)
        assert before + list(resumed) == whole


@pytest.mark.processes
def test_a_stateful_dataloader_state_before_iterating_is_the_epoch_start():
    dl = build("sampler", 2, 0, 2)
    state = dl.state_dict()
    assert re.search(r" consumed=0 ", sampler_state(state)["state"])
    assert list(dl) == list(build("sampler", 2, 0, 0))


@pytest.mark.processes
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("family", ["sampler", "batch"])
def test_a_stateful_dataloader_state_at_an_epochs_end_then_set_epoch_reads_the_next_epoch(family, persistent):
    def sampler_of(dl):
        return dl.sampler if family == "sampler" else dl.batch_sampler

    def epoch(e):
        expected = build(family, 2, 1, 0)
        sampler_of(expected).set_epoch(e)
        return list(expected)

    dl = build(family, 2, 1, 2, persistent)
    sampler_of(dl).set_epoch(3)
    assert list(dl) == epoch(3)
    state = dl.state_dict()
    resumed = build(family, 2, 1, 2, persistent)
    resumed.load_state_dict(state)
    for e in (4, 5):
        sampler_of(resumed).set_epoch(e)  # the loader applies the state after this call, when iteration starts
        assert list(resumed) == epoch(e)
