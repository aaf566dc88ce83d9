# Type stub of distsampler.torch.
# SPDX-License-Identifier: MIT
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Sized, Tuple, Union

import numpy as np
import torch
import torch.utils.data.distributed
from torch.utils.data import Sampler

StateDict = Dict[str, Any]

def default_torch_generation(version: Optional[str] = ...) -> str: ...

class DistributedSampler(torch.utils.data.distributed.DistributedSampler):
    dataset: Sized
    num_replicas: int
    rank: int
    epoch: int
    seed: int
    shuffle: bool
    drop_last: bool
    num_samples: int
    total_size: int
    order: str
    tail: str
    torch_generation: str
    def __init__(
        self,
        dataset: Sized,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        shuffle: bool = ...,
        seed: int = ...,
        drop_last: bool = ...,
        *,
        order: str = ...,
        tail: Optional[str] = ...,
        torch_generation: Optional[str] = ...,
    ) -> None: ...
    def __iter__(self) -> Iterator[int]: ...
    def __len__(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self, samples: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...
    def is_padding(self, i: int) -> bool: ...
    def indices(self, as_numpy: bool = ...) -> Union[List[int], np.ndarray]: ...

class _StepSampler(Sampler[Any]):
    num_replicas: int
    rank: int
    epoch: int
    seed: int
    shuffle: bool
    tail: str
    micro_batch_size: int
    accumulation_steps: int
    global_batch_size: int
    @property
    def num_steps(self) -> int: ...
    def __len__(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self, batches: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...

class DistributedBatchSampler(_StepSampler):
    dataset: Sized
    order: str
    as_numpy: bool
    def __init__(
        self,
        dataset: Sized,
        micro_batch_size: int,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        accumulation_steps: Optional[int] = ...,
        global_batch_size: Optional[int] = ...,
        shuffle: bool = ...,
        seed: int = ...,
        tail: str = ...,
        order: str = ...,
        torch_generation: Optional[str] = ...,
        as_numpy: bool = ...,
    ) -> None: ...
    def __iter__(self) -> Iterator[Union[List[int], np.ndarray]]: ...

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
    shard_sizes: List[int]
    num_replicas: int
    rank: int
    epoch: int
    seed: int
    shuffle: bool
    tail: str
    def __init__(
        self,
        shard_sizes: Sequence[int],
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        shuffle: bool = ...,
        seed: int = ...,
        tail: str = ...,
    ) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
    def worker_samples(self, worker: int, num_workers: int) -> Iterator[ShardSample]: ...
    def shard_schedule(self, worker: int, num_workers: int) -> List[ScheduledShard]: ...
    def rank_shard_schedule(self, num_workers: int) -> List[ScheduledShard]: ...
    def __iter__(self) -> Iterator[ShardSample]: ...
    def __len__(self) -> int: ...
    def state_dict(self, batches: int, batch_size: int, num_workers: int) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...

class EmptyToNone:
    collate_fn: Optional[Callable[[List[Any]], Any]]
    def __init__(self, collate_fn: Optional[Callable[[List[Any]], Any]] = ...) -> None: ...
    def __call__(self, batch: List[Any]) -> Any: ...

class TokenBatchSampler(Sampler[List[int]]):
    lengths: np.ndarray
    max_tokens: int
    num_replicas: int
    rank: int
    epoch: int
    seed: int
    shuffle: bool
    cost: str
    quadratic_q: int
    max_samples: Optional[int]
    batch_multiple: int
    window: int
    accumulation_steps: int
    longest_first: bool
    oversize: str
    tail: str
    order: str
    def __init__(
        self,
        lengths: Union[np.ndarray, Sequence[int], Any],
        max_tokens: int,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        accumulation_steps: int = ...,
        cost: str = ...,
        quadratic_q: int = ...,
        max_samples: Optional[int] = ...,
        batch_multiple: int = ...,
        window: int = ...,
        longest_first: bool = ...,
        oversize: str = ...,
        shuffle: bool = ...,
        seed: int = ...,
    ) -> None: ...
    @property
    def num_steps(self) -> int: ...
    @property
    def stats(self) -> Dict[str, Union[int, float]]: ...
    @property
    def layout_hash(self) -> int: ...
    def __iter__(self) -> Iterator[List[int]]: ...
    def __len__(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def micro_batch(self, step: int, k: int = ...) -> Tuple[List[int], int, int, bool]: ...
    def state_dict(self, batches: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...

def guard(sampler: Any, group: Any = ...) -> List[Dict[str, Any]]: ...

class MixtureBatchSampler(_StepSampler):
    source_sizes: List[int]
    offsets: List[int]
    weights: List[float]
    end: str
    end_count: int
    replacement: bool
    schedule: List[Tuple[int, List[float]]]
    mixing_block: int
    as_pairs: bool
    def __init__(
        self,
        sources: Sequence[Union[int, Sized]],
        weights: Union[Sequence[float], torch.Tensor],
        micro_batch_size: int,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        accumulation_steps: Optional[int] = ...,
        global_batch_size: Optional[int] = ...,
        shuffle: bool = ...,
        seed: int = ...,
        tail: str = ...,
        end: str = ...,
        end_count: Optional[int] = ...,
        replacement: bool = ...,
        schedule: Optional[Sequence[Tuple[int, Sequence[float]]]] = ...,
        mixing_block: Optional[int] = ...,
        as_pairs: bool = ...,
    ) -> None: ...
    @property
    def dataset_size(self) -> int: ...
    def __iter__(self) -> Iterator[Union[List[int], List[Tuple[int, int]]]]: ...
    def pairs_of(self, global_indices: Sequence[int]) -> List[Tuple[int, int]]: ...

class DistributedWeightedRandomSampler(Sampler[int]):
    weights: List[float]
    num_samples: int
    replacement: bool
    num_replicas: int
    rank: int
    epoch: int
    seed: int
    shuffle: bool
    tail: str
    def __init__(
        self,
        weights: Union[Sequence[float], torch.Tensor],
        num_samples: int,
        replacement: bool = ...,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        seed: int = ...,
        tail: str = ...,
    ) -> None: ...
    def __iter__(self) -> Iterator[int]: ...
    def __len__(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self, samples: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...
from .sharded import ShardedDataset as ShardedDataset, ShardedItem as ShardedItem
