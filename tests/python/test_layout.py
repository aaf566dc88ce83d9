# The package's layout: modules under 400 lines, the public names of distsampler.torch, the path pickles record.
# SPDX-License-Identifier: MIT
import pathlib
import pickle
import re

import pytest
import torch

import distsampler.torch
from distsampler.torch import (
    DistributedBatchSampler,
    DistributedSampler,
    DistributedWeightedRandomSampler,
    EmptyToNone,
    MixtureBatchSampler,
    ScheduledShard,
    ShardSample,
    ShardStream,
    TokenBatchSampler,
)
from distsampler.torch.guard import _describe

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "distsampler"
CORE = PACKAGE.parent / "core"
MAX_LINES = 400

# distsampler.torch.__all__ of release 0.1, written out: a name may be added, none removed or renamed.
RELEASE_0_1_NAMES = [
    "DistributedSampler",
    "DistributedBatchSampler",
    "ShardStream",
    "ShardSample",
    "ScheduledShard",
    "TokenBatchSampler",
    "EmptyToNone",
    "MixtureBatchSampler",
    "DistributedWeightedRandomSampler",
    "guard",
    "default_torch_generation",
]


def oversized_modules(root, limit=MAX_LINES):
    """(path, lines) of every Python module under `root` longer than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        with path.open(encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > limit:
            found.append((str(path.relative_to(root)), lines))
    return found


def test_the_source_tree_is_there():
    # Guards the next test against passing on an empty or moved folder.
    names = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}
    assert {"__init__.py", "verify.py", "torch/__init__.py", "torch/sampler.py", "torch/guard.py"} <= names


def test_no_module_of_the_package_exceeds_400_lines():
    assert oversized_modules(PACKAGE) == []


def test_the_line_check_reports_a_module_that_grew(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "small.py").write_text("x = 1\n" * MAX_LINES)
    assert oversized_modules(tmp_path) == [("sub/big.py", MAX_LINES + 1)]


def test_every_module_opens_with_its_purpose_and_the_license_line():
    for path in sorted(PACKAGE.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        first, second = path.read_text(encoding="utf-8").split("\n")[:2]
        assert first.startswith("# ") and len(first) > 10, path
        assert second == "# SPDX-License-Identifier: MIT", path


def test_every_module_has_its_stub_beside_it():
    for path in sorted((PACKAGE / "torch").glob("*.py")):
        assert path.with_suffix(".pyi").is_file(), path


def test_all_names_what_release_0_1_named():
    names = distsampler.torch.__all__
    assert names[: len(RELEASE_0_1_NAMES)] == RELEASE_0_1_NAMES
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(distsampler.torch, name) is not None


def test_every_release_0_1_name_imports_from_the_package():
    namespace = {}
    exec("from distsampler.torch import " + ", ".join(RELEASE_0_1_NAMES), namespace)
    assert set(RELEASE_0_1_NAMES) <= set(namespace)
    assert callable(namespace["guard"]) and callable(namespace["default_torch_generation"])


def test_public_names_report_the_package_as_their_module():
    for name in RELEASE_0_1_NAMES:
        assert getattr(distsampler.torch, name).__module__ == "distsampler.torch", name


@pytest.mark.parametrize("value", [
    lambda: DistributedSampler(range(10), 2, 1, seed=3),
    lambda: DistributedBatchSampler(range(20), 2, 2, 0),
    lambda: ShardStream([3, 4], 2, 0),
    lambda: ShardSample(1, 2, 3, False),
    lambda: ScheduledShard(0, 1, 2, 3),
    lambda: TokenBatchSampler([5, 6, 7], 20, 1, 0),
    lambda: EmptyToNone(),
    lambda: MixtureBatchSampler([4, 6], [0.5, 0.5], 2, 1, 0),
    lambda: DistributedWeightedRandomSampler([1.0, 2.0], 4, num_replicas=2, rank=0),
], ids=["sampler", "batch", "shards", "shard_sample", "scheduled_shard", "tokens", "empty_to_none", "mixture",
        "weighted"])
def test_pickles_name_the_package_not_a_family_module(value):
    data = pickle.dumps(value(), protocol=4)
    assert b"distsampler.torch\x94" in data
    for module in (b"_common", b".sampler", b".batch", b".shards", b".tokens", b".mixture", b".weighted"):
        assert b"distsampler.torch" + module not in data


def test_guard_takes_each_family_description_from_the_family():
    d = _describe(DistributedSampler(range(10), 2, 1, seed=3, drop_last=True))
    assert d == {"sampler": "DistributedSampler", "dataset_size": 10, "seed": 3, "shuffle": True, "tail": "drop",
                 "order": "feistel", "epoch": 0, "global_batch_size": 0, "accumulation_steps": 1, "token_layout": 0,
                 "num_replicas": 2, "rank": 1}
    d = _describe(DistributedBatchSampler(range(20), 2, 2, 0, accumulation_steps=3, order="torch"))
    assert (d["sampler"], d["dataset_size"], d["order"], d["global_batch_size"], d["accumulation_steps"]) == \
        ("DistributedBatchSampler", 20, "torch", 12, 3)
    d = _describe(ShardStream([3, 4], 2, 0, seed=5))
    assert (d["sampler"], d["dataset_size"], d["order"], d["seed"], d["tail"]) == ("ShardStream", 7, "shard mixed", 5, "pad")
    t = TokenBatchSampler([5, 6, 7], 20, 1, 0)
    d = _describe(t)
    assert (d["sampler"], d["dataset_size"], d["order"], d["tail"]) == ("TokenBatchSampler", 3, "feistel", "uneven")
    assert d["token_layout"] == f"{t.layout_hash:#018x}" and len(d["token_layout"]) == 18
    d = _describe(MixtureBatchSampler([4, 6], [0.5, 0.5], 2, 1, 0))
    assert (d["sampler"], d["dataset_size"], d["order"], d["global_batch_size"]) == \
        ("MixtureBatchSampler", 10, "feistel", 2)
    d = _describe(DistributedWeightedRandomSampler([1.0, 2.0, 3.0], 4, num_replicas=2, rank=0))
    assert (d["sampler"], d["dataset_size"], d["order"], d["global_batch_size"]) == \
        ("DistributedWeightedRandomSampler", 3, "feistel", 0)


def test_guard_describes_torch_own_sampler_from_its_attributes():
    s = torch.utils.data.distributed.DistributedSampler(range(9), num_replicas=3, rank=2, seed=4, drop_last=True)
    assert _describe(s) == {"sampler": "DistributedSampler", "dataset_size": 9, "seed": 4, "shuffle": True,
                            "tail": "drop", "order": "torch", "epoch": 0, "global_batch_size": 0,
                            "accumulation_steps": 1, "token_layout": 0, "num_replicas": 3, "rank": 2}


def test_guard_imports_no_family():
    # Each family describes itself (_guard_description); guard.py only reads that.
    text = (PACKAGE / "torch" / "guard.py").read_text(encoding="utf-8")
    imports = [line for line in text.split("\n") if line.startswith(("import ", "from "))]
    assert imports == ["import pickle", "import torch.distributed as dist", "from .._core import ConfigError",
                       "from ..mesh import check_guard_descriptions, guard_mesh_fields",
                       "from ._common import PUBLIC_MODULE", "from ._exchange import exchange, timeout_seconds"]
    assert "isinstance(" not in text


# _core binds the C++ names: a class is its C++ class (DistributedSampler<TorchRandperm> is
# DistributedSamplerTorchRandperm), a factory is make_<its snake_case name>.
CORE_CLASSES = ["DistributedSamplerFeistelPermutation", "DistributedSamplerTorchRandperm",
                "DistributedBatchSamplerFeistelPermutation", "DistributedBatchSamplerTorchRandperm",
                "StreamingShardSampler", "TokenBatchSampler", "MixtureSampler", "WeightedSampler",
                "PackedSequenceSampler", "BlendSampler", "Mesh", "ReadSums", "StreamCursor", "StreamJobState",
                # The options classes the factories take (bound field by field).
                "SamplerOptions", "TorchRandpermOptions", "BatchSamplerOptions", "WeightedSamplerOptions",
                "TokenBatchOptions", "PackOptions", "MixtureOptions", "ShardSamplerOptions", "BlendOptions"]
CORE_FUNCTIONS = ["make_distributed_sampler", "make_distributed_batch_sampler", "make_streaming_shard_sampler",
                  "make_token_batch_sampler", "make_mixture_sampler", "make_weighted_sampler", "world_from_env",
                  "validate_world", "parse_state", "check_partition", "index_shards",
                  "make_packed_sequence_sampler", "world_from_mesh", "check_mesh_groups", "check_mesh_records",
                  "assemble_stream_state", "resume_stream", "make_blend_sampler", "guard_exchange"]


def test_core_binds_the_cpp_names_and_nothing_else():
    from distsampler import _core

    names = sorted(n for n in dir(_core) if not n.startswith("__"))
    assert names == sorted(CORE_CLASSES + CORE_FUNCTIONS + ["ConfigError", "StateError", "version"])
    for name in CORE_CLASSES:
        assert getattr(_core, name).__name__ == name


def test_core_factories_return_the_class_of_their_order():
    from distsampler import _core

    sampler_options = _core.SamplerOptions()
    sampler_options.seed = 1
    torch_v1 = _core.TorchRandpermOptions()
    torch_v1.generation = "v1"
    batch_options = _core.BatchSamplerOptions()
    batch_options.micro_batch_size = 2
    batch_options.seed = 1
    weighted_options = _core.WeightedSamplerOptions()
    weighted_options.num_samples = 4
    weighted_options.seed = 1
    mixture_options = _core.MixtureOptions()
    mixture_options.micro_batch_size = 2
    mixture_options.seed = 1
    shard_options = _core.ShardSamplerOptions()
    shard_options.seed = 1
    cases = [
        (_core.make_distributed_sampler(10, 0, 2, sampler_options, torch=torch_v1), "DistributedSamplerTorchRandperm"),
        (_core.make_distributed_sampler(10, 0, 2, sampler_options), "DistributedSamplerFeistelPermutation"),
        (_core.make_distributed_batch_sampler(10, 0, 2, batch_options, torch=torch_v1),
         "DistributedBatchSamplerTorchRandperm"),
        (_core.make_distributed_batch_sampler(10, 0, 2, batch_options), "DistributedBatchSamplerFeistelPermutation"),
        (_core.make_streaming_shard_sampler([3, 4], 0, 2, shard_options), "StreamingShardSampler"),
        (_core.make_mixture_sampler([4, 6], 0, 1, mixture_options, weights=[0.5, 0.5]), "MixtureSampler"),
        (_core.make_weighted_sampler([1.0, 2.0], 0, 1, weighted_options), "WeightedSampler"),
    ]
    for core, name in cases:
        assert type(core).__name__ == name
    # torch's order through the public class: torch 1.13's DistributedSampler(N=10, W=4, seed=42), epoch 1, rank 1.
    s = DistributedSampler(range(10), 4, 1, seed=42, order="torch", torch_generation="v1")
    s.set_epoch(1)
    assert list(s) == [4, 1, 3]


def test_each_core_file_opens_with_its_purpose_and_the_license_line():
    files = sorted(CORE.glob("*.[ch]pp"))
    assert {"module.cpp", "common.hpp"} <= {f.name for f in files}
    for path in files:
        first, second = path.read_text(encoding="utf-8").split("\n")[:2]
        assert first.startswith("// ") and len(first) > 10, path
        assert second == "// SPDX-License-Identifier: MIT", path


def test_each_core_family_registers_with_one_line_in_module_cpp():
    declared = re.findall(r"^void (register_\w+)\(py::module_& m\);$", (CORE / "common.hpp").read_text(), re.M)
    assert len(declared) >= 9
    module = (CORE / "module.cpp").read_text()
    for name in declared:
        assert module.count(f"dp::{name}(m);") == 1, name
        defined = [f.name for f in CORE.glob("*.cpp") if f"void {name}(py::module_& m) {{" in f.read_text()]
        assert len(defined) == 1, (name, defined)
    assert len(re.findall(r"dp::register_\w+\(m\);", module)) == len(declared)
