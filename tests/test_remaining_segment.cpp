// Tests of RemainingSegment: the complement of consumed ranges, its map to epoch positions, and its lead.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#include <distsampler/remaining_segment.hpp>

using distsampler::PositionRange;
using distsampler::RemainingSegment;

TEST_CASE("a fresh segment is the whole epoch", "[shard][segment]") {
  const RemainingSegment s(10);
  CHECK(s.total() == 10);
  CHECK(s.size() == 10);
  CHECK(s.start() == 0);
  CHECK(s.lead() == 0);
  CHECK(s.ranges() == std::vector<PositionRange>{{0, 10}});
  for (std::uint64_t x = 0; x < 10; ++x) CHECK(s.epoch_position(x) == x);
  const RemainingSegment empty;
  CHECK(empty.size() == 0);
  CHECK(empty.ranges().empty());
  CHECK(RemainingSegment(0).ranges().empty());
}

TEST_CASE("a resumed segment is the complement of the consumed ranges, with holes first", "[shard][segment]") {
  // Four consumers stopped 3 samples into blocks 0..3 of 4: [0, 3), [4, 7), [8, 11), [12, 15).
  const std::vector<PositionRange> consumed{{0, 3}, {4, 7}, {8, 11}, {12, 15}};
  const RemainingSegment s(220, consumed, 4);
  CHECK(s.ranges() == std::vector<PositionRange>{{3, 4}, {7, 8}, {11, 12}, {15, 220}});
  CHECK(s.size() == 208);
  CHECK(s.start() == 12);
  // The holes before the first untouched block (16): 3, 7, 11 and 15.
  CHECK(s.lead() == 4);
  CHECK(s.epoch_position(0) == 3);
  CHECK(s.epoch_position(1) == 7);
  CHECK(s.epoch_position(3) == 15);
  CHECK(s.epoch_position(4) == 16);
  CHECK(s.epoch_position(207) == 219);
  // Order, overlaps and empty ranges do not matter.
  const RemainingSegment same(220, {{12, 15}, {9, 10}, {0, 3}, {5, 5}, {8, 11}, {2, 3}, {4, 7}}, 4);
  CHECK(same.ranges() == s.ranges());
  CHECK(same.lead() == 4);
  // The same from a state: prefix [0, 3) and the ranges ahead.
  distsampler::SamplerState st;
  st.dataset_size = 220;
  st.consumed = 3;
  st.ahead = {{4, 7}, {8, 11}, {12, 15}};
  const RemainingSegment after = RemainingSegment::after(st, 4);
  CHECK(after.ranges() == s.ranges());
  CHECK(after.lead() == 4);
  CHECK(after.total() == 220);
  // A stop in the last, partial block: the lead runs to the end of the epoch.
  CHECK(RemainingSegment(10, {{8, 9}}, 4).lead() == 9);
  // A stop at a block boundary leaves no lead.
  CHECK(RemainingSegment(10, {{0, 8}}, 4).lead() == 0);
}

TEST_CASE("a segment maps its pieces and its consumed positions back to the epoch", "[shard][segment]") {
  const RemainingSegment s(220, {{0, 3}, {4, 7}, {8, 11}, {12, 15}}, 4);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pieces;
  s.for_each_piece(2, 4, [&](std::uint64_t g, std::uint64_t n) { pieces.emplace_back(g, n); });
  CHECK(pieces == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{11, 1}, {15, 3}});
  // Reading segment positions 0 and 1 (epoch 3 and 7) joins the first three ranges.
  CHECK(s.epoch_consumed({{0, 2}}) == std::vector<PositionRange>{{0, 11}, {12, 15}});
  CHECK(s.epoch_consumed({}) == std::vector<PositionRange>{{0, 3}, {4, 7}, {8, 11}, {12, 15}});
  CHECK(s.epoch_consumed({{0, 208}}) == std::vector<PositionRange>{{0, 220}});
  CHECK(RemainingSegment(9).epoch_consumed({{2, 4}, {4, 5}}) == std::vector<PositionRange>{{2, 5}});
}

TEST_CASE("a segment refuses consumed ranges outside the epoch and blocks of 0", "[shard][segment][errors]") {
  CHECK_THROWS_WITH(RemainingSegment(10, {}, 0), "RemainingSegment: block_size is 0 (expected at least 1)");
  CHECK_THROWS_AS(RemainingSegment(10, {{3, 12}}, 4), distsampler::config_error);
  CHECK_THROWS_WITH(RemainingSegment(10, {{3, 12}}, 4),
                    "RemainingSegment: consumed range [3, 12) is not within the epoch's 10 positions (expected begin "
                    "<= end <= 10)");
  CHECK_THROWS_WITH(RemainingSegment(10, {{0, 2}, {5, 4}}, 4),
                    "RemainingSegment: consumed range [5, 4) is not within the epoch's 10 positions (expected begin "
                    "<= end <= 10)");
}
