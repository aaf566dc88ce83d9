# distsampler.torch.DataLoader guards every epoch by default: the silent misuses fail at the first epoch, 4 processes.
# SPDX-License-Identifier: MIT
import json
import os
import socket
import subprocess
import sys

import pytest
import torch

import distsampler
from distsampler.torch import DataLoader, DistributedSampler

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loader_guard_worker.py")
WORLD = 4


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("loader_guard") / "rank")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(r), str(WORLD), out], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(WORLD)]
    for r, p in enumerate(procs):
        try:
            _, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"rank {r} hung")
        assert p.returncode == 0, f"rank {r}: {err[-3000:]}"
    results = []
    for r in range(WORLD):
        with open(f"{out}.{r}") as f:
            results.append(json.load(f))
    return results


@pytest.mark.processes
def test_a_correct_sampler_passes_and_is_guarded_once_per_epoch(outcomes):
    for r in range(WORLD):
        # 40 samples over 4 ranks, two epochs and epoch 1 read again: 30 samples, 2 guard calls (one per epoch)
        assert outcomes[r]["ok"] == "ok read 30 guard calls 2", (r, outcomes[r])


@pytest.mark.processes
def test_per_rank_seeds_fail_at_the_first_epoch_on_every_rank(outcomes):
    for r in range(WORLD):
        assert outcomes[r]["seed"] == (
            "error: DataLoader: guard: rank 1 has seed 43 but rank 0 has seed 42 (every rank must build the sampler "
            "with the same seed; ranks then read disjoint shares)"), (r, outcomes[r])


@pytest.mark.processes
def test_local_world_size_as_num_replicas_fails_pointing_to_the_mesh_guard(outcomes):
    for r in range(WORLD):
        assert outcomes[r]["local_world"] == (
            "error: DataLoader: guard: rank 0 has num_replicas 2 but the process group has 4 processes (expected "
            "num_replicas=4); under tensor, context or pipeline parallelism pass guard=mesh_world(...) "
            "(distsampler.mesh) so that the data-parallel groups are checked, or guard=False"), (r, outcomes[r])


@pytest.mark.processes
def test_local_rank_as_rank_fails_naming_the_process(outcomes):
    for r in range(WORLD):
        assert outcomes[r]["local_rank"] == (
            "error: DataLoader: guard: process 1 of the group built its sampler with rank 0 (expected rank=1)"), (
            r, outcomes[r])


@pytest.mark.processes
def test_guard_false_turns_it_off_and_a_mesh_guard_passes_a_right_mesh(outcomes):
    for r in range(WORLD):
        assert outcomes[r]["off"] == "ok read 20 guard calls 0", (r, outcomes[r])
        # dp=2, tp=2: each data rank reads 20 of 40 per epoch; the tp pair reads the same
        assert outcomes[r]["mesh"] == "ok read 40 guard calls 2", (r, outcomes[r])


@pytest.mark.processes
def test_a_loader_of_one_rank_own_is_not_guarded(outcomes):
    assert outcomes[0]["rank_zero_only"] == "ok read 40"


@pytest.mark.parametrize("value", ["yes", 1, None, {"dp": 2}])
def test_guard_takes_a_bool_or_a_mesh(value):
    data = torch.arange(8)
    with pytest.raises(distsampler.ConfigError) as info:
        DataLoader(data, batch_size=2, sampler=DistributedSampler(data, num_replicas=1, rank=0), guard=value)
    assert str(info.value) == (f"DataLoader: guard {value!r} is a {type(value).__name__} (expected True, False, or "
                               "the DataWorld of distsampler.mesh.mesh_world (or its Mesh) under model parallelism)")


def test_without_torch_distributed_the_guard_does_nothing():
    data = torch.arange(8)
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, num_replicas=2, rank=1, seed=3))
    assert sorted(int(i) for b in loader for i in b) == sorted(DistributedSampler(data, num_replicas=2, rank=1, seed=3))
