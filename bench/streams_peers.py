# Read-time streams side by side: distsampler's passes, WebDataset's resampled shards with with_epoch, HF's split_dataset_by_node.
# SPDX-License-Identifier: MIT
"""One run over the same played dataset (shards of random sizes, some empty, a read-time
filter keeping about 60%), W ranks x K loader workers, micro-batches of B kept samples; and
the drift between consumers with and without byte hints and a share among every consumer.

The peers are transcribed from their documented rules, not run:

- WebDataset ``ResampledShards`` + ``with_epoch(n)``: every worker draws shards with
  replacement from the shard list with its own generator, reads each drawn shard through,
  and stops after n samples (n = the pass's kept samples / consumers).
- HF ``split_dataset_by_node`` on an iterable dataset: when shards % world_size == 0 rank r
  reads shards r, r + W, ...; otherwise every rank reads every example and keeps those whose
  position i has i % W == r. Loader workers then split a rank's shards (worker w: w, w + K, ...).

Columns, over one pass's worth of kept samples (the samples a pass holds): kept samples
read twice or more / never; steps until the first rank would stall (another rank still has
data, so a collective waits forever); reads of records the rank then discards (beyond the
filter's own). Run: ``python3 bench/streams_peers.py`` with the package built.
"""

import random
import sys

from distsampler import _core


def mix64(z):
    m = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def dataset(shards, seed):
    rng = random.Random(seed)
    sizes = [0 if rng.random() < 0.1 else rng.randint(50, 400) for _ in range(shards)]
    offsets = [sum(sizes[:s]) for s in range(shards)]
    return sizes, offsets


def kept(g):
    return (mix64(g) >> 11) < int(0.6 * (1 << 53))


def ours(sizes, offsets, world, workers, batch, steps):
    consumers = world * workers
    cursors = [_core.StreamCursor(len(sizes), [], 0, consumers, c) for c in range(consumers)]
    seen = {}

    def read(pass_, shard, record):
        if record >= sizes[shard]:
            return None
        return 1 if kept(offsets[shard] + record) else 0

    for t in range(steps):
        for r in range(world):
            for pass_, shard, record, _, _ in cursors[r * workers + t % workers].next(batch, read):
                if pass_ == 0:
                    g = offsets[shard] + record
                    seen[g] = seen.get(g, 0) + 1
    return seen, None, 0


def webdataset(sizes, offsets, world, workers, batch, total_kept):
    consumers = world * workers
    per_worker = total_kept // consumers  # with_epoch's n
    seen = {}
    for c in range(consumers):
        rng = random.Random(1000 + c)
        got = 0
        while got < per_worker:
            s = rng.randrange(len(sizes))
            for rec in range(sizes[s]):
                g = offsets[s] + rec
                if kept(g):
                    seen[g] = seen.get(g, 0) + 1
                    got += 1
                    if got == per_worker:
                        break
    return seen, None, 0


def huggingface(sizes, offsets, world, workers, batch):
    shards = len(sizes)
    seen, per_rank, wasted = {}, [], 0
    for r in range(world):
        count = 0
        if shards % world == 0:
            mine = list(range(r, shards, world))
            records = [(s, i) for s in mine for i in range(sizes[s])]
        else:
            every = [(s, i) for s in range(shards) for i in range(sizes[s])]
            records = [x for k, x in enumerate(every) if k % world == r]
            wasted += len(every) - len(records)
        for s, i in records:
            g = offsets[s] + i
            if kept(g):
                seen[g] = seen.get(g, 0) + 1
                count += 1
        per_rank.append(count)
    stall = min(per_rank) // batch
    return seen, (stall if min(per_rank) != max(per_rank) else None), wasted


def row(name, seen, stall, wasted, all_kept):
    twice = sum(1 for g in all_kept if seen.get(g, 0) >= 2)
    never = sum(1 for g in all_kept if g not in seen)
    stall_text = "never" if stall is None else str(stall)
    print(f"| {name} | {twice} | {never} | {stall_text} | {wasted} |")


def drift(shards, consumers, hinted, share=1, filtered=True, passes=20, batch=4):
    """The largest pass difference between two consumers over `passes` passes (share 0: every consumer;
    `filtered`: the 60% read-time filter, else every record kept)."""
    sizes, offsets = dataset(shards, shards + consumers)
    hints = list(sizes) if hinted else []
    cursors = [_core.StreamCursor(shards, hints, 0, consumers, c, share=share) for c in range(consumers)]

    def read(pass_, shard, record):
        if record >= sizes[shard]:
            return None
        return 1 if not filtered or kept(offsets[shard] + record) else 0

    total = sum(1 for s in range(shards) for g in range(offsets[s], offsets[s] + sizes[s]) if not filtered or kept(g))
    worst = 0
    for _ in range(passes * total // (consumers * batch)):
        for c in cursors:
            c.next(batch, read)
        p = [c.progress()[0] for c in cursors]
        worst = max(worst, max(p) - min(p))
    return worst


def main():
    print("| shards | consumers | byte hints | share | filter | max drift (passes) over 20 passes |")
    print("|---|---|---|---|---|---|")
    for shards, consumers in ((16, 8), (64, 8), (256, 8), (64, 32)):
        for hinted, share, filtered in ((False, 1, True), (True, 1, True), (False, 0, True), (False, 0, False)):
            print(f"| {shards} | {consumers} | {'yes' if hinted else 'no'} | {'all' if share == 0 else share} | "
                  f"{'60%' if filtered else 'none'} | {drift(shards, consumers, hinted, share, filtered)} |")
    world, workers, batch = 4, 2, 8
    for shards in (6, 64):
        sizes, offsets = dataset(shards, shards)
        all_kept = [g for s in range(shards) for g in range(offsets[s], offsets[s] + sizes[s]) if kept(g)]
        steps = 3 * len(all_kept) // (world * batch)  # enough for every consumer to leave pass 0
        print(f"\n{shards} shards, {sum(sizes)} records, {len(all_kept)} kept, world {world} x workers {workers}, "
              f"B {batch}")
        print("| reader | kept read twice+ | kept never read | steps until a rank stalls | discarded reads |")
        print("|---|---|---|---|---|")
        row("distsampler passes", *ours(sizes, offsets, world, workers, batch, steps), all_kept)
        row("WebDataset resampled + with_epoch", *webdataset(sizes, offsets, world, workers, batch, len(all_kept)),
            all_kept)
        row("HF split_dataset_by_node", *huggingface(sizes, offsets, world, workers, batch), all_kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
