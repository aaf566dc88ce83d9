#!/usr/bin/env bash
# distsampler tests: separate processes launched with torchrun-, Open MPI- and SLURM-style environments.
# SPDX-License-Identifier: MIT
# usage: env_launch_test.sh ENV_PROBE DISTSAMPLER_CLI DEMO_BIN_DIR
set -u
probe="$1" cli="$2" demo_bin="$3"
passed=0 failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
same() { if [[ "$1" == "$2" ]]; then passed=$((passed + 1)); else fail "$3: got '$1', expected '$2'"; fi; }

# A clean environment for each probe: only what a launcher would set.
run() { env -i PATH="$PATH" "$@" "$probe"; }

same "$(run RANK=3 WORLD_SIZE=8 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2)" \
     "rank=3 world_size=8 local_rank=1 local_world_size=2" "torchrun variables"
same "$(run SLURM_PROCID=5 SLURM_NTASKS=6 SLURM_LOCALID=1 SLURM_NTASKS_PER_NODE=2)" \
     "rank=5 world_size=6 local_rank=1 local_world_size=2" "SLURM variables"
same "$(run OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1)" \
     "rank=2 world_size=4 local_rank=0 local_world_size=1" "Open MPI variables"
same "$(run PMI_RANK=1 PMI_SIZE=2)" "rank=1 world_size=2 local_rank=0 local_world_size=1" "PMI variables"
# Precedence: torchrun inside a SLURM step inside mpirun -> torchrun's variables win.
same "$(run RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 SLURM_PROCID=0 SLURM_NTASKS=1)" \
     "rank=1 world_size=4 local_rank=1 local_world_size=4" "torchrun over Open MPI and SLURM"
same "$(run OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 SLURM_PROCID=0 SLURM_NTASKS=1)" \
     "rank=3 world_size=4 local_rank=0 local_world_size=1" "Open MPI over SLURM"
same "$(run)" "config_error: World::from_env: no launcher environment found (looked for RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS); to run as one process, use World::from_env_or(World::single()) or World{}" \
     "no launcher"
same "$(run RANK=4 WORLD_SIZE=4)" \
     "config_error: World::from_env (torchrun: RANK/WORLD_SIZE): rank 4 is out of range for world_size 4 (expected 0..3)" \
     "rank out of range"

# Coverage across separate processes: 3 SLURM-style tasks, each printing its share.
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for r in 0 1 2; do
  env -i PATH="$PATH" SLURM_PROCID=$r SLURM_NTASKS=3 SLURM_LOCALID=$r "$demo_bin/demo_rank" 1000 2 4 "$out" >/dev/null &
done
wait
verdict="$("$demo_bin/demo_verify" 1000 3 2 2 "$out" | tail -1)"
same "$verdict" "VERDICT: every (rank, worker) read a disjoint share; together they cover the dataset" "SLURM-launched coverage"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
