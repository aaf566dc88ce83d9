# distsampler tests: every family's options (C++ options struct, Python constructor) reach the CLI or are listed API-only.
# SPDX-License-Identifier: MIT
"""usage: cli_options_test.py DISTSAMPLER_CLI

Reads each family's C++ options struct (its fields and those of the OrderOptions /
BatchShapeOptions it derives from) and Python constructor (parsed, not imported), and the
flags `distsampler COMMAND --help` lists. Fails for an option that is neither reachable by
a flag of the family's command nor in API_ONLY (docs/CLI.md lists the same), and for an
API_ONLY entry that is no longer an option."""
import ast
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INCLUDE = os.path.join(ROOT, "include", "distsampler")
PYTHON = os.path.join(ROOT, "python", "distsampler", "torch")

# family: (command or None, C++ header, options struct, Python module, Python class)
FAMILIES = {
    "DistributedSampler": ("indices", "options.hpp", "SamplerOptions", "sampler.py", "DistributedSampler"),
    "DistributedBatchSampler": ("batches", "options.hpp", "BatchSamplerOptions", "batch.py",
                                "DistributedBatchSampler"),
    "StreamingShardSampler": ("shards", "shards/options.hpp", "ShardSamplerOptions", "shards.py", "ShardStream"),
    "TokenBatchSampler": ("tokens", "tokens/options.hpp", "TokenBatchOptions", "tokens.py", "TokenBatchSampler"),
    "MixtureSampler": ("mix", "mixture/options.hpp", "MixtureOptions", "mixture.py", "MixtureBatchSampler"),
    "PackedSequenceSampler": ("pack", "packing/options.hpp", "PackOptions", "packing.py", "PackedSequenceSampler"),
    "StreamSampler": ("stream", "streams/options.hpp", "StreamOptions", "streams.py", "StreamDataset"),
    "BlendSampler": ("blend", "blend/options.hpp", "BlendOptions", "blend.py", "BlendSampler"),
    "WeightedSampler": (None, "weighted/options.hpp", "WeightedSamplerOptions", "weighted.py",
                        "DistributedWeightedRandomSampler"),
}

# The flag an option (C++ field or Python argument, one name for both where they agree) is set by.
FLAG = {
    "dataset": "--size", "num_replicas": "--world", "rank": "--rank", "shuffle": "--shuffle", "seed": "--seed",
    "tail": "--tail", "drop_last": "--tail", "order": "--shuffle", "torch_generation": "--torch-generation",
    "micro_batch_size": "--micro-batch", "accumulation_steps": "--accum", "shard_sizes": "--shard-sizes",
    "num_workers": "--workers", "preset": "--preset", "max_open_shards": "--max-open-shards",
    "run_length": "--run-length", "shuffle_window": "--run-window", "lengths": "--lengths",
    "max_tokens": "--max-tokens", "sources": "--sources", "weights": "--weights",
    "schedule": "--schedule", "end": "--end", "end_count": "--end-count", "seq_len": "--seq-len",
    "mode": "--mode", "chunk": "--chunk", "split_long": "--no-split", "global_batch_size": "--global-batch",
    "paths": "--shard-sizes", "micro_batch": "--micro-batch", "byte_sizes": "--byte-sizes", "filter": "--keep",
    "share": "--share", "plan_limit": "--plan-limit",
}

# Options whose flag depends on the family (0.3 names each window by what it holds).
FAMILY_FLAG = {
    ("TokenBatchSampler", "window"): "--sort-window",
    ("PackedSequenceSampler", "window"): "--document-window",
}
# The blend reads its settings from the JSON config file (`--config`), the Python class from the same config.
FAMILY_FLAG.update({("BlendSampler", option): "--config" for option in (
    "config", "seq_len", "mode", "window", "chunk", "split_long", "mixing_block", "schedule", "end_steps", "shuffle",
    "seed", "micro_batch_size", "accumulation_steps", "global_batch_size")})

# Options no command reaches, per family: they shape how a program consumes a sampler.
API_ONLY = {
    "DistributedSampler": set(),
    "DistributedBatchSampler": {"epoch_mode", "global_batch_size", "as_numpy"},
    "StreamingShardSampler": {"canonical_streams", "rotate_shards", "state_capacity", "shuffle"},
    "TokenBatchSampler": {"cost", "quadratic_q", "max_samples", "batch_multiple", "longest_first", "oversize",
                          "shuffle"},
    "MixtureSampler": {"global_batch_size", "mixing_block", "replacement", "as_pairs", "shuffle", "tail"},
    "PackedSequenceSampler": {"shuffle"},
    "StreamSampler": {"format", "packer", "state_capacity"},
    "BlendSampler": {"plan_limit"},
    "WeightedSampler": {"weights", "num_samples", "replacement", "num_replicas", "rank", "seed", "tail"},
}

FIELD = re.compile(r"^  (?:[A-Za-z_:<>0-9]+) ([a-z_][a-z0-9_]*)(?: = [^;]*)?;")


def struct_fields(header, name):
    """The data members of `struct name` in `header`, with those of OrderOptions/BatchShapeOptions it derives from."""
    lines = open(os.path.join(INCLUDE, header)).read().splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(rf"^struct {name}\b", l)), None)
    if start is None:
        sys.exit(f"FAIL: no struct {name} in {header}")
    fields, bases = set(), lines[start]
    for line in lines[start + 1:]:
        if line.startswith("};"):
            break
        m = FIELD.match(line)
        if m and "(" not in line:
            fields.add(m.group(1))
    for base in ("OrderOptions", "BatchShapeOptions"):
        if base + "<" in bases:
            fields |= struct_fields("options.hpp", base)
    return fields


def constructor_args(module, name):
    tree = ast.parse(open(os.path.join(PYTHON, module)).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    a = item.args
                    return {x.arg for x in a.args + a.kwonlyargs if x.arg != "self"}
    sys.exit(f"FAIL: no {name}.__init__ in {module}")


def unlisted_families():
    """Options structs of sampler families (deriving OrderOptions) that FAMILIES does not name."""
    listed = {v[2] for v in FAMILIES.values()}
    found = set()
    for folder, _, files in os.walk(INCLUDE):
        for name in files:
            if name.endswith(".hpp"):
                text = open(os.path.join(folder, name)).read()
                found.update(re.findall(r"^struct (\w+Options) : OrderOptions<", text, re.M))
    return sorted(found - listed)


def main():
    cli = sys.argv[1]
    failures, checked = [], 0
    for struct in unlisted_families():
        failures.append(f"{struct} is a family's options struct that FAMILIES does not list (expected its command, "
                        f"header, Python class, and an API_ONLY entry)")
    for family, (command, header, struct, module, cls) in FAMILIES.items():
        flags = set()
        if command:
            out = subprocess.run([cli, command, "--help"], capture_output=True, text=True, check=True).stdout
            flags = set(re.findall(r"^\s+(--[a-z-]+)", out, re.M))
        options = struct_fields(header, struct) | constructor_args(module, cls)
        for option in sorted(options):
            checked += 1
            flag = FAMILY_FLAG.get((family, option), FLAG.get(option))
            if flag in flags or option in API_ONLY[family]:
                continue
            where = f"`distsampler {command}` has no {flag or 'flag for it'}" if command else "no command"
            failures.append(f"{family}: option {option} is not reachable from the CLI ({where}) and not listed "
                            f"as API-only (expected a flag, or an entry in API_ONLY and docs/CLI.md)")
        for stale in sorted(API_ONLY[family] - options):
            failures.append(f"{family}: API_ONLY lists {stale}, which is no option of {struct} or {cls}")
    for f in failures:
        print("FAIL:", f)
    print(f"cli options: {checked} options of {len(FAMILIES)} families, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
