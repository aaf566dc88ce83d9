# Type stub of distsampler.torch.weighted.
# SPDX-License-Identifier: MIT
from typing import Iterator, List, Optional, Sequence, Union

import torch
from torch.utils.data import Sampler

from ._common import StateDict

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
    def state_dict(self, received: Optional[int] = ..., *, samples: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...
