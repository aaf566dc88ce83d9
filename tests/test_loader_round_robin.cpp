// Tests of the loader round-robin emulation: torch's DataLoader taking batches from its workers' shard streams in turn.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <distsampler/shards/loader_round_robin.hpp>

#include "shard_test_util.hpp"

using namespace shard_test;
using distsampler::detail::round_robin_batches;
using distsampler::detail::round_robin_done;

TEST_CASE("the round-robin counts match a step-by-step loader", "[shard][loader]") {
  CHECK(round_robin_batches({55, 55}, 10) == 12);
  CHECK(round_robin_done({55, 55}, 3, 10) == std::vector<std::uint64_t>{20, 10});
  CHECK(round_robin_done({55, 55}, 12, 10) == std::vector<std::uint64_t>{55, 55});
  // Worker 1 runs out after one batch; the others take its turns.
  CHECK(round_robin_done({30, 4, 30}, 4, 10) == std::vector<std::uint64_t>{20, 4, 10});
  CHECK(round_robin_done({}, 0, 3).empty());
  TestRng rng{4711};
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::uint64_t> sizes(static_cast<std::size_t>(1 + rng.below(6)));
    for (auto& s : sizes) s = rng.below(40);
    const std::uint64_t batch = 1 + rng.below(9);
    const std::uint64_t batches = rng.below(round_robin_batches(sizes, batch) + 1);
    INFO("trial " << trial << " batch " << batch << " batches " << batches);
    CHECK(round_robin_done(sizes, batches, batch) == simulate_loader(sizes, batches, batch));
  }
}

TEST_CASE("a sampler's loader counts and state, and their argument errors", "[shard][loader][errors]") {
  const auto o = ShardSamplerOptions()
                     .with_run_length(2)
                     .with_max_open_shards(2)
                     .with_canonical_streams(4)
                     .with_tail(Tail::uneven)
                     .with_num_workers(2);
  // 221 samples over 4 consumers, uneven: consumer 0 has 56, the others 55.
  StreamingShardSampler s({100, 51, 0, 70}, World(1, 2), o);
  CHECK_THROWS_AS(distsampler::loader_worker_done(s, 1, 0), distsampler::config_error);
  CHECK_THROWS_WITH(distsampler::loader_worker_done(s, 1, 0),
                    "loader_worker_done: batch_size is 0 (expected at least 1)");
  // Rank 1's workers are consumers 1 and 3, 55 samples each: 6 batches of 10 each.
  CHECK(distsampler::loader_worker_done(s, 12, 10) == std::vector<std::uint64_t>{55, 55});
  CHECK(distsampler::loader_worker_done(s, 3, 10) == std::vector<std::uint64_t>{20, 10});
  CHECK_THROWS_WITH(distsampler::loader_worker_done(s, 13, 10),
                    "loader_worker_done: batches 13 exceeds the 12 batches of this rank's workers at batch_size 10");
  CHECK_THROWS_WITH(distsampler::state_after_batches(s, 1, 0),
                    "state_after_batches: batch_size is 0 (expected at least 1)");
  // Rank 0 (consumers 0 and 2: 56 and 55) has 12 + 11 batches of 5.
  CHECK_NOTHROW(distsampler::state_after_batches(s, 23, 5));
  CHECK_THROWS_WITH(distsampler::state_after_batches(s, 24, 5),
                    "state_after_batches: batches 24 exceeds the 23 batches of the largest rank at batch_size 5");
  CHECK(distsampler::state_after_batches(s, 23, 5).consumed == 221);
  // 3 batches of 10 on every rank: worker 0 at 20, worker 1 at 10 (consumers 0, 1 and 2, 3).
  CHECK(distsampler::state_after_batches(s, 3, 10) == s.state(distsampler::ConsumerProgress({20, 20, 10, 10})));
}
