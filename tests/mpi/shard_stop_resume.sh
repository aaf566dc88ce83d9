#!/usr/bin/env bash
# distsampler tests: stop shard streams under `mpirun -np A` with K workers, resume under `-np B` with J workers.
# SPDX-License-Identifier: MIT
# usage: shard_stop_resume.sh TEST_BINARY NP_STOP WORKERS_STOP NP_RESUME WORKERS_RESUME MPIRUN [MPIRUN FLAGS...]
set -euo pipefail
bin="$1" np_stop="$2" k_stop="$3" np_resume="$4" k_resume="$5"
shift 5
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$@" -np "$np_stop" "$bin" stop "$k_stop" "$np_stop$np_resume" "$dir"
"$@" -np "$np_resume" "$bin" resume "$k_resume" "$dir"
