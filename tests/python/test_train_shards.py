# The end-to-end example under a real torchrun: 4 ranks x 2 persistent workers, a kill mid-epoch, a resume on 2 x 3.
# SPDX-License-Identifier: MIT
import json
import os
import random
import socket
import subprocess
import sys

import pytest

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python", "train_shards.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc, *args, launcher=()):
    """torchrun on 127.0.0.1 with Debian 12's workaround (--redirects 2 --tee 2), from this interpreter;
    `launcher`: more torchrun flags (before the script)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(nproc),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "--redirects", "2", "--tee", "2",
           *launcher, EXAMPLE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """~50 JSON Lines shards of uneven sizes; run A (4 x 2, killed 3 batches after its checkpoint at epoch 1
    batch 5); run B resuming it on 2 x 3; run N resuming it the naive way on 2 x 3."""
    root = tmp_path_factory.mktemp("train_shards")
    data = root / "data"
    data.mkdir()
    rng, next_id = random.Random(5), 0
    for s in range(50):
        with open(data / f"part-{s:03d}.jsonl", "w") as f:
            for _ in range(rng.randint(10, 200)):
                x = rng.random()
                f.write(json.dumps({"id": next_id, "x": x, "y": 3 * x + 1}) + "\n")
                next_id += 1
    a = torchrun(4, "--data", str(data), "--out", str(root / "A"), "--workers", "2", "--kill-at", "1:5")
    b = torchrun(2, "--data", str(data), "--out", str(root / "B"), "--workers", "3", "--resume",
                 str(root / "A" / "checkpoint.pt"))
    n = torchrun(2, "--data", str(data), "--out", str(root / "N"), "--workers", "3", "--naive", "--resume",
                 str(root / "A" / "checkpoint.pt"))
    return root, next_id, a, b, n


def verdict(root, *runs):
    return subprocess.run([sys.executable, EXAMPLE, "--verdict", "--data", str(root / "data"),
                           *(str(root / r) for r in runs)], capture_output=True, text=True, timeout=120)


@pytest.mark.processes
def test_the_killed_run_checkpointed_then_died(runs):
    root, _, a, _, _ = runs
    assert a.returncode != 0, a.stdout[-3000:]
    assert "Signals.SIGKILL" in a.stdout + a.stderr or "exitcode  : -9" in a.stdout + a.stderr, a.stderr[-3000:]
    assert (root / "A" / "checkpoint.pt").exists()
    assert not list((root / "A").glob("checkpoint.pt.tmp*")), "the checkpoint was written atomically"
    for r in range(4):
        assert f"rank {r}/4: epoch 0 done" in a.stdout


@pytest.mark.processes
def test_resume_on_another_world_reads_each_record_exactly_once_per_epoch(runs):
    root, total, _, b, _ = runs
    assert b.returncode == 0, b.stdout[-3000:] + b.stderr[-3000:]
    for r in range(2):
        assert f"rank {r}/2: epoch 1 done" in b.stdout
    out = verdict(root, "A", "B")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"epoch 0: {total} of {total} records read, 0 read more than once, 0 never read" in out.stdout
    assert f"epoch 1: {total} of {total} records read, 0 read more than once, 0 never read" in out.stdout
    assert "VERDICT: exactly once per epoch" in out.stdout


@pytest.mark.processes
def test_the_naive_checkpoint_skips_records_and_the_verdict_says_so(runs):
    root, total, _, _, n = runs
    assert n.returncode == 0, n.stdout[-3000:] + n.stderr[-3000:]
    out = verdict(root, "A", "N")
    assert out.returncode == 1, out.stdout
    assert f"epoch 0: {total} of {total} records read, 0 read more than once, 0 never read" in out.stdout
    line = next(x for x in out.stdout.splitlines() if x.startswith("epoch 1:"))
    never = int(line.split(", ")[-1].split()[0])
    # 2 prefetched batches of 16 per worker, 2 workers, 4 ranks (a few of them padding slots)
    assert 0 < never <= 4 * 2 * 2 * 16, line
    assert "VERDICT: FAILED" in out.stdout


@pytest.mark.processes
def test_the_verdict_alone_catches_a_run_cut_short(runs):
    root, _, _, _, _ = runs
    out = verdict(root, "A")  # the killed run alone: epoch 1 is far from complete
    assert out.returncode == 1 and "VERDICT: FAILED" in out.stdout
