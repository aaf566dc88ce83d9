# Type stub of distsampler.torch._common (the shared helpers).
# SPDX-License-Identifier: MIT
from typing import Any, Dict, Optional

StateDict = Dict[str, Any]
PUBLIC_MODULE: str

def default_torch_generation(version: Optional[str] = ...) -> str: ...
