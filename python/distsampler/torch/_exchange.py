# distsampler.torch._exchange: every rank's guard record through the process group's store, one decision, a timeout.
# SPDX-License-Identifier: MIT
import datetime
import time

from .._core import ConfigError

_STORE_GONE = ("Connection reset", "Broken pipe", "Connection refused", "Connection closed")


def _store_gone_hint(reason):
    """What to add to a store error that says the store's server went away (a TCPStore's
    server runs in the process that created it, usually rank 0)."""
    if any(sign in reason for sign in _STORE_GONE):
        return ("; the store's server is gone (a TCPStore's runs in the process that created it, usually rank 0, "
                "which has died or closed it): restart every rank from the last checkpoint")
    return ""


def timeout_seconds(timeout):
    """`timeout` (seconds, or a datetime.timedelta) as float seconds; ConfigError unless positive."""
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(f"guard: timeout={timeout!r} is not a positive number of seconds "
                          f"(expected e.g. timeout=60 or a datetime.timedelta)")
    return float(timeout)


def _seconds_text(seconds):
    # 20 -> "20 s", 0.5 -> "0.5 s": a timeout as messages show it.
    return f"{seconds:g} s"


def _ranks_text(ranks):
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def exchange(store, ns, rank, world, mine, timeout, who):
    """Publishes `mine` (bytes) under `ns` and returns every rank's record (index = rank), or raises
    ConfigError with the same message on every live rank: the protocol of the C++ c10d guard
    (include/distsampler/torch/exchange.hpp). Rank r sets ns/record/r, counts itself in (ns/in,
    ns/in/r); once ns/in reaches `world` it reads every record and counts itself out (ns/out,
    ns/out/r). A rank that sees ns/out reach `world` proposes "ok"; one whose deadline (entry +
    `timeout` seconds) passes first proposes a failure naming the ranks not counted in (did not
    arrive) or not out (died or stalled inside). The first proposal wins (compare_set on
    ns/decision) and every rank acts on it. Rank 0 returns once every rank it expects has read
    the decision (or after another `timeout`) and deletes the keys when all did."""
    deadline = time.monotonic() + timeout
    expectation = (f" within {_seconds_text(timeout)} (expected all {world} ranks to call the guard, "
                   f"equally often, on one store")
    stage = "write"
    proposal, records = None, None

    def wait_all(counter, flag, what):
        # True once `counter` reaches world; False when a decision exists or the deadline passed.
        nonlocal proposal
        pause = 0.001
        while True:
            if store.add(f"{ns}/{counter}", 0) == world:
                return True
            if store.add(f"{ns}/decided", 0) > 0:
                return False
            if time.monotonic() >= deadline:
                absent = [q for q in range(world) if store.add(f"{ns}/{flag}/{q}", 0) == 0]
                if absent:  # else the last rank has just caught up: look again
                    proposal = f"fail {len(absent)} {_ranks_text(absent)}{what}"
                    return False
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    try:
        store.set(f"{ns}/record/{rank}", mine)
        store.add(f"{ns}/in", 1)  # the counter before the flag, as in C++
        store.add(f"{ns}/in/{rank}", 1)
        stage = "read"
        if wait_all("in", "in", f" did not arrive{expectation})"):
            records = [store.get(f"{ns}/record/{q}") for q in range(world)]
            store.add(f"{ns}/out", 1)
            store.add(f"{ns}/out/{rank}", 1)
            if wait_all("out", "out", f" arrived but did not finish{expectation}; it died or stalled inside)"):
                proposal = "ok"
        if proposal is not None:
            decision = store.compare_set(f"{ns}/decision", "", proposal)
            store.add(f"{ns}/decided", 1)
        else:
            decision = store.get(f"{ns}/decision")
        decision = decision.decode() if isinstance(decision, bytes) else decision
        store.add(f"{ns}/left", 1)
        if rank == 0:
            expected = world if decision == "ok" else world - int(decision.split(" ")[1])
            until, pause = time.monotonic() + timeout, 0.001
            while store.add(f"{ns}/left", 0) < expected and time.monotonic() < until:
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            if decision == "ok" and store.add(f"{ns}/left", 0) == world:
                for q in range(world):
                    for part in ("record", "in", "out"):
                        store.delete_key(f"{ns}/{part}/{q}")
                for part in ("in", "out", "decided", "decision", "left"):
                    store.delete_key(f"{ns}/{part}")
    except RuntimeError as e:
        reason = str(e).split("\n")[0]
        raise ConfigError(f"{who}: rank {rank} failed to {stage} the store keys under '{ns}' (expected all {world} "
                          f"ranks to call the guard, equally often, on one store): {reason}{_store_gone_hint(reason)}"
                          ) from None
    if decision != "ok":
        raise ConfigError(f"{who}: {decision.split(' ', 2)[2]}")
    return records
