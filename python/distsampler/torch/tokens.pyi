# Type stub of distsampler.torch.tokens.
# SPDX-License-Identifier: MIT
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import StateDict
from .batch import _StepSampler

class EmptyToNone:
    collate_fn: Optional[Callable[[List[Any]], Any]]
    def __init__(self, collate_fn: Optional[Callable[[List[Any]], Any]] = ...) -> None: ...
    def __call__(self, batch: List[Any]) -> Any: ...

class TokenBatchSampler(_StepSampler):
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
    def state_dict(self, received: Optional[int] = ..., *, batches: Optional[int] = ...) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...
