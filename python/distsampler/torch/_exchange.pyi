# Type stub of distsampler.torch._exchange.
# SPDX-License-Identifier: MIT
from typing import Any, List

def exchange(store: Any, ns: str, rank: int, world: int, mine: bytes, timeout: float, who: str) -> List[bytes]: ...
