# Type stub of distsampler.torch.loader (DataLoader: checkpoints of what the training loop received).
# SPDX-License-Identifier: MIT
from typing import Any, Iterator, NamedTuple

import torch
import torch.utils.data

from ._common import StateDict

class MaskedBatch(NamedTuple):
    data: Any
    is_padding: torch.Tensor

class DataLoader(torch.utils.data.DataLoader):
    def __init__(self, dataset: Any, *args: Any, padding_mask: bool = ..., guard: Any = ..., **kwargs: Any) -> None: ...
    def __iter__(self) -> Iterator[Any]: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> StateDict: ...
    def load_state_dict(self, state_dict: StateDict) -> None: ...
