#!/usr/bin/env bash
# Launches the libtorch example as 2 ranks (torchrun-style environment) and checks what they loaded.
# SPDX-License-Identifier: MIT
# usage: launch_libtorch.sh BIN_DIR
set -euo pipefail
bin="$1" size=1000 world=2
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
pids=()
for rank in $(seq 0 $((world - 1))); do
  RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$world "$bin/libtorch_loader" $size "$out" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
"$bin/demo_verify" $size $world 1 2 "$out"
