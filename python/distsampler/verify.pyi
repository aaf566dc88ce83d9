# Type stub of distsampler.verify.
# SPDX-License-Identifier: MIT
from typing import Any, Iterable, List, Optional, Sequence

class PartitionReport:
    ok: bool
    summary: str
    failures: List[str]
    counts: List[int]
    padding: List[int]
    duplicates: int
    missing: int
    out_of_range: int
    duplicate_examples: List[int]
    missing_examples: List[int]
    def __bool__(self) -> bool: ...

def check_partition(
    dataset_size: int, ranks: Sequence[Sequence[int]], tail: str = ..., padding: Optional[Sequence[Sequence[bool]]] = ...
) -> PartitionReport: ...
def check_samplers(samplers: Iterable[Any], tail: Optional[str] = ...) -> PartitionReport: ...
def assert_partition(
    dataset_size: int, ranks: Sequence[Sequence[int]], tail: str = ..., padding: Optional[Sequence[Sequence[bool]]] = ...
) -> PartitionReport: ...
