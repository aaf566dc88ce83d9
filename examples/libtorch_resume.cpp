// A libtorch training rank that checkpoints mid-epoch through make_data_loader and resumes on another world size.
// SPDX-License-Identifier: MIT
//
// Run by launch_libtorch_resume.sh: 4 ranks train with micro-batches of 8, 2 accumulation
// steps and 2 loader workers, checkpoint after 6 optimizer steps, read a few more
// micro-batches (lost: the job "crashes" before the next checkpoint) and stop; then 2
// ranks with 4 accumulation steps (the same global batch of 64) resume from the
// checkpoint and finish the epoch. The launcher proves from the logs that every sample
// of the epoch was read exactly once (or dropped by Tail::drop, and logged as such).
// With `naive`, the checkpoint records every batch the loader handed out, prefetched ones
// included (what a sampler without a consumed count would save): the proof then fails.
#include <distsampler/torch.hpp>
#include <distsampler/torch_guard.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

constexpr std::uint64_t micro_batch = 8, global_batch = 64, checkpoint_step = 6, lost_micro_batches = 3;

// Sample i is x = [i / n, 1], y = 3 * x0 + 1; x carries i so the process logs what it read.
struct Synthetic : torch::data::datasets::Dataset<Synthetic> {
  explicit Synthetic(std::size_t n) : n_(n) {}
  torch::data::Example<> get(std::size_t i) override {
    const float x0 = static_cast<float>(i) / static_cast<float>(n_);
    return {torch::tensor({x0, 1.0f, static_cast<float>(i)}), torch::tensor({3.0f * x0 + 1.0f})};
  }
  torch::optional<std::size_t> size() const override { return n_; }
  std::size_t n_;
};

// The job's sampler: the same global batch of 64 on every world size.
ds::TorchBatchSampler<> make_sampler(std::uint64_t n, const ds::World& world) {
  ds::BatchSamplerOptions options;
  options.seed = 42;
  options.tail = ds::Tail::drop;
  const std::uint64_t accumulation = global_batch / (micro_batch * world.world_size);
  return ds::TorchBatchSampler<>(ds::DistributedBatchSampler<>(
      n, world,
      ds::BatchSamplerOptions(options).with_micro_batch_size(micro_batch).with_accumulation_steps(accumulation)));
}

std::string path(const std::string& dir, const std::string& name, std::uint64_t rank) {
  return dir + "/" + name + "_r" + std::to_string(rank) + (name == "sampler" ? ".pt" : ".txt");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5 || (std::string(argv[1]) != "stop" && std::string(argv[1]) != "resume") ||
      (argc == 5 && std::string(argv[4]) != "naive")) {
    std::fprintf(stderr,
                 "usage: libtorch_resume stop|resume DATASET_SIZE DIR [naive]  (RANK, WORLD_SIZE, "
                 "MASTER_ADDR, MASTER_PORT)\n");
    return 2;
  }
  const bool naive = argc == 5;
  const bool resuming = std::string(argv[1]) == "resume";
  const std::uint64_t n = std::stoull(argv[2]);
  const std::string dir = argv[3];
  const ds::World world = ds::World::from_env();
  torch::manual_seed(0);

  ds::TorchBatchSampler<> sampler = make_sampler(n, world);
  torch::nn::Linear model(2, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  if (resuming) {
    // Any rank's checkpoint holds the job's state; load before the loader iterates.
    torch::serialize::InputArchive archive;
    archive.load_from(path(dir, "sampler", world.rank));
    sampler.load(archive);
    torch::load(model, dir + "/model.pt");
  }
  // Every rank agrees on the sampler and the shares are disjoint and covering.
  auto store = ds::torch_guard::store_from_env();
  std::printf("rank %llu guard: %s\n", static_cast<unsigned long long>(world.rank),
              ds::torch_guard::check_epoch(sampler, *store).message.c_str());

  auto loader = torch::data::make_data_loader(Synthetic(n), sampler,
                                              torch::data::DataLoaderOptions().batch_size(micro_batch).workers(2));
  const std::uint64_t accumulation = sampler.batches().accumulation_steps();
  std::ofstream log(path(dir, resuming ? "read_resume" : "read_stop", world.rank));
  std::uint64_t consumed = 0, steps = 0, lost = 0;
  bool checkpointed = false;
  for (std::uint64_t epoch = sampler.epoch(); epoch < 1; ++epoch) {
    sampler.set_epoch(epoch);  // keeps the resumed position of its epoch
    for (auto& batch : *loader) {
      if (lost == lost_micro_batches) break;  // the process dies before its next checkpoint
      std::vector<torch::Tensor> xs, ys;
      for (auto& example : batch) {
        const auto index = static_cast<std::uint64_t>(example.data[2].item<float>());
        log << (checkpointed ? "lost " : "read ") << index << "\n";
        xs.push_back(example.data.slice(0, 0, 2));
        ys.push_back(example.target);
      }
      if (checkpointed) {
        ++lost;
        continue;
      }
      // Each rank trains its own replica here; DDP would all-reduce the gradients.
      auto loss =
          torch::mse_loss(model->forward(torch::stack(xs)), torch::stack(ys)) / static_cast<double>(accumulation);
      loss.backward();
      if (++consumed % accumulation == 0) {
        optimizer.step();
        optimizer.zero_grad();
        ++steps;
      }
      if (!resuming && steps == checkpoint_step && consumed % accumulation == 0) {
        // The workers have fetched ahead; the checkpoint names what the loop consumed.
        const std::uint64_t recorded = naive ? sampler.batches_handed_out() : consumed;
        torch::serialize::OutputArchive archive;
        sampler.save(archive, recorded);
        archive.save_to(path(dir, "sampler", world.rank));
        std::ofstream(path(dir, "state", world.rank)) << sampler.state_after(recorded).to_text() << "\n";
        if (world.rank == 0) torch::save(model, dir + "/model.pt");
        std::printf("rank %llu checkpoint after %llu micro-batches (%llu handed out by the loader): %s\n",
                    static_cast<unsigned long long>(world.rank), static_cast<unsigned long long>(consumed),
                    static_cast<unsigned long long>(sampler.batches_handed_out()),
                    sampler.state_after(recorded).to_text().c_str());
        checkpointed = true;
      }
    }
  }
  if (resuming && world.rank == 0) {
    // Tail::drop leaves the epoch's last partial global batch unread: log it as such.
    const auto batches = sampler.batches();
    std::ofstream dropped(dir + "/dropped.txt");
    for (std::uint64_t p = batches.layout().read_end(); p < n; ++p) {
      dropped << "dropped " << batches.index_at_position(p) << "\n";
    }
  }
  std::printf("rank %llu of %llu %s: %llu micro-batches in %llu optimizer steps, %llu lost after the checkpoint\n",
              static_cast<unsigned long long>(world.rank), static_cast<unsigned long long>(world.world_size),
              resuming ? "resumed" : "stopped", static_cast<unsigned long long>(consumed),
              static_cast<unsigned long long>(steps), static_cast<unsigned long long>(lost));
  return 0;
}
