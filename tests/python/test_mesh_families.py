# Tests of the packing and streams families over parallel meshes, and the mesh guard's key and cover check in one process.
# SPDX-License-Identifier: MIT
import functools
import json
import random

import numpy as np
import pytest
import torch

from distsampler import ConfigError
from distsampler.mesh import Mesh, check_guard_descriptions, guard_mesh_fields, mesh_world
from distsampler.torch import (DistributedBatchSampler, DistributedSampler, PackedSequenceDataset,
                               PackedSequenceSampler, StreamDataset, StreamPacker, TokenBatchSampler, collate_packed)
from distsampler.torch.guard import _describe

from mesh_samplers import Claimed
from test_mesh import counted_layout, random_mesh

LENGTHS = [0 if i % 13 == 0 else 1 + i * 29 % 47 for i in range(150)]


def sequences(sampler):
    """Every sequence the sampler yields this epoch, as tuples of (document, offset, length)."""
    return [tuple(tuple(int(x) for x in piece) for piece in seq) for micro_batch in sampler for seq in micro_batch]


def check_tokens_once(per_data, every):
    """No token of any document twice across the data ranks; with `every`, each token once."""
    seen = set()
    for reads in per_data:
        for seq in reads:
            for doc, offset, length in seq:
                assert length >= 1 and offset + length <= LENGTHS[doc]
                tokens = {(doc, t) for t in range(offset, offset + length)}
                assert not seen & tokens
                seen |= tokens
    assert len(seen) == sum(LENGTHS) if every else seen


def over_random_meshes(trials, read, cover):
    """Every global rank of random meshes reads through mesh_world; model-parallel groups read the same,
    and `cover(reads of each data rank)` checks the data ranks together."""
    rng = random.Random(20261202)
    for _ in range(trials):
        dims, given, data = random_mesh(rng)
        coords, data_rank, data_world = counted_layout(dims, data)
        reads = []
        for g in range(len(coords)):
            w = mesh_world(dims, given, rank=g, world_size=len(coords))
            assert (w.rank, w.num_replicas) == (data_rank[g], data_world)
            reads.append(read(w))
        first = {}
        for g, d in enumerate(data_rank):
            assert reads[g] == reads[first.setdefault(d, g)], (dims, given, g)
        cover([reads[first[d]] for d in range(data_world)])


@pytest.mark.parametrize("mode, seq_len, every", [("best-fit", 64, True), ("concat", 32, False)])
def test_packed_sequences_over_random_meshes_same_pieces_per_group_every_token_once(mode, seq_len, every):
    over_random_meshes(
        25, lambda w: sequences(PackedSequenceSampler(LENGTHS, seq_len, 2, w.num_replicas, w.rank, mode=mode,
                                                      window=40, seed=8)),
        lambda per_data: check_tokens_once(per_data, every))


STREAM_SIZES = [17, 0, 30, 5, 22, 9, 0, 40, 13, 26, 1, 18]
STREAM_KEPT = {i for i in range(sum(STREAM_SIZES)) if i % 5 != 2}


def stream_keep(rec):
    return rec["id"] % 5 != 2


@pytest.fixture
def stream_shards(tmp_path):
    paths, at = [], 0
    for s, n in enumerate(STREAM_SIZES):
        p = tmp_path / f"shard{s}.jsonl"
        p.write_text("".join(json.dumps({"id": at + i}) + "\n" for i in range(n)))
        paths.append(str(p))
        at += n
    return paths


def test_stream_dataset_over_random_meshes_same_kept_samples_per_group_each_once_per_pass(stream_shards):
    def read(w):
        # At least 6 micro-batches, and on until this consumer left pass 1.
        it = iter(StreamDataset(stream_shards, num_replicas=w.num_replicas, rank=w.rank, micro_batch=2, seed=17,
                                filter=stream_keep, byte_sizes=None))
        out, at_pass = [], 0
        while len(out) < 12 or at_pass < 2:
            batch = next(it)
            assert len(batch.data) == 2
            out += [(item.pass_, item.record["id"]) for item in batch.data]
            at_pass = batch.progress[0]
        return out, at_pass

    def cover(per_data):
        left_by_all = min(at_pass for _, at_pass in per_data)  # every pass before it is complete
        assert left_by_all >= 2
        by_pass = {}
        for reads, _ in per_data:
            for p, i in reads:
                by_pass.setdefault(p, []).append(i)
        for p, ids in by_pass.items():
            assert len(ids) == len(set(ids)), f"pass {p} read a kept sample twice"
            assert set(ids) <= STREAM_KEPT
            if p < left_by_all:
                assert set(ids) == STREAM_KEPT, f"pass {p} is incomplete"

    over_random_meshes(15, read, cover)


@pytest.mark.processes
def test_packed_sequences_on_a_mesh_world_through_a_dataloader_with_workers():
    # Token t of document d is d * 1000 + t, so each row shows which tokens it holds.
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)[:-1]]).astype(np.int64)
    tokens = np.concatenate([np.arange(n, dtype=np.int64) + d * 1000 for d, n in enumerate(LENGTHS)])
    dataset = PackedSequenceDataset(tokens, offsets)
    spec, seq_len = "pp=2,dp=2,tp=2", 64
    by_rank = []
    for g in range(8):
        world = mesh_world(spec, rank=g, world_size=8)
        sampler = PackedSequenceSampler(LENGTHS, seq_len, 2, world.num_replicas, world.rank, mode="best-fit", seed=5)
        loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler, num_workers=2,
                                             collate_fn=functools.partial(collate_packed, seq_len=seq_len))
        batches = list(loader)
        assert len(batches) == len(sampler)
        for b in batches:
            for row, pieces in zip(b["input_ids"].tolist(), b["pieces"]):
                expected = [doc * 1000 + t for doc, offset, length in pieces for t in range(offset, offset + length)]
                assert row == expected + [0] * (seq_len - len(expected))
        by_rank.append([tuple(tuple(p) for p in seq) for b in batches for seq in b["pieces"]])
    first_of = {0: 0, 1: 2}  # global ranks 0 and 2: data ranks 0 and 1 at pp 0, tp 0
    for g in range(8):
        assert by_rank[g] == by_rank[first_of[(g // 2) % 2]], g  # pp, dp, tp: dp is the middle dim
    check_tokens_once([by_rank[0], by_rank[2]], every=True)


def mesh_descriptions(make, spec="dp=2,tp=2"):
    """What the mesh guard gathers from every global rank of `spec`: `make(world, odd)` builds a rank's
    sampler, odd for global rank 1 (tp 1 of data rank 0) alone."""
    mesh = Mesh.parse(spec)
    out = []
    for g in range(mesh.size):
        sampler = make(mesh_world(mesh, rank=g, world_size=mesh.size), g == 1)
        out.append({**_describe(sampler), **guard_mesh_fields(sampler)})
    return mesh, out


def mesh_guard_error(make):
    mesh, gathered = mesh_descriptions(make)
    with pytest.raises(ConfigError) as e:
        check_guard_descriptions(gathered, mesh, mesh.size)
    return str(e.value)


def group_message(difference):
    return ("guard: tp group of ranks 0,1: rank 1 reads other samples (" + difference +
            "; expected the same samples on every rank of the group)")


def resumed(sampler, odd, samples):
    if odd:
        sampler.load_state_dict(sampler.state_dict(samples))
    return sampler


@pytest.mark.parametrize("make, difference", [
    # A rank resumed from another checkpoint: 3 samples per rank of 2 data ranks consumed.
    (lambda w, odd: resumed(DistributedSampler(range(50), w.num_replicas, w.rank, seed=4), odd, 3),
     "consumed 6, rank 0 has 0"),
    (lambda w, odd: resumed(DistributedBatchSampler(range(50), 5, w.num_replicas, w.rank, seed=4), odd, 1),
     "consumed 10, rank 0 has 0"),
    (lambda w, odd: DistributedBatchSampler(range(50), 4 if odd else 5, w.num_replicas, w.rank, seed=4),
     "global_batch_size 8, rank 0 has 10"),
    # The same global batch of 20 as 2 micro-batches of 5 per step, or one of 10.
    (lambda w, odd: DistributedBatchSampler(range(50), 5 if odd else 10, w.num_replicas, w.rank, seed=4,
                                            accumulation_steps=2 if odd else 1), "accumulation_steps 2, rank 0 has 1"),
    (lambda w, odd: PackedSequenceSampler(LENGTHS, 64, 2, w.num_replicas, w.rank, mode="best-fit" if odd else "concat",
                                          seed=4), "tail 'uneven', rank 0 has 'drop'"),
])
def test_mesh_guard_key_names_each_field_that_changes_the_reads(make, difference):
    assert mesh_guard_error(make) == group_message(difference)


@pytest.mark.parametrize("option", [{"seq_len": 32}, {"window": 30}])
def test_mesh_guard_key_holds_packing_seq_len_and_window_in_the_token_layout(option):
    def make(w, odd):
        kw = {"seq_len": 64, "window": 60, **(option if odd else {})}
        return PackedSequenceSampler(LENGTHS, kw["seq_len"], 2, w.num_replicas, w.rank, window=kw["window"], seed=4)

    message = mesh_guard_error(make)
    assert message.startswith("guard: tp group of ranks 0,1: rank 1 reads other samples (token_layout '0x")
    assert message.endswith("'; expected the same samples on every rank of the group)")


@pytest.mark.parametrize("make", [
    lambda w, odd: DistributedSampler(range(50), w.num_replicas, w.rank, seed=4),
    lambda w, odd: DistributedBatchSampler(range(50), 5, w.num_replicas, w.rank, seed=4, tail="pad"),
    lambda w, odd: resumed(DistributedSampler(range(50), w.num_replicas, w.rank, seed=4), True, 3),
    lambda w, odd: TokenBatchSampler([1 + i * 7 % 30 for i in range(60)], 64, w.num_replicas, w.rank, seed=4),
    lambda w, odd: PackedSequenceSampler(LENGTHS, 64, 2, w.num_replicas, w.rank, mode="best-fit", seed=4),
    lambda w, odd: PackedSequenceSampler(LENGTHS, 32, 1, w.num_replicas, w.rank, seed=4),
])
def test_mesh_guard_passes_correct_runs_of_every_family_with_read_sums(make):
    mesh, gathered = mesh_descriptions(make)
    assert all(d["sums"] is not None for d in gathered)
    check_guard_descriptions(gathered, mesh, mesh.size)


def test_mesh_guard_cover_check_catches_data_ranks_that_overlap_under_their_own_ranks():
    # Both ranks of data rank 1 read data rank 0's share: every group agrees, only the sums tell.
    make = lambda w, odd: Claimed(range(50), w.num_replicas, w.rank, 0, 4)  # noqa: E731
    assert mesh_guard_error(make) == (
        "guard: mesh dp=2,tp=2 (data dims dp): overlap and missing samples: the right number of reads but not of the "
        "right indices (50 reads of 50 expected, 0 padding); expected the data ranks to read disjoint shares that "
        "cover the dataset (is a sampler built for another data rank than it reports?)")
    # A sampler without read sums (torch's own): only the group checks run.
    mesh, gathered = mesh_descriptions(
        lambda w, odd: torch.utils.data.distributed.DistributedSampler(range(50), w.num_replicas, w.rank, seed=4))
    assert all(d["sums"] is None and d["consumed"] == 0 for d in gathered)
    check_guard_descriptions(gathered, mesh, mesh.size)


def test_mesh_guard_compares_a_stream_datasets_key_and_first_micro_batches(stream_shards):
    def stream(w, odd, **changed):
        kw = {"micro_batch": 2, "seed": 17, "filter": stream_keep, "byte_sizes": None, **(changed if odd else {})}
        return StreamDataset(stream_shards, num_replicas=w.num_replicas, rank=w.rank, **kw)

    mesh, gathered = mesh_descriptions(stream)
    assert all(d["sums"] is None for d in gathered)  # a stream has no epoch to cover: only the group checks
    check_guard_descriptions(gathered, mesh, mesh.size)
    assert mesh_guard_error(lambda w, odd: stream(w, odd, micro_batch=3)) == group_message(
        "global_batch_size 6, rank 0 has 4")
    assert mesh_guard_error(lambda w, odd: stream(w, odd, seed=18)) == group_message("seed 18, rank 0 has 17")
    message = mesh_guard_error(lambda w, odd: stream(w, odd, byte_sizes=[1] * len(STREAM_SIZES)))
    assert message.startswith("guard: tp group of ranks 0,1: rank 1 reads other samples (order 'streams ")
    # Another read-time filter on one rank: the same key, other kept samples in its first micro-batches.
    assert mesh_guard_error(lambda w, odd: stream(w, odd, filter=lambda rec: rec["id"] % 5 != 3)) == group_message(
        "the same key, but its reads differ from rank 0's: 8 reads, rank 0 has 8")
    packer = StreamPacker(4, lambda rec: [rec["id"]] * (1 + rec["id"] % 3))
    longer = StreamPacker(8, packer.tokenize)
    assert mesh_guard_error(lambda w, odd: stream(w, True, packer=longer if odd else packer)) == group_message(
        "token_layout 8, rank 0 has 4")
