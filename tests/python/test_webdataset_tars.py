# Tars written by Python's tarfile as WebDataset's writers lay them out, read as WebDataset reads them, by every reader.
# SPDX-License-Identifier: MIT
"""A sample is what WebDataset's reader makes of a tar: regular members in archive order,
named key + "." + suffix at the first dot of the base name, the suffix lower-cased,
consecutive members of one key grouped; members without a key and suffix and top-level
``__X__`` metadata skipped; names decoded from UTF-8 with surrogateescape (as tarfile does);
two members of one suffix in a sample refused. ShardedDataset (through the C++ index, which
``distsampler index`` runs), StreamDataset (through tarfile) and the index's sample count
must all agree."""

import io
import itertools
import tarfile
import time

import pytest

from distsampler import ConfigError, _core
from distsampler.torch import ShardedDataset, StreamDataset
from distsampler.torch._readers import webdataset_name

FORMATS = {"gnu": tarfile.GNU_FORMAT, "ustar": tarfile.USTAR_FORMAT}


def write_tar(path, members, fmt):
    """Members (name, bytes) with the metadata a writer sets (mode, owner, times), in tarfile's `fmt`."""
    with tarfile.open(path, "w", format=FORMATS[fmt], encoding="utf-8", errors="surrogateescape") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o444, int(time.time())
            info.uname, info.gname, info.uid, info.gid = "bigdata", "bigdata", 1000, 1000
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def sharded_samples(path):
    return list(ShardedDataset([path], "tar", num_replicas=1, rank=0, shuffle=False, tail="drop", cache=False))


def stream_samples(path):
    it = iter(StreamDataset([path], "tar", num_replicas=1, rank=0, micro_batch=1, seed=0))
    first = []
    while True:
        (item,) = next(it).data
        if item.pass_ > 0:
            return [rec for _, rec in sorted(first, key=lambda x: x[0])]
        first.append((item.index, item.record))


def index_count(path):
    return _core.index_shards([path], format="tar", cache="off")[0]["records"]


def every_reader(path):
    sharded, streamed = sharded_samples(path), stream_samples(path)
    assert sharded == streamed
    assert index_count(path) == len(sharded)
    return sharded


LONG = "shard-" + "d" * 120 + "/0001"  # a long name: a GNU long-name member, the USTAR prefix field


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_sample_is_what_webdatasets_reader_makes_of_the_tar(tmp_path, fmt):
    members = [
        ("__meta__", b"{}"),                       # top-level metadata: skipped
        ("README", b"about"),                      # no dot: skipped
        (f"{LONG}.JPG", b"jpeg"),                  # the suffix lower-cased
        (f"{LONG}.Seg.PNG", b"png"),
        (f"{LONG}.cls", b"3"),
        ("__meta__/stats.json", b"{}"),            # under a top-level __X__ directory: skipped
        ("shard-000/0002.TXT", b"two"),
        ("shard-000/.hidden", b"h"),               # key "shard-000/", suffix "hidden"
        ("shard-000/0002.json", b"{}"),
    ]
    samples = every_reader(write_tar(tmp_path / "s.tar", members, fmt))
    assert samples == [{"__key__": LONG, "jpg": b"jpeg", "seg.png": b"png", "cls": b"3"},
                       {"__key__": "shard-000/0002", "txt": b"two"},
                       {"__key__": "shard-000/", "hidden": b"h"},
                       {"__key__": "shard-000/0002", "json": b"{}"}]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_member_name_that_is_not_utf8_is_decoded_as_webdataset_decodes_it(tmp_path, fmt):
    # b"caf\xe9.txt": ShardedDataset raised a bare UnicodeDecodeError naming no file.
    path = write_tar(tmp_path / "latin1.tar", [("caf\udce9.TXT", b"x"), ("caf\udce9.cls", b"1"), ("b.txt", b"y")],
                     fmt)
    with open(path, "rb") as f:
        assert b"caf\xe9.TXT" in f.read(1024)
    assert every_reader(path) == [{"__key__": "caf\udce9", "txt": b"x", "cls": b"1"}, {"__key__": "b", "txt": b"y"}]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("second", ["0001.jpg", "0001.JPG"])
def test_two_members_of_one_suffix_in_a_sample_are_refused_by_every_reader(tmp_path, fmt, second):
    # StreamDataset kept the last of the two silently.
    path = write_tar(tmp_path / "dup.tar", [("caf\udce9/0001.jpg", b"a"), ("caf\udce9/0001.cls", b"1"),
                                            (f"caf\udce9/{second}", b"b")], fmt)
    tail = ('shard {}: sample "caf\\xe9/0001" has two members with the suffix "jpg" (the second at byte 2048): each '
            "member of a sample needs its own suffix").format(path)
    with pytest.raises(ConfigError) as e:
        ShardedDataset([path], num_replicas=1, rank=0, cache=False)
    assert str(e.value) == "ShardedDataset: " + tail
    with pytest.raises(ConfigError) as e:
        stream_samples(path)
    assert str(e.value) == "StreamDataset: " + tail
    with pytest.raises(ConfigError) as e:
        index_count(path)
    assert str(e.value) == tail


def split_by_definition(name):
    """WebDataset's split, restated: the name is key "." suffix where the suffix has no "/" and the key is
    D + K, D empty or ending in "/", K one or more characters none a dot; of the splits, the one with the longest
    D. Metadata first: a top-level name starting and ending with "__", or a first directory "__X__"."""
    first, slash, _ = name.partition("/")
    if (not slash and name[:2] == "__" and name[-2:] == "__") or (slash and len(first) >= 4 and first[:2] == "__"
                                                                   and first[-2:] == "__"):
        return None
    best = None
    for d in range(len(name)):
        if name[d] != "." or "/" in name[d + 1:]:
            continue
        key = name[:d]
        for cut in range(len(key)):  # D = key[:cut], K = key[cut:]
            if (cut == 0 or key[cut - 1] == "/") and "." not in key[cut:]:
                if best is None or cut > best[0]:
                    best = (cut, key, name[d + 1:].lower())
    return None if best is None else best[1:]


def test_the_name_split_is_webdatasets_for_every_short_name():
    for n in range(1, 7):
        for letters in itertools.product("a./_B", repeat=n):
            name = "".join(letters)
            assert webdataset_name(name) == split_by_definition(name), name


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_the_index_and_stream_split_names_alike(tmp_path, fmt):
    names = sorted({"".join(t) for n in range(1, 6) for t in itertools.product("a./_B", repeat=n)
                    if not t[0] == "/" and "//" not in "".join(t) and not "".join(t).endswith("/")
                    and ".." not in "".join(t).split("/")})
    members, expected, key, sample = [], [], None, None
    for name in names:
        split = webdataset_name(name)
        if split is not None and split[0] == key and split[1] in sample:
            continue  # a second member of that suffix in the sample: refused (the test above)
        members.append((name, name.encode()))
        if split is None:
            continue
        if split[0] != key:
            sample = {"__key__": split[0]}
            expected.append(sample)
            key = split[0]
        sample[split[1]] = name.encode()
    assert len(expected) > 50
    assert every_reader(write_tar(tmp_path / "names.tar", members, fmt)) == expected
