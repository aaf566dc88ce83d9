// The consumer's use of distsampler::torch: a TorchSampler, libtorch's sampler interface, drawn to the end.
// SPDX-License-Identifier: MIT
// (libtorch's DataLoader is left to the adapter's own tests: here it would add 8 s of CPU to the
// consumer's build, and what this checks, that the installed target compiles, links and runs a
// libtorch sampler, needs only the sampler.)
#include <distsampler/torch.hpp>
#include <distsampler/torch/pass.hpp>

#include <cstddef>
#include <set>
#include <string>

std::string consumer_torch() {
  distsampler::TorchSampler<> sampler(37, distsampler::World(0, 1));
  sampler.reset();
  std::size_t reads = 0;
  std::set<std::size_t> seen;
  while (const auto batch = sampler.next(8)) {
    for (const std::size_t index : *batch) {
      ++reads;
      if (index < 37) seen.insert(index);
    }
  }
  return "torch sampler read " + std::to_string(seen.size()) + " of 37 indices" +
         (reads == seen.size() ? " once each" : " with " + std::to_string(reads - seen.size()) + " repeats");
}
