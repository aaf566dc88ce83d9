#!/bin/sh
# Demo: 2 ranks x 2 workers read a sharded dataset as separate processes; then an elastic resume on 3 ranks x 1 worker.
# SPDX-License-Identifier: MIT
# Usage: shard_demo.sh [path/to/shard_reader]
set -eu
reader=$(cd "$(dirname "${1:-./shard_reader}")" && pwd)/$(basename "${1:-./shard_reader}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$reader" write "$dir"

# 1. A whole epoch on 2 ranks x 2 workers: every record exactly once (plus flagged padding).
pids=""
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 "$reader" read "$dir" 2 & pids="$pids $!"
done
for p in $pids; do wait "$p"; done
(cd "$dir" && "$reader" check "$dir" read-a-*)

# 2. Stop 2 x 2 after 16 samples per worker, resume the rest on 3 ranks x 1 worker.
rm -f "$dir"/read-*
pids=""
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 "$reader" read "$dir" 2 16 & pids="$pids $!"
done
for p in $pids; do wait "$p"; done
echo "saved: $(cat "$dir/state.txt")"
pids=""
for rank in 0 1 2; do
  RANK=$rank WORLD_SIZE=3 "$reader" read "$dir" 1 18446744073709551615 "$dir/state.txt" & pids="$pids $!"
done
for p in $pids; do wait "$p"; done
(cd "$dir" && "$reader" check "$dir" read-a-* read-b-*)
