// distsampler tests: EpochOrder, the one epoch-order component of the samplers (order, start, rebuild, state key).
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include <distsampler/epoch_order.hpp>
#include <distsampler/permutation.hpp>

#include "flaky_permutation.hpp"

using distsampler::EpochOrder;
using distsampler::FeistelPermutation;
using distsampler::SamplerState;
using distsampler::Tail;
using distsampler::TorchGeneration;
using distsampler::TorchRandperm;
using distsampler_test::FailBuilds;
using distsampler_test::FlakyPermutation;

namespace {

using Vec = std::vector<std::uint64_t>;

template <class P>
Vec all_indices(const EpochOrder<P>& order) {
  Vec out;
  for (std::uint64_t p = 0; p < order.dataset_size(); ++p) out.push_back(order.index(p));
  return out;
}

}  // namespace

static_assert(std::is_nothrow_move_assignable_v<EpochOrder<TorchRandperm>>);
static_assert(std::is_nothrow_move_assignable_v<EpochOrder<FeistelPermutation>>);

TEST_CASE("EpochOrder maps positions through the epoch's permutation, or the identity", "[order]") {
  // torch.randperm(10) with manual_seed(42 + 1), the order of torch's DistributedSampler(seed=42) at epoch 1.
  const EpochOrder<TorchRandperm> torch(10, true, 42, {}, 1);
  CHECK(all_indices(torch) == Vec{8, 4, 9, 0, 5, 1, 6, 7, 2, 3});
  CHECK(all_indices(EpochOrder<TorchRandperm>(10, true, 42)) == Vec{2, 6, 1, 8, 4, 5, 0, 9, 3, 7});
  CHECK(all_indices(EpochOrder<TorchRandperm>(10, false, 42, {}, 1)) == Vec{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

  const EpochOrder<> feistel(1000, true, 7, {}, 3, 10);
  const FeistelPermutation reference(1000, 7, 3);
  for (std::uint64_t p = 0; p < 1000; ++p) REQUIRE(feistel.index(p) == reference(p));
  CHECK(feistel.dataset_size() == 1000);
  CHECK(feistel.shuffle());
  CHECK(feistel.seed() == 7);
  CHECK(feistel.epoch() == 3);
  CHECK(feistel.start() == 10);
  CHECK(feistel.remaining() == 990);
  CHECK(feistel.permutation().size() == 1000);

  const EpochOrder<> empty;
  CHECK(empty.dataset_size() == 0);
  CHECK(empty.remaining() == 0);
}

TEST_CASE("EpochOrder::fill equals index() at strided positions", "[order]") {
  Vec out(40), expected(40);
  for (const bool shuffle : {true, false}) {
    const EpochOrder<> feistel(500, shuffle, 9, {}, 2);
    const EpochOrder<TorchRandperm> torch(500, shuffle, 9, {}, 2);
    for (std::uint64_t i = 0; i < 40; ++i) expected[i] = feistel.index(7 + i * 3);
    feistel.fill(7, 40, out.data(), 3);
    CHECK(out == expected);
    for (std::uint64_t i = 0; i < 40; ++i) expected[i] = torch.index(7 + i * 3);
    torch.fill(7, 40, out.data(), 3);
    CHECK(out == expected);
  }
}

TEST_CASE("EpochOrder::at returns a new order, and the permutation is rebuilt only for another epoch", "[order]") {
  FlakyPermutation::built = 0;
  const EpochOrder<FlakyPermutation> order(100, true, 5, {}, 0, 30);
  CHECK(FlakyPermutation::built == 1);
  const EpochOrder<FlakyPermutation> same = order.at(0, 0);
  CHECK(FlakyPermutation::built == 1);
  CHECK(same.start() == 0);
  CHECK(order.start() == 30);  // unchanged
  CHECK(all_indices(same) == all_indices(order));
  const EpochOrder<FlakyPermutation> next = order.at(1, 4);
  CHECK(FlakyPermutation::built == 2);
  CHECK(next.epoch() == 1);
  CHECK(next.start() == 4);
  CHECK(order.epoch() == 0);
  CHECK(all_indices(next) == all_indices(EpochOrder<FlakyPermutation>(100, true, 5, {}, 1)));
  CHECK(all_indices(next) != all_indices(order));
  // Without shuffle nothing is built.
  FlakyPermutation::built = 0;
  const EpochOrder<FlakyPermutation> identity(100, false, 5);
  CHECK(all_indices(identity.at(4)) == all_indices(identity));
  CHECK(FlakyPermutation::built == 0);

  // A failing build throws out of at() and the constructor, and leaves the source order alone.
  {
    const FailBuilds fail;
    CHECK_THROWS_WITH(order.at(2), "FlakyPermutation: cannot build epoch 2");
    CHECK_THROWS_WITH(EpochOrder<FlakyPermutation>(100, true, 5, {}, 3), "FlakyPermutation: cannot build epoch 3");
    CHECK(order.at(0, 50).start() == 50);  // the same epoch needs no build
  }
  CHECK(order.epoch() == 0);
  CHECK(order.start() == 30);

  CHECK_THROWS_AS(order.at(0, 101), distsampler::config_error);
  CHECK_THROWS_WITH(order.at(1, 101), "EpochOrder: start 101 exceeds dataset_size 100 (expected 0..100)");
  CHECK_THROWS_WITH(EpochOrder<>(10, true, 0, {}, 0, 11),
                    "EpochOrder: start 11 exceeds dataset_size 10 (expected 0..10)");
  CHECK(order.at(0, 100).remaining() == 0);
}

TEST_CASE("EpochOrder names its order in state keys and states", "[order][state]") {
  const EpochOrder<> feistel(1000, true, 42, {}, 3);
  const auto key = feistel.key("distributed", Tail::drop);
  CHECK(key.sampler == "distributed");
  CHECK(key.dataset_size == 1000);
  CHECK(key.seed == 42);
  CHECK(key.shuffle);
  CHECK(key.tail == Tail::drop);
  CHECK(key.engine == "feistel");
  CHECK(EpochOrder<TorchRandperm>(10, true, 0).key("batch", Tail::pad).engine == "torch-v2.7");
  CHECK(EpochOrder<TorchRandperm>(10, true, 0, {TorchGeneration::v1}).key("batch", Tail::pad).engine == "torch-v1");
  CHECK(EpochOrder<>::make_key("distributed", Tail::drop, 1000, true, 42, {}).fingerprint() == key.fingerprint());
  CHECK(feistel.key("batch", Tail::drop).fingerprint() != key.fingerprint());
  CHECK(EpochOrder<>(1000, false, 42).key("distributed", Tail::drop).fingerprint() != key.fingerprint());

  const SamplerState s = feistel.state("distributed", Tail::drop, 640);
  CHECK(s.dataset_size == 1000);
  CHECK(s.seed == 42);
  CHECK(s.epoch == 3);
  CHECK(s.consumed == 640);
  CHECK(s.fingerprint == key.fingerprint());
  CHECK(s.ahead.empty());
}

TEST_CASE("EpochOrder::resumed and from_state validate the state, then continue its epoch", "[order][resume]") {
  FlakyPermutation::built = 0;
  const EpochOrder<FlakyPermutation> saver(200, true, 8, {}, 6);
  const SamplerState state = saver.state("batch", Tail::pad, 120);
  const EpochOrder<FlakyPermutation> fresh(200, true, 8);
  const EpochOrder<FlakyPermutation> resumed = fresh.resumed(state, "batch", Tail::pad, "Who");
  CHECK(resumed.epoch() == 6);
  CHECK(resumed.start() == 120);
  CHECK(all_indices(resumed) == all_indices(saver));
  CHECK(fresh.epoch() == 0);
  const auto built = FlakyPermutation::built;
  const auto direct = EpochOrder<FlakyPermutation>::from_state(state, "batch", Tail::pad, "Who", 200, true, 8);
  CHECK(FlakyPermutation::built == built + 1);  // built once, at the state's epoch
  CHECK(direct.epoch() == 6);
  CHECK(direct.start() == 120);

  CHECK_THROWS_AS(fresh.resumed(state, "batch", Tail::drop, "Who"), distsampler::state_error);
  CHECK_THROWS_WITH(EpochOrder<FlakyPermutation>::from_state(state, "batch", Tail::pad, "Who", 200, true, 9),
                    Catch::Matchers::StartsWith("Who: seed differs (state 8, sampler 9)"));
}
