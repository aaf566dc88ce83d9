// Tests of RemainingSegment: the complement of consumed ranges, its map to epoch positions, and its lead.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <distsampler/detail/bounded.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/shards/detail/remaining_segment.hpp>

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

namespace {

using distsampler::PositionSet;
using distsampler::SamplerState;
using distsampler::StridedRange;
using distsampler::detail::HoleLimit;

std::uint64_t draw(std::uint64_t& state, std::uint64_t bound) {
  state += 0x9e3779b97f4a7c15u;
  return distsampler::detail::mulhi64(distsampler::detail::mix64(state), bound);
}

// A state of `total` positions with random ranges and, in up to three regions, clusters of
// strided entries of one stride at disjoint offsets, their elements free to overlap the ranges.
SamplerState random_consumed(std::uint64_t& rng, std::uint64_t total) {
  SamplerState st;
  st.dataset_size = total;
  for (std::uint64_t i = draw(rng, 6); i != 0; --i) {
    const std::uint64_t b = draw(rng, total + 1), e = b + draw(rng, std::min<std::uint64_t>(total - b, 12) + 1);
    st.ahead.push_back(PositionRange{b, e});
  }
  const std::uint64_t regions = draw(rng, 4);
  for (std::uint64_t r = 0; r < regions; ++r) {
    const std::uint64_t lo = total * r / regions, hi = total * (r + 1) / regions;
    const std::uint64_t stride = 2 + draw(rng, 12);
    if (hi - lo < 2 * stride) continue;
    std::uint64_t phase = draw(rng, 2);
    while (phase < stride) {
      const std::uint64_t length = 1 + draw(rng, std::min<std::uint64_t>(stride - phase, 3));
      if (phase + length > stride || (phase == 0 && length == stride)) break;
      const std::uint64_t rounds = (hi - lo - phase - length) / stride + 1;
      const std::uint64_t first = draw(rng, rounds), count = draw(rng, rounds - first + 1);
      if (count >= 2 && draw(rng, 4) != 0)
        st.strided.push_back(StridedRange{lo + phase + first * stride, length, stride, count});
      phase += length + draw(rng, 3);
    }
  }
  return st;
}

// What the documented meaning of `st` marks consumed, position by position.
std::vector<bool> marked(const SamplerState& st) {
  std::vector<bool> done(static_cast<std::size_t>(st.dataset_size), false);
  for (const auto& r : st.ahead) {
    for (std::uint64_t p = r.begin; p < r.end; ++p) done[static_cast<std::size_t>(p)] = true;
  }
  for (const auto& s : st.strided) {
    for (std::uint64_t i = 0; i < s.count; ++i) {
      for (std::uint64_t p = 0; p < s.length; ++p) done[static_cast<std::size_t>(s.begin + i * s.stride + p)] = true;
    }
  }
  return done;
}

}  // namespace

TEST_CASE("compact holes read the same segment as spans, position by position", "[shard][segment][compact]") {
  std::uint64_t rng = 99;
  for (int trial = 0; trial < 400; ++trial) {
    const std::uint64_t total = draw(rng, 300), block = 1 + draw(rng, 9);
    const SamplerState st = random_consumed(rng, total);
    const RemainingSegment spans = RemainingSegment::after(st, block, HoleLimit::spans());
    const RemainingSegment compact = RemainingSegment::after(st, block, HoleLimit::compact());
    const auto done = marked(st);
    INFO("trial " << trial << " total " << total << " block " << block << " ranges " << st.ahead.size() << " strided "
                  << st.strided.size());
    REQUIRE(!spans.compact());
    REQUIRE(compact.compact() == (std::count(done.begin(), done.end(), true) != 0));
    // Against the brute-force complement: the x-th free position, the sizes and the lead.
    std::vector<std::uint64_t> free;
    std::uint64_t last = 0;
    for (std::uint64_t p = 0; p < total; ++p) {
      if (!done[static_cast<std::size_t>(p)]) free.push_back(p);
      if (done[static_cast<std::size_t>(p)]) last = p + 1;
    }
    const std::uint64_t aligned = last == 0 ? 0 : std::min(total, (last + block - 1) / block * block);
    for (const RemainingSegment* s : {&spans, &compact}) {
      REQUIRE(s->size() == free.size());
      REQUIRE(s->start() == total - free.size());
      REQUIRE(s->lead() == aligned - (total - free.size()));
      for (std::uint64_t x = 0; x < free.size(); ++x) REQUIRE(s->epoch_position(x) == free[x]);
    }
    REQUIRE(compact.ranges() == spans.ranges());
    REQUIRE(compact.epoch_consumed({}) == spans.epoch_consumed({}));
    // Pieces of random windows.
    for (int w = 0; w < 8 && !free.empty(); ++w) {
      const std::uint64_t x = draw(rng, free.size()), count = draw(rng, free.size() - x + 1);
      std::vector<std::pair<std::uint64_t, std::uint64_t>> a, b;
      spans.for_each_piece(x, count, [&](std::uint64_t g, std::uint64_t n) { a.emplace_back(g, n); });
      compact.for_each_piece(x, count, [&](std::uint64_t g, std::uint64_t n) { b.emplace_back(g, n); });
      REQUIRE(a == b);
      std::uint64_t covered = 0;
      for (const auto& [g, n] : b) {
        REQUIRE(n != 0);
        for (std::uint64_t i = 0; i < n; ++i) REQUIRE(g + i == free[x + covered + i]);
        covered += n;
      }
      REQUIRE(covered == count);
    }
    // Composing the next state: segment ranges and strided segment positions.
    for (int w = 0; w < 4 && free.size() >= 2; ++w) {
      PositionSet seg;
      const std::uint64_t x = draw(rng, free.size() - 1);
      seg.ranges.push_back(PositionRange{x, x + 1 + draw(rng, free.size() - x)});
      const std::uint64_t stride = 2 + draw(rng, 5), length = 1 + draw(rng, stride - 1);
      if (free.size() >= stride + length) {
        const std::uint64_t begin = draw(rng, free.size() - stride - length + 1);
        const std::uint64_t count = 2 + draw(rng, (free.size() - begin - length) / stride);
        seg.strided.push_back(StridedRange{begin, length, stride, count});
      }
      const PositionSet a = spans.epoch_consumed_compact(seg), b = compact.epoch_consumed_compact(seg);
      REQUIRE(a.ranges == b.ranges);
      REQUIRE(a.strided == b.strided);
    }
  }
}

TEST_CASE("a segment chooses compact holes when the strided elements outnumber the threshold",
          "[shard][segment][compact]") {
  SamplerState st;
  st.dataset_size = 1000000;
  st.consumed = 10;
  // 2000 elements of one entry: under the automatic threshold (4096), spans.
  st.strided = {StridedRange{20, 4, 16, 2000}};
  const RemainingSegment few = RemainingSegment::after(st, 8);
  CHECK(!few.compact());
  CHECK(few.stored_entries() == 2 + 2001);  // the state's range and entry, and a span per hole
  // 20000: compact, a handful of items.
  st.strided = {StridedRange{20, 4, 16, 20000}};
  const RemainingSegment many = RemainingSegment::after(st, 8);
  CHECK(many.compact());
  CHECK(many.stored_entries() < 16);
  CHECK(many.size() == 1000000 - 10 - 80000);
  // The holes come first: [10, 20), then 12 free positions between elements.
  CHECK(many.epoch_position(0) == 10);
  CHECK(many.epoch_position(9) == 19);
  CHECK(many.epoch_position(10) == 24);
  CHECK(many.epoch_position(22) == 40);
  // The last element ends at 20 + 19999 * 16 + 4 = 320008: the lead runs to 320008, past
  // it the segment is contiguous.
  CHECK(many.lead() == 320008 - 10 - 80000);
  CHECK(many.epoch_position(many.lead()) == 320008);
  CHECK(many.epoch_position(many.size() - 1) == 999999);
  // An injected limit forces either form.
  CHECK(RemainingSegment::after(st, 8, HoleLimit::spans()).stored_entries() == 2 + 20001);
  CHECK(RemainingSegment::after(st, 8, HoleLimit::at_most(30000)).compact() == false);
  CHECK(RemainingSegment::after(st, 8, HoleLimit::at_most(20000)).compact());
}
