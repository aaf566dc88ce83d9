# The seam between the Python package and the C++ core: every _core.make_* factory takes at most four positional
# arguments (data, rank, world_size, options), and every options class carries its fields both ways.
# SPDX-License-Identifier: MIT
import re

import pytest

from distsampler import _core

MAX_POSITIONAL = 4

# Each options class bound by field: {field: (a value other than the default, another one)}. The values are
# read back exactly as they were set (enums by the names their parsers read).
OPTIONS_FIELDS = {
    "SamplerOptions": {"shuffle": (False, True), "seed": (42, (1 << 64) - 1), "tail": ("drop", "uneven")},
    "TorchRandpermOptions": {"generation": ("v1", "v2.7")},
    "BatchSamplerOptions": {"shuffle": (False, True), "seed": (7, 0), "tail": ("pad", "uneven"),
                            "micro_batch_size": (8, 1), "accumulation_steps": (4, 2), "global_batch_size": (512, 0),
                            "epoch_mode": ("auto_advance", "manual")},
    "WeightedSamplerOptions": {"shuffle": (False, True), "seed": (3, 0), "tail": ("drop", "pad"),
                               "num_samples": (100, 0), "replacement": (False, True)},
    "TokenBatchOptions": {"shuffle": (False, True), "seed": (5, 0), "tail": ("drop", "pad"),
                          "max_tokens": (4096, 1), "cost": ("quadratic", "linear"), "quadratic_q": (64, 1),
                          "max_samples": (32, 0), "batch_multiple": (8, 1), "window": (4096, 1),
                          "accumulation_steps": (4, 2), "longest_first": (True, False),
                          "oversize": ("skip", "own_batch")},
    "PackOptions": {"shuffle": (False, True), "seed": (9, 0), "tail": ("uneven", "pad"),
                    "micro_batch_size": (4, 1), "accumulation_steps": (2, 3), "global_batch_size": (64, 0),
                    "seq_len": (4096, 1), "mode": ("best-fit", "concat"), "window": (512, 1), "chunk": (16, 1),
                    "split_long": (False, True), "plan_limit": (128, 1)},
    "MixtureOptions": {"shuffle": (False, True), "seed": (11, 0), "tail": ("pad", "uneven"),
                       "micro_batch_size": (4, 1), "accumulation_steps": (2, 3), "global_batch_size": (64, 0),
                       "mixing_block": (8, 1), "end": ("steps", "all_seen"), "end_count": (100, 1),
                       "replacement": (True, False), "schedule": ([(10, [0.25, 0.75])], [])},
    "BlendOptions": {"shuffle": (False, True), "seed": (17, 0), "tail": ("pad", "uneven"),
                     "micro_batch_size": (4, 1), "accumulation_steps": (2, 3), "global_batch_size": (64, 0),
                     "seq_len": (2048, 1), "mode": ("best-fit", "concat"), "window": (512, 1), "chunk": (16, 1),
                     "split_long": (False, True), "plan_limit": (128, 1), "mixing_block": (8, 1),
                     "schedule": ([(10, [0.25, 0.75])], []), "end_steps": (100, 1)},
    "ShardSamplerOptions": {"shuffle": (False, True), "seed": (13, 0), "tail": ("drop", "uneven"),
                            "canonical_streams": (64, 1), "max_open_shards": (8, 1), "run_length": (4, 2),
                            "shuffle_window": (2, 1), "rotate_shards": (False, True), "num_workers": (4, 2)},
}


def _factories():
    return sorted(name for name in dir(_core) if name.startswith("make_"))


def _positional_parameters(function):
    """The parameters of `function`'s pybind11 signature line before a bare ``*`` (its keyword-only marker)."""
    name = function.__name__
    signatures = [line for line in (function.__doc__ or "").splitlines() if line.startswith(name + "(")]
    assert signatures, f"{name}: no signature in its docstring"
    counts = []
    for line in signatures:  # one line per overload
        inside = re.match(rf"{name}\((.*)\) ->", line)
        assert inside, line
        text = re.sub(r"\[[^\[\]]*\]", "", inside.group(1))  # List[int] and the like hold commas
        while re.search(r"\[[^\[\]]*\]", text):
            text = re.sub(r"\[[^\[\]]*\]", "", text)
        params = [p.strip() for p in text.split(",") if p.strip()]
        if "*" in params:
            params = params[:params.index("*")]
        counts.append(len(params))
    return max(counts)


def test_there_are_factories():
    assert "make_distributed_sampler" in _factories()


@pytest.mark.parametrize("name", _factories())
def test_each_factory_takes_at_most_four_positional_arguments(name):
    count = _positional_parameters(getattr(_core, name))
    assert count <= MAX_POSITIONAL, f"_core.{name} takes {count} positional arguments (expected at most 4)"


def test_the_signature_parser_counts_what_it_should():
    def fake(doc):
        def make_x():
            pass
        make_x.__doc__ = doc
        return make_x

    assert _positional_parameters(fake("make_x(arg0: int, arg1: List[int], arg2: Dict[str, int]) -> object\n")) == 3
    assert _positional_parameters(fake("make_x(a: int, b: int, c: int, d: int, e: int) -> object\n")) == 5
    assert _positional_parameters(fake("make_x(a: int, *, b: Optional[int] = None) -> object\n")) == 1


@pytest.mark.parametrize("name", sorted(OPTIONS_FIELDS))
def test_each_options_class_round_trips_its_fields(name):
    cls = getattr(_core, name)
    for field, values in OPTIONS_FIELDS[name].items():
        options = cls()
        default = getattr(options, field)
        for value in values:
            setattr(options, field, value)
            assert getattr(options, field) == value, (name, field, value)
            assert type(getattr(options, field)) is type(value), (name, field)
        # Setting one field leaves the others at their defaults.
        for other in OPTIONS_FIELDS[name]:
            if other != field:
                assert getattr(options, other) == getattr(cls(), other), (name, field, other)
        assert default == getattr(cls(), field)


def test_options_classes_refuse_unknown_names_and_wrong_types():
    options = _core.SamplerOptions()
    with pytest.raises(_core.ConfigError, match='tail "sideways" is unknown'):
        options.tail = "sideways"
    with pytest.raises(TypeError):
        options.seed = "42"
    with pytest.raises(_core.ConfigError, match='torch_generation "v3" is unknown'):
        _core.TorchRandpermOptions().generation = "v3"


def test_every_options_class_is_covered():
    bound = sorted(name for name in dir(_core) if name.endswith("Options"))
    assert bound == sorted(OPTIONS_FIELDS)


def test_the_shard_presets_are_options_objects():
    mixed, sequential = _core.ShardSamplerOptions.mixed(), _core.ShardSamplerOptions.sequential()
    assert mixed.run_length == _core.ShardSamplerOptions().run_length
    assert (sequential.max_open_shards, sequential.rotate_shards) != (mixed.max_open_shards, mixed.rotate_shards)
