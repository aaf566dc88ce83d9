# Tests of distsampler.torch.PackedSequenceSampler: packing, equal steps, collate, loaders, gloo, state, .idx, errors.
# SPDX-License-Identifier: MIT
import functools
import os
import pathlib
import pickle
import struct

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import distsampler
import distsampler.torch as dst
from distsampler.torch import (PackedSequenceDataset, PackedSequenceSampler, ShardedDataset, collate_packed,
                               megatron_documents, megatron_tokens, read_megatron_index)

from dist_worker import PACK_L, pack_lengths


def lognormal(n, seed=3):
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(4.0, 1.0, size=n), 0, 600).astype(np.uint32)


def covered(lengths, micro_batches):
    """Checks no token is read twice; returns the tokens read."""
    seen = {}
    for mb in micro_batches:
        for seq in mb:
            for d, o, n in seq:
                assert 0 < n and o + n <= lengths[d]
                seen.setdefault(d, []).append((o, o + n))
    total = 0
    for ranges in seen.values():
        ranges.sort()
        assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))
        total += sum(b - a for a, b in ranges)
    return total


@pytest.mark.parametrize("mode", ["concat", "best-fit"])
@pytest.mark.parametrize("world,m,k", [(1, 1, 1), (3, 2, 2), (4, 3, 1)])
def test_equal_micro_batches_per_rank_and_every_token_once(mode, world, m, k):
    lengths = lognormal(2000)
    samplers = [PackedSequenceSampler(lengths, 128, m, world, r, accumulation_steps=k, mode=mode, window=256,
                                      seed=4) for r in range(world)]
    assert len({len(s) for s in samplers}) == 1
    read = [list(s) for s in samplers]
    assert all(len(r) == len(samplers[0]) for r in read)
    assert all(len(mb) == m for r in read for mb in r)
    sizes = [sum(n for _, _, n in seq) for r in read for mb in r for seq in mb]
    stats = samplers[0].stats
    if mode == "concat":
        assert all(n == 128 for n in sizes)
        assert covered(lengths, [mb for r in read for mb in r]) == int(lengths.sum()) - stats["dropped_tokens"]
        assert stats["dropped_tokens"] < (m * world * k + 1) * 128
    else:
        assert all(n <= 128 for n in sizes)
        assert covered(lengths, [mb for r in read for mb in r]) == int(lengths.sum())
        assert sum(1 for n in sizes if n == 0) == stats["empty_sequences"]
        assert stats["padding_efficiency"] > 0.9
    assert stats["skipped_documents"] == int((lengths == 0).sum())


def test_random_access_matches_iteration_and_epochs_differ():
    s = PackedSequenceSampler(lognormal(500), 64, 2, 2, 1, accumulation_steps=2, mode="best-fit", window=64)
    it = list(s)
    assert [s.micro_batch(j // 2, j % 2) for j in range(len(it))] == it
    with pytest.raises(IndexError):
        s.micro_batch(len(it) // 2)
    s.set_epoch(1)
    assert list(s) != it


def test_collate_builds_ids_positions_document_ids_and_cu_seqlens():
    tokens = np.arange(100, 200, dtype=np.uint16)  # document d starts at offsets[d]
    offsets = np.array([0, 10, 30])
    data = PackedSequenceDataset(tokens, offsets)
    batch = [data[((1, 2, 3), (0, 0, 4))], data[()]]
    out = collate_packed(batch, seq_len=8, pad_id=-1)
    assert out["input_ids"].tolist() == [[112, 113, 114, 100, 101, 102, 103, -1], [-1] * 8]
    assert out["position_ids"].tolist() == [[0, 1, 2, 0, 1, 2, 3, 0], list(range(8))]
    assert out["document_ids"].tolist() == [[0, 0, 0, 1, 1, 1, 1, -1], [-1] * 8]
    assert out["cu_seqlens"].tolist() == [0, 3, 7, 8, 16]
    assert out["cu_seqlens"].dtype == torch.int32
    assert out["max_seqlen"] == 8
    assert out["num_tokens"].tolist() == [7, 0]
    assert out["empty"].tolist() == [False, True]
    with pytest.raises(distsampler.ConfigError, match="collate_packed: a sequence holds 7 tokens, over seq_len 6"):
        collate_packed(batch[:1], seq_len=6)
    with pytest.raises(distsampler.ConfigError, match="piece 0 asks for 5 tokens but the token array has 2"):
        collate_packed([data[((2, 68, 5),)]], seq_len=8)


@pytest.mark.processes
def test_dataloader_with_two_workers_yields_the_sampler_order_as_tensors():
    lengths = lognormal(300)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    tokens = np.arange(int(lengths.sum()), dtype=np.int64)  # token t is its own position
    sampler = PackedSequenceSampler(lengths, 96, 2, 2, 0, mode="best-fit", window=64, seed=1)
    loader = DataLoader(PackedSequenceDataset(tokens, offsets), batch_sampler=sampler, num_workers=2,
                        collate_fn=functools.partial(collate_packed, seq_len=96))
    got = list(loader)
    want = list(sampler)
    assert len(got) == len(want)
    for batch, mb in zip(got, want):
        for row, seq in enumerate(mb):
            ids = [offsets[d] + o + i for d, o, n in seq for i in range(n)]
            assert batch["input_ids"][row, :len(ids)].tolist() == ids
            assert batch["num_tokens"][row] == len(ids)


@pytest.mark.processes
@pytest.mark.parametrize("mode", ["concat", "best-fit"])
def test_a_plan_of_few_records_reads_through_a_dataloader_exactly_as_a_full_plan(mode):
    lengths = lognormal(2000, seed=8)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    tokens = np.arange(int(lengths.sum()), dtype=np.int64)
    kwargs = dict(mode=mode, window=64, chunk=8, seed=4, accumulation_steps=2)
    full = PackedSequenceSampler(lengths, 128, 2, 3, 1, **kwargs)
    small = PackedSequenceSampler(lengths, 128, 2, 3, 1, plan_limit=3, **kwargs)
    assert full.plan_stride == 1 and small.plan_stride == 11  # 32 windows, every 11th recorded
    assert small.plan_bytes <= (16 if mode == "best-fit" else 8) * 4 < full.plan_bytes
    collate = functools.partial(collate_packed, seq_len=128)
    got = list(DataLoader(PackedSequenceDataset(tokens, offsets), batch_sampler=small, num_workers=2,
                          collate_fn=collate))
    want = list(full)
    assert len(got) == len(want) == len(small)
    for batch, mb in zip(got, want):
        for row, seq in enumerate(mb):
            ids = [offsets[d] + o + i for d, o, n in seq for i in range(n)]
            assert batch["input_ids"][row, :len(ids)].tolist() == ids
    state = small.state_dict(batches=5)
    resumed = PackedSequenceSampler(lengths, 128, 2, 3, 1, **kwargs)
    resumed.load_state_dict(state)
    assert list(resumed) == want[5:]


@pytest.mark.processes
def test_the_checkpointing_loader_resumes_packed_sequences_after_the_batches_received():
    lengths = lognormal(800, seed=5)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    data = PackedSequenceDataset(np.arange(int(lengths.sum()), dtype=np.int64), offsets)
    collate = functools.partial(collate_packed, seq_len=128)

    def loader(world, rank, m):
        s = PackedSequenceSampler(lengths, 128, m, world, rank, mode="best-fit", window=128, seed=2)
        return dst.DataLoader(data, batch_sampler=s, num_workers=2, collate_fn=collate)

    first = [loader(2, r, 2) for r in range(2)]
    seen = []
    states = []
    for dl in first:
        it = iter(dl)
        seen += [next(it)["pieces"] for _ in range(5)]  # the workers drew ahead of these
        states.append(dl.state_dict())
    assert states[0]["state"] == states[1]["state"]
    for r in range(3):  # resumed on 3 ranks of 1 sequence each
        dl = loader(3, r, 1)
        dl.load_state_dict(states[0])
        seen += [b["pieces"] for b in dl]
    assert covered(lengths, seen) == int(lengths.sum())


def test_resume_on_another_world_reads_the_rest_once_and_the_same_global_batch_exactly():
    lengths = lognormal(1500, seed=9)
    for mode in ("concat", "best-fit"):
        first = [PackedSequenceSampler(lengths, 100, 2, 2, r, accumulation_steps=2, mode=mode, window=128, seed=3)
                 for r in range(2)]
        runs = [list(s) for s in first]
        consumed = 7  # micro-batches every rank's loop received
        state = first[0].state_dict(batches=consumed)
        assert state == first[1].state_dict(batches=consumed)
        # 3 ranks, micro-batch 1, accumulation 3 (another G)
        rest = []
        for r in range(3):
            s = PackedSequenceSampler(lengths, 100, 1, 3, r, accumulation_steps=3, mode=mode, window=128, seed=3)
            s.load_state_dict(state)
            rest += list(s)
        before = [mb for run in runs for mb in run[:consumed]]
        total = covered(lengths, before + rest)
        if mode == "best-fit":
            assert total == int(lengths.sum())
        # Same G (4 ranks x micro-batch 1 x accumulation 2 = 8): at a step boundary, exactly the same sequences.
        state = first[0].state_dict(batches=6)
        again = []
        for r in range(4):
            s = PackedSequenceSampler(lengths, 100, 1, 4, r, accumulation_steps=2, mode=mode, window=128, seed=3)
            s.load_state_dict(state)
            again.append(list(s))
        steps = len(again[0]) // 2
        flat_again = [seq for t in range(steps) for k in range(2) for r in range(4) for seq in again[r][2 * t + k]]
        flat_first = [seq for t in range(3, 3 + steps) for k in range(2) for r in range(2)
                      for seq in runs[r][2 * t + k]]
        # The last step spreads its sequences over the micro-batches of each world: compare without the markers.
        assert [q for q in flat_again if q] == [q for q in flat_first if q]


def test_a_state_of_another_mode_seq_len_or_lengths_is_refused_naming_the_field():
    lengths = lognormal(200)
    s = PackedSequenceSampler(lengths, 64, 1, 1, 0)
    state = s.state_dict(batches=3)
    with pytest.raises(distsampler.StateError, match=r"mode differs \(state concat, sampler best-fit\)"):
        PackedSequenceSampler(lengths, 64, 1, 1, 0, mode="best-fit").load_state_dict(state)
    with pytest.raises(distsampler.StateError, match=r"seq_len differs \(state 64, sampler 65\)"):
        PackedSequenceSampler(lengths, 65, 1, 1, 0).load_state_dict(state)
    other = lengths.copy()
    other[0] += 1
    with pytest.raises(distsampler.StateError, match="document lengths differ"):
        PackedSequenceSampler(other, 64, 1, 1, 0).load_state_dict(state)
    loaded = PackedSequenceSampler(lengths, 64, 1, 1, 0)
    loaded.load_state_dict(state)
    clone = pickle.loads(pickle.dumps(loaded))
    assert list(clone) == list(loaded)


@pytest.mark.parametrize("kwargs,message", [
    ({"seq_len": 0}, "PackOptions: seq_len 0 is out of range"),
    ({"mode": "greedy"}, 'PackedSequenceSampler: mode \'greedy\' is unknown (expected "concat" or "best-fit")'),
    ({"micro_batch_size": 0}, "micro_batch_size"),
    ({"mode": "best-fit", "split_long": False}, "document 1 has 900 tokens, over seq_len 64"),
    ({"window": 8, "chunk": 16}, "window 8 is out of range (expected chunk 16..4294967295)"),
    ({"plan_limit": 0}, "plan_limit 0 is out of range (expected at least 1 window record)"),
    # A string was taken as true.
    ({"split_long": "False"}, "PackedSequenceSampler: split_long 'False' is not a bool (expected True or False)"),
    ({"shuffle": "no"}, "PackedSequenceSampler: shuffle 'no' is not a bool (expected True or False)"),
    # Bounded before anything is allocated for them (a micro-batch of 10^9 sequences took 2.1 GB).
    ({"micro_batch_size": 10**9}, "micro_batch_size 1000000000 is out of range (expected 1..1048576 sequences per "
                                  "micro-batch)"),
])
def test_bad_input_raises_config_error_naming_it(kwargs, message):
    args = {"seq_len": 64, "micro_batch_size": 1, **kwargs}
    with pytest.raises(distsampler.ConfigError) as e:
        PackedSequenceSampler([5, 900, 0, 3], args.pop("seq_len"), args.pop("micro_batch_size"), 1, 0, **args)
    assert message in str(e.value)


def test_a_best_fit_window_of_more_pieces_than_it_can_pack_is_refused_naming_seq_len():
    # One document of 2^32 - 1 tokens at seq_len 1: 2^32 pieces in one window took 3.3 GB before.
    lengths = np.array([2**32 - 1], dtype=np.uint32)
    message = ("PackedSequenceSampler: window 0 of epoch 0 holds 4294967295 pieces (its documents cut at seq_len 1), "
               "more than the 4194304 best-fit packs at once (expected a larger seq_len, a smaller window, or mode "
               "concat)")
    with pytest.raises(distsampler.ConfigError) as e:
        PackedSequenceSampler(lengths, 1, 1, 1, 0, mode="best-fit")
    assert str(e.value) == message
    assert len(PackedSequenceSampler(lengths, 1, 1, 1, 0, plan_limit=1)) == 2**32 - 1  # concat holds no pieces


def test_megatron_index_and_bin_feed_the_sampler_and_collate(tmp_path):
    sizes = [5, 0, 7]
    tokens = np.arange(12, dtype=np.uint16) + 1000
    body = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, 3, 4) + struct.pack("<3i", *sizes)
    body += struct.pack("<3q", 0, 10, 10) + struct.pack("<4q", 0, 1, 2, 3)
    (tmp_path / "d.idx").write_bytes(body)
    tokens.tofile(tmp_path / "d.bin")
    index = read_megatron_index(tmp_path / "d.idx")
    assert index.sizes.tolist() == sizes and index.dtype == np.uint16
    data, offsets, _ = megatron_tokens(tmp_path / "d")
    assert offsets.tolist() == [0, 5, 5]
    s = PackedSequenceSampler(index.sizes, 4, 1, 1, 0, shuffle=False)
    batches = [collate_packed([PackedSequenceDataset(data, offsets)[seq] for seq in mb], seq_len=4) for mb in s]
    assert [b["input_ids"].tolist() for b in batches] == [[[1000, 1001, 1002, 1003]], [[1004, 1005, 1006, 1007]],
                                                          [[1008, 1009, 1010, 1011]]]
    assert s.stats["skipped_documents"] == 1
    for name in ("cut", "other"):
        tokens.tofile(tmp_path / f"{name}.bin")
    (tmp_path / "cut.idx").write_bytes(body[:-1])
    with pytest.raises(distsampler.ConfigError, match=r"shard .*cut\.idx: is truncated"):
        read_megatron_index(tmp_path / "cut.idx")
    (tmp_path / "other.idx").write_bytes(b"TNTIDX\x00\x00\x00" + body[9:])
    with pytest.raises(distsampler.ConfigError, match=r"other\.idx: wrong magic"):
        read_megatron_index(tmp_path / "other.idx")
    with pytest.raises(distsampler.ConfigError, match=r"missing\.idx: cannot open"):
        read_megatron_index(tmp_path / "missing.idx")


def test_four_gloo_ranks_same_steps_every_token_once_then_resume_on_two(gloo4):
    lengths = pack_lengths()
    results = gloo4.results("packing")
    assert len({r["len"] for r in results}) == 1
    assert all(r["counts"] == [[2] * 4] * (r["len"] // 2) for r in results)  # 2 micro-batches per rank per step
    assert all(r["ids_match"] for r in results)
    epoch0 = [mb for r in results for mb in r["epoch0"]]
    assert covered(lengths, epoch0) == int(lengths.sum())
    assert all(sum(n for _, _, n in seq) <= PACK_L for mb in epoch0 for seq in mb)
    assert "token_layout" in results[0]["guard_error"] and "rank 3" in results[0]["guard_error"]
    first = [mb for r in results for mb in r["saved_read"]]
    rest = [mb for r in results[:2] for mb in r["resumed_read"]]
    assert covered(lengths, first + rest) == int(lengths.sum())
    assert "resumed_read" not in results[2]


class MegatronWriter:
    """Writes an indexed dataset as Megatron's builder does: add_item() per sequence, end_document() after the last
    sequence of a document (its document index starts at 0 and gains the sequence count at each document's end)."""

    CODES = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.float64: 6, np.float32: 7,
             np.uint16: 8}

    def __init__(self, prefix, dtype=np.uint16):
        self.prefix, self.dtype = str(prefix), dtype
        self.sizes, self.docs, self.bin = [], [0], bytearray()

    def add_item(self, tokens):
        self.bin += np.asarray(tokens, dtype=self.dtype).tobytes()
        self.sizes.append(len(tokens))

    def end_document(self):
        self.docs.append(len(self.sizes))

    def finalize(self, docs=None, pointers=None):
        docs = self.docs if docs is None else docs
        itemsize = np.dtype(self.dtype).itemsize
        if pointers is None:
            pointers = np.concatenate([[0], np.cumsum(self.sizes, dtype=np.int64)[:-1] * itemsize]) if self.sizes else []
        body = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, self.CODES[self.dtype], len(self.sizes), len(docs))
        body += np.asarray(self.sizes, dtype="<i4").tobytes() + np.asarray(pointers, dtype="<i8").tobytes()
        body += np.asarray(docs, dtype="<i8").tobytes()
        pathlib.Path(self.prefix + ".idx").write_bytes(body)
        pathlib.Path(self.prefix + ".bin").write_bytes(bytes(self.bin))


def test_an_empty_megatron_dataset_has_no_sequences_in_every_reader(tmp_path):
    MegatronWriter(tmp_path / "empty").finalize()  # a 0-byte .bin, as the builder leaves it with no documents
    assert (tmp_path / "empty.bin").stat().st_size == 0
    index = read_megatron_index(tmp_path / "empty")
    assert index.sizes.size == 0 and index.document_indices.tolist() == [0]
    tokens, offsets, _ = megatron_tokens(tmp_path / "empty")  # was NumPy's "cannot mmap an empty file"
    assert tokens.size == 0 and tokens.dtype == np.uint16 and offsets.size == 0 and offsets.dtype == np.int64
    ds = ShardedDataset([str(tmp_path / "empty.idx")], num_replicas=1, rank=0, tail="drop", cache=False)
    assert ds.record_counts == [0] and list(ds) == []


def test_megatron_documents_of_several_sequences_and_int64_offsets(tmp_path):
    w = MegatronWriter(tmp_path / "d", dtype=np.int32)
    documents = [[[1, 2, 3], [4]], [[5, 6]], [[7], [], [8, 9, 10, 11]]]
    for doc in documents:
        for seq in doc:
            w.add_item(seq)
        w.end_document()
    w.finalize()
    tokens, offsets, index = megatron_tokens(tmp_path / "d")
    assert index.document_indices.dtype == np.int64 and index.document_indices.tolist() == [0, 2, 3, 6]
    assert offsets.dtype == np.int64  # uint64 + a Python int is float64 under NumPy 1.24, which cannot slice
    for d, doc in enumerate(documents):
        first, end = index.document_indices[d], index.document_indices[d + 1]
        start = offsets[first] + 0
        assert start.dtype == np.int64
        got = tokens[start:offsets[end - 1] + int(index.sizes[end - 1])].tolist()
        assert got == [t for seq in doc for t in seq]


@pytest.mark.parametrize("docs,message", [
    ([0, 2], "its document index runs from 0 to 2 over 2 entries (expected 0 to the sequence count 3, as Megatron "
             "writes it)"),
    ([1, 3], "its document index runs from 1 to 3 over 2 entries (expected 0 to the sequence count 3, as Megatron "
             "writes it)"),
    ([], "its document index runs from None to None over 0 entries (expected 0 to the sequence count 3, as Megatron "
         "writes it)"),
    ([0, 2, 1, 3], "its document index decreases at entry 2 (2 then 1; expected sequence numbers that never "
                   "decrease)"),
])
def test_a_document_index_megatron_would_not_write_is_refused_naming_the_file(tmp_path, docs, message):
    w = MegatronWriter(tmp_path / "d")
    for seq in ([1], [2, 3], [4]):
        w.add_item(seq)
    w.finalize(docs)
    with pytest.raises(distsampler.ConfigError) as e:
        read_megatron_index(tmp_path / "d.idx")
    assert str(e.value) == f"read_megatron_index: {tmp_path / 'd.idx'}: {message}"


def test_megatron_documents_pack_whole_documents(tmp_path):
    w = MegatronWriter(tmp_path / "d")
    documents = [[[1, 2, 3], [4]], [[]], [[5, 6]], [[7], [], [8, 9, 10, 11]]]
    for doc in documents:
        for seq in doc:
            w.add_item(seq)
        w.end_document()
    w.finalize()
    tokens, offsets, lengths = megatron_documents(tmp_path / "d")
    assert lengths.dtype == np.uint32 and lengths.tolist() == [4, 0, 2, 5]
    assert offsets.dtype == np.int64 and offsets.tolist() == [0, 4, 4, 6]
    s = PackedSequenceSampler(lengths, 8, 1, 1, 0, shuffle=False, mode="best-fit")
    ds = PackedSequenceDataset(tokens, offsets)
    rows = [collate_packed([ds[seq] for seq in mb], seq_len=8) for mb in s]
    whole = set()
    for b in rows:  # every document whole in one packed sequence: its pieces are (document, 0, its length)
        ids, docs = b["input_ids"][0].tolist(), b["document_ids"][0].tolist()
        for d in set(docs) - {-1}:
            whole.add(tuple(t for t, x in zip(ids, docs) if x == d))
    assert sorted(whole) == [(1, 2, 3, 4), (5, 6), (7, 8, 9, 10, 11)]
    assert all(piece[1] == 0 and piece[2] == lengths[piece[0]] for mb in s for seq in mb for piece in seq)
    assert s.stats["skipped_documents"] == 1 and s.stats["read_tokens"] == 11  # the empty document


def test_megatron_documents_refuses_a_document_whose_sequences_are_apart(tmp_path):
    w = MegatronWriter(tmp_path / "d")
    for seq in ([1, 2], [3], [4, 5]):
        w.add_item(seq)
    w.end_document()
    w.finalize(docs=[0, 1, 3], pointers=[0, 8, 4])  # document 1: sequence 1 at token 4, sequence 2 at token 2
    with pytest.raises(distsampler.ConfigError) as e:
        megatron_documents(tmp_path / "d")
    assert str(e.value) == (f"megatron_documents: {tmp_path / 'd'}: sequence 2 (of document 1) starts at token 2 of "
                            "the .bin, not where sequence 1 ends (5): a document's sequences must be stored one after "
                            "the other to be read as one (expected the layout Megatron's builder writes)")


def test_megatron_tokens_refuse_a_bin_truncated_under_them_instead_of_a_sigbus(tmp_path):
    # megatron_tokens gave an np.memmap: a read of a page lost to truncation killed the process.
    sizes = [3000, 5000]
    body = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 4, 2, 3) + struct.pack("<2i", *sizes)
    body += struct.pack("<2q", 0, 12000) + struct.pack("<3q", 0, 1, 2)
    (tmp_path / "d.idx").write_bytes(body)
    np.arange(8000, dtype=np.int32).tofile(tmp_path / "d.bin")
    data, offsets, _ = megatron_tokens(tmp_path / "d")
    assert len(data) == 8000 and data.dtype == np.int32 and data[7999] == 7999
    assert data[2998:3002].tolist() == [2998, 2999, 3000, 3001]
    dataset = PackedSequenceDataset(pickle.loads(pickle.dumps(data)), offsets)
    assert dataset[((1, 4990, 10),)][1][0].tolist() == list(range(7990, 8000))
    bin_path = str(tmp_path / "d.bin")
    os.truncate(bin_path, 4096)
    message = (f"megatron_tokens: shard {bin_path} changed while this job reads it (its size went from 32000 to 4096 "
               "bytes): records read from it now would be wrong or missing, so it is not read; restore the file (or call "
               "megatron_tokens again on the new one) and restart the job from its last checkpoint")
    for tokens in (data, dataset.tokens):
        with pytest.raises(distsampler.ConfigError) as e:
            tokens[7990:8000]
        assert str(e.value) == message
