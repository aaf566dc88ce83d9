#!/bin/sh
# Demo: 2 ranks x 2 workers read a sharded dataset as separate processes; then a stop anywhere and elastic resumes.
# SPDX-License-Identifier: MIT
# Usage: shard_demo.sh [path/to/shard_reader]
set -eu
reader=$(cd "$(dirname "${1:-./shard_reader}")" && pwd)/$(basename "${1:-./shard_reader}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$reader" write "$dir"

# Runs one segment: $1 = segment name, $2 = ranks, $3 = workers, $4 = stop, $5 = state to resume.
segment() {
  pids=""
  rank=0
  while [ "$rank" -lt "$2" ]; do
    RANK=$rank WORLD_SIZE=$2 "$reader" read "$dir" "$1" "$3" "$4" ${5:+"$5"} & pids="$pids $!"
    rank=$((rank + 1))
  done
  for p in $pids; do wait "$p"; done
}

# 1. A whole epoch on 2 ranks x 2 workers: every record exactly once (plus flagged padding).
segment whole 2 2 all
(cd "$dir" && "$reader" check "$dir" read-whole-*)

# 2. Stop 2 x 2 after each rank's loader yielded 7 batches of 3 (worker 0 read 12
#    samples, worker 1 read 9: neither at a block boundary), resume on 3 ranks x 1
#    worker and stop again after 5 batches of 5, then finish on 1 rank x 3 workers.
segment a 2 2 7x3
echo "saved: $(cat "$dir/state-a.txt")"
segment b 3 1 5x5 "$dir/state-a.txt"
echo "saved: $(cat "$dir/state-b.txt")"
segment c 1 3 all "$dir/state-b.txt"
(cd "$dir" && "$reader" check "$dir" read-a-* read-b-* read-c-*)
echo "shard demo: all stages OK"
