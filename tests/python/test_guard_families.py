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


@pytest.mark.parametrize("family", ("weighted", "mixture"))
def test_guard_names_a_rank_built_with_other_weights(gloo4, family):
    for r in gloo4.results("guard_families"):
        error = r[f"{family} weights"]
        assert error is not None and error.startswith("guard: rank 2 has token_layout '0x"), (family, error)
        assert error.endswith("(every rank must build the sampler with the same token_layout; ranks then read "
                              "disjoint shares)"), (family, error)
