# distsampler.torch.PackedSequenceSampler (sequence packing), its dataset and collate helper, and the .idx reader.
# SPDX-License-Identifier: MIT
import operator
import os
from collections import namedtuple

import numpy as np
import torch

from .. import _core
from .._core import ConfigError
from ._common import PUBLIC_MODULE, _flag, _index, _options, _positive, _seed64, _unsigned
from ._readers import raw_options, warn_rebuilt
from ._shard_file import ShardFile, file_identity
from .batch import _StepSampler
from .tokens import _token_lengths

_MODES = ("concat", "best-fit")

MegatronIndex = namedtuple("MegatronIndex", ["sizes", "offsets", "dtype", "bin_path", "document_indices"])
MegatronIndex.__module__ = PUBLIC_MODULE
MegatronIndex.__doc__ = """A Megatron indexed dataset: ``sizes`` (uint32 tokens per sequence, the sampler's
``lengths``), ``offsets`` (int64: each sequence's first token in the .bin, in tokens), the
token ``dtype``, the ``bin_path`` and ``document_indices`` (int64, Megatron's document index:
document d is sequences ``document_indices[d]`` to ``document_indices[d + 1] - 1``; with one
sequence per document it is 0, 1, ..., S)."""

_IDX_HEADER = 34  # magic (9), version (8), dtype code (1), sequence count (8), document count (8)


def _document_indices(path, idx_path, sequences):
    """The .idx document index (the C++ index checked the file holds it), checked as Megatron writes it:
    from 0 to the sequence count, never decreasing."""
    with open(idx_path, "rb") as f:
        f.seek(_IDX_HEADER - 8)
        count = int(np.frombuffer(f.read(8), dtype="<u8")[0])
        f.seek(_IDX_HEADER + 12 * sequences)
        docs = np.frombuffer(f.read(8 * count), dtype="<i8").astype(np.int64)
    where = f"read_megatron_index: {os.fspath(path)}"
    if count == 0 or docs[0] != 0 or docs[-1] != sequences:
        first, last = (int(docs[0]), int(docs[-1])) if count else (None, None)
        raise ConfigError(f"{where}: its document index runs from {first} to {last} over {count} entries (expected "
                          f"0 to the sequence count {sequences}, as Megatron writes it)")
    steps = np.diff(docs)
    if steps.size and int(steps.min()) < 0:
        at = int(np.argmax(steps < 0))
        raise ConfigError(f"{where}: its document index decreases at entry {at + 1} ({int(docs[at])} then "
                          f"{int(docs[at + 1])}; expected sequence numbers that never decrease)")
    return docs


def read_megatron_index(path):
    """Reads a Megatron indexed dataset (its ``.idx``, ``.bin`` or prefix) through the
    files layer (``index_shards``): one entry per sequence (Megatron's unit; with one
    sequence per document, as most preprocessing writes, a document), and the document
    index (``document_indices``). ``ConfigError`` naming the file when it is truncated,
    foreign, its pointers run past the .bin or its document index is not Megatron's.
    An empty dataset has no sequences (and ``document_indices`` ``[0]``)."""
    d = _core.index_shards([os.fspath(path)], format="megatron", cache="off")[0]
    dtype = np.dtype(d["dtype"])
    sizes = d["sizes"] // dtype.itemsize
    if sizes.size and int(sizes.max()) > (1 << 32) - 1:
        raise ConfigError(f"read_megatron_index: {os.fspath(path)} has a sequence of {int(sizes.max())} tokens "
                          "(expected at most 4294967295)")
    idx_path = os.path.splitext(d["data_path"])[0] + ".idx"
    docs = _document_indices(path, idx_path, int(d["records"]))
    offsets = (d["offsets"] // dtype.itemsize).astype(np.int64)
    return MegatronIndex(sizes.astype(np.uint32), offsets, dtype, d["data_path"], docs)


def megatron_tokens(prefix):
    """``(tokens, offsets, index)`` of the Megatron dataset ``prefix``: the .bin's tokens as a
    read-only 1-D sequence of its dtype (``len()``, ``dtype``, ``shape`` and slices
    ``tokens[a:b]``, NumPy arrays read by positioned reads, never a memory map), each
    sequence's first token in it, and the index. A read of a .bin truncated, rewritten or
    replaced since raises ``ConfigError`` naming it (through a memory map it was a SIGBUS)."""
    index = read_megatron_index(prefix)
    return _BinTokens(index.bin_path, index.dtype), index.offsets, index


class _BinTokens:
    """The tokens of a Megatron .bin as ``megatron_tokens`` returns them: slices read by positioned
    reads, each checking the file's size, modification time and inode against what they were when
    it was opened. Picklable (a DataLoader worker reopens the file)."""

    _FIX = "restore the file (or call megatron_tokens again on the new one) and restart the job from its last checkpoint"

    def __init__(self, path, dtype):
        self.path, self.dtype = os.fspath(path), np.dtype(dtype)
        self._identity = file_identity(os.stat(self.path))
        self._file = None

    @property
    def size(self):
        return len(self)

    @property
    def shape(self):
        return (self._identity[0] // self.dtype.itemsize,)

    def __len__(self):
        return self.shape[0]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_file"] = None
        return state

    def __getitem__(self, key):
        n = len(self)
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step != 1:
                raise ConfigError(f"megatron_tokens: slice step {step} (expected contiguous slices tokens[a:b])")
            stop = max(start, stop)
        else:
            try:
                i = operator.index(key)
            except TypeError:
                raise ConfigError(f"megatron_tokens: index {key!r} (expected an int or a slice a:b)") from None
            if not -n <= i < n:
                raise IndexError(f"megatron_tokens: token {i} is out of range for {n} tokens")
            start = i % n
            stop = start + 1
        if self._file is None:
            self._file = ShardFile("megatron_tokens", self.path, self._identity, self._FIX)
        size = self.dtype.itemsize
        tokens = np.frombuffer(self._file.read(start * size, (stop - start) * size), dtype=self.dtype)
        return tokens if isinstance(key, slice) else tokens[0]

    def __array__(self, dtype=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype)


def megatron_documents(prefix):
    """``(tokens, offsets, lengths)`` of the Megatron dataset ``prefix`` by document: the .bin
    as ``megatron_tokens`` gives it, each document's first token (int64) and its token count
    (uint32), a document being sequences ``document_indices[d]`` to ``document_indices[d + 1] - 1``
    stored one after the other in the .bin (``ConfigError`` naming the file when they are not).
    ``PackedSequenceSampler(lengths, ...)`` with ``PackedSequenceDataset(tokens, offsets)`` then
    packs whole documents, as ``read_megatron_index(prefix).sizes`` packs sequences."""
    tokens, offsets, index = megatron_tokens(prefix)
    docs, sizes = index.document_indices, index.sizes.astype(np.int64)
    where = f"megatron_documents: {os.fspath(prefix)}"
    starts = np.zeros(sizes.size, dtype=bool)
    starts[docs[:-1][docs[:-1] < sizes.size]] = True
    broken = np.flatnonzero(~starts[1:] & (offsets[1:] != offsets[:-1] + sizes[:-1])) + 1
    if broken.size:
        i = int(broken[0])
        d = int(np.searchsorted(docs, i, side="right")) - 1
        raise ConfigError(f"{where}: sequence {i} (of document {d}) starts at token {int(offsets[i])} of the .bin, "
                          f"not where sequence {i - 1} ends ({int(offsets[i - 1] + sizes[i - 1])}): a document's "
                          "sequences must be stored one after the other to be read as one (expected the layout "
                          "Megatron's builder writes)")
    total = np.concatenate([[0], np.cumsum(sizes)])
    lengths = total[docs[1:]] - total[docs[:-1]]
    if lengths.size and int(lengths.max()) > (1 << 32) - 1:
        raise ConfigError(f"{where} has a document of {int(lengths.max())} tokens (expected at most 4294967295)")
    firsts = np.append(offsets, np.int64(tokens.size))[docs[:-1]]
    return tokens, firsts.astype(np.int64), lengths.astype(np.uint32)


def raw_documents(path, dtype, eos, *, cache_dir=None, cache=True, strict=False):
    """``(tokens, offsets, lengths)`` of the raw token file ``path`` (headerless little-endian token
    ids of ``dtype``, documents ending with the token ``eos``, as OLMo's ``.npy``-named token files
    are): the file's tokens as ``megatron_tokens`` gives a .bin's (slices of ``dtype`` read by
    positioned reads, never a memory map; empty for an empty file), each document's first token (int64) and its token count, its ``eos`` included (uint32). The
    documents are found once by the C++ index and cached as ``ShardedDataset`` caches them
    (beside the file or in ``cache_dir``; ``cache=False`` keeps it in memory; a stale cached
    index is built again with a warning, or refused with ``strict=True``).
    ``PackedSequenceSampler(lengths, ...)`` with ``PackedSequenceDataset(tokens, offsets)`` packs
    the documents. ``ConfigError`` naming the argument or the file."""
    who = "raw_documents"
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"{who}: path {path!r} is not a path (expected a str or os.PathLike)")
    name, eos = raw_options(who, "raw", dtype, eos)
    if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
        raise ConfigError(f"{who}: cache_dir {cache_dir!r} is not a path (expected None, a str or os.PathLike)")
    if not isinstance(strict, bool) or not isinstance(cache, bool):
        raise ConfigError(f"{who}: cache {cache!r} and strict {strict!r} must be bools (expected True or False)")
    if strict and not cache:
        raise ConfigError(f"{who}: strict=True with cache=False (no cached index is read; expected one of them)")
    try:
        x = _core.index_shards([os.fsdecode(os.fspath(path))], "raw",
                               os.fsdecode(os.fspath(cache_dir)) if cache_dir else "", "use" if cache else "off", 1,
                               dtype=name, eos=eos, strict=strict)[0]
    except ConfigError as e:
        raise ConfigError(f"{who}: {e}") from None
    warn_rebuilt(who, [x])
    tokens = _BinTokens(x["data_path"], np.dtype(x["dtype"]).newbyteorder("<"))  # positioned reads, no memory map
    itemsize = tokens.dtype.itemsize
    lengths = x["sizes"] // itemsize
    if lengths.size and int(lengths.max()) > (1 << 32) - 1:
        raise ConfigError(f"{who}: {os.fspath(path)} has a document of {int(lengths.max())} tokens (expected at most "
                          "4294967295: is eos right?)")
    return tokens, (x["offsets"] // itemsize).astype(np.int64), lengths.astype(np.uint32)


class PackedSequenceSampler(_StepSampler):
    """This rank's micro-batches of packed sequences, for a DataLoader's ``batch_sampler``.

    ``lengths[i]`` is the token count of document i (a NumPy array, a list, a
    ``numpy.memmap``, or ``read_megatron_index(path).sizes``); a 1-D C-contiguous uint32
    array is used in place and kept alive: do not change it afterwards. Documents of 0
    tokens are skipped and counted (``stats["skipped_documents"]``).

    The epoch's document order shuffles chunks of ``chunk`` consecutive documents and, in
    windows of ``window`` documents, the documents again. ``mode="concat"`` reads it as one
    token stream cut into sequences of exactly ``seq_len`` tokens (documents cross sequence
    boundaries; the last partial global batch is dropped: ``stats["dropped_tokens"]``);
    ``mode="best-fit"`` packs each window's documents whole into sequences of at most
    ``seq_len`` by best-fit decreasing (longer documents are split, or refused with
    ``split_long=False``), every document once per epoch (``stats["padding_efficiency"]``).
    The epoch plan keeps at most ``plan_limit`` window records (16 bytes each) whatever
    the dataset's size; above that many windows it records every k-th one, and finding a
    step walks up to k - 1 windows (``plan_bytes``, ``plan_stride``). It changes no order.

    Each micro-batch is a list of ``micro_batch_size`` sequences, each a tuple of
    ``(document, offset, length)`` pieces; an empty sequence ``()`` is a marker that only
    the last step of a best-fit epoch has, so that every rank runs the same steps (give it
    zero loss weight). ``PackedSequenceDataset`` and ``collate_packed`` turn them into
    tensors. The global batch is G = micro_batch_size x num_replicas x accumulation_steps
    (or ``global_batch_size``); step s reads sequences [s*G, (s+1)*G) of the epoch's
    sequence order. ``len(sampler)`` is this rank's micro-batch count, equal on every rank.

    ``state_dict(received=None)`` / ``load_state_dict`` as ``DistributedBatchSampler``: the
    state counts sequences of the epoch's order, so it resumes on another world size,
    micro-batch size or accumulation with every token read once (the same global batch:
    exactly the uninterrupted run's sequences). A state of another mode, seq_len or lengths
    is refused (``StateError`` naming the field).
    """

    __module__ = PUBLIC_MODULE

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        return {"sampler": "PackedSequenceSampler", "dataset_size": len(self.lengths), "order": "feistel",
                "global_batch_size": self.global_batch_size,
                "token_layout": f"{self.layout_hash:#018x}"}  # the lengths, L, mode and window options

    _who = "PackedSequenceSampler"

    def __init__(self, lengths, seq_len, micro_batch_size=1, num_replicas=None, rank=None, *, accumulation_steps=None,
                 global_batch_size=None, mode="concat", window=1 << 16, chunk=None, split_long=True, shuffle=True,
                 seed=0, plan_limit=1 << 16):
        who = self._who
        self._shape(micro_batch_size, num_replicas, rank, accumulation_steps, global_batch_size, "drop")
        self.lengths = _token_lengths(who, lengths)
        self.seq_len = _unsigned(who, "seq_len", seq_len)
        if mode not in _MODES:
            raise ConfigError(f'{who}: mode {mode!r} is unknown (expected "concat" or "best-fit")')
        self.mode = mode
        self.window = _positive(who, "window", window)
        self.chunk = min(1024, self.window) if chunk is None else _positive(who, "chunk", chunk)
        self.split_long = _flag(who, "split_long", split_long)
        self.shuffle = _flag(who, "shuffle", shuffle)
        self.seed = seed
        self.plan_limit = _unsigned(who, "plan_limit", plan_limit)
        self.order = "feistel"
        self._start()
        self.tail = "drop" if mode == "concat" else "uneven"

    def _config(self):
        return (self.rank, self.num_replicas, self.seq_len, self.micro_batch_size, self._accumulation, self._global,
                self.mode, self.window, self.chunk, self.split_long, self.shuffle, _seed64(self._who, self.seed),
                self.plan_limit)

    def _build(self, key):
        (rank, world_size, seq_len, micro_batch_size, accumulation_steps, global_batch_size, mode, window, chunk,
         split_long, shuffle, seed, plan_limit) = key
        options = _options(_core.PackOptions, seq_len=seq_len, micro_batch_size=micro_batch_size,
                           accumulation_steps=accumulation_steps, global_batch_size=global_batch_size, mode=mode,
                           window=window, chunk=chunk, split_long=split_long, shuffle=shuffle, seed=seed,
                           plan_limit=plan_limit)
        return _core.make_packed_sequence_sampler(self.lengths, rank, world_size, options)

    def _fetcher(self, core):
        return core.micro_batches

    _plans_epochs = True  # an epoch is planned once (a best-fit plan counts every window's sequences), then copied

    @property
    def stats(self):
        """The epoch's totals (the same dict on every rank): documents, tokens, sequences,
        steps, read_sequences, read_tokens, dropped_tokens, padded_tokens, empty_sequences,
        skipped_documents, split_documents, padding_efficiency."""
        return self._next_core().stats

    @property
    def num_sequences(self):
        """Sequences in the epoch's order (every rank's, the dropped tail included)."""
        return self._next_core().num_sequences

    @property
    def plan_bytes(self):
        """Bytes the epoch plan keeps: at most 16 x (plan_limit + 1), whatever the lengths' count."""
        return self._next_core().plan_bytes

    @property
    def plan_stride(self):
        """Windows per record of the epoch plan: 1 up to plan_limit windows."""
        return self._next_core().plan_stride

    @property
    def layout_hash(self):
        """The 64-bit key of the lengths, seq_len, mode and window options that states must match."""
        return (self._base if self._base is not None else self._start_core()).layout_hash

    def micro_batch(self, step, k=0):
        """This rank's micro-batch ``k`` of ``step`` in the current epoch (random access;
        ``IndexError`` outside the epoch)."""
        return self._next_core().micro_batch(_unsigned(self._who, "step", step), _unsigned(self._who, "k", k))


class PackedSequenceDataset(torch.utils.data.Dataset):
    """A map-style dataset whose keys are the sampler's sequences: ``dataset[pieces]`` is
    the sequence's tokens and document boundaries, ready for ``collate_packed``.

    ``tokens`` is a 1-D array of every document's tokens (what ``megatron_tokens`` gives for a
    Megatron ``.bin``, any NumPy array or tensor) and ``offsets[d]`` the position of document
    d's first token in it (``megatron_tokens(prefix)`` gives both). Picklable, so DataLoader
    workers can use it (a .bin is reopened, not copied).
    """

    __module__ = PUBLIC_MODULE

    def __init__(self, tokens, offsets):
        self.tokens = tokens
        self.offsets = np.asarray(offsets, dtype=np.int64)

    def __getitem__(self, pieces):
        parts = []
        for document, offset, length in pieces:
            begin = int(self.offsets[document]) + offset
            parts.append(np.asarray(self.tokens[begin:begin + length]))
        return tuple(pieces), parts


def _sequence_fields(pieces, parts, seq_len, pad_id, document_base):
    ids = np.full(seq_len, pad_id, dtype=np.int64)
    positions = np.zeros(seq_len, dtype=np.int64)
    documents = np.full(seq_len, -1, dtype=np.int64)
    total = sum(length for _, _, length in pieces)
    if total > seq_len:
        raise ConfigError(f"collate_packed: a sequence holds {total} tokens, over seq_len {seq_len} (expected the "
                          "sampler's seq_len)")
    lengths = []
    at = 0
    for i, ((_, offset, length), part) in enumerate(zip(pieces, parts)):
        if len(part) != length:
            raise ConfigError(f"collate_packed: piece {i} asks for {length} tokens but the token array has "
                              f"{len(part)} there (expected tokens and offsets that match the lengths)")
        ids[at:at + length] = part
        positions[at:at + length] = np.arange(length)
        documents[at:at + length] = document_base + i
        lengths.append(length)
        at += length
    if at < seq_len:
        positions[at:] = np.arange(seq_len - at)
        lengths.append(seq_len - at)  # the padding is a segment of its own
    return ids, positions, documents, lengths, at


def collate_packed(batch, seq_len, pad_id=0):
    """Stacks ``PackedSequenceDataset`` items (one micro-batch) into a dict of tensors:
    ``input_ids`` [M, L] (``pad_id`` after the real tokens), ``position_ids`` [M, L]
    (counting from 0 in each piece and in the padding), ``document_ids`` [M, L] (a number
    per piece within the micro-batch, -1 on padding, for a document-boundary attention
    mask), ``cu_seqlens`` (int32 boundaries of every piece and padding run in the
    flattened M x L tokens, for variable-length attention), ``max_seqlen``, ``num_tokens``
    [M] (real tokens), ``empty`` [M] (True for the sampler's empty markers) and
    ``pieces`` (the sequences' pieces, for logging and checks). Use
    ``functools.partial(collate_packed, seq_len=L)`` as the DataLoader's ``collate_fn``."""
    seq_len = _unsigned("collate_packed", "seq_len", seq_len)
    pad_id = _index("collate_packed", "pad_id", pad_id)
    if not -(1 << 63) <= pad_id < 1 << 63:
        raise ConfigError(f"collate_packed: pad_id {pad_id} is out of range (expected -2^63..2^63-1: input_ids are "
                          "int64)")
    rows = [_sequence_fields(pieces, parts, seq_len, pad_id, 0) for pieces, parts in batch]
    documents, base = [], 0
    for (pieces, _), row in zip(batch, rows):
        documents.append(np.where(row[2] >= 0, row[2] + base, -1))
        base += len(pieces)
    segments = [n for row in rows for n in row[3]]
    return {
        "input_ids": torch.from_numpy(np.stack([row[0] for row in rows])),
        "position_ids": torch.from_numpy(np.stack([row[1] for row in rows])),
        "document_ids": torch.from_numpy(np.stack(documents)),
        "cu_seqlens": torch.from_numpy(np.cumsum([0] + segments).astype(np.int32)),
        "max_seqlen": max(segments),
        "num_tokens": torch.tensor([row[4] for row in rows], dtype=torch.int64),
        "empty": torch.tensor([row[4] == 0 for row in rows], dtype=torch.bool),
        "pieces": [pieces for pieces, _ in batch],
    }
