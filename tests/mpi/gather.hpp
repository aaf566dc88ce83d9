// distsampler tests: gathers every rank's values at rank 0, for the mpirun tests.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_MPI_GATHER_HPP
#define DISTSAMPLER_TESTS_MPI_GATHER_HPP

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace distsampler_tests {

/// Every rank's `mine`, concatenated in rank order at rank 0 (empty elsewhere).
/// `counts[r]` and `offsets[r]` (at rank 0) say where rank r's values are.
struct Gathered {
  std::vector<std::uint64_t> values;
  std::vector<int> counts, offsets;
};

inline Gathered gather_at_root(const std::vector<std::uint64_t>& mine, MPI_Comm comm = MPI_COMM_WORLD) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  Gathered g;
  g.counts.resize(static_cast<std::size_t>(size));
  g.offsets.resize(static_cast<std::size_t>(size));
  const int count = static_cast<int>(mine.size());
  MPI_Gather(&count, 1, MPI_INT, g.counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (std::size_t r = 0; r < g.counts.size(); ++r) {
    g.offsets[r] = total;
    total += g.counts[r];
  }
  g.values.resize(static_cast<std::size_t>(total));
  MPI_Gatherv(mine.data(), count, MPI_UINT64_T, g.values.data(), g.counts.data(), g.offsets.data(), MPI_UINT64_T, 0,
              comm);
  return g;
}

}  // namespace distsampler_tests

#endif  // DISTSAMPLER_TESTS_MPI_GATHER_HPP
