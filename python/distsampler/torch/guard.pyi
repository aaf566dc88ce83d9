# Type stub of distsampler.torch.guard.
# SPDX-License-Identifier: MIT
from typing import Any, Dict, List

def guard(sampler: Any, group: Any = ...) -> List[Dict[str, Any]]: ...
