# A stand-in for torchdata's StatefulDataLoader protocol (not packaged for Debian), from its documented behaviour.
# SPDX-License-Identifier: MIT
"""What the samplers meet inside torchdata's ``StatefulDataLoader`` (torchdata >= 0.8):

- a drop-in subclass of ``torch.utils.data.DataLoader``; ``state_dict()`` describes the
  latest iterator (one is made if none exists yet), ``load_state_dict(sd)`` drops the
  current iterator and applies ``sd`` when the next one is made; ``{}`` loads nothing;
- an object is *Stateful* when it has both ``state_dict`` and ``load_state_dict``; the
  loader saves the index sampler (``_index_sampler_state``) and the iterator over it
  (``_sampler_iter_state``) when they are, and otherwise fast-forwards by the count of
  index batches handed out (``_sampler_iter_yielded``);
- with ``batch_size`` the index sampler is its own ``BatchSampler``, whose iterator is
  Stateful and saves ``samples_yielded`` and the wrapped sampler's ``state_dict()``;
  restoring loads the sampler, then calls ``iter()`` on it;
- single process: the state is taken when ``state_dict()`` is called; with workers the
  main-process state is taken each time an index batch is handed to a worker and kept
  with that batch (``snapshot_every_n_steps=1``); ``state_dict()`` returns the one of the
  latest batch yielded, under ``_snapshot`` / ``_main_snapshot`` with ``_num_workers``,
  and a restore needs the same ``num_workers``;
- restoring happens before any index of the new iterator is handed out (so after the loop's
  ``set_epoch``); an iterator restored from a finished one is replaced by a fresh one.

Imported by the tests under its own name when torchdata is not installed: the samplers
recognise a loader that snapshots as it hands out by what it holds (the pass's iterator).
"""

import itertools

import torch.utils.data
from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter, _SingleProcessDataLoaderIter

_INDEX_SAMPLER_STATE = "_index_sampler_state"
_SAMPLER_ITER_STATE = "_sampler_iter_state"
_SAMPLER_ITER_YIELDED = "_sampler_iter_yielded"
_NUM_YIELDED = "_num_yielded"
_FINISHED = "_iterator_finished"
_SNAPSHOT = "_snapshot"
_MAIN = "_main_snapshot"
_STEP = "_snapshot_step"
_NUM_WORKERS = "_num_workers"


def is_stateful(obj):
    return callable(getattr(obj, "state_dict", None)) and callable(getattr(obj, "load_state_dict", None))


def serialize(obj):
    return obj.state_dict() if is_stateful(obj) else None


def deserialize(obj, state):
    if is_stateful(obj) and state is not None:
        obj.load_state_dict(state)
    return obj


class _BatchIterator:
    def __init__(self, sampler, batch_size, drop_last):
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last
        self.it = iter(sampler)
        self.samples_yielded = 0

    def __iter__(self):
        return self

    def __next__(self):
        batch = []
        for _ in range(self.batch_size):
            try:
                batch.append(next(self.it))
            except StopIteration:
                break
            self.samples_yielded += 1
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return batch

    def state_dict(self):
        sd = {"samples_yielded": self.samples_yielded}
        if is_stateful(self.sampler):
            sd["sampler_state"] = self.sampler.state_dict()
        return sd

    def load_state_dict(self, sd):
        self.samples_yielded = sd["samples_yielded"]
        if "sampler_state" in sd:
            self.sampler.load_state_dict(sd["sampler_state"])
        self.it = iter(self.sampler)
        if not is_stateful(self.sampler):
            for _ in range(self.samples_yielded):
                next(self.it)


class BatchSampler(torch.utils.data.BatchSampler):
    def __iter__(self):
        return _BatchIterator(self.sampler, self.batch_size, self.drop_last)


class _Restoring:
    """Shared by both iterators: counts index batches handed out; restores before the first."""

    def _setup(self, state, main):
        self._yielded_indices = 0
        self._restore = main
        self._finished = bool(state and state[_FINISHED])

    def _next_index(self):
        if self._restore is not None:
            main, self._restore = self._restore, None
            self._yielded_indices = main[_SAMPLER_ITER_YIELDED]
            if is_stateful(self._index_sampler) or is_stateful(self._sampler_iter):
                self._index_sampler = deserialize(self._index_sampler, main[_INDEX_SAMPLER_STATE])
                self._sampler_iter = iter(self._index_sampler)
                self._sampler_iter = deserialize(self._sampler_iter, main[_SAMPLER_ITER_STATE])
            else:
                self._sampler_iter = itertools.islice(self._index_sampler, self._yielded_indices, None)
        index = super()._next_index()
        self._yielded_indices += 1
        return index

    def _main_state(self):
        return {_INDEX_SAMPLER_STATE: serialize(self._index_sampler),
                _SAMPLER_ITER_STATE: serialize(self._sampler_iter), _SAMPLER_ITER_YIELDED: self._yielded_indices,
                _NUM_WORKERS: self._num_workers}

    def __next__(self):
        try:
            return super().__next__()
        except StopIteration:
            self._finished = True
            raise


class _SingleIter(_Restoring, _SingleProcessDataLoaderIter):
    def __init__(self, loader, state):
        self._setup(state, state)
        super().__init__(loader)
        if state is not None:
            self._num_yielded = state[_NUM_YIELDED]

    def state_dict(self):
        sd = self._main_state()
        sd.update({_NUM_YIELDED: self._num_yielded, _FINISHED: self._finished})
        return sd


class _MultiIter(_Restoring, _MultiProcessingDataLoaderIter):
    def __init__(self, loader, state):
        main = None
        if state is not None:
            main = state[_SNAPSHOT][_MAIN]
            assert main[_NUM_WORKERS] == loader.num_workers, "a restore needs the same num_workers"
        self._setup(state, main)
        self._pending_snapshots = {}
        self._snapshot = None
        super().__init__(loader)
        if state is not None:
            self._num_yielded = state[_SNAPSHOT][_STEP]
            self._snapshot = state[_SNAPSHOT]

    def _reset(self, loader, first_iter=False):
        self._pending_snapshots = {}
        if not first_iter:
            self._yielded_indices = 0
        self._initial = True
        super()._reset(loader, first_iter)

    def _next_index(self):
        if self._initial:  # the state before anything is handed out (restored, or the pass's start)
            self._initial = False
            if self._restore is None:
                self._snapshot = {_STEP: 0, _MAIN: self._main_state()}
        index = super()._next_index()
        self._pending_snapshots[self._send_idx] = self._main_state()  # taken as the batch is handed out
        return index

    def _next_data(self):
        data = super()._next_data()
        done = self._rcvd_idx - 1
        for key in [k for k in self._pending_snapshots if k < done]:
            del self._pending_snapshots[key]
        self._snapshot = {_STEP: self._num_yielded + 1, _MAIN: self._pending_snapshots.pop(done)}
        return data

    def state_dict(self):
        if self._snapshot is None:
            self._snapshot = {_STEP: 0, _MAIN: self._main_state()}
        return {_SNAPSHOT: dict(self._snapshot, _worker_snapshots={}), "_steps_since_snapshot": 0,
                _FINISHED: self._finished}


class StatefulDataLoader(torch.utils.data.DataLoader):
    def __init__(self, dataset, *args, **kwargs):
        super().__init__(dataset, *args, **kwargs)
        if self.batch_size is not None and type(self.batch_sampler) is torch.utils.data.BatchSampler:
            self._DataLoader__initialized = False
            self.batch_sampler = BatchSampler(self.sampler, self.batch_size, self.drop_last)
            self._DataLoader__initialized = True
        self.next_iter_state = None
        self._made_for_state = False

    def _get_iterator(self):
        state, self.next_iter_state = self.next_iter_state, None
        return _SingleIter(self, state) if self.num_workers == 0 else _MultiIter(self, state)

    def __iter__(self):
        if self._made_for_state:
            self._made_for_state = False
        elif self.persistent_workers and self.num_workers > 0 and self._iterator is not None:
            self._iterator._reset(self)
        else:
            self._iterator = self._get_iterator()
        if self._iterator._finished:  # restored from the end of an iteration: the next one starts afresh
            if self.persistent_workers and self.num_workers > 0:
                self._iterator._reset(self)
            else:
                self._iterator = self._get_iterator()
        return self._iterator

    def state_dict(self):
        if self._iterator is None:
            self._iterator = self._get_iterator()
            self._made_for_state = True
        return self._iterator.state_dict()

    def load_state_dict(self, state_dict):
        self._iterator = None
        self._made_for_state = False
        if state_dict:
            self.next_iter_state = state_dict
