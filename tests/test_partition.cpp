// distsampler tests: StridedPartition's integer math, against torch's list-building definition.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/partition.hpp>

#include <cstdint>
#include <vector>

using distsampler::StridedPartition;
using distsampler::Tail;

namespace {

struct Slot {
  std::uint64_t position;
  bool padding;
  bool operator==(const Slot& o) const { return position == o.position && padding == o.padding; }
};

// torch.utils.data.DistributedSampler's definition, literally: build the padded or
// truncated list of positions, then take every W-th from `rank`. Tail::uneven takes
// every W-th of the unpadded list.
std::vector<Slot> torch_definition(std::uint64_t n, std::uint64_t rank, std::uint64_t w, Tail tail) {
  std::vector<Slot> order;
  for (std::uint64_t i = 0; i < n; ++i) order.push_back({i, false});
  if (tail == Tail::pad) {
    const std::uint64_t num = (n + w - 1) / w;
    for (std::uint64_t k = 0; order.size() < num * w; ++k) order.push_back({k % n, true});
  } else if (tail == Tail::drop) {
    const std::uint64_t num = n % w ? (n - n % w) / w : n / w;  // ceil((n - w) / w) for n >= w, else 0
    order.resize(num * w);
  }
  std::vector<Slot> mine;
  for (std::uint64_t i = rank; i < order.size(); i += w) mine.push_back(order[i]);
  return mine;
}

}  // namespace

TEST_CASE("StridedPartition equals torch's padded, strided list for every small case", "[partition]") {
  for (std::uint64_t n = 0; n <= 70; ++n) {
    for (std::uint64_t w = 1; w <= 17; ++w) {
      for (Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
        for (std::uint64_t r = 0; r < w; ++r) {
          const StridedPartition p(n, r, w, tail);
          const auto expected = torch_definition(n, r, w, tail);
          REQUIRE(p.size() == expected.size());
          for (std::uint64_t i = 0; i < p.size(); ++i) {
            INFO("n=" << n << " w=" << w << " r=" << r << " tail=" << to_string(tail) << " i=" << i);
            REQUIRE(p.source_position(i) == expected[i].position);
            REQUIRE(p.is_padding(i) == expected[i].padding);
          }
        }
      }
    }
  }
}

TEST_CASE("StridedPartition sizes follow torch's formulas", "[partition]") {
  // drop_last: ceil((N - W) / W) = floor(N / W); default: ceil(N / W).
  CHECK(StridedPartition(10, 0, 4, Tail::pad).size() == 3);
  CHECK(StridedPartition(10, 0, 4, Tail::drop).size() == 2);
  CHECK(StridedPartition(10, 1, 4, Tail::uneven).size() == 3);
  CHECK(StridedPartition(10, 2, 4, Tail::uneven).size() == 2);
  CHECK(StridedPartition(10, 0, 4, Tail::pad).padding_count() == 2);
  CHECK(StridedPartition(10, 0, 4, Tail::drop).dropped_count() == 2);
  CHECK(StridedPartition(3, 0, 8, Tail::pad).size() == 1);
  CHECK(StridedPartition(3, 0, 8, Tail::drop).size() == 0);
  CHECK(StridedPartition(0, 0, 8, Tail::pad).size() == 0);
}

TEST_CASE("StridedPartition never overflows near 2^64", "[partition]") {
  const std::uint64_t n = UINT64_MAX;  // 2^64 - 1 = 3 * 5 * 17 * 257 * 641 * 65537 * 6700417
  SECTION("world_size 2: the last slot of rank 1 wraps to position 0") {
    const StridedPartition p(n, 1, 2, Tail::pad);
    CHECK(p.size() == (std::uint64_t{1} << 63));
    CHECK(p.source_position(p.size() - 1) == 0);
    CHECK(p.is_padding(p.size() - 1));
    CHECK_FALSE(p.is_padding(p.size() - 2));
    CHECK(p.source_position(p.size() - 2) == n - 2);
    const StridedPartition q(n, 0, 2, Tail::pad);
    CHECK(q.source_position(q.size() - 1) == n - 1);
    CHECK_FALSE(q.is_padding(q.size() - 1));
  }
  SECTION("a world larger than half the range") {
    const std::uint64_t w = (std::uint64_t{1} << 63) + 1;
    const StridedPartition last(n, w - 1, w, Tail::pad);
    CHECK(last.size() == 2);
    CHECK(last.source_position(0) == w - 1);
    // Slot 1 would be global slot 2w - 1 = 2^64 + 1: padding repeating position 2.
    CHECK(last.is_padding(1));
    CHECK(last.source_position(1) == 2);
    CHECK(StridedPartition(n, w - 1, w, Tail::drop).size() == 1);
    CHECK(StridedPartition(n, w - 1, w, Tail::uneven).size() == 1);
    CHECK(StridedPartition(n, 0, w, Tail::pad).padding_count() == w - (n % w));
  }
  SECTION("a world of 2^64 - 1 ranks") {
    const StridedPartition p(n, n - 1, n, Tail::drop);
    CHECK(p.size() == 1);
    CHECK(p.source_position(0) == n - 1);
  }
}

TEST_CASE("StridedPartition rejects bad configuration with a message", "[partition][errors]") {
  CHECK_THROWS_WITH(StridedPartition(10, 0, 0, Tail::pad), "Partition: world_size is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StridedPartition(10, 4, 4, Tail::pad),
                    "Partition: rank 4 is out of range for world_size 4 (expected 0..3)");
  CHECK_THROWS_WITH(StridedPartition(10, 0, 4, static_cast<Tail>(9)),
                    "Partition: tail 9 is not a Tail (expected pad, drop or uneven)");
  CHECK_THROWS_WITH(distsampler::parse_tail("last"), "tail \"last\" is unknown (expected pad, drop or uneven)");
  CHECK(distsampler::parse_tail("uneven") == Tail::uneven);
  CHECK(distsampler::to_string(Tail::drop) == "drop");
}

TEST_CASE("StridedPartition is usable at compile time", "[partition]") {
  constexpr StridedPartition p(10, 3, 4, Tail::pad);
  STATIC_REQUIRE(p.size() == 3);
  STATIC_REQUIRE(p.is_padding(2));
  STATIC_REQUIRE(p.source_position(2) == 1);
  STATIC_REQUIRE(noexcept(p.source_position(0)));
}
