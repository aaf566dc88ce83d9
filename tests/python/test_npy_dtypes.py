# Rows of .npy files written by np.save keep the file's dtype (byte order and string widths included) in both datasets.
# SPDX-License-Identifier: MIT
import numpy as np
import pytest

from distsampler import ConfigError
from distsampler.torch import ShardedDataset, StreamDataset

DTYPES = ["<i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8", "<u8", ">u8",
          "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "|b1", "|S7", "|S1", "<U5", ">U5", "<c8", ">c16"]
STRUCTURED = [("a", "<i4"), ("b", ">f8"), ("c", "|S3")]
ROWS = 6


def values(dtype, shape):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.names:
        out = np.zeros(n, dtype=dt)
        out["a"] = np.arange(n)
        out["b"] = np.arange(n) / 4
        out["c"] = [b"x" * (i % 4) for i in range(n)]  # short strings: trailing NULs a scalar would strip
    elif dt.kind == "S":
        out = np.array([b"ab" if i % 2 else b"a" for i in range(n)], dtype=dt)
    elif dt.kind == "U":
        out = np.array(["\u00e9" if i % 2 else "ab" for i in range(n)], dtype=dt)
    elif dt.kind == "b":
        out = np.array([i % 3 == 0 for i in range(n)], dtype=dt)
    elif dt.kind == "c":
        out = (np.arange(n) + 1j * np.arange(n)).astype(dt)
    else:
        out = (np.arange(n) % 100).astype(dt)
    return out.reshape(shape)


def written(tmp_path, dtype, shape):
    data = values(dtype, shape)
    path = tmp_path / "rows.npy"
    np.save(path, data)
    assert np.load(path).dtype == np.dtype(dtype)
    return str(path), data


def check_rows(records, data):
    assert len(records) == len(data)
    for i, got in enumerate(records):
        want = data[i, ...]  # an array of the file's dtype (data[i] of a 1-D array is a NumPy scalar)
        assert isinstance(got, np.ndarray)
        assert got.dtype == data.dtype, (got.dtype, data.dtype)
        assert got.shape == data.shape[1:]
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("shape", [(ROWS,), (ROWS, 3)], ids=["1-D", "2-D"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sharded_dataset_rows_keep_the_files_dtype(tmp_path, dtype, shape):
    path, data = written(tmp_path, dtype, shape)
    ds = ShardedDataset([path], num_replicas=1, rank=0, shuffle=False, tail="drop", cache=False)
    check_rows(list(ds), data)


@pytest.mark.parametrize("shape", [(ROWS,), (ROWS, 3)], ids=["1-D", "2-D"])
def test_sharded_dataset_refuses_a_structured_dtype_naming_the_file(tmp_path, shape):
    path, _ = written(tmp_path, STRUCTURED, shape)
    with pytest.raises(ConfigError) as e:
        ShardedDataset([path], num_replicas=1, rank=0, cache=False)
    assert str(e.value) == (f"ShardedDataset: shard {path}: has a structured dtype (expected a plain one such as "
                            "'<f4')")


@pytest.mark.parametrize("shape", [(ROWS,), (ROWS, 3)], ids=["1-D", "2-D"])
@pytest.mark.parametrize("share", [1, "all"])
@pytest.mark.parametrize("dtype", DTYPES + [STRUCTURED], ids=str)
def test_stream_dataset_rows_keep_the_files_dtype(tmp_path, dtype, shape, share):
    path, data = written(tmp_path, dtype, shape)
    ds = StreamDataset([path], num_replicas=1, rank=0, micro_batch=1, seed=0, share=share)
    it = iter(ds)
    items = sorted((item for _ in range(ROWS) for item in next(it).data), key=lambda item: item.index)
    check_rows([item.record for item in items], data)
