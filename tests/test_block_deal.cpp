// Tests of BlockDeal: which segment positions each of K consumers reads, in blocks, with fronts and tails.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <distsampler/shards/detail/block_deal.hpp>

#include "shard_test_util.hpp"

using distsampler::BlockDeal;
using distsampler::PositionRange;
using distsampler::Tail;

namespace {

std::vector<std::uint64_t> positions(const BlockDeal& d, std::uint64_t k) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 0; i < d.size(k); ++i) out.push_back(d.position(k, i));
  return out;
}

}  // namespace

TEST_CASE("a fresh segment is dealt in blocks, then a partial round, then the tail slot", "[shard][deal]") {
  // 23 positions, 2 consumers, blocks of 4: 2 full rounds (0-15), a partial round of 3
  // each (16-21), and position 22 for consumer 0's tail slot.
  const BlockDeal pad(23, 0, 2, 4, Tail::pad);
  CHECK(pad.front() == 0);
  CHECK(pad.rounds() == 2);
  CHECK(pad.partial() == 3);
  CHECK(pad.extra() == 1);
  CHECK(pad.tail_slot() == 11);
  CHECK(positions(pad, 0) == std::vector<std::uint64_t>{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 22});
  CHECK(positions(pad, 1) == std::vector<std::uint64_t>{4, 5, 6, 7, 12, 13, 14, 15, 19, 20, 21, 22});
  CHECK_FALSE(pad.is_padding(0, 11));
  CHECK(pad.is_padding(1, 11));
  CHECK_FALSE(pad.is_padding(1, 10));
  const BlockDeal drop(23, 0, 2, 4, Tail::drop);
  CHECK(drop.size(0) == 11);
  CHECK(drop.size(1) == 11);
  CHECK_FALSE(drop.is_padding(1, 11));
  const BlockDeal uneven(23, 0, 2, 4, Tail::uneven);
  CHECK(uneven.size(0) == 12);
  CHECK(uneven.size(1) == 11);
  // Chunks: slots that map to consecutive positions.
  CHECK(pad.chunk_end(0, 0) == 4);
  CHECK(pad.chunk_end(0, 5) == 8);
  CHECK(pad.chunk_end(0, 8) == 11);
  CHECK(pad.chunk_end(0, 11) == 12);
}

TEST_CASE("a segment with a lead first hands every consumer an equal contiguous front", "[shard][deal]") {
  // Lead 5 over 2 consumers: fronts of 2 (0-1 and 2-3); the dealt part starts at 4.
  const BlockDeal d(23, 5, 2, 4, Tail::pad);
  CHECK(d.front() == 2);
  CHECK(positions(d, 0) == std::vector<std::uint64_t>{0, 1, 4, 5, 6, 7, 12, 13, 14, 15, 20, 22});
  CHECK(positions(d, 1) == std::vector<std::uint64_t>{2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 21, 22});
  CHECK(d.is_padding(1, 11));
  CHECK(d.chunk_end(1, 0) == 2);
  CHECK(d.chunk_end(1, 2) == 6);
}

TEST_CASE("every deal is disjoint, covering up to the dropped leftovers, and balanced", "[shard][deal]") {
  for (std::uint64_t remaining = 0; remaining <= 40; ++remaining) {
    for (std::uint64_t lead = 0; lead <= remaining; lead += 1 + remaining / 4) {
      for (std::uint64_t k_all = 1; k_all <= 5; ++k_all) {
        for (std::uint64_t b = 1; b <= 4; ++b) {
          for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
            const BlockDeal d(remaining, lead, k_all, b, tail);
            INFO("remaining " << remaining << " lead " << lead << " K " << k_all << " b " << b << " tail "
                              << distsampler::to_string(tail));
            std::vector<int> reads(static_cast<std::size_t>(remaining), 0);
            std::uint64_t lo = UINT64_MAX, hi = 0;
            for (std::uint64_t k = 0; k < k_all; ++k) {
              lo = std::min(lo, d.size(k));
              hi = std::max(hi, d.size(k));
              for (std::uint64_t i = 0; i < d.size(k); ++i) {
                const std::uint64_t x = d.position(k, i);
                REQUIRE(x < remaining);
                if (!d.is_padding(k, i)) ++reads[static_cast<std::size_t>(x)];
                const std::uint64_t end = d.chunk_end(k, i);
                REQUIRE(end > i);
                REQUIRE(end <= d.size(k));
                for (std::uint64_t j = i; j < end; ++j) REQUIRE(d.position(k, j) == x + (j - i));
              }
            }
            CHECK(hi - lo <= (tail == Tail::uneven ? 1u : 0u));
            std::uint64_t read = 0;
            for (const int c : reads) {
              REQUIRE(c <= 1);
              read += static_cast<std::uint64_t>(c);
            }
            CHECK(read == remaining - (tail == Tail::drop ? d.extra() : 0));
          }
        }
      }
    }
  }
}

TEST_CASE("the consumed ranges of a deal are exactly the positions the consumers read", "[shard][deal][progress]") {
  shard_test::TestRng rng{2718};
  for (int trial = 0; trial < 400; ++trial) {
    const std::uint64_t remaining = rng.below(80), lead = rng.below(remaining + 1);
    const std::uint64_t k_all = 1 + rng.below(5), b = 1 + rng.below(6);
    const Tail tail = trial % 3 == 0 ? Tail::pad : trial % 3 == 1 ? Tail::drop : Tail::uneven;
    const BlockDeal d(remaining, lead, k_all, b, tail);
    std::vector<std::uint64_t> done(static_cast<std::size_t>(k_all));
    std::vector<bool> read(static_cast<std::size_t>(remaining), false);
    for (std::uint64_t k = 0; k < k_all; ++k) {
      done[static_cast<std::size_t>(k)] = trial % 5 == 0 ? d.size(k) : rng.below(d.size(k) + 1);
      for (std::uint64_t i = 0; i < done[static_cast<std::size_t>(k)]; ++i) {
        if (!d.is_padding(k, i)) read[static_cast<std::size_t>(d.position(k, i))] = true;
      }
    }
    std::vector<PositionRange> expected;
    for (std::uint64_t x = 0; x < remaining; ++x) {
      if (!read[static_cast<std::size_t>(x)]) continue;
      if (!expected.empty() && expected.back().end == x) {
        ++expected.back().end;
      } else {
        expected.push_back(PositionRange{x, x + 1});
      }
    }
    INFO("trial " << trial << " remaining " << remaining << " lead " << lead << " K " << k_all << " b " << b);
    CHECK(d.consumed(done) == expected);
    // The compact form holds the same positions in O(K) entries: per consumer at most a
    // front, a partial block, three pieces of the partial round and a tail slot as ranges
    // (plus the common rounds), and its whole blocks past the slowest as one strided entry
    // of stride K * b over whole blocks.
    const distsampler::PositionSet compact = d.consumed_compact(done);
    CHECK(compact.ranges.size() <= 1 + 6 * k_all);
    CHECK(compact.strided.size() <= k_all);
    std::vector<bool> marked(static_cast<std::size_t>(remaining), false);
    for (const PositionRange& r : compact.ranges) {
      for (std::uint64_t x = r.begin; x < r.end; ++x) marked[static_cast<std::size_t>(x)] = true;
    }
    for (const distsampler::StridedRange& e : compact.strided) {
      CHECK(e.count >= 2);
      CHECK(e.stride == k_all * b);
      CHECK(e.length % b == 0);
      CHECK(e.length < e.stride);
      for (std::uint64_t i = 0; i < e.count; ++i) {
        for (std::uint64_t x = e.element(i).begin; x < e.element(i).end; ++x) {
          REQUIRE(!marked[static_cast<std::size_t>(x)]);  // entries never overlap ranges or each other
          marked[static_cast<std::size_t>(x)] = true;
        }
      }
    }
    CHECK(marked == read);
  }
}

TEST_CASE("a deal refuses no consumers, empty blocks and a lead past the segment", "[shard][deal][errors]") {
  CHECK_THROWS_AS(BlockDeal(10, 0, 0, 4, Tail::pad), distsampler::config_error);
  CHECK_THROWS_WITH(BlockDeal(10, 0, 0, 4, Tail::pad), "BlockDeal: consumers is 0 (expected at least 1)");
  CHECK_THROWS_WITH(BlockDeal(10, 0, 2, 0, Tail::pad), "BlockDeal: block_size is 0 (expected at least 1)");
  CHECK_THROWS_WITH(BlockDeal(10, 11, 2, 4, Tail::pad),
                    "BlockDeal: lead 11 exceeds remaining 10 (expected lead <= remaining)");
  CHECK_NOTHROW(BlockDeal(10, 10, 2, 4, Tail::pad));
  CHECK(BlockDeal().size(0) == 0);
}
