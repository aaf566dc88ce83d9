# torchdata's StatefulDataLoader protocol replayed in one process: the calls it makes on a sampler, in its order.
# SPDX-License-Identifier: MIT
"""The order in which torchdata's ``StatefulDataLoader`` (torchdata >= 0.8) calls a sampler,
replayed without worker processes (a worker only turns indices into data; the sampler lives
in the main process, so every call it receives is replayed here):

- the index sampler is the ``batch_sampler`` given, else torchdata's own ``BatchSampler``
  over the ``sampler`` given, whose iterator saves ``{"samples_yielded", "sampler_state"
  (the sampler's ``state_dict()`` when it is Stateful), "sampler_iter_state" (the sampler
  iterator's, when that one is)}`` and restores by loading the sampler, calling ``iter()`` on
  it, then loading the iterator; an object is Stateful when it has both methods;
- ``load_state_dict(sd)`` on the loader only stores ``sd``; it is applied when the next
  iterator is made (``iter(loader)``), so after whatever ``set_epoch`` the loop called;
- ``iter(loader)`` makes a new iterator (or, with persistent workers, resets the one it
  has); when that iterator was restored from a state of a finished iteration, it is
  dropped and a fresh one made (reset, with persistent workers): the next epoch starts;
- no workers: a new iterator calls ``iter()`` on the index sampler, then, with a state,
  loads it (index sampler, ``iter()``, its iterator); ``state_dict()`` asks the index
  sampler first, then the iterator over it;
- workers (``snapshot_every_n_steps=1``): each pass calls ``iter()`` on the index sampler,
  takes the main state (the iterator's ``state_dict()`` first, then the index sampler's)
  before handing anything out, then hands ``prefetch_factor * num_workers`` index batches
  ahead, taking the main state after each hand-out and keeping it with that batch; a
  returned batch first hands the next one out; ``state_dict()`` is the state kept with the
  latest batch returned. A restore takes the pass's first main state, then loads the saved
  one (as without workers), then hands out ahead.
"""


def is_stateful(obj):
    return callable(getattr(obj, "state_dict", None)) and callable(getattr(obj, "load_state_dict", None))


def serialize(obj):
    return obj.state_dict() if is_stateful(obj) else None


class _BatchIterator:
    def __init__(self, sampler, batch_size, drop_last):
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last
        self.sampler_iter = iter(sampler)
        self.samples_yielded = 0

    def __iter__(self):
        return self

    def __next__(self):
        batch = []
        try:
            for _ in range(self.batch_size):
                batch.append(next(self.sampler_iter))
                self.samples_yielded += 1
            return batch
        except StopIteration:
            if self.drop_last or not batch:
                raise
            return batch

    def state_dict(self):
        sd = {"samples_yielded": self.samples_yielded}
        if is_stateful(self.sampler):
            sd["sampler_state"] = self.sampler.state_dict()
        if is_stateful(self.sampler_iter):
            sd["sampler_iter_state"] = self.sampler_iter.state_dict()
        return sd

    def load_state_dict(self, sd):
        self.samples_yielded = sd["samples_yielded"]
        if "sampler_state" in sd:
            self.sampler.load_state_dict(sd["sampler_state"])
        self.sampler_iter = iter(self.sampler)
        if "sampler_iter_state" in sd:
            self.sampler_iter.load_state_dict(sd["sampler_iter_state"])
        if not (is_stateful(self.sampler) or is_stateful(self.sampler_iter)):
            for _ in range(self.samples_yielded):
                next(self.sampler_iter)


class _BatchSampler:
    def __init__(self, sampler, batch_size, drop_last):
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        return _BatchIterator(self.sampler, self.batch_size, self.drop_last)


class _Iterator:
    def __init__(self, loader, state):
        self.loader = loader
        self.index_sampler = loader.index_sampler
        self.sampler_iter = iter(self.index_sampler)
        self.yielded = 0  # index batches handed out this pass
        self.num_yielded = 0  # batches returned this pass
        self.finished = False

    def _load(self, main):
        self.yielded = main["yielded"]
        if is_stateful(self.index_sampler) or is_stateful(self.sampler_iter):
            if is_stateful(self.index_sampler) and main["index_sampler"] is not None:
                self.index_sampler.load_state_dict(main["index_sampler"])
            self.sampler_iter = iter(self.index_sampler)
            if main["sampler_iter"] is not None:
                self.sampler_iter.load_state_dict(main["sampler_iter"])
        else:
            for _ in range(self.yielded):
                next(self.sampler_iter)

    def _next_index(self):
        index = next(self.sampler_iter)
        self.yielded += 1
        return index

    def __iter__(self):
        return self

    def __next__(self):
        try:
            batch = self._next_batch()
        except StopIteration:
            self.finished = True
            raise
        self.num_yielded += 1
        return batch


class _SingleProcess(_Iterator):
    def __init__(self, loader, state):
        super().__init__(loader, state)
        if state is not None:
            self._load(state)
            self.num_yielded = state["num_yielded"]
            self.finished = state["finished"]

    def _next_batch(self):
        return self._next_index()

    def state_dict(self):
        index_state = serialize(self.index_sampler)  # the index sampler first, then its iterator
        return {"index_sampler": index_state, "sampler_iter": serialize(self.sampler_iter), "yielded": self.yielded,
                "num_yielded": self.num_yielded, "finished": self.finished}


class _Workers(_Iterator):
    def __init__(self, loader, state):
        super().__init__(loader, state)
        self.ahead = loader.prefetch_factor * loader.num_workers
        self.reset(prime=state is None)
        if state is not None:
            self._load(state["snapshot"]["main"])
            self.num_yielded = state["snapshot"]["step"]
            self.snapshot = state["snapshot"]
            self._prime()
            for _ in range(state["steps_since"]):
                next(self)
            self.finished = state["finished"]

    def _main_state(self):
        iter_state = serialize(self.sampler_iter)  # the iterator first, then the index sampler
        return {"sampler_iter": iter_state, "index_sampler": serialize(self.index_sampler), "yielded": self.yielded,
                "num_workers": self.loader.num_workers}

    def reset(self, prime=True):
        self.sampler_iter = iter(self.index_sampler)
        self.yielded = self.num_yielded = 0
        self.finished = False
        self.queue = []
        self.snapshot = {"step": 0, "main": self._main_state()}
        if prime:
            self._prime()

    def _prime(self):
        for _ in range(self.ahead):
            self._put()

    def _put(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        self.queue.append((index, self._main_state()))

    def _next_batch(self):
        if not self.queue:
            raise StopIteration
        index, main = self.queue.pop(0)
        self._put()
        self.snapshot = {"step": self.num_yielded + 1, "main": main}
        return index

    def state_dict(self):
        return {"snapshot": self.snapshot, "steps_since": self.num_yielded - self.snapshot["step"],
                "finished": self.finished}


class StatefulLoader:
    """``StatefulDataLoader(dataset, sampler=..., batch_size=...)`` or ``(batch_sampler=...)``;
    yields index batches (what a worker would turn into data)."""

    def __init__(self, sampler=None, batch_size=1, batch_sampler=None, num_workers=0, prefetch_factor=2,
                 persistent_workers=False, drop_last=False):
        self.index_sampler = batch_sampler if batch_sampler is not None else _BatchSampler(sampler, batch_size,
                                                                                            drop_last)
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.persistent_workers = persistent_workers
        self.iterator = None
        self.next_iter_state = None
        self.made_for_state = False

    def _get_iterator(self):
        state, self.next_iter_state = self.next_iter_state, None
        return _SingleProcess(self, state) if self.num_workers == 0 else _Workers(self, state)

    def __iter__(self):
        if self.made_for_state:
            self.made_for_state = False
        elif self.persistent_workers and self.num_workers > 0:
            if self.iterator is None:
                self.iterator = self._get_iterator()
            else:
                self.iterator.reset()
        else:
            self.iterator = self._get_iterator()
        if self.iterator.finished:  # a restored state of a finished iteration: the next one starts
            if self.persistent_workers:
                self.iterator.reset()
            else:
                self.iterator = self._get_iterator()
        return self.iterator

    def state_dict(self):
        if self.iterator is None:
            self.iterator = self._get_iterator()
            self.made_for_state = True
        return self.iterator.state_dict()

    def load_state_dict(self, state_dict):
        self.iterator = None
        self.made_for_state = False
        if state_dict:
            self.next_iter_state = state_dict


class _WorkerInfo:
    def __init__(self, id, num_workers):
        self.id, self.num_workers = id, num_workers


class _InWorker:
    """Runs calls as DataLoader worker `id` of `num_workers` would: ``get_worker_info()`` says so."""

    def __init__(self, id, num_workers):
        self.info = _WorkerInfo(id, num_workers)

    def __enter__(self):
        import torch.utils.data

        self.saved = torch.utils.data.get_worker_info
        torch.utils.data.get_worker_info = lambda: self.info
        return self

    def __exit__(self, *exc):
        import torch.utils.data

        torch.utils.data.get_worker_info = self.saved


def _shared_tensors(obj, memo, depth=0):
    """Every shared-memory tensor among obj's attributes (a few levels down), mapped to itself."""
    import torch

    if isinstance(obj, torch.Tensor):
        if obj.is_shared():
            memo[id(obj)] = obj
        return
    if depth < 4:
        for value in getattr(obj, "__dict__", {}).values():
            _shared_tensors(value, memo, depth + 1)


def worker_copy(dataset):
    """The dataset as a DataLoader worker gets it: a deep copy (a pickle), its shared-memory
    tensors shared (as torch passes them to a worker by handle)."""
    import copy

    memo = {}
    _shared_tensors(dataset, memo)
    return copy.deepcopy(dataset, memo)


class _DatasetIterator:
    """A pass over an IterableDataset as torchdata's iterators make it: without workers the
    dataset itself (loaded with the saved dataset state, then ``iter()``); with workers one copy
    of the dataset per worker (``worker_copy``: the copies share what a pickle to a worker shares),
    each loaded with its own saved state inside that worker, then ``iter()`` there; the batches
    come from the workers in turn, each worker's state taken after each of its batches (and the
    turn kept in the loader's state: a restore asks the same worker next)."""

    def __init__(self, loader, state):
        self.loader, self.batch_size = loader, loader.batch_size
        n = loader.num_workers
        self.finished = False
        if n == 0:
            if state is not None and is_stateful(loader.dataset) and state["dataset"] is not None:
                loader.dataset.load_state_dict(state["dataset"])
            self.parts = [(None, iter(loader.dataset))]
        else:
            self.copies = [worker_copy(loader.dataset) for _ in range(n)]
            self.worker_states = [None] * n
            self.parts = []
            for w, ds in enumerate(self.copies):
                with _InWorker(w, n):
                    if state is not None and state["workers"][w] is not None:
                        ds.load_state_dict(state["workers"][w])
                        self.worker_states[w] = state["workers"][w]
                    self.parts.append((w, iter(ds)))
        self.turn = 0
        self.live = list(range(len(self.parts)))
        if state is not None:
            self.finished = state["finished"]
            self.turn = state.get("turn", 0)  # the worker whose batch comes next, as torchdata keeps it

    def reset(self):
        """Persistent workers: the same copies start their next pass."""
        n = self.loader.num_workers
        self.parts = []
        for w, ds in enumerate(self.copies):
            with _InWorker(w, n):
                self.parts.append((w, iter(ds)))
        self.turn, self.live, self.finished = 0, list(range(n)), False

    def _draw(self, i):
        w, it = self.parts[i]
        batch = []
        ctx = _InWorker(w, self.loader.num_workers) if w is not None else None
        if ctx:
            ctx.__enter__()
        try:
            for _ in range(self.batch_size):
                try:
                    batch.append(next(it))
                except StopIteration:
                    break
            if w is not None:
                self.worker_states[w] = self.copies[w].state_dict()
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
        return batch

    def __iter__(self):
        return self

    def __next__(self):
        while self.live:
            i = self.live[self.turn % len(self.live)]
            batch = self._draw(i)
            if batch:
                self.turn += 1
                return batch
            self.live.remove(i)
        self.finished = True
        raise StopIteration

    def state_dict(self):
        if self.loader.num_workers == 0:
            return {"dataset": serialize(self.loader.dataset), "finished": self.finished}
        return {"workers": list(self.worker_states), "finished": self.finished, "turn": self.turn}


class StatefulDatasetLoader(StatefulLoader):
    """``StatefulDataLoader(iterable_dataset, batch_size=..., num_workers=...)``: batches of what
    the dataset yields; ``state_dict``/``load_state_dict`` and ``iter()`` as ``StatefulLoader``
    (a state applied when the next iterator is made, a restored finished iteration dropped)."""

    def __init__(self, dataset, batch_size=1, num_workers=0, persistent_workers=False):
        super().__init__(batch_sampler=[], num_workers=num_workers, persistent_workers=persistent_workers)
        self.dataset, self.batch_size = dataset, batch_size

    def _get_iterator(self):
        state, self.next_iter_state = self.next_iter_state, None
        return _DatasetIterator(self, state)
