# Type stub of distsampler.torch._readers (the one table of record formats of the file datasets).
# SPDX-License-Identifier: MIT
from typing import Any, Dict, Optional, Sequence

EXTENSIONS: Dict[str, str]
READERS: Dict[str, Any]

def format_of(who: str, path: str, fmt: Optional[str], formats: Sequence[str]) -> str: ...

class SequentialReader:
    path: str
    def __init__(self, path: str, fmt: str) -> None: ...
    def get(self, i: int) -> Optional[Any]: ...
