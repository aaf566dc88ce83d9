#!/usr/bin/env bash
# Runs mpi_guard_fault_test on 4 ranks in a fault mode and checks what each rank (or mpirun) says, and how fast.
# SPDX-License-Identifier: MIT
# usage: guard_fault.sh PROGRAM stall|kill MPIRUN [MPIRUN FLAGS...]
set -u
program="$1" mode="$2" mpirun="$3"
shift 3
start=$SECONDS
out="$(timeout -k 5 40 "$mpirun" "$@" -np 4 "$program" "$mode" 2>&1)"
rc=$?
elapsed=$((SECONDS - start))
echo "$out"
status=0
fail() { echo "FAIL: $*"; status=1; }
[ "$rc" -eq 124 ] && fail "mpirun hung (killed after 40 s)"
[ "$elapsed" -le 25 ] || fail "took $elapsed s (expected a few: the guard waits 1 s)"
who='distsampler::mpi::guard_epoch'
case "$mode" in
  stall)
    [ "$rc" -eq 0 ] || fail "mpirun exited $rc"
    for r in 0 1 3; do
      grep -Fqx "rank $r: config_error: $who: rank 2 did not arrive within 1 s (expected all 4 ranks to call the guard)" \
        <<<"$out" || fail "rank $r did not name rank 2"
    done
    # Rank 0 gave up on it before it came: it hears no decision and says so.
    grep -Fq "rank 2: config_error: $who: rank 2: rank 0 sent no decision within 2 s" <<<"$out" ||
      fail "rank 2 did not say it heard no decision" ;;
  kill)
    [ "$rc" -ne 0 ] || fail "mpirun exited 0 although rank 2 was killed"
    grep -Eq "process rank 2 with PID [0-9]+ on node .* exited on signal 9" <<<"$out" ||
      fail "mpirun did not name the killed rank 2"
    if grep -q "ok: disjoint" <<<"$out"; then fail "a rank said ok although rank 2 was killed"; fi ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
[ "$status" -eq 0 ] && echo "mpi guard fault: as expected ($mode, $elapsed s)"
exit "$status"
