# Tests of StreamDataset: shard files of unknown size through distsampler.torch.DataLoader, filters, packing, resume.
# SPDX-License-Identifier: MIT
import json
import re

import pytest
import torch

import distsampler
from distsampler import _core
from distsampler.torch import DataLoader, StreamDataset, StreamPacker

SIZES = [7, 0, 12, 3, 9]  # records per shard; one empty file


@pytest.fixture
def shards(tmp_path):
    paths, at = [], 0
    for s, n in enumerate(SIZES):
        p = tmp_path / f"shard{s}.jsonl"
        p.write_text("".join(json.dumps({"id": at + i, "text": "w " * ((at + i) % 7)}) + "\n" for i in range(n)))
        paths.append(str(p))
        at += n
    return paths


def keep(rec):
    return rec["id"] % 3 != 0


KEPT = {i for i in range(sum(SIZES)) if i % 3 != 0}


def run(loader, steps, seen):
    """Iterates `steps` batches, recording (pass, id) of each item; checks the micro-batch size."""
    it = iter(loader)
    for _ in range(steps):
        batch = next(it)
        assert len(batch) == loader.dataset.micro_batch
        for item in batch:
            assert keep(item.record)
            seen.append((item.pass_, item.record["id"]))


def first_open_pass(text):
    """The first pass a job state leaves unread (every pass before it is complete)."""
    state = _core.StreamJobState.from_text(text)
    return state.open_passes[0] if state.open_passes else state.next_pass


def check_passes(seen, below):
    by_pass = {}
    for p, i in seen:
        by_pass.setdefault(p, []).append(i)
    for p, ids in by_pass.items():
        assert len(ids) == len(set(ids)), f"pass {p} read a sample twice"
        if p < below:
            assert set(ids) == KEPT, f"pass {p} is incomplete"


@pytest.mark.processes
def test_persistent_workers_continue_exactly_and_resume_on_another_world(shards):
    seen = []
    loaders = [DataLoader(StreamDataset(shards, num_replicas=2, rank=r, micro_batch=2, seed=5, filter=keep),
                          batch_size=None, num_workers=2, persistent_workers=True) for r in range(2)]
    for loader in loaders:  # two iterations of each persistent loader: the second continues the first
        run(loader, 3, seen)
        run(loader, 4, seen)
    parts = [loader.state_dict()["state"] for loader in loaders]
    text = loaders[0].dataset.job_state(parts)
    assert text.startswith("distsampler-state v5 sampler=stream dataset_size=5 seed=5 ")
    assert _core.StreamJobState.from_text(text).step == 7
    # Resume on 3 ranks x 1 worker, then on 1 rank x 3 workers: nothing read twice within a pass.
    for world, workers in ((3, 1), (1, 3)):
        loaders = []
        for r in range(world):
            loader = DataLoader(StreamDataset(shards, num_replicas=world, rank=r, micro_batch=2, seed=5, filter=keep),
                                batch_size=None, num_workers=workers, persistent_workers=True)
            loader.load_state_dict({"format": 1, "sampler": "StreamDataset", "state": text})
            run(loader, 12, seen)
            loaders.append(loader)
        text = loaders[0].dataset.job_state([loader.state_dict()["state"] for loader in loaders])
    below = first_open_pass(text)
    assert below >= 2
    check_passes(seen, below)


def test_a_filter_that_keeps_nothing_is_an_error_not_a_hang(shards):
    ds = StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, filter=lambda rec: False)
    with pytest.raises(distsampler.ConfigError, match="has no record with an output"):
        next(iter(DataLoader(ds, batch_size=None)))


@pytest.mark.processes
def test_the_packer_fills_sequences_and_carries_a_document_across_a_resume(shards):
    def tokenize(rec):
        return [rec["id"] * 100 + k for k in range(len(rec["text"].split()) + 1)]

    packer = StreamPacker(8, tokenize)
    ds = StreamDataset(shards, num_replicas=1, rank=0, micro_batch=2, packer=packer, seed=1)
    loader = DataLoader(ds, batch_size=None, num_workers=1, persistent_workers=True)
    tokens = []
    it = iter(loader)
    for _ in range(3):
        batch = next(it)
        assert batch.shape == (2, 8)
        tokens.extend(batch.flatten().tolist())
    text = ds.job_state([loader.state_dict()["state"]])
    ds2 = StreamDataset(shards, num_replicas=1, rank=0, micro_batch=2, packer=packer, seed=1)
    loader2 = DataLoader(ds2, batch_size=None, num_workers=1)
    loader2.load_state_dict({"format": 1, "sampler": "StreamDataset", "state": text})
    it = iter(loader2)
    for _ in range(8):
        tokens.extend(next(it).flatten().tolist())
    # Documents are whole and in order: each document's tokens d*100 + 0..n-1 appear consecutively, once per pass.
    runs, last = [], None
    for t in tokens:
        d, k = divmod(t, 100)
        if k == 0:
            runs.append([d, 1])
        else:
            assert runs and runs[-1][0] == d and runs[-1][1] == k, f"token {t} breaks document {d}"
            runs[-1][1] += 1
        last = t
    assert last is not None
    assert _core.StreamJobState.from_text(text).carries  # the state was cut inside a document, which the resume continued
    # Pass 0 (the first 21 documents with tokens, all of which precede pass 1's) holds each document once, whole.
    assert sorted(d for d, _ in runs[:sum(SIZES)]) == list(range(sum(SIZES)))
    for d, n in runs[:sum(SIZES)]:
        assert n == len(tokenize({"id": d, "text": "w " * (d % 7)}))


def test_refusals_name_the_argument(shards):
    with pytest.raises(distsampler.ConfigError, match="micro_batch 0 is out of range"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=0)
    with pytest.raises(distsampler.ConfigError, match="filter 3 is not callable"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, filter=3)
    with pytest.raises(distsampler.ConfigError, match="byte_sizes has 1 entries for 5 paths"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, byte_sizes=[1])
    with pytest.raises(distsampler.ConfigError, match="sequence_length 0 is out of range"):
        StreamPacker(0, len)


@pytest.mark.parametrize("seed, message", [
    ("7", "StreamDataset: seed '7' is not an integer (expected an int)"),
    (1.5, "StreamDataset: seed 1.5 is not an integer (expected an int)"),
    (2**64, "StreamDataset: seed 18446744073709551616 is out of range (expected -2^63..2^64-1, as torch.manual_seed)"),
    (True, "StreamDataset: seed True is a bool (expected an int)"),
])
def test_a_seed_is_checked_as_every_other_sampler_checks_it(shards, seed, message):
    # "7" became 7, 1.5 became 1 and 2**64 became 0.
    with pytest.raises(distsampler.ConfigError) as e:
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, seed=seed)
    assert str(e.value) == message
    assert StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, seed=-1).seed == 2**64 - 1


def test_sizes_that_would_never_fill_or_fit_are_refused_before_a_read(shards):
    # StreamPacker(2**40) was accepted and never yielded; num_replicas=2**24 took 1.5 GB for one record.
    with pytest.raises(distsampler.ConfigError, match=r"^StreamPacker: sequence_length 1099511627776 is out of range "
                       r"\(expected an int from 1 to 8388607 tokens, as PackedSequenceSampler's seq_len\)$"):
        StreamPacker(2**40, len)
    packer = StreamPacker(8388607, len)
    with pytest.raises(distsampler.ConfigError, match=r"^StreamDataset: micro_batch 17 x packer sequence_length "
                       r"8388607 is more than 134217728 tokens per item \(expected a smaller micro_batch\)$"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=17, packer=packer)
    with pytest.raises(distsampler.ConfigError, match=r"^StreamDataset: micro_batch 1000000000 is more than 134217728 "
                       r"samples per item \(expected a smaller micro_batch\)$"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=10**9)
    with pytest.raises(distsampler.ConfigError, match=r"^StreamDataset: state_capacity 1099511627776 is out of range "
                       r"\(expected an int from 1 to 1073741824 bytes of state text\)$"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, state_capacity=2**40)  # tried to reserve 1 TB
    with pytest.raises(distsampler.ConfigError, match=r"^StreamDataset: state_capacity 0 is out of range"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, state_capacity=0)
    with pytest.raises(distsampler.ConfigError, match=r"^StreamDataset: num_replicas 16777216 is more than 1048576 "
                       r"\(expected at most 1048576 ranks x DataLoader workers: every pass holds a share for each\)$"):
        StreamDataset(shards, num_replicas=2**24, rank=0, micro_batch=1)
    with pytest.raises(distsampler.ConfigError, match="format 'csv' is unknown"):
        StreamDataset(shards, format="csv", num_replicas=1, rank=0, micro_batch=1)
    with pytest.raises(distsampler.ConfigError, match=re.escape(
            "StreamDataset: format 'raw' is not read without an index (a raw token file's documents are found by "
            "scanning it for eos; expected ShardedDataset(paths, format=\"raw\", dtype=, eos=) or raw_documents)")):
        StreamDataset(shards, format="raw", num_replicas=1, rank=0, micro_batch=1)
    with pytest.raises(distsampler.ConfigError, match="batch_size=4 with a StreamDataset"):
        DataLoader(StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1), batch_size=4)
    ds = StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, seed=2)
    other = StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, seed=3)
    text = ds.job_state([ds.state_dict()])
    with pytest.raises(distsampler.StateError, match=r"seed differs \(state 2, sampler 3\)"):
        other.load_state_dict(text)
    with pytest.raises(distsampler.StateError, match="checksum mismatch"):
        ds.load_state_dict(text.replace("seed=2", "seed=4"))
    with pytest.raises(distsampler.StateError, match=r"SamplerState::from_text: unsupported version 6 \(expected 1 to 5\)"):
        ds.load_state_dict(text.replace(" v5 ", " v6 "))
    batch_text = distsampler.torch.DistributedSampler(list(range(10)), num_replicas=1, rank=0).state_dict()["state"]
    with pytest.raises(distsampler.StateError, match=r"StreamJobState: sampler family differs \(state distributed, sampler stream\)"):
        ds.load_state_dict(batch_text)
    with pytest.raises(distsampler.ConfigError, match=r"share 0 is not a consumer count or 'all' \(expected an int >= 1"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, share=0)
    with pytest.raises(distsampler.ConfigError, match=r"share 'some' is not a consumer count or 'all'"):
        StreamDataset(shards, num_replicas=1, rank=0, micro_batch=1, share="some")
    with pytest.raises(distsampler.ConfigError, match=r"StreamDataset: share 3 is above the 2 consumers \(num_replicas x "
                       r"num_workers; expected 1..2, or 'all'\)"):
        next(iter(DataLoader(StreamDataset(shards, num_replicas=2, rank=0, micro_batch=1, share=3), batch_size=None)))


@pytest.mark.processes
def test_a_share_among_every_consumer_reads_each_shard_by_stride_and_resumes_on_another_share(shards):
    seen = []
    loaders = [DataLoader(StreamDataset(shards, num_replicas=2, rank=r, micro_batch=2, seed=5, filter=keep, share="all",
                                        byte_sizes=None), batch_size=None, num_workers=2, persistent_workers=True)
               for r in range(2)]
    residues = {}  # (pass, shard) -> {consumer: record numbers mod 4}
    for loader in loaders:
        it = iter(loader)
        for t in range(4):
            batch = next(it)
            assert len(batch) == 2
            seen += [(item.pass_, item.record["id"]) for item in batch]
            consumer = loader.dataset.rank * 2 + t % 2  # step t comes from worker t mod 2
            for item in batch:
                residues.setdefault((item.pass_, item.shard), {}).setdefault(consumer, set()).add(item.index % 4)
    # Every shard is cut by stride among the 4 consumers: each reads one residue of it, none the same.
    assert len(residues) >= 3
    for by_consumer in residues.values():
        assert all(len(r) == 1 for r in by_consumer.values())
        assert len(set.union(*by_consumer.values())) == len(by_consumer)
    assert any(len(by_consumer) >= 2 for by_consumer in residues.values())
    parts = [loader.state_dict()["state"] for loader in loaders]
    text = loaders[0].dataset.job_state(parts)
    assert _core.StreamJobState.from_text(text).share == 0
    # Resume on 1 rank x 3 workers with a share of 2: the open runs as they were cut, fresh passes by 2.
    loader = DataLoader(StreamDataset(shards, num_replicas=1, rank=0, micro_batch=2, seed=5, filter=keep, share=2,
                                      byte_sizes=None), batch_size=None, num_workers=3, persistent_workers=True)
    loader.load_state_dict({"format": 1, "sampler": "StreamDataset", "state": text})
    run(loader, 40, seen)
    text = loader.dataset.job_state([loader.state_dict()["state"]])
    below = first_open_pass(text)
    assert below >= 2
    check_passes(seen, below)


@pytest.mark.processes
def test_four_gloo_processes_killed_after_a_checkpoint_resume_on_two(shards, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import free_port

    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stream_gloo_worker.py")
    shard_dir = os.path.dirname(shards[0])
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"

    def launch(world, phase):
        port = free_port()
        return [subprocess.Popen([sys.executable, worker, str(port), str(r), str(world), shard_dir, str(tmp_path), phase],
                                 env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
                for r in range(world)]

    procs = launch(4, "first")
    deadline = time.time() + 300
    while not (tmp_path / "state.txt").exists():
        assert time.time() < deadline, "no state after 300 s"
        assert all(p.poll() is None for p in procs), [p.communicate()[1][-2000:] for p in procs if p.poll() is not None]
        time.sleep(0.2)
    time.sleep(1.0)  # the ranks read on past the checkpoint
    for p in procs:
        os.killpg(p.pid, signal.SIGKILL)  # the process and its loader workers
        p.communicate()
    for p in launch(2, "resume"):
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    seen = []
    for name, ranks in (("before", 4), ("resumed", 2)):
        for r in range(ranks):
            seen += [tuple(x) for x in json.loads((tmp_path / f"{name}{r}.json").read_text())]
    assert len(seen) == (4 * 6 + 2 * 40) * 2
    # Passes every consumer left after the resume hold each kept sample once; later ones at most once.
    below = first_open_pass((tmp_path / "final.txt").read_text())
    assert below >= 2
    check_passes(seen, below)


def test_tar_and_npy_shards_are_read_without_an_index(tmp_path):
    import io
    import tarfile

    import numpy as np

    paths, at = [], 0
    for s, n in enumerate([3, 0, 4]):
        p = tmp_path / f"s{s}.tar"
        with tarfile.open(p, "w") as tar:
            for i in range(n):
                for ext, payload in (("txt", str(at + i).encode()), ("cls", b"1")):
                    info = tarfile.TarInfo(f"sample{i:03d}.{ext}")
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
        paths.append(str(p))
        at += n
    npy = tmp_path / "s3.npy"
    np.save(npy, np.arange(at, at + 5, dtype=np.int64).reshape(5, 1))
    paths.append(str(npy))
    ds = StreamDataset(paths, num_replicas=1, rank=0, micro_batch=4, seed=3)
    it = iter(DataLoader(ds, batch_size=None))
    ids = {}
    for _ in range(6):  # 12 records a pass, 24 in 6 micro-batches of 4: passes 0 and 1
        for item in next(it):
            rec = item.record
            ident = int(rec["txt"]) if isinstance(rec, dict) else int(rec[0])
            if isinstance(rec, dict):
                assert rec["cls"] == b"1" and rec["__key__"].endswith(f"sample{item.index:03d}")
            ids.setdefault(item.pass_, []).append(ident)
    assert sorted(ids[0]) == list(range(12)) and sorted(ids[1]) == list(range(12))


def test_npy_shards_shared_by_every_consumer_are_read_by_random_access(tmp_path, monkeypatch):
    import numpy as np

    from distsampler.torch import _readers

    paths, at = [], 0
    for s, n in enumerate([9, 0, 6]):
        np.save(tmp_path / f"s{s}.npy", np.arange(at, at + n, dtype=np.int64).reshape(n, 1))
        paths.append(str(tmp_path / f"s{s}.npy"))
        at += n
    scanned = []
    real = _readers.READERS["npy"].scan
    monkeypatch.setattr(_readers.READERS["npy"], "scan", staticmethod(lambda path: scanned.append(path) or real(path)))
    got = {}
    for rank in range(3):  # 3 consumers, each its residue of every shard
        ds = StreamDataset(paths, num_replicas=3, rank=rank, micro_batch=1, seed=2, share="all")
        it = iter(ds)
        for _ in range(5):  # a pass is 5 records each
            (item,) = next(it).data
            assert int(item.record[0]) == [0, 9, 9][item.shard] + item.index
            got.setdefault(item.pass_, []).append(int(item.record[0]))
    assert sorted(got[0]) == list(range(15))
    assert scanned == []  # no shard was scanned front to back
