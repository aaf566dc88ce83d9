// Statistical quality of FeistelPermutation, each statistic measured side by side with a true Fisher-Yates shuffle.
// SPDX-License-Identifier: MIT
//
// Every test is deterministic (fixed seeds) and its threshold comes from the
// statistic's distribution under a uniform shuffle: mean + 6 sigma for chi-square,
// 6 sigma for correlations and proportions. The Fisher-Yates reference must pass the
// same threshold, which checks the statistic itself. docs/QUALITY.md lists the values
// (bench/feistel_quality_report.cpp prints them).

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <tuple>
#include <utility>
#include <vector>

#include <distsampler/detail/mix.hpp>
#include <distsampler/feistel.hpp>

#include "feistel_quality_stats.hpp"

namespace {

using distsampler::FeistelPermutation;
namespace fq = feistel_quality;

using fq::feistel_order;
using fq::reference_order;

}  // namespace

TEST_CASE("Every position holds every value equally often across seeds", "[feistel][quality]") {
  // 16: exact table; 17 and 32: 16 rounds (17 walks almost half the domain); 257: 8 rounds.
  const auto sizes =
      GENERATE(table<std::uint64_t, std::uint64_t>({{16, 60000}, {17, 60000}, {32, 60000}, {257, 30000}}));
  const std::uint64_t n = std::get<0>(sizes), seeds = std::get<1>(sizes);
  CAPTURE(n, seeds);
  const fq::Result feistel = fq::position_uniformity(n, seeds, feistel_order);
  const fq::Result reference = fq::position_uniformity(n, seeds, reference_order);
  CAPTURE(feistel.value, reference.value, feistel.threshold);
  CHECK(reference.ok());
  CHECK(feistel.ok());
}

TEST_CASE("Tiny sizes draw every permutation equally often", "[feistel][quality]") {
  const std::uint64_t n = GENERATE(as<std::uint64_t>{}, 3, 4, 5);
  const std::uint64_t seeds = 60000;
  CAPTURE(n);
  const fq::Result feistel = fq::permutation_uniformity(n, seeds, feistel_order);
  const fq::Result reference = fq::permutation_uniformity(n, seeds, reference_order);
  CAPTURE(feistel.value, reference.value, feistel.threshold);
  CHECK(reference.ok());
  CHECK(feistel.ok());
}

TEST_CASE("Any two positions come in either order with probability one half", "[feistel][quality]") {
  const std::uint64_t n = GENERATE(as<std::uint64_t>{}, 1000, std::uint64_t{1} << 20, (std::uint64_t{1} << 20) + 1,
                                   1'000'000'007, ~std::uint64_t{0});
  const std::uint64_t half = std::uint64_t{1} << (distsampler::detail::bit_width(n - 1) / 2);  // right-half boundary
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs = {
      {0, 1}, {1, 2}, {0, n - 1}, {n / 2 - 1, n / 2}, {half - 1, half}, {3, 3 + half}};
  const std::uint64_t seeds = 100000;
  for (const auto& ab : pairs) {
    CAPTURE(n, ab.first, ab.second);
    const fq::Result feistel = fq::pairwise_order(seeds, [&](std::uint64_t s) {
      const FeistelPermutation p(n, s, 0);
      return std::make_pair(p(ab.first), p(ab.second));
    });
    fq::ReferenceRng rng(fq::reference_seed + n + ab.first);
    const fq::Result reference =
        fq::pairwise_order(seeds, [&](std::uint64_t) { return fq::fisher_yates_pair(n, rng); });
    CAPTURE(feistel.value, reference.value, feistel.threshold);
    CHECK(reference.ok());
    CHECK(feistel.ok());
  }
}

TEST_CASE("Consecutive epochs and neighbouring seeds give uncorrelated orders", "[feistel][quality]") {
  const std::uint64_t n = GENERATE(as<std::uint64_t>{}, std::uint64_t{1} << 20, 1'000'003);
  const std::uint64_t seed = 1234;
  std::vector<std::uint64_t> previous = fq::feistel(n, seed, 0);
  std::vector<std::uint64_t> reference_previous = reference_order(n, 0);
  for (std::uint64_t epoch = 1; epoch <= 4; ++epoch) {
    CAPTURE(n, epoch);
    const std::vector<std::uint64_t> current = fq::feistel(n, seed, epoch);
    const std::vector<std::uint64_t> reference_current = reference_order(n, epoch);
    const fq::Result feistel = fq::order_correlation(previous, current);
    const fq::Result reference = fq::order_correlation(reference_previous, reference_current);
    CAPTURE(feistel.value, reference.value, feistel.threshold);
    CHECK(reference.ok());
    CHECK(feistel.ok());
    // (seed, epoch) against (seed + 1, epoch - 1): a key of seed + epoch would make them equal.
    const fq::Result crossed = fq::order_correlation(current, fq::feistel(n, seed + 1, epoch - 1));
    const fq::Result reference_crossed = fq::order_correlation(reference_current, reference_order(n, 100 + epoch));
    CAPTURE(crossed.value, reference_crossed.value);
    CHECK(reference_crossed.ok());
    CHECK(crossed.ok());
    previous = current;
    reference_previous = reference_current;
  }
}

TEST_CASE("Nearby positions hold uncorrelated values", "[feistel][quality]") {
  const std::uint64_t n = GENERATE(as<std::uint64_t>{}, std::uint64_t{1} << 20, 1'000'003);
  const std::size_t half = std::size_t{1} << (distsampler::detail::bit_width(n - 1) / 2);
  const std::vector<std::uint64_t> order = fq::feistel(n, 99, 7);
  const std::vector<std::uint64_t> reference = reference_order(n, 7);
  for (const std::size_t lag : {std::size_t{1}, std::size_t{2}, std::size_t{8}, std::size_t{64}, half}) {
    CAPTURE(n, lag);
    const fq::Result f = fq::order_correlation(order, order, lag);
    const fq::Result r = fq::order_correlation(reference, reference, lag);
    CAPTURE(f.value, r.value, f.threshold);
    CHECK(r.ok());
    CHECK(f.ok());
  }
}

TEST_CASE("Each rank's strided share spreads over the whole index range", "[feistel][quality]") {
  const std::uint64_t n = GENERATE(as<std::uint64_t>{}, std::uint64_t{1} << 20, 1'000'003);
  const std::uint64_t world_size = 8, buckets = 64;
  const std::vector<std::uint64_t> order = fq::feistel(n, 2024, 1);
  const std::vector<std::uint64_t> reference = reference_order(n, 1);
  for (std::uint64_t rank = 0; rank < world_size; ++rank) {
    CAPTURE(n, rank);
    const fq::Result f = fq::rank_share_uniformity(order, rank, world_size, buckets);
    const fq::Result r = fq::rank_share_uniformity(reference, rank, world_size, buckets);
    CAPTURE(f.value, r.value, f.threshold);
    CHECK(r.ok());
    CHECK(f.ok());
  }
}
