#!/usr/bin/env python3
# Checks docs/ARCHITECTURE.md's layer rule on the include graph of include/distsampler.
# SPDX-License-Identifier: MIT
"""Reads every header's quoted #include lines and fails, naming both files, on an include that
points from a lower layer to a higher one.

The layers, lowest first (docs/ARCHITECTURE.md):

  base        version.hpp, error.hpp, detail/*       (detail/ includes nothing but base)
  vocabulary  options.hpp, world.hpp, mesh.hpp, state.hpp, lengths.hpp, state/*   (values every part shares)
  order       permutation_traits.hpp, feistel.hpp, permutation.hpp, epoch_order.hpp
  layout      partition.hpp, batch_layout.hpp, worker_schedule.hpp
  samplers    the top-level samplers and checks, and one folder per family (shards/,
              mixture/, tokens/, ...); a family includes the core, never another family,
              and its detail/ is included only from inside the family. The one exception,
              COMPOSED below: a composed family may include the public headers (never
              detail/) of the families it is built from (blend/: mixture/ and packing/);
              they never include it
  umbrella    distsampler.hpp
  adapters    fmt.hpp, mpi.hpp, torch.hpp, torch_guard.hpp, torch/*, mpi/*, and any
              FAMILY/mpi.hpp, FAMILY/torch*.hpp, FAMILY/fmt.hpp

A top-level sampler header including a family folder is a hub, and fails too. So does an
include cycle among the headers (two headers that include each other, or a longer loop):
each header's includes form a tree, so a header never depends on being included from the
end of another one (a family's guard.hpp includes its sampler, never the other way round).
usage: check_layers.py INCLUDE_DIR | --self-test   (INCLUDE_DIR holds distsampler/)
"""
import os
import re
import sys

LAYERS = ["base", "vocabulary", "order", "layout", "samplers", "umbrella", "adapters"]
TOP = {
    "version.hpp": "base",
    "error.hpp": "base",
    "options.hpp": "vocabulary",
    "world.hpp": "vocabulary",
    "mesh.hpp": "vocabulary",
    "state.hpp": "vocabulary",
    "lengths.hpp": "vocabulary",
    "permutation_traits.hpp": "order",
    "feistel.hpp": "order",
    "permutation.hpp": "order",
    "epoch_order.hpp": "order",
    "partition.hpp": "layout",
    "batch_layout.hpp": "layout",
    "worker_schedule.hpp": "layout",
    "verify.hpp": "samplers",
    "overlap_check.hpp": "samplers",
    "mesh_check.hpp": "samplers",
    "store_exchange.hpp": "samplers",
    "distsampler.hpp": "umbrella",
    "fmt.hpp": "adapters",
    "mpi.hpp": "adapters",
    "torch.hpp": "adapters",
    "torch_guard.hpp": "adapters",
}
FOLDERS = {"detail": "base", "state": "vocabulary", "torch": "adapters", "mpi": "adapters"}
# A composed family and the families whose public headers it may include (docs/ARCHITECTURE.md).
COMPOSED = {"blend": {"mixture", "packing"}}
ADAPTER_NAME = re.compile(r"^(mpi|fmt|torch[a-z_]*)\.hpp$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def place(rel):
    """(layer, family or None) of a header path relative to distsampler/."""
    parts = rel.split("/")
    if len(parts) == 1:
        if rel not in TOP:
            raise SystemExit(f"check_layers: {rel} has no layer: add it to the table in {__file__}")
        return TOP[rel], None
    if parts[0] in FOLDERS:
        return FOLDERS[parts[0]], None
    if ADAPTER_NAME.match(parts[-1]):
        return "adapters", parts[0]
    return "samplers", parts[0]


def violations(root):
    base = os.path.join(root, "distsampler")
    headers = []
    for d, _, files in os.walk(base):
        for f in files:
            if f.endswith(".hpp"):
                headers.append(os.path.relpath(os.path.join(d, f), base).replace(os.sep, "/"))
    out = []
    graph = {}
    for rel in sorted(headers):
        layer, family = place(rel)
        text = open(os.path.join(base, rel), encoding="utf-8").read()
        graph[rel] = []
        for inc in INCLUDE.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), inc)).replace(os.sep, "/")
            if target in headers:
                graph[rel].append(target)
            if target.startswith(".."):
                out.append(f"{rel} includes \"{inc}\", outside include/distsampler")
                continue
            if target not in headers:
                out.append(f"{rel} includes \"{inc}\", which does not exist")
                continue
            t_layer, t_family = place(target)
            parts = target.split("/")
            if LAYERS.index(t_layer) > LAYERS.index(layer):
                out.append(f"{rel} ({layer}) includes {target} ({t_layer}): a lower layer points to a higher one")
            elif rel.startswith("detail/") and not (target.startswith("detail/") or target in ("version.hpp",
                                                                                             "error.hpp")):
                out.append(f"{rel} (detail) includes {target}: detail/ includes only detail/, version.hpp, error.hpp")
            elif t_family is not None and family is None and layer == "samplers":
                out.append(f"{rel} (a top-level sampler header) includes {target} of the family {t_family}/: "
                           f"a hub; declare what it needs next to the family instead")
            elif (t_family is not None and family is not None and t_family != family and layer != "adapters"
                  and not (t_family in COMPOSED.get(family, ()) and "detail" not in parts)):
                out.append(f"{rel} (family {family}/) includes {target} of another family ({t_family}/)")
            elif rel == "distsampler.hpp" and "detail" in parts:
                out.append(f"{rel} includes {target}: the umbrella includes public headers only, no detail/")
            elif len(parts) > 2 and parts[1] == "detail" and family != parts[0]:
                out.append(f"{rel} includes {target}: {parts[0]}/detail/ is used only inside {parts[0]}/")
    out.extend(cycles(graph))
    return out, len(headers)


def cycles(graph):
    """One message per include cycle of `graph` (header -> headers it includes), naming every
    file on it: "a.hpp and b.hpp include each other" or "include cycle: a -> b -> c -> a"."""
    out, seen, state = [], set(), {}

    def visit(node, path):
        state[node] = "open"
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == "open":
                loop = path[path.index(nxt):]
                key = frozenset(loop)
                if key not in seen:
                    seen.add(key)
                    if len(loop) == 2:
                        out.append(f"{loop[0]} and {loop[1]} include each other: an include cycle "
                                   f"(move what both need into a header of its own)")
                    else:
                        out.append("include cycle: " + " -> ".join(loop + [nxt]))
            elif nxt not in state:
                visit(nxt, path)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return out


def self_test():
    """Plants one violation of each kind in a small tree and checks each is reported with both files."""
    import tempfile
    planted = {
        "detail/mix.hpp": ('"../options.hpp"', "detail/mix.hpp (base) includes options.hpp (vocabulary)"),
        "partition.hpp": ('"verify.hpp"', "partition.hpp (layout) includes verify.hpp"),
        "verify.hpp": ('"shards/walk.hpp"', "verify.hpp (a top-level sampler header) includes shards/walk.hpp"),
        "tokens/plan.hpp": ('"../shards/walk.hpp"', "tokens/plan.hpp (family tokens/) includes shards/walk.hpp"),
        "mixture/node.hpp": ('"../shards/detail/holes.hpp"', "mixture/node.hpp (family mixture/) includes shards/detail"),
        "state.hpp": ('"mpi.hpp"', "state.hpp (vocabulary) includes mpi.hpp (adapters)"),
        "distsampler.hpp": ('"shards/detail/holes.hpp"', "distsampler.hpp includes shards/detail/holes.hpp: the umbrella"),
        "tokens/guard.hpp": ('"sampler.hpp"', "tokens/guard.hpp and tokens/sampler.hpp include each other"),
        "tokens/sampler.hpp": ('"guard.hpp"', None),
        "world.hpp": ('"mesh.hpp"', "include cycle: lengths.hpp -> world.hpp -> mesh.hpp -> lengths.hpp"),
        "mesh.hpp": ('"lengths.hpp"', None),
        "lengths.hpp": ('"world.hpp"', None),
        # The composed family: its allowed includes pass, the rest of the rule still holds.
        "blend/sampler.hpp": ('"../mixture/schedule.hpp"', None),
        "blend/options.hpp": ('"../packing/options.hpp"', None),
        "blend/walk.hpp": ('"../shards/walk.hpp"', "blend/walk.hpp (family blend/) includes shards/walk.hpp"),
        "blend/plan.hpp": ('"../packing/detail/plan.hpp"', "blend/plan.hpp (family blend/) includes packing/detail/plan.hpp"),
        "mixture/schedule.hpp": ('"../blend/guard.hpp"', "mixture/schedule.hpp (family mixture/) includes blend/guard.hpp"),
    }
    clean = ["version.hpp", "error.hpp", "options.hpp", "verify.hpp", "shards/walk.hpp",
             "shards/detail/holes.hpp", "mpi.hpp", "fmt.hpp", "packing/options.hpp", "packing/detail/plan.hpp",
             "blend/guard.hpp"]
    with tempfile.TemporaryDirectory() as tmp:
        for rel in clean + list(planted):
            path = os.path.join(tmp, "distsampler", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            inc = planted[rel][0] if rel in planted else '"version.hpp"' if "/" not in rel else '"../version.hpp"'
            if "/detail/" in rel:
                inc = '"../../version.hpp"'
            with open(path, "w", encoding="utf-8") as f:
                f.write("" if rel == "version.hpp" else f"#include {inc}\n")
        found, _ = violations(tmp)
    wanted = [want for _, want in planted.values() if want is not None]
    missing = [want for want in wanted if not any(v.startswith(want) for v in found)]
    extra = len(found) - len(wanted)
    for want in missing:
        print("self-test: not reported:", want)
    if missing or extra:
        print(f"check_layers self-test FAILED: {len(missing)} planted violations missed, {extra} extra reports:",
              *found, sep="\n  ")
        return 1
    print(f"check_layers self-test: ok: all {len(wanted)} planted violations reported, each naming both files")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found, count = violations(argv[1])
    for v in found:
        print("layer violation:", v)
    if found:
        print(f"check_layers: {len(found)} includes break the layer rule in {count} headers")
        return 1
    print(f"check_layers: ok: {count} headers, every include points down or sideways within its layer")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
