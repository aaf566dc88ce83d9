# distsampler.torch._readers: the one table of record formats the file datasets read (ShardedDataset, StreamDataset).
# SPDX-License-Identifier: MIT
"""Each format is one entry of ``READERS``, used by both file datasets:

- ``indexed(x, offset, files)``: record ``offset`` of a shard through its C++ index entry
  ``x`` (``distsampler._core.index_shards``: byte offsets and sizes, tar members, the
  Megatron ``.bin``); ``files`` keeps the shard's open file or memory map (``get(key, opener)``);
- ``scan(path)``: the shard's records in order, without an index (None: the format needs one);
- ``random(path)``: an object whose ``[i]`` and ``len()`` read records by random access
  without an index, or None when the format has none.

A record is what both datasets yield: JSON Lines, ``json.loads`` of a non-empty line; tar
(WebDataset layout), ``{suffix: bytes, ..., "__key__": key}`` of the consecutive members
sharing a key, named as WebDataset names them (``webdataset_name``); ``.npy``, a row along
axis 0 (a NumPy array of the file's dtype, byte order and string width included; 0-d for a
1-D file); Megatron, a sequence's tokens (uint16 widened to int32, which torch converts);
raw token files, a document's tokens, its end-of-document token included, in the file's dtype.
"""

import json
import operator
import os
import tarfile
import warnings

import numpy as np

from .._core import ConfigError

# File extension -> format, for both datasets (a dataset accepts the formats it can read).
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".tar": "tar", ".npy": "npy", ".idx": "megatron",
              ".bin": "megatron"}


def format_of(who, path, fmt, formats):
    """The format of `path`: `fmt` when given (one of `formats`), else from its extension."""
    if fmt is not None:
        if fmt not in formats:
            raise ConfigError(f"{who}: format {fmt!r} is unknown (expected one of {', '.join(formats)} or None)")
        return fmt
    ext = os.path.splitext(path)[1].lower()
    found = EXTENSIONS.get(ext)
    if found not in formats:
        known = ", ".join(e for e, f in EXTENSIONS.items() if f in formats)
        raise ConfigError(f"{who}: the format of {path!r} is not known from its extension {ext!r} (expected {known}, "
                          "or format=)")
    return found


def _json(path, offset, line, where=""):
    try:
        return json.loads(line)
    except ValueError as e:
        raise ConfigError(f"{path} record {offset}{where} is not JSON: {e}") from None


class _Jsonl:
    @staticmethod
    def indexed(x, offset, files):
        start, size = int(x["offsets"][offset]), int(x["sizes"][offset])
        f = files.get(x["path"], lambda: open(x["data_path"], "rb"))
        f.seek(start)
        return _json(f"ShardedDataset: shard {x['path']}", offset, f.read(size), f" (bytes {start}..{start + size})")

    @staticmethod
    def scan(path):
        with open(path, "rb") as f:
            n = 0
            for line in f:
                if line.strip():
                    yield _json(f"StreamDataset: shard {path}", n, line)
                    n += 1

    random = None


def webdataset_name(name):
    """``(key, suffix)`` of tar member `name` as WebDataset's reader splits it (and the C++ index:
    ``split_tar_name``), or None for a member it skips: the key is the name up to the first dot
    of its base name, the suffix the rest, lower-cased; skipped are top-level names that start
    and end with ``__``, names under a top-level ``__X__`` directory, base names without a dot
    and top-level base names that start with one (``d/.x`` is key ``d/``, suffix ``x``, when
    ``d`` has no dot)."""
    first = name.split("/", 1)[0]
    if ("/" not in name and name.startswith("__") and name.endswith("__")) or (
            "/" in name and len(first) >= 4 and first.startswith("__") and first.endswith("__")):
        return None
    slash = name.rfind("/")
    base = name[slash + 1:]
    if not base:
        return None
    if not base.startswith("."):
        if "." not in base:
            return None
        dot = slash + 1 + base.index(".")
        return name[:dot], name[dot + 1:].lower()
    if slash < 0 or "." in name[name.rfind("/", 0, slash) + 1:slash]:
        return None
    return name[:slash + 1], name[slash + 2:].lower()


def printable(name):
    """`name` for a message as the C++ index prints it: printable ASCII as it is, every other byte
    (of its UTF-8 form; lone surrogates back to their bytes) as \\xNN."""
    return "".join(chr(b) if 0x20 <= b < 0x7f and b != 0x5c else f"\\x{b:02x}"
                   for b in name.encode("utf-8", "surrogateescape"))


def _two_suffixes(who, path, key, suffix, header_at):
    return ConfigError(f'{who}: shard {path}: sample "{printable(key)}" has two members with the suffix '
                       f'"{printable(suffix)}" (the second at byte {header_at}): each member of a sample needs its '
                       "own suffix")


class _Tar:
    @staticmethod
    def indexed(x, offset, files):
        f = files.get(x["path"], lambda: open(x["data_path"], "rb"))
        key = x["keys"][offset]
        sample = {"__key__": key}
        for suffix, member_at, member_size in x["members"][x["member_begin"][offset]:x["member_begin"][offset + 1]]:
            suffix = suffix.lower()  # the index lower-cases ASCII letters; Python lower-cases the others
            if suffix in sample:
                raise _two_suffixes("ShardedDataset", x["path"], key, suffix, member_at - 512)
            f.seek(member_at)
            sample[suffix] = f.read(member_size)
        return sample

    @staticmethod
    def scan(path):
        with tarfile.open(path, "r|*") as tar:  # streamed: no index; names decoded as WebDataset's (surrogateescape)
            key, sample = None, {}
            for member in tar:
                if not member.isfile():
                    continue
                named = webdataset_name(member.name)
                if named is None:
                    continue
                k, ext = named
                if key is not None and k != key:
                    yield sample
                    sample = {}
                elif ext in sample:
                    raise _two_suffixes("StreamDataset", path, k, ext, member.offset_data - 512)
                key = k
                sample[ext] = tar.extractfile(member).read()
                sample["__key__"] = k
            if key is not None:
                yield sample

    random = None


def _row(rows, offset):
    """Row `offset` of an array read from a file, copied, in the file's dtype: ``rows[offset]`` of a
    1-D array is a NumPy scalar, which ``np.array`` turns into native byte order and the shortest
    string width; ``rows[offset, ...]`` is an array (0-d for a 1-D file) of the file's dtype."""
    return np.array(rows[offset, ...])


class _Npy:
    @staticmethod
    def indexed(x, offset, files):
        def opener():
            rows = x["records"]
            if rows == 0:
                return np.empty((0, *x["row_shape"]), dtype=np.dtype(x["dtype"]))
            return np.memmap(x["data_path"], dtype=np.dtype(x["dtype"]), mode="r", offset=int(x["offsets"][0]),
                             shape=(rows, *x["row_shape"]))
        return _row(files.get(x["path"], opener), offset)

    @staticmethod
    def scan(path):
        rows = np.load(path, mmap_mode="r")
        for offset in range(len(rows)):
            yield _row(rows, offset)

    @staticmethod
    def random(path):
        return np.load(path, mmap_mode="r")


class _Megatron:
    @staticmethod
    def indexed(x, offset, files):
        start, size = int(x["offsets"][offset]), int(x["sizes"][offset])
        if size == 0:
            return np.empty(0, dtype=np.int32 if x["dtype"] == "uint16" else np.dtype(x["dtype"]))
        data = files.get(x["path"], lambda: np.memmap(x["data_path"], dtype=np.uint8, mode="r"))
        tokens = data[start:start + size].view(np.dtype(x["dtype"]))
        # torch before 2.3 has no uint16 tensors: a DataLoader could not convert the tokens.
        return tokens.astype(np.int32) if tokens.dtype == np.uint16 else np.array(tokens)

    scan = None
    random = None


# The token types of raw token files (the C++ index's raw_dtypes), and the largest id each holds.
RAW_DTYPES = {"uint8": 255, "uint16": 65535, "uint32": (1 << 32) - 1, "uint64": (1 << 64) - 1,
              "int32": (1 << 31) - 1, "int64": (1 << 63) - 1}
_RAW_NAMES = "uint8, uint16, uint32, uint64, int32 or int64"


def raw_options(who, fmt, dtype, eos):
    """``(dtype name, eos)`` of a raw token file as the index takes them (``("", None)`` for the other
    formats), checked with messages naming ``format``, ``dtype`` and ``eos``: both required for
    ``format="raw"``, neither for another; ``dtype`` a little-endian (or native) integer type of
    ``RAW_DTYPES`` given as a name or a NumPy dtype; ``eos`` an int in its range."""
    if fmt != "raw":
        for name, value in (("dtype", dtype), ("eos", eos)):
            if value is not None:
                raise ConfigError(f'{who}: {name}={value!r} is for format="raw" only (format is {fmt!r}; expected '
                                  f'format="raw", or no {name})')
        return "", None
    if dtype is None:
        raise ConfigError(f'{who}: format="raw" needs dtype=, the token type ({_RAW_NAMES})')
    if eos is None:
        raise ConfigError(f'{who}: format="raw" needs eos=, the end-of-document token id')
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.name not in RAW_DTYPES or dt.byteorder == ">" or (dt.byteorder == "=" and
                                                                          np.little_endian is False):
        raise ConfigError(f"{who}: dtype {dtype!r} is not a token type of raw token files (expected {_RAW_NAMES}, "
                          "little-endian)")
    if isinstance(eos, bool):
        raise ConfigError(f"{who}: eos {eos!r} is a bool (expected the end-of-document token id, an int)")
    try:
        eos = operator.index(eos)
    except TypeError:
        raise ConfigError(f"{who}: eos {eos!r} is not an integer (expected the end-of-document token id)") from None
    if not 0 <= eos <= RAW_DTYPES[dt.name]:
        raise ConfigError(f"{who}: eos {eos} is out of range for dtype {dt.name} (expected 0 to "
                          f"{RAW_DTYPES[dt.name]})")
    return dt.name, eos


def warn_rebuilt(who, indexes):
    """One warning per index built again because its shard changed since it was cached."""
    for x in indexes:
        if x["rebuilt_stale"]:
            warnings.warn(f"{who}: {x['rebuilt_stale']}: its index was rebuilt (strict=True refuses a changed "
                          "shard instead)", stacklevel=3)


def raw_tokens(x):
    """The tokens of a raw token file indexed as `x`, a read-only ``np.memmap`` of its little-endian
    dtype (an empty array for an empty file, which cannot be mapped)."""
    dt = np.dtype(x["dtype"]).newbyteorder("<")
    if int(x["data_size"]) == 0:
        return np.empty(0, dtype=dt)
    return np.memmap(x["data_path"], dtype=dt, mode="r")


class _Raw:
    @staticmethod
    def indexed(x, offset, files):
        tokens = files.get(x["path"], lambda: raw_tokens(x))
        itemsize = tokens.dtype.itemsize
        start = int(x["offsets"][offset]) // itemsize
        return np.array(tokens[start:start + int(x["sizes"][offset]) // itemsize])

    scan = None
    random = None


READERS = {"jsonl": _Jsonl, "tar": _Tar, "npy": _Npy, "megatron": _Megatron, "raw": _Raw}


class SequentialReader:
    """Reads of one shard without an index: by random access where the format has it (only the
    records asked for), else sequentially (record i costs nothing extra when i follows the last
    one; a shard shared by stride is scanned through)."""

    def __init__(self, path, fmt):
        self.path, self.reader = path, READERS[fmt]
        self._it, self._next, self._array = None, 0, None

    def get(self, i):
        """Record i, or None past the end."""
        if self.reader.random is not None:
            if self._array is None:
                self._array = self.reader.random(self.path)
            return _row(self._array, i) if i < len(self._array) else None
        if self._it is None or i < self._next:
            self._it, self._next = self.reader.scan(self.path), 0
        for rec in self._it:
            self._next += 1
            if self._next - 1 == i:
                return rec
        self._it = iter(())
        return None
