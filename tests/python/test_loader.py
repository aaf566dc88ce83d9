# Tests of distsampler.torch.DataLoader: checkpoints of what the loop received, through real DataLoader workers.
# SPDX-License-Identifier: MIT
import collections
import re

import pytest
import torch

from distsampler import ConfigError, StateError
from distsampler.torch import (DataLoader, DistributedBatchSampler, DistributedSampler,
                               DistributedWeightedRandomSampler, MaskedBatch, MixtureBatchSampler, ShardStream,
                               TokenBatchSampler)
from loader_helpers import ShardData, Unknown, as_list, flat, take

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")

N = 120
LENGTHS = [(i * 7) % 13 + 1 for i in range(N)]
SHARDS = [7, 5, 9, 3, 11, 6, 8, 4]


def build(family, world, rank, **loader):
    """A DataLoader over `family`'s sampler for rank `rank` of `world` (each index once per epoch)."""
    loader.setdefault("collate_fn", as_list)
    data = list(range(N))
    if family == "sampler":
        return DataLoader(data, batch_size=4, sampler=DistributedSampler(data, world, rank, seed=5, tail="uneven"),
                          **loader)
    if family == "weighted":
        weights = [1.0 + (i % 5) for i in range(N)]
        s = DistributedWeightedRandomSampler(weights, N, True, world, rank, seed=5, tail="uneven")
        return DataLoader(data, batch_size=4, sampler=s, **loader)
    if family == "batch":
        s = DistributedBatchSampler(data, 3, world, rank, global_batch_size=12, seed=5, tail="uneven")
    elif family == "token":
        s = TokenBatchSampler(LENGTHS, 40, world, rank, seed=5)
    elif family == "mixture":
        s = MixtureBatchSampler([40, 80], [0.5, 0.5], 2, world, rank, global_batch_size=8, seed=5)
    else:
        stream = ShardStream(SHARDS, world, rank, seed=5, tail="uneven")
        return DataLoader(ShardData(stream), batch_size=2, **loader)
    return DataLoader(data, batch_sampler=s, **loader)


def workers(num_workers, prefetch_factor=None, persistent=False):
    if num_workers == 0:
        return {}
    return {"num_workers": num_workers, "prefetch_factor": prefetch_factor or 2, "persistent_workers": persistent}


def expected(family):
    """What all ranks read in one epoch: each index once, or (draws with repeats, a mixture's
    subset) what an uninterrupted run on 4 ranks reads."""
    if family in ("sampler", "batch", "token"):
        return collections.Counter(range(N))
    if family == "stream":
        return collections.Counter(range(sum(SHARDS)))
    return collections.Counter(i for r in range(4) for i in flat(build(family, 4, r)))


def stop_and_save(family, k, **loader):
    """Every rank of 4 reads k batches and saves; returns (what they read, the state)."""
    read, states = [], []
    for r in range(4):
        dl = build(family, 4, r, **loader)
        read.extend(flat(take(dl, k)))
        states.append(dl.state_dict())
    assert all(s == states[0] for s in states), "every rank saves the same state"
    assert states[0]["batches"] == k
    return read, states[0]


FAMILIES = ["sampler", "weighted", "batch", "token", "mixture", "stream"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("save,resume", [((0, None, False), (2, 2, False)), ((2, 2, True), (0, None, False)),
                                         ((3, 4, False), (3, 2, True))])
@pytest.mark.processes
def test_resume_on_two_ranks_reads_the_rest_of_the_epoch_once(family, save, resume):
    read, state = stop_and_save(family, 3, **workers(*save))
    for r in range(2):
        dl = build(family, 2, r, **workers(*resume))
        dl.load_state_dict(state)
        read.extend(flat(dl))
    assert collections.Counter(read) == expected(family)


@pytest.mark.processes
@pytest.mark.parametrize("family", FAMILIES)
def test_resume_on_the_same_world_continues_the_uninterrupted_sequence(family):
    k = 4  # a multiple of the saving loader's workers: shard streams restart their turn at worker 0
    for r in range(4):
        whole = take(build(family, 4, r, **workers(2 if family == "stream" else 0)), 10 ** 6)  # streams per worker
        saver = build(family, 4, r, **workers(2, 4))
        before = take(saver, k)
        resumed = build(family, 4, r, **workers(2, 2))
        resumed.load_state_dict(saver.state_dict())
        after = list(resumed)
        if family == "token":  # the interrupted window is planned again: the same samples, each once
            assert before == whole[:k] and sorted(flat(after)) == sorted(flat(whole[k:]))
        else:
            assert before + after == whole


@pytest.mark.processes
def test_shard_stop_between_worker_turns_resumes_each_index_once_on_the_same_world():
    read, state = stop_and_save("stream", 3, **workers(2))  # worker 0 gave 2 batches, worker 1 one
    for r in range(4):
        dl = build("stream", 4, r, **workers(2))
        dl.load_state_dict(state)
        read.extend(flat(dl))
    assert collections.Counter(read) == expected("stream")


@pytest.mark.processes
@pytest.mark.filterwarnings("ignore:DataLoader. epoch 0 starts again")
@pytest.mark.parametrize("family", ["sampler", "batch", "stream"])
def test_load_state_dict_mid_epoch_then_the_loop_reads_exactly_the_unread_rest(family):
    dl = build(family, 2, 0, **workers(2, 2, True))
    whole = take(dl, 10 ** 6)
    before = take(dl, 4)  # whole optimizer steps (2 micro-batches each), whole turns of the 2 workers
    dl.load_state_dict(dl.state_dict())
    assert take(dl, 10 ** 6) == whole[4:] and before == whole[:4]


@pytest.mark.processes
@pytest.mark.parametrize("family", ["sampler", "batch", "token", "stream"])
def test_state_before_iterating_and_after_the_epoch_are_its_boundaries(family):
    dl = build(family, 2, 1, **workers(2))
    start = dl.state_dict()
    assert start["batches"] == 0
    fresh = build(family, 2, 1, **workers(2 if family == "stream" else 0))
    fresh.load_state_dict(start)
    whole = take(fresh, 10 ** 6)
    assert take(dl, 10 ** 6) == whole
    done = build(family, 2, 1)
    done.load_state_dict(dl.state_dict())
    assert list(done) == []


@pytest.mark.processes
def test_loaded_state_is_returned_before_the_next_iteration():
    saver = build("sampler", 4, 0, **workers(2))
    take(saver, 2)
    state = saver.state_dict()
    dl = build("sampler", 2, 1)
    dl.load_state_dict(state)
    assert dl.state_dict()["state"] == state["state"]
    dl.load_state_dict({})  # torchdata's "nothing to load" keeps the loaded state
    assert dl.state_dict()["state"] == state["state"]


@pytest.mark.processes
def test_a_sampler_driven_by_the_loader_saves_what_the_loop_received():
    dl = build("sampler", 4, 2, **workers(2, 4))
    take(dl, 3)
    assert dl.sampler.state_dict() == dl.state_dict()["state"]
    assert re.search(r" consumed=48 ", dl.sampler.state_dict()["state"])  # 3 batches of 4 on 4 ranks
    bl = build("batch", 4, 2, **workers(2, 4))
    take(bl, 3)
    assert bl.batch_sampler.state_dict() == bl.state_dict()["state"]


@pytest.mark.processes
def test_sampler_state_dict_raises_while_a_plain_loader_has_prefetched():
    s = DistributedSampler(list(range(N)), 4, 0, seed=5)
    dl = torch.utils.data.DataLoader(list(range(N)), batch_size=2, sampler=s, num_workers=2, collate_fn=as_list)
    assert s.state_dict() == DistributedSampler(list(range(N)), 4, 0, seed=5).state_dict()  # nothing handed out
    it = iter(dl)
    next(it)  # 2 x 2 batches prefetched at the start, one more after the first delivered: 5 x 2 indices
    with pytest.raises(ConfigError) as e:
        s.state_dict()
    assert str(e.value) == (
        "DistributedSampler.state_dict: this rank handed out 10 indices of epoch 0 but no distsampler.torch.DataLoader "
        "is attached to say what the training loop received (a DataLoader with workers prefetches): pass "
        "received=<indices the loop received per rank>, or iterate through distsampler.torch.DataLoader and "
        "checkpoint with its state_dict()")
    assert re.search(r" consumed=8 ", s.state_dict(received=2)["state"])
    assert s.state_dict(received=2) == s.state_dict(samples=2)  # 0.2's spelling
    rest = list(it)
    assert len(rest) == 14
    after = s.state_dict()  # the iteration finished: the epoch's end, as before
    assert after == s.state_dict(samples=len(s))


@pytest.mark.parametrize("make,argument,noun", [
    (lambda: DistributedBatchSampler(list(range(N)), 2, 4, 0, seed=5), "batches", "micro-batches"),
    (lambda: TokenBatchSampler(LENGTHS, 40, 4, 0, seed=5), "batches", "micro-batches"),
    (lambda: DistributedWeightedRandomSampler([1.0] * N, N, True, 4, 0, seed=5), "samples", "indices"),
])
@pytest.mark.processes
def test_every_sampler_family_raises_the_same_way(make, argument, noun):
    s = make()
    kind = {"batch_sampler": s} if argument == "batches" else {"sampler": s, "batch_size": 1}
    it = iter(torch.utils.data.DataLoader(list(range(N)), num_workers=2, collate_fn=as_list, **kind))
    next(it)
    with pytest.raises(ConfigError, match=re.escape(
            f"{type(s).__name__}.state_dict: this rank handed out 5 {noun} of epoch 0 but no "
            "distsampler.torch.DataLoader is attached to say what the training loop received (a DataLoader with "
            f"workers prefetches): pass received=<{noun} the loop received per rank>, or iterate through "
            "distsampler.torch.DataLoader and checkpoint with its state_dict()")):
        s.state_dict()
    assert s.state_dict(received=1) == s.state_dict(**{argument: 1})  # 0.2's keyword still names the same count


@pytest.mark.processes
def test_padding_mask_marks_exactly_the_wrap_around_slots():
    # N=10 on 4 ranks pads to 12 positions: positions 10 and 11, the last slot of ranks 2 and 3 (torch's rule).
    read = []
    for r in range(4):
        s = DistributedSampler(list(range(10)), 4, r, seed=1)
        dl = DataLoader(list(range(10)), batch_size=2, sampler=s, collate_fn=as_list, padding_mask=True,
                        **workers(2))
        batches = list(dl)
        assert all(isinstance(b, MaskedBatch) and b.is_padding.dtype == torch.bool for b in batches)
        mask = [bool(m) for b in batches for m in b.is_padding]
        assert mask == [False, False, r >= 2]
        read.extend(i for b in batches for i, m in zip(b.data, b.is_padding) if not m)
    assert sorted(read) == list(range(10))


@pytest.mark.processes
def test_padding_mask_of_micro_batches_and_shard_streams():
    # 10 samples, micro-batches of 2 on 2 ranks: step 2 holds positions 8..11; rank 1 reads 10 and 11 (padding).
    masks, read = [], []
    for r in range(2):
        s = DistributedBatchSampler(list(range(10)), 2, 2, r, seed=3, tail="pad")
        for b in DataLoader(list(range(10)), batch_sampler=s, collate_fn=as_list, padding_mask=True):
            masks.append([bool(m) for m in b.is_padding])
            read.extend(i for i, m in zip(b.data, b.is_padding) if not m)
    assert masks == [[False, False]] * 3 + [[False, False]] * 2 + [[True, True]]
    assert sorted(read) == list(range(10))
    total, padded, read = 0, 0, []
    for r in range(2):  # 53 samples in 2 ranks x 3 workers = 6 slots of 9: one padding duplicate
        dl = DataLoader(ShardData(ShardStream(SHARDS, 2, r, seed=2)), batch_size=2, padding_mask=True,
                        **workers(3))
        for b in dl:
            total += len(b.data)
            padded += int(b.is_padding.sum())
            read.extend(int(i) for i, m in zip(b.data, b.is_padding) if not m)
    assert (total, padded, sorted(read)) == (54, 1, list(range(53)))


def test_an_epoch_iterated_again_without_set_epoch_warns_once():
    dl = build("sampler", 2, 0)
    first = list(dl)
    with pytest.warns(UserWarning, match=re.escape("DataLoader: epoch 0 starts again without a new set_epoch, so "
                                                   "this pass repeats the last one's order; call "
                                                   "loader.set_epoch(epoch)")):
        assert list(dl) == first
    dl.set_epoch(1)
    assert list(dl) != first and dl.sampler.epoch == 1


def test_what_the_loader_cannot_position_is_refused():
    with pytest.raises(ConfigError, match=re.escape("DataLoader: sampler=SequentialSampler is not a sampler this "
                                                    "loader can checkpoint (expected a DistributedSampler or")):
        DataLoader(list(range(N)), batch_size=2)
    batches = DistributedBatchSampler(list(range(N)), 2, 1, 0)
    with pytest.raises(ConfigError, match=re.escape("DataLoader: sampler=DistributedBatchSampler is not a sampler "
                                                    "this loader can checkpoint (expected a DistributedSampler")):
        DataLoader(list(range(N)), sampler=batches)  # a batch sampler belongs in batch_sampler=
    with pytest.raises(ConfigError, match=re.escape("DataLoader: the IterableDataset Unknown holds no ShardStream "
                                                    "attribute (expected exactly one")):
        DataLoader(Unknown(), batch_size=2)
    stream = ShardData(ShardStream(SHARDS, 1, 0))
    with pytest.raises(ConfigError, match=re.escape("DataLoader: drop_last=True with a ShardStream dataset drops")):
        DataLoader(stream, batch_size=2, drop_last=True)
    weighted = DistributedWeightedRandomSampler([1.0] * N, N, True, 1, 0)
    with pytest.raises(ConfigError, match=re.escape("DataLoader: padding_mask=True is not available for "
                                                    "DistributedWeightedRandomSampler")):
        DataLoader(list(range(N)), sampler=weighted, padding_mask=True)


def test_bad_states_are_refused_with_the_reason():
    dl = build("sampler", 2, 0)
    with pytest.raises(StateError, match=re.escape("DataLoader.load_state_dict: the state is of a "
                                                   "DistributedBatchSampler but this loader reads a "
                                                   "DistributedSampler")):
        dl.load_state_dict(build("batch", 2, 0).state_dict())
    with pytest.raises(StateError, match=re.escape("DataLoader.load_state_dict: 'format' 9 is unknown")):
        dl.load_state_dict(dict(dl.state_dict(), format=9))
    with pytest.raises(StateError, match=re.escape("DataLoader.load_state_dict: expected a dict with keys 'format', "
                                                   "'sampler' and 'state' from DataLoader.state_dict(), got list")):
        dl.load_state_dict([1])
    other = DataLoader(list(range(N)), batch_size=4, sampler=DistributedSampler(list(range(N)), 2, 0, seed=6))
    with pytest.raises(StateError):
        other.load_state_dict(dl.state_dict())  # another seed: the sampler's own check


@pytest.mark.processes
def test_isinstance_and_torch_arguments_keep_working():
    dl = build("sampler", 2, 0, **workers(2, 3, True), pin_memory=False, timeout=30, drop_last=True)
    assert isinstance(dl, torch.utils.data.DataLoader)
    assert (dl.num_workers, dl.prefetch_factor, dl.persistent_workers, dl.drop_last) == (2, 3, True, True)
    assert len(dl) == 15 and all(len(b) == 4 for b in dl)  # 60 samples of this rank, the partial batch dropped


@pytest.mark.processes
def test_padding_mask_after_a_resume_marks_the_slots_of_the_resumed_pass():
    # Rank 3 of 4 over 10 samples: slots 0, 1 real, slot 2 padding (position 11).
    s = DistributedSampler(list(range(10)), 4, 3, seed=1)
    saver = DataLoader(list(range(10)), batch_size=1, sampler=s, collate_fn=as_list, padding_mask=True)
    first = take(saver, 1)
    resumed = DataLoader(list(range(10)), batch_size=1, sampler=DistributedSampler(list(range(10)), 4, 3, seed=1),
                         collate_fn=as_list, padding_mask=True, **workers(2))
    resumed.load_state_dict(saver.state_dict())
    rest = list(resumed)
    assert [bool(b.is_padding[0]) for b in first + rest] == [False, False, True]
    assert [b.data for b in first + rest][:2] == [[i] for i in s][:2]  # a duplicate fills the padding slot


@pytest.mark.processes
def test_once_a_plain_loader_ran_the_sampler_out_received_names_what_the_loop_got():
    # torch's DataLoader with workers runs the sampler out 3 batches before it delivers them. Without
    # distsampler's loader attached the sampler cannot see them (it reads no private state of torch's
    # iterator): its state_dict() records the end of what it handed out, so name what the loop got with
    # received=, or iterate through distsampler.torch.DataLoader, which knows.
    s = DistributedSampler(list(range(N)), 4, 0, seed=5)
    it = iter(torch.utils.data.DataLoader(list(range(N)), batch_size=2, sampler=s, num_workers=2, collate_fn=as_list))
    got = [next(it) for _ in range(12)]  # of 15; 2 x 2 in flight, so the sampler ran out 3 batches ago
    resumed = DistributedSampler(list(range(N)), 4, 0, seed=5)
    resumed.load_state_dict(s.state_dict(received=24))
    assert [i for b in got for i in b] + list(resumed) == list(s)
    ours = DistributedSampler(list(range(N)), 4, 0, seed=5)
    dl = DataLoader(list(range(N)), batch_size=2, sampler=ours, num_workers=2, collate_fn=as_list)
    it = iter(dl)
    assert [next(it) for _ in range(12)] == got
    assert ours.state_dict() == dl.state_dict()["state"] == s.state_dict(received=24)
    got += list(it)
    assert len(got) == 15 and s.state_dict() == s.state_dict(samples=30)
