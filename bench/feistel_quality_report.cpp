// Prints docs/QUALITY.md's table: each shuffle-quality statistic for FeistelPermutation and for a true Fisher-Yates
// shuffle, with the test threshold. SPDX-License-Identifier: MIT
//
// The statistics, seeds and sizes are those of tests/test_feistel_quality.cpp.
// Usage: feistel_quality_report > table.md   (about a minute with -O3)

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
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

void row(const std::string& statistic, const std::string& setting, const fq::Result& feistel,
         const fq::Result& reference) {
  std::printf("| %s | %s | %.4g | %.4g | %.4g | %.4g | %s |\n", statistic.c_str(), setting.c_str(), feistel.value,
              reference.value, feistel.expected, feistel.threshold, feistel.ok() && reference.ok() ? "pass" : "FAIL");
}

std::string u(std::uint64_t v) { return std::to_string(v); }

}  // namespace

int main() {
  std::printf("| statistic | setting | Feistel | Fisher-Yates | uniform mean | threshold | |\n");
  std::printf("|---|---|---|---|---|---|---|\n");

  for (const auto& ns : {std::pair<std::uint64_t, std::uint64_t>{16, 60000}, {17, 60000}, {32, 60000}, {257, 30000}}) {
    const std::uint64_t n = ns.first, seeds = ns.second;
    row("(a) position x value chi-square", "n=" + u(n) + ", " + u(seeds) + " seeds",
        fq::position_uniformity(n, seeds, feistel_order), fq::position_uniformity(n, seeds, reference_order));
  }
  for (const std::uint64_t n : {std::uint64_t{3}, std::uint64_t{4}, std::uint64_t{5}}) {
    row("(a') permutation chi-square", "n=" + u(n) + ", 60000 seeds",
        fq::permutation_uniformity(n, 60000, feistel_order), fq::permutation_uniformity(n, 60000, reference_order));
  }

  for (const std::uint64_t n : {std::uint64_t{1000}, std::uint64_t{1} << 20, (std::uint64_t{1} << 20) + 1,
                                std::uint64_t{1'000'000'007}, ~std::uint64_t{0}}) {
    const std::uint64_t half = std::uint64_t{1} << (distsampler::detail::bit_width(n - 1) / 2);
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs = {
        {0, 1}, {1, 2}, {0, n - 1}, {n / 2 - 1, n / 2}, {half - 1, half}, {3, 3 + half}};
    const std::uint64_t seeds = 100000;
    for (const auto& ab : pairs) {
      const fq::Result feistel = fq::pairwise_order(seeds, [&](std::uint64_t s) {
        const FeistelPermutation p(n, s, 0);
        return std::make_pair(p(ab.first), p(ab.second));
      });
      fq::ReferenceRng rng(fq::reference_seed + n + ab.first);
      const fq::Result reference =
          fq::pairwise_order(seeds, [&](std::uint64_t) { return fq::fisher_yates_pair(n, rng); });
      row("(b) \\|P(p(a)<p(b)) - 1/2\\|", "n=" + u(n) + ", (a,b)=(" + u(ab.first) + "," + u(ab.second) + "), 1e5 seeds",
          feistel, reference);
    }
  }

  for (const std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{1'000'003}}) {
    std::vector<std::uint64_t> previous = fq::feistel(n, 1234, 0), reference_previous = reference_order(n, 0);
    for (std::uint64_t epoch = 1; epoch <= 4; ++epoch) {
      const std::vector<std::uint64_t> current = fq::feistel(n, 1234, epoch);
      const std::vector<std::uint64_t> reference_current = reference_order(n, epoch);
      row("(c) \\|Spearman\\| epoch e vs e+1", "n=" + u(n) + ", e=" + u(epoch - 1),
          fq::order_correlation(previous, current), fq::order_correlation(reference_previous, reference_current));
      const std::vector<std::uint64_t> crossed = fq::feistel(n, 1235, epoch - 1);
      row("(c) \\|Spearman\\| (s, e) vs (s+1, e-1)", "n=" + u(n) + ", e=" + u(epoch),
          fq::order_correlation(current, crossed),
          fq::order_correlation(reference_current, reference_order(n, 100 + epoch)));
      previous = current;
      reference_previous = reference_current;
    }
  }

  for (const std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{1'000'003}}) {
    const std::size_t half = std::size_t{1} << (distsampler::detail::bit_width(n - 1) / 2);
    const std::vector<std::uint64_t> order = fq::feistel(n, 99, 7), reference = reference_order(n, 7);
    for (const std::size_t lag : {std::size_t{1}, std::size_t{2}, std::size_t{8}, std::size_t{64}, half}) {
      row("(d) \\|corr(p(i), p(i+lag))\\|", "n=" + u(n) + ", lag=" + u(lag), fq::order_correlation(order, order, lag),
          fq::order_correlation(reference, reference, lag));
    }
  }

  for (const std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{1'000'003}}) {
    const std::vector<std::uint64_t> order = fq::feistel(n, 2024, 1), reference = reference_order(n, 1);
    for (std::uint64_t rank = 0; rank < 8; ++rank) {
      row("(e) rank share chi-square, W=8, 64 buckets", "n=" + u(n) + ", rank=" + u(rank),
          fq::rank_share_uniformity(order, rank, 8, 64), fq::rank_share_uniformity(reference, rank, 8, 64));
    }
  }
  return 0;
}
