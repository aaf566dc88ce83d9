// Tests of shard schedules (which shards a consumer, rank or node reads, when, how many records) and lane-wise fill.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include <distsampler/shards/detail/schedule.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

#include "shard_test_util.hpp"

namespace {

using distsampler::ConsumerProgress;
using distsampler::ScheduledShard;
using shard_test::ShardSample;
using shard_test::ShardSamplerOptions;
using shard_test::StreamingShardSampler;
using shard_test::Tail;
using shard_test::TestRng;
using shard_test::World;

// A schedule's entries (one per shard) in the documented order: by first slot, then shard.
std::vector<ScheduledShard> in_first_read_order(const std::map<std::uint64_t, ScheduledShard>& by_shard) {
  std::vector<ScheduledShard> out;
  for (const auto& e : by_shard) out.push_back(e.second);
  std::sort(out.begin(), out.end(), [](const ScheduledShard& a, const ScheduledShard& b) {
    return a.first_slot != b.first_slot ? a.first_slot < b.first_slot : a.shard < b.shard;
  });
  return out;
}

// The schedule of the given workers of the given ranks, by visiting every slot of their
// streams with sample(): the definition the fast schedule must match.
std::vector<ScheduledShard> schedule_by_walk(const std::vector<StreamingShardSampler>& ranks,
                                             const std::vector<std::uint64_t>& rank_ids) {
  std::map<std::uint64_t, ScheduledShard> by_shard;
  for (const std::uint64_t r : rank_ids) {
    const StreamingShardSampler& s = ranks[static_cast<std::size_t>(r)];
    for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
      for (std::uint64_t i = 0; i < s.worker_size(w); ++i) {
        const std::uint64_t shard = s.sample(w, i).shard;
        auto it = by_shard.find(shard);
        if (it == by_shard.end()) {
          by_shard.emplace(shard, ScheduledShard{shard, i, i, 1});
        } else {
          it->second.first_slot = std::min(it->second.first_slot, i);
          it->second.last_slot = std::max(it->second.last_slot, i);
          ++it->second.samples;
        }
      }
    }
  }
  return in_first_read_order(by_shard);
}

// One worker's schedule by walking its stream.
std::vector<ScheduledShard> worker_schedule_by_walk(const StreamingShardSampler& s, std::uint64_t worker) {
  std::map<std::uint64_t, ScheduledShard> by_shard;
  for (std::uint64_t i = 0; i < s.worker_size(worker); ++i) {
    const std::uint64_t shard = s.sample(worker, i).shard;
    auto it = by_shard.emplace(shard, ScheduledShard{shard, i, i, 0}).first;
    it->second.last_slot = i;
    ++it->second.samples;
  }
  return in_first_read_order(by_shard);
}

// Options with lanes, open shards, runs and windows drawn small enough to walk, including
// windows above 16 (the Feistel windows) and unshuffled orders.
ShardSamplerOptions random_schedule_options(TestRng& rng) {
  const std::uint64_t c = 1 + rng.below(9);
  auto o = ShardSamplerOptions()
               .with_seed(rng.next())
               .with_canonical_streams(c)
               .with_max_open_shards(1 + rng.below(c))
               .with_run_length(rng.below(3) == 0 ? 1 + rng.below(4) : 1)
               .with_shuffle_window(rng.below(4) == 0 ? 17 + rng.below(20) : 1 + rng.below(17))
               .with_shuffle(rng.below(8) != 0);
  const Tail tails[] = {Tail::pad, Tail::drop, Tail::uneven};
  return o.with_tail(tails[rng.below(3)]);
}

// One sampler per rank of a world of `nodes` x `per_node` ranks with `workers` workers.
std::vector<StreamingShardSampler> schedule_ranks(const std::vector<std::uint64_t>& sizes, std::uint64_t nodes,
                                                  std::uint64_t per_node, std::uint64_t workers,
                                                  const ShardSamplerOptions& o) {
  std::vector<StreamingShardSampler> ranks;
  const std::uint64_t world = nodes * per_node;
  for (std::uint64_t r = 0; r < world; ++r) {
    ranks.emplace_back(sizes, World(r, world, r % per_node, per_node),
                       ShardSamplerOptions(o).with_num_workers(workers));
  }
  return ranks;
}

// Every worker's, rank's and node's schedule equals the walk's; fill agrees with sample()
// on random windows. Returns the number of workers whose streams have lane rounds.
std::uint64_t check_schedules(const std::vector<StreamingShardSampler>& ranks, std::uint64_t per_node, TestRng& rng) {
  std::uint64_t with_rounds = 0;
  for (std::uint64_t r = 0; r < ranks.size(); ++r) {
    const StreamingShardSampler& s = ranks[static_cast<std::size_t>(r)];
    INFO("rank " << r << " of " << ranks.size() << ", " << s.num_workers() << " workers, epoch " << s.epoch()
                 << ", start " << s.start());
    for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
      INFO("worker " << w);
      REQUIRE(s.shard_schedule(w) == worker_schedule_by_walk(s, w));
      if (s.walk()->lane_rounds(s.consumer(w)).rounds >= 2) ++with_rounds;
      const std::uint64_t size = s.worker_size(w);
      if (size == 0) continue;
      const std::uint64_t first = rng.below(size), count = 1 + rng.below(size - first);
      std::vector<ShardSample> out(static_cast<std::size_t>(count));
      s.fill(w, first, count, out.data());
      for (std::uint64_t i = 0; i < count; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == s.sample(w, first + i));
    }
    REQUIRE(s.rank_shard_schedule() == schedule_by_walk(ranks, {r}));
    std::vector<std::uint64_t> node;
    for (std::uint64_t x = r - r % per_node; x < r - r % per_node + per_node; ++x) node.push_back(x);
    REQUIRE(s.node_shard_schedule() == schedule_by_walk(ranks, node));
  }
  return with_rounds;
}

}  // namespace

TEST_CASE("shard schedules equal a walk of every slot, fresh and resumed on other worlds", "[shard][schedule]") {
  TestRng rng{20261201};
  std::uint64_t with_rounds = 0, workers_seen = 0;
  for (int trial = 0; trial < 90; ++trial) {
    INFO("trial " << trial);
    auto sizes = shard_test::random_sizes(rng, 30, 400);
    if (rng.below(5) == 0) sizes.push_back(4000);  // one shard spanning several lanes
    const auto o = random_schedule_options(rng);
    INFO("streams " << o.canonical_streams << " open " << o.max_open_shards << " run " << o.run_length << " window "
                    << o.shuffle_window << " shuffle " << o.shuffle);
    std::uint64_t nodes = 1 + rng.below(3), per_node = 1 + rng.below(3), workers = 1 + rng.below(3);
    auto ranks = schedule_ranks(sizes, nodes, per_node, workers, o);
    const std::uint64_t epoch = rng.below(3);
    for (auto& s : ranks) s.set_epoch(epoch);
    with_rounds += check_schedules(ranks, per_node, rng);
    workers_seen += nodes * per_node * workers;
    // Two resumed segments: every consumer stopped at its own count, resumed on a new world.
    for (int segment = 0; segment < 2 && !ranks.empty(); ++segment) {
      // Stops near a common count (a few blocks apart), now and then one at its end.
      std::vector<std::uint64_t> done(static_cast<std::size_t>(ranks[0].consumers()));
      const std::uint64_t common = rng.below(ranks[0].consumer_size(0) / 2 + 1);
      for (std::uint64_t k = 0; k < done.size(); ++k) {
        const std::uint64_t size = ranks[0].consumer_size(k);
        const std::uint64_t near = common + rng.below(3 * ranks[0].block_size() + 1);
        done[static_cast<std::size_t>(k)] = rng.below(16) == 0 ? size : std::min(size, near);
      }
      const auto state = ranks[0].state(ConsumerProgress(done));
      nodes = 1 + rng.below(3);
      per_node = 1 + rng.below(3);
      workers = 1 + rng.below(3);
      ranks = schedule_ranks(sizes, nodes, per_node, workers, o);
      for (auto& s : ranks) s.resume(state);
      INFO("segment " << segment << " on " << nodes << " x " << per_node << " x " << workers);
      with_rounds += check_schedules(ranks, per_node, rng);
      workers_seen += nodes * per_node * workers;
    }
  }
  // The lane-wise counting, not only the walked parts, is what most cases compare.
  INFO(with_rounds << " of " << workers_seen << " workers have lane rounds");
  CHECK(with_rounds * 2 > workers_seen);
}

TEST_CASE("a resume after an equal stop on the same world keeps the schedule's remaining reads", "[shard][schedule]") {
  // 4 ranks on 2 nodes x 2 workers over 300 shards: the rest of each stream after a stop
  // at slot 37 reads exactly what the fresh stream reads from slot 37 on.
  TestRng rng{77};
  std::vector<std::uint64_t> sizes(300);
  for (auto& x : sizes) x = 20 + rng.below(60);
  const auto o = ShardSamplerOptions().with_seed(5).with_canonical_streams(32).with_max_open_shards(8);
  auto ranks = schedule_ranks(sizes, 2, 2, 2, o);
  for (auto& s : ranks) s.set_epoch(2);
  const auto state = ranks[0].state(37);
  for (const auto& fresh : ranks) {
    StreamingShardSampler resumed(sizes, fresh.world(), fresh.options(), state);
    for (std::uint64_t w = 0; w < 2; ++w) {
      std::map<std::uint64_t, std::uint64_t> rest;
      for (std::uint64_t i = 37; i < fresh.worker_size(w); ++i) ++rest[fresh.sample(w, i).shard];
      const auto plan = resumed.shard_schedule(w);
      REQUIRE(plan.size() == rest.size());
      for (const auto& e : plan) CHECK(e.samples == rest[e.shard]);
      REQUIRE(resumed.walk()->lane_rounds(resumed.consumer(w)).rounds > 100);
    }
  }
}

TEST_CASE("a schedule at cluster scale has one entry per shard read and stays exact", "[shard][schedule][cluster]") {
  // 10^5 shards of 10^5 samples (10^10), 64 ranks x 8 workers, 8 ranks per node.
  const std::vector<std::uint64_t> sizes(100000, 100000);
  StreamingShardSampler s(sizes, World(11, 64, 3, 8), ShardSamplerOptions().with_seed(9).with_num_workers(8));
  s.set_epoch(1);
  auto check = [&](const StreamingShardSampler& x, std::uint64_t worker) {
    const auto plan = x.shard_schedule(worker);
    REQUIRE(!plan.empty());
    REQUIRE(plan.size() <= sizes.size());
    std::uint64_t total = 0;
    for (const auto& e : plan) total += e.samples;
    REQUIRE(total == x.worker_size(worker));
    for (std::size_t t = 0; t + 1 < plan.size(); ++t) REQUIRE(plan[t].first_slot <= plan[t + 1].first_slot);
    // Spot checks against sample(): the first and last slot of every 97th entry read its
    // shard, and slots drawn at random fall within their shard's entry.
    std::map<std::uint64_t, ScheduledShard> by_shard;
    for (const auto& e : plan) by_shard.emplace(e.shard, e);
    for (std::size_t t = 0; t < plan.size(); t += 97) {
      CHECK(x.sample(worker, plan[t].first_slot).shard == plan[t].shard);
      CHECK(x.sample(worker, plan[t].last_slot).shard == plan[t].shard);
    }
    TestRng rng{worker};
    for (int t = 0; t < 2000; ++t) {
      const std::uint64_t i = rng.below(x.worker_size(worker));
      const auto it = by_shard.find(x.sample(worker, i).shard);
      REQUIRE(it != by_shard.end());
      CHECK(it->second.first_slot <= i);
      CHECK(i <= it->second.last_slot);
    }
    return plan.size();
  };
  // Without node groups a consumer of 512 reads every 64th row of 64 of the 512 lanes,
  // each lane about 195.3 shards: about 12500 shards.
  const StreamingShardSampler plain(sizes, World(11, 64), ShardSamplerOptions().with_seed(9).with_num_workers(8));
  const std::uint64_t entries = check(plain, 5);
  CHECK(entries > 12000);
  CHECK(entries < 13000);
  // With 8 node groups a consumer reads every row of 8 lanes (about 1570 shards) and the
  // node's 64 consumers the group's 64 lanes, one eighth of the shard sequence.
  const std::uint64_t group_entries = check(s, 5);
  CHECK(group_entries > 1500);
  CHECK(group_entries < 1600);
  const auto node = s.node_shard_schedule();
  std::uint64_t node_total = 0;
  for (const auto& e : node) node_total += e.samples;
  CHECK(node_total == 64 * s.worker_size(0));
  CHECK(node.size() >= 12500);
  CHECK(node.size() <= 12510);
  // Resumed on 32 ranks x 4 workers after every consumer stopped at its own count.
  std::vector<std::uint64_t> done;
  TestRng rng{3};
  for (std::uint64_t k = 0; k < s.consumers(); ++k) done.push_back(5000000 + rng.below(1000));
  StreamingShardSampler t(sizes, World(7, 32, 3, 4), ShardSamplerOptions().with_seed(9).with_num_workers(4),
                          s.state(ConsumerProgress(done)));
  check(t, 3);
}

TEST_CASE("shard schedules reject a worker out of range", "[shard][schedule]") {
  const StreamingShardSampler s({5, 7, 3}, World(0, 2), ShardSamplerOptions().with_num_workers(2));
  CHECK_THROWS_AS(s.shard_schedule(2), distsampler::config_error);
  CHECK_THROWS_WITH(s.shard_schedule(2),
                    "StreamingShardSampler: worker 2 is out of range for num_workers 2 (expected 0..1)");
  CHECK(s.shard_schedule(1) == worker_schedule_by_walk(s, 1));
}
