// distsampler tests: BatchLayout, the Megatron position formula with its tails, as pure integer math.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <distsampler/batch_layout.hpp>

using distsampler::BatchLayout;
using distsampler::Tail;

namespace {

using Vec = std::vector<std::uint64_t>;

// Positions of rank r's micro-batch k in `step`, element by element.
Vec slot(const BatchLayout& l, std::uint64_t step, std::uint64_t k, std::uint64_t r) {
  Vec out;
  for (std::uint64_t e = 0; e < l.length(step, k, r); ++e) out.push_back(l.position(step, k, r, e));
  return out;
}

// Every position of `step` in layout order (round, then rank, then element).
Vec step_positions(const BatchLayout& l, std::uint64_t step) {
  Vec out;
  for (std::uint64_t k = 0; k < l.accumulation_steps(); ++k) {
    for (std::uint64_t r = 0; r < l.world_size(); ++r) {
      const Vec s = slot(l, step, k, r);
      out.insert(out.end(), s.begin(), s.end());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("BatchLayout places s*G + (k*W + r)*m + e, with each tail", "[layout][batch]") {
  // N = 20, m = 2, W = 2, K = 2: G = 8, two full steps and 4 positions left.
  const BatchLayout drop(20, 0, 2, 2, 2, Tail::drop);
  CHECK(drop.global_batch_size() == 8);
  CHECK(drop.num_steps() == 2);
  CHECK(drop.full_steps() == 2);
  CHECK(drop.remainder() == 4);
  CHECK(slot(drop, 0, 0, 0) == Vec{0, 1});
  CHECK(slot(drop, 0, 0, 1) == Vec{2, 3});
  CHECK(slot(drop, 0, 1, 0) == Vec{4, 5});
  CHECK(slot(drop, 0, 1, 1) == Vec{6, 7});
  CHECK(slot(drop, 1, 1, 1) == Vec{14, 15});
  CHECK_FALSE(drop.is_padding(1, 1, 1, 1));

  const BatchLayout pad(20, 0, 2, 2, 2, Tail::pad);
  CHECK(pad.num_steps() == 3);
  CHECK(slot(pad, 2, 0, 0) == Vec{16, 17});
  CHECK(slot(pad, 2, 0, 1) == Vec{18, 19});
  CHECK(slot(pad, 2, 1, 0) == Vec{0, 1});  // wraps to the start of the order, flagged
  CHECK(slot(pad, 2, 1, 1) == Vec{2, 3});
  CHECK_FALSE(pad.is_padding(2, 0, 1, 1));
  CHECK(pad.is_padding(2, 1, 0, 0));
  CHECK(pad.is_padding(2, 1, 1, 1));
  CHECK_FALSE(pad.is_padding(1, 1, 1, 1));

  const BatchLayout uneven(20, 0, 2, 2, 2, Tail::uneven);
  CHECK(uneven.num_steps() == 3);
  CHECK(slot(uneven, 2, 0, 0) == Vec{16});
  CHECK(slot(uneven, 2, 0, 1) == Vec{17});
  CHECK(slot(uneven, 2, 1, 0) == Vec{18});
  CHECK(slot(uneven, 2, 1, 1) == Vec{19});
  CHECK(uneven.length(1, 1, 1) == 2);
  CHECK_FALSE(uneven.is_padding(2, 1, 1, 0));
}

TEST_CASE("BatchLayout: uneven spreads the remainder over W*K slots, sizes differ by at most 1", "[layout][batch]") {
  // N = 10, m = 3, W = 2, K = 2: G = 12 > N, so one partial step of 10 positions over 4 slots.
  const BatchLayout l(10, 0, 3, 2, 2, Tail::uneven);
  CHECK(l.num_steps() == 1);
  CHECK(l.full_steps() == 0);
  CHECK(slot(l, 0, 0, 0) == Vec{0, 1, 2});
  CHECK(slot(l, 0, 0, 1) == Vec{3, 4, 5});
  CHECK(slot(l, 0, 1, 0) == Vec{6, 7});
  CHECK(slot(l, 0, 1, 1) == Vec{8, 9});
  CHECK(l.consumed(0, 1, "T") == 6);  // round 0's two slots
  // Fewer positions than slots: some micro-batches are empty, every rank still has K of them.
  const BatchLayout tiny(3, 0, 2, 2, 2, Tail::uneven);
  CHECK(tiny.num_steps() == 1);
  CHECK(slot(tiny, 0, 0, 0) == Vec{0});
  CHECK(slot(tiny, 0, 0, 1) == Vec{1});
  CHECK(slot(tiny, 0, 1, 0) == Vec{2});
  CHECK(slot(tiny, 0, 1, 1).empty());
}

TEST_CASE("BatchLayout over a consumed prefix starts at `start`, and padding still wraps to position 0",
          "[layout][batch]") {
  // N = 10, start 4, m = 2, W = 2, K = 1: G = 4, R = 6 = 1 full step + 2.
  const BatchLayout l(10, 4, 2, 2, 1, Tail::pad);
  CHECK(l.start() == 4);
  CHECK(l.num_steps() == 2);
  CHECK(slot(l, 0, 0, 0) == Vec{4, 5});
  CHECK(slot(l, 0, 0, 1) == Vec{6, 7});
  CHECK(slot(l, 1, 0, 0) == Vec{8, 9});
  CHECK(slot(l, 1, 0, 1) == Vec{0, 1});
  CHECK(l.is_padding(1, 0, 1, 0));
  CHECK_FALSE(l.is_padding(1, 0, 0, 1));
  // from() keeps the shape and moves the start.
  const BatchLayout fresh = l.from(0);
  CHECK(fresh == BatchLayout(10, 0, 2, 2, 1, Tail::pad));
  CHECK(fresh != l);
  CHECK(fresh.num_steps() == 3);
  CHECK(l.from(10).num_steps() == 0);
}

TEST_CASE("BatchLayout: a step's positions depend only on G, not on how it factors into W and K",
          "[layout][batch][elastic]") {
  for (const Tail tail : {Tail::drop, Tail::pad, Tail::uneven}) {
    for (std::uint64_t start : {0u, 5u}) {
      const BatchLayout a(37, start, 2, 4, 1, tail), b(37, start, 2, 2, 2, tail), c(37, start, 2, 1, 4, tail);
      CAPTURE(distsampler::to_string(tail), start);
      REQUIRE(a.num_steps() == b.num_steps());
      REQUIRE(a.num_steps() == c.num_steps());
      for (std::uint64_t s = 0; s < a.num_steps(); ++s) {
        CHECK(step_positions(a, s) == step_positions(b, s));
        CHECK(step_positions(a, s) == step_positions(c, s));
      }
    }
  }
}

TEST_CASE("BatchLayout::consumed is the prefix done after steps and rounds", "[layout][batch][resume]") {
  const BatchLayout drop(20, 0, 2, 2, 2, Tail::drop);
  CHECK(drop.consumed(0, 0, "T") == 0);
  CHECK(drop.consumed(1, 1, "T") == 12);
  CHECK(drop.consumed(2, 0, "T") == 16);
  CHECK_THROWS_WITH(drop.consumed(3, 0, "T"), "T: steps_done 3 exceeds num_steps 2 (expected 0..2)");
  CHECK_THROWS_WITH(drop.consumed(2, 1, "T"), "T: micro_batches_done 1 is out of range (expected 0..0)");
  CHECK_THROWS_WITH(drop.consumed(0, 2, "T"), "T: micro_batches_done 2 is out of range (expected 0..1)");
  const BatchLayout pad(20, 0, 2, 2, 2, Tail::pad);
  CHECK(pad.consumed(2, 0, "T") == 16);
  CHECK(pad.consumed(2, 1, "T") == 20);  // round 0 of the last step holds the 4 real positions
  CHECK(pad.consumed(3, 0, "T") == 20);
  const BatchLayout resumed(20, 6, 2, 2, 1, Tail::uneven);  // G = 4, R = 14: 3 full steps + 2
  CHECK(resumed.consumed(1, 0, "T") == 10);
  CHECK(resumed.consumed(4, 0, "T") == 20);
}

TEST_CASE("BatchLayout near 2^64 neither overflows nor forms positions past N", "[layout][batch][large]") {
  const std::uint64_t n = UINT64_MAX;
  // start = N - 5, m = 1, W = 2, K = 4: G = 8, one partial step of 5 positions.
  const BatchLayout pad(n, n - 5, 1, 2, 4, Tail::pad);
  CHECK(pad.num_steps() == 1);
  CHECK(pad.position(0, 2, 0, 0) == n - 1);
  CHECK(pad.position(0, 3, 1, 0) == 2);  // slot 7, the third padding slot
  CHECK(pad.is_padding(0, 3, 1, 0));
  CHECK_FALSE(pad.is_padding(0, 2, 0, 0));
  const BatchLayout uneven(n, n - 5, 1, 2, 4, Tail::uneven);
  CHECK(uneven.length(0, 2, 0) == 1);
  CHECK(uneven.length(0, 2, 1) == 0);
  CHECK(uneven.position(0, 2, 0, 0) == n - 1);
  const BatchLayout drop(n, 0, 4, 8, 2, Tail::drop);
  CHECK(drop.num_steps() == n / 64);
  CHECK(drop.position(drop.num_steps() - 1, 1, 7, 3) == (n / 64 - 1) * 64 + 63);
}

TEST_CASE("BatchLayout rejects bad shapes with config_error naming the parameter", "[layout][batch][errors]") {
  CHECK_THROWS_AS(BatchLayout(10, 0, 0, 1, 1, Tail::drop), distsampler::config_error);
  CHECK_THROWS_WITH(BatchLayout(10, 0, 0, 1, 1, Tail::drop),
                    "BatchLayout: micro_batch_size is 0 (expected at least 1)");
  CHECK_THROWS_WITH(BatchLayout(10, 0, 1, 0, 1, Tail::drop), "BatchLayout: world_size is 0 (expected at least 1)");
  CHECK_THROWS_WITH(BatchLayout(10, 0, 1, 1, 0, Tail::drop),
                    "BatchLayout: accumulation_steps is 0 (expected at least 1)");
  CHECK_THROWS_WITH(BatchLayout(10, 0, std::uint64_t{1} << 63, 2, 1, Tail::drop),
                    "BatchLayout: micro_batch_size 9223372036854775808 x world_size 2 overflows 64 bits");
  CHECK_THROWS_WITH(BatchLayout(10, 0, std::uint64_t{1} << 32, 2, std::uint64_t{1} << 31, Tail::drop),
                    "BatchLayout: micro_batch_size 4294967296 x world_size 2 x accumulation_steps "
                    "2147483648 overflows 64 bits");
  CHECK_THROWS_WITH(BatchLayout(10, 11, 1, 1, 1, Tail::drop),
                    "BatchLayout: start 11 exceeds dataset_size 10 (expected 0..10)");
  CHECK_THROWS_WITH(BatchLayout(10, 0, 1, 1, 1, static_cast<Tail>(7), "Who"),
                    "Who: tail 7 is not a Tail (expected pad, drop or uneven)");
  CHECK_THROWS_WITH(BatchLayout::round_size(3, 0, "R"), "R: world_size is 0 (expected at least 1)");
  CHECK(BatchLayout::round_size(3, 5, "R") == 15);
  const BatchLayout empty(0, 0, 2, 2, 2, Tail::pad);
  CHECK(empty.num_steps() == 0);
  CHECK(empty.consumed(0, 0, "T") == 0);
}
