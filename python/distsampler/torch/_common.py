# distsampler.torch internals: world, argument and state checks, and the chunked iteration every family shares.
# SPDX-License-Identifier: MIT
import operator
from collections.abc import Mapping

import torch
import torch.distributed as dist

from .. import _core
from .._core import ConfigError, StateError

# The path every public class names, so pickles name distsampler.torch.X whichever module defines X.
PUBLIC_MODULE = "distsampler.torch"

_U64 = 1 << 64
_FIRST_CHUNK = 64
_CHUNK = 4096
_TAILS = ("pad", "drop", "uneven")
_ORDERS = ("feistel", "torch")
_GENERATIONS = ("v1", "v2.7")
_STATE_FORMAT = 1


def default_torch_generation(version=None):
    """The generation of torch's large-n ``randperm`` the installed torch uses.

    ``"v1"`` for torch before 2.7 (one 32-bit draw per swap), ``"v2.7"`` from 2.7 on.
    The generations differ only for datasets of 214748364 samples or more.
    """
    text = torch.__version__ if version is None else version
    parts = []
    for piece in str(text).split(".")[:2]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits) if digits else 0)
    while len(parts) < 2:
        parts.append(0)
    return "v1" if tuple(parts) < (2, 7) else "v2.7"


default_torch_generation.__module__ = PUBLIC_MODULE


def _options(cls, **fields):
    """A ``_core`` options object (``_core.SamplerOptions`` ...) with `fields` set by name: what a family's
    ``_build`` hands its ``_core.make_*`` factory beside the data and the world."""
    options = cls()
    for name, value in fields.items():
        setattr(options, name, value)
    return options


def _is_bool(value):
    """True for Python's and NumPy's bools, which operator.index would take as 0 or 1."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def _flag(who, name, value):
    """A bool argument: Python's or NumPy's bool. Anything else is refused by name (ConfigError): ``bool()``
    would take the strings "False" and "no" as True, and an int is a slip for another argument."""
    if _is_bool(value):
        return bool(value)
    raise ConfigError(f"{who}: {name} {value!r} is not a bool (expected True or False)")


def _index(who, name, value):
    if _is_bool(value):
        raise ConfigError(f"{who}: {name} {value!r} is a bool (expected an int)")
    try:
        return operator.index(value)
    except TypeError:
        raise ConfigError(f"{who}: {name} {value!r} is not an integer (expected an int)") from None


def _positive(who, name, value):
    """An int in 1..2^64-1, refused by name (ConfigError) otherwise."""
    v = _unsigned(who, name, value)
    if v == 0:
        raise ConfigError(f"{who}: {name} is 0 (expected at least 1)")
    return v


def _sequence(who, name, value, expected):
    """list(value), ConfigError naming `name` when it is not iterable (a str counts as not a sequence)."""
    if isinstance(value, (str, bytes)) or value is None:
        raise ConfigError(f"{who}: {name} {value!r} is not a sequence (expected {expected})")
    try:
        return list(value)
    except TypeError:
        raise ConfigError(f"{who}: {name} {value!r} is not a sequence (expected {expected})") from None


def _product(who, *factors):
    """The product of (name, value) factors, ConfigError naming each when it overflows 64 bits."""
    p = 1
    for _, v in factors:
        p *= v
    if p >= _U64:
        named = " x ".join(f"{n} {v}" for n, v in factors)
        raise ConfigError(f"{who}: {named} overflows 64 bits (expected a product of at most {_U64 - 1})")
    return p


def _unsigned(who, name, value):
    v = _index(who, name, value)
    if v < 0 or v >= _U64:
        raise ConfigError(f"{who}: {name} {v} is out of range (expected 0..{_U64 - 1})")
    return v


def _seed64(who, seed):
    """torch's seeds are int64 or uint64; negative seeds are taken mod 2^64 as torch does."""
    v = _index(who, "seed", seed)
    if v < -(1 << 63) or v >= _U64:
        raise ConfigError(f"{who}: seed {v} is out of range (expected -2^63..2^64-1, as torch.manual_seed)")
    return v % _U64


def _resolve_world(who, num_replicas, rank):
    if num_replicas is None or rank is None:
        if dist.is_available() and dist.is_initialized():
            found = (dist.get_rank(), dist.get_world_size())
        else:
            env = _core.world_from_env()
            if env is None:
                missing = " and ".join(n for n, v in (("num_replicas", num_replicas), ("rank", rank)) if v is None)
                raise ConfigError(
                    f"{who}: {missing} not given, torch.distributed is not initialized and no "
                    "launcher environment was found (looked for RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/"
                    "OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS); pass num_replicas= and "
                    "rank= (num_replicas=1, rank=0 for one process)"
                )
            found = (env[0], env[1])
        if rank is None:
            rank = found[0]
        if num_replicas is None:
            num_replicas = found[1]
    world_size = _positive(who, "num_replicas", num_replicas)
    r = _index(who, "rank", rank)
    if r < 0 or r >= world_size:
        raise ConfigError(f"{who}: rank {r} is out of range for num_replicas {world_size} "
                          f"(expected 0..{world_size - 1})")
    return world_size, r


def _check_tail(who, tail):
    if tail not in _TAILS:
        raise ConfigError(f'{who}: tail {tail!r} is unknown (expected "pad", "drop" or "uneven")')


def _resolve_tail(who, tail, drop_last):
    if tail is None:
        return "drop" if drop_last else "pad"
    _check_tail(who, tail)
    if drop_last and tail != "drop":
        raise ConfigError(
            f'{who}: drop_last=True conflicts with tail="{tail}" (drop_last=True means tail="drop"; pass one of them)'
        )
    return tail


def _resolve_order(who, order, generation):
    if order not in _ORDERS:
        raise ConfigError(f'{who}: order {order!r} is unknown (expected "feistel" or "torch")')
    if generation is None:
        return default_torch_generation()
    if generation not in _GENERATIONS:
        raise ConfigError(f'{who}: torch_generation {generation!r} is unknown (expected "v1" or "v2.7")')
    return generation


class _Progress:
    """How far one iterator got: its C++ sampler, and the end of the chunk it hands out."""

    __slots__ = ("core", "epoch", "end", "it", "finished")

    def __init__(self, core, epoch):
        self.core = core
        self.epoch = epoch
        self.end = 0
        self.it = None
        self.finished = False

    def taken(self):
        # A list iterator's length hint is exactly what it has not handed out yet.
        return self.end if self.it is None else self.end - self.it.__length_hint__()


def _generate(progress, fetch, total):
    """Yields items fetched in chunks, keeping `progress` exact after every item."""
    first, size = 0, _FIRST_CHUNK
    while first < total:
        chunk = fetch(first, size)
        if not chunk:
            break
        first += len(chunk)
        it = iter(chunk)
        progress.it = it
        progress.end = first
        yield from it
        size = _CHUNK
    progress.it = None
    progress.finished = True


def _check_state_dict(who, sd):
    if not isinstance(sd, Mapping) or "state" not in sd or "epoch" not in sd:
        kind = type(sd).__name__ if not isinstance(sd, Mapping) else f"keys {sorted(map(str, sd.keys()))}"
        raise StateError(f"{who}: expected a dict with keys 'epoch' and 'state' from state_dict(), got {kind}")
    if sd.get("format", _STATE_FORMAT) != _STATE_FORMAT:
        raise StateError(f"{who}: 'format' {sd['format']!r} is unknown (expected {_STATE_FORMAT}; saved by a newer "
                         "distsampler?)")
    text = sd["state"]
    if not isinstance(text, str):
        raise StateError(f"{who}: 'state' is a {type(text).__name__} (expected the str from state_dict())")
    parsed = _core.parse_state(text)
    epoch = sd["epoch"]
    if not isinstance(epoch, int) or epoch != parsed["epoch"]:
        raise StateError(f"{who}: 'epoch' {epoch!r} disagrees with the state's epoch {parsed['epoch']} (edited dict?)")
    return text, parsed["epoch"]

def _weights(who, name, weights):
    """A list of floats from a sequence or a 1-D tensor of numbers."""
    if isinstance(weights, torch.Tensor):
        if weights.dim() != 1:
            raise ConfigError(f"{who}: {name} is a {weights.dim()}-D tensor (expected a 1-D sequence of weights)")
        return [float(w) for w in weights.tolist()]
    try:
        return [float(w) for w in weights]
    except (TypeError, ValueError):
        raise ConfigError(f"{who}: {name} {weights!r} is not a sequence of numbers (expected floats >= 0)") from None
