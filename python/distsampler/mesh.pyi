# Type stub of distsampler.mesh.
# SPDX-License-Identifier: MIT
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from ._core import ConfigError as ConfigError

class Mesh:
    def __init__(self, dims: Sequence[Tuple[str, int]], data_dims: Sequence[str] = ...) -> None: ...
    @staticmethod
    def parse(spec: str, data_dims: str = ...) -> "Mesh": ...
    @staticmethod
    def parse_dims(spec: str) -> List[Tuple[str, int]]: ...
    size: int
    data_world_size: int
    ndim: int
    names: List[str]
    sizes: List[int]
    data_dims: List[str]
    def coordinates(self, global_rank: int) -> List[int]: ...
    def global_rank(self, coords: Sequence[int]) -> int: ...
    def data_rank(self, global_rank: int) -> int: ...
    def group(self, global_rank: int, dim: int) -> List[int]: ...

class DataWorld(NamedTuple):
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    global_rank: int
    mesh: Mesh
    @property
    def num_replicas(self) -> int: ...

MeshSpec = Union[Dict[str, int], Sequence[Tuple[str, int]], str, Mesh, Any]

def mesh_world(mesh: MeshSpec, data_dims: Optional[Union[str, Sequence[str]]] = ..., *, rank: Optional[int] = ...,
               world_size: Optional[int] = ..., local_rank: Optional[int] = ...,
               local_world_size: Optional[int] = ...) -> DataWorld: ...
def world_from_device_mesh(device_mesh: Any, data_dims: Optional[Union[str, Sequence[str]]] = ...) -> DataWorld: ...
def guard_read_sums(sampler: Any) -> List[int]: ...
def check_guard_descriptions(gathered: List[Dict[str, Any]], mesh: Any, size: int) -> None: ...
