#!/usr/bin/env bash
# Launches 4 ranks of torch_guard_rank torchrun-style on 127.0.0.1 (a free port) and checks every rank's output.
# SPDX-License-Identifier: MIT
# usage: guard_launch.sh TORCH_GUARD_RANK MODE (torch_guard_rank's modes; in the fault modes rank 2 fails the others,
# in the host-die modes rank 0, the store's host)
set -euo pipefail
bin="$1" mode="$2" world=4
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
pids=()
for rank in $(seq 0 $((world - 1))); do
  RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$bin" "$mode" >"$out/rank$rank.txt" 2>&1 &
  pids+=($!)
done
status=0
start=$SECONDS
# In the fault modes rank 2 (host-die: rank 0) may die (SIGKILL) or leave early: only the others must exit 0.
victim=2
if [[ "$mode" == host-die-* ]]; then victim=0; fi
for rank in $(seq 0 $((world - 1))); do
  if ! wait "${pids[$rank]}" && { [ "$rank" -ne "$victim" ] || [[ "$mode" != die-* && "$mode" != host-die-* ]]; }; then
    status=1
  fi
done
elapsed=$((SECONDS - start))
if [ "$elapsed" -gt 15 ]; then echo "the ranks took $elapsed s (expected a few: the guard waits 1 s)"; status=1; fi

who='distsampler::torch_guard::check_epoch'
expect=()
case "$mode" in
  ok) expect=("distributed epoch 0: ok: disjoint and covering over 4 ranks \(1003 reads of 1003 expected, 1 padding\)"
              "distributed epoch 1: ok: disjoint and covering over 4 ranks"
              "distributed epoch 2: ok: disjoint and covering over 4 ranks"
              "resumed: ok: disjoint and covering over 4 ranks \(703 reads of 703 expected, 1 padding\)"
              "batch: ok: disjoint and covering over 4 ranks \(960 reads of 960 expected, 0 padding\)"
              "shard: ok: disjoint and covering over 4 ranks \(1000 reads of 1000 expected, 0 padding\)"
              "adapter: ok: disjoint and covering over 4 ranks \(1000 reads of 1000 expected, 0 padding\)") ;;
  seed) expect=("config_error: $who: rank 2 has seed 43, rank 0 has 42 \(expected the same on every rank\)") ;;
  families)
    for family in distributed batch shard tokens mixture pack weighted stream; do
      expect+=("$family: ok: disjoint and covering over 4 ranks")
    done ;;
  families-seed)
    for family in distributed batch shard tokens mixture pack weighted stream; do
      expect+=("$family: config_error: $who: rank 2 has seed 43, rank 0 has 42 \\(expected the same on every rank\\)")
    done ;;
  world) expect=("config_error: $who: rank 1 has world_size 5, rank 0 has 4 \(expected the same on every rank\)") ;;
  rank) expect=("config_error: $who: rank 3 of 4 built its sampler as rank 1 of 4 \(expected its own rank 3 of 4\)") ;;
  overlap) expect=("overlap: overlap: 1 extra reads \(1004 reads of 1003 expected, 0 padding\)") ;;
  absent|die-before|late)
    expect=("config_error: $who: rank 2 did not arrive within 1 s \(expected all 4 ranks to call the guard, equally often, on one store\)") ;;
  die-publish|die-read)
    expect=("config_error: $who: rank 2 arrived but did not finish within 1 s \(expected all 4 ranks to call the guard, equally often, on one store; it died or stalled inside\)") ;;
  die-after) expect=("die-after: ok: disjoint and covering over 4 ranks") ;;
  # The store dies with its host: every live rank fails, naming itself, the store keys it
  # could not reach and that the store's server is gone (or the host it waited for); none says ok.
  host-die-publish|host-die-read)
    expect=("config_error: $who: rank ([123] failed to [a-z]+ the store keys under 'distsampler/guard/[0-9/a-z]+' \\(expected all 4 ranks to call the guard, equally often, on one store\\): [^;]+; the store's server is gone \\(a TCPStore's runs in the process that created it, usually rank 0, which has died or closed it\\): restart every rank from the last checkpoint|0 (did not arrive|arrived but did not finish) within 1 s .*)") ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
# The ranks that must print the expected lines: all but rank 2 when it dies or never calls.
ranks="0 1 2 3"
case "$mode" in absent|die-before|die-publish|die-read) ranks="0 1 3" ;; host-die-*) ranks="1 2 3" ;; esac
for rank in $ranks; do
  for line in "${expect[@]}"; do
    if ! grep -Eq "^rank $rank: $line" "$out/rank$rank.txt"; then
      echo "rank $rank: missing \"$line\"; its output:"
      cat "$out/rank$rank.txt"
      status=1
    fi
  done
done
for rank in $ranks; do
  if grep -q ": ok: " "$out/rank$rank.txt" && [[ "$mode" == host-die-* ]]; then
    echo "rank $rank says ok though the store's host died inside the guard:"
    cat "$out/rank$rank.txt"
    status=1
  fi
done
if [ "$status" -eq 0 ]; then
  cat "$out/rank${ranks%% *}.txt"
  echo "torch guard $mode: $world ranks as expected"
fi
exit "$status"
