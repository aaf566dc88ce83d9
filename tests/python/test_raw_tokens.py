# Tests of raw token files (headerless token ids, documents ending with an eos token, as OLMo's .npy-named files):
# ShardedDataset(format="raw") through DataLoader workers, raw_documents into PackedSequenceSampler, the refusals.
# SPDX-License-Identifier: MIT
import os
import re
import warnings

import numpy as np
import pytest
from torch.utils.data import DataLoader

from distsampler import ConfigError
from distsampler.torch import (PackedSequenceDataset, PackedSequenceSampler, ShardedDataset, collate_packed,
                               raw_documents)

EOS = 50279  # GPT-NeoX's end-of-text id, as OLMo's token files use it


def write_raw(folder, name, documents, dtype, tail=None):
    """The documents, each followed by EOS, then `tail` tokens without one, as NumPy's tofile writes them."""
    parts = [np.append(np.asarray(d, dtype=np.int64), EOS) for d in documents]
    if tail is not None:
        parts.append(np.asarray(tail, dtype=np.int64))
    path = os.path.join(folder, name)
    (np.concatenate(parts) if parts else np.zeros(0, np.int64)).astype(dtype).tofile(path)
    return path


def random_documents(seed, count, top):
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(count):
        d = rng.integers(0, top, size=int(rng.integers(0, 40)))
        docs.append(d[d != EOS])
    return docs


def identity(batch):
    return batch


def read_every_rank(tmp_path, dtype, workers):
    dt = np.dtype(dtype)
    top = 60000 if dt.itemsize == 2 else 100000
    docs = [random_documents(s, 50 + 7 * s, top) for s in range(3)]
    paths = [write_raw(str(tmp_path), f"part-{s}.npy", docs[s], dt, tail=[5, 6] if s == 1 else None)
             for s in range(3)]
    expected = [tuple(d.tolist()) + (EOS,) for s in range(3) for d in docs[s]] + [(5, 6)]
    seen = []
    for rank in range(2):
        ds = ShardedDataset(paths, "raw", num_replicas=2, rank=rank, seed=3, tail="uneven", dtype=dtype, eos=EOS,
                            num_workers=workers)
        assert ds.record_counts == [50, 58, 64]  # + the tail of part-1
        for batch in DataLoader(ds, batch_size=4, num_workers=workers, collate_fn=identity):
            for doc in batch:
                assert isinstance(doc, np.ndarray) and doc.dtype == dt.newbyteorder("<")
                seen.append(tuple(doc.tolist()))
    assert sorted(seen) == sorted(expected)
    # The index is cached beside each file and read back.
    assert all(os.path.exists(p + ".dsidx") for p in paths)
    again = ShardedDataset(paths, "raw", num_replicas=1, rank=0, dtype=dtype, eos=EOS)
    assert all(x["from_cache"] for x in again.indexes)


@pytest.mark.parametrize("dtype", ["uint32", np.uint16, np.dtype("<u4"), "int64"])
def test_every_document_once_over_ranks_in_the_files_dtype(tmp_path, dtype):
    read_every_rank(tmp_path, dtype, 0)


@pytest.mark.processes
def test_every_document_once_over_ranks_and_dataloader_workers(tmp_path):
    read_every_rank(tmp_path, np.uint32, 2)


def test_another_eos_is_another_index(tmp_path):
    path = write_raw(str(tmp_path), "t.npy", [[1, 2], [3, 7, 4]], np.uint32)
    assert ShardedDataset([path], "raw", num_replicas=1, rank=0, dtype="uint32", eos=EOS).record_counts == [2]
    ds = ShardedDataset([path], "raw", num_replicas=1, rank=0, dtype="uint32", eos=7, shuffle=False, tail="drop")
    assert not ds.indexes[0]["from_cache"]
    assert [d.tolist() for d in ds] == [[1, 2, EOS, 3, 7], [4, EOS]]
    empty = write_raw(str(tmp_path), "empty.npy", [], np.uint32)
    assert ShardedDataset([empty, path], "raw", num_replicas=1, rank=0, dtype="uint32", eos=7).record_counts == [0, 2]


def test_raw_documents_pack_every_token_once(tmp_path):
    docs = random_documents(11, 80, 100000)
    path = write_raw(str(tmp_path), "olmo.npy", docs, np.uint32, tail=[9, 9, 9])
    tokens, offsets, lengths = raw_documents(path, np.uint32, EOS)
    assert tokens.dtype == np.uint32 and offsets.dtype == np.int64 and lengths.dtype == np.uint32
    assert lengths.tolist() == [len(d) + 1 for d in docs] + [3]
    for d, doc in enumerate(docs):
        assert tokens[offsets[d]:offsets[d] + lengths[d]].tolist() == doc.tolist() + [EOS]
    sampler = PackedSequenceSampler(lengths, 64, 2, 1, 0, shuffle=True, seed=4, mode="best-fit")
    ds = PackedSequenceDataset(tokens, offsets)
    read = 0
    for mb in sampler:
        batch = collate_packed([ds[seq] for seq in mb], seq_len=64)
        read += int(batch["num_tokens"].sum())
    assert read == int(lengths.sum()) == os.path.getsize(path) // 4
    assert os.path.exists(path + ".dsidx")
    # A stale index is rebuilt with one warning naming the file; strict=True refuses it.
    np.array([1, 2, EOS], dtype=np.uint32).tofile(open(path, "ab"))
    with pytest.raises(ConfigError, match=re.escape(f"raw_documents: shard {path} changed after it was indexed (size "
                                                    f"{int(lengths.sum()) * 4} -> {int(lengths.sum()) * 4 + 12}): "
                                                    "rebuild the index")):
        raw_documents(path, "uint32", EOS, strict=True)
    with pytest.warns(UserWarning, match=re.escape(f"raw_documents: shard {path} changed after it was indexed")):
        _, _, more = raw_documents(path, "uint32", EOS)
    assert more.tolist() == lengths.tolist()[:-1] + [6]  # the tail and the new tokens are one document now
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert raw_documents(path, "uint32", EOS, cache=False)[2].tolist() == more.tolist()
    empty = write_raw(str(tmp_path), "empty.npy", [], np.uint16)
    tokens, offsets, lengths = raw_documents(empty, "uint16", EOS)
    assert tokens.dtype == np.uint16 and tokens.size == offsets.size == lengths.size == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(dtype="uint32"), 'ShardedDataset: format="raw" needs eos=, the end-of-document token id'),
    (dict(eos=EOS), 'ShardedDataset: format="raw" needs dtype=, the token type (uint8, uint16, uint32, uint64, int32 '
                    'or int64)'),
    (dict(dtype="float32", eos=0), "ShardedDataset: dtype 'float32' is not a token type of raw token files (expected "
                                   "uint8, uint16, uint32, uint64, int32 or int64, little-endian)"),
    (dict(dtype=">u4", eos=0), "ShardedDataset: dtype '>u4' is not a token type of raw token files"),
    (dict(dtype="bogus", eos=0), "ShardedDataset: dtype 'bogus' is not a token type of raw token files"),
    (dict(dtype="uint16", eos=65536), "ShardedDataset: eos 65536 is out of range for dtype uint16 (expected 0 to "
                                      "65535)"),
    (dict(dtype="int32", eos=-1), "ShardedDataset: eos -1 is out of range for dtype int32 (expected 0 to "
                                  "2147483647)"),
    (dict(dtype="uint32", eos=True), "ShardedDataset: eos True is a bool (expected the end-of-document token id, an "
                                     "int)"),
    (dict(dtype="uint32", eos="0"), "ShardedDataset: eos '0' is not an integer (expected the end-of-document token "
                                    "id)"),
    (dict(format="npy", dtype="uint32"), "ShardedDataset: dtype='uint32' is for format=\"raw\" only (format is 'npy'; "
                                         "expected format=\"raw\", or no dtype)"),
    (dict(format=None, eos=3), "ShardedDataset: eos=3 is for format=\"raw\" only (format is None; expected "
                               "format=\"raw\", or no eos)"),
])
def test_bad_raw_arguments_are_refused_naming_the_argument(tmp_path, kwargs, message):
    path = write_raw(str(tmp_path), "t.npy", [[1]], np.uint32)
    kwargs.setdefault("format", "raw")
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        ShardedDataset([path], num_replicas=1, rank=0, **kwargs)
    assert not os.path.exists(path + ".dsidx")  # refused before any file is read


def test_bad_raw_files_are_refused_naming_the_file(tmp_path):
    path = str(tmp_path / "t.npy")
    np.arange(5, dtype=np.uint16).tofile(path)  # 10 bytes
    with pytest.raises(ConfigError, match="^" + re.escape(
            f"ShardedDataset: shard {path}: is 10 bytes, not a multiple of 4 (the size of a uint32 token): not a raw "
            "uint32 token file (check dtype, or whether the file is truncated)") + "$"):
        ShardedDataset([path], "raw", num_replicas=1, rank=0, dtype="uint32", eos=0)
    with pytest.raises(ConfigError, match="^" + re.escape(f"raw_documents: shard {path}: is 10 bytes, not a multiple "
                                                          "of 4")):
        raw_documents(path, "uint32", 0)
    with pytest.raises(ConfigError, match=re.escape(f"ShardedDataset: shard {path}: wrong magic")):
        ShardedDataset([path], num_replicas=1, rank=0)  # headerless: never read as a .npy
    with pytest.raises(ConfigError, match=re.escape("raw_documents: eos 70000 is out of range for dtype uint16")):
        raw_documents(path, "uint16", 70000)
    with pytest.raises(ConfigError, match=re.escape("raw_documents: path 3 is not a path")):
        raw_documents(3, "uint16", 0)
    with pytest.raises(ConfigError, match=re.escape("raw_documents: strict=True with cache=False")):
        raw_documents(path, "uint16", 0, strict=True, cache=False)
