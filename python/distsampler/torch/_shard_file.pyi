# Type stub of distsampler.torch._shard_file (a shard file read by positioned reads, refused once it changed).
# SPDX-License-Identifier: MIT
import os
from typing import Optional, Tuple

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
