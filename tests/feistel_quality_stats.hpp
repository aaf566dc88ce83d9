// Shuffle-quality statistics shared by tests/test_feistel_quality.cpp and bench/feistel_quality_report.cpp:
// FeistelPermutation against a true Fisher-Yates shuffle. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_FEISTEL_QUALITY_STATS_HPP
#define DISTSAMPLER_TESTS_FEISTEL_QUALITY_STATS_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <distsampler/feistel.hpp>

namespace feistel_quality {

// ---------------------------------------------------------------------------------------
// The reference: a uniform shuffle that depends on nothing in the library.
// xoshiro256** (Blackman & Vigna), seeded by its authors' recommended SplitMix64
// expansion, and an unbiased bounded draw by rejection. No std::shuffle, no
// std::*_distribution: identical on every standard library.
// ---------------------------------------------------------------------------------------
class ReferenceRng {
 public:
  explicit ReferenceRng(std::uint64_t seed) noexcept {
    std::uint64_t z = seed;
    for (auto& word : s_) {
      z += 0x9e3779b97f4a7c15u;
      std::uint64_t t = z;
      t = (t ^ (t >> 30)) * 0xbf58476d1ce4e5b9u;
      t = (t ^ (t >> 27)) * 0x94d049bb133111ebu;
      word = t ^ (t >> 31);
    }
  }

  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, bound), bound >= 1: draws below 2^64 mod bound are rejected, so
  // every residue has the same number of accepted draws.
  std::uint64_t below(std::uint64_t bound) noexcept {
    const std::uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4] = {};
};

/// A uniformly random permutation of [0, n) (Durstenfeld's Fisher-Yates).
inline std::vector<std::uint64_t> fisher_yates(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint64_t> v(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  ReferenceRng rng(seed);
  for (std::uint64_t i = n; i > 1; --i) {
    const std::uint64_t j = rng.below(i);
    std::swap(v[static_cast<std::size_t>(i - 1)], v[static_cast<std::size_t>(j)]);
  }
  return v;
}

/// The first two values of a Fisher-Yates shuffle of [0, n), n >= 2, without
/// materialising n values (forward Fisher-Yates: position 0 takes a uniform value,
/// position 1 a uniform one of the remaining). By exchangeability this is the law of
/// the values at any two distinct positions of a uniform shuffle.
inline std::pair<std::uint64_t, std::uint64_t> fisher_yates_pair(std::uint64_t n, ReferenceRng& rng) {
  const std::uint64_t first = rng.below(n);
  std::uint64_t second = 1 + rng.below(n - 1);  // position drawn among 1 .. n-1
  // After swapping positions 0 and `first`, position `first` holds the value 0.
  if (second == first) second = 0;
  return {first, second};
}

/// The whole epoch order of FeistelPermutation (n, seed, epoch).
inline std::vector<std::uint64_t> feistel(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch = 0) {
  std::vector<std::uint64_t> v(static_cast<std::size_t>(n));
  distsampler::FeistelPermutation(n, seed, epoch).fill(0, n, v.data());
  return v;
}

/// The seed offset of the reference shuffles: far from the seeds Feistel is run with (any
/// fixed offset works), so the two sides never share a stream.
inline constexpr std::uint64_t reference_seed = 0x5eed0f0f15e0000u;

/// The two orders the statistics compare, as functions of (n, seed).
inline std::vector<std::uint64_t> feistel_order(std::uint64_t n, std::uint64_t seed) { return feistel(n, seed); }
inline std::vector<std::uint64_t> reference_order(std::uint64_t n, std::uint64_t seed) {
  return fisher_yates(n, reference_seed + seed);
}

// ---------------------------------------------------------------------------------------
// Statistics. Each returns the value and the acceptance threshold derived from the
// statistic's distribution under a uniform shuffle (never from observed values).
// ---------------------------------------------------------------------------------------
struct Result {
  double value = 0;      // the statistic (chi-square, |correlation|, |deviation|)
  double expected = 0;   // its mean (or centre) under a uniform shuffle
  double threshold = 0;  // accept when value <= threshold: expected + 6 sigma
  [[nodiscard]] bool ok() const noexcept { return value <= threshold; }
};

inline double chi_square_threshold(double df) { return df + 6.0 * std::sqrt(2.0 * df); }

/// (a) Position uniformity: over `seeds` shuffles of [0, n), the n x n matrix counting
/// value v at position i. With both margins fixed by construction, (n-1)/n times the
/// Pearson chi-square is chi-square with (n-1)^2 degrees of freedom as seeds grows.
template <class Shuffle>
Result position_uniformity(std::uint64_t n, std::uint64_t seeds, Shuffle&& shuffle) {
  std::vector<double> count(static_cast<std::size_t>(n * n), 0.0);
  for (std::uint64_t s = 0; s < seeds; ++s) {
    const std::vector<std::uint64_t> v = shuffle(n, s);
    for (std::uint64_t i = 0; i < n; ++i)
      count[static_cast<std::size_t>(i * n + v[static_cast<std::size_t>(i)])] += 1.0;
  }
  const double e = static_cast<double>(seeds) / static_cast<double>(n);
  double chi = 0;
  for (const double c : count) chi += (c - e) * (c - e) / e;
  const double df = static_cast<double>((n - 1) * (n - 1));
  return {chi * static_cast<double>(n - 1) / static_cast<double>(n), df, chi_square_threshold(df)};
}

/// (a') Exact uniformity for tiny n: how often each of the n! permutations appears over
/// `seeds` shuffles; chi-square with n! - 1 degrees of freedom.
template <class Shuffle>
Result permutation_uniformity(std::uint64_t n, std::uint64_t seeds, Shuffle&& shuffle) {
  std::uint64_t factorial = 1;
  for (std::uint64_t k = 2; k <= n; ++k) factorial *= k;
  std::vector<double> count(static_cast<std::size_t>(factorial), 0.0);
  for (std::uint64_t s = 0; s < seeds; ++s) {
    const std::vector<std::uint64_t> v = shuffle(n, s);
    // Lehmer code: the rank of v among the n! permutations.
    std::uint64_t rank = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t smaller_after = 0;
      for (std::uint64_t j = i + 1; j < n; ++j)
        smaller_after += v[static_cast<std::size_t>(j)] < v[static_cast<std::size_t>(i)];
      rank = rank * (n - i) + smaller_after;
    }
    count[static_cast<std::size_t>(rank)] += 1.0;
  }
  const double e = static_cast<double>(seeds) / static_cast<double>(factorial);
  double chi = 0;
  for (const double c : count) chi += (c - e) * (c - e) / e;
  const double df = static_cast<double>(factorial - 1);
  return {chi, df, chi_square_threshold(df)};
}

/// (b) Pairwise order: |P(value at a < value at b) - 1/2| over `seeds` shuffles.
/// The count is Binomial(seeds, 1/2), so the deviation's sigma is 1/(2 sqrt(seeds)).
/// `pair(seed)` returns the values at positions a and b.
template <class Pair>
Result pairwise_order(std::uint64_t seeds, Pair&& pair) {
  std::uint64_t below = 0;
  for (std::uint64_t s = 0; s < seeds; ++s) {
    const std::pair<std::uint64_t, std::uint64_t> v = pair(s);
    below += v.first < v.second;
  }
  const double dev = std::fabs(static_cast<double>(below) / static_cast<double>(seeds) - 0.5);
  return {dev, 0.0, 6.0 * 0.5 / std::sqrt(static_cast<double>(seeds))};
}

/// Pearson correlation of x[i] and y[i + lag], i in [0, size - lag).
inline double correlation(const std::vector<std::uint64_t>& x, const std::vector<std::uint64_t>& y,
                          std::size_t lag = 0) {
  const std::size_t m = x.size() - lag;
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < m; ++i) {
    mx += static_cast<double>(x[i]);
    my += static_cast<double>(y[i + lag]);
  }
  mx /= static_cast<double>(m);
  my /= static_cast<double>(m);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const double a = static_cast<double>(x[i]) - mx, b = static_cast<double>(y[i + lag]) - my;
    sxy += a * b;
    sxx += a * a;
    syy += b * b;
  }
  return sxy / std::sqrt(sxx * syy);
}

/// (c) and (d): |correlation| of two orders of [0, n) (values are ranks, so this is
/// also Spearman's rho). For independent uniform shuffles rho has mean 0 and sigma
/// 1/sqrt(n - 1) (approximately normal).
inline Result order_correlation(const std::vector<std::uint64_t>& x, const std::vector<std::uint64_t>& y,
                                std::size_t lag = 0) {
  const double m = static_cast<double>(x.size() - lag);
  return {std::fabs(correlation(x, y, lag)), 0.0, 6.0 / std::sqrt(m - 1.0)};
}

/// (e) One rank's share: the values at positions rank, rank + world_size, ... of `order`,
/// counted in `buckets` equal ranges of [0, n); chi-square with buckets - 1 degrees of
/// freedom (sampling without replacement only makes it smaller: the threshold is safe).
inline Result rank_share_uniformity(const std::vector<std::uint64_t>& order, std::uint64_t rank,
                                    std::uint64_t world_size, std::uint64_t buckets) {
  const std::uint64_t n = order.size();
  std::vector<double> count(static_cast<std::size_t>(buckets), 0.0);
  double total = 0;
  for (std::uint64_t i = rank; i < n; i += world_size) {
    // bucket = floor(value * buckets / n) without overflow for the sizes tested
    count[static_cast<std::size_t>(order[static_cast<std::size_t>(i)] * buckets / n)] += 1.0;
    total += 1.0;
  }
  double chi = 0;
  for (std::uint64_t b = 0; b < buckets; ++b) {
    // Exact expected share of bucket b: the number of values v < n with v * buckets / n == b.
    const std::uint64_t lo = (b * n + buckets - 1) / buckets, hi = ((b + 1) * n + buckets - 1) / buckets;
    const double e = total * static_cast<double>(hi - lo) / static_cast<double>(n);
    chi += (count[static_cast<std::size_t>(b)] - e) * (count[static_cast<std::size_t>(b)] - e) / e;
  }
  const double df = static_cast<double>(buckets - 1);
  return {chi, df, chi_square_threshold(df)};
}

}  // namespace feistel_quality

#endif  // DISTSAMPLER_TESTS_FEISTEL_QUALITY_STATS_HPP
