// distsampler test program: one rank of a torchrun-style job running the c10d guard, possibly misconfigured.
// SPDX-License-Identifier: MIT
#include <distsampler/torch_guard.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

namespace ds = distsampler;
namespace guard = distsampler::torch_guard;

namespace {

constexpr std::uint64_t n = 1003;

// Every sampler of this program is built here.
ds::DistributedSampler<> plain(ds::World world, std::uint64_t seed) {
  return ds::DistributedSampler<>(n, world, ds::SamplerOptions().with_seed(seed).with_tail(ds::Tail::pad));
}

ds::DistributedBatchSampler<> batches(ds::World world) {
  ds::BatchSamplerOptions o;
  o.seed = 42;
  return ds::DistributedBatchSampler<>(n, world,
                                       ds::BatchSamplerOptions(o).with_micro_batch_size(5).with_accumulation_steps(3));
}

ds::StreamingShardSampler shards(ds::World world) {
  ds::ShardSamplerOptions o;
  o.seed = 42;
  o.tail = ds::Tail::drop;
  return ds::StreamingShardSampler({400, 3, 250, 350}, world, ds::ShardSamplerOptions(o).with_num_workers(2));
}

void say(const ds::World& world, const std::string& what) {
  std::printf("rank %llu: %s\n", static_cast<unsigned long long>(world.rank), what.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: torch_guard_rank ok|seed|world|rank|overlap  (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)\n");
    return 2;
  }
  const std::string mode = argv[1];
  const ds::World world = ds::World::from_env();
  try {
    auto store = guard::store_from_env(std::chrono::seconds(60));
    if (mode == "ok") {
      auto sampler = plain(world, 42);
      for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {  // repeated guards meet under fresh keys
        sampler.set_epoch(epoch);
        say(world, "distributed epoch " + std::to_string(epoch) + ": " + guard::check_epoch(sampler, *store).message);
      }
      sampler.resume(plain(ds::World(0, 3), 42).state(100));  // a resumed segment: 300 consumed before it
      say(world, "resumed: " + guard::check_epoch(sampler, *store).message);
      say(world, "batch: " + guard::check_epoch(batches(world), *store).message);
      say(world, "shard: " + guard::check_epoch(shards(world), *store).message);
      ds::TorchSampler<> adapter(n, world, ds::SamplerOptions().with_seed(42).with_tail(ds::Tail::drop));
      say(world, "adapter: " + guard::check_epoch(adapter, *store).message);
    } else if (mode == "seed") {
      (void)guard::check_epoch(plain(world, world.rank == 2 ? 43 : 42), *store);
      say(world, "no error");
    } else if (mode == "world") {
      (void)guard::check_epoch(plain(world.rank == 1 ? ds::World(1, 5) : world, 42), *store);
      say(world, "no error");
    } else if (mode == "rank") {
      (void)guard::check_epoch(plain(world.rank == 3 ? ds::World(1, 4) : world, 42), *store);
      say(world, "no error");
    } else if (mode == "overlap") {
      // Rank 3 reads rank 1's share but reports its own key: only the sums can tell.
      const auto reads = plain(world.rank == 3 ? ds::World(1, 4) : world, 42);
      guard::ReadSums sums;
      for (std::uint64_t i = 0; i < reads.size(); ++i) {
        if (reads.is_padding(i)) {
          sums.padding();
        } else {
          sums.read(reads[i]);
        }
      }
      guard::GuardKey key;
      key.fields[1] = n;
      key.fields[12] = world.world_size;
      key.rank = world.rank;
      say(world, "overlap: " + guard::check_reads(*store, world, key, sums).message);
    } else {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
  } catch (const ds::config_error& e) {
    say(world, std::string("config_error: ") + e.what());
  } catch (const std::exception& e) {
    say(world, std::string("other error: ") + e.what());
    return 1;
  }
  return 0;
}
