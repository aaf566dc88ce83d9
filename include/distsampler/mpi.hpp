// distsampler MPI adapter (opt-in): World from an MPI communicator, a cross-rank configuration check, a runtime overlap
// guard for every family (also over a parallel mesh), and each family's MPI helpers. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MPI_HPP
#define DISTSAMPLER_MPI_HPP

#include "mpi/core.hpp"  // the generic adapter: world_from, check_consistent, guard_epoch, guard_mesh_epoch

// Family adapters: one line per family with MPI helpers of its own.
#include "mpi/shards.hpp"

#endif  // DISTSAMPLER_MPI_HPP
