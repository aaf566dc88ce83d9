// distsampler tests: compiles docs/LIBTORCH.md's fragments and runs its checkpoint loop twice: a whole run, then a
// run resumed from the last checkpoint, which must read exactly the rest of that epoch.
// SPDX-License-Identifier: MIT
#include <distsampler/torch.hpp>
#include <distsampler/torch_guard.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

namespace {

// Sample i is the tensor [i].
struct IndexDataset : torch::data::datasets::Dataset<IndexDataset> {
  torch::data::Example<> get(std::size_t i) override {
    return {torch::tensor({static_cast<std::int64_t>(i)}), torch::tensor({0})};
  }
  torch::optional<std::size_t> size() const override { return 1000; }
};

std::vector<std::uint64_t> samples_read;

void train(const std::vector<torch::data::Example<>>& batch) {
  for (const auto& example : batch) {
    samples_read.push_back(static_cast<std::uint64_t>(example.data[0].item<std::int64_t>()));
  }
}

void run(bool resuming) {
  const std::uint64_t n = 1000, epochs = 2;
  const auto options = distsampler::SamplerOptions().with_seed(42);
  IndexDataset dataset;
#include "libtorch_checkpoint.inc"
}

}  // namespace

// Compiled, not run: the guard needs the job's store at MASTER_ADDR:MASTER_PORT.
void guard_fragment(const distsampler::TorchSampler<>& sampler);
void guard_fragment(const distsampler::TorchSampler<>& sampler) {
#include "libtorch_guard.inc"
}

int main() {
  run(false);
  const std::size_t whole = samples_read.size();
  samples_read.clear();
  run(true);  // from the checkpoint after 30 batches of 32 in epoch 1
  std::vector<bool> seen(1000);
  for (std::uint64_t i : samples_read) seen[i] = true;
  std::size_t distinct = 0;
  for (bool b : seen) distinct += b;
  if (whole != 2000 || samples_read.size() != 40 || distinct != 40) {
    std::printf("FAILED: whole run read %zu, resumed run read %zu (%zu distinct)\n", whole, samples_read.size(),
                distinct);
    return 1;
  }
  std::printf("doc fragment ok: 2 epochs read 2000 samples; resumed from the checkpoint, the rest: 40 samples\n");
}
