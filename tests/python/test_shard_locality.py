# ShardStream's read locality from Python: the presets and each option, checked on the streams they produce.
# SPDX-License-Identifier: MIT
import re

import pytest

from distsampler import ConfigError
from distsampler.torch import ShardStream

SIZES = [37, 5, 120, 64, 1, 90, 33, 250, 8, 77]


def streams(num_replicas, num_workers, **kw):
    out = []
    for r in range(num_replicas):
        s = ShardStream(SIZES, num_replicas, r, seed=3, tail="uneven", **kw)
        s.set_epoch(1)
        out += [list(s.worker_samples(w, num_workers)) for w in range(num_workers)]
    return out


def covers_once(all_streams):
    indices = sorted(x.index for st in all_streams for x in st)
    return indices == list(range(sum(SIZES)))


@pytest.mark.parametrize("world,workers", [(1, 1), (2, 3), (4, 2)])
def test_sequential_reads_each_shard_in_increasing_offsets_one_at_a_time(world, workers):
    got = streams(world, workers, preset="sequential")
    assert covers_once(got)
    for stream in got:
        last = {}
        finished = set()
        current = None
        for x in stream:
            if x.shard != current:
                assert x.shard not in finished, "a shard is left and opened again"
                if current is not None:
                    finished.add(current)
                current = x.shard
            assert x.offset > last.get(x.shard, -1), "an offset within a shard goes backwards"
            last[x.shard] = x.offset


def test_the_default_is_mixed_and_reads_out_of_order():
    default, mixed = streams(2, 2), streams(2, 2, preset="mixed")
    assert default == mixed and covers_once(default)
    def counts(got):
        backwards = sum(1 for st in got for a, b in zip(st, st[1:]) if a.shard == b.shard and b.offset < a.offset)
        switches = sum(1 for st in got for a, b in zip(st, st[1:]) if a.shard != b.shard)
        return backwards, switches

    (back_mixed, switch_mixed), (back_seq, switch_seq) = counts(default), counts(streams(2, 2, preset="sequential"))
    assert back_mixed > 0 and back_seq == 0
    assert switch_mixed >= 4 * switch_seq  # sequential changes shard only when one is done


def test_explicit_options_override_the_preset_and_change_the_order():
    runs = streams(2, 2, preset="sequential", run_length=4)
    assert covers_once(runs) and runs != streams(2, 2, preset="sequential")
    for st in runs:  # runs of 4: within the preset's single lane, a shard still only moves forward
        for a, b in zip(st, st[1:]):
            assert a.shard != b.shard or b.offset > a.offset
    tuned = streams(2, 2, max_open_shards=8, run_length=8, shuffle_window=4, canonical_streams=64)
    assert covers_once(tuned) and tuned != streams(2, 2)
    assert covers_once(streams(2, 2, rotate_shards=False))


def test_a_state_resumes_only_with_the_same_locality():
    s = ShardStream(SIZES, 2, 0, seed=3, preset="sequential")
    state = s.state_dict(3, 4, 2)
    ShardStream(SIZES, 2, 1, seed=3, preset="sequential").load_state_dict(state)
    with pytest.raises(Exception, match="differs"):
        ShardStream(SIZES, 2, 1, seed=3).load_state_dict(state)


@pytest.mark.parametrize("kw,message", [
    ({"preset": "fast"}, 'ShardStream: preset \'fast\' is unknown (expected "mixed"'),
    ({"run_length": 0}, "ShardStream: run_length is 0 (expected at least 1"),
    ({"max_open_shards": -1}, "ShardStream: max_open_shards"),
    ({"shuffle_window": 2.5}, "ShardStream: shuffle_window"),
    ({"rotate_shards": 1}, "ShardStream: rotate_shards 1 is not a bool"),
    ({"run_length": True}, "ShardStream: run_length True is a bool (expected an integer"),
    ({"max_open_shards": 600}, "max_open_shards"),
])
def test_bad_locality_options_are_refused_naming_the_argument(kw, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        ShardStream(SIZES, 2, 0, **kw)


def test_the_guard_description_carries_the_locality():
    a = ShardStream(SIZES, 2, 0, preset="sequential")._guard_description()["order"]
    b = ShardStream(SIZES, 2, 0)._guard_description()["order"]
    c = ShardStream(SIZES, 2, 0, run_length=2)._guard_description()["order"]
    assert len({a, b, c}) == 3 and "sequential" in a and "run_length=2" in c
