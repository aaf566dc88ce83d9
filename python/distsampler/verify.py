# distsampler.verify: partition checks (disjoint, covering, balanced, padding) for users' tests.
# SPDX-License-Identifier: MIT
"""Partition checks for tests: did the ranks together read every index once?

In a pytest test::

    from distsampler.verify import check_samplers
    samplers = [MySampler(ds, num_replicas=4, rank=r, seed=7) for r in range(4)]
    report = check_samplers(samplers)
    assert report.ok, report.summary

The checks are the C++ library's (verify.hpp), for dataset size N and W ranks: every
index < N; no index read twice (padding excepted); none missed (``tail="drop"``: exactly
N mod W missed); equal counts (``"uneven"``: differing by at most one); ``"pad"`` flags
exactly (W - N mod W) mod W slots. Memory: one byte per dataset index.
"""

import operator

from . import _core
from ._core import ConfigError

__all__ = ["PartitionReport", "check_partition", "check_samplers", "assert_partition"]

# The largest dataset_size check_partition takes: it keeps one byte per index (4 GiB here).
_MAX_CHECKED_SIZE = 1 << 32


class PartitionReport:
    """The outcome of a check: ``ok``, ``summary`` (one line), ``failures`` (sentences),
    ``counts`` and ``padding`` per rank, ``duplicates``, ``missing``, ``out_of_range`` and
    up to 8 ``duplicate_examples`` / ``missing_examples``."""

    __slots__ = ("ok", "summary", "failures", "counts", "padding", "duplicates", "missing", "out_of_range",
                 "duplicate_examples", "missing_examples")

    def __init__(self, fields):
        for name in self.__slots__:
            setattr(self, name, fields[name])

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return f"PartitionReport({self.summary!r})"


def check_partition(dataset_size, ranks, tail="pad", padding=None):
    """Checks explicit per-rank index lists: ``ranks[r]`` is what rank r read, and
    ``padding[r][i]`` (optional) flags ``ranks[r][i]`` as a tail duplicate.

    Raises ``ConfigError`` for no ranks, padding lists that do not match, or an unknown tail.
    """
    who = "check_partition"
    if isinstance(dataset_size, bool):
        raise ConfigError(f"{who}: dataset_size {dataset_size!r} is a bool (expected an int)")
    try:
        n = operator.index(dataset_size)
    except TypeError:
        raise ConfigError(f"{who}: dataset_size {dataset_size!r} is not an integer (expected an int)") from None
    if n < 0 or n > _MAX_CHECKED_SIZE:
        raise ConfigError(f"{who}: dataset_size {n} is out of range (expected 0..{_MAX_CHECKED_SIZE}: the check keeps "
                          "one byte per dataset index)")
    lists = [[int(i) for i in r] for r in ranks]
    flags = [] if padding is None else [[bool(f) for f in p] for p in padding]
    return PartitionReport(_core.check_partition(n, lists, tail, flags))


def check_samplers(samplers, tail=None):
    """Iterates one sampler per rank (``samplers[r]`` for rank r, e.g.
    ``distsampler.torch.DistributedSampler`` or torch's own) and checks them together.

    The dataset size is ``len(samplers[0].dataset)``; the tail is the samplers' own
    (``tail`` attribute, else from ``drop_last``) unless given. Padding is flagged for
    samplers with ``is_padding``; without it (torch's own sampler), the wrap-around
    duplicates of ``tail="pad"`` are reported as duplicates.
    """
    samplers = list(samplers)
    if not samplers:
        raise ConfigError("check_samplers: no samplers given (expected one per rank)")
    first = samplers[0]
    if tail is None:
        tail = getattr(first, "tail", "drop" if getattr(first, "drop_last", False) else "pad")
    ranks, flags = [], []
    have_flags = all(hasattr(s, "is_padding") for s in samplers)
    for s in samplers:
        got = [int(i) for i in s]
        ranks.append(got)
        if have_flags:
            flags.append([bool(s.is_padding(i)) for i in range(len(got))])
    return check_partition(len(first.dataset), ranks, tail, flags if have_flags else None)


def assert_partition(dataset_size, ranks, tail="pad", padding=None):
    """``check_partition`` that raises ``AssertionError`` with the report's summary."""
    report = check_partition(dataset_size, ranks, tail, padding)
    if not report.ok:
        raise AssertionError(report.summary)
    return report
