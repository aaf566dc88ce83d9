// A libtorch training process: make_data_loader with distsampler's TorchSampler, a tiny model, two epochs; records what
// it loaded. SPDX-License-Identifier: MIT
#include <distsampler/torch.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace ds = distsampler;

namespace {

// Synthetic regression data: sample i is x = [i / n, 1], y = 3 * x0 + 1, and it carries
// its own index so the process can record exactly what it read.
struct Synthetic : torch::data::datasets::Dataset<Synthetic> {
  explicit Synthetic(std::size_t n) : n_(n) {}
  torch::data::Example<> get(std::size_t i) override {
    const float x0 = static_cast<float>(i) / static_cast<float>(n_);
    return {torch::tensor({x0, 1.0f, static_cast<float>(i)}), torch::tensor({3.0f * x0 + 1.0f})};
  }
  torch::optional<std::size_t> size() const override { return n_; }
  std::size_t n_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: libtorch_loader DATASET_SIZE OUT_DIR  (rank from RANK/WORLD_SIZE)\n");
    return 2;
  }
  const std::size_t n = std::stoul(argv[1]);
  const std::string out_dir = argv[2];
  const ds::World world = ds::World::from_env();
  torch::manual_seed(0);

  ds::TorchSampler<> sampler(n, world, ds::SamplerOptions().with_seed(42), ds::EpochMode::auto_advance);
  auto loader =
      torch::data::make_data_loader(Synthetic(n), sampler, torch::data::DataLoaderOptions().batch_size(16).workers(2));
  torch::nn::Linear model(2, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));

  for (int epoch = 0; epoch < 2; ++epoch) {
    std::ofstream record(out_dir + "/ds_e" + std::to_string(epoch) + "_r" + std::to_string(world.rank) + "_w0.txt");
    double loss_sum = 0;
    std::size_t batches = 0;
    for (auto& batch : *loader) {
      std::vector<torch::Tensor> xs, ys;
      for (auto& example : batch) {
        record << static_cast<std::uint64_t>(example.data[2].item<float>()) << " 0\n";
        xs.push_back(example.data.slice(0, 0, 2));
        ys.push_back(example.target);
      }
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(torch::stack(xs)), torch::stack(ys));
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    std::printf("rank %llu epoch %d: %zu batches, mean loss %.4f\n", static_cast<unsigned long long>(world.rank), epoch,
                batches, batches ? loss_sum / static_cast<double>(batches) : 0.0);
  }
  return 0;
}
