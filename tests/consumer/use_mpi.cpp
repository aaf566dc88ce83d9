// The consumer's use of distsampler::mpi: this process's World from MPI (a singleton run).
// SPDX-License-Identifier: MIT
#include <distsampler/mpi.hpp>

#include <string>

std::string consumer_mpi(int& argc, char**& argv) {
  MPI_Init(&argc, &argv);
  const distsampler::World world = distsampler::mpi::world_from(MPI_COMM_WORLD);
  MPI_Finalize();
  return "mpi world " + std::to_string(world.rank) + " of " + std::to_string(world.world_size);
}
