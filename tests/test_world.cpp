// distsampler tests: World, explicit and from the launcher's environment.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/world.hpp>

#include <map>
#include <string>

using distsampler::config_error;
using distsampler::World;
using Env = std::map<std::string, std::string>;

namespace {

// An injected environment: the process's own is never consulted.
struct FakeEnv {
  Env vars;
  const char* operator()(const char* name) const {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

World from(const Env& vars) { return World::from_env(FakeEnv{vars}); }

std::string error_of(const Env& vars) {
  try {
    (void)from(vars);
  } catch (const config_error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("World is a single process by default and validates explicit construction", "[world]") {
  World w;
  CHECK(w.rank == 0);
  CHECK(w.world_size == 1);
  CHECK(World::single() == w);

  World four(3, 4);
  CHECK(four.rank == 3);
  CHECK(four.world_size == 4);
  CHECK(four.local_rank == 0);
  CHECK(four.local_world_size == 1);

  CHECK_THROWS_WITH(World(4, 4), "World: rank 4 is out of range for world_size 4 (expected 0..3)");
  CHECK_THROWS_WITH(World(0, 0), "World: world_size is 0 (expected at least 1)");
  CHECK_THROWS_WITH(World(0, 4, 2, 2), "World: local_rank 2 is out of range for local_world_size 2 (expected 0..1)");
  CHECK_THROWS_WITH(World(0, 4, 0, 0), "World: local_world_size is 0 (expected at least 1)");
  CHECK_THROWS_WITH(World(0, 4, 0, 8),
                    "World: local_world_size 8 exceeds world_size 4 (expected local_world_size <= world_size)");
  CHECK_THROWS_AS(World(4, 4), std::invalid_argument);
}

TEST_CASE("World::from_env reads torchrun's variables", "[world][env]") {
  const World w = from({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}});
  CHECK(w == World(5, 8, 1, 4));
  CHECK(from({{"RANK", "2"}, {"WORLD_SIZE", "3"}}) == World(2, 3, 0, 1));
  CHECK(from({{"RANK", "0"}, {"WORLD_SIZE", "18446744073709551615"}}).world_size == 18446744073709551615u);
  CHECK(from({{"RANK", "007"}, {"WORLD_SIZE", "8"}}).rank == 7);
}

TEST_CASE("World::from_env falls back to Open MPI, then PMI, then SLURM", "[world][env]") {
  CHECK(from({{"OMPI_COMM_WORLD_RANK", "3"},
              {"OMPI_COMM_WORLD_SIZE", "4"},
              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}) == World(3, 4, 1, 2));
  CHECK(from({{"PMI_RANK", "6"}, {"PMI_SIZE", "7"}}) == World(6, 7));
  CHECK(from({{"PMI_RANK", "6"}, {"PMI_SIZE", "7"}, {"MPI_LOCALRANKID", "2"}, {"MPI_LOCALNRANKS", "3"}}) ==
        World(6, 7, 2, 3));
  CHECK(from({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS_PER_NODE", "4"}}) ==
        World(9, 16, 1, 4));
  // SLURM without --ntasks-per-node: local_world_size is the upper bound world_size.
  CHECK(from({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}}) == World(9, 16, 1, 16));
}

TEST_CASE("World::from_env prefers the innermost launcher", "[world][env]") {
  // torchrun started by srun inside mpirun: RANK describes this trainer process.
  const Env all = {{"RANK", "1"},     {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"},
                   {"PMI_RANK", "0"}, {"PMI_SIZE", "1"},   {"SLURM_PROCID", "0"},         {"SLURM_NTASKS", "1"}};
  CHECK(from(all) == World(1, 2));
  Env no_torch = all;
  no_torch.erase("RANK");
  no_torch.erase("WORLD_SIZE");
  no_torch["OMPI_COMM_WORLD_RANK"] = "2";
  no_torch["OMPI_COMM_WORLD_SIZE"] = "3";
  CHECK(from(no_torch) == World(2, 3));
  // A malformed inner launcher is an error, never a silent fall-through to the outer one.
  Env broken = all;
  broken["RANK"] = "x";
  CHECK_THROWS_WITH(from(broken), "World::from_env: RANK=\"x\" is not a decimal integer (expected only digits 0-9)");
}

TEST_CASE("World::from_env rejects malformed values with the variable and value in the message",
          "[world][env][errors]") {
  CHECK(error_of({}) ==
        "World::from_env: no launcher environment found (looked for RANK/WORLD_SIZE, "
        "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS); to run as one "
        "process, use World::from_env_or(World::single()) or World{}");
  CHECK(error_of({{"RANK", ""}, {"WORLD_SIZE", "4"}}) ==
        "World::from_env: RANK=\"\" is empty (expected a decimal integer)");
  CHECK(error_of({{"RANK", "1"}, {"WORLD_SIZE", "0x4"}}) ==
        "World::from_env: WORLD_SIZE=\"0x4\" is not a decimal integer (expected only digits 0-9)");
  CHECK(error_of({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}) ==
        "World::from_env: RANK=\"-1\" has a sign (expected an unsigned decimal integer)");
  CHECK(error_of({{"RANK", "+1"}, {"WORLD_SIZE", "4"}}) ==
        "World::from_env: RANK=\"+1\" has a sign (expected an unsigned decimal integer)");
  CHECK(error_of({{"RANK", " 1"}, {"WORLD_SIZE", "4"}}) ==
        "World::from_env: RANK=\" 1\" contains white space (expected only digits 0-9)");
  CHECK(error_of({{"RANK", "1"}, {"WORLD_SIZE", "4\n"}}) ==
        "World::from_env: WORLD_SIZE=\"4\n\" contains white space (expected only digits 0-9)");
  CHECK(error_of({{"RANK", "1.0"}, {"WORLD_SIZE", "4"}}) ==
        "World::from_env: RANK=\"1.0\" is not a decimal integer (expected only digits 0-9)");
  CHECK(error_of({{"RANK", "1"}, {"WORLD_SIZE", "18446744073709551616"}}) ==
        "World::from_env: WORLD_SIZE=\"18446744073709551616\" overflows 64 bits (expected at most "
        "18446744073709551615)");
  CHECK(error_of({{"RANK", "1"}, {"WORLD_SIZE", "99999999999999999999999"}}) ==
        "World::from_env: WORLD_SIZE=\"99999999999999999999999\" overflows 64 bits (expected at most "
        "18446744073709551615)");
}

TEST_CASE("World::from_env rejects impossible worlds", "[world][env][errors]") {
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}) ==
        "World::from_env (torchrun: RANK/WORLD_SIZE): world_size is 0 (expected at least 1)");
  CHECK(error_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}}) ==
        "World::from_env (torchrun: RANK/WORLD_SIZE): rank 4 is out of range for world_size 4 (expected 0..3)");
  CHECK(error_of({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "2"}}) ==
        "World::from_env (SLURM: SLURM_PROCID/SLURM_NTASKS): rank 4 is out of range for world_size 2 (expected 0..1)");
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}) ==
        "World::from_env (torchrun: RANK/WORLD_SIZE): local_rank 2 is out of range for local_world_size 2 (expected "
        "0..1)");
}

TEST_CASE("World::from_env requires variables in pairs", "[world][env][errors]") {
  CHECK(error_of({{"RANK", "0"}}) ==
        "World::from_env: RANK is set but WORLD_SIZE is not (torchrun sets both; expected the pair)");
  CHECK(error_of({{"WORLD_SIZE", "2"}}) ==
        "World::from_env: WORLD_SIZE is set but RANK is not (torchrun sets both; expected the pair)");
  CHECK(error_of({{"OMPI_COMM_WORLD_SIZE", "2"}}) ==
        "World::from_env: OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not (Open MPI sets both; expected "
        "the pair)");
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}) ==
        "World::from_env: LOCAL_RANK is set but LOCAL_WORLD_SIZE is not (expected the pair)");
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}}) ==
        "World::from_env: LOCAL_WORLD_SIZE is set but LOCAL_RANK is not (expected the pair)");
}

TEST_CASE("World::from_env_or uses the fallback only when no launcher is present", "[world][env]") {
  CHECK(World::from_env_or(World::single(), FakeEnv{}) == World());
  CHECK(World::from_env_or(World(1, 2), FakeEnv{}) == World(1, 2));
  CHECK(World::from_env_or(World::single(), FakeEnv{{{"RANK", "1"}, {"WORLD_SIZE", "2"}}}) == World(1, 2));
  CHECK_THROWS_WITH(World::from_env_or(World::single(), FakeEnv{{{"RANK", "1"}}}),
                    "World::from_env: RANK is set but WORLD_SIZE is not (torchrun sets both; expected the pair)");
  World bad;
  bad.rank = 3;  // fields are public; a bad fallback is still caught
  CHECK_THROWS_WITH(World::from_env_or(bad, FakeEnv{}),
                    "World::from_env_or (fallback): rank 3 is out of range for world_size 1 (expected 0..0)");
}
