// The consumer's use of distsampler::torch: a TorchSampler driving libtorch's DataLoader.
// SPDX-License-Identifier: MIT
#include <distsampler/torch.hpp>
#include <distsampler/torch_pass.hpp>  // the 0.1 path of torch/pass.hpp, forwarded
#include <torch/data.h>

#include <cstddef>
#include <set>
#include <string>

namespace {

struct Indices : torch::data::datasets::Dataset<Indices, std::size_t> {
  std::size_t get(std::size_t i) override { return i; }
  torch::optional<std::size_t> size() const override { return 37; }
};

}  // namespace

std::string consumer_torch() {
  distsampler::TorchSampler<> sampler(37, distsampler::World(0, 1));
  auto loader = torch::data::make_data_loader(Indices(), sampler, torch::data::DataLoaderOptions().batch_size(8));
  std::size_t reads = 0;
  std::set<std::size_t> seen;
  for (const std::vector<std::size_t>& batch : *loader) {
    for (const std::size_t index : batch) {
      ++reads;
      if (index < 37) seen.insert(index);
    }
  }
  return "torch loader read " + std::to_string(seen.size()) + " of 37 indices" +
         (reads == seen.size() ? " once each" : " with " + std::to_string(reads - seen.size()) + " repeats");
}
