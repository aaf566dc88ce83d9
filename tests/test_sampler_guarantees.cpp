// distsampler tests: both samplers keep the strong exception guarantee, and stale iterators stay in bounds.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include <distsampler/batch/batch_sampler.hpp>
#include <distsampler/distributed/distributed_sampler.hpp>
#include <distsampler/permutation.hpp>

#include "flaky_permutation.hpp"

using distsampler::BatchSamplerOptions;
using distsampler::DistributedBatchSampler;
using distsampler::DistributedSampler;
using distsampler::EpochMode;
using distsampler::SamplerOptions;
using distsampler::SamplerState;
using distsampler::Tail;
using distsampler::TorchRandperm;
using distsampler::World;
using distsampler_test::FailBuilds;
using distsampler_test::FlakyPermutation;

namespace {

using Vec = std::vector<std::uint64_t>;
using Sampler = DistributedSampler<FlakyPermutation>;
using Batches = DistributedBatchSampler<FlakyPermutation>;

// Everything observable about a DistributedSampler's position in its epoch.
struct SamplerSnapshot {
  std::uint64_t epoch, start, size;
  Vec indices;
  std::vector<bool> padding;
  SamplerState state;
  explicit SamplerSnapshot(const Sampler& s)
      : epoch(s.epoch()), start(s.start()), size(s.size()), indices(s.indices()), state(s.state(s.size() / 2)) {
    for (std::uint64_t i = 0; i < s.size(); ++i) padding.push_back(s.is_padding(i));
  }
  bool operator==(const SamplerSnapshot& o) const {
    return epoch == o.epoch && start == o.start && size == o.size && indices == o.indices && padding == o.padding &&
           state == o.state;
  }
};

// Everything observable about a DistributedBatchSampler's position in its epoch.
struct BatchSnapshot {
  std::uint64_t epoch, start, steps;
  std::vector<Vec> batches;
  SamplerState state;
  explicit BatchSnapshot(const Batches& b)
      : epoch(b.epoch()), start(b.start()), steps(b.num_steps()), state(b.state(b.num_steps() / 2)) {
    for (std::uint64_t s = 0; s < b.num_steps(); ++s) {
      for (std::uint64_t k = 0; k < b.micro_batches_in_step(s); ++k) batches.push_back(b.micro_batch(s, k));
    }
  }
  bool operator==(const BatchSnapshot& o) const {
    return epoch == o.epoch && start == o.start && steps == o.steps && batches == o.batches && state == o.state;
  }
};

}  // namespace

TEST_CASE("DistributedSampler: a failed set_epoch or resume changes nothing, and a retry works",
          "[sampler][guarantee]") {
  const auto options = SamplerOptions().with_seed(3).with_tail(Tail::pad);
  Sampler s(103, World(1, 4), options);
  s.resume(Sampler(103, World(0, 2), options).state(10));  // mid-epoch 0: start 20
  REQUIRE(s.start() == 20);
  const SamplerSnapshot before(s);
  Sampler other_epoch(103, World(0, 3), options);
  other_epoch.set_epoch(5);
  const SamplerState saved = other_epoch.state(4);
  const Vec fresh_epoch0 = Sampler(103, World(1, 4), options).indices();

  {
    const FailBuilds fail;
    CHECK_THROWS_WITH(s.set_epoch(1), "FlakyPermutation: cannot build epoch 1");
    CHECK(SamplerSnapshot(s) == before);
    CHECK_THROWS_WITH(s.resume(saved), "FlakyPermutation: cannot build epoch 5");
    CHECK(SamplerSnapshot(s) == before);
    CHECK_THROWS_WITH(Sampler(103, World(1, 4), options, saved), "FlakyPermutation: cannot build epoch 5");
    // Within the same epoch nothing is built, so rewinding works even now.
    Sampler copy = s;
    copy.set_epoch(0);
    CHECK(copy.start() == 0);
    CHECK(copy.indices() == fresh_epoch0);
  }
  // The retry is not skipped as "already at epoch 1": it builds and moves.
  s.set_epoch(1);
  Sampler reference(103, World(1, 4), options);
  reference.set_epoch(1);
  CHECK(s.epoch() == 1);
  CHECK(s.start() == 0);
  CHECK(s.indices() == reference.indices());
  s.resume(saved);
  CHECK(s.epoch() == 5);
  CHECK(s.start() == 12);
  CHECK(s.indices() == Sampler(103, World(1, 4), options, saved).indices());
  // A mismatched state is refused before anything changes.
  const SamplerSnapshot resumed(s);
  CHECK_THROWS_AS(s.resume(Sampler(104, World(0, 1), options).state(0)), distsampler::state_error);
  CHECK(SamplerSnapshot(s) == resumed);
}

TEST_CASE("DistributedBatchSampler: a failed set_epoch, next_epoch, resume or pass changes nothing",
          "[batch][guarantee]") {
  const auto options = BatchSamplerOptions().with_micro_batch_size(3).with_accumulation_steps(2).with_seed(4);
  Batches b(200, World(1, 2), BatchSamplerOptions(options).with_tail(Tail::pad));
  b.resume(b.state(3, 1));
  REQUIRE(b.start() == 3 * 12 + 6);
  const BatchSnapshot before(b);
  Batches other(200, World(0, 4), BatchSamplerOptions(options).with_tail(Tail::pad));
  other.set_epoch(9);
  const SamplerState saved = other.state(2);

  {
    const FailBuilds fail;
    CHECK_THROWS_WITH(b.set_epoch(1), "FlakyPermutation: cannot build epoch 1");
    CHECK(BatchSnapshot(b) == before);
    CHECK_THROWS_WITH(b.next_epoch(), "FlakyPermutation: cannot build epoch 1");
    CHECK(BatchSnapshot(b) == before);
    CHECK_THROWS_WITH(b.resume(saved), "FlakyPermutation: cannot build epoch 9");
    CHECK(BatchSnapshot(b) == before);
    CHECK_THROWS_WITH(Batches(200, World(1, 2), BatchSamplerOptions(options).with_tail(Tail::pad), saved),
                      "FlakyPermutation: cannot build epoch 9");
  }
  b.set_epoch(1);
  const Batches reference(200, World(1, 2), BatchSamplerOptions(options).with_tail(Tail::pad));
  CHECK(b.epoch() == 1);
  CHECK(b.start() == 0);
  CHECK(b.num_steps() == reference.num_steps());
  CHECK(b.micro_batch(0, 0) != reference.micro_batch(0, 0));
  b.resume(saved);
  CHECK(b.epoch() == 9);
  CHECK(b.start() == 2 * 24);
  const Batches direct(200, World(1, 2), BatchSamplerOptions(options).with_tail(Tail::pad), saved);
  CHECK(BatchSnapshot(b) == BatchSnapshot(direct));

  // auto_advance: a pass whose epoch cannot be built leaves the epoch, and the next pass retries.
  Batches auto_pass(200, World(0, 2), BatchSamplerOptions(options).with_epoch_mode(EpochMode::auto_advance));
  (void)auto_pass.begin();
  {
    const FailBuilds fail;
    CHECK_THROWS_WITH(auto_pass.begin(), "FlakyPermutation: cannot build epoch 1");
  }
  CHECK(auto_pass.epoch() == 0);
  (void)auto_pass.begin();
  CHECK(auto_pass.epoch() == 1);
}

TEST_CASE("Without shuffle the engine is never built, and with it an engine error leaves the constructor",
          "[sampler][guarantee][torch]") {
  // TorchRandperm refuses an unknown generation when it is built, so it stands in for an
  // engine that cannot be built (as when its table cannot be allocated).
  distsampler::TorchRandpermOptions bad;
  bad.generation = static_cast<distsampler::TorchGeneration>(9);
  DistributedSampler<TorchRandperm> s(10, World(1, 4), SamplerOptions().with_shuffle(false), bad);
  CHECK(s.indices() == Vec{1, 5, 9});
  s.set_epoch(2);
  CHECK(s.epoch() == 2);
  CHECK(s.indices() == Vec{1, 5, 9});
  CHECK_THROWS_WITH(DistributedSampler<TorchRandperm>(10, World(1, 4), SamplerOptions(), bad),
                    "TorchRandperm: generation 9 is unknown (expected TorchGeneration::v1 or TorchGeneration::v2_7)");
  const auto options = BatchSamplerOptions().with_micro_batch_size(2);
  CHECK_THROWS_WITH(DistributedBatchSampler<TorchRandperm>(10, World(0, 1), options, bad),
                    "TorchRandperm: generation 9 is unknown (expected TorchGeneration::v1 or TorchGeneration::v2_7)");
}

TEST_CASE("DistributedSampler: stale iterators never read past the current size", "[sampler][iterator]") {
  const auto options = SamplerOptions().with_seed(42);
  DistributedSampler<TorchRandperm> s(10, World(1, 4), options);
  s.set_epoch(1);
  auto it = s.begin();
  const auto old_end = s.end();
  REQUIRE(old_end - it == 3);
  CHECK(*it == 4);  // torch's documented rank-1 share at epoch 1: [4, 1, 3]
  // Resume with 2 of 3 slots done: one position (9) remains for 4 ranks: rank 1 reads the padding.
  s.resume(s.state(2));
  REQUIRE(s.size() == 1);
  std::uint64_t reads = 0;
  for (; it != old_end; ++it) {  // a loop up to the old end() stops there
    if (it.position() < s.size()) {
      CHECK(*it == s[it.position()]);
      ++reads;
    } else {
      CHECK_THROWS_AS(*it, std::out_of_range);
      CHECK_THROWS_AS(it.is_padding(), std::out_of_range);
    }
  }
  CHECK(reads == 1);
  CHECK_THROWS_WITH(*(s.begin() + 2),
                    "DistributedSampler::iterator: position 2 is out of range for size 1 (expected 0..0)");
  CHECK_THROWS_WITH(s.begin()[1],
                    "DistributedSampler::iterator: position 1 is out of range for size 1 (expected 0..0)");
  // Within bounds, a stale iterator reads the new epoch (as documented).
  const auto first = s.begin();
  s.set_epoch(0);
  CHECK(*first == s[0]);
  DistributedSampler<TorchRandperm> empty(0, World(0, 2), options);
  CHECK_THROWS_WITH(*empty.begin(),
                    "DistributedSampler::iterator: position 0 is out of range for size 0 (the rank is "
                    "empty)");
}

TEST_CASE("DistributedBatchSampler: stale iterators and step views never read past num_steps", "[batch][iterator]") {
  const auto options = BatchSamplerOptions().with_micro_batch_size(2).with_seed(1).with_tail(Tail::pad);
  DistributedBatchSampler<TorchRandperm> b(20, World(0, 2), options);  // G = 4: 5 steps
  const auto& view = b;
  auto it = view.begin();
  const auto old_end = view.end();
  const auto last = *[&] {
    auto at = view.begin();
    for (int i = 0; i < 4; ++i) ++at;
    return at;
  }();
  REQUIRE(last.step() == 4);
  b.resume(b.state(3));  // 2 steps remain
  REQUIRE(b.num_steps() == 2);
  std::uint64_t steps = 0, refused = 0;
  for (; it != old_end; ++it) {
    const auto step = *it;
    if (step.step() < b.num_steps()) {
      CHECK(step.micro_batch(0) == b.micro_batch(step.step(), 0));
      ++steps;
    } else {
      CHECK_THROWS_AS(step.micro_batch(0), std::out_of_range);
      CHECK_THROWS_AS(step.is_padding(0, 0), std::out_of_range);
      ++refused;
    }
  }
  CHECK(steps == 2);
  CHECK(refused == 3);
  CHECK_THROWS_WITH(last.micro_batch(0),
                    "DistributedBatchSampler::micro_batch: step 4 is out of range for num_steps 2");
  b.set_epoch(0);
  CHECK(last.micro_batch(0) == b.micro_batch(4, 0));  // back in bounds: reads the current order
}
