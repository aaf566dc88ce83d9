# distsampler.torch._life: the one life cycle every sampler family plugs into (cache, pending state, iterate, pickle).
# SPDX-License-Identifier: MIT
"""The sampler life cycle, written once (as torchdata's ``BaseNode``: a state is exactly what
``load_state_dict`` takes back).

A family subclasses ``_Life`` and provides only:

- ``_config()``: a hashable key of its settings (what the C++ core is built from);
- ``_build(key)``: the C++ core for that key (at epoch 0);
- ``_fetcher(core)``: ``fetch(first, count) -> list`` of the items it yields;
- the class attributes ``_who`` (its name in messages) and ``_unit`` (``"samples"`` when
  it yields indices, one per sample; ``"batches"`` when it yields micro-batches).

Everything else lives here: the core cache (built once per configuration, copied per
pass), the pending state (a loaded state, validated at once, taken at the first ``next()``
of the next iteration), ``__iter__``/``__len__``/``set_epoch``/``state_dict``/
``load_state_dict``, pickling (a pickle keeps the settings and the pending state, never a
core), and what a loader asks of a sampler: its unit, its padding flags, its attachment.
"""

import weakref

from .. import _core
from .._core import ConfigError
from ._common import _STATE_FORMAT, _Progress, _check_state_dict, _generate, _unsigned
from ._handout import recorded

_NOUNS = {"samples": "indices", "batches": "micro-batches"}
# Attributes rebuilt on demand: never pickled.
_TRANSIENT = ("_base", "_base_key", "_prepared", "_progress", "_loop", "_cache", "_pass_iter")


def received_count(who, unit, received, legacy):
    """``(name, count)`` a ``state_dict`` call names: ``received=``, or the unit's own keyword
    (``samples=`` / ``batches=``, 0.2's spelling, still accepted); count None when neither."""
    for name in legacy:
        if name != unit:
            raise TypeError(f"{who}() got an unexpected keyword argument '{name}' (expected received=<{unit} the "
                            f"loop received>, or its 0.2 spelling {unit}=)")
    old = legacy.get(unit)
    if received is not None and old is not None:
        raise ConfigError(f"{who}: received {received!r} and {unit} {old!r} were both given (expected one of them)")
    if old is not None:
        return unit, _unsigned(who, unit, old)
    if received is None:
        return "received", None
    return "received", _unsigned(who, "received", received)


class _Checkpointed:
    """What ``distsampler.torch.DataLoader`` asks of whatever it checkpoints (a sampler, a
    shard stream, a stream dataset), answered by the object, so the loader names no family.
    The defaults are a sampler's; a dataset overrides what differs."""

    _unit = "samples"

    def _checkpoint_unit(self):
        """How the loader counts what its loop received: ``"samples"`` (a ``sampler=``, in indices),
        ``"batches"`` (a ``batch_sampler=``), ``"stream"`` (a shard stream's worker batches) or
        ``"passes"`` (a stream dataset's micro-batches)."""
        return self._unit

    def _attach(self, loader):
        """`loader` (a ``distsampler.torch.DataLoader``) drives this object and knows what its loop received."""
        self._loop = weakref.ref(loader)

    def _attached(self):
        """The attached loader, or None."""
        ref = self.__dict__.get("_loop")
        return ref() if ref is not None else None

    def _loader_check(self, loader):
        """Raises ConfigError when `loader`'s arguments cannot go with this object."""

    def _loader_begin(self, loader):
        """Before the loader's next iteration; True when that iteration reads a loaded state."""
        return self.__dict__.get("_pending") is not None

    def _loader_loaded(self, loader):
        """After the loader loaded a state into this object."""

    def _has_padding(self):
        """Whether items carry padding flags (``padding_mask=True`` needs them)."""
        return True

    def _received_batch(self, batch, counts):
        """What the loop gets for a batch the loader returned (``counts``: of its latest iteration)."""
        return batch


class _Life(_Checkpointed):
    """The base of every sampler family (see the module). Not public."""

    _who = ""
    _plans_epochs = False  # True: a core plans its epoch in set_epoch (costly); the built one is at epoch 0

    def _init_life(self):
        self._base = None
        self._base_key = None
        self._pending = None  # a loaded state's text, until an iteration takes it
        self._prepared = None  # (config, core) resumed from _pending
        self._progress = None  # how far the latest iteration got

    # -- the C++ core ---------------------------------------------------------------------
    def _cpp(self, epoch):
        """A private C++ core at the start of `epoch` (built once per configuration, then copied)."""
        if self._base is None or self._base_key != self._config():
            self._start_core()
        if not self._plans_epochs or self._base.epoch != epoch:
            self._base.set_epoch(epoch)
        return self._base.copy()

    def _start_core(self):
        """Builds the C++ core of the settings now (its ConfigError is the constructor's)."""
        self._base_key = self._config()
        self._base = self._build(self._base_key)
        return self._base

    def _epoch_value(self):
        """``epoch`` checked (torch's samplers let users assign the attribute directly)."""
        return _unsigned(self._who, "epoch", self.epoch)

    def _resumed(self, text, epoch):
        """A core resumed from `text`, a state of `epoch`: _check_state_dict parsed the text once and read its
        epoch, the core's resume parses it once more (validating it against the core's configuration) and
        continues that epoch. Two parses on load, where there were three."""
        core = self._cpp(epoch)
        core.resume(text)
        return core

    def _next_core(self):
        """The core the next pass reads: the loaded state's (resumed once per configuration), else this epoch's."""
        if self._pending is None:
            return self._cpp(self._epoch_value())
        key = self._config()
        if self._prepared is None or self._prepared[0] != key:
            self._prepared = (key, self._resumed(self._pending, self.epoch))
        return self._prepared[1]

    @staticmethod
    def _total(core):
        """Items of a core's pass (samples or micro-batches)."""
        return core.size

    @staticmethod
    def _state_text(core, done):
        return core.state(done)

    def _guard_sums(self):
        """(dataset_size, ReadSums words, start) of the pass a copy would read, for ``guard``'s mesh cover
        check (the family's C++ segment_sums), or None when the family has none."""
        core = self._next_core()
        sums = getattr(core, "guard_sums", None)
        return None if sums is None else (*sums(), core.start)

    # -- iteration ------------------------------------------------------------------------
    def __iter__(self):
        if self._pending is not None:
            it = self._resume_pass()
        else:
            it = self._pass(self._cpp(self._epoch_value()))
        self._pass_iter = weakref.ref(it)  # who holds it draws from this pass (``_handout``)
        return it

    def _pass(self, core):
        progress = _Progress(core, core.epoch)
        self._progress = progress
        return _generate(progress, self._fetcher(core), self._total(core))

    def _resume_pass(self):
        # A generator: the loaded state is taken at the first next(), not at iter(). A DataLoader
        # with workers calls iter() twice and drops the first iterator unused; that one must not
        # consume the state.
        core = self._next_core()
        self._pending = self._prepared = None
        yield from self._pass(core)

    def __len__(self):
        if self._pending is not None:
            return self._total(self._next_core())
        return self._fresh_len()

    def _fresh_len(self):
        return self._total(self._cpp(self._epoch_value()))

    def set_epoch(self, epoch):
        """Selects the epoch. A loaded state of another epoch is discarded."""
        e = _unsigned(self._who, "epoch", epoch)
        if self._pending is not None and e != self.epoch:
            self._pending = self._prepared = None
        self.epoch = e

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self, received=None, **unit):
        """``{"format": 1, "epoch": e, "state": text}``: the epoch and the position reached.

        ``received``: the training loop received the first ``received`` items of the latest
        iteration on every rank (indices for a per-sample sampler, micro-batches for a batch
        sampler; 0.2's ``samples=`` / ``batches=`` still work). Without it: the epoch's start
        before any iteration, its end once the iteration ran out, what the attached
        ``distsampler.torch.DataLoader`` returned when one drives this sampler, what was handed
        out when the object holding this pass's iterator asks (torchdata's ``StatefulDataLoader``
        does); anywhere else mid-epoch a loader may have prefetched, so it raises
        ``ConfigError`` saying what to pass. A state loaded but not yet iterated is returned as
        loaded.
        """
        who = f"{self._who}.state_dict"
        name, done = received_count(who, self._unit, received, unit)
        if self._pending is not None and done is None:
            return {"format": _STATE_FORMAT, "epoch": self.epoch, "state": self._pending}
        epoch = self._epoch_value()
        p = self._progress
        current = p is not None and p.epoch == epoch
        if self._pending is not None:
            core = self._next_core()
        elif current:
            core = p.core
        else:
            core = self._cpp(epoch)
        if done is None:
            running = p if current and self._pending is None else None
            done = recorded(self, running, who, "received", _NOUNS[self._unit])
        else:
            self._check_done(who, name, done, core)
        return {"format": _STATE_FORMAT, "epoch": epoch, "state": self._state_text(core, done)}

    def _check_done(self, who, name, done, core):
        """Raises ConfigError when `done` exceeds the pass (the C++ core checks it for samples)."""

    def load_state_dict(self, state_dict):
        """Validates ``state_dict`` now (``StateError`` with the C++ message when it is malformed
        or of another configuration; the world size may differ) and resumes from it at the
        next ``__iter__``, which yields exactly the rest of that epoch. A state at the end of an
        epoch older than the one ``set_epoch`` selected (the loop moved on before the state was
        applied, as torchdata's ``StatefulDataLoader`` applies it) leaves the selected epoch to
        be read from its start."""
        text, epoch = _check_state_dict(f"{self._who}.load_state_dict", state_dict)
        core = self._resumed(text, epoch)
        if self._total(core) == 0 and self._epoch_value() > epoch:
            # The end of an epoch the loop has left: set_epoch chose a later one before the state came
            # (torchdata's StatefulDataLoader loads the sampler when iteration starts, after the loop's
            # set_epoch). The later epoch is read from its start: the finished one is not read again, and the
            # later one is not taken for finished.
            self._pending = self._prepared = None
            self._progress = None
            return
        self._prepared = (self._config(), core)
        self._pending = text
        self.epoch = epoch
        self._progress = None

    # -- pickling -------------------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        for name in _TRANSIENT:
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        state = dict(state)
        # 0.1 and 0.2 pickles of the step samplers kept a pending state under this name.
        pickled = state.pop("_pickled_pending", None)
        if pickled is not None:
            state["_pending"] = pickled
        for name in _TRANSIENT:
            state.pop(name, None)
        self.__dict__.update(state)
        self._base = self._base_key = self._prepared = self._progress = None
        self.__dict__.setdefault("_pending", None)

    # -- what a loader asks (besides _Checkpointed's defaults) ----------------------------
    def _padding_flags(self, j, batch_size):
        """The padding flags of loader batch j of the latest iteration: ``batch_size`` samples
        from position j * batch_size (per-sample samplers), or micro-batch j (batch samplers)."""
        core = self._progress.core
        if self._unit == "samples":
            first = j * batch_size
            return [core.is_padding(i) for i in range(first, min(first + batch_size, self._total(core)))]
        step, k = core.micro_batch_id(j)
        size = len(self._fetcher(core)(j, 1)[0])
        return [core.is_padding(step, k, e) for e in range(size)]

