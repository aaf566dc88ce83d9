// distsampler tests: under mpirun, a batch-sampler run stopped on one number of ranks and resumed on another reads each
// sample once. SPDX-License-Identifier: MIT
#include <distsampler/mpi.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gather.hpp"

namespace ds = distsampler;

namespace {

constexpr std::uint64_t micro = 4, accumulation = 2;

}  // namespace

// usage: mpi_batch_resume_test stop N STEPS DIR   (writes DIR/read.txt and DIR/state.txt)
//        mpi_batch_resume_test resume N DIR       (reads them, finishes the epoch, checks)
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const ds::World world = ds::mpi::world_from();
  const int size = static_cast<int>(world.world_size);
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::uint64_t n = argc > 2 ? std::stoull(argv[2]) : 0;
  int status = 0;
  const auto options =
      ds::BatchSamplerOptions().with_micro_batch_size(micro).with_accumulation_steps(accumulation).with_seed(5);
  ds::DistributedBatchSampler<> batches(n, world, options);
  batches.set_epoch(3);
  std::vector<std::uint64_t> mine;
  if (mode == "stop" && argc == 5) {
    const std::uint64_t steps = std::stoull(argv[3]);
    const std::string dir = argv[4];
    for (std::uint64_t s = 0; s < steps; ++s)
      for (std::uint64_t k = 0; k < accumulation; ++k)
        for (std::uint64_t index : batches.micro_batch(s, k)) mine.push_back(index);
    const auto all = distsampler_tests::gather_at_root(mine).values;
    if (world.rank == 0) {
      std::ofstream(dir + "/state.txt") << batches.state(steps).to_text() << "\n";
      std::ofstream read(dir + "/read.txt");
      for (std::uint64_t index : all) read << index << "\n";
      std::printf("stopped after %llu steps on %d ranks: %zu samples read\n", static_cast<unsigned long long>(steps),
                  size, all.size());
    }
  } else if (mode == "resume" && argc == 4) {
    const std::string dir = argv[3];
    std::string line;
    std::getline(std::ifstream(dir + "/state.txt"), line);
    batches.resume(ds::SamplerState::from_text(line));
    for (std::uint64_t s = 0; s < batches.num_steps(); ++s)
      for (std::uint64_t k = 0; k < accumulation; ++k)
        for (std::uint64_t index : batches.micro_batch(s, k)) mine.push_back(index);
    const auto all = distsampler_tests::gather_at_root(mine).values;
    if (world.rank == 0) {
      std::vector<unsigned> count(n);
      std::ifstream read(dir + "/read.txt");
      std::uint64_t index = 0, before = 0;
      while (read >> index) ++count[index], ++before;
      for (std::uint64_t i : all) ++count[i];
      std::uint64_t twice = 0, never = 0;
      for (unsigned c : count) twice += c > 1 ? 1 : 0, never += c == 0 ? 1 : 0;
      // Tail::drop: what is left after the last full global batch of the resumed run.
      const std::uint64_t expected_never = (n - batches.start()) % batches.global_batch_size();
      const bool ok = twice == 0 && never == expected_never;
      std::printf(
          "resumed on %d ranks from position %llu: %llu + %zu reads, %llu read twice, %llu never (expected "
          "%llu dropped)\nmpi batch resume: %d passed, %d failed\n",
          size, static_cast<unsigned long long>(batches.start()), static_cast<unsigned long long>(before), all.size(),
          static_cast<unsigned long long>(twice), static_cast<unsigned long long>(never),
          static_cast<unsigned long long>(expected_never), ok ? 1 : 0, ok ? 0 : 1);
      status = ok ? 0 : 1;
    }
  } else {
    if (world.rank == 0) std::fprintf(stderr, "usage: mpi_batch_resume_test stop N STEPS DIR | resume N DIR\n");
    status = 2;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
