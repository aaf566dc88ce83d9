// A tiny project that uses distsampler as a package: it must compile, link and partition.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>

#include <cstdio>

int main() {
  const auto report = distsampler::check_samplers(1000, 3, distsampler::Tail::uneven, [](distsampler::World w) {
    return distsampler::DistributedSampler<>(
        1000, w, distsampler::SamplerOptions().with_seed(7).with_tail(distsampler::Tail::uneven));
  });
  if (!report.ok()) {
    std::printf("consumer FAILED: %s\n", report.summary().c_str());
    return 1;
  }
  std::printf("consumer ok: %s, version %d\n", CONSUMER_MODE, DISTSAMPLER_VERSION);
  return 0;
}
