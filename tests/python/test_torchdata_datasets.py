# ShardStream and ShardedDataset driven in torchdata's StatefulDataLoader call order for an IterableDataset
# (torchdata_protocol.StatefulDatasetLoader), in one process: the end of an epoch, then set_epoch(e + 1).
# SPDX-License-Identifier: MIT
import importlib.util
import json
import pathlib

import pytest

from distsampler.torch import ShardedDataset, ShardStream, StreamDataset

SIZES = [7, 0, 12, 5, 9]


def protocol_module():
    path = pathlib.Path(__file__).with_name("torchdata_protocol.py")
    spec = importlib.util.spec_from_file_location("torchdata_protocol", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROTOCOL = protocol_module()


def write_shards(folder):
    paths, k = [], 0
    for s, n in enumerate(SIZES):
        path = folder / f"part-{s}.jsonl"
        path.write_text("".join(json.dumps({"id": k + i}) + "\n" for i in range(n)))
        k += n
        paths.append(str(path))
    return paths


def families(tmp_path):
    paths = write_shards(tmp_path)
    return {
        "stream": lambda: ShardStream(SIZES, 2, 1, seed=3, tail="uneven"),
        "stream_pad": lambda: ShardStream(SIZES, 3, 2, seed=5, tail="pad"),
        "sharded": lambda: ShardedDataset(paths, num_replicas=2, rank=1, seed=3, tail="uneven"),
        "sharded_pad": lambda: ShardedDataset(paths, num_replicas=3, rank=0, seed=4),
    }


MODES = [(0, False), (2, False), (2, True)]  # (num_workers, persistent_workers)
NAMES = ["stream", "stream_pad", "sharded", "sharded_pad"]


def items(loader):
    return [[repr(x) for x in batch] for batch in loader]


def epoch_read(make, epoch, num_workers, persistent):
    ds = make()
    ds.set_epoch(epoch)
    return items(PROTOCOL.StatefulDatasetLoader(ds, 3, num_workers, persistent))


@pytest.mark.parametrize("num_workers,persistent", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_a_state_saved_at_an_epochs_end_then_set_epoch_reads_the_next_epoch(tmp_path, name, num_workers, persistent):
    make = families(tmp_path)[name]
    ds = make()
    dl = PROTOCOL.StatefulDatasetLoader(ds, 3, num_workers, persistent)
    ds.set_epoch(4)
    assert items(dl) == epoch_read(make, 4, num_workers, persistent)
    state = dl.state_dict()  # the end of epoch 4

    resumed_ds = make()
    resumed = PROTOCOL.StatefulDatasetLoader(resumed_ds, 3, num_workers, persistent)
    resumed.load_state_dict(state)
    for epoch in (5, 6):
        resumed_ds.set_epoch(epoch)
        got = items(resumed)
        want = epoch_read(make, epoch, num_workers, persistent)
        assert want and want != epoch_read(make, 4, num_workers, persistent)
        assert got == want, f"epoch {epoch}"
        assert resumed_ds.epoch == epoch


@pytest.mark.parametrize("num_workers,persistent", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_a_state_saved_mid_epoch_resumes_the_rest_then_the_next_epoch(tmp_path, name, num_workers, persistent):
    make = families(tmp_path)[name]
    whole = epoch_read(make, 4, num_workers, persistent)
    ds = make()
    dl = PROTOCOL.StatefulDatasetLoader(ds, 3, num_workers, persistent)
    ds.set_epoch(4)
    it = iter(dl)
    before = [[repr(x) for x in next(it)] for _ in range(2)]
    state = dl.state_dict()

    resumed_ds = make()
    resumed = PROTOCOL.StatefulDatasetLoader(resumed_ds, 3, num_workers, persistent)
    resumed.load_state_dict(state)
    resumed_ds.set_epoch(4)
    rest = items(resumed)
    assert before == whole[:2]
    assert sorted(x for b in before + rest for x in b) == sorted(x for b in whole for x in b)
    resumed_ds.set_epoch(5)
    assert items(resumed) == epoch_read(make, 5, num_workers, persistent)


@pytest.mark.parametrize("num_workers,persistent", MODES)
def test_a_stream_has_no_epoch_end_and_resumes_where_the_state_was_taken(tmp_path, num_workers, persistent):
    # StreamDataset reads passes without end (no set_epoch): a state taken after some items, loaded in torchdata's
    # order, continues with the items an uninterrupted loader reads next.
    paths = write_shards(tmp_path)

    def make():
        return StreamDataset(paths, num_replicas=1, rank=0, micro_batch=2, seed=7)

    def take(it, n):
        return [[repr(x.data) for x in next(it)] for _ in range(n)]

    whole = take(iter(PROTOCOL.StatefulDatasetLoader(make(), 1, num_workers, persistent)), 40)
    dl = PROTOCOL.StatefulDatasetLoader(make(), 1, num_workers, persistent)
    it = iter(dl)
    before = take(it, 25)  # past the end of the first pass (33 records, 2 per micro-batch)
    state = dl.state_dict()
    resumed = PROTOCOL.StatefulDatasetLoader(make(), 1, num_workers, persistent)
    resumed.load_state_dict(state)
    assert before + take(iter(resumed), 15) == whole
