# Type stub of distsampler.torch.sharded (ShardedDataset, ShardedItem), re-exported by distsampler.torch.
# SPDX-License-Identifier: MIT
import os
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Union

import torch

from .shards import ShardStream

_Path = Union[str, "os.PathLike[str]"]

class ShardedItem(NamedTuple):
    record: Any
    is_padding: bool

class ShardedDataset(torch.utils.data.IterableDataset[Any]):
    paths: List[str]
    indexes: List[Dict[str, Any]]
    record_counts: List[int]
    stream: ShardStream
    decode: Optional[Callable[[Any], Any]]
    return_padding: bool
    max_open_files: int
    num_workers: int
    def __init__(
        self,
        paths: Sequence[_Path],
        format: Optional[str] = ...,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        shuffle: bool = ...,
        seed: int = ...,
        tail: str = ...,
        cache_dir: Optional[_Path] = ...,
        threads: Optional[int] = ...,
        decode: Optional[Callable[[Any], Any]] = ...,
        return_padding: Optional[bool] = ...,
        rebuild: bool = ...,
        cache: bool = ...,
        max_open_files: int = ...,
        num_workers: int = ...,
        preset: str = ...,
        canonical_streams: Optional[int] = ...,
        max_open_shards: Optional[int] = ...,
        run_length: Optional[int] = ...,
        shuffle_window: Optional[int] = ...,
        rotate_shards: Optional[bool] = ...,
        dtype: Optional[Any] = ...,
        eos: Optional[int] = ...,
        strict: bool = ...,
    ) -> None: ...
    @property
    def num_replicas(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def shuffle(self) -> bool: ...
    @property
    def tail(self) -> str: ...
    def set_epoch(self, epoch: int) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def read(self, shard: int, offset: int) -> Any: ...
    def state_dict(self, received: Optional[int] = ..., batch_size: Optional[int] = ...,
                   num_workers: Optional[int] = ..., *, batches: Optional[int] = ...) -> Dict[str, Any]: ...
    def load_state_dict(self, state_dict: Dict[str, Any]) -> None: ...
    def close(self) -> None: ...
