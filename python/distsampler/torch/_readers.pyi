# Type stub of distsampler.torch._readers (the one table of record formats of the file datasets).
# SPDX-License-Identifier: MIT
import os
from typing import Any, Dict, Optional, Sequence, Tuple

EXTENSIONS: Dict[str, str]
READERS: Dict[str, Any]

def file_identity(st: os.stat_result) -> Tuple[int, int, int]: ...
def changed_error(who: str, path: str, then: Tuple[int, int, int], now: Optional[Tuple[int, int, int]],
                  fix: str) -> Exception: ...

class ShardFile:
    who: str
    path: str
    identity: Tuple[int, int, int]
    fix: str
    keep_open: bool
    fd: Optional[int]
    def __init__(self, who: str, path: str, identity: Tuple[int, int, int], fix: str,
                 keep_open: bool = ...) -> None: ...
    def check(self) -> None: ...
    def read(self, start: int, size: int) -> bytearray: ...
    def close(self) -> None: ...

def format_of(who: str, path: str, fmt: Optional[str], formats: Sequence[str]) -> str: ...

class SequentialReader:
    path: str
    def __init__(self, path: str, fmt: str) -> None: ...
    def get(self, i: int) -> Optional[Any]: ...
