# Tests of distsampler.verify: the partition checks catch duplicates, misses, imbalance and bad padding.
# SPDX-License-Identifier: MIT
import pytest
import torch

import distsampler
from distsampler.torch import DistributedSampler
from distsampler.verify import assert_partition, check_partition, check_samplers


def test_good_partition_is_ok():
    r = check_partition(5, [[0, 2, 4], [1, 3]], tail="uneven")
    assert r.ok and bool(r)
    assert r.counts == [3, 2] and r.duplicates == 0 and r.missing == 0
    assert r.summary.startswith("ok: N=5 W=2 tail=uneven")


def test_per_rank_seeds_are_caught():
    n, w = 100, 4
    # The classic bug: each rank shuffles with its own seed, so ranks overlap and miss samples.
    lists = []
    for r in range(w):
        g = torch.Generator()
        g.manual_seed(42 + r)
        lists.append(torch.randperm(n, generator=g).tolist()[r::w])
    report = check_partition(n, lists, tail="pad")
    assert not report.ok
    assert report.duplicates > 0 and report.missing > 0
    assert report.summary.startswith("FAILED: N=100 W=4")
    assert len(report.missing_examples) == min(8, report.missing)
    with pytest.raises(AssertionError, match=r"^FAILED: N=100 W=4 tail=pad"):
        assert_partition(n, lists, tail="pad")


def test_padding_must_be_flagged_and_counted():
    assert check_partition(3, [[0, 1], [2, 0]], tail="pad", padding=[[False, False], [False, True]]).ok
    unflagged = check_partition(3, [[0, 1], [2, 0]], tail="pad")
    assert not unflagged.ok and unflagged.duplicates == 1


def test_imbalance_is_caught():
    r = check_partition(4, [[0, 1, 2], [3]], tail="pad")
    assert not r.ok and r.counts == [3, 1]


def test_check_samplers_over_distsampler_ranks():
    for tail in ("pad", "drop", "uneven"):
        samplers = [DistributedSampler(range(103), 4, r, seed=1, tail=tail) for r in range(4)]
        report = check_samplers(samplers)
        assert report.ok, report.summary


def test_errors_carry_the_cpp_messages():
    with pytest.raises(distsampler.ConfigError, match=r"^check_partition: no ranks given \(expected at least one"):
        check_partition(3, [])
    with pytest.raises(distsampler.ConfigError, match=r"^check_partition: padding has 1 lists for 2 ranks"):
        check_partition(3, [[0], [1]], padding=[[False]])
    with pytest.raises(distsampler.ConfigError, match=r'^tail "sideways" is unknown'):
        check_partition(3, [[0]], tail="sideways")
    with pytest.raises(distsampler.ConfigError, match=r"^check_samplers: no samplers given"):
        check_samplers([])
