# Type stub of distsampler.torch.guard.
# SPDX-License-Identifier: MIT
import datetime
from typing import Any, Dict, List, Optional, Union

def guard(
    sampler: Any, group: Any = ..., timeout: Optional[Union[float, datetime.timedelta]] = ..., mesh: Any = ...
) -> List[Dict[str, Any]]: ...
