# distsampler.mesh: the data-parallel rank and world of a parallel mesh (named sizes, or a torch DeviceMesh).
# SPDX-License-Identifier: MIT
"""The data-parallel World of a job that also splits its model (tensor, context, pipeline or
expert parallelism): neither ``RANK`` nor ``dist.get_rank()`` is the rank a sampler needs.

A mesh lists named dims outermost first, laid out row-major as torch's ``DeviceMesh`` (the
last dim varies fastest): ``{"pp": 2, "dp": 2, "tp": 2}``, ``[("dp", 4), ("tp", 2)]`` or
``"pp=2,dp=2,tp=2"``. Megatron's ``tp-cp-ep-dp-pp`` order is ``pp, dp, ep, cp, tp`` here.
The data dims are those named ``dp``, ``dp_replicate`` or ``dp_shard`` unless ``data_dims``
names them (in the mesh's order); the data rank is the row-major index of a rank's
coordinates over them, the data world their product. Every rank of one tensor-, context- or
pipeline-parallel group gets the same data rank, so it reads the same samples::

    world = mesh_world({"pp": 2, "dp": 4, "tp": 2})     # the rank from torch.distributed
    sampler = DistributedSampler(dataset, num_replicas=world.num_replicas, rank=world.rank)

The computation is the C++ library's (``World::from_mesh``). Errors raise ``ConfigError``
naming the argument (``mesh=`` or ``data_dims=``) and the mesh.
"""
import copy
from typing import NamedTuple

from . import _core
from ._core import ConfigError, Mesh

__all__ = ["DataWorld", "Mesh", "mesh_world", "world_from_device_mesh"]


class DataWorld(NamedTuple):
    """The data-parallel World of one process: ``rank`` of ``world_size`` (``num_replicas``) is
    what its samplers take. ``local_rank`` / ``local_world_size`` count the data ranks on this
    node when the launcher places ranks in blocks per node and they form aligned blocks there
    (else 0 of 1); ``global_rank`` is the process's rank in the job; ``mesh`` the Mesh."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    global_rank: int
    mesh: Mesh

    @property
    def num_replicas(self):
        """``world_size``, under the name torch's samplers take it."""
        return self.world_size


def _cut(message):
    for prefix in ("Mesh::parse: ", "Mesh: "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message


def _dims(who, mesh):
    if isinstance(mesh, str):
        try:
            return Mesh.parse_dims(mesh)
        except ConfigError as e:
            raise ConfigError(f"{who}: mesh={mesh!r}: {_cut(str(e))}") from None
    items = list(mesh.items()) if isinstance(mesh, dict) else mesh
    try:
        pairs = [(name, size) for name, size in items]
    except (TypeError, ValueError):
        raise ConfigError(f"{who}: mesh={mesh!r} is not a mesh (expected a dict of name: size, a list of "
                          "(name, size) pairs, a 'NAME=SIZE,...' string or a DeviceMesh)") from None
    for name, size in pairs:
        if not isinstance(name, str) or isinstance(size, bool) or not isinstance(size, int) or not 0 <= size < 1 << 64:
            raise ConfigError(f"{who}: mesh={mesh!r} has dim {name!r} of size {size!r} (expected a str name and "
                              "an int size >= 1)")
    return pairs


def _make_mesh(who, mesh, data_dims):
    if isinstance(mesh, Mesh):
        if data_dims is not None:
            raise ConfigError(f"{who}: data_dims={data_dims!r} given with a Mesh, which names its data dims "
                              f"({','.join(mesh.data_dims)}) (expected data_dims=None)")
        return mesh
    pairs = _dims(who, mesh)
    if data_dims is None:
        try:
            return Mesh(pairs)
        except ConfigError as e:
            raise ConfigError(f"{who}: mesh={mesh!r}: {_cut(str(e))}") from None
    names = data_dims.split(",") if isinstance(data_dims, str) else list(data_dims)
    try:
        Mesh(pairs, [name for name, _ in pairs])  # the dims alone first, so their errors name mesh=
    except ConfigError as e:
        raise ConfigError(f"{who}: mesh={mesh!r}: {_cut(str(e))}") from None
    if not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{who}: data_dims={data_dims!r} (expected dim names of the mesh, e.g. ['dp'] or 'dp,ep')")
    try:
        return Mesh(pairs, names)
    except ConfigError as e:
        raise ConfigError(f"{who}: data_dims={data_dims!r}: {_cut(str(e))}") from None


def _data_world(who, mesh, position, size, local_rank, local_world_size, global_rank):
    try:
        r, w, lr, lw = _core.world_from_mesh(mesh, position, size, local_rank, local_world_size)
    except ConfigError as e:
        raise ConfigError(str(e).replace("World::from_mesh", who, 1)) from None
    return DataWorld(r, w, lr, lw, global_rank, mesh)


def _launcher_locality(rank, world_size):
    env = _core.world_from_env()
    if env is not None and env[0] == rank and env[1] == world_size:
        return env[2], env[3]
    return 0, 1


def mesh_world(mesh, data_dims=None, *, rank=None, world_size=None, local_rank=None, local_world_size=None):
    """The DataWorld of global rank ``rank`` of ``world_size`` in ``mesh``.

    ``mesh``: a dict ``{name: size}`` (outermost first), a list of ``(name, size)``, a
    ``"NAME=SIZE,..."`` string, a ``Mesh``, or a DeviceMesh (then see
    ``world_from_device_mesh``; rank and world_size are the mesh's own). ``rank`` and
    ``world_size`` default to ``torch.distributed``'s when it is initialized, else to the
    launcher's environment (``RANK``/``WORLD_SIZE``, Open MPI, PMI, SLURM); locality to the
    launcher's when it describes this rank. Raises ``ConfigError`` for a bad mesh or data
    dims (naming ``mesh=`` or ``data_dims=``), a mesh whose product is not ``world_size``, a
    rank out of range, or no rank to be found.
    """
    who = "mesh_world"
    if hasattr(mesh, "get_coordinate") and hasattr(mesh, "mesh_dim_names"):
        if rank is not None or world_size is not None:
            raise ConfigError(f"{who}: rank={rank!r}, world_size={world_size!r} given with a DeviceMesh, which knows "
                              "this rank's place (expected rank=None, world_size=None)")
        return world_from_device_mesh(mesh, data_dims)
    m = _make_mesh(who, mesh, data_dims)
    if rank is None or world_size is None:
        found = _global_rank()
        if found is None:
            raise ConfigError(f"{who}: rank={rank!r}, world_size={world_size!r} and neither torch.distributed nor "
                              "a launcher (RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, PMI_RANK/"
                              "PMI_SIZE, SLURM_PROCID/SLURM_NTASKS) says which rank this is (expected rank= and "
                              "world_size=)")
        rank = found[0] if rank is None else rank
        world_size = found[1] if world_size is None else world_size
    for name, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{who}: {name}={value!r} (expected an int >= 0)")
    if local_rank is None and local_world_size is None:
        local_rank, local_world_size = _launcher_locality(rank, world_size)
    elif local_rank is None or local_world_size is None:
        raise ConfigError(f"{who}: local_rank={local_rank!r}, local_world_size={local_world_size!r} (expected both "
                          "or neither)")
    return _data_world(who, m, rank, world_size, local_rank, local_world_size, rank)


def _global_rank():
    try:
        import torch.distributed as dist
    except ImportError:  # torch is optional for explicit ranks and launcher variables
        dist = None
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    env = _core.world_from_env()
    return None if env is None else (env[0], env[1])


def world_from_device_mesh(device_mesh, data_dims=None):
    """The DataWorld of this process in a torch ``DeviceMesh`` (duck-typed: its
    ``mesh_dim_names``, ``mesh`` tensor of global ranks, ``size(dim)`` and ``get_coordinate()``).
    The data rank comes from this rank's coordinates, so a mesh tensor in any rank order
    works; the World's locality is the launcher's only when the mesh tensor is
    ``arange`` (global rank = row-major position), else 0 of 1. ``data_dims`` as in
    ``mesh_world``. Raises ``ConfigError`` for a mesh without ``mesh_dim_names``, a rank not in
    the mesh, or bad data dims.
    """
    who = "world_from_device_mesh"
    names = getattr(device_mesh, "mesh_dim_names", None)
    if not names:
        raise ConfigError(f"{who}: device_mesh={device_mesh!r} has no mesh_dim_names (expected named dims, e.g. "
                          "init_device_mesh('cuda', (4, 2), mesh_dim_names=('dp', 'tp')))")
    pairs = [(str(name), int(device_mesh.size(i))) for i, name in enumerate(names)]
    tensor = device_mesh.mesh
    shape = tuple(int(n) for n in tensor.shape)
    if len(shape) != len(pairs):
        raise ConfigError(f"{who}: device_mesh has {len(pairs)} mesh_dim_names {tuple(names)!r} for a {len(shape)}-d "
                          "mesh tensor (expected one name per dim)")
    if shape != tuple(size for _, size in pairs):
        raise ConfigError(f"{who}: device_mesh.mesh has shape {shape} but its dims have sizes "
                          f"{tuple(size for _, size in pairs)} (expected the same)")
    ranks = [int(r) for r in tensor.flatten().tolist()]
    seen = set()
    for r in ranks:
        if r in seen:
            raise ConfigError(f"{who}: device_mesh.mesh holds rank {r} twice (expected each global rank once)")
        seen.add(r)
    m = _make_mesh(who, pairs, data_dims)
    coordinate = device_mesh.get_coordinate()
    if coordinate is None:
        raise ConfigError(f"{who}: this process is not in device_mesh={device_mesh!r} (expected the mesh of every "
                          "rank that reads data, not a submesh of other ranks)")
    position = m.global_rank([int(c) for c in coordinate])
    local = _launcher_locality(ranks[position], len(ranks)) if ranks == list(range(len(ranks))) else (0, 1)
    return _data_world(who, m, position, m.size, local[0], local[1], ranks[position])


# The mesh mode of distsampler.torch.guard: what each rank adds to its description, and the
# check over all of them (the C++ check_mesh_records).
_GUARD_FIELDS = ("sampler", "dataset_size", "seed", "shuffle", "tail", "order", "epoch", "consumed",
                 "global_batch_size", "accumulation_steps", "token_layout")


def _flat(item, out):
    if "index" in (getattr(item, "_fields", None) or ()):  # a ShardSample
        out.append(int(item.index))
    elif isinstance(item, (list, tuple)):
        for x in item:
            _flat(x, out)
    elif hasattr(item, "tolist"):  # NumPy arrays and scalars, tensors
        _flat(item.tolist(), out)
    elif item is not None:
        out.append(int(item))


def guard_read_sums(sampler):
    """The ReadSums words of what ``sampler`` yields this epoch, read from a copy (the sampler's
    own progress is untouched): O(its share of the epoch)."""
    out = []
    for item in copy.deepcopy(sampler):
        _flat(item, out)
    sums = _core.ReadSums()
    sums.read(out)
    return sums.words


def guard_mesh_fields(sampler):
    """A rank's mesh fields: ``reads`` (hash of what a copy yields, or ``sampler._guard_reads()``
    for a stream), ``sums`` (its family's C++ segment_sums as (dataset_size, words), from
    ``sampler._guard_sums()``, else None) and ``consumed`` (where a resumed pass starts)."""
    found = sampler._guard_sums() if callable(getattr(sampler, "_guard_sums", None)) else None
    own_reads = getattr(sampler, "_guard_reads", None)  # a stream's bounded probe: it never ends
    return {"reads": own_reads() if callable(own_reads) else guard_read_sums(sampler),
            "sums": None if found is None else (found[0], list(found[1])), "consumed": 0 if found is None else found[2]}


def check_guard_descriptions(gathered, mesh, size):
    """Raises ConfigError unless every rank's description (rank order = the mesh's global
    ranks) passes the C++ mesh guard over ``mesh`` (a Mesh or a DataWorld): check_mesh_groups
    on the hashes of what ranks yield, then, when every rank has sums, check_mesh_records."""
    if isinstance(mesh, DataWorld):
        mesh = mesh.mesh
    if not isinstance(mesh, Mesh):
        raise ConfigError(f"guard: mesh={mesh!r} (expected the Mesh or the DataWorld of distsampler.mesh.mesh_world)")
    if mesh.size != size:
        raise ConfigError(f"guard: mesh {mesh} has {mesh.size} ranks but the process group has {size} processes "
                          "(expected the product of the dims)")
    shown = [sorted({repr(d[f]) for d in gathered}) for f in _GUARD_FIELDS]
    keys = [[shown[i].index(repr(d[f])) for i, f in enumerate(_GUARD_FIELDS)] for d in gathered]
    worlds, names = [(d["rank"], d["num_replicas"]) for d in gathered], list(_GUARD_FIELDS)
    _core.check_mesh_groups("guard", mesh, keys, worlds, [d["reads"] for d in gathered], names, shown)
    sums = [d.get("sums") for d in gathered]
    if all(s is not None for s in sums):
        ok, message = _core.check_mesh_records("guard", mesh, sums[0][0], keys, worlds, [s[1] for s in sums], names,
                                               shown)
        if not ok:
            raise ConfigError(f"guard: {message}; expected the data ranks to read disjoint shares that cover the "
                              "dataset (is a sampler built for another data rank than it reports?)")
