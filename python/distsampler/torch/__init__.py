# distsampler.torch: drop-in torch samplers (index, batch, shard stream) with checkpoints; a torch.distributed guard.
# SPDX-License-Identifier: MIT
"""torch adapters of the distsampler C++ samplers.

- ``DistributedSampler``: a subclass of ``torch.utils.data.distributed.DistributedSampler``
  with O(1) memory (``order="feistel"``, the default) or torch's exact order
  (``order="torch"``), exact evaluation (``tail="uneven"``) and ``state_dict`` /
  ``load_state_dict`` for mid-epoch checkpoints.
- ``DistributedBatchSampler``: micro-batches of each optimizer step, for a DataLoader's
  ``batch_sampler``; resumable on another world size.
- ``ShardStream``: one (rank, DataLoader worker) stream of a sharded dataset, for an
  ``IterableDataset`` (the Python face of the C++ ``StreamingShardSampler``).
- ``ShardedDataset``: an ``IterableDataset`` over shard files (JSON Lines, WebDataset tar,
  Megatron ``.idx``/``.bin``, ``.npy``) whose record counts are indexed for you, read
  through a ``ShardStream``.
- ``TokenBatchSampler``: micro-batches under a token budget from per-sample lengths, the
  same number on every rank in every step (empty micro-batches flagged, never dropped),
  for a DataLoader's ``batch_sampler``; ``EmptyToNone`` is its ``collate_fn`` wrapper.
- ``MixtureBatchSampler``: micro-batches mixing several sources in exact per-step
  proportions, as global indices into their concatenation (``ConcatDataset``).
- ``PackedSequenceSampler``: fixed-length sequences packed from variable-length documents
  (concat or best-fit), equal steps on every rank, exact elastic resume;
  ``PackedSequenceDataset`` and ``collate_packed`` turn its pieces into tensors,
  ``read_megatron_index`` / ``megatron_tokens`` / ``megatron_documents`` read a Megatron indexed dataset,
  ``raw_documents`` a raw token file's documents.
- ``DistributedWeightedRandomSampler``: torch's ``WeightedRandomSampler``, split over ranks.
- ``DataLoader``: torch's ``DataLoader`` over these samplers whose ``state_dict`` names
  the batches the training loop received (never what workers prefetched).
- ``StreamDataset``: an ``IterableDataset`` over shard files of unknown size, read by
  passes with a read-time ``filter`` and on-the-fly packing (``StreamPacker``), the same
  steps on every rank without a collective, resumable on any world.
- ``BlendSampler``: sources packed on their own, pass after pass, and blended by weight
  as whole sequences, from one JSON config (``read_blend_config`` checks it);
  ``BlendDataset`` and ``collate_blend`` turn its pieces into tensors.
- ``guard``: checks with ``torch.distributed`` that every rank built the same sampler.

The world (rank and world size) comes from the explicit arguments when given, else from
``torch.distributed`` when it is initialized, else from the launcher's environment
(``RANK``/``WORLD_SIZE``, Open MPI, PMI, SLURM; strict parsing, errors raise
``ConfigError``). There is no silent single-process default: pass ``num_replicas=1,
rank=0`` for one process.

Each family lives in its own module (``sampler``, ``batch``, ``shards``, ``sharded``,
``tokens``, ``mixture``, ``packing``, ``blend``, ``weighted``, ``guard``, ``loader``); import the names from
``distsampler.torch``, the
path every public class reports as its ``__module__`` (and pickles record).
"""

from ._common import default_torch_generation
from .batch import DistributedBatchSampler
from .blend import BlendDataset, BlendSampler, collate_blend, read_blend_config
from .guard import guard
from .loader import DataLoader, MaskedBatch
from .mixture import MixtureBatchSampler
from .packing import (MegatronIndex, PackedSequenceDataset, PackedSequenceSampler, collate_packed, megatron_documents,
                      megatron_tokens, raw_documents, read_megatron_index)
from .sampler import DistributedSampler
from .shards import ScheduledShard, ShardSample, ShardStream
from .sharded import ShardedDataset, ShardedItem
from .streams import StreamBatch, StreamDataset, StreamItem, StreamPacker
from .tokens import EmptyToNone, TokenBatchSampler
from .weighted import DistributedWeightedRandomSampler

__all__ = [
    "DistributedSampler",
    "DistributedBatchSampler",
    "ShardStream",
    "ShardSample",
    "ScheduledShard",
    "TokenBatchSampler",
    "EmptyToNone",
    "MixtureBatchSampler",
    "DistributedWeightedRandomSampler",
    "guard",
    "default_torch_generation",
    "DataLoader",
    "MaskedBatch",
    "ShardedDataset",
    "ShardedItem",
    "PackedSequenceSampler",
    "PackedSequenceDataset",
    "collate_packed",
    "read_megatron_index",
    "megatron_tokens",
    "megatron_documents",
    "raw_documents",
    "MegatronIndex",
    "StreamDataset",
    "StreamPacker",
    "StreamItem",
    "StreamBatch",
    "BlendSampler",
    "BlendDataset",
    "collate_blend",
    "read_blend_config",
]
