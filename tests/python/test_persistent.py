# Tests that epochs and loaded states reach persistent DataLoader workers (fork and spawn).
# SPDX-License-Identifier: MIT
import collections
import pickle
import re

import pytest
import torch

from distsampler import ConfigError, StateError
from distsampler.torch import DataLoader, DistributedSampler, ShardStream
from loader_helpers import ShardData, as_list, flat, take

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")

SHARDS = [7, 5, 9, 3, 11, 6, 8, 4]
ALL = list(range(sum(SHARDS)))


def stream_loader(loader_class, stream, context, num_workers=2):
    return loader_class(ShardData(stream), batch_size=3, num_workers=num_workers, persistent_workers=True,
                        collate_fn=as_list, multiprocessing_context=context)


@pytest.mark.parametrize("loader_class,context", [(DataLoader, "fork"), (DataLoader, "spawn"),
                                                  (torch.utils.data.DataLoader, "fork")])  # spawn is slow
@pytest.mark.processes
def test_set_epoch_reaches_persistent_workers(loader_class, context):
    stream = ShardStream(SHARDS, 1, 0, seed=4, tail="uneven")
    dl = stream_loader(loader_class, stream, context)
    epoch0 = flat(dl)
    stream.set_epoch(1)
    epoch1 = flat(dl)
    stream.set_epoch(0)
    again = flat(dl)
    assert sorted(epoch0) == ALL and sorted(epoch1) == ALL  # each a full cover
    assert epoch1 != epoch0  # the workers read the new epoch, not the copy they started with
    assert again == epoch0
    fresh = ShardStream(SHARDS, 1, 0, seed=4, tail="uneven")
    fresh.set_epoch(1)
    assert epoch1 == flat(stream_loader(torch.utils.data.DataLoader, fresh, "fork"))  # what a new loader reads


@pytest.mark.processes
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_loaded_state_reaches_running_workers_once(context):
    before = []
    for r in range(2):  # 2 ranks with 3 workers read 2 batches each, then stop
        saver = stream_loader(DataLoader, ShardStream(SHARDS, 2, r, seed=4, tail="uneven"), "fork", num_workers=3)
        before += flat(take(saver, 2))
        state = saver.state_dict()
    stream = ShardStream(SHARDS, 1, 0, seed=4, tail="uneven")
    dl = stream_loader(DataLoader, stream, context)
    whole = flat(dl)  # the workers are running now, with epoch 0 and no state in their copies
    dl.load_state_dict(state)
    rest = flat(dl)
    assert collections.Counter(before + rest) == collections.Counter(ALL)
    with pytest.warns(UserWarning, match="epoch 0 starts again without a new set_epoch"):
        assert flat(dl) == whole  # the state applied to one pass; then the whole epoch
    stream.set_epoch(1)
    assert sorted(flat(dl)) == ALL


@pytest.mark.processes
def test_a_plain_loader_with_persistent_workers_reads_a_state_loaded_into_the_stream():
    stream = ShardStream(SHARDS, 1, 0, seed=4, tail="uneven")
    dl = stream_loader(torch.utils.data.DataLoader, stream, "fork")
    whole = flat(dl)
    state = stream.state_dict(5, 3, 2)  # 5 batches of 3 from 2 workers
    stream.load_state_dict(state)
    rest = flat(dl)
    assert len(rest) == len(ALL) - 15 and sorted(whole[:15] + rest) == ALL


@pytest.mark.processes
def test_persistent_map_style_workers_resume_and_change_epochs():
    data = list(range(90))
    sampler = DistributedSampler(data, 2, 0, seed=3, tail="uneven")
    dl = DataLoader(data, batch_size=4, sampler=sampler, num_workers=2, persistent_workers=True, collate_fn=as_list)
    epoch0 = flat(dl)
    dl.set_epoch(1)
    epoch1 = take(dl, 4)
    state = dl.state_dict()
    dl.load_state_dict(state)
    rest = flat(dl)
    uninterrupted = DistributedSampler(data, 2, 0, seed=3, tail="uneven")
    uninterrupted.set_epoch(1)
    assert flat(epoch1) + rest == list(uninterrupted)  # the epoch reached the loop and resumed exactly
    assert epoch0 != list(uninterrupted)
    assert re.search(r" epoch=1 consumed=32 ", state["state"]["state"])  # 4 batches of 4 on 2 ranks


def test_the_stream_cell_survives_pickling_and_refuses_a_state_over_its_capacity():
    stream = ShardStream(SHARDS, 1, 0, seed=4, state_capacity=16)
    stream.set_epoch(7)
    copy = pickle.loads(pickle.dumps(stream))
    assert copy.epoch == 7 and copy._pending is None
    big = ShardStream(SHARDS, 1, 0, seed=4).state_dict(2, 3, 2)
    size = len(big["state"])
    with pytest.raises(StateError, match=re.escape(
            f"ShardStream.load_state_dict: the state text has {size} bytes but state_capacity is 16 (expected at "
            f"most 16; build the stream with state_capacity={size} or more)")):
        stream.load_state_dict(big)
    # Reserved up front in shared memory: a capacity over 2^30 bytes is refused before it is allocated.
    with pytest.raises(ConfigError, match=re.escape(
            "ShardStream: state_capacity 1099511627776 is out of range (expected an int from 1 to 1073741824 bytes of "
            "state text)")):
        ShardStream(SHARDS, 1, 0, seed=4, state_capacity=2**40)


@pytest.mark.processes
def test_set_epoch_to_the_loaded_epoch_after_its_resumed_pass_reads_the_whole_epoch():
    stream = ShardStream(SHARDS, 1, 0, seed=4, tail="uneven")
    dl = stream_loader(DataLoader, stream, "fork")
    whole = flat(dl)
    dl.load_state_dict({"format": 1, "sampler": "ShardStream", "state": stream.state_dict(4, 3, 2)})
    dl.set_epoch(0)  # the usual loop: set_epoch(saved epoch) keeps the state for the resumed pass
    assert len(flat(dl)) == len(ALL) - 12
    dl.set_epoch(0)
    with pytest.warns(UserWarning, match="epoch 0 starts again without a new set_epoch"):
        assert flat(dl) == whole
