// One rank's epoch with distsampler or libtorch's DistributedRandomSampler, for the side-by-side comparison in
// scripts/bench. SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>
#ifdef DISTSAMPLER_BENCH_LIBTORCH
#include <torch/data/samplers/distributed.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace ds = distsampler;

namespace {

// Every index is folded into a checksum so no engine can skip work. The epoch is read
// in blocks with fill(), as a loader prefetching a few thousand indices would.
template <class Sampler>
std::uint64_t walk(const Sampler& s) {
  std::uint64_t sum = 0;
  std::uint64_t block[4096];
  for (std::uint64_t first = 0; first < s.size(); first += 4096) {
    const std::uint64_t count = std::min<std::uint64_t>(4096, s.size() - first);
    s.fill(first, count, block);
    for (std::uint64_t i = 0; i < count; ++i) sum += block[i];
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: peer_epoch ds-feistel|ds-torch|libtorch|randperm N WORLD_SIZE RANK\n");
    return 2;
  }
  const std::string engine = argv[1];
  const std::uint64_t n = std::stoull(argv[2]), w = std::stoull(argv[3]), r = std::stoull(argv[4]);
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t sum = 0, count = 0;
  if (engine == "randperm") {  // TorchRandperm alone: torch.randperm(n) with seed 0
    const ds::TorchRandperm p(n, 0, 0);
    sum = p(0) + p(n - 1);
    count = n;
  } else if (engine == "ds-feistel") {
    ds::DistributedSampler<> s(n, ds::World(r, w), ds::SamplerOptions());
    sum = walk(s);
    count = s.size();
  } else if (engine == "ds-torch") {
    ds::DistributedSampler<ds::TorchRandperm> s(n, ds::World(r, w), ds::SamplerOptions());
    sum = walk(s);
    count = s.size();
#ifdef DISTSAMPLER_BENCH_LIBTORCH
  } else if (engine == "libtorch") {
    torch::data::samplers::DistributedRandomSampler s(n, w, r);
    s.reset();
    while (auto batch = s.next(4096)) {
      for (std::size_t index : *batch) sum += index;
      count += batch->size();
    }
#endif
  } else {
    std::fprintf(stderr, "peer_epoch: unknown engine %s\n", engine.c_str());
    return 2;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s N=%llu W=%llu rank=%llu: %llu indices in %.3f s (checksum %llu)\n", engine.c_str(),
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(w),
              static_cast<unsigned long long>(r), static_cast<unsigned long long>(count), seconds,
              static_cast<unsigned long long>(sum));
  return 0;
}
