#!/usr/bin/env bash
# Launches the demo's ranks as separate processes, as torchrun would, then judges what they read.
# SPDX-License-Identifier: MIT
# usage: launch_demo.sh BIN_DIR [DATASET_SIZE]
set -euo pipefail
bin="$1"
size="${2:-5003}"
world=4 workers=2 epochs=2 micro_batch=8
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "launching $world ranks x $workers loader workers over $size samples, $epochs epochs (shared seed 42)"
pids=()
for rank in $(seq 0 $((world - 1))); do
  # What torchrun sets for each process it starts on one node.
  RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$world \
    "$bin/demo_rank" "$size" "$epochs" "$micro_batch" "$out" > "$out/rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
cat "$out"/rank*.log
if [[ $status -ne 0 ]]; then echo "a rank failed"; exit 1; fi
echo
"$bin/demo_verify" "$size" "$world" "$workers" "$epochs" "$out"
