# Type stub of distsampler.torch.
# SPDX-License-Identifier: MIT
from ._common import default_torch_generation as default_torch_generation
from .batch import DistributedBatchSampler as DistributedBatchSampler
from .blend import (
    BlendDataset as BlendDataset,
    BlendSampler as BlendSampler,
    collate_blend as collate_blend,
    read_blend_config as read_blend_config,
)
from .guard import guard as guard
from .loader import DataLoader as DataLoader, MaskedBatch as MaskedBatch
from .mixture import MixtureBatchSampler as MixtureBatchSampler
from .packing import (
    MegatronIndex as MegatronIndex,
    PackedSequenceDataset as PackedSequenceDataset,
    PackedSequenceSampler as PackedSequenceSampler,
    collate_packed as collate_packed,
    megatron_documents as megatron_documents,
    megatron_tokens as megatron_tokens,
    raw_documents as raw_documents,
    read_megatron_index as read_megatron_index,
)
from .sampler import DistributedSampler as DistributedSampler
from .shards import ScheduledShard as ScheduledShard, ShardSample as ShardSample, ShardStream as ShardStream
from .sharded import ShardedDataset as ShardedDataset, ShardedItem as ShardedItem
from .streams import StreamBatch as StreamBatch, StreamDataset as StreamDataset, StreamItem as StreamItem, StreamPacker as StreamPacker
from .tokens import EmptyToNone as EmptyToNone, TokenBatchSampler as TokenBatchSampler
from .weighted import DistributedWeightedRandomSampler as DistributedWeightedRandomSampler

__all__: list[str]
