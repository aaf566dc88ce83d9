# Tests of distsampler.torch.ShardedDataset over real JSON Lines, tar, Megatron and .npy files read by DataLoader workers.
# SPDX-License-Identifier: MIT
import collections
import io
import json
import os
import re
import struct
import tarfile
import warnings

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from distsampler import ConfigError
from distsampler.torch import ShardedDataset, ShardedItem

WORLD = 4


def write_jsonl(folder, counts):
    """Shards of {"id": k} records; with an empty line, a CRLF line and a last line without its newline."""
    paths, k = [], 0
    for s, n in enumerate(counts):
        lines = []
        for i in range(n):
            lines.append(json.dumps({"id": k, "text": "x" * (k % 7)}) + ("\r\n" if i == 1 else "\n"))
            if i == 0:
                lines.append("\n")
            k += 1
        path = os.path.join(folder, f"part-{s}.jsonl")
        with open(path, "w", newline="") as f:
            f.write("".join(lines).rstrip("\n"))
        paths.append(path)
    return paths, {i: {"id": i, "text": "x" * (i % 7)} for i in range(k)}


def write_tar(folder, counts):
    """WebDataset shards: sample k has members <key>.txt (its id) and <key>.cls."""
    paths, k = [], 0
    for s, n in enumerate(counts):
        path = os.path.join(folder, f"shard-{s:02d}.tar")
        with tarfile.open(path, "w") as t:
            for _ in range(n):
                for suffix, data in (("txt", str(k).encode()), ("cls", bytes([k % 5]) * 3)):
                    info = tarfile.TarInfo(f"train/{k:06d}.{suffix}")
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
                k += 1
        paths.append(path)
    return paths, {i: bytes([i % 5]) * 3 for i in range(k)}


def write_megatron(folder, counts):
    """Megatron datasets in the documented layout: uint16 tokens, sequence k = [k, k+1, ...] of k % 4 + 1 tokens."""
    paths, k = [], 0
    for s, n in enumerate(counts):
        prefix = os.path.join(folder, f"tokens-{s}")
        sizes, pointers, data = [], [], b""
        for _ in range(n):
            tokens = np.arange(k, k + k % 4 + 1, dtype=np.uint16)
            sizes.append(len(tokens))
            pointers.append(len(data))
            data += tokens.tobytes()
            k += 1
        documents = list(range(n + 1))
        with open(prefix + ".bin", "wb") as f:
            f.write(data)
        with open(prefix + ".idx", "wb") as f:
            f.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, n, len(documents)))
            f.write(struct.pack(f"<{n}i", *sizes) + struct.pack(f"<{n}q", *pointers))
            f.write(struct.pack(f"<{len(documents)}q", *documents))
        paths.append(prefix + ".idx")
    return paths, {i: np.arange(i, i + i % 4 + 1, dtype=np.uint16) for i in range(k)}


def write_npy(folder, counts):
    """Arrays of rows [k, k/2, -k] (float32)."""
    paths, k = [], 0
    for s, n in enumerate(counts):
        rows = np.array([[i, i / 2, -i] for i in range(k, k + n)], dtype=np.float32).reshape(n, 3)
        path = os.path.join(folder, f"rows-{s}.npy")
        np.save(path, rows)
        paths.append(path)
        k += n
    return paths, {i: np.array([i, i / 2, -i], dtype=np.float32) for i in range(k)}


WRITERS = {"jsonl": write_jsonl, "tar": write_tar, "megatron": write_megatron, "npy": write_npy}


def record_id(fmt, record):
    if fmt == "jsonl":
        return int(record["id"])
    if fmt == "tar":
        return int(record["txt"])
    return int(torch.as_tensor(record)[0].item())


def check_record(fmt, record, expected):
    if fmt == "jsonl":
        assert record == expected
    elif fmt == "tar":
        assert record["cls"] == expected and record["__key__"] == f"train/{int(record['txt']):06d}"
        assert sorted(record) == ["__key__", "cls", "txt"]
    else:
        got = torch.as_tensor(record).numpy()
        assert np.array_equal(got, expected) and got.dtype == (np.int32 if fmt == "megatron" else np.float32)


@pytest.mark.processes
@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_record_is_read_exactly_once_per_epoch_over_ranks_and_workers(tmp_path, fmt):
    paths, expected = WRITERS[fmt](str(tmp_path), [7, 1, 9, 6])
    total = len(expected)
    orders = []
    for epoch in (0, 1):
        seen, per_rank, order = collections.Counter(), [], []
        for rank in range(WORLD):
            ds = ShardedDataset(paths, num_replicas=WORLD, rank=rank, seed=11, cache_dir=str(tmp_path / "cache"),
                                num_workers=2)
            assert ds.record_counts == [7, 1, 9, 6]
            ds.set_epoch(epoch)
            items = list(DataLoader(ds, batch_size=None, num_workers=2))
            assert len(items) == len(ds)
            per_rank.append(len(items))
            for item in items:
                assert isinstance(item, ShardedItem)
                k = record_id(fmt, item.record)
                check_record(fmt, item.record, expected[k])
                order.append(k)
                if not item.is_padding:
                    seen[k] += 1
        assert sorted(seen) == list(range(total)), "a record was missed"
        assert set(seen.values()) == {1}, "a record was read twice"
        assert len(set(per_rank)) == 1 and per_rank[0] * WORLD >= total
        orders.append(order)
    assert orders[0] != orders[1]
    assert sorted(orders[0]) != orders[0]  # shuffled


def test_drop_and_uneven_yield_plain_records_and_padding_can_be_asked_for(tmp_path):
    paths, expected = write_jsonl(str(tmp_path), [5, 4])
    got = []
    for rank in range(3):
        ds = ShardedDataset(paths, num_replicas=3, rank=rank, tail="uneven", cache=False)
        got += list(ds)
    assert sorted(r["id"] for r in got) == sorted(expected)
    flagged = list(ShardedDataset(paths, num_replicas=3, rank=0, tail="drop", return_padding=True, cache=False))
    assert flagged and all(isinstance(x, ShardedItem) and not x.is_padding for x in flagged)
    assert not os.path.exists(paths[0] + ".dsidx")


def test_open_files_stay_within_max_open_files(tmp_path):
    paths, expected = write_npy(str(tmp_path), [3, 3, 3, 3])
    ds = ShardedDataset(paths, num_replicas=1, rank=0, shuffle=True, max_open_files=2, tail="drop")
    seen = []
    for record in ds:
        assert len(ds._files.open) <= 2
        seen.append(int(record[0]))
    assert sorted(seen) == sorted(expected)


def test_a_state_dict_resumes_the_epoch_with_the_unread_records(tmp_path):
    paths, expected = write_jsonl(str(tmp_path), [10, 3, 8])
    first = collections.Counter()
    datasets = [ShardedDataset(paths, num_replicas=2, rank=r, seed=5, tail="drop") for r in range(2)]
    for ds in datasets:
        loader = iter(DataLoader(ds, batch_size=2, num_workers=0))
        for _ in range(3):
            first.update(int(i) for i in next(loader)["id"])
    state = datasets[0].state_dict(3, 2, 0)
    rest = collections.Counter()
    for r in range(2):
        ds = ShardedDataset(paths, num_replicas=2, rank=r, seed=5, tail="drop")
        ds.load_state_dict(state)
        rest.update(int(i) for b in DataLoader(ds, batch_size=2, num_workers=0) for i in b["id"])
    both = first + rest
    assert sum(first.values()) == 12 and set(both.values()) == {1}
    assert len(both) == 2 * (len(expected) // 2)  # drop: at most one record per rank left out


def test_a_changed_shard_is_reindexed_with_one_warning_or_refused_when_strict(tmp_path):
    paths, _ = write_jsonl(str(tmp_path), [4, 4])
    assert ShardedDataset(paths, num_replicas=1, rank=0).record_counts == [4, 4]
    before = os.path.getsize(paths[1])
    with open(paths[1], "a") as f:
        f.write('\n{"id": 99}\n')
    after = os.path.getsize(paths[1])
    message = (f"ShardedDataset: shard {paths[1]} changed after it was indexed (size {before} -> {after}): "
               "rebuild the index (rebuild=True rebuilds it)")
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        ShardedDataset(paths, num_replicas=1, rank=0, strict=True)
    with pytest.warns(UserWarning) as caught:
        ds = ShardedDataset(paths, num_replicas=1, rank=0, shuffle=False, tail="drop")
    assert [str(w.message) for w in caught] == [
        f"ShardedDataset: shard {paths[1]} changed after it was indexed (size {before} -> {after}): its index was "
        "rebuilt (strict=True refuses a changed shard instead)"]
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert ds.record_counts == [4, 5]
    assert {"id": 99} in list(ds)
    # Saved: the next dataset reads it, strict or not, without a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ShardedDataset(paths, num_replicas=1, rank=0, strict=True).record_counts == [4, 5]
        assert ShardedDataset(paths, num_replicas=1, rank=0).record_counts == [4, 5]
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    assert ShardedDataset(paths, num_replicas=1, rank=0, rebuild=True).record_counts == [4, 5]
    for bad, text in ((dict(strict=1), "strict 1 is not a bool (expected True or False)"),
                      (dict(strict=True, rebuild=True), "strict=True with rebuild=True"),
                      (dict(strict=True, cache=False), "strict=True with cache=False")):
        with pytest.raises(ConfigError, match=re.escape(f"ShardedDataset: {text}")):
            ShardedDataset(paths, num_replicas=1, rank=0, **bad)


def test_malformed_files_are_refused_naming_the_file(tmp_path):
    bad = tmp_path / "bad.npy"
    np.save(bad, np.asfortranarray(np.ones((3, 2))))
    with pytest.raises(ConfigError, match=re.escape(f"ShardedDataset: shard {bad}: is in Fortran order")):
        ShardedDataset([str(bad)], num_replicas=1, rank=0)
    missing = str(tmp_path / "missing.tar")
    with pytest.raises(ConfigError, match=re.escape(f"ShardedDataset: shard {missing}: cannot open (No such file")):
        ShardedDataset([missing], num_replicas=1, rank=0)
    text = tmp_path / "notes.txt"
    text.write_text("1\n")
    with pytest.raises(ConfigError, match=re.escape(f'shard {text}: cannot tell the format from the extension ".txt"')):
        ShardedDataset([str(text)], num_replicas=1, rank=0)
    assert ShardedDataset([str(text)], "jsonl", num_replicas=1, rank=0).record_counts == [1]
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"a": 1}\nnot json\n')
    items = iter(ShardedDataset([str(broken)], num_replicas=1, rank=0, shuffle=False, tail="drop"))
    assert next(items) == {"a": 1}
    with pytest.raises(ConfigError, match=re.escape(f"ShardedDataset: shard {broken} record 1 (bytes 9..17) is not JSON")):
        next(items)


@pytest.mark.parametrize("kwargs, message", [
    (dict(paths="a.jsonl"), "ShardedDataset: paths 'a.jsonl' is one path (expected a list of shard paths; wrap a "
                            "single path in a list)"),
    (dict(paths=[]), "ShardedDataset: paths is empty (expected at least one shard file)"),
    (dict(paths=["a.jsonl", 3]), "ShardedDataset: paths[1] 3 is not a path (expected a str or os.PathLike)"),
    (dict(format="csv"), "ShardedDataset: format 'csv' is unknown (expected None, \"jsonl\", \"tar\", \"megatron\", "
                         "\"npy\" or \"raw\")"),
    (dict(decode=3), "ShardedDataset: decode 3 is not callable (expected a function of one record, or None)"),
    (dict(return_padding=False), "ShardedDataset: return_padding=False with tail=\"pad\" would repeat records "
                                 "silently"),
    (dict(return_padding="yes"), "ShardedDataset: return_padding 'yes' is not a bool (expected None, True or False)"),
    (dict(threads=0), "ShardedDataset: threads 0 is out of range (expected at least 1)"),
    (dict(threads="2"), "ShardedDataset: threads '2' is not an integer (expected an int >= 1)"),
    (dict(max_open_files=0), "ShardedDataset: max_open_files 0 is out of range (expected at least 1)"),
    (dict(num_workers=-1), "ShardedDataset: num_workers -1 is out of range (expected at least 1)"),
    (dict(cache_dir=""), "ShardedDataset: cache_dir is empty (expected None for beside each shard, or a folder)"),
    (dict(cache_dir=5), "ShardedDataset: cache_dir 5 is not a path (expected None, a str or os.PathLike)"),
    (dict(tail="all"), "ShardedDataset: tail 'all' is unknown (expected \"pad\", \"drop\" or \"uneven\")"),
    (dict(rank=4), "rank 4 is out of range for"),
    (dict(num_replicas=None, rank=None), "ShardedDataset: num_replicas and rank not given"),
])
def test_bad_arguments_are_refused_naming_the_argument(tmp_path, monkeypatch, kwargs, message):
    for name in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                 "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    paths, _ = write_jsonl(str(tmp_path), [2])
    args = dict(paths=paths, num_replicas=WORLD, rank=0)
    args.update(kwargs)
    with pytest.raises(ConfigError, match=re.escape(message)):
        ShardedDataset(**args)
    assert not os.path.exists(paths[0] + ".dsidx"), "an argument was refused after the files were indexed"


def test_the_dataset_pickles_under_the_package_path_and_describes_its_stream_to_guard(tmp_path):
    import pickle

    from distsampler.torch.guard import _describe

    paths, expected = write_jsonl(str(tmp_path), [3, 2])
    ds = ShardedDataset(paths, num_replicas=2, rank=1, seed=9)
    data = pickle.dumps(ds, protocol=4)
    assert b"distsampler.torch\x94" in data and b"distsampler.torch.sharded" not in data
    copy = pickle.loads(data)
    assert [item.record["id"] for item in copy] == [item.record["id"] for item in ds]
    d = _describe(ds)
    assert (d["sampler"], d["dataset_size"], d["seed"], d["tail"], d["rank"]) == ("ShardStream", len(expected), 9,
                                                                                    "pad", 1)
