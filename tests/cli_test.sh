#!/usr/bin/env bash
# distsampler tests: the `distsampler` command's output, exit codes, help, and a table of hostile inputs it must refuse.
# SPDX-License-Identifier: MIT
#
# Usage: cli_test.sh [--part NAME] path/to/distsampler [DOC.md...]   (CLI_CASE_TIMEOUT=seconds per run, default 20)
# Each DOC's ```console blocks are transcripts checked at the end (see below). --part runs one part of the
# table (CTest runs the parts beside each other): outputs, help, refusals, mix-pack-stream, refusals-more, tokens-limits, mesh, index, blend, transcripts; without it, all.
set -u
parts=(outputs help refusals mix-pack-stream refusals-more tokens-limits mesh index blend transcripts)
only=""
if [[ "${1:-}" == --part ]]; then
  only="${2:-}"
  [[ " ${parts[*]} " == *" $only "* ]] || { echo "cli_test.sh: --part '$only' is not a part (expected one of: ${parts[*]})"; exit 2; }
  shift 2
fi
# part NAME: whether this run checks part NAME.
part() { [[ -z "$only" || "$only" == "$1" ]]; }
cli="$1"
shift
docs=("$@")
limit="${CLI_CASE_TIMEOUT:-20}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
passed=0
big=18446744073709551615
over=18446744073709551616

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# What a refusal must never show: the library's class names, an uncaught exception, a sanitizer report.
internal='DistributedSampler|DistributedBatchSampler|StreamingShardSampler|SamplerState|PartitionChecker|TorchRandperm'
internal+='|TokenBatchSampler|TokenBatchOptions|TokenWindow|PackedSequenceSampler|PackOptions'
internal+='|World:|terminate called|what\(\)|Sanitizer|runtime error|Aborted|core dumped'

# run ARGS...: runs the CLI under the per-run timeout; sets rc, out (stdout) and err (stderr).
run() {
  timeout -k 2 "$limit" "$cli" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out="$(cat "$tmp/out")"
  err="$(cat "$tmp/err")"
}

# The exit status in words when it is a hang or a crash.
status_text() {
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then echo "timed out after ${limit}s (a hang)"
  elif [[ $rc -gt 128 ]]; then echo "died with signal $((rc - 128))"
  else echo "exited $rc"; fi
}

# expect CODE PATTERN -- ARGS...: the exit code, and stdout+stderr matching the extended regex PATTERN.
expect() {
  local code="$1" pattern="$2"
  shift 3
  run "$@"
  if [[ $rc -ne $code ]]; then fail "distsampler $* $(status_text), expected $code"$'\n'"$out$err"; return; fi
  if ! grep -Eq -- "$pattern" <<<"$out"$'\n'"$err"; then
    fail "distsampler $*: output does not match /$pattern/"$'\n'"$out$err"
    return
  fi
  passed=$((passed + 1))
}

# refuse FLAG MESSAGE ARGS...: exit 2 within the timeout, nothing on stdout, and one error line on stderr
# "distsampler[ command]: ..." that names FLAG (as the user typed it) and contains MESSAGE (a fixed string),
# with no internal class name, uncaught exception or sanitizer report.
refuse() {
  local flag="$1" message="$2"
  shift 2
  run "$@"
  local what="distsampler $(printf '%q ' "$@" | cut -c1-200)"
  if [[ $rc -ne 2 ]]; then fail "$what $(status_text), expected 2"$'\n'"$err"; return; fi
  if [[ -n "$out" ]]; then fail "$what: printed to stdout before refusing:"$'\n'"${out:0:300}"; return; fi
  if [[ "$err" != distsampler* ]]; then fail "$what: stderr does not start with 'distsampler':"$'\n'"$err"; return; fi
  if ! grep -Fq -- "$flag" <<<"$err"; then fail "$what: message does not name $flag:"$'\n'"$err"; return; fi
  if ! grep -Fq -- "$message" <<<"$err"; then fail "$what: message lacks '$message':"$'\n'"$err"; return; fi
  if grep -Eq -- "$internal" <<<"$err"; then fail "$what: message shows internals:"$'\n'"$err"; return; fi
  passed=$((passed + 1))
}

# help_ok ARGS...: exit 0, the usage on stdout, nothing on stderr; every NEEDLE after -- is on stdout.
help_ok() {
  local args=()
  while [[ $# -gt 0 && "$1" != -- ]]; do args+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  run "${args[@]}"
  if [[ $rc -ne 0 || -n "$err" || "$out" != *usage:* ]]; then
    fail "distsampler ${args[*]}: $(status_text), stderr '$err', expected the usage on stdout and exit 0"
    return
  fi
  local needle
  for needle in "$@"; do
    if [[ "$out" != *"$needle"* ]]; then fail "distsampler ${args[*]}: help does not mention $needle"; return; fi
  done
  passed=$((passed + 1))
}

if part outputs; then
# ---------------------------------------------------------------------------------------------------------
# What the commands print.

# torch.utils.data.DistributedSampler(range(10), 4, r, seed=42), set_epoch(1): [8,5,2] [4,1,3] [9,6,8] [0,7,4].
got="$("$cli" indices --size 10 --world 4 --rank 2 --seed 42 --epoch 1 --shuffle torch | tr '\n' ' ')"
[[ "$got" == "9 6 8 " ]] && passed=$((passed + 1)) || fail "indices rank 2 gave '$got', torch gives '9 6 8 '"
got="$("$cli" indices --size=10 --world=4 --rank=2 --seed=42 --epoch=1 --shuffle=torch | tr '\n' ' ')"
[[ "$got" == "9 6 8 " ]] && passed=$((passed + 1)) || fail "--name=VALUE forms gave '$got', torch gives '9 6 8 '"
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
expect 0 '^$' -- indices --size 0 --world 3 --rank 2

expect 0 '^ok: N=10 W=4 tail=pad counts 3..3 padding 2 duplicates 0 missing 0' -- check --size 10 --world 4 --seed 42 \
    --epoch 1 --shuffle torch
expect 0 '     2           3        1  9 6 8\*' -- check --size 10 --world 4 --seed 42 --epoch 1 --shuffle torch
expect 0 '^ok: N=1001 W=7 tail=uneven counts 143..143' -- check --size 1001 --world 7 --tail uneven
expect 0 '^ok: N=1000 W=7 tail=uneven counts 142..143' -- check --size 1000 --world 7 --tail uneven
expect 0 '^ok: N=1000 W=7 tail=drop counts 142..142 padding 0 duplicates 0 missing 6' -- check --size 1000 --world 7 \
    --tail drop --shuffle none
expect 0 '^ok: N=0 W=3 tail=pad counts 0..0' -- check --size 0 --world 3
expect 0 '^ok: N=5 W=1 tail=pad' -- check --size 5 --world 1 --shuffle torch --torch-generation v1
expect 1 '^FAILED: .*not disjoint' -- check --size 1000 --world 4 --per-rank-seed
expect 1 '^FAILED: .*not disjoint' -- check --size 1000 --world 4 --per-rank-seed --shuffle torch

# shards: per-consumer read plans and a verdict, from a list or a file of shard sizes.
expect 0 '^ok: N=1142 W=4 tail=pad counts 286..286 padding 2 duplicates 0 missing 0' -- shards --shard-sizes \
    100,0,5,1000,37 --world 2 --workers 2
expect 0 '^rank 1 worker 1: 286 samples: ' -- shards --shard-sizes 100,0,5,1000,37 --world 2 --workers 2 --rank 1
run shards --shard-sizes 100,0,5,1000,37 --world 2 --workers 2 --rank 1
[[ "$(grep -c '^rank 0' <<<"$out")" -eq 0 && "$(grep -c '^rank 1' <<<"$out")" -eq 2 ]] &&
  passed=$((passed + 1)) || fail "shards --rank 1 printed other ranks' plans:"$'\n'"$out"
sizes_file="$tmp/sizes.txt"
printf '10\n1000000\n0\n7\n' >"$sizes_file"
expect 0 '^ok: N=1000017 W=6 tail=drop' -- shards --shard-sizes "$sizes_file" --world 3 --workers 2 --tail drop \
    --epoch 2
expect 0 'at most 2 shard runs open per consumer' -- shards --shard-sizes "$sizes_file" --world 3 --workers 2 \
    --max-open-shards 2
# Blank lines, spaces and CRLF line ends are accepted; a last line without a newline too.
printf ' 10 \r\n\r\n\t20\r\n30' >"$tmp/crlf.txt"
expect 0 '^ok: N=60 W=2 tail=pad' -- shards --shard-sizes "$tmp/crlf.txt" --world 2 --workers 1
expect 0 '^ok: N=0 W=4 tail=pad' -- shards --shard-sizes 0,0 --world 2 --workers 2
# Runs of one record and windows of 4: every range is one record; still a clean verdict.
got="$("$cli" shards --shard-sizes 4096,5120,1024 --world 2 --workers 1 --run-length 1 --run-window 4 --rank 0 --ranges 20 |
  grep -o '[0-9]*\[[0-9]*,[0-9]*)' | tr '[,)' '   ' | awk '$3 - $2 != 1' | wc -l)"
[[ "$got" == "0" ]] && passed=$((passed + 1)) || fail "--run-length 1 printed $got ranges longer than one record"
expect 0 '^ok: N=10240 W=2 tail=pad' -- shards --shard-sizes 4096,5120,1024 --world 2 --workers 1 --run-length 1 \
    --run-window 4
# --shard-schedule: one consumer of one shard reads it all, slots 0..6; a worker's entries add up to its samples.
expect 0 '^rank 0 worker 0: 7 samples from 1 shards: 0@0-6:7$' -- shards --shard-sizes 7 --world 1 --workers 1 \
    --shard-schedule
got="$("$cli" shards --shard-sizes 100,0,5,1000,37 --world 2 --workers 2 --rank 1 --shard-schedule --ranges 9 |
  grep '^rank 1 worker 1: 286 samples from ' | grep -o ':[0-9]*' | tr -d : | awk '{ s += $1 } END { print s }')"
[[ "$got" == "286" ]] && passed=$((passed + 1)) || fail "--shard-schedule's records add up to $got, not 286"
# --preset sequential: one shard open, and every consumer's ranges of a shard follow each other in increasing
# offsets (tail drop: no padding duplicate); flags given with it override its values; mixed is the default.
expect 0 'at most 1 shard runs open per consumer' -- shards --shard-sizes 3000,0,5,2500,700 --world 2 --workers 2 \
    --preset sequential
got="$("$cli" shards --shard-sizes 3000,0,5,2500,700,64 --world 3 --workers 2 --preset sequential --run-length 50 \
  --tail drop --ranges 1000 | grep '^rank ' | awk '{
    delete last; n = 0
    for (i = 1; i <= NF; ++i) if (split($i, p, /[][,)]/) == 4 && $i ~ /^[0-9]+\[/) {
      ++n; if ((p[1] in last) && p[2] < last[p[1]]) bad++; last[p[1]] = p[3]; if (p[3] - p[2] > 50) bad++
    }
    if (n == 0) bad++
  } END { print bad + 0 }')"
[[ "$got" == "0" ]] && passed=$((passed + 1)) || fail "--preset sequential read $got ranges backwards or longer than 50"
expect 0 '^rank 0 worker 0: [0-9]+ samples: [0-9]+\[[0-9]+,[0-9]+\) ' -- shards --shard-sizes 3000,2500 --world 1 \
    --workers 1 --preset sequential --run-length 100 --tail drop
default_plan="$("$cli" shards --shard-sizes 300,20,450 --world 2 --workers 2 --seed 4)"
mixed_plan="$("$cli" shards --shard-sizes 300,20,450 --world 2 --workers 2 --seed 4 --preset mixed)"
[[ -n "$default_plan" && "$default_plan" == "$mixed_plan" ]] && passed=$((passed + 1)) ||
  fail "--preset mixed differs from the default options"
sequential_plan="$("$cli" shards --shard-sizes 300,20,450 --world 2 --workers 2 --seed 4 --preset sequential)"
[[ "$sequential_plan" != "$mixed_plan" ]] && passed=$((passed + 1)) || fail "--preset sequential reads as mixed"

# batches and state: Megatron's layout, position = s*G + (k*W + r)*m + e, unshuffled.
expect 0 '^step 1 rank 1: \[10 11\] \[14 15\]$' -- batches --size 20 --world 2 --micro-batch 2 --accum 2 --shuffle none
expect 0 '^global batch 8 = micro-batch 2 x world_size 2 x accumulation 2; 2 steps' -- batches --size 20 --world 2 \
    --micro-batch 2 --accum 2 --rank 0
expect 0 '^step 2 rank 0: \[16\*? ?' -- batches --size 20 --world 2 --micro-batch 2 --accum 2 --tail pad --shuffle none
run batches --size 20 --world 2 --micro-batch 2 --accum 2 --shuffle none --steps 1
[[ "$(grep -c '^step' <<<"$out")" -eq 2 && "$out" != *"step 1 "* ]] && passed=$((passed + 1)) ||
  fail "batches --steps 1 printed:"$'\n'"$out"
saved="$("$cli" state --size 20 --world 2 --micro-batch 2 --accum 2 --step 2 --shuffle none)"
[[ "$saved" =~ ^distsampler-state\ v3\ sampler=batch\ dataset_size=20\ seed=0\ shuffle=false\ tail=drop\ engine=identity/1\ layout=0x0{16}\ epoch=0\ consumed=16\ checksum=0x[0-9a-f]{16}$ ]] &&
  passed=$((passed + 1)) || fail "state printed '$saved'"
# Resume on 3 ranks instead of 2: the 4 remaining positions, one full global batch of 3.
expect 0 '^step 0 rank 2: \[18\]$' -- batches --size 20 --world 3 --micro-batch 1 --accum 1 --shuffle none --resume \
    "$saved"
expect 0 '^step 0 rank 2: \[18\]$' -- batches --size 20 --world 3 --micro-batch 1 --accum 1 --shuffle none --resume \
    "$saved" --epoch 0
# A global batch of exactly 2^64-1 fits; one more overflows (refused below).
expect 0 '^distsampler-state v3 sampler=batch dataset_size=5 .* consumed=0 ' -- state --size 5 --world 3 \
    --micro-batch 6148914691236517205 --accum 1 --step 0
# A state of a resumed run: 1 more step of 3 after the 16 consumed.
expect 0 'consumed=19 ' -- state --size 20 --world 3 --micro-batch 1 --accum 1 --shuffle none --resume "$saved" --step 1

fi
if part help; then
# ---------------------------------------------------------------------------------------------------------
# Help: the program's and each command's, exit 0, usage on stdout.
help_ok --help -- indices check shards batches state "exit status"
# Every command is listed, with its usage line: those of the flag table and `index` (its own parser).
help_ok --help -- '  distsampler index [--format' '  index    build (or with --verify check) the cached index' \
    '  tokens   ' '  mix      ' '  pack     ' '  mesh     ' '  stream   '
help_ok -h -- indices check shards batches state
help_ok help -- indices check shards batches state
help_ok help shards -- --shard-sizes --workers --max-open-shards --run-length --run-window --ranges --rank --shard-schedule
help_ok indices --help -- --size --world --rank --count --seed --epoch --shuffle --tail --torch-generation
help_ok check -h -- --size --world --per-rank-seed --shuffle
help_ok shards --help -- --shard-sizes --world --workers --preset --max-open-shards --run-length --run-window --ranges
help_ok batches --help -- --size --world --micro-batch --accum --rank --steps --resume
help_ok state --help -- --size --world --micro-batch --accum --step --resume
help_ok mix --help -- --sources --weights --world --micro-batch --accum --rank --steps --schedule --end --end-count --order
# --help wins wherever it is, even after a bad flag.
help_ok check --size 1 --bogus 2 --help -- --per-rank-seed
for c in indices check shards batches state mix; do
  run "$c" --help
  grep -Eq "^usage: distsampler $c " <<<"$out" && passed=$((passed + 1)) ||
    fail "$c --help does not start with its usage"
done

fi
if part refusals; then
# ---------------------------------------------------------------------------------------------------------
# Hostile inputs: each exits 2 with one message naming the flag as typed, prints nothing on stdout, never
# crashes or hangs (CLI_CASE_TIMEOUT per case).

# The reports that started this table.
refuse --world '--world 0 is too small (expected at least 1)' shards --shard-sizes 10 --world 0 --workers 1
refuse --world "--world $big is too large for check (at most 1048576" check --size 10 --world $big
refuse --size '--size 9223372036854775807 is too large for check (at most 134217728' check --size 9223372036854775807 \
    --world 1
refuse --workers "--workers $big is too large for shards" shards --shard-sizes 10 --world 1 --workers $big
refuse --size '--size 10000000000 is too large for check' check --size 10000000000 --world 1
refuse --world '--world 1000000000 is too large for check' check --size 10 --world 1000000000
refuse --workers '--workers 1000000000 is too large for shards' shards --shard-sizes 10 --world 1 --workers 1000000000
refuse --shard-sizes '--shard-sizes file "/dev/zero", line 1: a NUL byte' shards --shard-sizes /dev/zero --world 1 \
    --workers 1
refuse --world '--world 0 is too small' batches --size 10 --world 0 --micro-batch 1 --accum 1
refuse --rank "--rank $big is out of range for --world 2 (expected 0..1)" batches --size 10 --world 2 --micro-batch 1 \
    --accum 1 --rank $big
refuse --rank '--rank 5 is out of range for --world 2 (expected 0..1)' shards --shard-sizes 10 --world 2 --workers 1 \
    --rank 5
refuse --rank '--rank is not used by state' state --size 10 --world 2 --micro-batch 1 --accum 1 --step 1 --rank 99

# Flags a command does not take.
refuse --workers '--workers is not used by indices' indices --size 10 --world 2 --rank 0 --workers 2
refuse --count '--count is not used by check' check --size 10 --world 2 --count 3
refuse --rank '--rank is not used by check' check --size 10 --world 2 --rank 1
refuse --size '--size is not used by shards' shards --shard-sizes 5,5 --world 2 --workers 1 --size 10
refuse --shuffle '--shuffle is not used by shards' shards --shard-sizes 5,5 --world 2 --workers 1 --shuffle none
refuse --step '--step is not used by batches' batches --size 10 --world 2 --micro-batch 1 --accum 1 --step 1
refuse --steps '--steps is not used by state' state --size 10 --world 2 --micro-batch 1 --accum 1 --step 1 --steps 1
refuse --per-rank-seed '--per-rank-seed is not used by indices' indices --size 10 --world 2 --rank 0 --per-rank-seed
refuse --torch-generation '--torch-generation applies only with --shuffle torch' check --size 10 --world 2 \
    --torch-generation v1
refuse --wrld 'unknown flag "--wrld"; did you mean --world?' indices --size 10 --wrld 3
refuse --bogus 'unknown flag "--bogus"' batches --size 10 --world 2 --micro-batch 1 --accum 1 --bogus=1
refuse -s 'unknown flag "-s"' indices -s 10 --world 2 --rank 0
refuse foo 'unexpected argument "foo"' indices --size 10 --world 2 --rank 0 foo
refuse -- 'unknown flag "--"' indices --size 10 --world 2 --rank 0 --
refuse --per-rank-seed '--per-rank-seed takes no value' check --size 10 --world 2 --per-rank-seed=1
refuse --shard-schedule '--shard-schedule takes no value' shards --shard-sizes 5 --world 1 --workers 1 \
    --shard-schedule=1
refuse --shard-schedule '--shard-schedule is not used by check' check --size 10 --world 2 --shard-schedule

# Flags given twice, in either form.
refuse --world '--world given twice' check --size 10 --world 2 --world 3
refuse --size '--size given twice' check --size=10 --world 2 --size 10
refuse --per-rank-seed '--per-rank-seed given twice' check --size 10 --world 2 --per-rank-seed --per-rank-seed

# Missing flags and missing values.
refuse --size '--size is required for indices' indices --world 2 --rank 0
refuse --rank '--rank is required for indices' indices --size 10 --world 2
refuse --workers '--workers is required for shards' shards --shard-sizes 5,5 --world 2
refuse --micro-batch '--micro-batch is required for batches' batches --size 20 --world 2 --accum 1
refuse --step '--step is required for state' state --size 20 --world 2 --micro-batch 1 --accum 1
refuse --epoch '--epoch needs a value (E)' check --size 10 --world 2 --epoch
refuse --rank '--rank needs a value' indices --size 10 --world 2 --rank
refuse --size '--size needs a value (N) before "--world"' indices --size --world 2 --rank 0

# Empty values.
refuse --size '--size "" is empty' indices --size= --world 2 --rank 0
refuse --world '--world "" is empty' indices --size 10 --world '' --rank 0
refuse --seed '--seed "" is empty' indices --size 10 --world 2 --rank 0 --seed=
refuse --tail '--tail "" is unknown (expected pad, drop or uneven)' check --size 10 --world 2 --tail=
refuse --shuffle '--shuffle "" is unknown (expected feistel, torch or none)' check --size 10 --world 2 --shuffle ''
refuse --shard-sizes '--shard-sizes is empty' shards --shard-sizes= --world 2 --workers 1
refuse --resume '--resume: ' batches --size 20 --world 2 --micro-batch 1 --accum 1 --resume=
refuse --count '--count "" is empty' indices --size 10 --world 2 --rank 0 --count ''

# Negative numbers, other malformed numbers, and 2^64.
refuse --size '--size "-5" has a sign' indices --size -5 --world 2 --rank 0
refuse --world '--world "-1" has a sign' check --size 10 --world -1
refuse --rank '--rank "-1" has a sign' indices --size 10 --world 2 --rank=-1
refuse --epoch '--epoch "-1" has a sign' check --size 10 --world 2 --epoch -1
refuse --count '--count "+3" has a sign' indices --size 10 --world 2 --rank 0 --count +3
refuse --seed '--seed "-9223372036854775809" is below -2^63' indices --size 9 --world 2 --rank 0 --seed \
    -9223372036854775809
refuse --seed '--seed "--3"' indices --size 9 --world 2 --rank 0 --seed=--3
refuse --size '--size "1e6" is not a decimal integer' indices --size 1e6 --world 2 --rank 0
refuse --size '--size "0x10" is not a decimal integer' indices --size 0x10 --world 2 --rank 0
refuse --size '--size " 10" contains white space' indices --size ' 10' --world 2 --rank 0
refuse --size "--size \"$over\" overflows 64 bits" indices --size $over --world 2 --rank 0
refuse --world "--world \"$over\" overflows 64 bits" check --size 10 --world $over
refuse --seed "--seed \"$over\" overflows 64 bits" check --size 10 --world 2 --seed $over
refuse --shard-sizes "--shard-sizes entry 1 \"$over\" overflows 64 bits" shards --shard-sizes $over --world 1 \
    --workers 1
refuse --shard-sizes '--shard-sizes add up to more than 2^64-1 samples (at entry 2' shards --shard-sizes $big,1 \
    --world 1 --workers 1

fi
if part mix-pack-stream; then
# mix: micro-batches as source:index pairs, the global order as `source index` lines, then the prefix error.
mix=(mix --sources 1000,500,20 --weights 0.5,0.3,0.2 --world 2 --micro-batch 4 --accum 2)
expect 0 '^step 2 rank 1: \[[0-9]+:[0-9]+( [0-9]+:[0-9]+){3}\] \[[0-9]+:[0-9]+( [0-9]+:[0-9]+){3}\]$' -- "${mix[@]}" \
    --steps 3
expect 0 '^max prefix error over 48 positions: source 0 0\.[0-9]{3}, source 1 0\.[0-9]{3}, source 2 0\.[0-9]{3}$' -- \
    "${mix[@]}" --steps 3
run "${mix[@]}" --order --steps 2 --schedule '1:0.2,0.2,0.6'
[[ $rc -eq 0 && $(grep -Ec '^[0-2] [0-9]+$' <<<"$out") -eq 32 ]] && passed=$((passed + 1)) ||
  fail "mix --order --steps 2 did not print 32 'source index' lines"$'\n'"$out$err"
# One step of 16 at 0.5/0.3/0.2 holds 8, 4 or 5, and 3 or 4 of each source.
run "${mix[@]}" --order --steps 1
counts="$(grep -E '^[0-2] [0-9]+$' <<<"$out" | cut -d' ' -f1 | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')"
[[ "$counts" =~ ^0:8\ 1:[45]\ 2:[34]\ $ ]] && passed=$((passed + 1)) || fail "mix step 0 source counts: $counts"
refuse --weights '--weights weight 2 "-0.3" is not a decimal number' "${mix[@]/0.5,0.3,0.2/0.5,-0.3,0.2}"
refuse --weights 'weights are all 0' mix --sources 10,5 --weights 0,0 --world 1 --micro-batch 1 --accum 1
refuse --weights 'weights has 3 values for 2 sources (expected one weight per source)' mix --sources 10,5 \
    --weights 1,1,1 --world 1 --micro-batch 1 --accum 1
refuse --sources 'weights[1] is 1.000000 but source 1 is empty' mix --sources 10,0 --weights 1,1 --world 1 \
    --micro-batch 1 --accum 1
refuse --sources '--sources entry 2 "x"' mix --sources 10,x --weights 1,1 --world 1 --micro-batch 1 --accum 1
refuse --schedule 'schedule[1] (step 2) does not follow the previous step 3' "${mix[@]}" \
    --schedule '3:1,1,1;2:1,1,1'
refuse --schedule '--schedule entry 1 "5" is not STEP:W1,W2,..' "${mix[@]}" --schedule 5
refuse --schedule '--schedule entry 1 weight 2 "x" is not a decimal number' "${mix[@]}" --schedule 5:1,x,1
refuse --schedule '--schedule entry 2 step "y"' "${mix[@]}" --schedule '5:1,1,1;y:1,1,1'
refuse --order 'would print' mix --sources 1000000000000,1000000000000 --weights 1,1 --world 1 --micro-batch 1 \
    --accum 1 --order
refuse --rank '--rank 2 is out of range for --world 2 (expected 0..1)' "${mix[@]}" --rank 2
# One rank's step of a huge world: the prefix error walks a bounded prefix of the global order (it hung).
for w in 4294967296 1073741824; do
  limit=10 expect 0 "^max prefix error over the first 16777216 of $w positions: source 0 0\.[0-9]{3}, source 1" -- \
      mix --sources 100000000000,100000000000 --weights 1,1 --world $w --rank 0 --steps 1 --micro-batch 1 --accum 1
done
# --end: where the epoch ends (the header counts its steps and positions; G = 16).
expect 0 '; 7 steps of epoch 0 \(112 positions\)$' -- "${mix[@]}" --end steps --end-count 7 --steps 1
expect 0 '; 3 steps of epoch 0 \(48 positions\)$' -- "${mix[@]}" --end samples --end-count 48 --steps 1
# first_exhausted: source 2 (20 samples at 0.2) runs out near position 100; all_seen: source 0 (1000 at 0.5) near 2000.
expect 0 '; [56] steps of epoch 0 \((9[0-9]|10[0-9]) positions\)$' -- "${mix[@]}" --end first_exhausted --steps 1
expect 0 '; 12[4-6] steps of epoch 0 \((19[89][0-9]|20[0-1][0-9]) positions\)$' -- "${mix[@]}" --end all_seen --steps 1
run "${mix[@]}" --steps 1
default_header="$(head -1 <<<"$out")"
run "${mix[@]}" --steps 1 --end first_exhausted
[[ -n "$default_header" && "$default_header" == "$(head -1 <<<"$out")" ]] && passed=$((passed + 1)) ||
  fail "mix: --end first_exhausted is not the default"
refuse --end '--end "last" is unknown (expected first_exhausted, all_seen, samples or steps)' "${mix[@]}" --end last
refuse --end-count '--end samples needs --end-count N' "${mix[@]}" --end samples
refuse --end-count '--end steps needs --end-count N' "${mix[@]}" --end steps
refuse --end-count '--end-count 0 is too small (expected at least 1)' "${mix[@]}" --end steps --end-count 0
refuse --end-count '--end-count "x"' "${mix[@]}" --end samples --end-count x
refuse --end-count '--end-count is given but --end is first_exhausted' "${mix[@]}" --end-count 5
refuse --end-count '--end-count is given but --end is all_seen' "${mix[@]}" --end all_seen --end-count 5
refuse --end 'source 1 never finishes its first pass (its weight drops to 0 before it does; expected --end first_exhausted, samples or steps, or a positive final weight)' mix --sources 10,5 --weights 1,1 --schedule '1:1,0' --world 1 --micro-batch 1 --accum 1 \
    --end all_seen

# pack: packed sequences per rank and step, states that resume on another world, .idx input.
pk=(pack --lengths 5,7,2,6,4,3,23,0,11 --seq-len 10 --world 2 --micro-batch 2 --mode best-fit)
expect 0 '^step 1 rank 1: \[0:0\+5 6:20\+3 2:0\+2\] \[\]$' -- "${pk[@]}"
expect 0 '^tokens: 61 in the epoch, 61 read, 0 dropped, 9 padded; padding efficiency 0\.8714; 1 empty sequences$' \
    -- "${pk[@]}"
expect 0 '^sequences: 7 in the epoch, 7 read; 9 documents, 1 of 0 tokens skipped, 2 split$' -- "${pk[@]}"
run "${pk[@]}"
[[ $(grep -c '^step ' <<<"$out") -eq 4 && $(grep -E '^step' <<<"$out" | grep -Evc '^step [0-9]+ rank [0-9]+: \[[^]]*\] \[[^]]*\]$') -eq 0 ]] \
  && passed=$((passed + 1)) || fail "pack: expected 2 bracket groups on each of 4 lines:"$'\n'"$out"
pc=(pack --lengths "$tmp/pack_lengths.txt" --seq-len 16 --world 3 --micro-batch 2 --accum 2 --seed 5 --document-window 8)
for i in $(seq 1 60); do echo $(( (i * 37) % 41 )); done >"$tmp/pack_lengths.txt"
run "${pc[@]}"
whole="$(grep '^step' <<<"$out")"
expect 0 '^tokens: 1208 in the epoch, 1152 read, 56 dropped, 0 padded; padding efficiency 1\.0000; 0 empty' -- "${pc[@]}"
# A plan of one window record (of 8) reads the same steps; 0 records is refused.
for mode in concat best-fit; do
  run "${pc[@]}" --mode "$mode"
  full="$out"
  run "${pc[@]}" --mode "$mode" --plan-limit 1
  [[ "$out" == "$full" && "$(grep -c '^step' <<<"$out")" -gt 8 ]] \
    && passed=$((passed + 1)) || fail "pack --plan-limit 1 --mode $mode: expected the output of the full plan"$'\n'"$out"
done
refuse --plan-limit '--plan-limit 0 is too small (expected at least 1)' pack --lengths 3,4 --seq-len 2 --world 1 \
    --plan-limit 0
run "${pc[@]}" --state-after 2
state="$(sed -n 's/^state: //p' <<<"$out")"
[[ "$state" == distsampler-state\ v3\ sampler=pack* && "$(grep -c '^step' <<<"$out")" -eq 12 ]] \
  && passed=$((passed + 1)) || fail "pack --state-after 2: expected 12 lines and a state:"$'\n'"$out"
run "${pc[@]}" --resume "$state"
[[ "$(grep '^step' <<<"$out")" == "$(grep -E '^step ([2-9]|[1-9][0-9]) ' <<<"$whole")" ]] \
  && passed=$((passed + 1)) || fail "pack --resume: expected the rest of the uninterrupted run"$'\n'"$out"
expect 0 '^summary: mode concat, 8 steps x world_size 2 x accumulation 1 x micro-batch 3' -- pack \
    --lengths "$tmp/pack_lengths.txt" --seq-len 16 --world 2 --micro-batch 3 --seed 5 --document-window 8 --resume "$state"
refuse --resume 'seq_len differs (state 16, sampler 32)' pack --lengths "$tmp/pack_lengths.txt" --seq-len 32 --world 2 \
    --document-window 8 --seed 5 --resume "$state"
refuse --resume 'mode differs (state concat, sampler best-fit)' pack --lengths "$tmp/pack_lengths.txt" --seq-len 16 \
    --world 2 --document-window 8 --seed 5 --mode best-fit --resume "$state"
refuse --seq-len 'seq_len 0 is out of range (expected 1..8388607' pack --lengths 3,4 --seq-len 0 --world 2
refuse --lengths 'document 1 has 40 tokens, over seq_len 10' pack --lengths 3,40 --seq-len 10 --world 1 \
    --mode best-fit --no-split
refuse --mode '--mode "first-fit"' pack --lengths 3,4 --seq-len 10 --world 1 --mode first-fit
refuse --global-batch '--accum and --global-batch given together (expected one of them: --global-batch G sets the accumulation to G / (--micro-batch x --world))' \
    pack --lengths 5,7,3 --seq-len 4 --world 1 --micro-batch 2 --accum 1 --global-batch 8
expect 0 '^summary: mode concat, 1 steps x world_size 1 x accumulation 4 x micro-batch 2; epoch 0$' -- \
    pack --lengths 5,7,3,9,9,9 --seq-len 4 --world 1 --micro-batch 2 --global-batch 8
# Bounded before anything is printed or allocated: 4.3e9 lines, 2^32 best-fit pieces, 10^9 sequences per micro-batch.
refuse --steps '4294967295 steps of --micro-batch 1 x --accum 1 on every rank would print 4294967295 sequences, more than the 67108864 printed at once; pass a smaller --steps S or --rank R' \
    pack --lengths 4294967295 --seq-len 1 --world 1
refuse --steps 'on one rank would print 2147483647 sequences, more than the 67108864 printed at once; pass a smaller --steps S' \
    pack --lengths 4294967295 --seq-len 1 --world 2 --rank 0
expect 0 '^step 2 rank 1: \[0:5\+1\]$' -- pack --lengths 4294967295 --seq-len 1 --world 2 --rank 1 --steps 3
refuse --seq-len 'window 0 of epoch 0 holds 4294967295 pieces (its documents cut at seq_len 1), more than the 4194304 best-fit packs at once (expected a larger seq_len, a smaller window, or mode concat)' \
    pack --lengths 4294967295 --seq-len 1 --world 1 --mode best-fit
refuse --micro-batch 'micro_batch_size 1000000000 is out of range (expected 1..1048576 sequences per micro-batch)' \
    pack --lengths 5,7,3 --seq-len 10 --world 1 --mode best-fit --micro-batch 1000000000
refuse --rank '--rank 2 is out of range for --world 2 (expected 0..1)' pack --lengths 3,4 --seq-len 2 --world 2 --rank 2
refuse --state-after '--state-after 9 is out of range (expected 0..3' pack --lengths 3,4 --seq-len 2 --world 1 \
    --state-after 9
# A Megatron .idx: magic, version 1, dtype 8, 3 sequences, 4 document indices, sizes, pointers, document indices.
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
body = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, 3, 4) + struct.pack("<3i", 5, 0, 7)
body += struct.pack("<3q", 0, 10, 10) + struct.pack("<4q", 0, 1, 2, 3)
open(d + "/other.idx", "wb").write(b"TNTIDX\x00\x00\x00" + body[9:])
for name in ("data", "cut", "text", "other"):
    open(d + "/" + name + ".bin", "wb").write(bytes(24))
open(d + "/data.idx", "wb").write(body)
open(d + "/cut.idx", "wb").write(body[:-3])
open(d + "/text.idx", "wb").write(b"5\n7\n")
PY
expect 0 '^tokens: 12 in the epoch, 12 read, 0 dropped' -- pack --lengths "$tmp/data.idx" --seq-len 4 --world 1 --seed 1
expect 0 '^sequences: 3 in the epoch, 3 read; 3 documents, 1 of 0 tokens skipped, 0 split$' -- pack \
    --lengths "$tmp/data.idx" --seq-len 4 --world 1
cp "$tmp/data.idx" "$tmp/data.lengths"
refuse --lengths "--lengths $tmp/data.lengths is a Megatron index (it starts with the .idx magic) but its name does not end in .idx, so its .bin cannot be found beside it (expected NAME.idx next to NAME.bin)" \
    pack --lengths "$tmp/data.lengths" --seq-len 4 --world 1
# A pipe is read once, as lengths: the .idx magic probe took its first 4 KiB (3960 of 5000 documents were read).
expect 0 '^sequences: 1 in the epoch, 1 read; 5000 documents, 0 of 0 tokens skipped, 0 split$' -- \
    pack --lengths <(seq 1 5000) --seq-len 8388607 --world 1 --steps 0
expect 0 '^sequences: 2 in the epoch, 2 read; 6 documents, 0 of 0 tokens skipped, 0 split$' -- \
    pack --lengths <(seq 1 6) --seq-len 10 --world 1 --steps 0
refuse --lengths 'cut.idx: is truncated: 99 bytes, but its header' pack --lengths "$tmp/cut.idx" --seq-len 4 \
    --world 1
refuse --lengths 'text.idx: is truncated: 4 bytes, shorter than the 34-byte header' pack --lengths "$tmp/text.idx" --seq-len 4 --world 1
refuse --lengths 'other.idx: wrong magic (expected "MMIDIDX\0\0": not a Megatron .idx file)' pack \
    --lengths "$tmp/other.idx" --seq-len 4 --world 1
refuse --lengths 'data2.idx: cannot open' pack --lengths "$tmp/data2.idx" --seq-len 4 --world 1

# stream: consumers reading shards of unknown size, B kept samples per micro-batch on every rank in every step.
st=(stream --shard-sizes 5,0,7,3,9 --world 2 --workers 2 --micro-batch 3 --keep 0.6 --seed 4)
run "${st[@]}" --steps 8
[[ $rc -eq 0 && $(grep -c '' <<<"$out") -eq 16 && $(grep -Ec '^step [0-7] rank [01]: \[[0-9]+:[0-9]+ [0-9]+:[0-9]+ [0-9]+:[0-9]+\]$' <<<"$out") -eq 16 ]] &&
  passed=$((passed + 1)) || fail "stream: expected 16 lines of 3 pass:index entries:"$'\n'"$out$err"
# Each pass's entries are distinct: no kept sample twice in a pass.
[[ -z $(grep -oE '[0-9]+:[0-9]+' <<<"$out" | sort | uniq -d) ]] &&
  passed=$((passed + 1)) || fail "stream: an entry repeats within a pass:"$'\n'"$out"
# A state after 3 steps, resumed on 3 ranks x 1 worker: steps 3.. follow, nothing of an open pass read twice.
run "${st[@]}" --steps 8 --state-after 3
stream_state="$(sed -n 's/^state: //p' <<<"$out")"
head3="$(grep '^step' <<<"$out")"
[[ $rc -eq 0 && "$stream_state" == "distsampler-state v5 sampler=stream dataset_size=5 seed=4 "* && $(grep -c '^step' <<<"$out") -eq 6 ]] &&
  passed=$((passed + 1)) || fail "stream --state-after 3: expected 6 step lines and a state:"$'\n'"$out$err"
run stream --shard-sizes 5,0,7,3,9 --world 3 --workers 1 --micro-batch 3 --keep 0.6 --seed 4 --steps 4 --resume "$stream_state"
[[ $rc -eq 0 && "$out" == "step 3 rank 0: ["* && -z $(printf '%s\n%s\n' "$head3" "$out" | grep -oE '[0-9]+:[0-9]+' | sort | uniq -d) ]] &&
  passed=$((passed + 1)) || fail "stream --resume: expected steps 3.. with no entry twice:"$'\n'"$out$err"
expect 0 '^step 0 rank 1: \[0:[0-9]+\]$' -- stream --shard-sizes 4,4 --world 2 --workers 1 --micro-batch 1 --steps 1 --rank 1
refuse --keep 'pass 0 of 2 shards has no record with an output (the dataset is empty or the filter keeps nothing)' \
    stream --shard-sizes 4,4 --keep 0 --world 1 --workers 1 --micro-batch 1 --steps 1
refuse --shard-sizes 'pass 0 of 3 shards has no record with an output' stream --shard-sizes 0,0,0 --world 2 --workers 1 \
    --micro-batch 1 --steps 1
refuse --byte-sizes '--byte-sizes has 2 entries for 1 shards of --shard-sizes (expected one per shard)' stream \
    --shard-sizes 5 --byte-sizes 1,2 --world 1 --workers 1 --micro-batch 1 --steps 1
refuse --keep '--keep "1.5" is not one probability (expected a decimal from 0 to 1, such as 0.25)' stream \
    --shard-sizes 5 --keep 1.5 --world 1 --workers 1 --micro-batch 1 --steps 1
refuse --keep 'is not one probability' stream --shard-sizes 5 --keep 0.5,0.5 --world 1 --workers 1 --micro-batch 1 --steps 1
refuse --workers '--workers 0 is too small (expected at least 1)' stream --shard-sizes 5 --world 1 --workers 0 \
    --micro-batch 1 --steps 1
refuse --micro-batch '--micro-batch 0 is too small (expected at least 1)' stream --shard-sizes 5 --world 1 --workers 1 \
    --micro-batch 0 --steps 1
refuse --resume '--resume: expected magic "distsampler-state" at offset 0' stream --shard-sizes 5 --world 1 --workers 1 \
    --micro-batch 1 --steps 1 --resume 'distsampler-stream v1 seed=0'
refuse --resume '--resume: unsupported version 6 (expected 1 to 5)' stream --shard-sizes 5,0,7,3,9 --world 1 --workers 1 \
    --micro-batch 1 --steps 1 --resume "${stream_state/ v5 / v6 }"
refuse --resume '--resume: sampler family differs (state batch, sampler stream)' stream --shard-sizes 5 --world 1 \
    --workers 1 --micro-batch 1 --steps 1 --resume "$("$cli" state --size 20 --world 2 --micro-batch 2 --accum 2 --step 1)"
refuse --resume 'checksum mismatch' stream --shard-sizes 5,0,7,3,9 --world 1 --workers 1 --micro-batch 1 --steps 1 \
    --resume "${stream_state/seed=4/seed=5}"
refuse --resume '--resume: seed differs (state 4, sampler 0)' stream --shard-sizes 5,0,7,3,9 --world 1 --workers 1 \
    --micro-batch 1 --steps 1 --resume "$stream_state"
refuse --resume '--resume: shards differs (state 5, sampler 4)' stream --shard-sizes 5,0,7,3 --world 1 --workers 1 \
    --micro-batch 1 --steps 1 --seed 4 --resume "$stream_state"
# --share all: every shard read by every consumer's part; resumed on another world with another share.
run "${st[@]}" --steps 8 --share all --state-after 3
shared_state="$(sed -n 's/^state: //p' <<<"$out")"
shared3="$(grep '^step' <<<"$out")"
[[ $rc -eq 0 && "$shared_state" == "distsampler-state v5 sampler=stream "*" extra=0,3,"* && -n "$shared3" ]] &&
  passed=$((passed + 1)) || fail "stream --share all --state-after 3: expected a state with share 0:"$'\n'"$out$err"
run stream --shard-sizes 5,0,7,3,9 --world 3 --workers 1 --micro-batch 3 --keep 0.6 --seed 4 --steps 4 --share 2 \
    --resume "$shared_state"
[[ $rc -eq 0 && "$out" == "step 3 rank 0: ["* && -z $(printf '%s\n%s\n' "$shared3" "$out" | grep -oE '[0-9]+:[0-9]+' | sort | uniq -d) ]] &&
  passed=$((passed + 1)) || fail "stream --share 2 --resume: expected steps 3.. with no entry twice:"$'\n'"$out$err"
refuse --share '--share "3" is not a consumer count or all (expected 1..2, --world x --workers, or all)' stream \
    --shard-sizes 5 --world 2 --workers 1 --micro-batch 1 --steps 1 --share 3
refuse --share '--share "0" is not a consumer count or all' stream --shard-sizes 5 --world 1 --workers 1 --micro-batch 1 \
    --steps 1 --share 0
refuse --share '--share "some" is not a consumer count or all' stream --shard-sizes 5 --world 1 --workers 1 \
    --micro-batch 1 --steps 1 --share some
refuse --state-after '--state-after 3 is outside the steps simulated (expected 0..2)' stream --shard-sizes 5 --world 1 \
    --workers 1 --micro-batch 1 --steps 2 --state-after 3
refuse --rank '--rank 2 is out of range for --world 2 (expected 0..1)' stream --shard-sizes 5,5 --world 2 --workers 1 \
    --micro-batch 1 --steps 1 --rank 2
refuse --shard-sizes 'is neither a comma-separated list of sample counts nor an existing file' stream --shard-sizes 5,x \
    --world 1 --workers 1 --micro-batch 1 --steps 1
refuse --steps 'is too large for stream' stream --shard-sizes 5 --world 1 --workers 1 --micro-batch 1 \
    --steps 100000000

fi
if part refusals-more; then
# Unknown commands.
refuse 'missing command' 'missing command (expected indices, check, shards, batches, state, tokens, mix, pack, mesh, stream or blend'
refuse shuffle 'unknown command "shuffle"' shuffle
refuse '""' 'unknown command ""' ''
refuse '"chek"' 'did you mean check?' chek --size 10 --world 2
refuse --size 'expected a command before "--size"' --size 10 indices
refuse bogus 'unknown command "bogus"' help bogus
refuse extra 'unexpected argument "extra" after "--help"' --help extra

# Bytes that are not UTF-8 are shown escaped; valid UTF-8 is shown as is.
refuse --size '--size "\xff\xfe" is not a decimal integer' indices --size $'\xff\xfe' --world 2 --rank 0
refuse '--\xff' 'unknown flag "--\xff"' indices --size 10 --world 2 --rank 0 $'--\xff'
refuse --tail '--tail "pad\xc3" is unknown' check --size 10 --world 2 --tail $'pad\xc3'
refuse --tail '--tail "pädding" is unknown' check --size 10 --world 2 --tail 'pädding'
refuse --shuffle '--shuffle "\x1b[31m" is unknown' check --size 10 --world 2 --shuffle $'\e[31m'
refuse '"\xff"' 'unknown command "\xff"' $'\xff'

# A very long argument is shown cut, with its length.
long="$(head -c 100000 /dev/zero | tr '\0' '7')"
refuse --size '"... (100000 bytes) overflows 64 bits' indices --size "$long" --world 2 --rank 0
refuse --shard-sizes '"... (5000 bytes) cannot be opened' shards --shard-sizes \
    "$(head -c 5000 /dev/zero | tr '\0' 'a')" --world 1 --workers 1
refuse "unknown flag" '... (100002 bytes)' check --size 10 --world 2 "--$long"

# Values the library would reject, refused first with the flag's name.
refuse --workers '--workers 0 is too small (expected at least 1)' shards --shard-sizes 5,5 --world 2 --workers 0
refuse --preset '--preset "random" is unknown (expected sequential or mixed)' shards --shard-sizes 5,5 --world 2 \
    --workers 1 --preset random
refuse --max-open-shards '--max-open-shards 2 is out of range (expected 1..1)' shards --shard-sizes 5,5 --world 2 \
    --workers 1 --preset sequential --max-open-shards 2
# The 0.2 spelling --window: the same output as the 0.3 name of that command's window, one warning line on stderr
# naming the new flag; refused where the command has no window, or given beside its new name.
old_window() {
  local new="$1"
  shift
  local args=("$@") renamed=()
  local a
  for a in "${args[@]}"; do [[ "$a" == --window ]] && renamed+=("$new") || renamed+=("$a"); done
  run "${renamed[@]}"
  local want_out="$out" want_rc=$rc
  run "${args[@]}"
  local warning="distsampler ${args[0]}: warning: --window is the 0.2 spelling of $new (accepted until 0.4): write $new"
  if [[ $rc -ne 0 || $want_rc -ne 0 || "$out" != "$want_out" || -z "$out" || "$err" != "$warning" ]]; then
    fail "distsampler ${args[*]}: $(status_text) (with $new: exit $want_rc), stderr '$err', expected the output of $new and '$warning'"
    return
  fi
  passed=$((passed + 1))
}
old_window --run-window shards --shard-sizes 40,0,25 --world 2 --workers 2 --window 3 --run-length 2
old_window --sort-window tokens --lengths 5,9,3,12,7,7,2,30,4,4,8 --max-tokens 32 --world 3 --accum 2 --window 6
old_window --document-window pack --lengths 5,7,2,6,4,3,23,0,11 --seq-len 10 --world 2 --window 3
refuse --window '--window is not used by indices (shards takes --run-window, tokens --sort-window, pack --document-window)' \
    indices --size 10 --world 2 --rank 0 --window 3
refuse --window '--window and --run-window given both (give --run-window only)' shards --shard-sizes 5,5 --world 2 \
    --workers 1 --window 3 --run-window 3
refuse --window '--window and --sort-window given both (give --sort-window only)' tokens --lengths 3,4 --max-tokens 10 \
    --world 2 --sort-window 3 --window 3
refuse --window '--window given twice' pack --lengths 3,4 --seq-len 4 --world 1 --window 3 --window 3
refuse --run-window '--run-window 0 is too small (expected at least 1)' shards --shard-sizes 5,5 --world 2 --workers 1 \
    --run-window 0
refuse --run-length '--run-length 0 is too small' shards --shard-sizes 5,5 --world 2 --workers 1 --run-length 0
refuse --max-open-shards '--max-open-shards 0 is out of range (expected 1..512)' shards --shard-sizes 5,5 --world 2 \
    --workers 1 --max-open-shards 0
refuse --max-open-shards '--max-open-shards 513 is out of range (expected 1..512)' shards --shard-sizes 5,5 --world 2 \
    --workers 1 --max-open-shards 513
refuse --run-length "--max-open-shards 2 x --run-length $big overflows 64 bits" shards --shard-sizes 5 --world 1 \
    --workers 1 --max-open-shards 2 --run-length $big

fi
if part tokens-limits; then
# tokens: micro-batches under a token budget, the same count on every rank in every step, then a summary.
expect 0 '^step 1 rank 0: \[\] tokens=0 padded=0$' -- tokens --lengths 5,9,3,12,7,7,2,30,4,4,8 --max-tokens 32 \
    --world 3 --accum 2 --sort-window 6
expect 0 '12 micro-batches, 1 empty; 6 splits' -- tokens --lengths 5,9,3,12,7,7,2,30,4,4,8 --max-tokens 32 --world 3 \
    --accum 2 --sort-window 6
run tokens --lengths 5,9,3,12,7,7,2,30,4,4,8 --max-tokens 32 --world 3 --accum 2 --sort-window 6
[[ $(grep -c '^step 1 rank 2: ' <<<"$out") -eq 2 && $(grep -c '^step [0-9]' <<<"$out") -eq 12 ]] &&
  passed=$((passed + 1)) || fail "tokens: expected 2 micro-batches per rank and step, 12 lines:"$'\n'"$out"
printf '%s\n' 40 3 3 3 3 3 3 3 3 30 31 >"$tmp/lengths.txt"
expect 0 '^padding efficiency 1\.0000 \(real 125 / padded 125 tokens\)' -- tokens --lengths "$tmp/lengths.txt" \
    --max-tokens 40 --world 2 --rank 1 --seed 3
expect 0 '^step 0 rank 1: \[[0-9 ]+\] tokens=[0-9]+ padded=[0-9]+$' -- tokens --lengths "$tmp/lengths.txt" \
    --max-tokens 40 --world 2 --rank 1 --steps 1
refuse --lengths 'sample 1 has length 0 (expected at least 1 token per sample)' tokens --lengths 3,0,5 \
    --max-tokens 10 --world 2
refuse --max-tokens 'sample 2 has length 11 costing 11, over max_tokens 10' tokens --lengths 3,4,11 --max-tokens 10 \
    --world 2
refuse --max-tokens 'max_tokens is 0 (expected a token budget of at least 1' tokens --lengths 3,4 --max-tokens 0 \
    --world 2
refuse --lengths '--lengths entry 2 (4294967296) is above 4294967295' tokens --lengths 3,4294967296 --max-tokens 10 \
    --world 2
refuse --lengths '--lengths "nope.txt" is neither a comma-separated list of lengths nor an existing file' tokens \
    --lengths nope.txt --max-tokens 10 --world 2
refuse --lengths '--lengths is empty (expected a comma-separated list of lengths or a file name)' tokens --lengths= \
    --max-tokens 10 --world 2
: >"$tmp/no_lengths.txt"
refuse --lengths 'has no lengths (expected one per line)' tokens --lengths "$tmp/no_lengths.txt" --max-tokens 10 \
    --world 2
refuse --rank '--rank 2 is out of range for --world 2 (expected 0..1)' tokens --lengths 3,4 --max-tokens 10 --world 2 \
    --rank 2
refuse --accum '--accum 0 is too small (expected at least 1)' tokens --lengths 3,4 --max-tokens 10 --world 2 --accum 0
# world x accum wrapping around 2^64 (to 0: SIGFPE; to 4 and past the plan: SIGSEGV), or too large to plan.
refuse --accum '--world 2 x --accum 9223372036854775808 overflows 64 bits' tokens --lengths 3,4,5 --max-tokens 10 \
    --world 2 --accum 9223372036854775808
refuse --accum '--world 2 x --accum 9223372036854775810 overflows 64 bits' tokens --lengths 3,4,5 --max-tokens 10 \
    --world 2 --accum 9223372036854775810
refuse --accum '--world 4 x --accum 4611686018427387905 overflows 64 bits' tokens --lengths 3,4,5 --max-tokens 10 \
    --world 4 --rank 3 --accum 4611686018427387905
limit=10 refuse --accum '--world 1 x --accum 33554432 = 33554432 is too large for tokens (at most 1048576: every' \
    tokens --lengths 3,4,5 --max-tokens 10 --world 1 --accum 33554432 --steps 0
limit=10 refuse --accum '--world 1024 x --accum 1048576 = 1073741824 is too large for tokens (at most 1048576' \
    tokens --lengths 3,4,5 --max-tokens 10 --world 1024 --accum 1048576 --rank 0
limit=10 refuse --accum '--world 1 x --accum 18446744073709551615 = 18446744073709551615 is too large for tokens' \
    tokens --lengths 3,4,5 --max-tokens 10 --world 1 --accum 18446744073709551615
help_ok tokens --help -- '--world x --accum at most 1048576 micro-batches per step'
help_ok mix --help -- 'the prefix error over' 'at most the first 16777216 positions'
refuse --sort-window '--sort-window 0 is too small (expected at least 1)' tokens --lengths 3,4 --max-tokens 10 --world 2 \
    --sort-window 0
refuse --sort-window 'window 4294967296 is out of range (expected 1..4294967295)' tokens --lengths 3,4 --max-tokens 10 \
    --world 2 --sort-window 4294967296
refuse --max-tokens '--max-tokens is required for tokens' tokens --lengths 3,4 --world 2
refuse --micro-batch '--micro-batch 0 is too small (expected at least 1)' batches --size 20 --world 2 --micro-batch 0 \
    --accum 1
refuse --accum '--accum 0 is too small' state --size 20 --world 2 --micro-batch 1 --accum 0 --step 0
refuse --accum "--micro-batch $big x --world 2 x --accum 1 overflows 64 bits" batches --size 20 --world 2 \
    --micro-batch $big --accum 1
refuse --micro-batch '--micro-batch 6148914691236517206 x --world 3 x --accum 1 overflows 64 bits' state --size 5 \
    --world 3 --micro-batch 6148914691236517206 --accum 1 --step 0
refuse --rank '--rank 4 is out of range for --world 4 (expected 0..3)' indices --size 10 --world 4 --rank 4
refuse --world '--world 0 is too small (expected at least 1)' indices --size 10 --world 0 --rank 0
refuse --world '--world 0 is too small' check --size 10 --world 0
refuse --world '--world 0 is too small' state --size 10 --world 0 --micro-batch 1 --accum 1 --step 0
refuse --step '--step 9 is past the end of the epoch (2 steps; expected 0..2)' state --size 20 --world 2 \
    --micro-batch 2 --accum 2 --step 9
refuse --tail '--tail "last" is unknown (expected pad, drop or uneven)' check --size 10 --world 2 --tail last
refuse --shuffle '--shuffle "random" is unknown (expected feistel, torch or none)' indices --size 10 --world 2 --rank \
    0 --shuffle random
refuse --torch-generation '--torch-generation "v3" is unknown (expected v1 or v2.7)' check --size 10 --world 2 \
    --shuffle torch --torch-generation v3

# --resume: malformed or foreign states, named by the flag.
# The state line of the outputs part (this part may run alone).
saved="$("$cli" state --size 20 --world 2 --micro-batch 2 --accum 2 --step 2 --shuffle none)"
refuse --resume '--resume: unsupported version 9' batches --size 20 --world 3 --micro-batch 1 --accum 1 --resume \
    "distsampler-state v9"
refuse --resume '--resume: expected magic' batches --size 20 --world 3 --micro-batch 1 --accum 1 --resume \
    $'\xff\x00garbage'
refuse --resume '--resume: tail differs (state drop, sampler uneven' batches --size \
    20 --world 3 --micro-batch 1 --accum 1 --shuffle none --tail uneven --resume "$saved"
refuse --resume '--resume: dataset_size differs (state 20, sampler 21' batches --size 21 --world 3 \
    --micro-batch 1 --accum 1 --shuffle none --resume "$saved"
refuse --resume '--epoch 3 differs from epoch 0 recorded in --resume' batches --size 20 --world 3 --micro-batch 1 \
    --accum 1 --shuffle none --resume "$saved" --epoch 3
refuse --step '--step 5 is past the end of the epoch (1 steps left after --resume' state --size 20 --world 4 \
    --micro-batch 1 --accum 1 --shuffle none --resume "$saved" --step 5

# Resource guards: what would not fit in memory or time is refused before any work.
refuse --count "--size $big gives rank 0 " indices --size $big --world 1 --rank 0
refuse --size '--size 1000000000 with --shuffle torch is too large for indices' indices --size 1000000000 --world 1 \
    --rank 0 --shuffle torch --count 1
refuse --world '(--size 100000 + 1024) x --world 10000 with --shuffle torch is too large for check' \
    check --size 100000 --world 10000 --shuffle torch
refuse --steps "steps of --micro-batch 1 x --accum 1 on every rank would print 2^64-1 or more indices" batches --size \
    $big --world 1 --micro-batch 1 --accum 1
refuse --steps 'would print 300000000000 indices' batches --size 10 --world 3 --micro-batch 100000000000 --accum 1 \
    --tail pad
refuse --rank '--world 2000000 is too large for batches without --rank' batches --size 10 --world 2000000 \
    --micro-batch 1 --accum 1
refuse --rank 'with --shuffle torch is too large for batches' batches --size 1000000 --world 1000 --micro-batch 1 \
    --accum 1 --shuffle torch --steps 1
refuse --shard-sizes "--shard-sizes's total of 200000000 samples is too large for shards" shards --shard-sizes \
    200000000 --world 1 --workers 1

# --shard-sizes lists and files: bad entries, bad lines (named by file and line), and inputs that must fail fast.
refuse --shard-sizes '--shard-sizes entry 2 "" is empty' shards --shard-sizes 5,,5 --world 1 --workers 1
refuse --shard-sizes '--shard-sizes entry 3 "" is empty' shards --shard-sizes 5,5, --world 1 --workers 1
refuse --shard-sizes '--shard-sizes entry 1 "" is empty' shards --shard-sizes , --world 1 --workers 1
refuse --shard-sizes \
    '--shard-sizes "nope.txt" is neither a comma-separated list of sample counts nor an existing file' shards \
    --shard-sizes nope.txt --world 2 --workers 1
refuse --shard-sizes "--shard-sizes file \"$tmp\" is a directory" shards --shard-sizes "$tmp" --world 1 --workers 1
printf '10\n20\nabc\n' >"$tmp/bad.txt"
refuse --shard-sizes "--shard-sizes file \"$tmp/bad.txt\", line 3: \"abc\" is not a decimal integer" shards \
    --shard-sizes "$tmp/bad.txt" --world 1 --workers 1
printf '10\n-20\n' >"$tmp/negative.txt"
refuse --shard-sizes "file \"$tmp/negative.txt\", line 2: \"-20\" has a sign" shards --shard-sizes \
    "$tmp/negative.txt" --world 1 --workers 1
printf '1 2\n' >"$tmp/two.txt"
refuse --shard-sizes "file \"$tmp/two.txt\", line 1: \"1 2\" contains white space" shards --shard-sizes \
    "$tmp/two.txt" --world 1 --workers 1
printf '5\n%0300d\n' 1 >"$tmp/longline.txt"
refuse --shard-sizes "file \"$tmp/longline.txt\", line 2: longer than 256 bytes" shards --shard-sizes \
    "$tmp/longline.txt" --world 1 --workers 1
: >"$tmp/empty.txt"
refuse --shard-sizes "file \"$tmp/empty.txt\" has no sample counts" shards --shard-sizes "$tmp/empty.txt" --world 1 \
    --workers 1
printf '\n \n\r\n' >"$tmp/blank.txt"
refuse --shard-sizes "file \"$tmp/blank.txt\" has no sample counts" shards --shard-sizes "$tmp/blank.txt" --world 1 \
    --workers 1
head -c 34000000 /dev/zero | tr '\0' '\n' >"$tmp/huge.txt"
refuse --shard-sizes "file \"$tmp/huge.txt\" is larger than 33554432 bytes" shards --shard-sizes "$tmp/huge.txt" \
    --world 1 --workers 1
rm -f "$tmp/huge.txt"
yes 1 | head -n 1048577 >"$tmp/many.txt"
refuse --shard-sizes "file \"$tmp/many.txt\", line 1048577: more than 1048576 sample counts" shards --shard-sizes \
    "$tmp/many.txt" --world 1 --workers 1
head -n 1048576 "$tmp/many.txt" >"$tmp/most.txt"
refuse --shard-sizes '--world 17 x 1048576 shards in --shard-sizes is too large for shards (at most 16777216' \
    shards --shard-sizes "$tmp/most.txt" --world 17 --workers 1
refuse --shard-sizes '--shard-sizes file "/dev/urandom", line 1' shards --shard-sizes /dev/urandom --world 1 --workers 1

# Running out of memory is a message and exit 2, not an abort (skipped where the binary cannot run under a
# 100 MB address-space limit, as under AddressSanitizer).
if { bash -c 'ulimit -v 100000 && "$0" --help' "$cli" >/dev/null; } 2>/dev/null; then
  (ulimit -v 100000 && exec "$cli" check --size 130000000 --world 1) >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 2 && ! -s "$tmp/out" ]] && grep -q '^distsampler check: out of memory' "$tmp/err" &&
    passed=$((passed + 1)) || fail "check under a 100 MB limit $(status_text): $(cat "$tmp/out" "$tmp/err")"
  # torch's table that cannot be allocated: the library's config_error, prefixed with the flags.
  (ulimit -v 100000 && exec "$cli" indices --size 67108864 --world 1 --rank 0 --shuffle torch --count 3) \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 2 && ! -s "$tmp/out" ]] && grep -q '^distsampler indices: --size.*out of memory' "$tmp/err" &&
    passed=$((passed + 1)) || fail "torch indices under a 100 MB limit $(status_text): $(cat "$tmp/out" "$tmp/err")"
fi

# Output that cannot be written is an error, not a silent truncation.
timeout -k 2 "$limit" "$cli" indices --size 100000 --world 1 --rank 0 >/dev/full 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 ]] && grep -q 'distsampler indices: cannot write to standard output' "$tmp/err" &&
  passed=$((passed + 1)) ||
  fail "indices >/dev/full $(status_text): $(cat "$tmp/err")"

fi
if part mesh; then
# ---------------------------------------------------------------------------------------------------------
# Parallel meshes: `mesh` maps global ranks to data ranks; --mesh makes --world and --rank global.

# pp=2,dp=2,tp=2 row-major (tp fastest): the data rank is the dp coordinate.
expected_mesh="rank 0: data 0/2 pp=0 dp=0 tp=0
rank 1: data 0/2 pp=0 dp=0 tp=1
rank 2: data 1/2 pp=0 dp=1 tp=0
rank 3: data 1/2 pp=0 dp=1 tp=1
rank 4: data 0/2 pp=1 dp=0 tp=0
rank 5: data 0/2 pp=1 dp=0 tp=1
rank 6: data 1/2 pp=1 dp=1 tp=0
rank 7: data 1/2 pp=1 dp=1 tp=1"
[[ "$("$cli" mesh --world 8 --mesh pp=2,dp=2,tp=2)" == "$expected_mesh" ]] && passed=$((passed + 1)) ||
  fail "mesh pp=2,dp=2,tp=2 printed '$("$cli" mesh --world 8 --mesh pp=2,dp=2,tp=2)'"
expect 0 '^rank 5: data 2/4 dp=2 tp=1$' -- mesh --world 8 --mesh dp=4,tp=2
# HSDP: the data rank runs over dp_replicate and dp_shard.
expect 0 '^rank 7: data 3/4 dp_replicate=1 dp_shard=1 tp=1$' -- mesh --world 8 --mesh dp_replicate=2,dp_shard=2,tp=2
# Expert parallelism read as data, named explicitly: rank 13 is pp 1, dp 1, ep 0, tp 1.
expect 0 '^rank 13: data 2/4 pp=1 dp=1 ep=0 tp=1$' -- mesh --world 16 --mesh pp=2,dp=2,ep=2,tp=2 --data-dims dp,ep
# Megatron's tp-cp-ep-dp-pp order, spelled outermost first.
expect 0 '^rank 6: data 1/2 pp=1 dp=1 ep=0 cp=0 tp=0$' -- mesh --world 8 --mesh pp=2,dp=2,ep=1,cp=1,tp=2
# Global rank R of pp=2,dp=2,tp=2 reads what data rank (R / 2) mod 2 of 2 reads, in every mesh-aware command.
same=0
for r in 0 1 2 3 4 5 6 7; do
  d=$(((r / 2) % 2))
  [[ "$("$cli" indices --size 50 --world 8 --rank $r --seed 3 --mesh pp=2,dp=2,tp=2)" == \
     "$("$cli" indices --size 50 --world 2 --rank $d --seed 3)" ]] || fail "indices --mesh: rank $r is not data rank $d"
  [[ "$("$cli" batches --size 40 --world 8 --rank $r --micro-batch 3 --accum 2 --mesh pp=2,dp=2,tp=2)" == \
     "$("$cli" batches --size 40 --world 2 --rank $d --micro-batch 3 --accum 2)" ]] ||
    fail "batches --mesh: rank $r is not data rank $d"
  [[ "$("$cli" tokens --lengths 5,9,2,30,7,7,1,12,40,3 --max-tokens 40 --world 8 --rank $r --mesh pp=2,dp=2,tp=2)" == \
     "$("$cli" tokens --lengths 5,9,2,30,7,7,1,12,40,3 --max-tokens 40 --world 2 --rank $d)" ]] ||
    fail "tokens --mesh: rank $r is not data rank $d"
  [[ "$("$cli" mix --sources 30,20 --weights 0.6,0.4 --world 8 --rank $r --micro-batch 2 --accum 1 \
        --mesh pp=2,dp=2,tp=2)" == \
     "$("$cli" mix --sources 30,20 --weights 0.6,0.4 --world 2 --rank $d --micro-batch 2 --accum 1)" ]] ||
    fail "mix --mesh: rank $r is not data rank $d"
  [[ "$("$cli" pack --lengths 5,7,2,6,4,3,23,0,11 --seq-len 10 --world 8 --rank $r --micro-batch 2 \
        --mesh pp=2,dp=2,tp=2)" == \
     "$("$cli" pack --lengths 5,7,2,6,4,3,23,0,11 --seq-len 10 --world 2 --rank $d --micro-batch 2)" ]] ||
    fail "pack --mesh: rank $r is not data rank $d"
  same=$((same + 1))
done
[[ $same -eq 8 ]] && passed=$((passed + 1))
[[ "$("$cli" indices --size 50 --world 8 --rank 5 --mesh dp=4,tp=2 | tr '\n' ' ')" != \
   "$("$cli" indices --size 50 --world 8 --rank 5 | tr '\n' ' ')" ]] && passed=$((passed + 1)) ||
  fail "indices --mesh dp=4,tp=2 --rank 5 reads what global rank 5 of 8 reads"
[[ "$("$cli" check --size 100 --world 8 --mesh dp=4,tp=2)" == "$("$cli" check --size 100 --world 4)" ]] &&
  passed=$((passed + 1)) || fail "check --mesh dp=4,tp=2 is not the check of 4 data ranks"
expect 0 '^ok: N=100 W=2 ' -- check --size 100 --world 16 --mesh pp=2,dp=2,ep=2,tp=2
expect 0 '^ok: N=100 W=4 ' -- check --size 100 --world 16 --mesh pp=2,dp=2,ep=2,tp=2 --data-dims dp,ep
[[ "$("$cli" batches --size 40 --world 8 --micro-batch 3 --accum 2 --mesh dp=4,tp=2)" == \
   "$("$cli" batches --size 40 --world 4 --micro-batch 3 --accum 2)" ]] && passed=$((passed + 1)) ||
  fail "batches --mesh without --rank is not the batches of 4 data ranks"
help_ok mesh --help -- --mesh --data-dims 'rank R: data D/DW'
help_ok indices --help -- --mesh --data-dims

# Bad meshes: exit 2, the message names --mesh or --data-dims.
refuse --mesh 'mesh pp=2,dp=2,tp=2 has 8 ranks but --world is 6 (expected the product of the dims)' \
  mesh --world 6 --mesh pp=2,dp=2,tp=2
refuse --mesh 'has 8 ranks but --world is 6' indices --size 10 --world 6 --rank 0 --mesh pp=2,dp=2,tp=2
refuse --mesh 'has dim dp of size 0 (expected at least 1)' indices --size 10 --world 2 --rank 0 --mesh dp=0,tp=2
refuse --mesh 'has dim dp twice (expected each name once)' check --size 10 --world 4 --mesh dp=2,dp=2
refuse --mesh 'has no data dim' batches --size 10 --world 8 --micro-batch 1 --accum 1 --mesh pp=2,tp=4
refuse --mesh 'without a size' mesh --world 2 --mesh dp=2,tp
refuse --mesh 'has a sign' mesh --world 2 --mesh dp=-2
refuse --mesh 'has dim name ""' mesh --world 2 --mesh dp=2,=1
refuse --mesh 'has more than 18446744073709551615 ranks' mesh --world 2 --mesh dp=4294967296,tp=4294967296
refuse --data-dims 'data dim "ep" is not a dim of mesh pp=2,dp=2,tp=2 (expected one of pp,dp,tp)' \
  mesh --world 8 --mesh pp=2,dp=2,tp=2 --data-dims dp,ep
refuse --data-dims 'name dp twice' tokens --lengths 1,2 --max-tokens 4 --world 4 --mesh dp=2,tp=2 --data-dims dp,dp
refuse --data-dims 'not in the order of mesh pp=2,dp=2,ep=2' mix --sources 3,3 --weights 0.5,0.5 --world 8 \
  --micro-batch 1 --accum 1 --mesh pp=2,dp=2,ep=2 --data-dims ep,dp
refuse --data-dims 'is empty' mesh --world 4 --mesh dp=2,tp=2 --data-dims ''
refuse --data-dims 'needs --mesh' indices --size 10 --world 4 --rank 0 --data-dims dp
refuse --mesh 'mesh needs a value' mesh --world 4 --mesh
refuse --rank '--rank 8 is out of range for --world 8 (expected 0..7)' indices --size 10 --world 8 --rank 8 \
  --mesh dp=4,tp=2
refuse --mesh 'is not used by shards' shards --shard-sizes 10 --world 2 --workers 1 --mesh dp=2
refuse --world 'too large for mesh' mesh --world 2000000 --mesh dp=2000000
refuse --world 'is required for mesh' mesh --mesh dp=2

fi
if part index; then
# ---------------------------------------------------------------------------------------------------------
# index: shard files indexed (records counted by hand here), verified, and every bad input refused.
idx="$tmp/idx"
mkdir -p "$idx/src"
printf '{"a":1}\n\n{"b":2}\r\n[3]' >"$idx/p.jsonl"  # 3 records: the empty line is none, the last lacks its newline
printf 'jpg' >"$idx/src/0001.jpg"
printf 'txt' >"$idx/src/0001.txt"
printf 'jpg2' >"$idx/src/0002.jpg"
tar -cf "$idx/s.tar" -C "$idx/src" 0001.jpg 0001.txt 0002.jpg  # 2 samples: 0001 (jpg, txt) and 0002
tar_bytes="$(wc -c <"$idx/s.tar" | tr -d ' ')"
expect 0 "^$idx/p.jsonl jsonl 3 records 21 bytes"$'\n'"total 1 files 3 records 21 bytes$" -- index "$idx/p.jsonl"
[[ -f "$idx/p.jsonl.dsidx" ]] && passed=$((passed + 1)) || fail "index wrote no $idx/p.jsonl.dsidx"
expect 0 "^total 1 files 3 records 21 bytes verified$" -- index --verify "$idx/p.jsonl"
expect 0 "^$idx/s.tar tar 2 records $tar_bytes bytes$" -- index --threads 2 "$idx/p.jsonl" "$idx/s.tar"
expect 0 "^total 2 files 5 records $((21 + tar_bytes)) bytes$" -- index --threads=2 "$idx/p.jsonl" "$idx/s.tar"
cp "$idx/p.jsonl" "$idx/p.txt"
expect 0 "^$idx/p.txt jsonl 3 records 21 bytes$" -- index --format jsonl --cache-dir "$tmp/idx-cache" "$idx/p.txt"
[[ ! -f "$idx/p.txt.dsidx" && -n "$(ls "$tmp/idx-cache"/p.txt.*.dsidx 2>/dev/null)" ]] && passed=$((passed + 1)) ||
  fail "index --cache-dir did not put the index in the cache folder only"
expect 0 "verified$" -- index --verify --format jsonl --cache-dir "$tmp/idx-cache" "$idx/p.txt"
expect 0 '^usage: distsampler index ' -- index --help
refuse "$idx/p.txt" 'cannot tell the format from the extension ".txt"' index "$idx/p.txt"
refuse "$idx/missing.jsonl" 'cannot open (No such file or directory)' index "$idx/p.jsonl" "$idx/missing.jsonl"
refuse "$idx/p.txt" 'has no index at' index --verify --format jsonl "$idx/p.txt"
refuse --format 'is unknown (expected jsonl, tar, megatron, npy or raw)' index --format csv "$idx/p.jsonl"
refuse FILES 'no FILES given' index
refuse FILES 'no FILES given' index --threads 2
refuse --threads 'too small (expected at least 1)' index --threads 0 "$idx/p.jsonl"
refuse --threads 'is not' index --threads two "$idx/p.jsonl"
refuse --bogus 'unknown flag' index --bogus "$idx/p.jsonl"
refuse --verify 'given twice' index --verify --verify "$idx/p.jsonl"
refuse --cache-dir 'needs a value' index "$idx/p.jsonl" --cache-dir
# 128 bytes claiming 70,000,000 rows of 0 bytes: refused before an index entry per row (1.07 GB) is made.
{ printf '\223NUMPY\001\000\166\000'; printf '%-117s\n' "{'descr': '<i4', 'fortran_order': False, 'shape': (70000000, 0), }"; } >"$idx/rows0.npy"
[[ $(wc -c <"$idx/rows0.npy") -eq 128 ]] && passed=$((passed + 1)) || fail "rows0.npy is not 128 bytes"
refuse "$idx/rows0.npy" 'has rows of 0 bytes (shape (70000000, 0)): they hold no data, and the file'"'"'s size cannot vouch for their count (expected rows of at least one byte)' \
    index --verify "$idx/rows0.npy"
head -c 2048 /dev/zero | tr '\0' 'z' >"$idx/junk.tar"
refuse "$idx/junk.tar" 'the tar header at byte 0 has a bad checksum' index "$idx/junk.tar"
# A sample as WebDataset's reader makes it: __meta__ and README (no dot) skipped, suffixes lower-cased.
printf 'm' >"$idx/src/__meta__"
printf 'r' >"$idx/src/README"
printf 'JPG' >"$idx/src/0002.JPG"
tar -cf "$idx/w.tar" -C "$idx/src" __meta__ 0001.jpg README 0001.txt 0002.JPG
w_bytes="$(wc -c <"$idx/w.tar" | tr -d ' ')"
expect 0 "^$idx/w.tar tar 2 records $w_bytes bytes$" -- index "$idx/w.tar"
tar -cf "$idx/d.tar" -C "$idx/src" 0002.jpg 0002.JPG
refuse "$idx/d.tar" 'sample "0002" has two members with the suffix "jpg" (the second at byte 1024)' index "$idx/d.tar"
printf '\n{"c":4}\n' >>"$idx/p.jsonl"  # ends the last line, adds a fourth
refuse "$idx/p.jsonl" 'changed after it was indexed (size 21 -> 30): rebuild the index' index --verify "$idx/p.jsonl"
expect 0 "^$idx/p.jsonl jsonl 4 records 30 bytes$" -- index "$idx/p.jsonl"
expect 0 "verified$" -- index --verify "$idx/p.jsonl"
# --strict keeps current indexes, builds missing ones and refuses a stale one; without it every index is rebuilt.
expect 0 "^$idx/p.jsonl jsonl 4 records 30 bytes$" -- index --strict "$idx/p.jsonl"
printf '5\n' >>"$idx/p.jsonl"
refuse "$idx/p.jsonl" 'changed after it was indexed (size 30 -> 32): rebuild the index' index --strict "$idx/p.jsonl"
expect 0 "^$idx/p.jsonl jsonl 5 records 32 bytes$" -- index "$idx/p.jsonl"
expect 0 "^$idx/p.jsonl jsonl 5 records 32 bytes$" -- index --strict "$idx/p.jsonl"
refuse --strict 'given twice' index --strict --strict "$idx/p.jsonl"
refuse --strict '--strict with --verify' index --strict --verify "$idx/p.jsonl"
refuse --strict 'takes no value' index --strict=yes "$idx/p.jsonl"
# A rewrite of the same size and modification time passes --strict (it compares both) and not --verify.
cp -p "$idx/p.jsonl" "$idx/p.keep"
printf '{"a":1}\n{"b":2}\r\n\n[3]\n{"c":4}\n5\n' >"$idx/p.jsonl"  # 32 bytes, 5 records, other offsets
touch -r "$idx/p.keep" "$idx/p.jsonl"
expect 0 "^$idx/p.jsonl jsonl 5 records 32 bytes$" -- index --strict "$idx/p.jsonl"
refuse "$idx/p.jsonl" 'does not match its index' index --verify "$idx/p.jsonl"
# Raw token files: headerless token ids, a document ends with --eos (included); the tail after the last is one.
printf '\005\000\000\000\006\000\000\000\000\000\000\000\007\000\000\000\000\000\000\000\011\000\000\000' \
  >"$idx/tok.npy"  # uint32 5 6 0 7 0 9 with eos 0: [5 6 0] [7 0] [9]
expect 0 "^$idx/tok.npy raw 3 records 24 bytes$" -- index --format raw --dtype uint32 --eos 0 "$idx/tok.npy"
expect 0 "^total 1 files 3 records 24 bytes verified$" -- index --verify --format raw --dtype uint32 --eos 0 "$idx/tok.npy"
expect 0 "^$idx/tok.npy raw 2 records 24 bytes$" -- index --format=raw --dtype=uint32 --eos=7 "$idx/tok.npy"
refuse "$idx/tok.npy" 'has no index at' index --verify --format raw --dtype uint32 --eos 0 "$idx/tok.npy"
expect 0 "^$idx/tok.npy raw 8 records 24 bytes$" -- index --format raw --dtype uint16 --eos 0 "$idx/tok.npy"
expect 0 "^$idx/tok.npy raw 1 records 24 bytes$" -- index --format raw --dtype uint64 --eos 0 "$idx/tok.npy"
refuse "$idx/tok.npy" 'wrong magic' index "$idx/tok.npy"
refuse --dtype '--format raw needs --dtype, the token type (uint8, uint16, uint32, uint64, int32 or int64)' \
  index --format raw --eos 0 "$idx/tok.npy"
refuse --eos '--format raw needs --eos, the end-of-document token id' index --format raw --dtype uint32 "$idx/tok.npy"
refuse --dtype '--dtype is for --format raw only (expected --format raw, or no --dtype)' \
  index --format npy --dtype uint32 "$idx/tok.npy"
refuse --eos '--eos is for --format raw only (expected --format raw, or no --eos)' index --eos 0 "$idx/tok.npy"
refuse --eos '--eos 65536 is out of range for --dtype uint16 (expected 0 to 65535)' \
  index --format raw --dtype uint16 --eos 65536 "$idx/tok.npy"
refuse --eos '--eos 4294967296 is out of range for --dtype uint32 (expected 0 to 4294967295)' \
  index --format raw --dtype uint32 --eos 4294967296 "$idx/tok.npy"
refuse --dtype 'is unknown (expected uint8, uint16, uint32, uint64, int32 or int64)' \
  index --format raw --dtype float32 --eos 0 "$idx/tok.npy"
refuse --eos 'has a sign' index --format raw --dtype uint32 --eos -1 "$idx/tok.npy"
head -c 10 "$idx/tok.npy" >"$idx/tok10.npy"
refuse "$idx/tok10.npy" 'is 10 bytes, not a multiple of 4 (the size of a uint32 token): not a raw uint32 token file' \
  index --format raw --dtype uint32 --eos 0 "$idx/tok10.npy"

fi
if part blend; then
# ---------------------------------------------------------------------------------------------------------
# blend: a JSON config of two packed sources blended by weight; lines, state, resume on another world and
# micro-batch with the same global batch, and every bad config refused naming its field.
printf '5\n17\n0\n9\n33\n12\n' >"$tmp/code.txt"
blend_config() {  # blend_config MICRO_BATCH [EXTRA]: the config with that micro-batch size and global batch 4
  printf '{"seq_len": 8, "mode": "concat", "mix": "sequences", "seed": 42, "labels": false,\n'
  printf ' "micro_batch_size": %s, "global_batch_size": 4,\n' "$1"
  printf ' "sources": [{"name": "web", "lengths": [5, 9, 13, 7, 6, 11, 3, 20], "weight": 0.75},\n'
  printf '             {"name": "code", "lengths": "code.txt", "weight": 0.25}],\n'
  printf ' "weight_schedule": [[3, {"web": 0.5, "code": 0.5}]], "end": {"steps": 8}%s}\n' "${2:-}"
}
blend_config 2 >"$tmp/blend.json"
blend_config 1 >"$tmp/blend1.json"
expect 0 '^step 7 rank 1: \[(web|code)/[0-9]+:[0-9]+\+[0-9]+( (web|code)/[0-9]+:[0-9]+\+[0-9]+)*\] \[' -- \
    blend --config "$tmp/blend.json" --world 2
expect 0 '^source code: [0-9]+ sequences, [0-9]+ tokens read; max prefix error [01]\.[0-9]{3}$' -- \
    blend --config "$tmp/blend.json" --world 2
# Every line of concat holds M sequences of exactly L tokens; 8 steps x 2 ranks x 1 micro-batch lines.
run blend --config "$tmp/blend.json" --world 2
lines="$(grep -c '^step ' <<<"$out")"
sizes="$(grep '^step ' <<<"$out" | sed 's/^[^:]*: //' | grep -o '\[[^]]*\]' |
  awk '{ n = 0; while (match($0, /\+[0-9]+/)) { n += substr($0, RSTART + 1, RLENGTH - 1); $0 = substr($0, RSTART + RLENGTH) } print n }' | sort -u)"
[[ $rc -eq 0 && "$lines" == 16 && "$sizes" == 8 ]] && passed=$((passed + 1)) ||
  fail "blend: expected 16 lines of sequences of 8 tokens, got $lines lines, sizes '$sizes'"$'\n'"$out$err"
# Each block of 4 sequences holds 3 of web (0.75) and 1 of code before step 3, 2 and 2 from it.
counts="$(grep '^step ' <<<"$out" | awk '{ s = $2; n = gsub(/\[web\//, ""); w[s] += n } END { for (s = 0; s < 8; s++) printf "%d", w[s] }')"
[[ "$counts" == 33322222 ]] && passed=$((passed + 1)) || fail "blend: web sequences per step $counts, expected 33322222"
# --state-after 3, resumed on 4 ranks of micro-batch 1 (the same global batch): the rest, in the same order.
run blend --config "$tmp/blend.json" --world 2 --state-after 3
state="$(sed -n 's/^state: //p' <<<"$out")"
[[ $rc -eq 0 && "$state" == distsampler-state\ v5\ sampler=blend* && $(grep -c '^step ' <<<"$out") -eq 6 ]] &&
  passed=$((passed + 1)) || fail "blend --state-after 3 did not print 6 lines and a state"$'\n'"$out$err"
groups() { grep '^step ' | sed 's/^[^:]*: //' | grep -o '\[[^]]*\]'; }
run blend --config "$tmp/blend.json" --world 2
whole="$(groups <<<"$out" | tail -n +13)"
run blend --config "$tmp/blend1.json" --world 4 --resume "$state"
rest="$(groups <<<"$out")"
[[ $rc -eq 0 && -n "$rest" && "$rest" == "$whole" && "$out" == "step 3 rank 0: "* ]] && passed=$((passed + 1)) ||
  fail "blend resumed on 4 ranks x 1 is not the rest of the run"$'\n'"$out$err"
sed 's/"global_batch_size": 4/"global_batch_size": 8/' "$tmp/blend.json" >"$tmp/blend8.json"
refuse --resume 'mixing block differs (state 4, sampler 8' blend --config "$tmp/blend8.json" --world 4 --resume "$state"
refuse --state-after '--state-after 9 is out of range (expected 0..8' blend --config "$tmp/blend.json" --world 2 \
    --state-after 9
refuse --rank '--rank 2 is out of range for --world 2' blend --config "$tmp/blend.json" --world 2 --rank 2
help_ok blend --help -- --config --world --rank --steps --state-after --resume
# --mesh: --world and --rank are global ranks; a rank reads what its data rank reads (tp ranks alike).
run blend --config "$tmp/blend.json" --world 2 --rank 1
data_rank_1="$out"
run blend --config "$tmp/blend.json" --world 4 --mesh dp=2,tp=2 --rank 3
[[ $rc -eq 0 && -n "$out" && "$out" == "$data_rank_1" ]] && passed=$((passed + 1)) ||
  fail "blend --mesh dp=2,tp=2 --rank 3 is not data rank 1's output"$'\n'"$out$err"
refuse --mesh 'has 4 ranks but --world is 3' blend --config "$tmp/blend.json" --world 3 --mesh dp=2,tp=2
help_ok --help -- '  blend    '
# Bad configs: exit 2 naming the field.
bad_config() {  # bad_config MESSAGE SED-EXPRESSION: the config edited by sed is refused with MESSAGE
  sed "$2" "$tmp/blend.json" >"$tmp/bad.json"
  refuse --config "$1" blend --config "$tmp/bad.json" --world 2
}
bad_config 'mix is "documents" (expected "sequences"; "documents" is not implemented yet)' 's/"sequences"/"documents"/'
bad_config 'labels is true (expected false; labels are not implemented yet)' 's/"labels": false/"labels": true/'
bad_config 'mode is "pack" (expected "concat" or "best-fit")' 's/"concat"/"pack"/'
bad_config 'key "colour" is unknown' 's/"seed": 42/"colour": 42/'
bad_config 'seq_len is "8" (expected an integer >= 0)' 's/"seq_len": 8/"seq_len": "8"/'
bad_config 'sources[1].weight is "x" (expected a decimal weight >= 0)' 's/"weight": 0.25/"weight": "x"/'
bad_config 'sources[1].name "web" is also sources[0]'"'"'s (expected unique names)' 's/"code", "lengths"/"web", "lengths"/'
bad_config 'sources[0].lengths[1] is -9 (expected an integer >= 0)' 's/\[5, 9/[5, -9/'
bad_config 'weight_schedule[0] has no weight for source "code" (expected one per source)' 's/, "code": 0.5}/}/'
bad_config 'weight_schedule[0] names source "math", which is not a source' 's/"code": 0.5}/"code": 0.5, "math": 1}/'
bad_config 'end is an object (expected {"steps": n})' 's/"end": {"steps": 8}/"end": {"tokens": 8}/'
bad_config 'end_steps is 0 (expected at least 1 step' 's/"steps": 8/"steps": 0/'
bad_config 'global_batch_size 6 is not a multiple of micro_batch_size 2 x world_size 2' 's/"global_batch_size": 4/"global_batch_size": 6/'
bad_config 'seq_len is missing (expected seq_len, micro_batch_size, sources and end)' 's/"seq_len": 8, //'
bad_config 'is not the config'"'"'s JSON at byte' 's/}$/,}/'
bad_config 'sources[1].lengths "' 's/code.txt/missing.txt/'
bad_config 'sources[0] packs into no sequence (74 tokens, seq_len 90' 's/"seq_len": 8/"seq_len": 90/'
refuse --config 'cannot be read' blend --config "$tmp/none.json" --world 2
fi
if part transcripts; then
# The documents' transcripts: in every ```console block of each DOC given, every `$ distsampler ...` line prints
# the lines shown after it, in order ("..." stands for lines left out), so no document can drift from the command.
# A `$ name=$(distsampler ...)` line runs in this shell, for the commands after it; `$ echo ...` lines too.
distsampler() { "$cli" "$@"; }
transcript_check() {
  local doc="$1" command="$2" expected="$3" actual line at=0
  # An assignment such as state=$(...) must run in this shell, for the commands after it.
  if [[ "$command" =~ ^[a-z_]+=\$\( ]]; then eval "$command"; else actual="$(eval "$command" 2>&1)"; fi
  [[ -z "$expected" ]] && return 0
  while IFS= read -r line; do
    [[ "$line" == "..." ]] && continue
    local rest
    rest="$(tail -n +$((at + 1)) <<<"$actual" | grep -nxF -- "$line" | head -1 | cut -d: -f1)"
    if [[ -z "$rest" ]]; then fail "$doc: \`$command\` does not print '$line'"$'\n'"$actual"; return 1; fi
    at=$((at + rest))
  done <<<"$expected"
  passed=$((passed + 1))
}
for doc in "${docs[@]}"; do
  if [[ ! -f "$doc" ]]; then fail "$doc: no such document"; continue; fi
  command="" expected="" in_block=0 transcripts=0 lineno=0 cmd_line=0
  while IFS= read -r line; do
    lineno=$((lineno + 1))
    if [[ $in_block -eq 0 ]]; then
      [[ "$line" == '```console' ]] && in_block=1
      continue
    fi
    if [[ "$line" == '```' ]]; then
      [[ -n "$command" ]] && transcript_check "$doc:$cmd_line" "$command" "$expected"
      command="" expected="" in_block=0
      continue
    fi
    if [[ "$line" == '$ '* ]]; then
      [[ -n "$command" ]] && transcript_check "$doc:$cmd_line" "$command" "$expected"
      command="${line#\$ }" expected="" cmd_line=$lineno
      transcripts=$((transcripts + 1))
    elif [[ -n "$command" ]]; then
      expected+="${expected:+$'\n'}$line"
    fi
  done <"$doc"
  [[ $transcripts -ge 1 ]] && passed=$((passed + 1)) ||
    fail "$doc: no \`$ distsampler\` transcript in a \`\`\`console block"
done

fi
[[ $passed -gt 0 ]] || fail "no check ran"
echo "${only:+part $only: }$passed passed, $failures failed"
[[ $failures -eq 0 ]]
