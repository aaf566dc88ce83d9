# Type stub of distsampler.torch.shards (ShardStream: the Python face of the C++ StreamingShardSampler).
# SPDX-License-Identifier: MIT
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence

from ._common import StateDict

class ShardSample(NamedTuple):
    shard: int
    offset: int
    index: int
    is_padding: bool

class ScheduledShard(NamedTuple):
    shard: int
    first_slot: int
    last_slot: int
    samples: int

class ShardStream:
    """The Python face of the C++ StreamingShardSampler: one (rank, worker) stream of a sharded dataset."""

    shard_sizes: List[int]
    num_replicas: int
    rank: int
    epoch: int
    seed: int
    shuffle: bool
    tail: str
    preset: str
    locality: Dict[str, Any]
    def __init__(
        self,
        shard_sizes: Sequence[int],
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        shuffle: bool = ...,
        seed: int = ...,
        tail: str = ...,
        state_capacity: int = ...,
        preset: str = ...,
        canonical_streams: Optional[int] = ...,
        max_open_shards: Optional[int] = ...,
        run_length: Optional[int] = ...,
        shuffle_window: Optional[int] = ...,
        rotate_shards: Optional[bool] = ...,
    ) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
    def worker_samples(self, worker: int, num_workers: int) -> Iterator[ShardSample]: ...
    def shard_schedule(self, worker: int, num_workers: int) -> List[ScheduledShard]: ...
    def rank_shard_schedule(self, num_workers: int) -> List[ScheduledShard]: ...
    def __iter__(self) -> Iterator[ShardSample]: ...
    def __len__(self) -> int: ...
    def state_dict(self, received: Optional[int] = ..., batch_size: Optional[int] = ...,
                   num_workers: Optional[int] = ..., *, batches: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...
