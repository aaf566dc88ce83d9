#!/usr/bin/env bash
# distsampler tests: the `distsampler` command's output, exit codes and usage errors.
# SPDX-License-Identifier: MIT
set -u
cli="$1"
failures=0
passed=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect CODE PATTERN -- ARGS...: runs the CLI, checks the exit code and that the
# combined output matches the extended regex PATTERN.
expect() {
  local code="$1" pattern="$2"
  shift 3
  local out rc
  out="$("$cli" "$@" 2>&1)"
  rc=$?
  if [[ $rc -ne $code ]]; then fail "distsampler $* exited $rc, expected $code"$'\n'"$out"; return; fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then fail "distsampler $*: output does not match /$pattern/"$'\n'"$out"; return; fi
  passed=$((passed + 1))
}

# torch.utils.data.DistributedSampler(range(10), 4, r, seed=42), set_epoch(1): [8,5,2] [4,1,3] [9,6,8] [0,7,4].
got="$("$cli" indices --size 10 --world 4 --rank 2 --seed 42 --epoch 1 --shuffle torch | tr '\n' ' ')"
[[ "$got" == "9 6 8 " ]] && passed=$((passed + 1)) || fail "indices rank 2 gave '$got', torch gives '9 6 8 '"
got="$("$cli" indices --size 10 --world 4 --rank 3 --seed 42 --epoch 1 --shuffle torch --tail drop | tr '\n' ' ')"
[[ "$got" == "0 7 " ]] && passed=$((passed + 1)) || fail "drop tail gave '$got', torch gives '0 7 '"
got="$("$cli" indices --size 10 --world 4 --rank 1 --shuffle none --tail uneven | tr '\n' ' ')"
[[ "$got" == "1 5 9 " ]] && passed=$((passed + 1)) || fail "unshuffled uneven gave '$got'"
# torch seed -1 is 2^64 - 1.
[[ "$("$cli" indices --size 50 --world 2 --rank 0 --seed -1 --shuffle torch)" == \
   "$("$cli" indices --size 50 --world 2 --rank 0 --seed 18446744073709551615 --shuffle torch)" ]] &&
  passed=$((passed + 1)) || fail "--seed -1 differs from --seed 2^64-1"

# The first K of a huge dataset come at once: nothing is materialised.
lines="$("$cli" indices --size 18446744073709551615 --world 64 --rank 5 --count 1000 | wc -l)"
[[ "$lines" -eq 1000 ]] && passed=$((passed + 1)) || fail "--count 1000 printed $lines lines"

expect 0 '^ok: N=10 W=4 tail=pad counts 3..3 padding 2 duplicates 0 missing 0' -- check --size 10 --world 4 --seed 42 --epoch 1 --shuffle torch
expect 0 '     2           3        1  9 6 8\*' -- check --size 10 --world 4 --seed 42 --epoch 1 --shuffle torch
expect 0 '^ok: N=1001 W=7 tail=uneven counts 143..143' -- check --size 1001 --world 7 --tail uneven
expect 0 '^ok: N=1000 W=7 tail=uneven counts 142..143' -- check --size 1000 --world 7 --tail uneven
expect 0 '^ok: N=1000 W=7 tail=drop counts 142..142 padding 0 duplicates 0 missing 6' -- check --size 1000 --world 7 --tail drop --shuffle none
expect 1 '^FAILED: .*not disjoint' -- check --size 1000 --world 4 --per-rank-seed
expect 1 '^FAILED: .*not disjoint' -- check --size 1000 --world 4 --per-rank-seed --shuffle torch

# shards: per-consumer read plans and a verdict, from a list or a file of shard sizes.
expect 0 '^ok: N=1142 W=4 tail=pad counts 286..286 padding 2 duplicates 0 missing 0' -- shards --shard-sizes 100,0,5,1000,37 --world 2 --workers 2
expect 0 '^rank 1 worker 1: 286 samples: ' -- shards --shard-sizes 100,0,5,1000,37 --world 2 --workers 2 --rank 1
sizes_file="$(mktemp)"
printf '10\n1000000\n0\n7\n' >"$sizes_file"
expect 0 '^ok: N=1000017 W=6 tail=drop' -- shards --shard-sizes "$sizes_file" --world 3 --workers 2 --tail drop --epoch 2
expect 0 'at most 2 shards open per consumer' -- shards --shard-sizes "$sizes_file" --world 3 --workers 2 --max-open-shards 2
rm -f "$sizes_file"
expect 2 '--shard-sizes "nope.txt" is neither a comma-separated list nor a readable file' -- shards --shard-sizes nope.txt --world 2 --workers 1
expect 2 '--workers is required for shards' -- shards --shard-sizes 5,5 --world 2
expect 2 '--size is not used by shards' -- shards --shard-sizes 5,5 --world 2 --workers 1 --size 10
expect 2 'StreamingShardSampler: num_workers is 0' -- shards --shard-sizes 5,5 --world 2 --workers 0
# Runs of one record and windows of 4: every range is one record; still a clean verdict.
got="$("$cli" shards --shard-sizes 40,50,6 --world 2 --workers 1 --run-length 1 --window 4 --rank 0 --ranges 20 |
  grep -o '[0-9]*\[[0-9]*,[0-9]*)' | tr '[,)' '   ' | awk '$3 - $2 != 1' | wc -l)"
[[ "$got" == "0" ]] && passed=$((passed + 1)) || fail "--run-length 1 printed $got ranges longer than one record"
expect 0 '^ok: N=96 W=2 tail=pad' -- shards --shard-sizes 40,50,6 --world 2 --workers 1 --run-length 1 --window 4
expect 2 'StreamingShardSampler: shuffle_window is 0 \(expected at least 1\)' -- shards --shard-sizes 5,5 --world 2 --workers 1 --window 0

# batches and state: Megatron's layout, position = s*G + (k*W + r)*m + e, unshuffled.
expect 0 '^step 1 rank 1: \[10 11\] \[14 15\]$' -- batches --size 20 --world 2 --micro-batch 2 --accum 2 --shuffle none
expect 0 '^global batch 8 = micro-batch 2 x world_size 2 x accumulation 2; 2 steps' -- batches --size 20 --world 2 --micro-batch 2 --accum 2 --rank 0
expect 0 '^step 2 rank 0: \[16\*? ?' -- batches --size 20 --world 2 --micro-batch 2 --accum 2 --tail pad --shuffle none
state="$("$cli" state --size 20 --world 2 --micro-batch 2 --accum 2 --step 2 --shuffle none)"
[[ "$state" =~ ^distsampler-state\ v3\ sampler=batch\ dataset_size=20\ seed=0\ shuffle=false\ tail=drop\ engine=identity/1\ layout=0x0{16}\ epoch=0\ consumed=16\ checksum=0x[0-9a-f]{16}$ ]] &&
  passed=$((passed + 1)) || fail "state printed '$state'"
# Resume on 3 ranks instead of 2: the 4 remaining positions, one full global batch of 3.
expect 0 '^step 0 rank 2: \[18\]$' -- batches --size 20 --world 3 --micro-batch 1 --accum 1 --shuffle none --resume "$state"
expect 2 'tail differs \(state drop, sampler uneven\)' -- batches --size 20 --world 3 --micro-batch 1 --accum 1 --shuffle none --tail uneven --resume "$state"
expect 2 'dataset_size' -- batches --size 21 --world 3 --micro-batch 1 --accum 1 --shuffle none --resume "$state"
expect 2 'SamplerState' -- batches --size 20 --world 3 --micro-batch 1 --accum 1 --resume "distsampler-state v9"
expect 2 '--micro-batch is required for batches' -- batches --size 20 --world 2 --accum 1
expect 2 'DistributedBatchSampler: micro_batch_size is 0' -- batches --size 20 --world 2 --micro-batch 0 --accum 1
expect 2 'DistributedBatchSampler::state: steps_done 9 exceeds num_steps 2' -- state --size 20 --world 2 --micro-batch 2 --accum 2 --step 9

expect 2 'missing command' --
expect 2 'unknown command "shuffle"' -- shuffle
expect 2 'unknown flag "--wrld" for indices' -- indices --size 10 --wrld 3
expect 2 '--size is required for indices' -- indices --world 2 --rank 0
expect 2 '--rank is required for indices' -- indices --size 10 --world 2
expect 2 '--size "1e6" is not a decimal integer' -- indices --size 1e6 --world 2 --rank 0
expect 2 '--size "99999999999999999999" overflows 64 bits' -- indices --size 99999999999999999999 --world 2 --rank 0
expect 2 '--seed "-9223372036854775809" is below -2\^63' -- indices --size 9 --world 2 --rank 0 --seed -9223372036854775809
expect 2 '--shuffle "random" is unknown \(expected feistel, torch or none\)' -- indices --size 10 --world 2 --rank 0 --shuffle random
expect 2 '--tail "last" is unknown \(expected pad, drop or uneven\)' -- check --size 10 --world 2 --tail last
expect 2 '--torch-generation "v3" is unknown' -- check --size 10 --world 2 --torch-generation v3
expect 2 '--epoch needs a value' -- check --size 10 --world 2 --epoch
expect 2 '--world given twice' -- check --size 10 --world 2 --world 3
expect 2 '--rank is not used by check' -- check --size 10 --world 2 --rank 1
expect 2 'World: rank 4 is out of range for world_size 4 \(expected 0..3\)' -- indices --size 10 --world 4 --rank 4
expect 2 'World: world_size is 0 \(expected at least 1\)' -- indices --size 10 --world 0 --rank 0
expect 2 'usage:' -- indices --size 10 --wrld 3

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
