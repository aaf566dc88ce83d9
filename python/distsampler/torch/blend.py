# distsampler.torch.BlendSampler: sources packed on their own and blended by weight as whole sequences, from a config.
# SPDX-License-Identifier: MIT
import json
import math
import os

import numpy as np
import torch

from .. import _core
from .._core import ConfigError
from ._common import PUBLIC_MODULE, _flag, _options, _seed64, _unsigned
from .batch import _StepSampler
from .packing import PackedSequenceDataset, collate_packed, megatron_tokens, read_megatron_index
from .tokens import _token_lengths

_WHO = "BlendSampler"
_KEYS = ("seq_len", "mode", "mix", "seed", "labels", "micro_batch_size", "accumulation_steps", "global_batch_size",
         "global_batch_schedule", "sources", "weight_schedule", "end", "shuffle", "window", "chunk", "split_long",
         "mixing_block")
_SOURCE_KEYS = ("name", "lengths", "weight")


def _fail(what):
    raise ConfigError(f"{_WHO}: {what}")


def _int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(f"{name} is {value!r} (expected an integer >= 0)")
    return _unsigned(_WHO, name, value)


def _weight(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        _fail(f"{name} is {value!r} (expected a finite number >= 0)")
    return float(value)


def _read_counts(name, path):
    """A file of one token count per line (blank lines are not allowed)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        _fail(f"{name} {path!r} cannot be read ({e.strerror}; expected a file of one token count per line or a "
              "Megatron .idx)")
    counts = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not text.isdigit() or int(text) > (1 << 32) - 1:
            _fail(f"{name} {path!r} line {i + 1} is {line!r} (expected one token count 0..4294967295 per line)")
        counts.append(int(text))
    return np.asarray(counts, dtype=np.uint32)


def _lengths(name, value, base):
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if not os.path.isabs(path) and base is not None:
            path = os.path.join(base, path)
        if path.endswith((".idx", ".bin")):
            return read_megatron_index(path).sizes
        return _read_counts(name, path)
    if isinstance(value, (list, tuple, np.ndarray)):
        return _token_lengths(f"{_WHO}: {name}", value)
    _fail(f"{name} is {value!r} (expected a list of token counts, a file of one count per line or a Megatron .idx)")


def read_blend_config(config):
    """The config as a dict with every field checked (``ConfigError`` naming the field), each
    source's ``lengths`` a uint32 array; ``config`` is a dict or the path of a JSON file
    (relative ``lengths`` paths are then read beside it)."""
    base = None
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                config = json.load(f)
        except OSError as e:
            _fail(f"config {path!r} cannot be read ({e.strerror}; expected a JSON file)")
        except ValueError as e:
            _fail(f"config {path!r} is not JSON ({e}; expected a JSON object)")
        base = os.path.dirname(os.path.abspath(path))
    if not isinstance(config, dict):
        _fail(f"config is {type(config).__name__} (expected a JSON object or a dict)")
    for key in config:
        if key not in _KEYS:
            _fail(f"config key {key!r} is unknown (expected one of {', '.join(_KEYS)})")
    for key in ("seq_len", "micro_batch_size", "sources", "end"):
        if key not in config:
            _fail(f"config has no {key!r} (expected seq_len, micro_batch_size, sources and end)")
    out = {"seq_len": _int("seq_len", config["seq_len"]), "micro_batch_size": _int("micro_batch_size",
                                                                                   config["micro_batch_size"])}
    out["mode"] = config.get("mode", "concat")
    if out["mode"] not in ("concat", "best-fit"):
        _fail(f'mode {out["mode"]!r} is unknown (expected "concat" or "best-fit")')
    mix = config.get("mix", "sequences")
    if mix != "sequences":
        _fail(f'mix {mix!r} is not supported (expected "sequences"; "documents" is not implemented yet)')
    if config.get("labels", False) is not False:
        _fail(f"labels {config['labels']!r} is not supported (expected false; labels are not implemented yet)")
    out["seed"] = _seed64(_WHO, config.get("seed", 0))
    out["shuffle"] = _flag(_WHO, "shuffle", config.get("shuffle", True))
    out["split_long"] = _flag(_WHO, "split_long", config.get("split_long", True))
    out["window"] = _int("window", config.get("window", 1 << 16))
    out["chunk"] = _int("chunk", config.get("chunk", min(1024, out["window"])))
    out["mixing_block"] = _int("mixing_block", config.get("mixing_block", 0))
    if "accumulation_steps" in config and ("global_batch_size" in config or "global_batch_schedule" in config):
        _fail("accumulation_steps and global_batch_size (or global_batch_schedule) were both given (expected one)")
    out["accumulation_steps"] = _int("accumulation_steps", config.get("accumulation_steps", 1))
    out["global_batch_size"] = _int("global_batch_size", config["global_batch_size"]) \
        if "global_batch_size" in config else None
    schedule = config.get("global_batch_schedule")
    if schedule is not None:
        if out["global_batch_size"] is not None:
            _fail("global_batch_size and global_batch_schedule were both given (expected one)")
        if (not isinstance(schedule, list) or len(schedule) != 1 or not isinstance(schedule[0], list)
                or len(schedule[0]) != 2 or schedule[0][0] != 0):
            _fail(f"global_batch_schedule {schedule!r} is not supported (expected one entry [0, G]; batch-size "
                  "changes are not implemented yet)")
        out["global_batch_size"] = _int("global_batch_schedule[0] size", schedule[0][1])
    sources = config["sources"]
    if not isinstance(sources, list) or not sources:
        _fail(f"sources is {sources!r} (expected a non-empty list of {{name, lengths, weight}} objects)")
    names, lengths, weights = [], [], []
    for i, s in enumerate(sources):
        if not isinstance(s, dict):
            _fail(f"sources[{i}] is {s!r} (expected an object with name, lengths and weight)")
        for key in s:
            if key not in _SOURCE_KEYS:
                _fail(f"sources[{i}] key {key!r} is unknown (expected name, lengths and weight)")
        for key in _SOURCE_KEYS:
            if key not in s:
                _fail(f"sources[{i}] has no {key!r} (expected name, lengths and weight)")
        name = s["name"]
        if not isinstance(name, str) or not name or "/" in name or any(c.isspace() for c in name):
            _fail(f"sources[{i}] name {name!r} is not a name (expected a non-empty string without '/' or spaces)")
        if name in names:
            _fail(f"sources[{i}] name {name!r} is also sources[{names.index(name)}]'s (expected unique names)")
        names.append(name)
        lengths.append(_lengths(f"sources[{i}] lengths", s["lengths"], base))
        weights.append(_weight(f"sources[{i}] weight", s["weight"]))
    changes = []
    for j, entry in enumerate(config.get("weight_schedule", [])):
        if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[1], dict):
            _fail(f"weight_schedule[{j}] is {entry!r} (expected [step, {{name: weight, ...}}])")
        step, table = entry
        for name in table:
            if name not in names:
                _fail(f"weight_schedule[{j}] names source {name!r}, which is not a source (expected one of "
                      f"{', '.join(names)})")
        for name in names:
            if name not in table:
                _fail(f"weight_schedule[{j}] has no weight for source {name!r} (expected one per source)")
        changes.append((_int(f"weight_schedule[{j}] step", step),
                        [_weight(f"weight_schedule[{j}] weight of {n!r}", table[n]) for n in names]))
    end = config["end"]
    if not isinstance(end, dict) or list(end) != ["steps"]:
        _fail(f"end is {end!r} (expected {{\"steps\": n}})")
    out.update(names=names, lengths=lengths, weights=weights, schedule=changes,
               end_steps=_int("end steps", end["steps"]))
    return out


class BlendSampler(_StepSampler):
    """This rank's micro-batches of a blend of packed sources, for a DataLoader's ``batch_sampler``.

    ``config`` is a dict or the path of a JSON file (docs/BLENDING.md)::

        {"seq_len": 2048, "mode": "concat", "mix": "sequences", "seed": 42,
         "micro_batch_size": 4, "accumulation_steps": 8,
         "sources": [{"name": "web", "lengths": "web.idx", "weight": 0.7},
                     {"name": "code", "lengths": [812, 77, 4096], "weight": 0.3}],
         "weight_schedule": [[5000, {"web": 0.5, "code": 0.5}]],
         "end": {"steps": 10000}}

    ``lengths`` is a list of token counts, a file of one count per line, or a Megatron
    ``.idx`` (read by ``read_megatron_index``). Each source is packed on its own into
    sequences of ``seq_len`` tokens (``mode`` concat or best-fit, as
    ``PackedSequenceSampler``), pass after pass; the blend takes whole sequences from the
    sources by weight: every global batch holds floor(G w_i) or ceil(G w_i) sequences of
    source i. Yields ``len(self)`` micro-batches, each a list of ``micro_batch_size``
    sequences, each a list of ``(source_name, document, offset, length)`` pieces.

    ``state_dict(received=None)`` / ``load_state_dict`` as ``DistributedBatchSampler``; the
    state resumes on another world size, micro-batch size or accumulation with the same
    global batch (the blend's mixing block), each source's pass read exactly once. Not yet:
    ``mix: "documents"``, ``labels: true``, a global-batch schedule with changes, sources
    added or removed at a resume (``ConfigError`` naming the field).
    """

    __module__ = PUBLIC_MODULE
    _who = _WHO
    _plans_epochs = True  # a core plans each source's first pass once, then is copied

    def _guard_description(self):
        """What ``guard`` compares across ranks besides seed, shuffle, tail, epoch and world."""
        return {"sampler": "BlendSampler", "dataset_size": self._next_core().dataset_size, "order": "feistel",
                "global_batch_size": self.global_batch_size, "token_layout": f"{self._next_core().layout_hash:#018x}"}

    def __init__(self, config, num_replicas=None, rank=None):
        c = read_blend_config(config)
        self.config = c
        accumulation = None if c["global_batch_size"] is not None else c["accumulation_steps"]
        self._shape(c["micro_batch_size"], num_replicas, rank, accumulation, c["global_batch_size"], "drop")
        self.source_names = list(c["names"])
        self.seed = c["seed"]
        self.shuffle = c["shuffle"]
        self._start()

    def _has_padding(self):
        """No padding flags: a blend reads every position once (a short last step holds fewer sequences)."""
        return False

    def _config(self):
        return (self.rank, self.num_replicas, self.micro_batch_size, self._accumulation, self._global)

    def _build(self, key):
        rank, world_size, micro_batch_size, accumulation_steps, global_batch_size = key
        c = self.config
        options = _options(_core.BlendOptions, seq_len=c["seq_len"], mode=c["mode"], window=c["window"],
                           chunk=c["chunk"], split_long=c["split_long"], shuffle=c["shuffle"], seed=c["seed"],
                           micro_batch_size=micro_batch_size, accumulation_steps=accumulation_steps,
                           global_batch_size=global_batch_size, schedule=c["schedule"], end_steps=c["end_steps"],
                           mixing_block=c["mixing_block"])
        return _core.make_blend_sampler(c["lengths"], rank, world_size, options, weights=c["weights"])

    def _fetcher(self, core):
        names = self.source_names

        def fetch(first, count):
            return [[[(names[s], d, o, n) for s, d, o, n in seq] for seq in batch]
                    for batch in core.micro_batches(first, count)]
        return fetch


class BlendDataset(torch.utils.data.Dataset):
    """A map-style dataset whose keys are a ``BlendSampler``'s sequences: ``dataset[pieces]``
    is the sequence's pieces and their tokens, ready for ``collate_blend``.

    ``sources`` maps each source name to ``(tokens, offsets)``: a 1-D array of every
    document's tokens (an ``np.memmap`` of a Megatron ``.bin``, any NumPy array or tensor)
    and each document's first token in it, as ``PackedSequenceDataset`` takes them;
    ``BlendDataset.from_megatron({name: prefix})`` reads them with ``megatron_tokens``.
    Picklable, so DataLoader workers can use it.
    """

    __module__ = PUBLIC_MODULE

    def __init__(self, sources):
        if not isinstance(sources, dict) or not sources:
            _fail(f"BlendDataset sources is {sources!r} (expected a dict of name: (tokens, offsets))")
        self.sources = {name: PackedSequenceDataset(*pair) for name, pair in sources.items()}

    @classmethod
    def from_megatron(cls, prefixes):
        """The dataset of Megatron indexed datasets, ``{name: prefix}`` (each ``.bin`` memory-mapped)."""
        return cls({name: megatron_tokens(prefix)[:2] for name, prefix in prefixes.items()})

    def __getitem__(self, pieces):
        parts = []
        for source, document, offset, length in pieces:
            if source not in self.sources:
                _fail(f"BlendDataset has no source {source!r} (expected one of {', '.join(self.sources)})")
            parts.extend(self.sources[source][[(document, offset, length)]][1])
        return tuple(pieces), parts


def collate_blend(batch, seq_len, pad_id=0):
    """Stacks ``BlendDataset`` items (one micro-batch) as ``collate_packed`` does (``input_ids``,
    ``position_ids``, ``document_ids``, ``cu_seqlens``, ``max_seqlen``, ``num_tokens``, ``empty``),
    with ``pieces`` as ``(source, document, offset, length)`` and ``sources`` [M], each sequence's
    source name. Use ``functools.partial(collate_blend, seq_len=L)`` as the DataLoader's ``collate_fn``."""
    out = collate_packed([(tuple((d, o, n) for _, d, o, n in pieces), parts) for pieces, parts in batch], seq_len,
                         pad_id)
    out["pieces"] = [pieces for pieces, _ in batch]
    out["sources"] = [pieces[0][0] if pieces else None for pieces, _ in batch]
    return out
