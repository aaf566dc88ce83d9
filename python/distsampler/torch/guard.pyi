# Type stub of distsampler.torch.guard.
# SPDX-License-Identifier: MIT
from typing import Any, Dict, List

def guard(sampler: Any, group: Any = ..., mesh: Any = ...) -> List[Dict[str, Any]]: ...
