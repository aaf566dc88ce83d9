# Type stub of distsampler.torch.streams (StreamDataset, StreamPacker, StreamItem, StreamBatch), re-exported by distsampler.torch.
# SPDX-License-Identifier: MIT
import os
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch

_Path = Union[str, "os.PathLike[str]"]

class StreamItem(NamedTuple):
    record: Any
    pass_: int
    shard: int
    index: int

class StreamBatch(NamedTuple):
    data: Any
    consumer: int
    progress: Tuple[int, int, int, List[Tuple[int, int, int, int, int]]]

MAX_SEQUENCE_LENGTH: int
MAX_ITEM_OUTPUTS: int
MAX_CONSUMERS: int
MAX_STATE_CAPACITY: int

class StreamPacker:
    sequence_length: int
    tokenize: Callable[[Any], Sequence[int]]
    def __init__(self, sequence_length: int, tokenize: Callable[[Any], Sequence[int]]) -> None: ...

class StreamDataset(torch.utils.data.IterableDataset[Any]):
    paths: List[str]
    formats: List[str]
    byte_sizes: List[int]
    world_size: int
    rank: int
    micro_batch: int
    seed: int
    filter: Optional[Callable[[Any], bool]]
    packer: Optional[StreamPacker]
    share: Union[int, str]
    epoch: int
    shuffle: bool
    @property
    def num_replicas(self) -> int: ...
    def __init__(
        self,
        paths: Sequence[_Path],
        format: Optional[str] = ...,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        micro_batch: int,
        seed: int = ...,
        filter: Optional[Callable[[Any], bool]] = ...,
        packer: Optional[StreamPacker] = ...,
        byte_sizes: Union[str, Sequence[int], None] = ...,
        share: Union[int, str] = ...,
        state_capacity: int = ...,
    ) -> None: ...
    def __iter__(self) -> Iterator[StreamBatch]: ...
    def state_dict(self, received: Optional[int] = ...) -> Dict[str, Any]: ...
    def job_state(self, parts: Sequence[Dict[str, Any]]) -> str: ...
    def load_state_dict(self, state: Union[str, Dict[str, Any], List[Dict[str, Any]]]) -> None: ...
