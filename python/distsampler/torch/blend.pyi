# Type stub of distsampler.torch.blend.
# SPDX-License-Identifier: MIT
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

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
