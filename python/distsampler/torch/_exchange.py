# distsampler.torch._exchange: every rank's guard record through the process group's store, one decision, a timeout.
# SPDX-License-Identifier: MIT
"""The guard's transport is the C++ protocol (include/distsampler/store_exchange.hpp), the one
the c10d guard runs, here over the Python store object; only the timeout argument is Python's."""
import datetime

from .. import _core
from .._core import ConfigError


def timeout_seconds(timeout):
    """`timeout` (seconds, or a datetime.timedelta) as float seconds; ConfigError unless positive."""
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(f"guard: timeout={timeout!r} is not a positive number of seconds "
                          f"(expected e.g. timeout=60 or a datetime.timedelta)")
    return float(timeout)


def exchange(store, ns, rank, world, mine, timeout, who):
    """Publishes `mine` (bytes) under `ns` and returns every rank's record (index = rank), or raises
    ConfigError with the same message on every live rank: store_exchange.hpp's protocol, run by
    the C++ core over `store` (a torch.distributed Store; its RuntimeErrors are the store failing)."""
    return _core.guard_exchange(store, ns, rank, world, mine=mine, timeout=timeout, who=who)
