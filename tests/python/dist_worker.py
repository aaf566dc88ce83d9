# Processes of the torch.distributed (gloo) tests: run scenarios in one process group, write what their DataLoaders yielded.
# SPDX-License-Identifier: MIT
import datetime
import functools
import json
import os
import sys
import traceback

import numpy as np

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

import distsampler
import mesh_samplers
from distsampler.mesh import mesh_world
from distsampler.torch import (DistributedBatchSampler, DistributedSampler, DistributedWeightedRandomSampler,
                               EmptyToNone, MixtureBatchSampler, PackedSequenceDataset, PackedSequenceSampler,
                               ShardedDataset, ShardStream, StreamDataset, TokenBatchSampler, collate_packed, guard)

TOKEN_N, TOKEN_BUDGET, TOKEN_WINDOW = 1003, 600, 100  # the last window of 3 samples gives empty micro-batches


def token_lengths():
    """Long-tailed token counts of the token scenarios' samples (1..300)."""
    rng = np.random.default_rng(7)
    return np.clip(rng.lognormal(3.5, 0.9, size=TOKEN_N), 1, 300).astype(np.uint32)


class Indices(Dataset):
    """Sample i is i, so a batch shows which indices it holds."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def as_list(batch):
    """Collates a micro-batch as a list: tail "uneven" may give an empty one, which default_collate rejects."""
    return batch


def indices_of(loader, limit=None):
    out = []
    for j, batch in enumerate(loader):
        out += [int(i) for i in batch]
        if limit is not None and j + 1 == limit:
            break  # before the loader asks its sampler for more
    return out


def train_on_token_batches(loader, accumulation, limit=None, group=None):
    """The documented training loop over a TokenBatchSampler's loader: an empty micro-batch
    (None) runs with its loss multiplied by 0, so every rank joins every step's collectives.
    Returns the micro-batches read (lists, [] for an empty one) and the per-rank micro-batch
    counts of every step, all-gathered."""
    model = torch.nn.Linear(1, 1)
    read, counts, in_step = [], [], 0
    for i, batch in enumerate(loader):
        if batch is None:
            loss = model(torch.zeros(1, 1)).sum() * 0
            read.append([])
        else:
            loss = model(batch.float().unsqueeze(1)).mean()
            read.append([int(x) for x in batch])
        loss.backward()
        in_step += 1
        if (i + 1) % accumulation == 0:
            for p in model.parameters():
                dist.all_reduce(p.grad, group=group)  # what DDP does: hangs unless every rank has this step
                p.grad = None
            gathered = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size(group))]
            dist.all_gather(gathered, torch.tensor([in_step]), group=group)
            counts.append([int(c) for c in gathered])
            in_step = 0
            if limit is not None and len(counts) == limit:
                break  # before the loader asks its sampler for more
    return read, counts
class Shifted(Indices):
    """Sample i is offset + i: in a ConcatDataset with offset = the samples before it, a sample is its global index."""

    def __init__(self, n, offset):
        super().__init__(n)
        self.offset = offset

    def __getitem__(self, i):
        return self.offset + i


MIX_SIZES = [300, 120, 45]
MIX_WEIGHTS = [0.5, 0.3, 0.2]


def mixture_scenario(rank):
    """The mixture and weighted samplers over torch.distributed: what this rank's DataLoaders yielded."""
    sources = [Shifted(n, sum(MIX_SIZES[:j])) for j, n in enumerate(MIX_SIZES)]
    data = torch.utils.data.ConcatDataset(sources)
    out = {}
    batches = MixtureBatchSampler(sources, MIX_WEIGHTS, 4, accumulation_steps=2, seed=11, end="all_seen")
    guard(batches)
    loader = DataLoader(data, batch_sampler=batches, num_workers=0, collate_fn=as_list)
    out["len"] = len(batches)
    out["batches"] = [[int(i) for i in b] for b in loader]
    weighted = DistributedWeightedRandomSampler([1.0, 2.0, 3.0, 4.0, 0.0, 10.0], 6000, seed=4)
    guard(weighted)
    out["weighted"] = indices_of(DataLoader(Indices(6), batch_size=50, sampler=weighted))

    # Processes {0, 1} and {2, 3} each train as a world of 2: stop after 5 micro-batches (the loader's
    # workers drew ahead), save, then a new sampler of another batch shape (same global batch) loads the
    # state from its JSON text and reads the rest.
    groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    group, pair_rank = groups[rank // 2], rank % 2
    shape = dict(seed=12, end="samples", end_count=232, num_replicas=2, rank=pair_rank)
    batches = MixtureBatchSampler(sources, MIX_WEIGHTS, 4, accumulation_steps=2, **shape)
    loader = DataLoader(data, batch_sampler=batches, num_workers=2, collate_fn=as_list)
    out["read"] = indices_of(loader, limit=5)
    out["state"] = batches.state_dict(batches=5)
    del loader, batches
    saved = [None, None]
    dist.all_gather_object(saved, out["state"], group=group)
    out["all_equal"] = saved[0] == saved[1]
    resumed = MixtureBatchSampler(sources, MIX_WEIGHTS, 8, global_batch_size=16, **shape)
    resumed.load_state_dict(json.loads(json.dumps(saved[0])))
    out["rest"] = indices_of(DataLoader(data, batch_sampler=resumed, num_workers=2, collate_fn=as_list))
    return out


def scenario_cover(rank, world, data, arg):
    result = {}
    sampler = DistributedSampler(data, seed=5)  # world from torch.distributed
    result["world"] = [sampler.rank, sampler.num_replicas]
    guard(sampler)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        loader = DataLoader(data, batch_size=16, sampler=sampler, num_workers=2)
        result[f"epoch{epoch}"] = indices_of(loader)
        result[f"padding{epoch}"] = [sampler.is_padding(i) for i in range(len(sampler))]
    return result


def scenario_guard(rank, world, data, arg):
    result = {}
    seed = 43 if rank == 2 else 42  # rank 2 made the shuffle(42 + rank) mistake
    sampler = DistributedSampler(data, seed=seed)
    try:
        guard(sampler)
        result["error"] = None
    except distsampler.ConfigError as e:
        result["error"] = str(e)
    cases = {
        "torch_error": torch.utils.data.distributed.DistributedSampler(data, seed=42, drop_last=rank == 1),
        "size_error": DistributedSampler(Indices(1000) if rank == 3 else data, seed=42),
        "world_error": DistributedSampler(data, num_replicas=3 if rank == 1 else 4, rank=rank, seed=42),
        "batch_error": DistributedBatchSampler(data, 4, accumulation_steps=2, seed=1),
        "shard_error": ShardStream([10, 20, 30], seed=3),
        "shard_seed_error": ShardStream([10, 20, 30], seed=3 + (rank == 3)),
    }
    for name, s in cases.items():
        try:
            guard(s)
            result[name] = None
        except distsampler.ConfigError as e:
            result[name] = str(e)
    return result


def guard_family_samplers(data, seed):
    """One sampler (or stream) of each of the eight families, built with `seed`, world from torch.distributed."""
    lengths = [3 + (i * 7919) % 198 for i in range(len(data))]
    return {
        "distributed": lambda: DistributedSampler(data, seed=seed),
        "batch": lambda: DistributedBatchSampler(data, 4, accumulation_steps=2, seed=seed),
        "shards": lambda: ShardStream([400, 3, 250, 350], seed=seed),
        "tokens": lambda: TokenBatchSampler(lengths, 512, seed=seed),
        "mixture": lambda: MixtureBatchSampler([Indices(300), Indices(200), Indices(100)], [0.5, 0.3, 0.2], 4,
                                               accumulation_steps=2, seed=seed, end="samples", end_count=480),
        "packing": lambda: PackedSequenceSampler(lengths, 128, 2, seed=seed),
        "weighted": lambda: DistributedWeightedRandomSampler([1.0 + i % 7 for i in range(50)], 777, seed=seed),
        "streams": lambda: StreamDataset([f"shard{i}.jsonl" for i in range(7)], micro_batch=2, seed=seed,
                                         byte_sizes=None),
    }


def scenario_guard_families(rank, world, data, arg):
    """guard over every family: all ranks alike (None), then rank 2 built with seed 43 (the error)."""
    result = {}
    for case, seed in (("alike", 42), ("seed", 43 if rank == 2 else 42)):
        for family, build in guard_family_samplers(data, seed).items():
            try:
                guard(build())
                result[f"{family} {case}"] = None
            except distsampler.ConfigError as e:
                result[f"{family} {case}"] = str(e)
    # Rank 2 built with other weights (the same seed): the families' guard layout differs.
    other = {
        "weighted": lambda w: DistributedWeightedRandomSampler(w, 777, seed=42),
        "mixture": lambda w: MixtureBatchSampler([Indices(300), Indices(200), Indices(100)], w[:3], 4,
                                                 accumulation_steps=2, seed=42, end="samples", end_count=480),
    }
    weights = [1.0 + i % 7 for i in range(50)]
    if rank == 2:
        weights[1] += 1.0
    for family, build in other.items():
        try:
            guard(build(weights))
            result[f"{family} weights"] = None
        except distsampler.ConfigError as e:
            result[f"{family} weights"] = str(e)
    return result


def scenario_save(rank, world, data, arg):
    # Every rank reads 5 batches, then the run stops; rank 0 saves the state.
    result = {}
    sampler = DistributedSampler(data, seed=8, tail="uneven")
    sampler.set_epoch(3)
    loader = DataLoader(data, batch_size=10, sampler=sampler, num_workers=2)
    result["read"] = indices_of(loader, limit=5)
    result["state"] = sampler.state_dict(samples=5 * 10)
    saved = [None] * world
    dist.all_gather_object(saved, result["state"])
    result["all_equal"] = all(s == saved[0] for s in saved)
    return result


def scenario_resume(rank, world, data, state_path):
    with open(state_path) as f:
        state = json.load(f)
    sampler = DistributedSampler(data, seed=8, tail="uneven")
    sampler.load_state_dict(state)
    sampler.set_epoch(3)
    loader = DataLoader(data, batch_size=10, sampler=sampler, num_workers=2)
    return {"read": indices_of(loader)}


def scenario_batch_save(rank, world, data, arg):
    batches = DistributedBatchSampler(data, 4, accumulation_steps=2, seed=2, tail="uneven")
    loader = DataLoader(data, batch_sampler=batches, num_workers=0, collate_fn=as_list)
    return {"read": indices_of(loader, limit=7), "state": batches.state_dict(batches=7)}


def scenario_batch_resume(rank, world, data, state_path):
    with open(state_path) as f:
        state = json.load(f)
    batches = DistributedBatchSampler(data, 3, global_batch_size=12, seed=2, tail="uneven")
    batches.load_state_dict(state)
    loader = DataLoader(data, batch_sampler=batches, num_workers=2, collate_fn=as_list)
    return {"read": indices_of(loader)}


def scenario_tokens(rank, world, data, state_path):
    result = {}
    lengths = token_lengths()
    data = Indices(TOKEN_N)
    sampler = TokenBatchSampler(lengths, TOKEN_BUDGET, accumulation_steps=2, window=TOKEN_WINDOW, seed=5)
    guard(sampler)
    result["len"] = len(sampler)
    result["empty_total"] = sampler.stats["empty_micro_batches"]
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=EmptyToNone())
    result["epoch0"], result["counts0"] = train_on_token_batches(loader, 2)
    other = TokenBatchSampler(lengths, TOKEN_BUDGET + (rank == 3), accumulation_steps=2, window=TOKEN_WINDOW, seed=5)
    try:
        guard(other)
        result["budget_error"] = None
    except distsampler.ConfigError as e:
        result["budget_error"] = str(e)
    # Epoch 1: stop after 5 steps and save (the workers drew ahead: name what was delivered).
    sampler.set_epoch(1)
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=EmptyToNone(), num_workers=2)
    result["saved_read"], result["saved_counts"] = train_on_token_batches(loader, 2, limit=5)
    result["state"] = sampler.state_dict(batches=len(result["saved_read"]))
    saved = [None] * world
    dist.all_gather_object(saved, result["state"])
    result["all_equal"] = all(x == saved[0] for x in saved)
    if rank == 0:
        with open(state_path, "w") as f:
            json.dump(result["state"], f)
    dist.barrier()
    # The job restarts on 2 processes (ranks 0 and 1 in a group of their own), accumulation 3.
    pair = dist.new_group([0, 1])
    if rank < 2:
        with open(state_path) as f:
            state = json.load(f)
        resumed = TokenBatchSampler(lengths, TOKEN_BUDGET, 2, rank, accumulation_steps=3, window=TOKEN_WINDOW, seed=5)
        resumed.load_state_dict(state)
        resumed.set_epoch(1)
        result["resumed_len"] = len(resumed)
        loader = DataLoader(data, batch_sampler=resumed, collate_fn=EmptyToNone(), num_workers=2)
        result["resumed_read"], result["resumed_counts"] = train_on_token_batches(loader, 3, group=pair)
    return result


PACK_N, PACK_L = 700, 64


def pack_lengths():
    """Long-tailed document lengths of the packing scenario (0..400 tokens, some over PACK_L)."""
    rng = np.random.default_rng(11)
    return np.clip(rng.lognormal(3.2, 1.0, size=PACK_N), 0, 400).astype(np.uint32)


def read_packed(loader, offsets, limit=None, group=None):
    """The micro-batches (pieces) a packed loader delivered, each rank's micro-batch counts per step
    (all-gathered), and whether every input_ids row holds exactly its pieces' tokens."""
    read, counts, ok, in_step = [], [], True, 0
    world = dist.get_world_size(group)
    for j, batch in enumerate(loader):
        read.append([list(map(list, seq)) for seq in batch["pieces"]])
        for row, seq in enumerate(batch["pieces"]):
            ids = [int(offsets[d]) + o + i for d, o, n in seq for i in range(n)]
            ok = ok and batch["input_ids"][row, :len(ids)].tolist() == ids
        in_step += 1
        if in_step == 2:
            gathered = [None] * world
            dist.all_gather_object(gathered, in_step, group=group)
            counts.append(gathered)
            in_step = 0
        if limit is not None and j + 1 == limit:
            break
    return read, counts, ok


def scenario_packing(rank, world, data, state_path):
    result = {}
    lengths = pack_lengths()
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    dataset = PackedSequenceDataset(np.arange(int(lengths.sum()), dtype=np.int64), offsets)
    collate = functools.partial(collate_packed, seq_len=PACK_L)
    sampler = PackedSequenceSampler(lengths, PACK_L, 2, accumulation_steps=2, mode="best-fit", window=128, seed=5)
    guard(sampler)
    result["len"] = len(sampler)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=2)
    result["epoch0"], result["counts"], result["ids_match"] = read_packed(loader, offsets)
    other = PackedSequenceSampler(lengths, PACK_L + (rank == 3), 2, accumulation_steps=2, mode="best-fit",
                                  window=128, seed=5)
    try:
        guard(other)
        result["guard_error"] = None
    except distsampler.ConfigError as e:
        result["guard_error"] = str(e)
    sampler.set_epoch(1)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=2)
    result["saved_read"], _, _ = read_packed(loader, offsets, limit=6)
    state = sampler.state_dict(batches=len(result["saved_read"]))
    if rank == 0:
        with open(state_path, "w") as f:
            json.dump(state, f)
    dist.barrier()
    pair = dist.new_group([0, 1])
    if rank < 2:
        with open(state_path) as f:
            state = json.load(f)
        resumed = PackedSequenceSampler(lengths, PACK_L, 3, 2, rank, accumulation_steps=1, mode="best-fit",
                                        window=128, seed=5)
        resumed.load_state_dict(state)
        loader = DataLoader(dataset, batch_sampler=resumed, collate_fn=collate, num_workers=2)
        result["resumed_read"] = [[list(map(list, seq)) for seq in b["pieces"]] for b in loader]
    return result


def scenario_mixture(rank, world, data, arg):
    return mixture_scenario(rank)


def guard_outcome(sampler, world):
    """None when the mesh guard passes, else its ConfigError message."""
    try:
        guard(sampler, mesh=world)
        return None
    except distsampler.ConfigError as e:
        return str(e)


def mesh_scenario(rank, spec):
    """Eight processes as the global ranks of `spec`: the mesh guard on correct samplers of three families
    and on one broken run per failure it catches."""
    world = mesh_world(spec)  # the global rank from torch.distributed
    data = Indices(1001)
    plain = lambda w, seed=42: DistributedSampler(data, w.num_replicas, w.rank, seed=seed)  # noqa: E731
    out = {"world": [world.rank, world.world_size], "ok": guard_outcome(plain(world), world)}
    out["batch_ok"] = guard_outcome(DistributedBatchSampler(data, 5, world.num_replicas, world.rank, seed=42), world)
    out["tokens_ok"] = guard_outcome(TokenBatchSampler([1 + i * 7 % 50 for i in range(300)], 128, world.num_replicas,
                                                       world.rank, seed=42), world)
    out["seed"] = guard_outcome(plain(world, 43 if rank == 5 else 42), world)
    out["global_rank"] = guard_outcome(DistributedSampler(data, 8, rank, seed=42), world)
    resumed = plain(world)
    if rank == 3:  # one rank of a tp group resumed from another checkpoint: the same key, other reads
        resumed.load_state_dict(plain(world).state_dict(10))
    out["reads"] = guard_outcome(resumed, world)
    out["data_seed"] = guard_outcome(plain(world, 43 if world.rank == 1 else 42), world)
    shifted = mesh_samplers.DistributedSampler if rank == 5 else DistributedSampler  # the same key, other reads
    out["shifted"] = guard_outcome(shifted(data, world.num_replicas, world.rank, seed=42), world)
    source = 0 if world.rank == 1 else world.rank  # data rank 1 reads data rank 0's share under its own rank
    out["claimed"] = guard_outcome(mesh_samplers.Claimed(data, world.num_replicas, world.rank, source, 42), world)
    out["size"] = guard_outcome(plain(world), mesh_world("dp=4", rank=0, world_size=4))
    if "pp" in spec:
        out["pp_seed"] = guard_outcome(plain(world, 43 if rank >= 4 else 42), world)
    return out


def scenario_mesh_dp_tp(rank, world, data, arg):
    return mesh_scenario(rank, "dp=4,tp=2")


def scenario_mesh_pp_dp_tp(rank, world, data, arg):
    return mesh_scenario(rank, "pp=2,dp=2,tp=2")


def scenario_mesh_sharded(rank, world, data, arg):
    """Four processes as mesh dp=2,tp=2 reading the JSON Lines shards in folder `arg` through ShardedDataset,
    guarded as a user would: guard(dataset, mesh=world) (it checks the dataset's ShardStream, never a record)."""
    spec = "dp=2,tp=2"
    w = mesh_world(spec)
    paths = sorted(os.path.join(arg, f) for f in os.listdir(arg) if f.endswith(".jsonl"))

    def make(seed=42, num_replicas=w.num_replicas, r=w.rank):
        return ShardedDataset(paths, num_replicas=num_replicas, rank=r, seed=seed, cache=False)

    ds = make()
    out = {"world": [w.rank, w.world_size], "ok": guard_outcome(ds, w)}
    out["records"] = sorted(item.record["id"] for item in ds if not item.is_padding)
    out["seed"] = guard_outcome(make(43 if rank == 3 else 42), w)
    out["global_rank"] = guard_outcome(make(num_replicas=4, r=rank), w)
    out["stream_ok"] = guard_outcome(make().stream, w)
    return out


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}


def main():
    """dist_worker.py PORT RANK WORLD OUT_DIR SCENARIO[=ARG]...: joins one gloo process group and runs the
    scenarios in order (process start-up and importing torch cost more than most scenarios), writing
    OUT_DIR/SCENARIO-RANK.json for each: its result, or {"failure": traceback} when it raised."""
    port, rank, world, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        for spec in sys.argv[5:]:
            name, _, arg = spec.partition("=")
            try:
                result = {"rank": rank, **SCENARIOS[name](rank, world, Indices(1001), arg)}
            except Exception:  # recorded: the test of this scenario fails with it, the others still run
                result = {"rank": rank, "failure": traceback.format_exc()}
            with open(os.path.join(out_dir, f"{name}-{rank}.json"), "w") as f:
                json.dump(result, f)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
