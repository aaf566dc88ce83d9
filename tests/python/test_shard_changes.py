# Shard files that change under a running job: every read checks the file's size, modification time and inode,
# and a changed file is refused naming it (never a SIGBUS, never other records).
# SPDX-License-Identifier: MIT
import os
import re
import shutil
import struct

import numpy as np
import pytest

from distsampler import ConfigError
from distsampler.torch import ShardedDataset, StreamDataset
from test_sharded import write_jsonl, write_megatron, write_tar

FIX = ("rebuild its index (ShardedDataset(..., rebuild=True)) and restart the job from its last checkpoint (or "
       "restore the file as it was)")


def changed(path, why):
    return re.escape(f"ShardedDataset: shard {path} changed while this job reads it ({why}): records read from it "
                     f"now would be wrong or missing, so it is not read; {FIX}")


def test_a_npy_shard_truncated_after_a_read_is_refused_not_a_sigbus(tmp_path):
    # Through a memory map this read killed the process with SIGBUS (the lost page of row 4095).
    path = str(tmp_path / "rows.npy")
    np.save(path, np.arange(4096 * 64, dtype=np.int32).reshape(4096, 64))
    size = os.path.getsize(path)
    ds = ShardedDataset([path], num_replicas=1, rank=0, cache=False)
    assert ds.read(0, 0)[1] == 1 and ds.read(0, 4095)[63] == 4096 * 64 - 1
    os.truncate(path, 4096)
    with pytest.raises(ConfigError, match="^" + changed(path, f"its size went from {size} to 4096 bytes") + "$"):
        ds.read(0, 4095)
    with pytest.raises(ConfigError, match="^" + changed(path, f"its size went from {size} to 4096 bytes") + "$"):
        ds.read(0, 1)  # a row still in the file: the file is refused as a whole


def test_a_shrunk_jsonl_shard_is_refused_not_read_as_other_records(tmp_path):
    paths, expected = write_jsonl(str(tmp_path), [6])
    ds = ShardedDataset(paths, num_replicas=1, rank=0, cache=False)
    assert ds.read(0, 0) == expected[0]
    before = os.path.getsize(paths[0])
    with open(paths[0], "rb") as f:
        lines = f.read().splitlines(keepends=True)
    with open(paths[0], "wb") as f:
        f.writelines(lines[2:])  # the first record and the empty line removed: every offset moves
    size = os.path.getsize(paths[0])
    with pytest.raises(ConfigError, match="^" + changed(paths[0], f"its size went from {before} to {size} bytes") + "$"):
        ds.read(0, 3)


def test_a_jsonl_shard_rewritten_in_place_with_the_same_size_is_refused(tmp_path):
    paths, expected = write_jsonl(str(tmp_path), [4])
    ds = ShardedDataset(paths, num_replicas=1, rank=0, cache=False)
    assert ds.read(0, 1) == expected[1]
    then = os.stat(paths[0]).st_mtime_ns
    with open(paths[0], "r+b") as f:
        f.write(b"X")  # same size, other bytes
    os.utime(paths[0], ns=(then + 10**9, then + 10**9))
    with pytest.raises(ConfigError, match="^" + changed(paths[0], "its modification time changed") + "$"):
        ds.read(0, 1)


def test_a_shard_replaced_by_another_file_of_the_same_size_and_time_is_refused(tmp_path):
    paths, expected = write_jsonl(str(tmp_path), [4])
    ds = ShardedDataset(paths, num_replicas=1, rank=0, cache=False)
    assert ds.read(0, 2) == expected[2]
    st = os.stat(paths[0])
    shutil.copyfile(paths[0], paths[0] + ".new")
    os.utime(paths[0] + ".new", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(paths[0] + ".new", paths[0])
    why = "it was replaced by another file (a new inode)"
    with pytest.raises(ConfigError, match="^" + changed(paths[0], why) + "$"):
        ds.read(0, 2)


def test_a_truncated_megatron_bin_is_refused_not_read_as_short_sequences(tmp_path):
    paths, expected = write_megatron(str(tmp_path), [8])
    ds = ShardedDataset(paths, num_replicas=1, rank=0, cache=False)
    assert np.array_equal(ds.read(0, 7), expected[7])
    bin_path = paths[0][:-4] + ".bin"
    size = os.path.getsize(bin_path)
    os.truncate(bin_path, size - 2)
    with pytest.raises(ConfigError, match="^" + changed(bin_path, f"its size went from {size} to {size - 2} bytes")):
        ds.read(0, 7)


def test_a_truncated_tar_is_refused_not_read_as_empty_members(tmp_path):
    paths, expected = write_tar(str(tmp_path), [5])
    ds = ShardedDataset(paths, num_replicas=1, rank=0, cache=False)
    assert ds.read(0, 4)["cls"] == expected[4]
    size = os.path.getsize(paths[0])
    os.truncate(paths[0], 1024)
    with pytest.raises(ConfigError, match="^" + changed(paths[0], f"its size went from {size} to 1024 bytes")):
        ds.read(0, 4)


def test_a_removed_shard_is_refused_naming_it(tmp_path):
    paths, _ = write_jsonl(str(tmp_path), [3, 3])
    ds = ShardedDataset(paths, num_replicas=1, rank=0, cache=False)
    os.remove(paths[1])
    with pytest.raises(ConfigError, match="^" + changed(paths[1], "it was removed") + "$"):
        ds.read(1, 0)


def test_a_npy_shard_truncated_under_a_stream_dataset_is_refused_not_a_sigbus(tmp_path):
    path = str(tmp_path / "rows.npy")
    np.save(path, np.arange(4096 * 64, dtype=np.int32).reshape(4096, 64))
    size = os.path.getsize(path)
    it = iter(StreamDataset([path], num_replicas=1, rank=0, micro_batch=1, seed=0))
    next(it)
    os.truncate(path, 4096)
    message = (f"StreamDataset: shard {path} changed while this job reads it (its size went from {size} to 4096 "
               "bytes): records read from it now would be wrong or missing, so it is not read; restart the job from its "
               "last checkpoint once the file is complete again")
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        for _ in range(4096):
            next(it)


def test_a_npy_of_rows_of_zero_bytes_is_refused_before_its_rows_are_counted_out(tmp_path):
    # 128 bytes claiming 70,000,000 rows took 1.8 GB (an index entry per row) before.
    path = str(tmp_path / "empty_rows.npy")
    np.save(path, np.empty((70000000, 0), dtype=np.int32))
    assert os.path.getsize(path) == 128
    message = (f"ShardedDataset: shard {path}: has rows of 0 bytes (shape (70000000, 0)): they hold no data, and the "
               "file's size cannot vouch for their count (expected rows of at least one byte)")
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        ShardedDataset([path], num_replicas=1, rank=0, cache=False)
    message = message.replace("ShardedDataset", "StreamDataset")
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        next(iter(StreamDataset([path], num_replicas=1, rank=0, micro_batch=1)))


def damaged_tars(folder):
    """Three damaged WebDataset shards, each with 4 samples of members .txt and .cls before the damage."""
    paths, expected = write_tar(folder, [4, 4, 4])
    with open(paths[0], "r+b") as f:  # the third member's header: one byte of its name changed, checksum kept
        f.seek(2 * 1024)
        f.write(b"X")
    with open(paths[1], "rb") as f:  # sample 1's .cls twice: the .txt header renamed to .cls
        data = bytearray(f.read())
    at = data.index(b"train/000005.txt")
    data[at:at + 16] = b"train/000005.cls"
    checksum = sum(data[at:at + 148]) + 8 * 32 + sum(data[at + 156:at + 512])
    data[at + 148:at + 156] = b"%06o\0 " % checksum
    with open(paths[1], "wb") as f:
        f.write(data)
    size = 4 * 2 * 1024  # every member is one header block and one data block: no end-of-archive blocks
    os.truncate(paths[2], size)
    return paths


@pytest.mark.parametrize("shard, fault", [(0, "has a bad checksum"), (1, "has two members with the suffix \"cls\""),
                                          (2, "without the end-of-archive block")])
def test_a_stream_dataset_refuses_a_damaged_tar_as_sharded_dataset_does(tmp_path, shard, fault):
    # StreamDataset read these through Python's tarfile: the members after a bad checksum vanished, the second
    # .cls replaced the first, and an archive without its end was read as complete.
    path = damaged_tars(str(tmp_path))[shard]
    with pytest.raises(ConfigError) as sharded:
        ShardedDataset([path], num_replicas=1, rank=0, cache=False)
    message = str(sharded.value).replace("ShardedDataset: ", "StreamDataset: ", 1)
    assert message.startswith(f"StreamDataset: shard {path}: ") and fault in message
    with pytest.raises(ConfigError) as streamed:
        list(next(iter(StreamDataset([path], num_replicas=1, rank=0, micro_batch=4))) for _ in range(3))
    assert str(streamed.value) == message


@pytest.mark.parametrize("fmt", ["npy", "tar"])
def test_a_stream_dataset_holds_no_file_open_per_shard_it_read(tmp_path, fmt):
    # Readers of every shard touched stay for the whole iteration: they must not each keep a descriptor.
    paths = []
    for s in range(200):
        if fmt == "npy":
            paths.append(str(tmp_path / f"rows-{s}.npy"))
            np.save(paths[-1], np.full((2, 3), s, dtype=np.int32))
    if fmt == "tar":
        paths = write_tar(str(tmp_path), [2] * 200)[0]
    fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    before = fds()
    it = iter(StreamDataset(paths, num_replicas=1, rank=0, micro_batch=10, byte_sizes=None))
    for _ in range(40):  # one pass: 400 records of 200 shards
        next(it)
    assert fds() - before < 10


@pytest.mark.parametrize("descr", ["<x4", "<i3"])
def test_a_npy_dtype_numpy_cannot_read_is_refused_naming_the_file(tmp_path, descr):
    # index accepted '<x4' and '<i3' (NumPy has neither); StreamDataset raised NumPy's bare TypeError.
    path = str(tmp_path / "odd.npy")
    header = ("{'descr': '%s', 'fortran_order': False, 'shape': (2,), }" % descr).ljust(117) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) + header.encode() + bytes(2 * int(descr[2:])))
    with pytest.raises(ConfigError) as e:
        ShardedDataset([path], num_replicas=1, rank=0, cache=False)
    assert str(e.value) == f"ShardedDataset: shard {path}: has the dtype '{descr}', which is not supported"
    with pytest.raises(ConfigError) as e:
        next(iter(StreamDataset([path], num_replicas=1, rank=0, micro_batch=1)))
    assert str(e.value).startswith(f"StreamDataset: shard {path} is not a readable .npy file (")
