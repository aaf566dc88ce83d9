# Type stub of distsampler.torch.sampler.
# SPDX-License-Identifier: MIT
from typing import Iterator, List, Optional, Sized, Union

import numpy as np
import torch.utils.data.distributed

from ._common import StateDict

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
    def state_dict(self, received: Optional[int] = ..., *, samples: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...
    def is_padding(self, i: int) -> bool: ...
    def indices(self, as_numpy: bool = ...) -> Union[List[int], np.ndarray]: ...
