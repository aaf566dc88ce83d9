// distsampler test program: one rank of a torchrun-style job running the c10d guard, possibly misconfigured.
// SPDX-License-Identifier: MIT
#include <distsampler/torch_guard.hpp>

#include "../guard_families.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

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

// A store that forwards to `inner` and SIGKILLs this process once it read, or added 1 to, a key
// ending in `fatal`: a rank dying at a chosen point inside the guard.
class DyingStore : public c10d::Store {
 public:
  DyingStore(c10d::Store& inner, std::string fatal)
      : c10d::Store(inner.getTimeout()), inner_(inner), fatal_(std::move(fatal)) {}
  void set(const std::string& k, const std::vector<uint8_t>& v) override { inner_.set(k, v); }
  std::vector<uint8_t> compareSet(const std::string& k, const std::vector<uint8_t>& a,
                                  const std::vector<uint8_t>& b) override {
    return inner_.compareSet(k, a, b);
  }
  std::vector<uint8_t> get(const std::string& k) override {
    auto out = inner_.get(k);
    die_at(k);
    return out;
  }
  int64_t add(const std::string& k, int64_t v) override {
    const int64_t out = inner_.add(k, v);
    if (v == 1) die_at(k);
    return out;
  }
  bool deleteKey(const std::string& k) override { return inner_.deleteKey(k); }
  bool check(const std::vector<std::string>& keys) override { return inner_.check(keys); }
  int64_t getNumKeys() override { return inner_.getNumKeys(); }
  void wait(const std::vector<std::string>& keys) override { inner_.wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override { inner_.wait(keys, t); }

 private:
  void die_at(const std::string& k) const {
    if (k.size() >= fatal_.size() && k.compare(k.size() - fatal_.size(), fatal_.size(), fatal_) == 0) {
      ::kill(::getpid(), SIGKILL);
    }
  }
  c10d::Store& inner_;
  std::string fatal_;
};

void say(const ds::World& world, const std::string& what) {
  std::printf("rank %llu: %s\n", static_cast<unsigned long long>(world.rank), what.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(
        stderr,
        "usage: torch_guard_rank ok|seed|families|families-seed|world|rank|overlap|absent|die-before|die-publish|die-read|die-after|late|"
        "host-die-publish|host-die-read"
        "  (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)\n");
    return 2;
  }
  std::string mode = argv[1];
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
    } else if (mode == "families" || mode == "families-seed") {
      // One sampler of each of the eight families; in families-seed rank 2 builds each with seed 43.
      const std::uint64_t seed = mode == "families-seed" && world.rank == 2 ? 43 : 42;
      guard_families::for_each_family(world, seed, [&](const char* family, auto&& s) {
        try {
          say(world, std::string(family) + ": " + guard::check_epoch(s, *store).message);
        } catch (const ds::config_error& e) {
          say(world, std::string(family) + ": config_error: " + e.what());
        }
      });
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
    } else if (mode == "absent" || mode == "late" || mode.rfind("die-", 0) == 0 || mode.rfind("host-die-", 0) == 0) {
      // Rank 2 fails the others in one way per mode; the guard waits 1 s for it. The host-die
      // modes kill rank 0 instead, the host of the store itself, at the same points.
      const auto timeout = std::chrono::seconds(1);
      const auto sampler = plain(world, 42);
      const bool host = mode.rfind("host-", 0) == 0;
      const bool two = world.rank == (host ? 0u : 2u);
      if (host) mode = mode.substr(5);
      if (two && mode == "die-before") ::kill(::getpid(), SIGKILL);
      if (two && (mode == "absent" || mode == "late")) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      if (two && mode == "absent") return 0;  // alive, but never calls the guard
      // die-publish: killed once counted in (its record published); die-read: once it read every
      // record, before it counts itself out.
      DyingStore store2(*store, two && mode == "die-publish" ? (host ? "/in/0" : "/in/2")
                                : two && mode == "die-read"  ? "/record/3"
                                                             : "\n");
      try {
        say(world, mode + ": " + guard::check_epoch(sampler, store2, world, timeout).message);
      } catch (const ds::config_error& e) {
        say(world, std::string("config_error: ") + e.what());
      }
      if (two && mode == "die-after") ::kill(::getpid(), SIGKILL);
      // The store's host outlives the late rank, so it reads the decision.
      if (world.rank == 0 && mode == "late") std::this_thread::sleep_for(std::chrono::milliseconds(2500));
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
