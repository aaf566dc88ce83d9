// distsampler tests: resume and elastic resume read every sample of the epoch exactly once across chains of changes.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <distsampler/batch/batch_sampler.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/distributed/distributed_sampler.hpp>
#include <distsampler/state.hpp>

using distsampler::BatchSamplerOptions;
using distsampler::DistributedBatchSampler;
using distsampler::DistributedSampler;
using distsampler::FeistelPermutation;
using distsampler::SamplerOptions;
using distsampler::SamplerState;
using distsampler::Tail;
using distsampler::TorchRandperm;
using distsampler::World;
using distsampler::detail::SplitMix64;

namespace {

// Saves and reloads through one of the two forms, as a job would between runs.
SamplerState round_trip(const SamplerState& s, bool as_text) {
  if (as_text) return SamplerState::from_text(s.to_text());
  const auto bytes = s.to_bytes();
  return SamplerState::from_bytes(bytes.data(), bytes.size());
}

struct Tally {
  std::vector<int> seen;
  std::uint64_t padding = 0;
  explicit Tally(std::uint64_t n) : seen(n, 0) {}
  void add(std::uint64_t index, bool is_padding) {
    if (is_padding) {
      ++padding;
    } else {
      ++seen.at(index);
    }
  }
  [[nodiscard]] std::uint64_t count(int times) const {
    return static_cast<std::uint64_t>(std::count(seen.begin(), seen.end(), times));
  }
};

// Reads the first `done` slots of every rank of one segment.
template <class Sampler>
void read_prefix(const std::vector<Sampler>& ranks, std::uint64_t done, Tally& tally) {
  for (const auto& s : ranks) {
    for (std::uint64_t i = 0; i < std::min(done, s.size()); ++i) tally.add(s[i], s.is_padding(i));
  }
}

// A DistributedSampler epoch interrupted and resumed on each world size of `worlds` in
// turn, at random points; the last segment runs to the end. Checks exactly-once.
template <class P>
void distributed_chain(std::uint64_t n, const std::vector<std::uint64_t>& worlds, Tail tail, SplitMix64& rng) {
  SamplerOptions o;
  o.seed = rng() % 1000;
  o.tail = tail;
  const std::uint64_t epoch = rng() % 5;
  Tally tally(n);
  SamplerState state;
  std::uint64_t last_remaining = 0;
  for (std::size_t seg = 0; seg < worlds.size(); ++seg) {
    const std::uint64_t w = worlds[seg];
    const bool last = seg + 1 == worlds.size();
    std::vector<SamplerState> states;
    if (seg == 0) {
      std::vector<DistributedSampler<P>> ranks;
      for (std::uint64_t r = 0; r < w; ++r) {
        ranks.emplace_back(n, World(r, w), o);
        ranks.back().set_epoch(epoch);
      }
      const std::uint64_t done = last ? ranks[0].size() : rng() % (ranks[0].size() + 1);
      last_remaining = n;
      read_prefix(ranks, done, tally);
      for (const auto& s : ranks) states.push_back(s.state(done));
    } else {
      std::vector<DistributedSampler<P>> ranks;
      for (std::uint64_t r = 0; r < w; ++r) {
        if (seg % 2 == 0) {
          ranks.emplace_back(n, World(r, w), o, state);
        } else {
          ranks.emplace_back(n, World(r, w), o);  // an existing sampler resumes in place
          ranks.back().set_epoch(epoch + 1);
          ranks.back().resume(state);
        }
        // The batched fill and the iterator agree with slot-by-slot access after a resume.
        const auto& s = ranks.back();
        std::vector<std::uint64_t> by_slot;
        for (std::uint64_t i = 0; i < s.size(); ++i) by_slot.push_back(s[i]);
        REQUIRE(s.indices() == by_slot);
        REQUIRE(std::vector<std::uint64_t>(s.begin(), s.end()) == by_slot);
      }
      REQUIRE(ranks[0].epoch() == epoch);
      REQUIRE(ranks[0].start() == state.consumed);
      const std::uint64_t done = last ? ranks[0].size() : rng() % (ranks[0].size() + 1);
      last_remaining = n - state.consumed;
      read_prefix(ranks, done, tally);
      for (const auto& s : ranks) states.push_back(s.state(done));
    }
    for (const auto& s : states) REQUIRE(s == states[0]);  // every rank saves the same state
    state = round_trip(states[0], seg % 2 == 0);
  }
  const std::uint64_t w = worlds.back();
  CHECK(tally.count(0) + tally.count(1) == n);  // nothing read twice
  switch (tail) {
    case Tail::pad:
      CHECK(tally.count(1) == n);
      break;
    case Tail::uneven:
      CHECK(tally.count(1) == n);
      CHECK(tally.padding == 0);
      break;
    case Tail::drop: {
      CHECK(tally.padding == 0);
      CHECK(tally.count(0) == last_remaining % w);
      // The missed samples are exactly the last positions of the epoch's order.
      const P order(n, o.seed, epoch);
      for (std::uint64_t p = n - last_remaining % w; p < n; ++p) CHECK(tally.seen[order(p)] == 0);
      break;
    }
  }
}

struct Shape {
  std::uint64_t world_size, micro_batch_size, accumulation_steps, num_workers;
};

// A DistributedBatchSampler epoch interrupted at random steps (and micro-batch rounds) and
// resumed with each shape in turn; every rank's micro-batches are read through its
// workers' schedules. Checks exactly-once.
template <class P>
void batch_chain(std::uint64_t n, const std::vector<Shape>& shapes, Tail tail, SplitMix64& rng) {
  BatchSamplerOptions o;
  o.seed = rng() % 1000;
  o.tail = tail;
  const std::uint64_t epoch = rng() % 5;
  Tally tally(n);
  SamplerState state;
  std::uint64_t last_dropped = 0;
  for (std::size_t seg = 0; seg < shapes.size(); ++seg) {
    const Shape& sh = shapes[seg];
    const bool last = seg + 1 == shapes.size();
    std::vector<DistributedBatchSampler<P>> ranks;
    for (std::uint64_t r = 0; r < sh.world_size; ++r) {
      ranks.emplace_back(n, World(r, sh.world_size),
                         BatchSamplerOptions(o)
                             .with_micro_batch_size(sh.micro_batch_size)
                             .with_accumulation_steps(sh.accumulation_steps));
      if (seg == 0) {
        ranks.back().set_epoch(epoch);
      } else {
        ranks.back().resume(state);
      }
    }
    const auto& first = ranks[0];
    // Drop leaves out the tail of the segment's grid: the epoch's last N mod G positions
    // when the segment starts at the end of one of its rounds, else (N - start) mod G.
    const std::uint64_t start = first.start(), g = first.global_batch_size();
    const std::uint64_t round = sh.micro_batch_size * sh.world_size, tail_begin = n - n % g;
    last_dropped = start % round != 0 ? (n - start) % g : start >= tail_begin ? n - start : n % g;
    std::uint64_t steps = last ? first.num_steps() : rng() % (first.num_steps() + 1), rounds = 0;
    if (!last && steps < first.num_steps() && rng() % 2 == 0) rounds = rng() % first.micro_batches_in_step(steps);
    for (const auto& s : ranks) {
      REQUIRE(s.num_steps() == first.num_steps());
      for (std::uint64_t worker = 0; worker < sh.num_workers; ++worker) {
        for (const auto& id : s.worker_schedule(sh.num_workers, worker)) {
          if (id.step > steps || (id.step == steps && id.micro_batch >= rounds)) continue;
          const auto batch = s.micro_batch(id.step, id.micro_batch);
          for (std::uint64_t e = 0; e < batch.size(); ++e) {
            tally.add(batch[e], s.is_padding(id.step, id.micro_batch, e));
          }
        }
      }
    }
    std::vector<SamplerState> states;
    for (const auto& s : ranks) states.push_back(s.state(steps, rounds));
    for (const auto& s : states) REQUIRE(s == states[0]);
    state = round_trip(states[0], seg % 2 == 1);
  }
  CHECK(tally.count(0) + tally.count(1) == n);
  if (tail == Tail::drop) {
    CHECK(tally.padding == 0);
    CHECK(tally.count(0) == last_dropped);
  } else {
    CHECK(tally.count(1) == n);
    if (tail == Tail::uneven) CHECK(tally.padding == 0);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("Resuming at position 0 gives the fresh epoch, and set_epoch leaves a resumed segment", "[resume]",
                   FeistelPermutation, TorchRandperm) {
  for (const std::uint64_t n : {0u, 1u, 7u, 10u, 64u, 101u}) {
    for (std::uint64_t w = 1; w <= 5; ++w) {
      for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
        for (std::uint64_t r = 0; r < w; ++r) {
          const SamplerOptions o = SamplerOptions().with_seed(42).with_tail(tail);
          DistributedSampler<TestType> plain(n, World(r, w), o);
          plain.set_epoch(1);
          DistributedSampler<TestType> resumed(n, World(r, w), o, plain.state(0));
          REQUIRE(resumed.epoch() == 1);
          REQUIRE(resumed.size() == plain.size());
          CHECK(resumed.indices() == plain.indices());
          for (std::uint64_t i = 0; i < plain.size(); ++i) CHECK(resumed.is_padding(i) == plain.is_padding(i));
          CHECK(resumed.state(0) == plain.state(0));
          if (n > 4 * w) {
            // Mid-epoch, then back to the whole epoch with set_epoch (same epoch number).
            resumed.resume(plain.state(2));
            CHECK(resumed.start() == 2 * w);
            CHECK(resumed.size() < plain.size());
            resumed.set_epoch(1);
            CHECK(resumed.start() == 0);
            CHECK(resumed.indices() == plain.indices());
          }
        }
      }
    }
  }
}

TEST_CASE("torch's documented vector survives a resume at every point", "[resume][torch]") {
  // DistributedSampler(N=10, W=4, seed=42, epoch=1): ranks 0..3 = [8,5,2] [4,1,3] [9,6,8] [0,7,4].
  const SamplerOptions o = SamplerOptions().with_seed(42);
  DistributedSampler<TorchRandperm> rank1(10, World(1, 4), o);
  rank1.set_epoch(1);
  CHECK(rank1.indices() == std::vector<std::uint64_t>{4, 1, 3});
  const auto state = rank1.state(1);
  CHECK(state.consumed == 4);
  // torch's order for that epoch is [8,4,9,0,5,1,6,7,2,3]; positions 0..3 are done. The
  // rest continues strided over 2 ranks: positions 4, 6, 8 and 5, 7, 9.
  const DistributedSampler<TorchRandperm> r0(10, World(0, 2), o, state), r1(10, World(1, 2), o, state);
  CHECK(r0.indices() == std::vector<std::uint64_t>{5, 6, 2});
  CHECK(r1.indices() == std::vector<std::uint64_t>{1, 7, 3});
}

TEMPLATE_TEST_CASE("DistributedSampler chains 8 -> 3 -> 5 ranks read each sample exactly once", "[resume][elastic]",
                   FeistelPermutation, TorchRandperm) {
  SplitMix64 rng(11);
  for (int trial = 0; trial < 150; ++trial) {
    const std::uint64_t n = 1 + rng() % 300;
    const Tail tail = static_cast<Tail>(trial % 3);
    CAPTURE(trial, n, distsampler::to_string(tail));
    distributed_chain<TestType>(n, {8, 3, 5}, tail, rng);
    distributed_chain<TestType>(n, {1, 7, 2, 2, 4}, tail, rng);
  }
}

TEMPLATE_TEST_CASE("Batch sampler chains across world, accumulation and worker changes read each sample once",
                   "[resume][elastic][batch]", FeistelPermutation, TorchRandperm) {
  SplitMix64 rng(5);
  // 8 -> 3 -> 5 ranks and workers 2 -> 4 with a changing global batch (16 -> 12 -> 15) ...
  const std::vector<Shape> changing{{8, 2, 1, 2}, {3, 2, 2, 4}, {5, 1, 3, 4}};
  // ... and with a constant global batch of 24.
  const std::vector<Shape> constant{{8, 3, 1, 2}, {3, 2, 4, 4}, {4, 3, 2, 1}, {1, 3, 8, 3}};
  for (int trial = 0; trial < 120; ++trial) {
    const std::uint64_t n = 1 + rng() % 400;
    const Tail tail = static_cast<Tail>(trial % 3);
    CAPTURE(trial, n, distsampler::to_string(tail));
    batch_chain<TestType>(n, changing, tail, rng);
    batch_chain<TestType>(n, constant, tail, rng);
  }
}

TEMPLATE_TEST_CASE("With a constant global batch, a resumed run continues the uninterrupted run's steps",
                   "[resume][elastic][batch]", FeistelPermutation, TorchRandperm) {
  const Tail tail = GENERATE(Tail::drop, Tail::pad, Tail::uneven);
  BatchSamplerOptions o;
  o.seed = 77;
  o.tail = tail;
  const std::uint64_t n = 1000;
  DistributedBatchSampler<TestType> original(n, World(5, 8),
                                             BatchSamplerOptions(o).with_micro_batch_size(3));  // G = 24
  original.set_epoch(2);
  for (std::uint64_t stop = 0; stop <= original.num_steps(); stop += 7) {
    const auto saved = SamplerState::from_text(original.state(stop).to_text());
    DistributedBatchSampler<TestType> resumed(
        n, World(1, 2),
        BatchSamplerOptions(o).with_micro_batch_size(3).with_accumulation_steps(4));  // G = 24 on 2 ranks
    resumed.resume(saved);
    CAPTURE(stop);
    REQUIRE(resumed.num_steps() == original.num_steps() - stop);
    for (std::uint64_t t = 0; t < resumed.num_steps(); ++t) {
      CHECK(resumed.global_batch(t) == original.global_batch(stop + t));
    }
  }
}

TEST_CASE("A resumed sampler returns to full epochs with set_epoch", "[resume][epoch]") {
  BatchSamplerOptions o;
  o.seed = 1;
  o.epoch_mode = distsampler::EpochMode::auto_advance;
  DistributedBatchSampler<> s(100, World(0, 2), BatchSamplerOptions(o).with_micro_batch_size(2));  // G = 4: 25 steps
  s.resume(s.state(10));
  CHECK(s.num_steps() == 15);
  std::uint64_t passes[2] = {0, 0};
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto step : s) {
      (void)step;
      ++passes[pass];
    }
  }
  CHECK(passes[0] == 15);  // the rest of the resumed epoch 0
  CHECK(passes[1] == 25);  // then all of epoch 1
  CHECK(s.epoch() == 1);
  CHECK(s.start() == 0);

  DistributedSampler<> d(100, World(0, 4), SamplerOptions().with_seed(1));
  d.resume(d.state(5));
  CHECK(d.size() == 20);
  d.set_epoch(0);
  CHECK(d.size() == 25);
}

TEST_CASE("Mismatched states are refused with a message naming the difference", "[resume][errors]") {
  BatchSamplerOptions o;
  o.seed = 42;
  DistributedBatchSampler<> feistel(1000, World(0, 2),
                                    BatchSamplerOptions(o).with_micro_batch_size(4).with_accumulation_steps(2));
  DistributedBatchSampler<TorchRandperm> torch(
      1000, World(0, 2), BatchSamplerOptions(o).with_micro_batch_size(4).with_accumulation_steps(2));
  const SamplerState saved = feistel.state(3);
  CHECK_THROWS_WITH(torch.resume(saved),
                    "DistributedBatchSampler: engine differs (state feistel/2, sampler torch-v2.7/1)");

  DistributedBatchSampler<> other_size(999, World(0, 2),
                                       BatchSamplerOptions(o).with_micro_batch_size(4).with_accumulation_steps(2));
  CHECK_THROWS_WITH(other_size.resume(saved),
                    "DistributedBatchSampler: dataset_size differs (state 1000, sampler 999)");
  CHECK(other_size.start() == 0);

  o.seed = 43;
  DistributedBatchSampler<> other_seed(1000, World(0, 2),
                                       BatchSamplerOptions(o).with_micro_batch_size(4).with_accumulation_steps(2));
  CHECK_THROWS_WITH(other_seed.resume(saved), "DistributedBatchSampler: seed differs (state 42, sampler 43)");

  o.seed = 42;
  o.tail = Tail::pad;
  DistributedBatchSampler<> other_tail(1000, World(0, 2),
                                       BatchSamplerOptions(o).with_micro_batch_size(4).with_accumulation_steps(2));
  CHECK_THROWS_WITH(other_tail.resume(saved), "DistributedBatchSampler: tail differs (state drop, sampler pad)");

  DistributedSampler<> plain(1000, World(0, 2), SamplerOptions().with_seed(42).with_tail(Tail::drop));
  const SamplerState plain_state = plain.state(10);
  CHECK_THROWS_WITH(feistel.resume(plain_state),
                    "DistributedBatchSampler: sampler family differs (state distributed, sampler batch)");
  CHECK_THROWS_WITH(
      DistributedSampler<>(1000, World(0, 3), SamplerOptions().with_shuffle(false).with_seed(42).with_tail(Tail::drop),
                           plain_state),
      "DistributedSampler::resume: shuffle differs (state true, sampler false); engine differs (state "
      "feistel/2, sampler identity/1)");
  CHECK_NOTHROW(
      DistributedSampler<>(1000, World(2, 3), SamplerOptions().with_seed(42).with_tail(Tail::drop), plain_state));

  CHECK_THROWS_WITH(plain.state(501),
                    "DistributedSampler::state: samples_done 501 exceeds the samples per rank 500 (expected 0..500)");
  const DistributedSampler<> resumed(1000, World(0, 3), SamplerOptions().with_seed(42));
  CHECK_THROWS_WITH(resumed.state(335),
                    "DistributedSampler::state: samples_done 335 exceeds the samples per rank 334 (expected "
                    "0..334)");
  CHECK_THROWS_WITH(resumed[334],
                    "DistributedSampler::operator[]: position 334 is out of range for size 334 "
                    "(expected 0..333)");
  // A failed resume leaves the sampler as it was.
  DistributedSampler<> kept(1000, World(0, 3),
                            SamplerOptions().with_shuffle(false).with_seed(42).with_tail(Tail::drop));
  kept.set_epoch(4);
  CHECK_THROWS_AS(kept.resume(plain_state), distsampler::state_error);
  CHECK(kept.epoch() == 4);
  CHECK(kept.start() == 0);
  CHECK(kept.size() == 333);
}

TEST_CASE("States written by the previous release still resume where the order is unchanged", "[resume][state]") {
  // Made by the previous release (DistributedSampler<> with seed 42, pad, epoch 3, rank 0 of
  // 2 after 2 samples; and a batch sampler after 3 steps). FeistelPermutation's format 2
  // changed only orders of at most 16 values, so the large state resumes and the small one
  // is refused with the reason.
  const SamplerState large = SamplerState::from_text(
      "distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=4 fingerprint=0xa40f871ada884b97");
  DistributedSampler<> resumed(1000, World(1, 3), SamplerOptions().with_seed(42));
  resumed.resume(large);
  CHECK(resumed.epoch() == 3);
  CHECK(resumed.start() == 4);

  const SamplerState small = SamplerState::from_text(
      "distsampler-state v1 dataset_size=10 seed=42 epoch=3 consumed=4 fingerprint=0xb2e62b56db67cce9");
  DistributedSampler<> tiny(10, World(0, 2), SamplerOptions().with_seed(42));
  CHECK_THROWS_WITH(tiny.resume(small),
                    Catch::Matchers::Contains("engine differs (state feistel/1, sampler feistel/2; version 1 and 2 "
                                              "states were written by version 1 of their engine"));
  CHECK(tiny.start() == 0);

  const SamplerState batch = SamplerState::from_text(
      "distsampler-state v1 dataset_size=1000 seed=42 epoch=0 consumed=48 fingerprint=0x525b3db9088c6bc8");
  DistributedBatchSampler<> batches(
      1000, World(0, 4), BatchSamplerOptions().with_micro_batch_size(2).with_accumulation_steps(1).with_seed(42));
  batches.resume(batch);
  CHECK(batches.start() == 48);
}
