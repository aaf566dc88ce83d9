// A tiny program using distsampler as a package: it compiles, links and partitions through every adapter it has.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>

#include <cstdio>
#include <string>

std::string consumer_fmt(const distsampler::World& world);
#ifdef CONSUMER_MPI
std::string consumer_mpi(int& argc, char**& argv);
#endif
#ifdef CONSUMER_TORCH
std::string consumer_torch();
#endif

int main(int argc, char** argv) {
  const auto report = distsampler::check_samplers(1000, 3, distsampler::Tail::uneven, [](distsampler::World w) {
    return distsampler::DistributedSampler<>(
        1000, w, distsampler::SamplerOptions().with_seed(7).with_tail(distsampler::Tail::uneven));
  });
  std::string failure = report.ok() ? "" : report.summary();
  const std::string fmt_result = consumer_fmt(distsampler::World(2, 3));
  if (fmt_result != "rank 2 of 3, Tail uneven") failure += " fmt gave '" + fmt_result + "'";
#ifdef CONSUMER_MPI
  const std::string mpi_result = consumer_mpi(argc, argv);
  if (mpi_result != "mpi world 0 of 1") failure += " mpi gave '" + mpi_result + "'";
#endif
#ifdef CONSUMER_TORCH
  const std::string torch_result = consumer_torch();
  if (torch_result != "torch sampler read 37 of 37 indices once each") failure += " torch gave '" + torch_result + "'";
#endif
  (void)argc;
  (void)argv;
  if (!failure.empty()) {
    std::printf("consumer FAILED:%s\n", failure.c_str());
    return 1;
  }
  std::printf("consumer ok: %s\n", CONSUMER_LABEL);
  return 0;
}
