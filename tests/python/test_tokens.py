# Tests of distsampler.torch.TokenBatchSampler: budgets, equal steps, empty micro-batches, loaders, gloo, state, errors.
# SPDX-License-Identifier: MIT
import contextlib
import gc
import io
import itertools
import json
import pickle
import re
import sys

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import distsampler
from distsampler import _core
from distsampler.torch import EmptyToNone, TokenBatchSampler
import doc_blocks
from dist_worker import TOKEN_BUDGET, TOKEN_N, token_lengths



def lognormal_lengths(n, seed=1, cap=1000):
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(4.0, 0.8, size=n), 1, cap).astype(np.uint32)


def ranks(lengths, budget, world, **kw):
    return [TokenBatchSampler(lengths, budget, world, r, **kw) for r in range(world)]


def cost(lens, model, q=1024):
    """The documented cost of a micro-batch, computed here from its lengths."""
    lens = [int(x) for x in lens]
    if model == "padded":
        return len(lens) * max(lens)
    if model == "linear":
        return sum(lens)
    return sum(d + d * d // q for d in lens)


@pytest.mark.parametrize("model", ["padded", "linear", "quadratic"])
@pytest.mark.parametrize("world,accumulation", [(4, 2), (3, 1)])
def test_equal_micro_batches_per_rank_budget_kept_every_sample_once(model, world, accumulation):
    n = 2003  # window 250: a last window of 3 samples, too few for the world
    lengths = lognormal_lengths(n)
    budget = 4096
    samplers = ranks(lengths, budget, world, accumulation_steps=accumulation, window=250, cost=model,
                     quadratic_q=512, seed=9)
    per_rank = [list(s) for s in samplers]
    assert len({len(s) for s in samplers}) == 1
    assert [len(x) for x in per_rank] == [len(s) for s in samplers]
    assert len(samplers[0]) == samplers[0].num_steps * accumulation
    flat = [i for x in per_rank for mb in x for i in mb]
    assert sorted(flat) == list(range(n))  # exactly once, empty micro-batches carry nothing
    for x in per_rank:
        for mb in x:
            if mb:
                assert cost(lengths[mb], model, 512) <= budget
    empties = sum(1 for x in per_rank for mb in x if not mb)
    assert empties == samplers[0].stats["empty_micro_batches"]
    if world * accumulation > 3:
        assert empties > 0  # the last window's 3 samples cannot fill 8 slots: visible as empty micro-batches
    assert all(s.stats == samplers[0].stats for s in samplers)


@pytest.mark.processes
def test_dataloader_with_two_workers_yields_the_sampler_order_with_none_for_empty_micro_batches():
    lengths = lognormal_lengths(1003, seed=4)
    data = torch.arange(1003) * 10
    expected = list(TokenBatchSampler(lengths, 2048, 4, 3, accumulation_steps=2, window=100, seed=2))
    assert any(not mb for mb in expected)
    sampler = TokenBatchSampler(lengths, 2048, 4, 3, accumulation_steps=2, window=100, seed=2)
    got = list(DataLoader(data, batch_sampler=sampler, collate_fn=EmptyToNone(), num_workers=2))
    assert len(got) == len(expected) == len(sampler)
    for batch, mb in zip(got, expected):
        if mb:
            assert torch.equal(batch, torch.tensor(mb) * 10)
        else:
            assert batch is None
    with pytest.raises(IndexError):  # why EmptyToNone: default_collate cannot collate an empty micro-batch
        list(DataLoader(data, batch_sampler=sampler, num_workers=0))


def test_empty_to_none_wraps_a_custom_collate():
    collate = EmptyToNone(lambda batch: ("mine", batch))
    assert collate([]) is None
    assert collate([1, 2]) == ("mine", [1, 2])
    assert torch.equal(EmptyToNone()([1, 2]), torch.tensor([1, 2]))


def test_uint32_lengths_are_used_in_place_and_kept_alive():
    lengths = lognormal_lengths(500)
    s = TokenBatchSampler(lengths, 4096, 1, 0, seed=1)
    assert s.lengths is lengths  # contiguous uint32: no copy
    before = sys.getrefcount(lengths)
    options = _core.TokenBatchOptions()
    options.max_tokens = 4096
    options.seed = 1
    core = _core.make_token_batch_sampler(lengths, 0, 1, options)
    assert sys.getrefcount(lengths) == before + 2  # the C++ sampler holds the array and a buffer export of it
    expected = core.micro_batches(0, 1000)
    del lengths, s
    gc.collect()
    assert core.micro_batches(0, 1000) == expected
    del core
    gc.collect()


def test_other_integer_arrays_are_converted_once_to_the_same_sampler():
    lengths = lognormal_lengths(700)
    reference = list(TokenBatchSampler(lengths, 3000, 2, 1, seed=3))
    for other in (lengths.astype(np.int64), lengths.tolist(), torch.from_numpy(lengths.astype(np.int32)),
                  np.repeat(lengths, 2)[::2]):
        s = TokenBatchSampler(other, 3000, 2, 1, seed=3)
        assert s.lengths.dtype == np.uint32 and s.lengths.flags["C_CONTIGUOUS"]
        assert list(s) == reference


def test_memory_mapped_lengths(tmp_path):
    lengths = lognormal_lengths(600)
    path = tmp_path / "lengths.u32"
    lengths.tofile(path)
    mapped = np.memmap(path, dtype=np.uint32, mode="r")
    s = TokenBatchSampler(mapped, 3000, 2, 0, seed=3)
    assert np.shares_memory(s.lengths, mapped)  # read in place
    assert list(s) == list(TokenBatchSampler(lengths, 3000, 2, 0, seed=3))


def test_epochs_differ_and_set_epoch_selects_them():
    lengths = lognormal_lengths(800)
    s = TokenBatchSampler(lengths, 3000, 2, 0, seed=3)
    e0 = list(s)
    s.set_epoch(1)
    e1 = list(s)
    assert e0 != e1
    s.set_epoch(0)
    assert list(s) == e0
    other = TokenBatchSampler(lengths, 3000, 2, 0, seed=3)
    other.set_epoch(1)
    assert len(other) == len(e1) and list(other) == e1


def test_random_access_matches_iteration():
    lengths = lognormal_lengths(900)
    s = TokenBatchSampler(lengths, 2500, 2, 1, accumulation_steps=3, window=200, seed=8)
    full = list(s)
    for j in (0, 4, len(full) - 1):
        indices, tokens, padded, oversize = s.micro_batch(j // 3, j % 3)
        assert indices == full[j]
        assert tokens == int(lengths[indices].sum()) and not oversize
        assert padded == (len(indices) * int(lengths[indices].max()) if indices else 0)
    with pytest.raises(IndexError, match=r"k 3 is out of range for accumulation_steps 3"):
        s.micro_batch(0, 3)
    with pytest.raises(IndexError, match=rf"step {s.num_steps} is out of range for num_steps {s.num_steps}"):
        s.micro_batch(s.num_steps, 0)


def test_resume_after_k_micro_batches_reads_the_rest_of_the_epoch_once():
    lengths = lognormal_lengths(900)

    def make():
        return TokenBatchSampler(lengths, 2500, 1, 0, accumulation_steps=2, window=200, seed=6)

    s = make()
    s.set_epoch(2)
    full = list(s)
    for k in (0, 1, 2, 7, len(full)):
        it = iter(s)
        taken = list(itertools.islice(it, k))
        assert taken == full[:k]
        sd = s.state_dict(batches=k)
        assert sd["epoch"] == 2
        fresh = make()
        fresh.load_state_dict(sd)
        assert fresh.epoch == 2
        remaining = len(fresh)
        rest = list(fresh)
        assert len(rest) == remaining and remaining % 2 == 0  # whole steps
        assert len(fresh) == len(full)  # the next pass is the whole epoch again
        # The rest of the interrupted window is planned again (cuts may differ), not its samples.
        assert sorted(i for mb in taken + rest for i in mb) == list(range(900)), k
        if k in (0, len(full)):
            assert rest == full[k:]


def test_elastic_resume_on_another_world_and_accumulation_reads_every_sample_once():
    lengths = lognormal_lengths(1500)
    kw = dict(window=300, seed=4)
    first, states = [], []
    for s in ranks(lengths, 3000, 4, accumulation_steps=2, **kw):
        it = iter(s)
        first += [i for mb in itertools.islice(it, 7) for i in mb]  # 3 steps and a half
        states.append(s.state_dict(batches=7))
    assert all(sd == states[0] for sd in states)
    rest = []
    for s in ranks(lengths, 3000, 3, accumulation_steps=1, **kw):
        s.load_state_dict(states[0])
        rest += [i for mb in s for i in mb]
    assert sorted(first + rest) == list(range(1500))


def test_state_after_delivered_batches_when_a_loader_drew_ahead():
    lengths = lognormal_lengths(900)

    def make():
        return TokenBatchSampler(lengths, 2500, 1, 0, accumulation_steps=2, window=200, seed=6)

    s = make()
    full = list(s)
    it = iter(s)
    for _ in range(9):  # drawn by the loader; 5 delivered
        next(it)
    fresh = make()
    fresh.load_state_dict(s.state_dict(batches=5))
    rest = list(fresh)
    assert sorted(i for mb in full[:5] + rest for i in mb) == list(range(900))
    with pytest.raises(distsampler.ConfigError,
                       match=rf"^TokenBatchSampler.state_dict: batches {len(full) + 1} exceeds the {len(full)} "
                             rf"micro-batches of this rank's pass \(expected 0..{len(full)}\)$"):
        s.state_dict(batches=len(full) + 1)


def test_pickle_keeps_a_loaded_state():
    lengths = lognormal_lengths(400)
    s = TokenBatchSampler(lengths, 3000, 1, 0, seed=2)
    it = iter(s)
    next(it)
    t = TokenBatchSampler(lengths, 3000, 1, 0, seed=2)
    t.load_state_dict(s.state_dict(batches=1))
    u = pickle.loads(pickle.dumps(t))
    assert list(u) == list(it)


def test_a_state_of_other_lengths_or_budget_is_refused():
    lengths = lognormal_lengths(400)
    sd = TokenBatchSampler(lengths, 3000, 1, 0, seed=2).state_dict()
    changed = lengths.copy()
    changed[17] += 1
    expected = (r"^TokenBatchSampler: token lengths or budget options differ "
                r"\(state layout 0x[0-9a-f]{16}, sampler layout 0x")
    for other in (TokenBatchSampler(changed, 3000, 1, 0, seed=2), TokenBatchSampler(lengths, 3001, 1, 0, seed=2)):
        with pytest.raises(distsampler.StateError, match=expected):
            other.load_state_dict(sd)
    with pytest.raises(distsampler.StateError, match=r"^TokenBatchSampler: seed differs \(state 2, sampler 3\)$"):
        TokenBatchSampler(lengths, 3000, 1, 0, seed=3).load_state_dict(sd)


@pytest.mark.parametrize(
    "lengths,kwargs,message",
    [
        ([[1, 2], [3, 4]], {}, r"lengths has shape \(2, 2\) \(expected a 1-D array: one token count per sample\)"),
        ([5, 3, -2, 4], {}, r"sample 2 has length -2 \(expected a token count of at least 1\)"),
        ([5.0, 3.5], {}, r"lengths has dtype float64 \(expected integers, best uint32"),
        ([5, 1 << 32], {}, r"sample 1 has length 4294967296 \(expected at most 4294967295: lengths are uint32\)"),
        ([5, 0, 3], {}, r"^TokenBatchSampler: sample 1 has length 0 \(expected at least 1 token per sample\)$"),
        ([5, 3, 900], {}, r"^TokenBatchSampler: sample 2 has length 900 costing 900, over max_tokens 512 "
                          r"\(expected at most max_tokens; or choose Oversize::own_batch or Oversize::skip\)$"),
        ([5, 3], dict(max_tokens=0), r"^TokenBatchOptions: max_tokens is 0 \(expected a token budget of at least 1; "
                                     r"call with_max_tokens\)$"),
        ([5, 3], dict(max_tokens=-1), r"^TokenBatchSampler: max_tokens -1 is out of range"),
        ([5, 3], dict(cost="square"), r"cost 'square' is unknown \(expected \"padded\", \"linear\" or \"quadratic\"\)"),
        ([5, 3], dict(oversize="drop"),
         r"oversize 'drop' is unknown \(expected \"error\", \"own_batch\" or \"skip\"\)"),
        ([5, 3], dict(max_samples=0), r"max_samples is 0 \(expected at least 1, or None for no limit\)"),
        ([5, 3], dict(accumulation_steps=0), r"^TokenBatchSampler: accumulation_steps is 0 \(expected at least 1\)$"),
        ([5, 3], dict(window=0), r"^TokenBatchOptions: window 0 is out of range \(expected 1..4294967295\)$"),
        ([5, 3], dict(rank=2), r"^TokenBatchSampler: rank 2 is out of range for num_replicas 2 \(expected 0..1\)$"),
    ],
)
def test_bad_input_raises_config_error_naming_it(lengths, kwargs, message):
    kw = dict(max_tokens=512, num_replicas=2, rank=0)
    kw.update(kwargs)
    with pytest.raises(distsampler.ConfigError, match=message) as info:
        TokenBatchSampler(lengths, **kw)
    assert isinstance(info.value, ValueError)


def test_oversize_samples_own_batch_or_skip():
    lengths = np.array([5, 3, 900, 7, 2000, 4], dtype=np.uint32)
    own = TokenBatchSampler(lengths, 512, 1, 0, oversize="own_batch")
    batches = list(own)
    assert [2] in batches and [4] in batches and sorted(i for mb in batches for i in mb) == list(range(6))
    assert own.stats["oversize_batches"] == 2
    skip = TokenBatchSampler(lengths, 512, 1, 0, oversize="skip")
    assert sorted(i for mb in skip for i in mb) == [0, 1, 3, 5]
    assert skip.stats["skipped_samples"] == 2


def test_four_gloo_ranks_same_steps_exactly_once_then_resume_on_two(gloo4):
    lengths = token_lengths()
    state_file = gloo4.out_dir / "tokens-state.json"
    results = gloo4.results("tokens")
    lens = {r["len"] for r in results}
    assert len(lens) == 1
    for r in results:
        assert len(r["epoch0"]) == r["len"]
        assert all(c == [2, 2, 2, 2] for c in r["counts0"])  # every rank, every step: 2 micro-batches
        assert len(r["counts0"]) == r["len"] // 2
    epoch0 = [mb for r in results for mb in r["epoch0"]]
    assert sorted(i for mb in epoch0 for i in mb) == list(range(TOKEN_N))
    assert all(len(mb) * int(lengths[mb].max()) <= TOKEN_BUDGET for mb in epoch0 if mb)
    assert sum(1 for mb in epoch0 if not mb) == results[0]["empty_total"] > 0  # seen by the loop, not dropped
    assert results[0]["budget_error"] == (
        "guard: rank 3 has token_layout '0x%016x' but rank 0 has token_layout '0x%016x' (every rank must build the "
        "sampler with the same token_layout; ranks then read disjoint shares)"
        % tuple(TokenBatchSampler(lengths, b, 4, 0, accumulation_steps=2, window=100, seed=5).layout_hash
                for b in (TOKEN_BUDGET + 1, TOKEN_BUDGET)))

    # Epoch 1 stopped after 5 steps on 4 ranks, resumed on 2 processes with accumulation 3.
    assert all(r["all_equal"] and r["state"] == results[0]["state"] for r in results)
    assert json.loads(state_file.read_text()) == results[0]["state"]
    assert all(len(r["saved_read"]) == 10 and len(r["saved_counts"]) == 5 for r in results)
    resumed = results[:2]
    assert resumed[0]["resumed_len"] == resumed[1]["resumed_len"] == len(resumed[0]["resumed_read"])
    assert all(c == [3, 3] for r in resumed for c in r["resumed_counts"])
    assert "resumed_read" not in results[2] and "resumed_read" not in results[3]
    first = [i for r in results for mb in r["saved_read"] for i in mb]
    rest = [i for r in resumed for mb in r["resumed_read"] for i in mb]
    assert sorted(first + rest) == list(range(TOKEN_N))  # epoch 1 exactly once over both runs


@pytest.mark.processes
def test_python_guide_token_example_runs_as_documented():
    block = doc_blocks.block("docs/PYTHON.md", "example: tokens-python")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.code, block.path, "exec"), {"__name__": "doc_example"})
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    for epoch, line in enumerate(lines):
        m = re.fullmatch(r"epoch (\d+): (\d+) micro-batches \((\d+) empty\), padding efficiency ([01]\.\d\d)", line)
        assert m, line
        assert int(m.group(1)) == epoch and int(m.group(2)) > 0 and float(m.group(4)) > 0.8


def test_fewer_samples_than_slots_gives_every_rank_its_steps_with_empty_micro_batches():
    samplers = ranks([3], 10, 4, accumulation_steps=2)
    per_rank = [list(s) for s in samplers]
    assert [len(x) for x in per_rank] == [2, 2, 2, 2]  # one step of 2 micro-batches on every rank
    assert sorted(mb for x in per_rank for mb in x) == [[]] * 7 + [[0]]
    assert samplers[0].stats["empty_micro_batches"] == 7
    empty = TokenBatchSampler([], 10, 4, 0)
    assert len(empty) == 0 and list(empty) == []
