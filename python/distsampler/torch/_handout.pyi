# Type stub of distsampler.torch._handout (what a state_dict() without received= may record).
# SPDX-License-Identifier: MIT
from typing import Any, Optional

def recorded(sampler: Any, progress: Optional[Any], who: str, argument: str, noun: str) -> int: ...
