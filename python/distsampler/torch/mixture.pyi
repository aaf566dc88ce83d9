# Type stub of distsampler.torch.mixture.
# SPDX-License-Identifier: MIT
from typing import Iterator, List, Optional, Sequence, Sized, Tuple, Union

import torch

from .batch import _StepSampler

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
