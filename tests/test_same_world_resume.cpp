// distsampler tests: stop + resume on the same world, batch shape and worker count is the run that never stopped.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <distsampler/distsampler.hpp>
#include <distsampler/mixture/mixture_sampler.hpp>
#include <distsampler/tokens/token_batch_sampler.hpp>

#include "shard_test_util.hpp"

// Every helper lives in this namespace: the tests are a unity build.
namespace same_world_resume {

namespace ds = distsampler;
using Rng = shard_test::TestRng;

// One slot of a rank's sequence: the dataset index and its padding flag.
using Slot = std::pair<std::uint64_t, bool>;
// A rank's micro-batches, each as its slots, with the step each belongs to.
struct Batch {
  std::uint64_t step;
  std::vector<Slot> slots;
  friend bool operator==(const Batch& a, const Batch& b) { return a.step == b.step && a.slots == b.slots; }
};

ds::Tail random_tail(Rng& rng) { return static_cast<ds::Tail>(rng.below(3)); }

template <class Sampler>
std::vector<Slot> sample_sequence(const Sampler& s) {
  std::vector<Slot> out;
  for (std::uint64_t i = 0; i < s.size(); ++i) out.emplace_back(s[i], s.is_padding(i));
  return out;
}

// A batch-family rank's micro-batches in the order its loader workers deliver them
// (worker j % workers loads number j), read through each worker's schedule; steps are
// numbered from `step_offset`.
template <class Sampler, class Index>
std::vector<Batch> batch_sequence(const Sampler& s, std::uint64_t workers, std::uint64_t step_offset, Index index) {
  std::vector<std::vector<ds::MicroBatchId>> lists;
  for (std::uint64_t w = 0; w < workers; ++w) lists.push_back(s.worker_schedule(workers, w));
  std::vector<Batch> out;
  for (std::size_t turn = 0;; ++turn) {
    bool any = false;
    for (const auto& list : lists) {
      if (turn >= list.size()) continue;
      any = true;
      const ds::MicroBatchId id = list[turn];
      Batch b{id.step + step_offset, {}};
      const auto mb = s.micro_batch(id.step, id.micro_batch);
      for (std::size_t e = 0; e < mb.size(); ++e) b.slots.emplace_back(index(mb[e]), s.is_padding(id.step, id.micro_batch, e));
      out.push_back(std::move(b));
    }
    if (!any) break;
  }
  return out;
}

// The micro-batches before (steps, rounds) of a batch-family sampler: the state's count.
template <class Sampler>
std::uint64_t batches_before(const Sampler& s, std::uint64_t steps, std::uint64_t rounds) {
  std::uint64_t j = 0;
  for (std::uint64_t t = 0; t < steps; ++t) j += s.micro_batches_in_step(t);
  return j + rounds;
}

// A random stop of a batch-family sampler: (steps done, rounds of the next step).
template <class Sampler>
std::pair<std::uint64_t, std::uint64_t> random_stop(const Sampler& s, Rng& rng) {
  const std::uint64_t steps = rng.below(s.num_steps() + 1);
  const std::uint64_t rounds = steps < s.num_steps() ? rng.below(s.micro_batches_in_step(steps)) : 0;
  return {steps, rounds};
}

// Checks that `resumed` (one per rank) continues `original` after micro-batch j of each
// rank, steps included (resumed step t is original step `first_step` + t), or, where the
// state could only record the end of the epoch, that what it leaves out is padding or
// empty micro-batches of the last step.
void check_batch_continuation(const std::vector<std::vector<Batch>>& original,
                              const std::vector<std::vector<Batch>>& resumed, std::uint64_t j, bool at_epoch_end) {
  for (std::size_t r = 0; r < original.size(); ++r) {
    CAPTURE(r, j);
    if (at_epoch_end) {
      REQUIRE(resumed[r].empty());
      for (std::size_t i = static_cast<std::size_t>(j); i < original[r].size(); ++i) {
        for (const Slot& slot : original[r][i].slots) CHECK(slot.second);
      }
      continue;
    }
    REQUIRE(resumed[r].size() == original[r].size() - j);
    for (std::size_t i = 0; i < resumed[r].size(); ++i) REQUIRE(resumed[r][i] == original[r][j + i]);
  }
}

template <class Permutation>
void distributed_sampler_property(std::uint64_t seed) {
  Rng rng{seed};
  for (int trial = 0; trial < 300; ++trial) {
    const std::uint64_t n = rng.below(400), w = 1 + rng.below(6);
    const auto options = ds::SamplerOptions().with_seed(rng.below(1000)).with_tail(random_tail(rng));
    const std::uint64_t epoch = rng.below(4);
    CAPTURE(trial, n, w, ds::to_string(options.tail), epoch);
    std::vector<ds::DistributedSampler<Permutation>> ranks;
    for (std::uint64_t r = 0; r < w; ++r) {
      ranks.emplace_back(n, ds::World(r, w), options);
      ranks.back().set_epoch(epoch);
    }
    // Stop twice; the second stop resumes the resumed segment. Rank 0 has the most slots
    // (uneven); a rank with fewer has read all of its own at a stop past them.
    const std::uint64_t size = ranks[0].size();
    const std::uint64_t stop1 = rng.below(size + 1), stop2 = stop1 + rng.below(size - stop1 + 1);
    const auto saved1 = ds::SamplerState::from_text(ranks[0].state(stop1).to_text());
    const ds::DistributedSampler<Permutation> once0(n, ds::World(0, w), options, saved1);
    const auto saved2 = ds::SamplerState::from_bytes(once0.state(stop2 - stop1).to_bytes());
    const auto rest = [](const std::vector<Slot>& all, std::uint64_t from) {
      return std::vector<Slot>(all.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(from, all.size())),
                               all.end());
    };
    for (std::uint64_t r = 0; r < w; ++r) {
      const std::vector<Slot> whole = sample_sequence(ranks[r]);
      const ds::DistributedSampler<Permutation> once(n, ds::World(r, w), options, saved1);
      REQUIRE(sample_sequence(once) == rest(whole, stop1));
      ds::DistributedSampler<Permutation> twice(n, ds::World(r, w), options);
      twice.resume(saved2);
      REQUIRE(sample_sequence(twice) == rest(whole, stop2));
    }
  }
}

}  // namespace same_world_resume

using namespace same_world_resume;  // NOLINT: the test bodies below read the helpers unqualified

TEST_CASE("Fault: a mid-step drop state resumed on the same shape reads the 66 positions the epoch still holds",
          "[same-world][batch][resume]") {
  // N = 97, m = 3, W = 2, K = 2: G = 12. The uninterrupted drop epoch reads positions
  // [0, 96) and drops position 96; a stop after 2 steps + 1 micro-batch consumed 30.
  const auto options = ds::BatchSamplerOptions().with_micro_batch_size(3).with_accumulation_steps(2).with_seed(5)
                           .with_tail(ds::Tail::drop);
  const ds::DistributedBatchSampler<> original(97, ds::World(0, 2), options);
  const ds::SamplerState saved = original.state(2, 1);
  REQUIRE(saved.consumed == 30);
  const ds::DistributedBatchSampler<> resumed(97, ds::World(0, 2), options, saved);
  std::multiset<std::uint64_t> read, want;
  for (std::uint64_t s = 0; s < resumed.num_steps(); ++s) {
    for (const std::uint64_t i : resumed.global_batch(s)) read.insert(i);
  }
  for (std::uint64_t p = 30; p < 96; ++p) want.insert(original.index_at_position(p));
  CHECK(read.size() == 66);  // 11 rounds of 6, not 10
  CHECK(read == want);
}

TEST_CASE("Fault: 120 samples stopped after 5 micro-batches read 120 with drop and with pad, no padding",
          "[same-world][batch][resume]") {
  for (const ds::Tail tail : {ds::Tail::drop, ds::Tail::pad}) {
    CAPTURE(ds::to_string(tail));
    const auto options = ds::BatchSamplerOptions().with_micro_batch_size(3).with_accumulation_steps(2).with_seed(8)
                             .with_tail(tail);
    const ds::DistributedBatchSampler<> original(120, ds::World(0, 2), options);  // G = 12, 10 whole steps
    const ds::SamplerState saved = original.state(2, 1);                           // 5 micro-batches of 6
    const ds::DistributedBatchSampler<> resumed(120, ds::World(1, 2), options, saved);
    std::uint64_t read = saved.consumed, padding = 0;
    for (std::uint64_t s = 0; s < resumed.num_steps(); ++s) {
      read += resumed.global_batch(s).size();
      for (std::uint64_t k = 0; k < resumed.micro_batches_in_step(s); ++k) {
        for (std::uint64_t e = 0; e < resumed.micro_batch_length(s, k); ++e) padding += resumed.is_padding(s, k, e);
      }
    }
    CHECK(read == 120);
    CHECK(padding == 0);
    CHECK(resumed.num_steps() == 8);            // the rest of step 2, then steps 3..9
    CHECK(resumed.micro_batches_in_step(0) == 1);
    CHECK(resumed.global_batch(1) == original.global_batch(3));
  }
}

TEMPLATE_TEST_CASE("Fault: a pad DistributedSampler resumed on its world pads with the uninterrupted duplicates",
                   "[same-world][resume]", ds::FeistelPermutation, ds::TorchRandperm) {
  // N = 669 over 2 ranks: rank 1's last slot (334) is padding, torch's repeat of position 0.
  const auto options = ds::SamplerOptions().with_seed(21).with_tail(ds::Tail::pad);
  for (const std::uint64_t stop : {5u, 17u, 334u}) {
    CAPTURE(stop);
    for (std::uint64_t r = 0; r < 2; ++r) {
      const ds::DistributedSampler<TestType> original(669, ds::World(r, 2), options);
      const ds::DistributedSampler<TestType> resumed(669, ds::World(r, 2), options, original.state(stop));
      REQUIRE(resumed.size() == original.size() - stop);
      for (std::uint64_t i = 0; i < resumed.size(); ++i) {
        CHECK(resumed[i] == original[stop + i]);
        CHECK(resumed.is_padding(i) == original.is_padding(stop + i));
      }
    }
  }
}

TEST_CASE("Same world: DistributedSampler resumes as the uninterrupted run (Feistel order)", "[same-world][property]") {
  distributed_sampler_property<ds::FeistelPermutation>(1);
}

TEST_CASE("Same world: DistributedSampler resumes as the uninterrupted run (torch order)", "[same-world][property]") {
  distributed_sampler_property<ds::TorchRandperm>(2);
}

TEST_CASE("Same world: DistributedBatchSampler resumes as the uninterrupted run, mid-step and twice",
          "[same-world][property][batch]") {
  Rng rng{3};
  for (int trial = 0; trial < 400; ++trial) {
    const std::uint64_t n = rng.below(300), w = 1 + rng.below(4), workers = 1 + rng.below(4);
    const auto options = ds::BatchSamplerOptions()
                             .with_micro_batch_size(1 + rng.below(5))
                             .with_accumulation_steps(1 + rng.below(4))
                             .with_seed(rng.below(100))
                             .with_tail(random_tail(rng));
    const std::uint64_t epoch = rng.below(3);
    CAPTURE(trial, n, w, workers, options.micro_batch_size, options.accumulation_steps, ds::to_string(options.tail));
    std::vector<ds::DistributedBatchSampler<>> ranks;
    for (std::uint64_t r = 0; r < w; ++r) {
      ranks.emplace_back(n, ds::World(r, w), options);
      ranks.back().set_epoch(epoch);
    }
    const auto identity = [](std::uint64_t i) { return i; };
    std::vector<std::vector<Batch>> whole;
    for (const auto& s : ranks) whole.push_back(batch_sequence(s, workers, 0, identity));
    // First stop on the uninterrupted run, second on the resumed one.
    const auto stop1 = random_stop(ranks[0], rng);
    const std::uint64_t j1 = batches_before(ranks[0], stop1.first, stop1.second);
    const auto saved1 = ds::SamplerState::from_text(ranks[rng.below(w)].state(stop1.first, stop1.second).to_text());
    const bool end1 = saved1.consumed == n && j1 < whole[0].size();
    CAPTURE(stop1.first, stop1.second, saved1.consumed);
    std::vector<ds::DistributedBatchSampler<>> once;
    std::vector<std::vector<Batch>> after1;
    const std::uint64_t first_step = stop1.first;
    for (std::uint64_t r = 0; r < w; ++r) {
      once.emplace_back(n, ds::World(r, w), options, saved1);
      after1.push_back(batch_sequence(once.back(), workers, first_step, identity));
      for (std::uint64_t t = 1; t < once.back().num_steps(); ++t) {
        CHECK(once.back().micro_batches_in_step(t) == options.accumulation_steps);
      }
    }
    check_batch_continuation(whole, after1, j1, end1);
    if (end1) continue;
    const auto stop2 = random_stop(once[0], rng);
    const std::uint64_t j2 = j1 + batches_before(once[0], stop2.first, stop2.second);
    const auto saved2 = ds::SamplerState::from_bytes(once[rng.below(w)].state(stop2.first, stop2.second).to_bytes());
    std::vector<std::vector<Batch>> after2;
    const std::uint64_t second_first = first_step + stop2.first;
    for (std::uint64_t r = 0; r < w; ++r) {
      ds::DistributedBatchSampler<> twice(n, ds::World(r, w), options);
      twice.resume(saved2);
      after2.push_back(batch_sequence(twice, workers, second_first, identity));
    }
    check_batch_continuation(whole, after2, j2, saved2.consumed == n && j2 < whole[0].size());
  }
}

TEST_CASE("Same world: a pad state after the last real position of the epoch records its end",
          "[same-world][batch]") {
  // N = 10, m = 2, W = 2, K = 3: G = 12, one pad step; round 0 reads 0..3, round 1 4..7,
  // round 2 8, 9 and two duplicates. After round 1 the last round still holds real
  // positions, so that state resumes exactly.
  const auto options = ds::BatchSamplerOptions().with_micro_batch_size(2).with_accumulation_steps(3).with_seed(1)
                           .with_tail(ds::Tail::pad);
  const ds::DistributedBatchSampler<> original(10, ds::World(1, 2), options);
  const ds::DistributedBatchSampler<> resumed(10, ds::World(1, 2), options, original.state(0, 2));
  REQUIRE(resumed.num_steps() == 1);
  REQUIRE(resumed.micro_batches_in_step(0) == 1);
  CHECK(resumed.micro_batch(0, 0) == original.micro_batch(0, 2));
  CHECK(resumed.is_padding(0, 0, 0) == original.is_padding(0, 2, 0));
  // N = 8 with the same shape: rounds 0 and 1 read 0..7, round 2 is all padding. A state
  // after round 1 records consumed = N, the end of the epoch: the padding round is not read.
  const ds::DistributedBatchSampler<> short_epoch(8, ds::World(0, 2), options);
  const ds::SamplerState end = short_epoch.state(0, 2);
  CHECK(end.consumed == 8);
  CHECK(ds::DistributedBatchSampler<>(8, ds::World(0, 2), options, end).num_steps() == 0);
  for (std::uint64_t e = 0; e < 2; ++e) CHECK(short_epoch.is_padding(0, 2, e));
}

TEST_CASE("Same world: MixtureSampler resumes as the uninterrupted run, mid-step included",
          "[same-world][property][mixture]") {
  Rng rng{4};
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::uint64_t> sizes;
    std::vector<double> weights;
    const std::uint64_t sources = 1 + rng.below(3);
    for (std::uint64_t i = 0; i < sources; ++i) {
      sizes.push_back(1 + rng.below(120));
      weights.push_back(static_cast<double>(1 + rng.below(9)));
    }
    const std::uint64_t w = 1 + rng.below(3), workers = 1 + rng.below(3);
    ds::MixtureOptions options;
    options.with_micro_batch_size(1 + rng.below(4)).with_accumulation_steps(1 + rng.below(3)).with_seed(rng.below(50));
    options.with_tail(random_tail(rng));
    CAPTURE(trial, w, workers, options.micro_batch_size, options.accumulation_steps, ds::to_string(options.tail));
    std::vector<ds::MixtureSampler> ranks;
    for (std::uint64_t r = 0; r < w; ++r) ranks.emplace_back(sizes, weights, ds::World(r, w), options);
    const auto flat = [](const ds::MixtureIndex& x) { return x.source * 1000 + x.index; };
    std::vector<std::vector<Batch>> whole;
    for (const auto& s : ranks) whole.push_back(batch_sequence(s, workers, 0, flat));
    const auto stop = random_stop(ranks[0], rng);
    const std::uint64_t j = batches_before(ranks[0], stop.first, stop.second);
    const auto saved = ds::SamplerState::from_text(ranks[0].state(stop.first, stop.second).to_text());
    CAPTURE(stop.first, stop.second, saved.consumed);
    std::vector<std::vector<Batch>> after;
    for (std::uint64_t r = 0; r < w; ++r) {
      const ds::MixtureSampler resumed(sizes, weights, ds::World(r, w), options, saved);
      after.push_back(batch_sequence(resumed, workers, stop.first, flat));
    }
    check_batch_continuation(whole, after, j, saved.consumed == ranks[0].dataset_size() && j < whole[0].size());
  }
}

TEST_CASE("Same world: WeightedSampler resumes as the uninterrupted run, padding included", "[same-world][property]") {
  Rng rng{5};
  for (int trial = 0; trial < 120; ++trial) {
    std::vector<double> weights(1 + rng.below(60));
    for (double& x : weights) x = static_cast<double>(1 + rng.below(20));
    const std::uint64_t w = 1 + rng.below(5);
    const auto options = ds::WeightedSamplerOptions()
                             .with_seed(rng.below(100))
                             .with_replacement(rng.below(2) == 0)
                             .with_tail(random_tail(rng));
    CAPTURE(trial, weights.size(), w, options.replacement, ds::to_string(options.tail));
    for (std::uint64_t r = 0; r < w; ++r) {
      const ds::WeightedSampler original(weights, ds::World(r, w), options);
      const std::uint64_t stop = rng.below(original.size() + 1);
      ds::WeightedSampler resumed(weights, ds::World(r, w), options);
      resumed.resume(ds::SamplerState::from_text(original.state(stop).to_text()));
      REQUIRE(resumed.size() == original.size() - stop);
      for (std::uint64_t i = 0; i < resumed.size(); ++i) REQUIRE(resumed[i] == original[stop + i]);
    }
  }
}

TEST_CASE("Same world: every shard stream continues sample for sample after an equal stop in the full rounds",
          "[same-world][property][shards]") {
  // The documented guarantee: equal per-worker stops inside the full rounds of the deal
  // continue every real sample; a pad tail's duplicates are flagged alike but repeat the
  // resumed segment's last samples. Stops in the last partial round, or unequal ones,
  // resume exactly once but are dealt anew.
  Rng rng{6};
  for (int trial = 0; trial < 150; ++trial) {
    const auto sizes = shard_test::random_sizes(rng, 12, 50);
    const ds::Tail tail = random_tail(rng);
    const auto options = shard_test::small_options(static_cast<std::uint64_t>(trial), tail, rng.next());
    const std::uint64_t w = 1 + rng.below(4), workers = 1 + rng.below(3);
    const auto original = shard_test::make_ranks(sizes, w, workers, options, 2);
    const std::uint64_t k = original[0].consumers(), b = original[0].block_size();
    const std::uint64_t full = original[0].dataset_size() / k / b * b;
    const std::uint64_t stop = rng.below(full + 1);
    const auto saved = ds::SamplerState::from_text(original[rng.below(w)].state(stop).to_text());
    CAPTURE(trial, w, workers, ds::to_string(tail), stop);
    for (std::uint64_t r = 0; r < w; ++r) {
      ds::StreamingShardSampler resumed(sizes, ds::World(r, w), ds::ShardSamplerOptions(options).with_num_workers(workers));
      resumed.resume(saved);
      const auto& o = original[r];
      for (std::uint64_t wk = 0; wk < workers; ++wk) {
        REQUIRE(resumed.worker_size(wk) == o.worker_size(wk) - stop);
        for (std::uint64_t i = 0; i < resumed.worker_size(wk); ++i) {
          const ds::ShardSample got = resumed.sample(wk, i), want = o.sample(wk, stop + i);
          CAPTURE(wk, i, got.index, want.index);
          REQUIRE(got.is_padding == want.is_padding);
          if (!want.is_padding) REQUIRE(got == want);
        }
      }
    }
  }
}

TEST_CASE("Same world: token batches resume as the uninterrupted run at a window's start, and from the next window on",
          "[same-world][property][tokens]") {
  Rng rng{7};
  for (int trial = 0; trial < 40; ++trial) {
    const std::uint64_t n = 1 + rng.below(400), w = 1 + rng.below(3);
    std::vector<std::uint32_t> lengths(n);
    for (auto& x : lengths) x = static_cast<std::uint32_t>(1 + rng.below(60));
    ds::TokenBatchOptions options;
    options.with_max_tokens(60 + rng.below(200)).with_window(1 + rng.below(120)).with_accumulation_steps(1 + rng.below(3))
        .with_seed(rng.below(100));
    CAPTURE(trial, n, w, options.window, options.accumulation_steps);
    std::vector<ds::TokenBatchSampler> ranks;
    for (std::uint64_t r = 0; r < w; ++r) ranks.emplace_back(n, lengths, ds::World(r, w), options);
    const std::uint64_t steps = ranks[0].num_steps();
    const auto read = [&](const ds::TokenBatchSampler& s, std::uint64_t from) {
      std::vector<std::vector<std::uint64_t>> out;
      for (std::uint64_t t = from; t < s.num_steps(); ++t) {
        for (std::uint64_t k = 0; k < s.accumulation_steps(); ++k) out.push_back(s.micro_batch(t, k).indices);
      }
      return out;
    };
    const std::uint64_t stop = rng.below(steps + 1);
    const std::uint64_t rounds = stop < steps ? rng.below(options.accumulation_steps) : 0;
    const auto saved = ds::SamplerState::from_text(ranks[0].state(stop, rounds).to_text());
    CAPTURE(stop, rounds);
    // Where the stop's window ends in the uninterrupted run.
    const std::uint64_t window_end = stop < steps ? ranks[0].window(stop).end_step() : steps;
    const bool at_window_start = stop < steps ? ranks[0].window(stop).first_step() == stop && rounds == 0 : true;
    std::multiset<std::uint64_t> rest_of_window, replanned;  // over every rank
    for (std::uint64_t r = 0; r < w && !at_window_start; ++r) {
      for (std::uint64_t t = stop; t < window_end; ++t) {
        for (std::uint64_t k = t == stop ? rounds : 0; k < options.accumulation_steps; ++k) {
          for (const std::uint64_t i : ranks[r].micro_batch(t, k).indices) rest_of_window.insert(i);
        }
      }
    }
    for (std::uint64_t r = 0; r < w; ++r) {
      const ds::TokenBatchSampler resumed(n, lengths, ds::World(r, w), options, saved);
      if (at_window_start) {
        REQUIRE(read(resumed, 0) == read(ranks[r], stop));
        continue;
      }
      // Inside a window the rest of it is planned anew; the steps after it are the same.
      REQUIRE(resumed.num_steps() != 0);
      const std::uint64_t resumed_window_end = resumed.window(0).end_step();
      REQUIRE(resumed.num_steps() - resumed_window_end == steps - window_end);
      CHECK(read(resumed, resumed_window_end) == read(ranks[r], window_end));
      for (std::uint64_t t = 0; t < resumed_window_end; ++t) {
        for (std::uint64_t k = 0; k < options.accumulation_steps; ++k) {
          for (const std::uint64_t i : resumed.micro_batch(t, k).indices) replanned.insert(i);
        }
      }
    }
    // The interrupted window's rest: the same samples, each once, planned anew.
    CHECK(replanned == rest_of_window);
  }
}

TEST_CASE("Same world: the overlap sums of a mid-step resumed batch segment count each sample once",
          "[same-world][batch][guard]") {
  // N = 97, G = 12 on 2 ranks, resumed after 2 steps + 1 micro-batch (30 consumed): the
  // ranks read 66 positions, and what they skip (the prefix and the dropped position 96)
  // makes up the rest.
  const auto options = ds::BatchSamplerOptions().with_micro_batch_size(3).with_accumulation_steps(2).with_seed(5)
                           .with_tail(ds::Tail::drop);
  const ds::SamplerState saved = ds::DistributedBatchSampler<>(97, ds::World(0, 2), options).state(2, 1);
  ds::ReadSums all;
  for (std::uint64_t r = 0; r < 2; ++r) {
    const ds::DistributedBatchSampler<> s(97, ds::World(r, 2), options, saved);
    CHECK(s.layout().read_end() == 96);
    all.merge(ds::segment_sums(s, ds::World(r, 2)));
  }
  CHECK(all.reads() == 66);
  CHECK(all.skips() == 31);
  CHECK(all.padding_slots() == 0);
}
