// distsampler tests: under mpirun, the overlap guard with a timeout when rank 2 comes late, stalls or dies.
// SPDX-License-Identifier: MIT
#include <distsampler/mpi.hpp>

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

namespace ds = distsampler;

// usage: mpi_guard_fault_test ok|stall|kill
//   ok: every rank calls the guard (1 s timeout) twice; stall: rank 2 calls 3 s late;
//   kill: rank 2 is SIGKILLed before it calls (mpirun ends the job).
// Each rank prints "rank R: <verdict or config_error>" per call.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "ok";
  const ds::World world = ds::mpi::world_from(MPI_COMM_WORLD);
  const auto timeout = std::chrono::seconds(1);
  ds::DistributedSampler<> sampler(1003, world, ds::SamplerOptions().with_seed(42));
  const bool two = world.rank == 2;
  if (two && mode == "kill") ::kill(::getpid(), SIGKILL);
  if (two && mode == "stall") std::this_thread::sleep_for(std::chrono::seconds(3));
  for (int call = 0; call < (mode == "ok" ? 2 : 1); ++call) {
    sampler.set_epoch(static_cast<std::uint64_t>(call));
    std::string line;
    try {
      line = ds::mpi::guard_epoch(sampler, MPI_COMM_WORLD, timeout).message;
    } catch (const ds::config_error& e) {
      line = std::string("config_error: ") + e.what();
    }
    std::printf("rank %llu: %s\n", static_cast<unsigned long long>(world.rank), line.c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
