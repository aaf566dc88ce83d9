# Tests through real torch.distributed (gloo on 127.0.0.1, separate processes) and real DataLoaders with workers.
# SPDX-License-Identifier: MIT
import json
import os
import socket
import subprocess
import sys

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_worker.py")
N = 1001


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(tmp_path, scenario, world, *extra):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    procs, outs = [], []
    for r in range(world):
        out = tmp_path / f"{scenario}-{r}.json"
        outs.append(out)
        procs.append(subprocess.Popen([sys.executable, WORKER, scenario, str(port), str(r), str(world), str(out),
                                       *map(str, extra)], env=env, stderr=subprocess.PIPE, text=True))
    errors = []
    for r, p in enumerate(procs):
        try:
            _, err = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        if p.returncode != 0:
            errors.append(f"rank {r} exited {p.returncode}: {err[-2000:]}")
    assert not errors, "\n".join(errors)
    return [json.loads(o.read_text()) for o in outs]


def test_four_ranks_with_dataloader_workers_are_disjoint_and_covering(tmp_path):
    results = run(tmp_path, "cover", 4)
    assert [r["world"] for r in results] == [[0, 4], [1, 4], [2, 4], [3, 4]]
    for epoch in (0, 1):
        per_rank = [r[f"epoch{epoch}"] for r in results]
        assert [len(x) for x in per_rank] == [251] * 4  # ceil(1001 / 4)
        real = [i for r in results for i, pad in zip(r[f"epoch{epoch}"], r[f"padding{epoch}"]) if not pad]
        assert sorted(real) == list(range(N))  # every index exactly once, padding aside
        assert sum(p for r in results for p in r[f"padding{epoch}"]) == 3
    assert results[0]["epoch0"] != results[0]["epoch1"]


def test_guard_names_the_mis_seeded_rank(tmp_path):
    results = run(tmp_path, "guard", 4)
    for r in results:
        assert r["error"] == ("guard: rank 2 has seed 43 but rank 0 has seed 42 (every rank must build the sampler "
                              "with the same seed; ranks then read disjoint shares)")
        assert r["torch_error"] == ("guard: rank 1 has tail 'drop' but rank 0 has tail 'pad' (every rank must build "
                                    "the sampler with the same tail; ranks then read disjoint shares)")
        assert r["size_error"] == ("guard: rank 3 has dataset_size 1000 but rank 0 has dataset_size 1001 (every "
                                   "rank must build the sampler with the same dataset_size; ranks then read disjoint "
                                   "shares)")
        assert r["world_error"] == ("guard: rank 1 has num_replicas 3 but the process group has 4 processes "
                                    "(expected num_replicas=4)")
        assert r["batch_error"] is None  # the same batch sampler everywhere passes
        assert r["shard_error"] is None
        assert r["shard_seed_error"] == ("guard: rank 3 has seed 4 but rank 0 has seed 3 (every rank must build the "
                                         "sampler with the same seed; ranks then read disjoint shares)")


def test_checkpoint_on_four_processes_resumes_on_two(tmp_path):
    saved = run(tmp_path, "save", 4)
    assert all(r["all_equal"] for r in saved)
    assert all(len(r["read"]) == 50 for r in saved)
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(saved[0]["state"]))
    resumed = run(tmp_path, "resume", 2, state_file)
    first = [i for r in saved for i in r["read"]]
    rest = [i for r in resumed for i in r["read"]]
    assert len(rest) == N - 200
    assert sorted(first + rest) == list(range(N))  # tail "uneven": each index exactly once over both runs


def test_batch_sampler_checkpoint_on_four_processes_resumes_on_two_with_another_batch_shape(tmp_path):
    saved = run(tmp_path, "batch_save", 4)
    # 7 micro-batches of 4 on each of 4 ranks: 3 steps of G = 32 and one micro-batch round.
    assert all(len(r["read"]) == 28 for r in saved)
    assert all(r["state"] == saved[0]["state"] for r in saved)
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(saved[0]["state"]))
    resumed = run(tmp_path, "batch_resume", 2, state_file)
    first = [i for r in saved for i in r["read"]]
    rest = [i for r in resumed for i in r["read"]]
    assert sorted(first + rest) == list(range(N))
