# distsampler.torch.guard: one exchange through the process group's store proving every rank built the same sampler.
# SPDX-License-Identifier: MIT
import pickle

import torch.distributed as dist

from .._core import ConfigError
from ..mesh import check_guard_descriptions, guard_mesh_fields
from ._common import PUBLIC_MODULE
from ._exchange import exchange, timeout_seconds


def _foreign_description(sampler):
    # A sampler of another library (torch's own DistributedSampler): what its attributes say.
    return {
        "sampler": type(sampler).__name__,
        "dataset_size": len(sampler.dataset),
        "order": getattr(sampler, "order", "torch"),
        "global_batch_size": getattr(sampler, "global_batch_size", 0),
        "token_layout": 0,
    }


def _describe(sampler):
    # What every rank must agree on, and what differs by rank. Each family says what it is
    # (kind, dataset size, order, global batch, token layout) in its own
    # _guard_description(); guard names no family.
    own = getattr(sampler, "_guard_description", None)
    family = own() if callable(own) else _foreign_description(sampler)
    return {
        "sampler": family["sampler"],
        "dataset_size": family["dataset_size"],
        "seed": sampler.seed,
        "shuffle": bool(sampler.shuffle),
        "tail": getattr(sampler, "tail", "drop" if getattr(sampler, "drop_last", False) else "pad"),
        "order": family["order"],
        "epoch": sampler.epoch,
        "global_batch_size": family["global_batch_size"],
        "accumulation_steps": getattr(sampler, "accumulation_steps", 1),
        "token_layout": family["token_layout"],
        "num_replicas": sampler.num_replicas,
        "rank": sampler.rank,
    }


def _guarded(obj):
    # What the guard checks for `obj`: a dataset that reads through a sampler or stream of its own
    # (ShardedDataset: its ShardStream, named by _guard_target) is checked through that index
    # stream, so the mesh guard hashes the indices it hands out and never reads (or decodes) a
    # record; an object that describes no sampler itself is checked through the first of its
    # sampler, stream or batch_sampler attributes that does (a dataset of your own, a DataLoader).
    own = getattr(obj, "_guard_target", None)
    if callable(own):
        return own()
    if not callable(getattr(obj, "_guard_description", None)):
        for name in ("sampler", "stream", "batch_sampler"):
            inner = getattr(obj, name, None)
            if callable(getattr(inner, "_guard_description", None)):
                return inner
    return obj


def _store(group):
    # The store every rank of the job reaches: the default process group's (torch.distributed's own).
    return dist.distributed_c10d._get_default_store()


def guard(sampler, group=None, timeout=None, mesh=None):
    """Checks, through the process group's store, that every rank built the same sampler:
    same dataset size, seed, shuffle, tail, order, epoch, accumulation, world and, for
    ``TokenBatchSampler``, the same lengths and budget options, and that each rank's
    ``rank`` / ``num_replicas`` are its process rank and the group size.

    Call it on every rank (a collective) after building the sampler, or after
    ``set_epoch``. Raises ``ConfigError`` on every rank, naming the first rank that
    differs, the field, and both values (the ``shuffle(42 + rank)`` bug shows up as
    "rank 1 has seed 43 but rank 0 has seed 42"). Works with any torch sampler that has
    these attributes, torch's own DistributedSampler included. A dataset that reads through
    a sampler or stream of its own (``ShardedDataset``: its ``stream``; an object that is no
    sampler itself but holds one of the library's as ``sampler``, ``stream`` or
    ``batch_sampler``) is checked through it: the guard compares the indices it hands out and
    never reads a record.

    ``timeout`` (seconds, or a ``datetime.timedelta``) bounds the wait for the other
    ranks; by default the process group's own timeout (``init_process_group(timeout=...)``,
    which the group's store carries; torch's default is 30 minutes), as the C++ c10d guard
    waits its store's, so the guard never outwaits the group's collectives. Either every live rank returns, or every live rank raises the same
    ``ConfigError`` naming the missing ranks: "guard: rank 2 did not arrive within 20 s
    (expected all 4 ranks to call the guard, ...)" for a rank that never called (died,
    or called too late), "rank 2 arrived but did not finish within 20 s (...)" for one
    that died inside the guard. The exchange is the C++ c10d guard's (one record per
    rank and one decision, through the default group's store; no collective of the
    group runs, so a dead rank cannot leave it hanging). Only when the store's host
    (rank 0) dies may a rank raise the store's own error instead.

    With ``mesh`` (the ``DataWorld`` of ``distsampler.mesh.mesh_world``, or its ``Mesh``; the
    group's ranks are the mesh's global ranks, row-major), the checks are the C++ mesh
    guard's (``check_mesh_groups``): each sampler is built for its rank's data rank and data
    world, every model-parallel group (the ranks that differ in one non-data dim, innermost
    first) agrees on these fields (and on where a resumed pass starts) and reads the same
    indices (a hash of what a copy of the sampler yields this epoch, O(its share)), and the
    data ranks agree on the fields. A mismatch names the group, the rank and the field:
    "guard: tp group of ranks 4,5: rank 5 reads other samples (seed 43, rank 4 has 42;
    ...)". When every rank's sampler has its family's C++ read sums (a ``_guard_sums()`` method
    returning (slots, ReadSums words, start), slots being the dataset size or what the family's
    sums count instead: the library's samplers whose C++ cores are bound with their guard
    points have one, and a sampler of your own may), the data ranks' reads must
    also be disjoint and covering, as in C++, else ``ConfigError`` "guard: mesh dp=4,tp=2
    (data dims dp): overlap ...".
    """
    seconds = None if timeout is None else timeout_seconds(timeout)
    if not (dist.is_available() and dist.is_initialized()):
        raise ConfigError("guard: torch.distributed is not initialized (call init_process_group first)")
    sampler = _guarded(sampler)
    mine = _describe(sampler)
    if mesh is not None:
        mine.update(guard_mesh_fields(sampler))
    size, me = dist.get_world_size(group), dist.get_rank(group)
    members = "all" if group is None else "-".join(str(r) for r in dist.get_process_group_ranks(group))
    store = _store(group)
    if seconds is None:  # the group's timeout, which init_process_group gave its store
        seconds = timeout_seconds(store.timeout)
    scope = f"distsampler/guard/py/{members}"
    try:
        # The call number: this rank's n-th guard meets the other ranks' n-th (counted in the store).
        ns = f"{scope}/{store.add(f'{scope}/calls/{me}', 1)}"
    except RuntimeError as e:
        raise ConfigError(f"guard: rank {me} failed to count the store keys under '{scope}': "
                          f"{str(e).splitlines()[0]}") from None
    # pickled as all_gather_object would: the records come from the job's own ranks
    records = exchange(store, ns, me, size, pickle.dumps(mine), seconds, "guard")
    gathered = [pickle.loads(r) for r in records]
    if mesh is not None:
        check_guard_descriptions(gathered, mesh, size)
        return gathered
    for r, d in enumerate(gathered):
        if d["num_replicas"] != size:
            raise ConfigError(f"guard: rank {r} has num_replicas {d['num_replicas']} but the process group has "
                              f"{size} processes (expected num_replicas={size})")
        if d["rank"] != r:
            raise ConfigError(f"guard: process {r} of the group built its sampler with rank {d['rank']} "
                              f"(expected rank={r})")
    reference = gathered[0]
    for r, d in enumerate(gathered[1:], start=1):
        for field in ("sampler", "dataset_size", "seed", "shuffle", "tail", "order", "epoch", "global_batch_size",
                      "accumulation_steps", "token_layout"):
            if d[field] != reference[field]:
                raise ConfigError(
                    f"guard: rank {r} has {field} {d[field]!r} but rank 0 has {field} {reference[field]!r} "
                    f"(every rank must build the sampler with the same {field}; ranks then read disjoint shares)"
                )
    return gathered


guard.__module__ = PUBLIC_MODULE
