# Type stub of distsampler.torch.blend.
# SPDX-License-Identifier: MIT
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from .batch import _StepSampler

def read_blend_config(config: Union[Dict[str, Any], str, os.PathLike]) -> Dict[str, Any]: ...

class BlendSampler(_StepSampler):
    config: Dict[str, Any]
    source_names: List[str]
    seed: int
    shuffle: bool
    def __init__(
        self,
        config: Union[Dict[str, Any], str, os.PathLike],
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
    ) -> None: ...
    def __iter__(self) -> Iterator[List[List[Tuple[str, int, int, int]]]]: ...

class BlendDataset(torch.utils.data.Dataset[Any]):
    sources: Dict[str, Any]
    def __init__(self, sources: Dict[str, Tuple[Any, Any]]) -> None: ...
    @classmethod
    def from_megatron(cls, prefixes: Dict[str, Union[str, os.PathLike]]) -> "BlendDataset": ...
    def __getitem__(self, pieces: Sequence[Tuple[str, int, int, int]]) -> Tuple[Tuple[Tuple[str, int, int, int], ...], List[Any]]: ...

def collate_blend(batch: List[Any], seq_len: int, pad_id: int = ...) -> Dict[str, Any]: ...
