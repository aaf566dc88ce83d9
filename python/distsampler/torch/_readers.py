# distsampler.torch._readers: the one table of record formats the file datasets read (ShardedDataset, StreamDataset).
# SPDX-License-Identifier: MIT
"""Each format is one entry of ``READERS``, used by both file datasets:

- ``indexed(x, offset, file)``: record ``offset`` of a shard through its C++ index entry
  ``x`` (``distsampler._core.index_shards``: byte offsets and sizes, tar members, the
  Megatron ``.bin``); ``file`` is the shard's open ``ShardFile``, which reads byte ranges;
- ``scan(path)``: the shard's records in order, without an index (None: the format needs one);
- ``random(path)``: an object whose ``[i]`` and ``len()`` read records by random access
  without an index, or None when the format has none.

A record is what both datasets yield: JSON Lines, ``json.loads`` of a non-empty line; tar
(WebDataset layout), ``{suffix: bytes, ..., "__key__": key}`` of the consecutive members
sharing a key, named as WebDataset names them (``webdataset_name``); ``.npy``, a row along
axis 0 (a NumPy array of the file's dtype, byte order and string width included; 0-d for a
1-D file); Megatron, a sequence's tokens (uint16 widened to int32, which torch converts);
raw token files, a document's tokens, its end-of-document token included, in the file's dtype.

No file is memory-mapped: a file truncated under a memory map kills the process (SIGBUS)
on the next read of a lost page. Every read goes through a ``ShardFile``, which checks the
file's size, modification time and inode against what they were when the dataset indexed
(or first opened) it, and refuses a file that changed with an error naming it.
"""

import json
import operator
import os
import warnings

import numpy as np

from .. import _core
from .._core import ConfigError
from ._shard_file import ShardFile, file_identity

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


_STREAM_FIX = "restart the job from its last checkpoint once the file is complete again"


class _Jsonl:
    @staticmethod
    def indexed(x, offset, file):
        start, size = int(x["offsets"][offset]), int(x["sizes"][offset])
        return _json(f"ShardedDataset: shard {x['path']}", offset, bytes(file.read(start, size)),
                     f" (bytes {start}..{start + size})")

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
    def indexed(x, offset, file, who="ShardedDataset"):
        key = x["keys"][offset]
        sample = {"__key__": key}
        for suffix, member_at, member_size in x["members"][x["member_begin"][offset]:x["member_begin"][offset + 1]]:
            suffix = suffix.lower()  # the index lower-cases ASCII letters; Python lower-cases the others
            if suffix in sample:
                raise _two_suffixes(who, x["path"], key, suffix, member_at - 512)
            sample[suffix] = bytes(file.read(member_at, member_size))
        return sample

    @staticmethod
    def scan(path):
        records = _TarRecords(path)
        try:
            for i in range(len(records)):
                yield records[i]
        finally:
            records.close()

    @staticmethod
    def random(path):
        return _TarRecords(path)


class _TarRecords:
    """The samples of a tar by their C++ index (StreamDataset: no cached index). The index reads the
    archive's headers first, so a stream refuses what ShardedDataset refuses (a bad header checksum,
    a suffix twice in one sample, no end-of-archive, a member past the end), naming the file, instead
    of losing the members after the fault; the members are then read by positioned reads."""

    def __init__(self, path):
        who = "StreamDataset"
        try:
            identity = file_identity(os.stat(path))
            self.index = _core.index_shards([path], "tar", "", "off", 1)[0]
        except FileNotFoundError:
            raise ConfigError(f"{who}: shard {path} cannot be opened (No such file or directory)") from None
        except ConfigError as e:
            raise ConfigError(f"{who}: {e}") from None
        self.file = ShardFile(who, path, identity, _STREAM_FIX, keep_open=False)

    def __len__(self):
        return self.index["records"]

    def __getitem__(self, i):
        return _Tar.indexed(self.index, i, self.file, "StreamDataset")

    def close(self):
        self.file.close()


class _Npy:
    @staticmethod
    def indexed(x, offset, file):
        start, size = int(x["offsets"][offset]), int(x["sizes"][offset])
        return np.frombuffer(file.read(start, size), dtype=np.dtype(x["dtype"])).reshape(tuple(x["row_shape"]))

    @staticmethod
    def scan(path):
        rows = _NpyRows(path)
        try:
            for i in range(len(rows)):
                yield rows[i]
        finally:
            rows.close()

    @staticmethod
    def random(path):
        return _NpyRows(path)


class _Megatron:
    @staticmethod
    def indexed(x, offset, file):
        start, size = int(x["offsets"][offset]), int(x["sizes"][offset])
        if size == 0:
            return np.empty(0, dtype=np.int32 if x["dtype"] == "uint16" else np.dtype(x["dtype"]))
        tokens = np.frombuffer(file.read(start, size), dtype=np.dtype(x["dtype"]))
        # torch before 2.3 has no uint16 tensors: a DataLoader could not convert the tokens.
        return tokens.astype(np.int32) if tokens.dtype == np.uint16 else tokens

    scan = None
    random = None


class _NpyRows:
    """The rows of a ``.npy`` file by positioned reads (StreamDataset: no index; the file's identity
    when first opened is what every later read checks)."""

    def __init__(self, path):
        who, fix = "StreamDataset", _STREAM_FIX
        try:
            with open(path, "rb") as f:
                identity = file_identity(os.fstat(f.fileno()))
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                data = f.tell()
        except (OSError, ValueError, TypeError) as e:  # NumPy: TypeError for a dtype it does not know
            raise ConfigError(f"{who}: shard {path} is not a readable .npy file ({e})") from None
        if fortran or dtype.hasobject or not shape:
            raise ConfigError(f"{who}: shard {path} is not a C-order .npy array of rows (fortran_order {fortran}, "
                              f"dtype {dtype}, shape {shape}); save it with numpy.save of a C-contiguous array")
        self.row_shape, self.dtype = tuple(shape[1:]), dtype
        self.row_bytes = dtype.itemsize * int(np.prod(self.row_shape, dtype=np.int64))
        if self.row_bytes == 0 and shape[0] > 0:
            raise ConfigError(f"{who}: shard {path}: has rows of 0 bytes (shape {shape}): they hold no data, and the "
                              "file's size cannot vouch for their count (expected rows of at least one byte)")
        if data + shape[0] * self.row_bytes != identity[0]:
            raise ConfigError(f"{who}: shard {path} is {identity[0]} bytes, but its header ({data} bytes) and "
                              f"{shape[0]} rows of {self.row_bytes} bytes need {data + shape[0] * self.row_bytes}")
        self.rows, self.data = shape[0], data
        self.file = ShardFile(who, path, identity, fix, keep_open=False)

    def __len__(self):
        return self.rows

    def __getitem__(self, i):
        raw = self.file.read(self.data + i * self.row_bytes, self.row_bytes)
        return np.frombuffer(raw, dtype=self.dtype).reshape(self.row_shape)

    def close(self):
        self.file.close()


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


class _Raw:
    @staticmethod
    def indexed(x, offset, file):
        start, size = int(x["offsets"][offset]), int(x["sizes"][offset])
        return np.frombuffer(bytearray(file.read(start, size)), dtype=np.dtype(x["dtype"]).newbyteorder("<"))

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
            return self._array[i] if i < len(self._array) else None
        if self._it is None or i < self._next:
            self._it, self._next = self.reader.scan(self.path), 0
        for rec in self._it:
            self._next += 1
            if self._next - 1 == i:
                return rec
        self._it = iter(())
        return None
