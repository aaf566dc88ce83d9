// distsampler tests: AliasTable and WeightedSampler (with and without replacement), ranks, resume and errors.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <distsampler/weighted/weighted_sampler.hpp>

using distsampler::AliasTable;
using distsampler::SamplerState;
using distsampler::state_error;
using distsampler::Tail;
using distsampler::WeightedSampler;
using distsampler::WeightedSamplerOptions;
using distsampler::World;

TEST_CASE("weighted: the alias table's columns add up to each weight's share", "[weighted]") {
  const std::vector<double> w{5, 0, 1, 3, 0.5, 10, 0.25};
  const AliasTable table(w, "t");
  double sum = 0;
  for (const double x : w) sum += x;
  std::vector<double> p(w.size(), 0);
  for (std::uint64_t j = 0; j < table.size(); ++j) {
    const double keep = std::ldexp(static_cast<double>(table.threshold(j)), -64);
    p[j] += keep / static_cast<double>(w.size());
    p[table.alias(j)] += (1 - keep) / static_cast<double>(w.size());
  }
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(p[i] == Approx(w[i] / sum).margin(1e-12));
}

TEST_CASE("weighted: with replacement, ranks split the epoch's draws and frequencies follow the weights",
          "[weighted]") {
  const std::vector<double> w{1, 2, 0, 4, 8};
  const auto opts = WeightedSamplerOptions().with_seed(5).with_num_samples(30000).with_tail(Tail::drop);
  WeightedSampler one(w, World(0, 1), opts);
  std::vector<std::uint64_t> all = one.indices();
  std::vector<std::uint64_t> merged(all.size());
  for (std::uint64_t r = 0; r < 3; ++r) {
    WeightedSampler s(w, World(r, 3), opts);
    const auto mine = s.indices();
    for (std::size_t i = 0; i < mine.size(); ++i) merged[i * 3 + r] = mine[i];
  }
  CHECK(merged == all);
  std::vector<double> freq(w.size(), 0);
  for (const std::uint64_t i : all) freq[i] += 1;
  CHECK(freq[2] == 0);
  // Binomial standard deviation is below 90 here; 5 of them.
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(std::fabs(freq[i] - 30000 * w[i] / 15) < 450);
  WeightedSampler next = one;
  next.set_epoch(1);
  CHECK(next.indices() != all);
}

TEST_CASE("weighted: without replacement each epoch is a weighted shuffle of the positive weights", "[weighted]") {
  const std::vector<double> w{1, 0, 2, 4, 8, 1};
  WeightedSampler s(w, World(0, 1), WeightedSamplerOptions().with_num_samples(5).with_replacement(false));
  std::vector<double> first(w.size(), 0);
  for (std::uint64_t e = 0; e < 3000; ++e) {
    s.set_epoch(e);
    const auto order = s.indices();
    CHECK(std::set<std::uint64_t>(order.begin(), order.end()).size() == 5);
    CHECK(std::find(order.begin(), order.end(), 1) == order.end());
    first[order[0]] += 1;
  }
  // P(first = i) = w_i / 16: 3000 * 8 / 16 = 1500 for index 4, sd about 27.
  CHECK(std::fabs(first[4] - 1500) < 140);
  CHECK(std::fabs(first[0] - 187.5) < 70);
}

TEST_CASE("weighted: resume on another world reads the rest exactly once", "[weighted]") {
  const std::vector<double> w{3, 1, 4, 1, 5, 9, 2, 6};
  for (const bool replacement : {true, false}) {
    const auto opts = WeightedSamplerOptions().with_seed(11).with_replacement(replacement).with_tail(Tail::uneven);
    WeightedSampler a(w, World(1, 2), opts);
    const SamplerState saved = SamplerState::from_text(a.state(2).to_text());
    CHECK(saved.consumed == 4);
    std::multiset<std::uint64_t> rest;
    for (std::uint64_t r = 0; r < 3; ++r) {
      WeightedSampler b(w, World(r, 3), opts);
      b.resume(saved);
      for (const std::uint64_t i : b.indices()) rest.insert(i);
    }
    std::multiset<std::uint64_t> want;
    for (std::uint64_t p = 4; p < 8; ++p) want.insert(a.index_at_position(p));
    CHECK(rest == want);
  }
}

TEST_CASE("weighted: bad weights and states throw naming the parameter", "[weighted][errors]") {
  const World one(0, 1);
  CHECK_THROWS_WITH(WeightedSampler({}, one), "WeightedSampler: weights is empty (expected at least one weight)");
  CHECK_THROWS_WITH(WeightedSampler({1.0, -2.0}, one),
                    "WeightedSampler: weights[1] is -2.000000 (expected a finite weight >= 0)");
  CHECK_THROWS_WITH(WeightedSampler({0.0, 0.0}, one),
                    "WeightedSampler: weights are all 0 or sum past the largest double (expected a positive, finite "
                    "sum)");
  CHECK_THROWS_WITH(WeightedSampler({1.0, 0.0, 1.0}, one, WeightedSamplerOptions().with_replacement(false)),
                    "WeightedSampler: num_samples 3 exceeds the 2 samples with positive weight (expected at most "
                    "that many without replacement)");
  CHECK_THROWS_WITH(WeightedSampler({1.0}, one, WeightedSamplerOptions().with_tail(static_cast<Tail>(5))),
                    "WeightedSampler: tail 5 is not a Tail (expected pad, drop or uneven)");
  WeightedSampler s({1.0, 2.0}, one);
  CHECK_THROWS_WITH(s.state(3), "WeightedSampler::state: samples_done 3 exceeds size 2 (expected 0..2)");
  const SamplerState st = s.state(1);
  WeightedSampler other({1.0, 3.0}, one);
  CHECK_THROWS_WITH(other.resume(st), Catch::StartsWith("WeightedSampler: weights differ (state layout 0x"));
  CHECK_THROWS_AS(other.resume(st), state_error);
  CHECK_THROWS_WITH(s[2], "WeightedSampler: i 2 is out of range for size 2 (expected 0..1)");
}
