# Type stub of distsampler.torch._exchange.
# SPDX-License-Identifier: MIT
import datetime
from typing import Any, List, Union

def timeout_seconds(timeout: Union[float, datetime.timedelta]) -> float: ...

def exchange(store: Any, ns: str, rank: int, world: int, mine: bytes, timeout: float, who: str) -> List[bytes]: ...
