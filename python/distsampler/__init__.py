# distsampler for Python: the C++ samplers (disjoint, covering, balanced, deterministic, resumable) as a package.
# SPDX-License-Identifier: MIT
"""Distributed samplers for ML training.

Every rank builds the same sampler (same dataset size, seed and options) and reads a
disjoint share of each epoch; together the ranks cover the dataset. The algorithms are
the C++ library's (``distsampler._core`` is a binding of its headers).

Submodules:
  - ``distsampler.torch``: drop-in ``DistributedSampler``, ``DistributedBatchSampler``,
    ``ShardStream`` for ``IterableDataset``, ``TokenBatchSampler`` (micro-batches under a
    token budget, equal steps on every rank), ``MixtureBatchSampler`` (sources mixed in exact
    per-step proportions), ``DistributedWeightedRandomSampler``, and ``guard`` for
    ``torch.distributed``.
  - ``distsampler.mesh``: the data-parallel rank and world of a parallel mesh (tensor,
    context, pipeline, expert parallelism), from named sizes or a torch ``DeviceMesh``.
  - ``distsampler.verify``: partition checks for tests.

Errors: ``ConfigError`` (bad configuration) and ``StateError`` (bad or mismatched saved
state) are both subclasses of ``ValueError`` and carry the C++ library's message.
"""

from ._core import ConfigError, StateError, version as __version__
from . import mesh, verify

__all__ = ["ConfigError", "StateError", "__version__", "mesh", "verify"]
