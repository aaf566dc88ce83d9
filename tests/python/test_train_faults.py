# train_shards.py under torchrun --max_restarts 1: a rank killed mid-epoch, rank 0 killed mid-checkpoint; restarts.
# SPDX-License-Identifier: MIT
import json
import os
import random
import subprocess
import sys

import pytest
import torch

from test_train_shards import EXAMPLE, torchrun, verdict


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """~700 records in 20 shards (4 ranks x 16: 11 batches per epoch). Run M: checkpoints every 4 batches,
    rank 2 SIGKILLed after batch 6 of epoch 0, restarted by torchrun, stopped after the checkpoint at epoch 1
    batch 4; run M2 continues it on 2 ranks. Run S: rank 0 killed half-way through writing the checkpoint
    at epoch 0 batch 8, restarted, runs to the end."""
    root = tmp_path_factory.mktemp("train_faults")
    data = root / "data"
    data.mkdir()
    rng, next_id = random.Random(9), 0
    for s in range(20):
        with open(data / f"part-{s:03d}.jsonl", "w") as f:
            for _ in range(rng.randint(10, 60)):
                x = rng.random()
                f.write(json.dumps({"id": next_id, "x": x, "y": 3 * x + 1}) + "\n")
                next_id += 1
    common = ["--data", str(data), "--workers", "1", "--checkpoint-every", "4"]
    m = torchrun(4, *common, "--out", str(root / "M"), "--fault", "0:6:2:mid",
                 "--stop-at", "1:4",
                 launcher=("--max_restarts", "1", "--monitor_interval", "1"))
    m2 = torchrun(2, *common, "--out", str(root / "M2"), "--resume", str(root / "M" / "checkpoint.pt"))
    s = torchrun(4, *common, "--out", str(root / "S"), "--fault", "0:8:0:save",
                 launcher=("--max_restarts", "1", "--monitor_interval", "1"))
    return root, next_id, m, m2, s


@pytest.mark.processes
def test_a_rank_killed_mid_epoch_restarts_from_the_last_checkpoint_and_another_world_continues(faults):
    root, total, m, m2, _ = faults
    assert m.returncode == 0, m.stdout[-3000:] + m.stderr[-3000:]
    assert "failed (exitcode: -9) local_rank: 2 " in m.stderr, m.stderr[-3000:]  # torchrun saw it die
    # The first attempt checkpointed at batches 4 of epoch 0 before rank 2 died after batch 6.
    assert json.loads((root / "M" / "resumed-1.json").read_text()) == {"epoch": 0, "batches": 4}
    for r in range(4):
        assert f"rank {r}/4: stopped at epoch 1 batch 4" in m.stdout
    assert m2.returncode == 0, m2.stdout[-3000:] + m2.stderr[-3000:]
    out = verdict(root, "M", "M2")
    assert out.returncode == 0, out.stdout + out.stderr
    for epoch in (0, 1):
        assert f"epoch {epoch}: {total} of {total} records read, 0 read more than once, 0 never read" in out.stdout
    # Without the cut where the restart resumed, batches 4..6 of epoch 0 count twice: the verdict can fail.
    os.rename(root / "M" / "resumed-1.json", root / "M" / "resumed-1.json.off")
    try:
        assert verdict(root, "M", "M2").returncode == 1
    finally:
        os.rename(root / "M" / "resumed-1.json.off", root / "M" / "resumed-1.json")


@pytest.mark.processes
def test_rank_0_killed_while_writing_a_checkpoint_leaves_the_previous_one_and_the_restart_resumes_from_it(faults):
    root, total, _, _, s = faults
    assert s.returncode == 0, s.stdout[-3000:] + s.stderr[-3000:]
    assert "failed (exitcode: -9) local_rank: 0 " in s.stderr, s.stderr[-3000:]
    assert json.loads((root / "S" / "resumed-1.json").read_text()) == {"epoch": 0, "batches": 4}
    # The half-written temporary file is left behind; checkpoint.pt is whole (the restart's latest).
    assert list((root / "S").glob("checkpoint.pt.tmp*")), "the fault wrote half a temporary file"
    assert torch.load(root / "S" / "checkpoint.pt")["epoch"] == 1
    out = verdict(root, "S")
    assert out.returncode == 0, out.stdout + out.stderr
    for epoch in (0, 1):
        assert f"epoch {epoch}: {total} of {total} records read, 0 read more than once, 0 never read" in out.stdout
