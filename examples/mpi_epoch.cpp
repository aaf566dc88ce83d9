// Walks two epochs of micro-batches under mpirun with the overlap guard on, and prints a per-rank summary.
// SPDX-License-Identifier: MIT
//
//   mpirun -np 4 build/dev/examples/mpi_epoch [DATASET_SIZE] [--broken]
//
// --broken seeds every rank differently (42 + rank), the classic bug, to show the guard firing.
#include <distsampler/mpi.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace ds = distsampler;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const ds::World world = ds::mpi::world_from();
  std::uint64_t n = 100000;
  bool broken = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--broken") == 0) {
      broken = true;
    } else {
      n = std::stoull(argv[i]);
    }
  }
  const std::uint64_t micro = 16, accumulation = 2;
  const auto options = ds::BatchSamplerOptions()
                           .with_micro_batch_size(micro)
                           .with_accumulation_steps(accumulation)
                           .with_seed(broken ? 42 + world.rank : 42);
  ds::DistributedBatchSampler<> batches(n, world, options);
  int failures = 0;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    batches.set_epoch(epoch);
    ds::mpi::OverlapGuard guard(n);
    std::uint64_t first = 0, reads = 0;
    for (std::uint64_t s = 0; s < batches.num_steps(); ++s) {
      for (std::uint64_t k = 0; k < batches.micro_batches_per_step(); ++k) {
        const auto micro_batch = batches.micro_batch(s, k);
        for (std::uint64_t index : micro_batch) {
          if (reads++ == 0) first = index;
          guard.read(index);  // a real job would load and train on `index` here
        }
      }
      // (optimizer step; every rank runs the same number of steps)
    }
    // Tail::drop leaves the positions after the last full global batch unread: tell the guard.
    if (world.rank == 0) {
      const std::uint64_t done = batches.num_steps() * batches.global_batch_size();
      for (std::uint64_t p = done; p < n; ++p) guard.skip(batches.index_at_position(p));
    }
    const auto report = guard.finish();
    std::printf("rank %llu/%llu epoch %llu: %llu steps x %llu micro-batches of %llu, %llu samples, first %llu\n",
                static_cast<unsigned long long>(world.rank), static_cast<unsigned long long>(world.world_size),
                static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(batches.num_steps()),
                static_cast<unsigned long long>(accumulation), static_cast<unsigned long long>(micro),
                static_cast<unsigned long long>(reads), static_cast<unsigned long long>(first));
    std::fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world.rank == 0)
      std::printf("epoch %llu guard: %s\n", static_cast<unsigned long long>(epoch), report.message.c_str());
    failures += report.ok ? 0 : 1;
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
