# Type stub of distsampler.torch.batch.
# SPDX-License-Identifier: MIT
from typing import Any, Iterator, List, Optional, Sized, Union

import numpy as np
from torch.utils.data import Sampler

from ._common import StateDict

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
    def state_dict(self, received: Optional[int] = ..., *, batches: Optional[int] = ...) -> StateDict: ...
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
