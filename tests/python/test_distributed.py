# Tests through real torch.distributed (gloo on 127.0.0.1, separate processes; the jobs are in conftest.py) and real DataLoaders.
# SPDX-License-Identifier: MIT
N = 1001


def test_four_ranks_with_dataloader_workers_are_disjoint_and_covering(gloo4):
    results = gloo4.results("cover")
    assert [r["world"] for r in results] == [[0, 4], [1, 4], [2, 4], [3, 4]]
    for epoch in (0, 1):
        per_rank = [r[f"epoch{epoch}"] for r in results]
        assert [len(x) for x in per_rank] == [251] * 4  # ceil(1001 / 4)
        real = [i for r in results for i, pad in zip(r[f"epoch{epoch}"], r[f"padding{epoch}"]) if not pad]
        assert sorted(real) == list(range(N))  # every index exactly once, padding aside
        assert sum(p for r in results for p in r[f"padding{epoch}"]) == 3
    assert results[0]["epoch0"] != results[0]["epoch1"]


def test_guard_names_the_mis_seeded_rank(gloo4):
    results = gloo4.results("guard")
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


def test_checkpoint_on_four_processes_resumes_on_two(gloo4, gloo2):
    saved = gloo4.results("save")
    assert all(r["all_equal"] for r in saved)
    assert all(len(r["read"]) == 50 for r in saved)
    resumed = gloo2.results("resume")  # from saved[0]["state"] as a JSON file
    first = [i for r in saved for i in r["read"]]
    rest = [i for r in resumed for i in r["read"]]
    assert len(rest) == N - 200
    assert sorted(first + rest) == list(range(N))  # tail "uneven": each index exactly once over both runs


def test_batch_sampler_checkpoint_on_four_processes_resumes_on_two_with_another_batch_shape(gloo4, gloo2):
    saved = gloo4.results("batch_save")
    # 7 micro-batches of 4 on each of 4 ranks: 3 steps of G = 32 and one micro-batch round.
    assert all(len(r["read"]) == 28 for r in saved)
    assert all(r["state"] == saved[0]["state"] for r in saved)
    resumed = gloo2.results("batch_resume")  # from saved[0]["state"] as a JSON file
    first = [i for r in saved for i in r["read"]]
    rest = [i for r in resumed for i in r["read"]]
    assert sorted(first + rest) == list(range(N))
