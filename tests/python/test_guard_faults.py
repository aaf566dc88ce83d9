# The Python guard when a rank never calls it, dies before, inside or after it, or comes late: 3 real processes.
# SPDX-License-Identifier: MIT
import concurrent.futures
import datetime
import os
import socket
import subprocess
import sys
import time

import pytest

import distsampler
from distsampler.torch import guard

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard_fault_worker.py")
TIMEOUT = 2.0
MODES = ("absent", "absent-group", "die-before", "die-publish", "die-read", "die-after", "late")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(mode, world=3):
    """Runs the job; returns ({rank: printed line}, {rank: exit code}, seconds from start to the last exit)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    port, start = free_port(), time.monotonic()
    procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(r), str(world), mode, str(TIMEOUT)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    lines, codes = {}, {}
    for r, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"{mode}: rank {r} hung")
        codes[r] = p.returncode
        for line in out.splitlines():
            if line.startswith(f"rank {r}: "):
                lines[r] = line[len(f"rank {r}: "):]
        if r not in lines and p.returncode != -9:
            lines[r] = f"(nothing printed; stderr: {err[-1500:]})"
    return lines, codes, time.monotonic() - start


@pytest.fixture(scope="module")
def jobs():
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(MODES, pool.map(launch, MODES)))


ABSENT = ("guard: rank 2 did not arrive within 2 s (expected all 3 ranks to call the guard, equally often, "
          "on one store)")
INSIDE = ("guard: rank 2 arrived but did not finish within 2 s (expected all 3 ranks to call the guard, equally "
          "often, on one store; it died or stalled inside)")


@pytest.mark.parametrize("mode,expected,printing", [
    ("absent", ABSENT, (0, 1)),
    ("absent-group", ABSENT.replace("2 s", "10 s"), (0, 1)),  # no timeout given: the group's, not one of its own
    ("die-before", ABSENT, (0, 1)),
    ("die-publish", INSIDE, (0, 1)),
    ("die-read", INSIDE, (0, 1)),
    ("late", ABSENT, (0, 1, 2)),  # the late rank fails with the others' decision
    ("die-after", "ok", (0, 1, 2)),  # it died after the decision: the verdict stands
])
@pytest.mark.processes
def test_every_live_rank_gets_the_same_verdict_or_the_same_failure_naming_the_missing_rank(jobs, mode, expected,
                                                                                         printing):
    lines, codes, _ = jobs[mode]
    for r in printing:
        assert lines.get(r) == expected, (mode, r, lines)
        if not (mode.startswith("die-") and r == 2):
            assert codes[r] == 0, (mode, r, codes)
    if mode.startswith("die-"):
        assert codes[2] == -9, codes


@pytest.mark.processes
def test_the_live_ranks_fail_within_seconds_not_the_group_timeout(jobs):
    # The group's timeout is 120 s; the guard's is 2 s (the late modes sleep 5 s on purpose).
    for mode in ("absent", "absent-group", "die-before", "die-publish", "die-read"):
        assert jobs[mode][2] < 60, (mode, jobs[mode][2])


def test_guard_refuses_a_timeout_that_is_not_a_positive_number():
    class Sampler:  # never reached: the timeout is checked first, before torch.distributed
        pass

    for bad in (0, -1, "5", datetime.timedelta(seconds=-3), True):
        with pytest.raises(distsampler.ConfigError) as e:
            guard(Sampler(), timeout=bad)
        assert str(e.value) == (f"guard: timeout={bad if not isinstance(bad, datetime.timedelta) else -3.0!r} is not "
                                f"a positive number of seconds (expected e.g. timeout=60 or a datetime.timedelta)")


def test_a_store_whose_server_is_gone_names_the_cause_and_the_way_out():
    from distsampler.torch._exchange import exchange

    class GoneStore:  # what a TCPStore client raises once the process hosting its server died
        def __init__(self, error):
            self.error = error

        def set(self, key, value):
            raise RuntimeError(self.error)

        add = get = compare_set = delete_key = set

    with pytest.raises(distsampler.ConfigError) as e:
        exchange(GoneStore("Connection reset by peer\nException raised from recvBytes"), "ns", 1, 3, b"r", 2.0, "guard")
    assert str(e.value) == ("guard: rank 1 failed to write the store keys under 'ns' (expected all 3 ranks to call the "
                            "guard, equally often, on one store): Connection reset by peer; the store's server is gone "
                            "(a TCPStore's runs in the process that created it, usually rank 0, which has died or "
                            "closed it): restart every rank from the last checkpoint")
    with pytest.raises(distsampler.ConfigError) as e:
        exchange(GoneStore("Socket Timeout"), "ns", 1, 3, b"r", 2.0, "guard")
    assert str(e.value).endswith("on one store): Socket Timeout")
