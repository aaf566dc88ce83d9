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
