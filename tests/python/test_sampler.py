# Tests of distsampler.torch.DistributedSampler: torch parity, attributes, world, errors, O(1) memory.
# SPDX-License-Identifier: MIT
import pickle
import resource
import tracemalloc

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler as TorchSampler

import distsampler
import distsampler.torch
from distsampler.torch import DistributedSampler, default_torch_generation

# (N, replicas, seeds): small, uneven, N < replicas, N = 0, larger.
PARITY_SIZES = [(0, 3), (1, 4), (2, 4), (3, 8), (7, 3), (10, 4), (16, 4), (17, 5), (100, 7), (1000, 8), (4097, 3)]
PARITY_SEEDS = [0, 1, 42, -1, -7, 2**40 + 3, -(2**62)]


@pytest.mark.parametrize("n,replicas", PARITY_SIZES)
@pytest.mark.parametrize("seed", PARITY_SEEDS)
def test_torch_order_equals_torch_sampler(n, replicas, seed):
    for shuffle in (True, False):
        for drop_last in (False, True):
            for epoch in (0, 1, 5):
                for rank in range(replicas):
                    ours = DistributedSampler(range(n), replicas, rank, shuffle, seed, drop_last, order="torch")
                    theirs = TorchSampler(range(n), replicas, rank, shuffle, seed, drop_last)
                    ours.set_epoch(epoch)
                    theirs.set_epoch(epoch)
                    expected = list(theirs)
                    assert list(ours) == expected, (n, replicas, rank, shuffle, seed, drop_last, epoch)
                    assert len(ours) == len(theirs) == len(expected)
                    assert ours.num_samples == theirs.num_samples
                    assert ours.total_size == theirs.total_size


@pytest.mark.parametrize("seed", [3, -5])
def test_torch_order_equals_torch_sampler_at_a_larger_size(seed):
    n, replicas = 100003, 16
    for drop_last in (False, True):
        for rank in (0, 7, 15):
            ours = DistributedSampler(range(n), replicas, rank, True, seed, drop_last, order="torch")
            theirs = TorchSampler(range(n), replicas, rank, True, seed, drop_last)
            ours.set_epoch(2)
            theirs.set_epoch(2)
            assert list(ours) == list(theirs)


def test_subclass_and_attributes():
    data = list(range(10))
    s = DistributedSampler(data, num_replicas=4, rank=3, shuffle=False, seed=5, drop_last=True)
    assert isinstance(s, torch.utils.data.distributed.DistributedSampler)
    assert (s.num_replicas, s.rank, s.epoch, s.seed, s.shuffle, s.drop_last) == (4, 3, 0, 5, False, True)
    assert (s.num_samples, s.total_size) == (2, 8)
    assert s.dataset is data
    assert s.tail == "drop" and s.order == "feistel"
    assert list(s) == [3, 7]
    s.set_epoch(9)
    assert s.epoch == 9


def test_torch_generation_follows_installed_torch():
    assert default_torch_generation("1.13.0a0") == "v1"
    assert default_torch_generation("2.6.0+cu124") == "v1"
    assert default_torch_generation("2.7.0") == "v2.7"
    assert default_torch_generation("2.10.1") == "v2.7"
    assert DistributedSampler(range(5), 1, 0, order="torch").torch_generation == default_torch_generation()
    assert DistributedSampler(range(5), 1, 0, order="torch", torch_generation="v2.7").torch_generation == "v2.7"


def test_feistel_default_partitions_every_epoch():
    n, w = 1003, 4
    for epoch in (0, 1):
        per_rank = []
        for r in range(w):
            s = DistributedSampler(range(n), w, r, seed=11)
            s.set_epoch(epoch)
            per_rank.append(list(s))
        assert all(len(x) == 251 for x in per_rank)
        flat = [i for x in per_rank for i in x]
        assert set(flat) == set(range(n))
        assert len(flat) - len(set(flat)) == 1  # one wrap-around duplicate
    a = DistributedSampler(range(n), w, 0, seed=11)
    b = DistributedSampler(range(n), w, 0, seed=11)
    b.set_epoch(1)
    assert list(a) != list(b)
    assert list(a) == list(DistributedSampler(range(n), w, 0, seed=11))


def test_uneven_tail_reads_each_index_once():
    n, w = 10, 4
    got = []
    counts = []
    for r in range(w):
        s = DistributedSampler(range(n), w, r, seed=3, tail="uneven")
        counts.append((len(s), s.num_samples))
        assert s.total_size == n
        got += list(s)
    assert counts == [(3, 3), (3, 3), (2, 2), (2, 2)]
    assert sorted(got) == list(range(n))


def test_pad_flags_duplicates():
    s = DistributedSampler(range(10), 4, 3, seed=3)
    assert [s.is_padding(i) for i in range(len(s))] == [False, False, True]


def test_n_one_billion_needs_no_memory():
    n = 10**9
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    tracemalloc.start()
    s = DistributedSampler(range(n), 8, 5, seed=1)
    it = iter(s)
    first = [next(it) for _ in range(1000)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(s) == n // 8
    assert all(0 <= i < n for i in first) and len(set(first)) == 1000
    assert peak < 1 << 20  # torch's sampler would build 10**9 Python ints first
    # C++ allocations are not traced: a table of 10**9 indices would raise the peak RSS by 4 GB.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 64 * 1024


def test_whole_epoch_as_numpy_equals_iteration():
    s = DistributedSampler(range(10007), 3, 2, seed=8, order="torch")
    s.set_epoch(1)
    arr = s.indices(as_numpy=True)
    assert str(arr.dtype) == "int64"
    assert arr.tolist() == list(s) == s.indices()


def test_world_from_environment(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(distsampler.ConfigError, match="^DistributedSampler: num_replicas and rank not given, "
                                                      "torch.distributed is not initialized and no launcher"):
        DistributedSampler(range(10))
    with pytest.raises(distsampler.ConfigError, match=r"^DistributedSampler: rank not given, .* pass num_replicas= "
                                                      r"and rank= \(num_replicas=1, rank=0 for one process\)$"):
        DistributedSampler(range(10), num_replicas=2)
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    s = DistributedSampler(range(10), shuffle=False)
    assert (s.rank, s.num_replicas, list(s)) == (2, 3, [2, 5, 8, 1])  # position 11 wraps to 1
    assert DistributedSampler(range(10), num_replicas=2, rank=1).num_replicas == 2  # explicit wins
    monkeypatch.setenv("RANK", "-1")
    with pytest.raises(ValueError, match=r'World::from_env: RANK="-1" has a sign \(expected an unsigned decimal'):
        DistributedSampler(range(10))
    monkeypatch.setenv("RANK", "3")
    with pytest.raises(distsampler.ConfigError, match=r"rank 3 is out of range for world_size 3 \(expected 0..2\)"):
        DistributedSampler(range(10))
    monkeypatch.delenv("RANK")
    with pytest.raises(distsampler.ConfigError, match="WORLD_SIZE is set but RANK is not"):
        DistributedSampler(range(10))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(num_replicas=4, rank=4),
         r"^DistributedSampler: rank 4 is out of range for num_replicas 4 \(expected 0..3\)$"),
        (dict(num_replicas=4, rank=-1), r"rank -1 is out of range for num_replicas 4 \(expected 0..3\)"),
        (dict(num_replicas=0, rank=0), r"^DistributedSampler: num_replicas is 0 \(expected at least 1\)$"),
        (dict(num_replicas=2, rank=0, tail="middle"), r'tail \'middle\' is unknown \(expected "pad", "drop"'),
        (dict(num_replicas=2, rank=0, tail="pad", drop_last=True), r'drop_last=True conflicts with tail="pad"'),
        (dict(num_replicas=2, rank=0, order="numpy"), r'order \'numpy\' is unknown \(expected "feistel" or "torch"\)'),
        (dict(num_replicas=2, rank=0, order="torch", torch_generation="v3"), r"torch_generation 'v3' is unknown"),
        (dict(num_replicas=2, rank=0, seed=2**64), r"seed 18446744073709551616 is out of range"),
        (dict(num_replicas=2, rank=0, seed="1"), r"seed '1' is not an integer"),
    ],
)
def test_configuration_errors_are_value_errors_with_messages(kwargs, message):
    with pytest.raises(distsampler.ConfigError, match=message) as info:
        DistributedSampler(range(10), **kwargs)
    assert isinstance(info.value, ValueError)


def test_negative_epoch_is_rejected():
    s = DistributedSampler(range(10), 2, 0)
    with pytest.raises(distsampler.ConfigError, match=r"epoch -1 is out of range"):
        s.set_epoch(-1)


def test_pickle_round_trip_keeps_order():
    s = DistributedSampler(range(50), 3, 1, seed=9, order="torch")
    s.set_epoch(2)
    it = iter(s)
    next(it)
    t = pickle.loads(pickle.dumps(s))
    assert isinstance(t, DistributedSampler)
    assert list(t) == list(s)
    assert (t.epoch, t.seed, t.rank) == (2, 9, 1)


def test_guard_needs_torch_distributed():
    with pytest.raises(distsampler.ConfigError, match=r"^guard: torch.distributed is not initialized"):
        distsampler.torch.guard(DistributedSampler(range(10), 2, 0))
