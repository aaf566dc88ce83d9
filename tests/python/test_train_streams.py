# The streams example under a real torchrun: 2 ranks x 2 workers checkpoint at step 5, a resume on 2 x 1 goes on.
# SPDX-License-Identifier: MIT
import json
import os
import random
import socket
import subprocess
import sys

import pytest

from distsampler import _core

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python", "train_streams.py")
MICRO_BATCH, CHECKPOINT = 4, 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc, *args):
    """torchrun on 127.0.0.1 with Debian 12's workaround (--redirects 2 --tee 2), from this interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(nproc),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "--redirects", "2", "--tee", "2",
           EXAMPLE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def read_log(path, below=None):
    """[(step, [(pass, id), ...])] of one rank log, the steps below `below` when given."""
    out = []
    for line in open(path):
        step, *items = line.split()
        if below is None or int(step) < below:
            out.append((int(step), [tuple(int(v) for v in item.split(":")) for item in items]))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Six JSON Lines shards of 0..60 records, about two in three English; run A on 2 ranks x 2 workers
    (checkpoint at step 5, reads on to step 8); run B resumes it on 2 ranks x 1 worker for 40 steps."""
    root = tmp_path_factory.mktemp("train_streams")
    data = root / "data"
    data.mkdir()
    rng, kept, next_id = random.Random(11), set(), 0
    for s, n in enumerate([37, 0, 60, 12, 45, 28]):
        with open(data / f"part-{s}.jsonl", "w") as f:
            for _ in range(n):
                lang = "en" if rng.random() < 0.66 else "de"
                x = rng.random()
                f.write(json.dumps({"id": next_id, "lang": lang, "x": x, "y": 2 * x - 1}) + "\n")
                if lang == "en":
                    kept.add(next_id)
                next_id += 1
    a = torchrun(2, "--data", str(data), "--out", str(root / "A"), "--workers", "2", "--micro-batch",
                 str(MICRO_BATCH), "--steps", "8", "--checkpoint-at", str(CHECKPOINT))
    b = torchrun(2, "--data", str(data), "--out", str(root / "B"), "--workers", "1", "--micro-batch",
                 str(MICRO_BATCH), "--steps", "40", "--resume", str(root / "A" / "checkpoint.pt"))
    return root, kept, a, b


@pytest.mark.processes
def test_both_runs_train_every_step_on_every_rank(runs):
    root, _, a, b = runs
    assert a.returncode == 0, a.stdout[-3000:] + a.stderr[-3000:]
    assert b.returncode == 0, b.stdout[-3000:] + b.stderr[-3000:]
    for r in range(2):
        assert f"rank {r}/2: 8 steps done, last step 7" in a.stdout
        assert f"rank {r}/2: 40 steps done, last step 44" in b.stdout
        steps = read_log(root / "B" / f"rank{r}.log")
        assert [s for s, _ in steps] == list(range(CHECKPOINT, CHECKPOINT + 40))  # the resume continues the steps
        assert all(len(items) == MICRO_BATCH for _, items in steps)


@pytest.mark.processes
def test_the_resume_reads_each_kept_record_once_per_pass(runs):
    root, kept, _, _ = runs
    seen = {}
    for r in range(2):
        for run, below in (("A", CHECKPOINT), ("B", None)):  # run A up to what its checkpoint received
            for _, items in read_log(root / run / f"rank{r}.log", below):
                for pass_, i in items:
                    assert i in kept, f"record {i} is not English"
                    seen.setdefault(pass_, []).append(i)
    final = _core.StreamJobState.from_text((root / "B" / "final.txt").read_text())
    below = final.open_passes[0] if final.open_passes else final.next_pass
    assert below >= 2 and final.share == 0
    for pass_, ids in seen.items():
        assert len(ids) == len(set(ids)), f"pass {pass_} read a record twice"
        if pass_ < below:
            assert set(ids) == kept, f"pass {pass_} misses {sorted(kept - set(ids))[:10]}"
