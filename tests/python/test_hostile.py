# Hostile input to every Python sampler family: refused by name, never a crash, hang or bad_alloc; elastic round trips.
# SPDX-License-Identifier: MIT
import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distsampler
from distsampler import verify
from distsampler.torch import (
    DistributedBatchSampler,
    DistributedSampler,
    DistributedWeightedRandomSampler,
    MixtureBatchSampler,
    PackedSequenceSampler,
    ShardStream,
    TokenBatchSampler,
)

# Deterministic and quick: the same examples on every run.
QUICK = settings(max_examples=25, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
REFUSED = (distsampler.ConfigError, distsampler.StateError, TypeError)
LENGTHS = np.array([5, 9, 3, 12, 7, 7, 2, 30, 4, 4, 8, 16], dtype=np.uint32)

# One valid call per family; each hostile case replaces one argument of it.
FAMILIES = {
    "DistributedSampler": (lambda **kw: DistributedSampler(range(10), **kw),
                           dict(num_replicas=2, rank=0, seed=0)),
    "DistributedBatchSampler": (lambda **kw: DistributedBatchSampler(range(20), **kw),
                                dict(micro_batch_size=2, num_replicas=2, rank=0, accumulation_steps=1, seed=0)),
    "TokenBatchSampler": (lambda **kw: TokenBatchSampler(LENGTHS, **kw),
                          dict(max_tokens=64, num_replicas=2, rank=0, accumulation_steps=1, window=8,
                               batch_multiple=1, quadratic_q=1024, seed=0)),
    "MixtureBatchSampler": (lambda **kw: MixtureBatchSampler([range(10), range(6)], [1.0, 1.0], **kw),
                            dict(micro_batch_size=2, num_replicas=2, rank=0, accumulation_steps=1, seed=0)),
    "DistributedWeightedRandomSampler": (lambda **kw: DistributedWeightedRandomSampler([1.0, 2.0, 3.0], **kw),
                                         dict(num_samples=6, num_replicas=2, rank=0, seed=0)),
    "ShardStream": (lambda **kw: ShardStream([5, 7, 3], **kw), dict(num_replicas=2, rank=0, seed=0)),
    "PackedSequenceSampler": (lambda **kw: PackedSequenceSampler(LENGTHS, 16, **kw),
                              dict(micro_batch_size=1, num_replicas=2, rank=0, accumulation_steps=1, seed=0)),
}
CASES = [(family, arg) for family, (_, kw) in FAMILIES.items() for arg in kw]

# Values no integer argument takes: bools, floats (NaN, inf, 1.5, 2.0), strings, huge and very negative ints,
# NumPy bools and floats, lists.
HOSTILE_INTS = st.one_of(
    st.booleans(),
    st.sampled_from([np.True_, np.False_, np.float64(2.0), float("nan"), float("inf"), 1.5, 2.0, "1", b"1", [1]]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=1 << 64, max_value=1 << 80),
    st.integers(min_value=-(1 << 80), max_value=-(1 << 63) - 1),
)


def build(family, **overrides):
    make, kw = FAMILIES[family]
    return make(**dict(kw, **overrides))


@pytest.mark.parametrize("family,arg", CASES)
@QUICK
@given(value=HOSTILE_INTS)
def test_hostile_integer_arguments_are_refused_by_name(family, arg, value):
    with pytest.raises(REFUSED) as info:
        build(family, **{arg: value})
    assert arg in str(info.value), (family, arg, value, str(info.value))


@pytest.mark.parametrize("family", list(FAMILIES))
@QUICK
@given(world=st.integers(min_value=1, max_value=1 << 70), extra=st.integers(min_value=0, max_value=1 << 70))
def test_ranks_outside_the_world_are_refused_naming_rank_and_num_replicas(family, world, extra):
    with pytest.raises(distsampler.ConfigError) as info:
        build(family, num_replicas=world, rank=world + extra)
    if world < 1 << 64:
        assert str(info.value) == (f"{family}: rank {world + extra} is out of range for num_replicas {world} "
                                   f"(expected 0..{world - 1})")
    else:
        assert str(info.value).startswith(f"{family}: num_replicas {world} is out of range")


@pytest.mark.parametrize("family", list(FAMILIES) + ["ShardedDataset"])
@pytest.mark.parametrize("arg", ["num_replicas", "rank"])
@pytest.mark.parametrize("value", [True, False, np.True_])
def test_bools_are_not_taken_as_integers(family, arg, value, tmp_path):
    if family == "ShardedDataset":
        from distsampler.torch import ShardedDataset
        (tmp_path / "a.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
        kw = dict(dict(num_replicas=1, rank=0), **{arg: value})
        make = lambda: ShardedDataset([str(tmp_path / "a.jsonl")], "jsonl", cache=False, **kw)  # noqa: E731
    else:
        make = lambda: build(family, **{arg: value})  # noqa: E731
    with pytest.raises(distsampler.ConfigError, match=rf"^{family}: {arg} {value!r} is a bool \(expected an int\)$"):
        make()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_num_replicas_0_names_the_python_argument_and_the_class(family):
    with pytest.raises(distsampler.ConfigError, match=rf"^{family}: num_replicas is 0 \(expected at least 1\)$"):
        build(family, num_replicas=0)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_rank_4_of_4_and_rank_2_to_the_64_name_the_python_arguments(family):
    for rank in (4, 1 << 64):
        with pytest.raises(distsampler.ConfigError,
                           match=rf"^{family}: rank {rank} is out of range for num_replicas 4 \(expected 0..3\)$"):
            build(family, num_replicas=4, rank=rank)


@pytest.mark.parametrize("lengths,message", [
    (np.array([1.0, 2.0]), r"lengths has dtype float64 \(expected integers"),
    (np.array([True, False]), r"lengths has dtype bool \(expected integers"),
    (np.array(["a", "b"]), r"lengths has dtype <U1 \(expected integers"),
    (np.ones((2, 2), dtype=np.uint32), r"lengths has shape \(2, 2\) \(expected a 1-D array"),
    (np.array([3, -1], dtype=np.int64), r"sample 1 has length -1 \(expected a token count of at least 1\)"),
    (np.array([3, 1 << 32], dtype=np.int64), r"sample 1 has length 4294967296 \(expected at most 4294967295"),
    (np.array([3, 0], dtype=np.uint32), r"sample 1 has length 0 \(expected at least 1 token per sample\)"),
    ([3, None], r"lengths (cannot be read as an array|has dtype object)"),
])
def test_token_lengths_of_the_wrong_kind_are_refused_naming_them(lengths, message):
    with pytest.raises(distsampler.ConfigError, match=r"^TokenBatchSampler: " + message):
        TokenBatchSampler(lengths, 64, 1, 0)


@QUICK
@given(step=st.integers(min_value=1, max_value=3), offset=st.integers(min_value=0, max_value=1), readonly=st.booleans())
def test_non_contiguous_and_read_only_lengths_plan_as_their_copy(step, offset, readonly):
    wide = np.repeat(LENGTHS, 3)
    view = wide[offset::step]
    view.flags.writeable = not readonly
    assert list(TokenBatchSampler(view, 64, 2, 1, seed=3)) == list(TokenBatchSampler(np.array(view), 64, 2, 1, seed=3))


@pytest.mark.parametrize("weights", [[float("nan"), 1.0], [-1.0, 1.0], [float("inf"), 1.0], [0.0, 0.0]])
def test_weights_that_are_not_probabilities_are_refused_naming_weights(weights):
    with pytest.raises(distsampler.ConfigError, match=r"weights"):
        DistributedWeightedRandomSampler(weights, 4, num_replicas=1, rank=0)
    with pytest.raises(distsampler.ConfigError, match=r"weights"):
        MixtureBatchSampler([range(10), range(6)], weights, 2, 1, 0)


# -- the reliability probe's findings, each once ------------------------------------------------------------


# What crashed or hung the interpreter runs in one child process (a crash or hang there fails these tests
# instead of killing pytest): each probe's code sets `result`, or raises; the child prints both per probe.
L3 = "np.array([3, 4, 5], dtype=np.uint32)"
PROBES = {
    "wrap to 0": f"TokenBatchSampler({L3}, 10, 2, 0, accumulation_steps=2**63)",
    "wrap to 4": f"TokenBatchSampler({L3}, 10, 2, 0, accumulation_steps=2**63 + 2)",
    "wrap past the plan": f"TokenBatchSampler({L3}, 10, 4, 3, accumulation_steps=2**62 + 1)",
    "world 2^27": f"TokenBatchSampler({L3}, 10, 2**27, 0)",
    "world 2^40": f"TokenBatchSampler({L3}, 10, 2**40, 0)",
    "accumulation 2^25": f"TokenBatchSampler({L3}, 10, 1, 0, accumulation_steps=2**25)",
    "world 2^10 x accumulation 2^20": f"TokenBatchSampler({L3}, 10, 2**10, 0, accumulation_steps=2**20)",
    "mixture of a huge world": """
s = MixtureBatchSampler([10**11, 10**11], [1.0, 1.0], 1, 2**32, 0)
result = (len(s) > 0, len(next(iter(s))))""",
    "close the memory map": """
lengths = np.memmap(PATH, dtype=np.uint32, mode="r")
s = TokenBatchSampler(lengths, 64, 2, 0, seed=1)
before = list(s)
try:
    lengths._mmap.close()
    closed = "closed"
except BufferError:
    closed = "BufferError"
result = (closed, list(s) == before)""",
    "resize the lengths": """
lengths = np.arange(1, 2001, dtype=np.uint32)
s = TokenBatchSampler(lengths, 4000, 2, 0, seed=1)
lengths.resize(10, refcheck=False)
result = []
for call in (lambda: list(s), lambda: s.micro_batch(0), lambda: s.set_epoch(1) or list(s)):
    try:
        call()
        result.append("read")
    except distsampler.StateError as e:
        result.append(str(e))""",
}
CHILD = """
import json, sys
import numpy as np
import distsampler
from distsampler.torch import MixtureBatchSampler, TokenBatchSampler
PATH = sys.argv[2]
for name, code in json.loads(sys.argv[1]).items():
    space = dict(globals())
    try:
        exec(code if "result" in code else "result = " + code, space)
        out = ["ok", repr(space["result"])]
    except Exception as e:
        out = [type(e).__name__, str(e)]
    print(json.dumps([name] + out), flush=True)
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    import json
    path = tmp_path_factory.mktemp("hostile") / "lengths.u32"
    LENGTHS.tofile(path)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(PROBES), str(path)], capture_output=True,
                              text=True, timeout=40)
        lines, status = done.stdout.splitlines(), f"exit {done.returncode}: {done.stderr[-500:]}"
    except subprocess.TimeoutExpired as e:
        lines, status = (e.stdout or b"").decode().splitlines(), "no answer within 40 s (a hang)"
    answers = {name: (kind, text) for name, kind, text in map(json.loads, lines)}
    return lambda name: answers[name] if name in answers else pytest.fail(f"probe {name!r}: the child died, {status}")


@pytest.mark.parametrize("probe,world,accumulation", [("wrap to 0", 2, 1 << 63), ("wrap to 4", 2, (1 << 63) + 2),
                                                      ("wrap past the plan", 4, (1 << 62) + 1)])
@pytest.mark.processes
def test_token_global_batch_wrapping_around_2_to_the_64_is_refused_not_a_crash(probed, probe, world, accumulation):
    assert probed(probe) == ("ConfigError", f"TokenBatchSampler: num_replicas {world} x accumulation_steps "
                                            f"{accumulation} overflows 64 bits (expected a product of at most "
                                            f"{2**64 - 1})")


@pytest.mark.parametrize("probe,world,accumulation", [("world 2^27", 1 << 27, 1), ("world 2^40", 1 << 40, 1),
                                                      ("accumulation 2^25", 1, 1 << 25),
                                                      ("world 2^10 x accumulation 2^20", 1 << 10, 1 << 20)])
@pytest.mark.processes
def test_a_token_step_of_too_many_micro_batches_is_refused_up_front(probed, probe, world, accumulation):
    assert probed(probe) == ("ConfigError", f"TokenBatchSampler: num_replicas {world} x accumulation_steps "
                                            f"{accumulation} = {world * accumulation} micro-batches per step exceeds "
                                            "1048576 (expected at most 1048576: every window plans at least one "
                                            "step of them)")


def test_a_token_step_at_the_bound_is_planned():
    s = TokenBatchSampler(np.array([3, 4, 5], dtype=np.uint32), 10, 1 << 10, 5, accumulation_steps=1 << 10)
    assert len(s) == 1 << 10 and s.stats["micro_batches"] == 1 << 20


def test_a_padded_micro_batch_larger_than_the_dataset_is_refused_not_a_memory_error():
    with pytest.raises(distsampler.ConfigError,
                       match=r"^DistributedBatchSampler: micro_batch_size 1099511627776 exceeds the dataset's 10 "
                             r'samples under tail="pad" \(expected at most the dataset size'):
        DistributedBatchSampler(range(10), micro_batch_size=1 << 40, num_replicas=1, rank=0, tail="pad")
    # Under drop it has no step, under uneven one step of the 10 samples.
    assert len(DistributedBatchSampler(range(10), 1 << 40, 1, 0, tail="drop")) == 0
    assert [len(b) for b in DistributedBatchSampler(range(10), 1 << 40, 1, 0, tail="uneven")] == [10]
    with pytest.raises(distsampler.ConfigError,
                       match=r"^DistributedBatchSampler: micro_batch_size 1099511627776 exceeds the dataset's 10 "
                             r"samples with as_numpy=True"):
        DistributedBatchSampler(range(10), 1 << 40, 1, 0, tail="uneven", as_numpy=True)


def test_batch_global_batch_overflow_names_the_python_arguments():
    with pytest.raises(distsampler.ConfigError,
                       match=r"^DistributedBatchSampler: micro_batch_size 4294967296 x num_replicas 4294967296 x "
                             r"accumulation_steps 1 overflows 64 bits"):
        DistributedBatchSampler(range(10), 1 << 32, 1 << 32, 0, tail="drop")


def test_micro_batch_size_0_names_the_python_argument():
    with pytest.raises(distsampler.ConfigError,
                       match=r"^DistributedBatchSampler: micro_batch_size is 0 \(expected at least 1\)$"):
        DistributedBatchSampler(range(10), 0, 1, 0)


def test_check_partition_of_a_huge_dataset_is_refused_not_a_memory_error():
    with pytest.raises(distsampler.ConfigError,
                       match=r"^check_partition: dataset_size 1099511627776 is out of range \(expected "
                             r"0..4294967296: the check keeps one byte per dataset index\)$"):
        verify.check_partition(dataset_size=1 << 40, ranks=[[0]])
    with pytest.raises(distsampler.ConfigError, match=r"^check_partition: dataset_size True is a bool"):
        verify.check_partition(dataset_size=True, ranks=[[0]])


@pytest.mark.parametrize("schedule,message", [
    ([5], r"schedule\[0\] 5 is not a \(step, weights\) pair"),
    ([(1, 2, 3)], r"schedule\[0\] \(1, 2, 3\) is not a \(step, weights\) pair"),
    ("10:0.5,0.5", r"schedule '10:0.5,0.5' is not a sequence"),
    (7, r"schedule 7 is not a sequence"),
    ([(True, [1.0, 1.0])], r"schedule\[0\] step True is a bool"),
    ([(4, "ab")], r"schedule\[0\] weights 'ab' is not a sequence of numbers"),
])
def test_a_garbage_mixture_schedule_is_refused_naming_the_entry(schedule, message):
    with pytest.raises(distsampler.ConfigError, match=r"^MixtureBatchSampler: " + message):
        MixtureBatchSampler([range(10), range(6)], [1.0, 1.0], 2, 1, 0, schedule=schedule)


@pytest.mark.parametrize("sizes", [None, 5, "57"])
def test_shard_stream_without_a_list_of_sizes_names_shard_sizes(sizes):
    with pytest.raises(distsampler.ConfigError, match=r"^ShardStream: shard_sizes .* is not a sequence \(expected a "
                                                      r"list of shard sizes\)$"):
        ShardStream(sizes, 1, 0)


def test_weighted_draws_per_rank_beyond_a_python_index_are_refused_up_front():
    with pytest.raises(distsampler.ConfigError,
                       match=r"^DistributedWeightedRandomSampler: num_samples 18446744073709551615 on num_replicas 2 "
                             r"gives 9223372036854775808 draws per rank \(expected at most 9223372036854775807"):
        DistributedWeightedRandomSampler([1.0, 2.0], num_samples=2**64 - 1, num_replicas=2, rank=0)
    assert len(DistributedWeightedRandomSampler([1.0, 2.0], num_samples=2**64 - 2, num_replicas=2, rank=0)) == 2**63 - 1


@pytest.mark.processes
def test_closing_the_memory_map_under_a_token_sampler_is_refused(probed):
    assert probed("close the memory map") == ("ok", "('BufferError', True)")


@pytest.mark.processes
def test_resizing_the_lengths_under_a_token_sampler_raises_instead_of_reading_freed_memory(probed):
    message = ("TokenBatchSampler: lengths was resized or reallocated after the sampler was built (expected the "
               "array unchanged while the sampler reads it; build a new TokenBatchSampler)")
    assert probed("resize the lengths") == ("ok", repr([message] * 3))


@pytest.mark.processes
def test_a_mixture_of_a_huge_world_answers_one_step_quickly(probed):
    assert probed("mixture of a huge world") == ("ok", "(True, 1)")


# -- state round trips on another world -------------------------------------------------------------------------


def _round_trip(make, take, world_a, world_b, n):
    """Each of world_a ranks reads `take` items and saves; world_b ranks load and read the rest."""
    first, states = [], []
    for r in range(world_a):
        s = make(world_a, r)
        first += [i for item in itertools.islice(iter(s), take) for i in (item if isinstance(item, list) else [item])]
        states.append(s.state_dict(**{s._round_trip_arg: take}))
    assert all(sd == states[0] for sd in states)
    rest = []
    for r in range(world_b):
        s = make(world_b, r)
        s.load_state_dict(states[0])
        rest += [i for item in s for i in (item if isinstance(item, list) else [item])]
    assert sorted(first + rest) == list(range(n))


def _sampler(world, rank, n, seed):
    s = DistributedSampler(range(n), world, rank, seed=seed, tail="uneven")
    s._round_trip_arg = "samples"
    return s


def _batches(world, rank, n, seed):
    s = DistributedBatchSampler(range(n), 3, world, rank, accumulation_steps=2, seed=seed, tail="uneven")
    s._round_trip_arg = "batches"
    return s


def _tokens(world, rank, n, seed):
    lengths = (np.arange(n, dtype=np.uint32) * 7919 % 50 + 1).astype(np.uint32)
    s = TokenBatchSampler(lengths, 120, world, rank, accumulation_steps=2, window=40, seed=seed)
    s._round_trip_arg = "batches"
    return s


@pytest.mark.parametrize("make", [_sampler, _batches, _tokens])
@QUICK
@given(n=st.integers(min_value=1, max_value=150), seed=st.integers(min_value=0, max_value=2**64 - 1),
       world_a=st.integers(min_value=1, max_value=5), world_b=st.integers(min_value=1, max_value=5),
       take=st.integers(min_value=0, max_value=8))
def test_a_state_resumes_on_a_random_other_world_reading_every_remaining_index_once(make, n, seed, world_a, world_b,
                                                                                  take):
    first = make(world_a, 0, n, seed)
    take = min(take, len(first))
    _round_trip(lambda w, r: make(w, r, n, seed), take, world_a, world_b, n)


@QUICK
@given(sizes=st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=6).filter(lambda s: sum(s) > 0),
       world_a=st.integers(min_value=1, max_value=4), world_b=st.integers(min_value=1, max_value=4),
       batches=st.integers(min_value=0, max_value=3), seed=st.integers(min_value=0, max_value=2**64 - 1))
def test_a_shard_stream_state_resumes_on_a_random_other_world_reading_every_remaining_index_once(
        sizes, world_a, world_b, batches, seed):
    streams = [ShardStream(sizes, world_a, r, seed=seed, tail="uneven") for r in range(world_a)]
    reads = [[x.index for x in s.worker_samples(0, 1)] for s in streams]
    done = min(batches, min(len(m) for m in reads) // 2)  # batches of 2 every rank's one worker delivered
    first = [i for m in reads for i in m[: 2 * done]]
    states = [s.state_dict(batches=done, batch_size=2, num_workers=1) for s in streams]
    assert all(sd == states[0] for sd in states)
    rest = []
    for r in range(world_b):
        s = ShardStream(sizes, world_b, r, seed=seed, tail="uneven")
        s.load_state_dict(states[0])
        rest += [x.index for x in s]
    assert sorted(first + rest) == list(range(sum(sizes)))


# Every bool argument of the library's own samplers takes True or False only: bool() would read the
# strings "False" and "no" as True. (DistributedSampler keeps torch's truthiness for `shuffle`.)
FLAGS = [("DistributedBatchSampler", "shuffle"), ("DistributedBatchSampler", "as_numpy"),
         ("MixtureBatchSampler", "shuffle"), ("MixtureBatchSampler", "replacement"),
         ("MixtureBatchSampler", "as_pairs"), ("PackedSequenceSampler", "split_long"),
         ("PackedSequenceSampler", "shuffle"), ("ShardStream", "shuffle"), ("TokenBatchSampler", "longest_first"),
         ("TokenBatchSampler", "shuffle")]


@pytest.mark.parametrize("family,arg", FLAGS)
@pytest.mark.parametrize("value", ["False", "no", "", 0, 1, 1.0, None, [False]])
def test_bool_arguments_refuse_strings_numbers_and_none_by_name(family, arg, value):
    with pytest.raises(distsampler.ConfigError) as info:
        build(family, **{arg: value})
    assert str(info.value) == f"{family}: {arg} {value!r} is not a bool (expected True or False)"


@pytest.mark.parametrize("family,arg", FLAGS)
@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_bool_arguments_take_python_and_numpy_bools(family, arg, value):
    sampler = build(family, **{arg: value})
    assert getattr(sampler, arg) is bool(value)


def test_the_loaders_padding_mask_is_a_bool():
    from distsampler.torch import DataLoader
    with pytest.raises(distsampler.ConfigError) as info:
        DataLoader(range(10), sampler=build("DistributedSampler"), padding_mask="False")
    assert str(info.value) == "DataLoader: padding_mask 'False' is not a bool (expected True or False)"


@pytest.mark.parametrize("value,message", [
    ("7", "seed '7' is not an integer (expected an int)"),
    (1.5, "seed 1.5 is not an integer (expected an int)"),
    (True, "seed True is a bool (expected an int)"),
    (1 << 64, f"seed {1 << 64} is out of range (expected -2^63..2^64-1, as torch.manual_seed)"),
])
def test_stream_dataset_seeds_are_checked_as_every_samplers_are(tmp_path, value, message):
    from distsampler.torch import StreamDataset
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
    with pytest.raises(distsampler.ConfigError) as info:
        StreamDataset([str(tmp_path / "a.jsonl")], num_replicas=1, rank=0, micro_batch=1, seed=value)
    assert str(info.value) == f"StreamDataset: {message}"
    # -1 is 2^64 - 1, as torch takes negative seeds
    assert StreamDataset([str(tmp_path / "a.jsonl")], num_replicas=1, rank=0, micro_batch=1, seed=-1).seed == (1 << 64) - 1


@pytest.mark.parametrize("value,message", [
    ([-1], "byte size -1 is out of range (expected 0..18446744073709551615)"),
    ([1 << 64], f"byte size {1 << 64} is out of range (expected 0..18446744073709551615)"),
    (["12"], "byte size '12' is not an integer (expected an int)"),
    (7, "byte_sizes 7 is not a sequence (expected a list of byte sizes, 'auto' or None)"),
])
def test_stream_dataset_byte_sizes_are_refused_by_name(tmp_path, value, message):
    from distsampler.torch import StreamDataset
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
    with pytest.raises(distsampler.ConfigError) as info:
        StreamDataset([str(tmp_path / "a.jsonl")], num_replicas=1, rank=0, micro_batch=1, byte_sizes=value)
    assert str(info.value) == f"StreamDataset: {message}"


def test_bad_window_chunk_and_pad_id_are_refused_naming_the_python_argument():
    from distsampler.torch.packing import collate_packed
    lengths = np.array([5, 6, 7], dtype=np.uint32)
    cases = [
        (lambda: PackedSequenceSampler(lengths, 8, num_replicas=1, rank=0, window=0),
         "PackedSequenceSampler: window is 0 (expected at least 1)"),
        (lambda: PackedSequenceSampler(lengths, 8, num_replicas=1, rank=0, chunk=0),
         "PackedSequenceSampler: chunk is 0 (expected at least 1)"),
        (lambda: collate_packed([], 8, pad_id=1 << 64),
         "collate_packed: pad_id 18446744073709551616 is out of range (expected -2^63..2^63-1: input_ids are int64)"),
        (lambda: collate_packed([], 8, pad_id="0"), "collate_packed: pad_id '0' is not an integer (expected an int)"),
    ]
    for make, message in cases:
        with pytest.raises(distsampler.ConfigError) as info:
            make()
        assert str(info.value) == message


def test_a_tokenizing_iterable_around_a_sharded_dataset_is_pointed_to_decode(tmp_path):
    import torch
    from distsampler.torch import DataLoader, ShardedDataset
    (tmp_path / "a.jsonl").write_text('{"t": "a b"}\n{"t": "c"}\n')

    class Tokenized(torch.utils.data.IterableDataset):
        def __init__(self, inner):
            self.inner = inner

        def __iter__(self):
            return (len(r["t"]) for r in self.inner)

    inner = ShardedDataset([str(tmp_path / "a.jsonl")], num_replicas=1, rank=0, cache=False)
    with pytest.raises(distsampler.ConfigError) as info:
        DataLoader(Tokenized(inner), batch_size=None)
    assert str(info.value) == (
        "DataLoader: the IterableDataset Tokenized wraps a ShardedDataset, whose position this loader cannot follow "
        "through your __iter__ (expected the ShardedDataset itself as the dataset: to tokenize or transform its "
        "records, pass the function as ShardedDataset(..., decode=fn))")
