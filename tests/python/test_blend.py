# Tests of distsampler.torch.BlendSampler: the config, the blend over ranks, each source's passes, counts, resume, errors.
# SPDX-License-Identifier: MIT
import json
import math
import pickle
import struct

import numpy as np
import torch
import pytest

import distsampler
import distsampler.torch as dst
from distsampler.torch import BlendSampler, PackedSequenceSampler, read_blend_config

L = 16


def lengths(n, seed):
    rng = np.random.default_rng(seed)
    return [int(x) for x in np.clip(rng.lognormal(2.5, 0.8, size=n), 0, 60)]


def config(**changes):
    c = {"seq_len": L, "mode": "concat", "mix": "sequences", "seed": 42, "labels": False,
         "micro_batch_size": 2, "accumulation_steps": 2,
         "sources": [{"name": "web", "lengths": lengths(50, 1), "weight": 0.7},
                     {"name": "code", "lengths": lengths(20, 2), "weight": 0.3}],
         "weight_schedule": [[6, {"web": 0.2, "code": 0.8}]],
         "end": {"steps": 14}, "window": 8, "chunk": 2}
    c.update(changes)
    return {k: v for k, v in c.items() if v is not None}


def global_order(cfg, world, micro):
    """Every rank's micro-batches of a sampler of `world` ranks, in (step, k, rank) order."""
    samplers = [BlendSampler(cfg, world, r) for r in range(world)]
    per_rank = [list(s) for s in samplers]
    accumulation = samplers[0].accumulation_steps
    out = []
    for j in range(len(per_rank[0])):
        for r in range(world):
            out.extend(tuple(seq) for seq in per_rank[r][j])
    assert all(len(p) == len(per_rank[0]) for p in per_rank)
    assert samplers[0].micro_batch_size == micro and accumulation >= 1
    return out


@pytest.mark.parametrize("mode", ["concat", "best-fit"])
def test_order_over_ranks_is_independent_of_the_world_and_reads_each_source_pass_once(mode):
    cfg = config(mode=mode)
    # G = 2 x 2 ranks x 2 = 8: the same global order as 1 rank x 8 or 4 ranks x 1 x 2.
    two = global_order(cfg, 2, 2)
    one = global_order(config(mode=mode, micro_batch_size=8, accumulation_steps=1), 1, 8)
    four = global_order(config(mode=mode, micro_batch_size=1, accumulation_steps=2), 4, 1)
    assert two == one == four
    assert len(two) == 14 * 8
    # Each source's sequences, grouped into its passes by an independent PackedSequenceSampler
    # of one rank (seed splitmix64(seed ^ splitmix64(i + 1)), pass q its epoch q): the same
    # sequences in the same order.
    mask = (1 << 64) - 1

    def splitmix64(x):
        z = (x + 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    passes = []
    for i, source in enumerate(cfg["sources"]):
        read = [tuple((d, o, n) for _, d, o, n in seq) for seq in two if seq[0][0] == source["name"]]
        assert all(piece[0] == source["name"] for seq in two if seq[0][0] == source["name"] for piece in seq)
        expected, q = [], 0
        while len(expected) < len(read):
            p = PackedSequenceSampler(source["lengths"], L, 1, 1, 0, mode=mode, window=8, chunk=2,
                                      seed=splitmix64(42 ^ splitmix64(i + 1)))
            p.set_epoch(q)
            pass_sequences = [tuple(seq) for mb in p for seq in mb if seq]
            # Within a pass: every token (concat) or document (best-fit) once.
            tokens = {}
            for seq in pass_sequences:
                for d, o, n in seq:
                    for t in range(o, o + n):
                        assert (d, t) not in tokens
                        tokens[(d, t)] = True
            total = sum(source["lengths"])
            assert len(tokens) == (total // L * L if mode == "concat" else total)
            expected.extend(pass_sequences)
            q += 1
        assert read == expected[:len(read)]
        passes.append(q)
    assert max(passes) >= 2  # a source ran out and started a new pass


def test_every_global_batch_holds_floor_or_ceil_of_its_share_and_prefixes_stay_within_2():
    cfg = config()
    order = global_order(cfg, 2, 2)
    g = 8
    count = {"web": 0, "code": 0}
    ideal = {"web": 0.0, "code": 0.0}
    for p, seq in enumerate(order):
        step = p // g
        w = {"web": 0.7, "code": 0.3} if step < 6 else {"web": 0.2, "code": 0.8}
        count[seq[0][0]] += 1
        for name in count:
            ideal[name] += w[name]
            assert abs(count[name] - ideal[name]) <= 2 + 1e-9
        if p % g == g - 1:
            block = [s[0][0] for s in order[p - g + 1:p + 1]]
            for name in count:
                assert math.floor(g * w[name] - 1e-9) <= block.count(name) <= math.ceil(g * w[name] + 1e-9)


def test_state_dict_resumes_on_another_world_and_micro_batch_with_exactly_the_rest():
    cfg = config()
    order = global_order(cfg, 2, 2)
    samplers = [BlendSampler(cfg, 2, r) for r in range(2)]
    for s in samplers:
        it = iter(s)
        for _ in range(7):  # 3 steps and one micro-batch of the 4th
            next(it)
    state = samplers[0].state_dict(received=7)
    assert state == samplers[1].state_dict(received=7)
    consumed = 7 * 2 * 2  # micro-batch rounds x ranks x micro-batch size
    # Resumed on 4 ranks x 1 x 2 (the same G): the rest, in the global order.
    resumed = [BlendSampler(config(micro_batch_size=1, accumulation_steps=2), 4, r) for r in range(4)]
    for r in resumed:
        r.load_state_dict(state)
    pickled = pickle.dumps(resumed[0])  # a pickle keeps the loaded, not yet iterated state
    per_rank = [list(r) for r in resumed]
    rest = [tuple(seq) for j in range(len(per_rank[0])) for r in range(4) for seq in per_rank[r][j]]
    assert rest == order[consumed:]
    # Another global batch (3 on 1 rank) keeps the run's order with the run's mixing block; without it the
    # state is refused naming it.
    other = BlendSampler(config(micro_batch_size=3, accumulation_steps=1, mixing_block=8), 1, 0)
    other.load_state_dict(state)
    assert [tuple(seq) for mb in other for seq in mb] == order[consumed:]
    with pytest.raises(distsampler.StateError, match=r"mixing block differs \(state 8, sampler 3; expected the run's"):
        BlendSampler(config(micro_batch_size=3, accumulation_steps=1), 1, 0).load_state_dict(state)
    again = pickle.loads(pickled)
    assert [list(map(tuple, mb)) for mb in again] == [list(map(tuple, mb)) for mb in per_rank[0]]


def test_the_guard_sums_of_every_rank_cover_the_run_once():
    cfg = config()
    sums = [BlendSampler(cfg, 2, r)._guard_sums() for r in range(2)]
    assert all(s[0] == 14 * 8 for s in sums)  # the run's positions are the slots
    assert sums[0][1] != sums[1][1]  # the ranks read different positions
    assert BlendSampler(cfg, 2, 0)._guard_description()["token_layout"] == \
        BlendSampler(cfg, 2, 1)._guard_description()["token_layout"]


def test_the_checkpointing_loader_saves_what_the_loop_received():
    cfg = config()
    s = BlendSampler(cfg, 1, 0)
    class Pieces:  # the dataset: a sequence's pieces as they are
        def __getitem__(self, sequence):
            return sequence

    loader = dst.DataLoader(Pieces(), batch_sampler=s, num_workers=0, collate_fn=lambda batch: batch)
    got = []
    for j, batch in enumerate(loader):
        got.append(batch)
        if j == 4:
            break
    state = loader.state_dict()
    assert state["sampler"] == "BlendSampler" and state["batches"] == 5
    fresh = BlendSampler(cfg, 1, 0)
    again = dst.DataLoader(Pieces(), batch_sampler=fresh, num_workers=0, collate_fn=lambda batch: batch)
    again.load_state_dict(state)
    rest = list(again)
    assert len(rest) == len(s) - 5
    with pytest.raises(distsampler.ConfigError, match=r"padding_mask=True is not available for BlendSampler"):
        dst.DataLoader(Pieces(), batch_sampler=BlendSampler(cfg, 1, 0), padding_mask=True)
    assert [list(map(tuple, b)) for b in got] + [list(map(tuple, b)) for b in rest] == \
        [list(map(tuple, b)) for b in BlendSampler(cfg, 1, 0)]


def test_config_from_a_file_with_counts_and_megatron_lengths(tmp_path):
    (tmp_path / "code.txt").write_text("5\n17\n0\n9\n33\n")
    sizes = [12, 0, 40, 7]
    body = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, 4, 5) + struct.pack("<4i", *sizes)
    body += struct.pack("<4q", 0, 24, 24, 104) + struct.pack("<5q", 0, 1, 2, 3, 4)
    (tmp_path / "web.idx").write_bytes(body)
    (tmp_path / "web.bin").write_bytes(b"\x00" * 2 * sum(sizes))
    cfg = config(sources=[{"name": "web", "lengths": "web.idx", "weight": 1},
                          {"name": "code", "lengths": "code.txt", "weight": 1}],
                 weight_schedule=[], end={"steps": 3})
    (tmp_path / "blend.json").write_text(json.dumps(cfg))
    c = read_blend_config(str(tmp_path / "blend.json"))
    assert [a.tolist() for a in c["lengths"]] == [sizes, [5, 17, 0, 9, 33]]
    from_file = [list(map(tuple, mb)) for mb in BlendSampler(str(tmp_path / "blend.json"), 1, 0)]
    cfg["sources"][0]["lengths"], cfg["sources"][1]["lengths"] = sizes, [5, 17, 0, 9, 33]
    assert from_file == [list(map(tuple, mb)) for mb in BlendSampler(cfg, 1, 0)]
    assert len(from_file) == 3 * 2
    with pytest.raises(distsampler.ConfigError, match=r"line 2 is 'x' \(expected one token count"):
        (tmp_path / "bad.txt").write_text("5\nx\n")
        read_blend_config(config(sources=[{"name": "a", "lengths": str(tmp_path / "bad.txt"), "weight": 1}]))


@pytest.mark.parametrize("changes, message", [
    ({"mix": "documents"}, 'mix \'documents\' is not supported (expected "sequences"; "documents" is not implemented yet)'),
    ({"labels": True}, "labels True is not supported (expected false; labels are not implemented yet)"),
    ({"mode": "pack"}, 'mode \'pack\' is unknown (expected "concat" or "best-fit")'),
    ({"colour": 1}, "config key 'colour' is unknown (expected one of seq_len, mode"),
    ({"seq_len": "16"}, "seq_len is '16' (expected an integer >= 0)"),
    ({"global_batch_size": 8}, "accumulation_steps and global_batch_size (or global_batch_schedule) were both given"),
    ({"global_batch_schedule": [[0, 8], [5, 16]], "accumulation_steps": None}, "global_batch_schedule [[0, 8], [5, 16]] is not supported"),
    ({"sources": []}, "sources is [] (expected a non-empty list"),
    ({"sources": [{"name": "a", "lengths": [20], "weight": 1, "x": 1}]}, "sources[0] key 'x' is unknown"),
    ({"sources": [{"name": "a", "lengths": [20]}]}, "sources[0] has no 'weight'"),
    ({"sources": [{"name": "a/b", "lengths": [20], "weight": 1}]}, "sources[0] name 'a/b' is not a name"),
    ({"sources": [{"name": "a", "lengths": [20], "weight": 1}, {"name": "a", "lengths": [20], "weight": 1}]},
     "sources[1] name 'a' is also sources[0]'s (expected unique names)"),
    ({"sources": [{"name": "a", "lengths": [20], "weight": -1}]}, "sources[0] weight is -1 (expected a finite number"),
    ({"sources": [{"name": "a", "lengths": 7, "weight": 1}]}, "sources[0] lengths is 7 (expected a list of token"),
    ({"sources": [{"name": "a", "lengths": "/nonexistent/a.txt", "weight": 1}]}, "cannot be read"),
    ({"weight_schedule": [[5, {"web": 1}]]}, "weight_schedule[0] has no weight for source 'code'"),
    ({"weight_schedule": [[5, {"web": 1, "code": 1, "math": 1}]]}, "weight_schedule[0] names source 'math'"),
    ({"weight_schedule": [5]}, "weight_schedule[0] is 5 (expected [step, {name: weight, ...}])"),
    ({"end": {"tokens": 5}}, "end is {'tokens': 5} (expected {\"steps\": n})"),
    ({"end": {"steps": 0}}, "BlendOptions: end_steps is 0"),
    ({"seq_len": 0}, "BlendOptions: seq_len 0 is out of range"),
    ({"seq_len": 100}, "BlendSampler: sources[1] packs into no sequence"),
    ({"weight_schedule": [[0, {"web": 1, "code": 1}]]}, "schedule[0] (step 0) is not after step 0"),
])
def test_bad_configs_raise_config_error_naming_the_field(changes, message):
    cfg = config(**changes)
    if "seq_len" in changes and changes["seq_len"] == 100:
        cfg["sources"][1]["lengths"] = [5, 6]
    with pytest.raises(distsampler.ConfigError) as e:
        BlendSampler(cfg, 1, 0)
    assert message in str(e.value)


def test_config_that_is_not_an_object_or_json(tmp_path):
    with pytest.raises(distsampler.ConfigError, match=r"config is list \(expected a JSON object or a dict\)"):
        BlendSampler([1], 1, 0)
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(distsampler.ConfigError, match=r"config '.*x\.json' is not JSON"):
        BlendSampler(str(tmp_path / "x.json"), 1, 0)
    with pytest.raises(distsampler.ConfigError, match=r"config '.*y\.json' cannot be read"):
        BlendSampler(str(tmp_path / "y.json"), 1, 0)


def test_a_state_of_another_config_is_refused_naming_the_field():
    s = BlendSampler(config(), 1, 0)
    it = iter(s)
    next(it)
    state = s.state_dict(received=1)
    for changes, message in [({"seq_len": 8}, "seq_len differs (state 16, sampler 8)"),
                             ({"mode": "best-fit"}, "mode differs (state concat, sampler best-fit)"),
                             ({"seed": 43}, "seed differs (state 42, sampler 43)"),
                             ({"end": {"steps": 15}}, "end_steps differs (state 14, sampler 15)")]:
        other = BlendSampler(config(**changes), 1, 0)
        with pytest.raises(distsampler.StateError) as e:
            other.load_state_dict(state)
        assert message in str(e.value)
    cfg = config()
    cfg["sources"][0]["lengths"] = cfg["sources"][0]["lengths"][:-1] + [cfg["sources"][0]["lengths"][-1] + 1]
    with pytest.raises(distsampler.StateError, match=r"sources\[0\] lengths differs"):
        BlendSampler(cfg, 1, 0).load_state_dict(state)
    cfg = config()
    cfg["sources"][1]["weight"] = 0.5
    with pytest.raises(distsampler.StateError, match="weights or schedule differ"):
        BlendSampler(cfg, 1, 0).load_state_dict(state)


def _cli():
    """The `distsampler` program: $DISTSAMPLER_CLI, else the one beside the build's extension (build/X/cli)."""
    import os
    from pathlib import Path

    from distsampler import _core
    path = os.environ.get("DISTSAMPLER_CLI") or str(Path(_core.__file__).resolve().parent.parent.parent / "cli" /
                                                     "distsampler")
    return path if os.path.isfile(path) else None


@pytest.mark.processes
@pytest.mark.cli
@pytest.mark.parametrize("mode", ["concat", "best-fit"])
def test_the_cli_prints_the_sequences_python_yields(tmp_path, mode):
    import subprocess

    cli = _cli()
    assert cli is not None, "no distsampler program beside the extension (set DISTSAMPLER_CLI)"
    cfg = config(mode=mode)
    (tmp_path / "blend.json").write_text(json.dumps(cfg))
    out = subprocess.run([cli, "blend", "--config", str(tmp_path / "blend.json"), "--world", "2", "--rank", "1"],
                         capture_output=True, text=True, check=True).stdout
    lines = [line for line in out.splitlines() if line.startswith("step ")]
    printed = []
    for mb in BlendSampler(cfg, 2, 1):
        printed.append(" ".join("[" + " ".join(f"{s}/{d}:{o}+{n}" for s, d, o, n in seq) + "]" for seq in mb))
    assert [line.split(": ", 1)[1] for line in lines] == printed


def test_the_dataset_and_collate_give_each_sequence_its_tokens():
    cfg = config(mode="best-fit")
    arrays = {}
    for k, source in enumerate(cfg["sources"]):
        n = source["lengths"]
        offsets = np.concatenate([[0], np.cumsum(n)[:-1]]).astype(np.int64)
        # Token t of document d of source k is k * 10^6 + d * 1000 + t: each token says where it is from.
        tokens = np.concatenate([k * 10**6 + d * 1000 + np.arange(m) for d, m in enumerate(n)]).astype(np.int64)
        arrays[source["name"]] = (tokens, offsets)
    data = dst.BlendDataset(arrays)
    s = BlendSampler(cfg, 2, 0)
    loader = dst.DataLoader(data, batch_sampler=s, num_workers=0,
                            collate_fn=lambda batch: dst.collate_blend(batch, seq_len=L))
    names = [source["name"] for source in cfg["sources"]]
    for j, batch in enumerate(loader):
        assert batch["input_ids"].shape == (2, L)
        for row, pieces in enumerate(batch["pieces"]):
            expected = [names.index(src) * 10**6 + d * 1000 + t for src, d, o, n in pieces for t in range(o, o + n)]
            got = batch["input_ids"][row].tolist()
            assert got[:len(expected)] == expected and all(x == 0 for x in got[len(expected):])
            assert batch["num_tokens"][row] == len(expected)
            assert batch["sources"][row] == pieces[0][0]
        if j == 5:
            break
    with pytest.raises(distsampler.ConfigError, match="BlendDataset has no source 'math'"):
        data[[("math", 0, 0, 1)]]


class _Pieces(torch.utils.data.Dataset):
    """The dataset of the loader tests: a sequence's pieces as they are."""

    def __getitem__(self, sequence):
        return tuple(sequence)


def _as_is(batch):
    return batch


@pytest.mark.processes
def test_the_loader_with_workers_checkpoints_what_the_loop_received_and_resumes_on_another_shape():
    cfg = config(global_batch_size=8, accumulation_steps=None)
    order = global_order(config(micro_batch_size=8, accumulation_steps=1), 1, 8)
    loaders = [dst.DataLoader(_Pieces(), batch_sampler=BlendSampler(cfg, 2, r), num_workers=2, collate_fn=_as_is)
               for r in range(2)]
    iters = [iter(loader) for loader in loaders]
    got = [[next(it) for _ in range(7)] for it in iters]  # 7 micro-batches of 2 on each of 2 ranks (G = 8)
    states = [loader.state_dict() for loader in loaders]
    assert states[0]["state"] == states[1]["state"] and states[0]["batches"] == 7
    read = [seq for j in range(7) for r in range(2) for seq in got[r][j]]
    assert read == order[:28]
    # Resumed on 4 ranks of micro-batch 1 (G = 8 still), 2 workers each: exactly the rest.
    small = dict(cfg, micro_batch_size=1)
    resumed = []
    for r in range(4):
        loader = dst.DataLoader(_Pieces(), batch_sampler=BlendSampler(small, 4, r), num_workers=2, collate_fn=_as_is)
        loader.load_state_dict(states[0])
        resumed.append(list(loader))
    rest = [seq for j in range(len(resumed[0])) for r in range(4) for seq in resumed[r][j]]
    assert rest == order[28:]
