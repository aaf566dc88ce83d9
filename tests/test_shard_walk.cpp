// Tests of ShardWalk: one segment dealt to K consumers and walked as shard ranges (sample, fill, for_each, read_plan).
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <distsampler/shards/detail/walk.hpp>

#include "shard_test_util.hpp"

using namespace shard_test;
using distsampler::PositionRange;
using distsampler::RemainingSegment;
using distsampler::ShardCatalog;
using distsampler::ShardEpochOrder;
using distsampler::ShardRange;
using distsampler::ShardWalk;

TEST_CASE("a walk composes the deal, the segment and the order, and its batched forms agree", "[shard][walk]") {
  TestRng rng{1234};
  for (int trial = 0; trial < 60; ++trial) {
    const auto catalog = std::make_shared<const ShardCatalog>(random_sizes(rng, 10, 40));
    const auto options =
        small_options(static_cast<std::uint64_t>(trial), trial % 2 == 0 ? Tail::pad : Tail::uneven, rng.next());
    const std::uint64_t n = catalog->total(), k_all = 1 + rng.below(5);
    // A resumed segment: a few random consumed ranges.
    std::vector<PositionRange> consumed;
    for (std::uint64_t r = rng.below(4); r > 0; --r) {
      const std::uint64_t a = rng.below(n + 1), b = a + rng.below(n - a + 1);
      consumed.push_back(PositionRange{a, b});
    }
    const RemainingSegment segment(n, consumed, options.block_size());
    const ShardWalk walk(ShardEpochOrder(catalog, options, 2), segment, k_all, options.tail);
    INFO("trial " << trial << " n " << n << " K " << k_all << " remaining " << segment.size());
    CHECK(walk.consumers() == k_all);
    CHECK(walk.epoch() == 2);
    for (std::uint64_t k = 0; k < k_all; ++k) {
      const std::uint64_t size = walk.size(k);
      REQUIRE(size == walk.deal().size(k));
      std::vector<ShardSample> expected;
      for (std::uint64_t i = 0; i < size; ++i) {
        const std::uint64_t g = segment.epoch_position(walk.deal().position(k, i));
        REQUIRE(walk.epoch_position(k, i) == g);
        ShardSample x = walk.order().at(g);
        x.is_padding = walk.deal().is_padding(k, i);
        REQUIRE(walk.sample(k, i) == x);
        expected.push_back(x);
      }
      std::vector<ShardSample> filled(static_cast<std::size_t>(size));
      walk.fill(k, 0, size, filled.data());
      REQUIRE(filled == expected);
      const std::uint64_t first = rng.below(size + 1), last = first + rng.below(size - first + 1);
      std::vector<ShardSample> window(static_cast<std::size_t>(last - first));
      walk.fill(k, first, last - first, window.data());
      REQUIRE(window == std::vector<ShardSample>(expected.begin() + static_cast<std::ptrdiff_t>(first),
                                                 expected.begin() + static_cast<std::ptrdiff_t>(last)));
      std::vector<ShardSample> walked;
      walk.for_each(k, first, last, [&](const ShardSample& x) { walked.push_back(x); });
      REQUIRE(walked == window);
      // The read plan holds exactly the records of the slots, in first-read order.
      const auto plan = walk.read_plan(k, first, last);
      std::vector<std::pair<std::uint64_t, std::uint64_t>> from_plan, from_slots;
      for (std::size_t r = 0; r < plan.size(); ++r) {
        if (r != 0) REQUIRE(plan[r - 1].first_sample < plan[r].first_sample);
        REQUIRE(plan[r].first_sample >= first);
        REQUIRE(walk.sample(k, plan[r].first_sample).shard == plan[r].shard);
        REQUIRE(walk.sample(k, plan[r].first_sample).offset == plan[r].begin);
        for (std::uint64_t o = plan[r].begin; o < plan[r].end; ++o) from_plan.emplace_back(plan[r].shard, o);
      }
      for (const auto& x : window) from_slots.emplace_back(x.shard, x.offset);
      std::sort(from_plan.begin(), from_plan.end());
      std::sort(from_slots.begin(), from_slots.end());
      REQUIRE(from_plan == from_slots);
    }
  }
}
