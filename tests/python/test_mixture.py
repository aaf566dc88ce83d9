# Mixture and weighted samplers as users run them: DataLoaders with workers, torch.distributed ranks, checkpoints.
# SPDX-License-Identifier: MIT
import collections
import math
import pickle

import pytest
import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset

import distsampler
from distsampler.torch import DistributedWeightedRandomSampler, MixtureBatchSampler

import doc_blocks

SIZES = [300, 120, 45]  # dist_worker.MIX_SIZES
WEIGHTS = [0.5, 0.3, 0.2]  # dist_worker.MIX_WEIGHTS
OFFSETS = [0, 300, 420]


class Tagged(Dataset):
    """Sample i of source `name` is (name, i): a batch of the concatenation shows where each sample came from."""

    def __init__(self, name, n):
        self.name, self.n = name, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return (self.name, i)


def as_list(batch):
    return batch


def pair(g):
    """(source, index) of global index g of the concatenation, from the sizes alone."""
    source = max(i for i, o in enumerate(OFFSETS) if o <= g)
    return source, g - OFFSETS[source]


def global_batches(per_rank, world, accumulation, micro):
    """Each step's samples in stream order (round, rank, element) from every rank's micro-batches."""
    steps = len(per_rank[0]) // accumulation
    out = []
    for s in range(steps):
        batch = []
        for k in range(accumulation):
            for r in range(world):
                mb = per_rank[r][s * accumulation + k]
                assert len(mb) == micro
                batch += mb
        out.append(batch)
    return out


def check_passes(stream):
    """Each source's samples, in stream order, cut into runs of its size: every run without a repeat."""
    by_source = collections.defaultdict(list)
    for g in stream:
        s, i = pair(g)
        by_source[s].append(i)
    for s, seen in by_source.items():
        n = SIZES[s]
        for first in range(0, len(seen), n):
            run_ = seen[first:first + n]
            assert len(set(run_)) == len(run_), f"source {s} repeats a sample within pass {first // n}"
            if len(run_) == n:
                assert sorted(run_) == list(range(n))
    return by_source


@pytest.mark.processes
def test_dataloader_with_two_workers_reads_the_concatenation_at_the_sampler_pairs():
    sources = [Tagged(name, n) for name, n in zip("abc", SIZES)]
    kwargs = dict(num_replicas=1, rank=0, accumulation_steps=2, seed=3)
    batches = MixtureBatchSampler(sources, WEIGHTS, 8, **kwargs)
    pairs = list(MixtureBatchSampler(sources, WEIGHTS, 8, as_pairs=True, **kwargs))
    loader = DataLoader(ConcatDataset(sources), batch_sampler=batches, num_workers=2, collate_fn=as_list)
    got = list(loader)
    assert len(got) == len(batches) == len(pairs)
    # Source 2's pass (45 samples at weight 0.2) ends within 2 samples of position 225, so at a position
    # in 215..235: 13 or 14 whole global batches of 16, 2 micro-batches each.
    assert len(got) in (13 * 2, 14 * 2)
    assert got == [[("abc"[s], i) for s, i in mb] for mb in pairs]
    flat = [g for mb in list(batches) for g in mb]
    assert batches.pairs_of(flat) == [p for mb in pairs for p in mb]
    assert len(set(flat)) == len(flat)  # first_exhausted: no sample of any source repeats

    batches.set_epoch(1)
    assert list(batches) != [[OFFSETS[s] + i for s, i in mb] for mb in pairs]


@pytest.fixture(scope="module")
def four_processes(gloo4):
    """The mixture scenario of the 4 gloo processes (dist_worker.mixture_scenario)."""
    return gloo4.results("mixture")


def test_four_gloo_ranks_split_each_global_batch_in_exact_proportions(four_processes):
    results = four_processes
    lens = [r["len"] for r in results]
    assert lens == [len(r["batches"]) for r in results] and len(set(lens)) == 1
    g = 4 * 4 * 2
    steps = global_batches([r["batches"] for r in results], 4, 2, 4)
    # all_seen: source 0 (300 samples at weight 0.5) ends its pass near position 600; tail "drop".
    assert len(steps) == 600 // g
    stream = []
    for batch in steps:
        owners = collections.Counter(batch)
        assert max(owners.values()) == 1  # the ranks' micro-batches of a step are disjoint
        counts = collections.Counter(pair(x)[0] for x in batch)
        for s, w in enumerate(WEIGHTS):
            assert counts[s] in (math.floor(g * w), math.ceil(g * w)), (s, counts)
        stream += batch
    by_source = check_passes(stream)
    assert len(by_source[2]) > 2 * SIZES[2]  # source 2 went round more than twice, each pass exact

    # Weighted: rank r reads positions r, r + 4, ... of the one-process order, frequencies follow the weights.
    whole = list(DistributedWeightedRandomSampler([1.0, 2.0, 3.0, 4.0, 0.0, 10.0], 6000, num_replicas=1, rank=0,
                                                  seed=4))
    for r, res in enumerate(results):
        assert res["weighted"] == whole[r::4]
    freq = collections.Counter(i for res in results for i in res["weighted"])
    assert sum(freq.values()) == 6000 and freq[4] == 0
    for i, w in enumerate([1.0, 2.0, 3.0, 4.0, 0.0, 10.0]):
        assert abs(freq[i] / 6000 - w / 20) < 0.02, (i, freq)


@pytest.mark.parametrize("pair", [0, 1])
def test_stop_save_and_resume_on_two_processes_reads_each_sample_once(four_processes, pair):
    results = four_processes[2 * pair:2 * pair + 2]  # processes {0, 1} and {2, 3} each ran as a world of 2
    assert all(r["all_equal"] for r in results)
    assert all(len(r["read"]) == 5 * 4 for r in results)
    # 5 rounds of 4 x 2 = 40 positions, then 12 steps of 16: every position of the 232 once.
    read = [i for r in results for i in r["read"] + r["rest"]]
    whole = MixtureBatchSampler(SIZES, WEIGHTS, 8, num_replicas=1, rank=0, seed=12, end="samples", end_count=232,
                                mixing_block=16)
    stream = [i for mb in whole for i in mb]
    assert len(stream) == 232
    assert collections.Counter(read) == collections.Counter(stream)
    assert len(set(stream[:215])) == 215  # no repeat before source 2 can end its pass (within 2 of 225)


def test_state_dict_resumes_on_another_world_and_rejects_other_settings():
    a = MixtureBatchSampler(SIZES, WEIGHTS, 2, num_replicas=2, rank=1, accumulation_steps=2, seed=5, end="samples",
                            end_count=224)
    it = iter(a)
    first = [next(it) for _ in range(7)]
    with pytest.raises(distsampler.ConfigError, match="this rank handed out 7 micro-batches of epoch 0"):
        a.state_dict()  # handed out is not received: the caller says what the loop got
    sd = a.state_dict(batches=7)
    b = MixtureBatchSampler(SIZES, WEIGHTS, 4, num_replicas=2, rank=1, seed=5, end="samples", end_count=224)
    b.load_state_dict(pickle.loads(pickle.dumps(sd)))
    b = pickle.loads(pickle.dumps(b))  # a DataLoader worker's copy keeps the loaded state
    # 7 rounds of 2 x 2 = 28 positions consumed; G = 8 on both shapes, so the global stream is one
    # sampler's on one rank, and rank 1 of the resumed pair reads positions 28 + 8 j + 4 .. + 8.
    stream = [g for mb in MixtureBatchSampler(SIZES, WEIGHTS, 8, num_replicas=1, rank=0, seed=5, end="samples",
                                              end_count=224) for g in mb]
    remaining = len(b)
    rest = list(b)
    assert len(stream) == 224 and remaining == len(rest) == (224 - 28) // 8
    assert rest == [stream[28 + 8 * j + 4:28 + 8 * j + 8] for j in range(len(rest))]
    assert first == [stream[8 * (j // 2) + 4 * (j % 2) + 2:8 * (j // 2) + 4 * (j % 2) + 4] for j in range(7)]

    other = MixtureBatchSampler(SIZES, WEIGHTS, 4, num_replicas=2, rank=1, seed=6, end="samples", end_count=224)
    with pytest.raises(distsampler.StateError, match="seed"):
        other.load_state_dict(sd)
    with pytest.raises(distsampler.StateError, match="mixture settings differ"):
        MixtureBatchSampler(SIZES, [0.4, 0.4, 0.2], 4, num_replicas=2, rank=1, seed=5, end="samples",
                            end_count=224).load_state_dict(sd)
    with pytest.raises(distsampler.StateError,
                       match=r"MixtureBatchSampler.load_state_dict: expected a dict with keys 'epoch' and 'state'"):
        other.load_state_dict({"epoch": 0})
    with pytest.raises(distsampler.ConfigError,
                       match=r"MixtureBatchSampler.state_dict: batches 999 exceeds the \d+ micro-batches"):
        a.state_dict(batches=999)


def test_weighted_sampler_without_replacement_gives_each_rank_distinct_positive_samples():
    weights = torch.tensor([0.0, 1.0, 5.0, 1.0, 2.0, 0.0, 3.0, 1.0])
    ranks = [DistributedWeightedRandomSampler(weights, 6, replacement=False, num_replicas=3, rank=r, seed=2)
             for r in range(3)]
    lists = [list(s) for s in ranks]
    assert [len(s) for s in ranks] == [2, 2, 2]
    assert sorted(i for x in lists for i in x) == [1, 2, 3, 4, 6, 7]
    s = ranks[0]
    it = iter(s)
    next(it)
    sd = s.state_dict(samples=1)
    resumed = DistributedWeightedRandomSampler(weights, 6, replacement=False, num_replicas=1, rank=0, seed=2)
    resumed.load_state_dict(sd)
    # Every rank read one sample (positions 0..2); one rank continues at position 3: each rank's second.
    assert len(resumed) == 3 and list(resumed) == [lists[0][1], lists[1][1], lists[2][1]]
    s.set_epoch(1)
    assert len(s) == 2


@pytest.mark.parametrize("make, message", [
    (lambda: MixtureBatchSampler(SIZES, [0.5, -0.3, 0.2], 4, 1, 0),
     r"MixtureSampler: weights\[1\] is -0.300000 \(expected a finite weight >= 0\)"),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 0, 1, 0),
     r"^MixtureBatchSampler: micro_batch_size is 0 \(expected at least 1\)$"),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 4, 2, 0, global_batch_size=12),
     r"global_batch_size 12 is not a multiple of micro_batch_size 4 x world_size 2 \(expected a positive multiple "
     r"of 8\)"),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 4, 1, 0, tail="wrap"),
     r"MixtureBatchSampler: tail 'wrap' is unknown \(expected \"pad\", \"drop\" or \"uneven\"\)"),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 4, 1, 0, end="never"),
     r"MixtureBatchSampler: end 'never' is unknown \(expected \"first_exhausted\", \"all_seen\", \"samples\" or "
     r"\"steps\"\)"),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 4, 1, 0, end="steps"),
     r"MixtureBatchSampler: end_count None does not go with end=\"steps\""),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 4, 1, 0, accumulation_steps=2, global_batch_size=8),
     r"accumulation_steps 2 and global_batch_size 8 were both given \(expected one of them\)"),
    (lambda: MixtureBatchSampler([300, 1.5], [1.0, 1.0], 4, 1, 0),
     r"MixtureBatchSampler: source size 1.5 is not an integer \(expected an int\)"),
    (lambda: MixtureBatchSampler(SIZES, "heavy", 4, 1, 0),
     r"MixtureBatchSampler: weights 'heavy' is not a sequence of numbers"),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 4, 1, 0, schedule=[(0, [1.0, 1.0, 1.0])]),
     r"MixtureSampler: schedule\[0\] \(step 0\) is not after step 0 \(expected strictly increasing steps from 1"),
    (lambda: MixtureBatchSampler(SIZES, WEIGHTS, 4, 1, 0).pairs_of([465]),
     r"MixtureBatchSampler.pairs_of: index 465 is out of range for the 465 samples of the sources \(expected "
     r"0..464\)"),
    (lambda: DistributedWeightedRandomSampler([1.0, 2.0], 0, num_replicas=1, rank=0),
     r"DistributedWeightedRandomSampler: num_samples is 0 \(expected a positive number of draws per epoch\)"),
    (lambda: DistributedWeightedRandomSampler([1.0, 2.0], 3, replacement=1, num_replicas=1, rank=0),
     r"DistributedWeightedRandomSampler: replacement 1 is not a bool \(expected True or False\)"),
    (lambda: DistributedWeightedRandomSampler(torch.ones(2, 2), 3, num_replicas=1, rank=0),
     r"DistributedWeightedRandomSampler: weights is a 2-D tensor \(expected a 1-D sequence of weights\)"),
    (lambda: DistributedWeightedRandomSampler([1.0, 0.0, 2.0], 3, replacement=False, num_replicas=1, rank=0),
     r"WeightedSampler: num_samples 3 exceeds the 2 samples with positive weight \(expected at most that many "
     r"without replacement\)"),
    (lambda: DistributedWeightedRandomSampler([0.0, 0.0], 3, num_replicas=1, rank=0),
     r"WeightedSampler: weights are all 0 or sum past the largest double \(expected a positive, finite sum\)"),
])
def test_bad_input_is_named(make, message):
    with pytest.raises(distsampler.ConfigError, match=message):
        make()


@pytest.mark.processes
def test_python_guide_mixture_example_runs_as_written():
    block = doc_blocks.block("docs/PYTHON.md", "example: mixture-python")
    scope = {"__name__": "doc_example"}
    exec(compile(block.code, block.path, "exec"), scope)
    read = scope["read"]
    assert len(read) == 2 * 50 * 2  # two epochs of 50 steps, 2 micro-batches of 8 per step on this rank
    assert all(len(x) == 8 for x in read)
    assert read[:100] != read[100:]  # set_epoch changed the orders
    assert scope["ckpt"]["sampler"]["epoch"] == 1
    assert len(scope["balanced"]) == 50
    drawn = collections.Counter(int(scope["labels"][i]) for i in scope["balanced"])
    assert 15 <= drawn[1] <= 35  # class 1 is 10 % of the data but about half of the balanced draws


def test_batch_sampler_shares_the_batches_checkpoint():
    from distsampler.torch import DistributedBatchSampler

    data = list(range(100))
    a = DistributedBatchSampler(data, 4, num_replicas=2, rank=0, accumulation_steps=2, seed=1)
    it = iter(a)
    taken = [next(it) for _ in range(5)]
    with pytest.raises(distsampler.ConfigError, match="this rank handed out 5 micro-batches of epoch 0"):
        a.state_dict()  # a DataLoader's prefetch may have drawn them: unknown what the loop got
    ahead = a.state_dict(batches=5)  # what the prefetch drew
    behind = a.state_dict(batches=3)  # what the loop consumed
    b = DistributedBatchSampler(data, 4, num_replicas=2, rank=0, accumulation_steps=2, seed=1)
    b.load_state_dict(behind)
    assert list(b)[:2] == taken[3:5]
    b.load_state_dict(ahead)
    # 5 micro-batches = 2 steps of G = 16 and one round of 8: the uninterrupted epoch's 6
    # steps (96 positions; 4 dropped) leave the second round of step 2 and steps 3..5.
    assert len(list(b)) == 100 // 16 * 2 - 5
    with pytest.raises(distsampler.ConfigError,
                       match=r"DistributedBatchSampler.state_dict: batches 13 exceeds the 12 micro-batches"):
        a.state_dict(batches=13)
