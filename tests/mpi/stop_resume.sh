#!/usr/bin/env bash
# distsampler tests: stop a batch-sampler run under `mpirun -np A`, resume it under `mpirun -np B`.
# SPDX-License-Identifier: MIT
# usage: stop_resume.sh TEST_BINARY NP_STOP NP_RESUME MPIRUN [MPIRUN FLAGS...]
set -euo pipefail
bin="$1" np_stop="$2" np_resume="$3"
shift 3
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$@" -np "$np_stop" "$bin" stop 5000 37 "$dir"
cat "$dir/state.txt"
"$@" -np "$np_resume" "$bin" resume 5000 "$dir"
