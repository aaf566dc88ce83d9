#!/usr/bin/env bash
# Launches 8 ranks of torch_mesh_rank torchrun-style on 127.0.0.1 (a free port) as the global ranks of MESH.
# SPDX-License-Identifier: MIT
# usage: mesh_launch.sh TORCH_MESH_RANK MESH CASES
set -euo pipefail
bin="$1" mesh="$2" cases="$3" world=8
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
pids=()
for rank in $(seq 0 $((world - 1))); do
  RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$bin" "$mesh" >"$out/rank$rank.txt" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for rank in $(seq 0 $((world - 1))); do
  if ! grep -q "^rank $rank: torch mesh $mesh: $cases passed, 0 failed$" "$out/rank$rank.txt"; then
    echo "rank $rank did not pass all $cases cases; its output:"
    cat "$out/rank$rank.txt"
    status=1
  fi
done
if [ "$status" -eq 0 ]; then
  cat "$out/rank0.txt"
  echo "torch mesh guard $mesh: $world ranks as expected"
fi
exit "$status"
