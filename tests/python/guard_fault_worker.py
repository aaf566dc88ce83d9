# One rank of a 3-process gloo job in which rank 2 fails the guard in one way per mode (test_guard_faults.py).
# SPDX-License-Identifier: MIT
"""usage: guard_fault_worker.py PORT RANK WORLD MODE TIMEOUT

Prints one line, "rank R: <what guard returned or raised>", unless the mode kills it first.
Modes: absent (rank 2 never calls), absent-group (the same, with a group timeout of 10 s and no
timeout given to the guard: it waits the group's), die-before, die-publish (killed once its record is counted
in), die-read (killed after reading every record, before counting out), die-after, late (rank 2
calls after the others gave up)."""
import datetime
import os
import signal
import sys
import time

import torch.distributed as dist

import distsampler
from distsampler.torch import DistributedSampler, guard

guard_module = sys.modules["distsampler.torch.guard"]  # the package re-exports the function under that name


class DyingStore:
    """Forwards to the real store; SIGKILLs this process once it read, or added 1 to, a key ending in `fatal`."""

    def __init__(self, inner, fatal):
        self.inner, self.fatal = inner, fatal

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def get(self, key):
        out = self.inner.get(key)
        self._die_at(key)
        return out

    def add(self, key, value):
        out = self.inner.add(key, value)
        if value == 1:
            self._die_at(key)
        return out

    def _die_at(self, key):
        if self.fatal and key.endswith(self.fatal):
            os.kill(os.getpid(), signal.SIGKILL)


def main():
    port, rank, world, mode, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    # The group's own timeout is long: the guard's timeout is what ends the wait; in mode
    # absent-group the group's timeout is 10 s and the guard is given none (it waits the group's).
    group_timeout = 10 if mode == "absent-group" else 120
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=group_timeout))
    two = rank == 2
    fatal = {"die-publish": f"/in/{rank}", "die-read": f"/record/{world - 1}"}.get(mode) if two else None
    real = guard_module._store
    guard_module._store = lambda group: DyingStore(real(group), fatal)
    sampler = DistributedSampler(list(range(10)), seed=1)
    if two and mode == "die-before":
        os.kill(os.getpid(), signal.SIGKILL)
    if two and mode == "absent-group":
        time.sleep(11)  # past the others' wait, alive
        return 0
    if two and mode in ("absent", "late"):
        time.sleep(2 * timeout + 1)
        if mode == "absent":
            return 0
    try:
        guard(sampler) if mode == "absent-group" else guard(sampler, timeout=timeout)
        print(f"rank {rank}: ok", flush=True)
    except distsampler.ConfigError as e:
        print(f"rank {rank}: {e}", flush=True)
    if two and mode == "die-after":
        os.kill(os.getpid(), signal.SIGKILL)
    if rank == 0 and mode == "late":
        time.sleep(2 * timeout + 1)  # the store's host outlives the late rank
    os._exit(0)  # a dead peer must not stall the process group's shutdown


if __name__ == "__main__":
    sys.exit(main())
