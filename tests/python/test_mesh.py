# Tests of distsampler.mesh: data ranks of parallel meshes (named sizes, a DeviceMesh stand-in) and every family reading by them.
# SPDX-License-Identifier: MIT
import itertools
import json
import random

import pytest
import torch

from distsampler import ConfigError
from distsampler.mesh import DataWorld, Mesh, mesh_world, world_from_device_mesh
from distsampler.torch import (DistributedBatchSampler, DistributedSampler, DistributedWeightedRandomSampler,
                               MixtureBatchSampler, ShardStream, TokenBatchSampler)

NAMES = ["pp", "dp", "dp_replicate", "dp_shard", "ep", "cp", "tp"]
DATA_NAMES = ("dp", "dp_replicate", "dp_shard")


def random_mesh(rng):
    """A dict of 1..4 named dims (at most 24 ranks) and its data dims (by name, or an explicit subset)."""
    names = rng.sample(NAMES, rng.randint(1, 4))
    dims, total = {}, 1
    for name in names:
        size = rng.randint(1, 3)
        while total * size > 24:
            size -= 1
        dims[name] = size
        total *= size
    by_name = [n for n in names if n in DATA_NAMES]
    if by_name and rng.random() < 0.75:
        return dims, None, by_name
    chosen = [n for n in names if rng.random() < 0.5] or [rng.choice(names)]
    return dims, chosen, chosen


def counted_layout(dims, data):
    """Coordinates by itertools.product (last dim fastest) and data ranks numbered in first-seen order."""
    names = list(dims)
    coords = list(itertools.product(*(range(dims[n]) for n in names)))
    numbers, data_rank = {}, []
    for c in coords:
        key = tuple(v for n, v in zip(names, c) if n in data)
        data_rank.append(numbers.setdefault(key, len(numbers)))
    return coords, data_rank, len(numbers)


def test_mesh_world_is_row_major_over_random_meshes():
    rng = random.Random(20261201)
    for _ in range(200):
        dims, given, data = random_mesh(rng)
        coords, data_rank, data_world = counted_layout(dims, data)
        for g in range(len(coords)):
            w = mesh_world(dims, given, rank=g, world_size=len(coords))
            assert (w.rank, w.world_size, w.num_replicas, w.global_rank) == (data_rank[g], data_world, data_world, g)
            assert w.mesh.coordinates(g) == list(coords[g])
            assert w.mesh.data_dims == [n for n in dims if n in data]


def test_usual_meshes_and_their_spellings():
    # Megatron tp-cp-ep-dp-pp is pp, dp, ep, cp, tp outermost first: rank 6 is pp 1, dp 1.
    assert mesh_world("pp=2,dp=2,ep=1,cp=1,tp=2", rank=6, world_size=8)[:4] == (1, 2, 0, 1)
    assert mesh_world([("dp_replicate", 2), ("dp_shard", 2), ("tp", 2)], rank=7, world_size=8).rank == 3
    assert mesh_world({"pp": 2, "dp": 2, "ep": 2, "tp": 2}, "dp,ep", rank=13, world_size=16)[:2] == (2, 4)
    assert mesh_world({"pp": 2, "dp": 2, "ep": 2, "tp": 2}, ["dp", "ep"], rank=13, world_size=16)[:2] == (2, 4)
    assert mesh_world(Mesh.parse("dp=4,tp=2"), rank=5, world_size=8)[:2] == (2, 4)
    w = mesh_world({"dp": 4, "tp": 2}, rank=5, world_size=8, local_rank=1, local_world_size=4)
    assert (w.local_rank, w.local_world_size) == (0, 2)  # data ranks 2 and 3 share the node of global ranks 4..7
    assert str(w.mesh) == "dp=4,tp=2" and repr(w.mesh) == 'Mesh("dp=4,tp=2", data_dims="dp")'


def test_mesh_world_reads_the_launcher_when_no_rank_is_given(monkeypatch):
    for k, v in {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}.items():
        monkeypatch.setenv(k, v)
    assert mesh_world({"dp": 4, "tp": 2}) == DataWorld(2, 4, 0, 2, 5, Mesh.parse("dp=4,tp=2"))
    monkeypatch.setenv("WORLD_SIZE", "6")
    with pytest.raises(ConfigError, match=r"^mesh_world: mesh dp=4,tp=2 has 8 ranks but world_size is 6 \(expected "
                                          r"the product of the dims\)$"):
        mesh_world({"dp": 4, "tp": 2})
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(k)
    with pytest.raises(ConfigError, match=r"^mesh_world: rank=None, world_size=None and neither torch.distributed "
                                          r"nor a launcher .* \(expected rank= and world_size=\)$"):
        mesh_world({"dp": 4, "tp": 2})


@pytest.mark.parametrize("call, message", [
    (lambda: mesh_world({"pp": 2, "dp": 2, "tp": 2}, rank=0, world_size=6),
     "mesh_world: mesh pp=2,dp=2,tp=2 has 8 ranks but world_size is 6 (expected the product of the dims)"),
    (lambda: mesh_world({"dp": 4, "tp": 2}, rank=8, world_size=8),
     "mesh_world: rank 8 is out of range for world_size 8 (expected 0..7)"),
    (lambda: mesh_world({"dp": 0, "tp": 2}, rank=0, world_size=2),
     "mesh_world: mesh={'dp': 0, 'tp': 2}: mesh dp=0,tp=2 has dim dp of size 0 (expected at least 1)"),
    (lambda: mesh_world([("dp", 2), ("dp", 2)], rank=0, world_size=4),
     "mesh_world: mesh=[('dp', 2), ('dp', 2)]: mesh dp=2,dp=2 has dim dp twice (expected each name once)"),
    (lambda: mesh_world("pp=2,tp=4", rank=0, world_size=8),
     "mesh_world: mesh='pp=2,tp=4': mesh pp=2,tp=4 has no data dim (expected a dim named dp, dp_replicate or "
     "dp_shard, or the data dims named explicitly)"),
    (lambda: mesh_world("pp=2,dp=2,tp=2", ["dp", "ep"], rank=0, world_size=8),
     "mesh_world: data_dims=['dp', 'ep']: data dim \"ep\" is not a dim of mesh pp=2,dp=2,tp=2 (expected one of "
     "pp,dp,tp)"),
    (lambda: mesh_world("pp=2,dp=2,tp=2", "dp,dp", rank=0, world_size=8),
     "mesh_world: data_dims='dp,dp': data dims dp,dp name dp twice (expected each data dim once)"),
    (lambda: mesh_world("pp=2,dp=2,ep=2", "ep,dp", rank=0, world_size=8),
     "mesh_world: data_dims='ep,dp': data dims ep,dp are not in the order of mesh pp=2,dp=2,ep=2 (expected dp,ep, "
     "outermost first)"),
    (lambda: mesh_world("dp=2,tp", rank=0, world_size=2),
     "mesh_world: mesh='dp=2,tp': mesh \"dp=2,tp\" has entry \"tp\" without a size (expected NAME=SIZE,...)"),
    (lambda: mesh_world({"dp": -2}, rank=0, world_size=2),
     "mesh_world: mesh={'dp': -2} has dim 'dp' of size -2 (expected a str name and an int size >= 1)"),
    (lambda: mesh_world(42, rank=0, world_size=2),
     "mesh_world: mesh=42 is not a mesh (expected a dict of name: size, a list of (name, size) pairs, a "
     "'NAME=SIZE,...' string or a DeviceMesh)"),
    (lambda: mesh_world({"dp": 2}, [], rank=0, world_size=2),
     "mesh_world: data_dims=[] (expected dim names of the mesh, e.g. ['dp'] or 'dp,ep')"),
    (lambda: mesh_world(Mesh.parse("dp=2"), "dp", rank=0, world_size=2),
     "mesh_world: data_dims='dp' given with a Mesh, which names its data dims (dp) (expected data_dims=None)"),
    (lambda: mesh_world({"dp": 2}, rank=-1, world_size=2), "mesh_world: rank=-1 (expected an int >= 0)"),
    (lambda: mesh_world({"dp": 2}, rank=0, world_size=2, local_rank=0),
     "mesh_world: local_rank=0, local_world_size=None (expected both or neither)"),
])
def test_bad_meshes_raise_config_error_naming_the_argument(call, message):
    with pytest.raises(ConfigError) as e:
        call()
    assert str(e.value) == message


class StandInDeviceMesh:
    """What the samplers' code reads of torch's DeviceMesh (torch >= 2.2; not in this torch): the ``mesh``
    tensor of global ranks, ``mesh_dim_names``, ``size(mesh_dim)``, ``get_coordinate()`` (None when this
    rank is not in the mesh), ``get_rank()``."""

    def __init__(self, mesh, mesh_dim_names, rank):
        self.mesh, self.mesh_dim_names, self._rank = torch.as_tensor(mesh, dtype=torch.int), mesh_dim_names, rank

    @property
    def ndim(self):
        return self.mesh.ndim

    def size(self, mesh_dim=None):
        return self.mesh.numel() if mesh_dim is None else self.mesh.size(mesh_dim)

    def get_rank(self):
        return self._rank

    def get_coordinate(self):
        found = (self.mesh == self._rank).nonzero().tolist()
        return found[0] if found else None

    def __repr__(self):
        return f"DeviceMesh({self.mesh.tolist()})"


def test_world_from_a_device_mesh_follows_its_coordinates():
    arange = torch.arange(8).view(2, 2, 2)
    for g in range(8):
        w = world_from_device_mesh(StandInDeviceMesh(arange, ("pp", "dp", "tp"), g))
        assert (w.rank, w.world_size, w.global_rank) == ((g // 2) % 2, 2, g)
        assert mesh_world(StandInDeviceMesh(arange, ("pp", "dp", "tp"), g)) == w
    # A mesh tensor in another rank order: the coordinates decide, not the global rank.
    swapped = [[0, 2, 4, 6], [1, 3, 5, 7]]  # (dp=2, tp=4): global rank 2 sits at dp 0, tp 1
    w = world_from_device_mesh(StandInDeviceMesh(swapped, ("dp", "tp"), 2))
    assert (w.rank, w.world_size, w.local_rank, w.local_world_size, w.global_rank) == (0, 2, 0, 1, 2)
    assert world_from_device_mesh(StandInDeviceMesh(swapped, ("dp", "tp"), 3)).rank == 1
    assert world_from_device_mesh(StandInDeviceMesh(swapped, ("dp", "tp"), 3), ["tp"])[:2] == (1, 4)


def test_device_mesh_errors_name_the_mesh():
    with pytest.raises(ConfigError) as e:
        world_from_device_mesh(StandInDeviceMesh([[0, 1], [2, 3]], None, 0))
    assert str(e.value) == ("world_from_device_mesh: device_mesh=DeviceMesh([[0, 1], [2, 3]]) has no mesh_dim_names "
                            "(expected named dims, e.g. init_device_mesh('cuda', (4, 2), mesh_dim_names=('dp', "
                            "'tp')))")
    with pytest.raises(ConfigError) as e:
        world_from_device_mesh(StandInDeviceMesh([[0, 1], [2, 3]], ("dp", "tp"), 7))
    assert str(e.value) == ("world_from_device_mesh: this process is not in device_mesh=DeviceMesh([[0, 1], [2, 3]]) "
                            "(expected the mesh of every rank that reads data, not a submesh of other ranks)")
    with pytest.raises(ConfigError) as e:
        world_from_device_mesh(StandInDeviceMesh([[0, 1], [2, 3]], ("pp", "tp"), 0))
    assert str(e.value).startswith("world_from_device_mesh: mesh=[('pp', 2), ('tp', 2)]: mesh pp=2,tp=2 has no data dim")
    with pytest.raises(ConfigError) as e:
        mesh_world(StandInDeviceMesh([[0, 1], [2, 3]], ("dp", "tp"), 0), rank=0)
    assert str(e.value) == ("mesh_world: rank=0, world_size=None given with a DeviceMesh, which knows this rank's "
                            "place (expected rank=None, world_size=None)")


class InconsistentDeviceMesh(StandInDeviceMesh):
    """A stand-in whose size(dim) says `sizes`, whatever its tensor holds."""

    def __init__(self, mesh, mesh_dim_names, rank, sizes):
        super().__init__(mesh, mesh_dim_names, rank)
        self._sizes = sizes

    def size(self, mesh_dim=None):
        return self._sizes[mesh_dim]


def test_device_mesh_tensors_that_disagree_with_their_names_and_sizes_are_refused():
    cases = [
        (StandInDeviceMesh([[0, 1], [1, 3]], ("dp", "tp"), 0),
         "world_from_device_mesh: device_mesh.mesh holds rank 1 twice (expected each global rank once)"),
        (InconsistentDeviceMesh([[0, 1, 2, 3], [4, 5, 6, 7]], ("dp", "tp"), 0, (4, 2)),
         "world_from_device_mesh: device_mesh.mesh has shape (2, 4) but its dims have sizes (4, 2) (expected the "
         "same)"),
        (StandInDeviceMesh([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], ("dp", "tp"), 0),
         "world_from_device_mesh: device_mesh has 2 mesh_dim_names ('dp', 'tp') for a 3-d mesh tensor (expected one "
         "name per dim)"),
    ]
    for device_mesh, message in cases:
        with pytest.raises(ConfigError) as e:
            world_from_device_mesh(device_mesh)
        assert str(e.value) == message


@pytest.mark.parametrize("size", [1 << 64, 1 << 70])
def test_a_mesh_dim_beyond_64_bits_is_refused_by_name(size):
    with pytest.raises(ConfigError) as e:
        mesh_world({"dp": size}, rank=0, world_size=2)
    assert str(e.value) == (f"mesh_world: mesh={{'dp': {size}}} has dim 'dp' of size {size} (expected a str name and "
                            "an int size >= 1)")


def flat(items):
    out = []
    for x in items:
        if hasattr(x, "_fields"):
            if not x.is_padding:
                out.append(int(x.index))
        elif isinstance(x, (list, tuple)):
            out += [int(i) for i in x]
        else:
            out.append(int(x))
    return out


def exact_cover(n):
    def check(per_data, data_world):
        assert sorted(i for r in per_data for i in r) == list(range(n))  # disjoint and covering
    return check


def mixture_cover(per_data, data_world):
    # The same global batch (2 x DW) on one rank reads the same positions of the mixture's stream.
    single = flat(MixtureBatchSampler([40, 60], [0.5, 0.5], 2 * data_world, 1, 0, seed=3))
    together = sorted(i for r in per_data for i in r)
    assert together == sorted(single) and len(set(together)) == len(together) > 0


def weighted_cover(per_data, data_world):
    # Data rank d reads draws d, d + DW, ... of the single-process epoch.
    single = flat(DistributedWeightedRandomSampler([1, 2, 3, 4], 48, True, 1, 0, seed=3, tail="drop"))
    assert per_data == [single[d::data_world] for d in range(data_world)]


FAMILIES = {
    "DistributedSampler": (lambda w: DistributedSampler(range(101), w.num_replicas, w.rank, seed=3, tail="uneven"),
                           exact_cover(101)),
    "DistributedBatchSampler": (lambda w: DistributedBatchSampler(range(96), 4, w.num_replicas, w.rank, seed=3),
                                exact_cover(96)),
    "ShardStream": (lambda w: ShardStream([30, 1, 20, 45], w.num_replicas, w.rank, seed=3), exact_cover(96)),
    "TokenBatchSampler": (lambda w: TokenBatchSampler([1 + i * 7 % 30 for i in range(90)], 64, w.num_replicas,
                                                      w.rank, seed=3), exact_cover(90)),
    "MixtureBatchSampler": (lambda w: MixtureBatchSampler([40, 60], [0.5, 0.5], 2, w.num_replicas, w.rank, seed=3),
                            mixture_cover),
    "DistributedWeightedRandomSampler": (lambda w: DistributedWeightedRandomSampler([1, 2, 3, 4], 48, True,
                                                                                    w.num_replicas, w.rank, seed=3,
                                                                                    tail="drop"), weighted_cover),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_takes_the_data_world_and_model_parallel_ranks_read_the_same(family):
    make, cover = FAMILIES[family]
    for dims in ({"dp": 4, "tp": 2}, {"pp": 2, "dp": 2, "tp": 2}, {"dp_replicate": 2, "dp_shard": 2, "cp": 2}):
        coords, data_rank, data_world = counted_layout(dims, DATA_NAMES)
        reads = [flat(make(mesh_world(dims, rank=g, world_size=len(coords)))) for g in range(len(coords))]
        first = {}
        for g, d in enumerate(data_rank):
            assert reads[g] == reads[first.setdefault(d, g)], (family, dims, g)
        cover([reads[first[d]] for d in range(data_world)], data_world)


@pytest.mark.parametrize("scenario, spec", [("mesh_dp_tp", "dp=4,tp=2"), ("mesh_pp_dp_tp", "pp=2,dp=2,tp=2")])
def test_mesh_guard_on_eight_gloo_processes_names_the_group(gloo8, scenario, spec):
    results = gloo8.results(scenario)
    dims = dict(d.split("=") for d in spec.split(","))
    data_world = int(dims["dp"])
    same = "; expected the same samples on every rank of the group)"
    for g, r in enumerate(results):
        assert r["world"] == [mesh_world(spec, rank=g, world_size=8).rank, data_world]
        assert r["world"][0] == (g // 2) % data_world  # dp is the middle (or first) dim, tp the last
        assert r["ok"] is None and r["batch_ok"] is None and r["tokens_ok"] is None
        assert r["seed"] == "guard: tp group of ranks 4,5: rank 5 reads other samples (seed 43, rank 4 has 42" + same
        assert r["global_rank"] == (f"guard: rank 0 ({' '.join(f'{k} 0' for k in dims)}) built its sampler as rank 0 "
                                    f"of 8 (expected data rank 0 of {data_world} of mesh {spec}, data dims dp)")
        # Rank 3 resumed from a state of 10 samples per rank: the key's consumed names it.
        assert r["reads"] == (f"guard: tp group of ranks 2,3: rank 3 reads other samples (consumed {10 * data_world}, "
                              "rank 2 has 0" + same)
        per_rank = -(-1001 // data_world)  # what each rank yields, padding included
        assert r["shifted"] == (f"guard: tp group of ranks 4,5: rank 5 reads other samples (the same key, but its "
                                f"reads differ from rank 4's: {per_rank} reads, rank 4 has {per_rank}" + same)
        # Data rank 1 reads data rank 0's share: 1002 reads of 1001 (one slot of data rank 1 was padding).
        padding = {4: 2, 2: 0}[data_world]
        assert r["claimed"] == (f"guard: mesh {spec} (data dims dp): overlap: 1 extra reads (1002 reads of 1001 "
                                f"expected, {padding} padding); expected the data ranks to read disjoint shares that "
                                "cover the dataset (is a sampler built for another data rank than it reports?)")
        assert r["data_seed"] == (f"guard: data rank 1 (rank 2) has seed 43, rank 0 has 42 (expected the same on "
                                  f"every rank of mesh {spec})")
        assert r["size"] == ("guard: mesh dp=4 has 4 ranks but the process group has 8 processes (expected the "
                             "product of the dims)")
        if "pp" in dims:
            assert r["pp_seed"] == "guard: pp group of ranks 0,4: rank 4 reads other samples (seed 43, rank 0 has 42" + same


@pytest.fixture(scope="module")
def gloo4_sharded(tmp_path_factory):
    """Four processes as mesh dp=2,tp=2 over three JSON Lines shards of {"id": k} records (23 in all)."""
    from conftest import Job

    folder = tmp_path_factory.mktemp("mesh_sharded")
    k = 0
    for s, n in enumerate((9, 6, 8)):
        with open(folder / f"part-{s}.jsonl", "w") as f:
            for _ in range(n):
                f.write(json.dumps({"id": k, "text": "x" * k}) + "\n")
                k += 1
    return Job(folder, 4, [f"mesh_sharded={folder}"])


@pytest.mark.processes
def test_mesh_guard_takes_a_sharded_dataset_and_checks_its_stream(gloo4_sharded):
    results = gloo4_sharded.results("mesh_sharded")
    same = "; expected the same samples on every rank of the group)"
    for g, r in enumerate(results):
        assert r["world"] == [g // 2, 2]
        assert r["ok"] is None and r["stream_ok"] is None
        assert r["seed"] == "guard: tp group of ranks 2,3: rank 3 reads other samples (seed 43, rank 2 has 42" + same
        assert r["global_rank"] == ("guard: rank 0 (dp 0 tp 0) built its sampler as rank 0 of 4 (expected data rank 0 "
                                    "of 2 of mesh dp=2,tp=2, data dims dp)")
    # The tp pairs read the same records, the two data ranks all 23 between them.
    assert results[0]["records"] == results[1]["records"] and results[2]["records"] == results[3]["records"]
    assert sorted(results[0]["records"] + results[2]["records"]) == list(range(23))
