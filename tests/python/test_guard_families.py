# guard over every family through torch.distributed (gloo, 4 real processes; the job is gloo4 in conftest.py).
# SPDX-License-Identifier: MIT
import pytest

FAMILIES = ("distributed", "batch", "shards", "tokens", "mixture", "packing", "weighted", "streams")
SEED_ERROR = ("guard: rank 2 has seed 43 but rank 0 has seed 42 (every rank must build the sampler with the same "
              "seed; ranks then read disjoint shares)")


@pytest.mark.parametrize("family", FAMILIES)
def test_guard_passes_ranks_built_alike_and_names_a_rank_seeded_apart_in_every_family(gloo4, family):
    results = gloo4.results("guard_families")
    assert len(results) == 4
    for r in results:
        assert r[f"{family} alike"] is None, (family, r[f"{family} alike"])
        assert r[f"{family} seed"] == SEED_ERROR, (family, r[f"{family} seed"])
