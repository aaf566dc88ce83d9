# Type stub of distsampler.torch.packing.
# SPDX-License-Identifier: MIT
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .batch import _StepSampler

Piece = Tuple[int, int, int]
PackedSequence = Tuple[Piece, ...]

class MegatronIndex(NamedTuple):
    sizes: np.ndarray
    offsets: np.ndarray
    dtype: np.dtype
    bin_path: str
    document_indices: np.ndarray

def read_megatron_index(path: Union[str, os.PathLike]) -> MegatronIndex: ...
class _BinTokens:
    path: str
    dtype: np.dtype
    @property
    def size(self) -> int: ...
    @property
    def shape(self) -> Tuple[int]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: Union[int, slice]) -> Any: ...
    def __array__(self, dtype: Any = ...) -> np.ndarray: ...

def megatron_tokens(prefix: Union[str, os.PathLike]) -> Tuple[_BinTokens, np.ndarray, MegatronIndex]: ...
def megatron_documents(prefix: Union[str, os.PathLike]) -> Tuple[_BinTokens, np.ndarray, np.ndarray]: ...
def raw_documents(
    path: Union[str, os.PathLike],
    dtype: Any,
    eos: int,
    *,
    cache_dir: Optional[Union[str, os.PathLike]] = ...,
    cache: bool = ...,
    strict: bool = ...,
) -> Tuple[_BinTokens, np.ndarray, np.ndarray]: ...

class PackedSequenceSampler(_StepSampler):
    lengths: np.ndarray
    seq_len: int
    micro_batch_size: int
    num_replicas: int
    rank: int
    epoch: int
    seed: int
    shuffle: bool
    mode: str
    window: int
    chunk: int
    split_long: bool
    plan_limit: int
    accumulation_steps: int
    global_batch_size: int
    tail: str
    order: str
    def __init__(
        self,
        lengths: Union[np.ndarray, Sequence[int], Any],
        seq_len: int,
        micro_batch_size: int = ...,
        num_replicas: Optional[int] = ...,
        rank: Optional[int] = ...,
        *,
        accumulation_steps: Optional[int] = ...,
        global_batch_size: Optional[int] = ...,
        mode: str = ...,
        window: int = ...,
        chunk: Optional[int] = ...,
        split_long: bool = ...,
        shuffle: bool = ...,
        seed: int = ...,
        plan_limit: int = ...,
    ) -> None: ...
    @property
    def stats(self) -> Dict[str, Union[int, float]]: ...
    @property
    def num_sequences(self) -> int: ...
    @property
    def plan_bytes(self) -> int: ...
    @property
    def plan_stride(self) -> int: ...
    @property
    def layout_hash(self) -> int: ...
    def micro_batch(self, step: int, k: int = ...) -> List[PackedSequence]: ...
    def _guard_description(self) -> Dict[str, Any]: ...

class PackedSequenceDataset(torch.utils.data.Dataset):
    tokens: Any
    offsets: np.ndarray
    def __init__(self, tokens: Any, offsets: Union[np.ndarray, Sequence[int]]) -> None: ...
    def __getitem__(self, pieces: PackedSequence) -> Tuple[PackedSequence, List[np.ndarray]]: ...

def collate_packed(batch: List[Tuple[PackedSequence, List[np.ndarray]]], seq_len: int,
                   pad_id: int = ...) -> Dict[str, Any]: ...
