// One training process of the demo: reads its rank from the launcher's environment and walks two epochs with two loader
// workers. SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>
#include <distsampler/fmt.hpp>

#include <fmt/format.h>
#include <fmt/os.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace ds = distsampler;

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

// The common mistake, for comparison: every rank shuffles the whole dataset with its
// own seed (42 + rank) and then takes its stride. (Fisher-Yates; the small modulo
// bias does not matter for the demonstration.)
std::vector<std::uint64_t> naive_share(std::uint64_t n, ds::World world, std::uint64_t epoch) {
  std::vector<std::uint64_t> all(n);
  for (std::uint64_t i = 0; i < n; ++i) all[i] = i;
  std::uint64_t state = (42 + world.rank) * 1000003u + epoch;
  for (std::uint64_t i = n; i > 1; --i) std::swap(all[i - 1], all[splitmix64(state) % i]);
  std::vector<std::uint64_t> mine;
  for (std::uint64_t i = world.rank; i < n; i += world.world_size) mine.push_back(all[i]);
  return mine;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: demo_rank DATASET_SIZE EPOCHS MICRO_BATCH OUT_DIR  (rank from RANK/WORLD_SIZE)\n");
    return 2;
  }
  try {
    const std::uint64_t n = std::stoull(argv[1]), epochs = std::stoull(argv[2]), batch = std::stoull(argv[3]);
    const std::string out_dir = argv[4];
    const ds::World world = ds::World::from_env();
    constexpr std::uint64_t num_workers = 2;
    ds::DistributedSampler<> sampler(n, world, ds::SamplerOptions().with_seed(42));
    for (std::uint64_t epoch = 0; epoch < epochs; ++epoch) {
      sampler.set_epoch(epoch);
      const std::uint64_t batches = (sampler.size() + batch - 1) / batch;
      std::string shown;
      for (std::uint64_t b = 0; b < 2 && b < batches; ++b) {
        shown += " [";
        for (std::uint64_t i = b * batch; i < std::min((b + 1) * batch, sampler.size()); ++i) {
          shown += fmt::format("{}{}", i == b * batch ? "" : " ", sampler[i]);
        }
        shown += "]";
      }
      fmt::print("{} epoch {}: {} samples in {} micro-batches of {}; first:{}\n", world, epoch, sampler.size(), batches,
                 batch, shown);
      // torch's DataLoader hands micro-batch b to worker b mod num_workers; each
      // worker thread records what it loaded.
      std::vector<std::thread> workers;
      for (std::uint64_t w = 0; w < num_workers; ++w) {
        workers.emplace_back([&, w] {
          auto file = fmt::output_file(fmt::format("{}/ds_e{}_r{}_w{}.txt", out_dir, epoch, world.rank, w));
          for (std::uint64_t b = w; b < batches; b += num_workers) {
            for (std::uint64_t i = b * batch; i < std::min((b + 1) * batch, sampler.size()); ++i) {
              file.print("{} {}\n", sampler[i], sampler.is_padding(i) ? 1 : 0);
            }
          }
        });
      }
      for (auto& t : workers) t.join();
      auto naive = fmt::output_file(fmt::format("{}/naive_e{}_r{}.txt", out_dir, epoch, world.rank));
      for (std::uint64_t index : naive_share(n, world, epoch)) naive.print("{} 0\n", index);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "demo_rank: {}\n", e.what());
    return 1;
  }
  return 0;
}
