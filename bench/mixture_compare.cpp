// Mixture samplers side by side: prefix error, per-block proportion error, build time, memory and time per index.
// SPDX-License-Identifier: MIT
//
// Compares distsampler's MixtureSchedule with two transcriptions written for this comparison from the
// published descriptions of the peers' algorithms:
//  - a Megatron-style blend table: position i goes to the source with the largest deficit
//    w_d * max(i, 1) - count_d (ties to the lowest d), precomputed for every position (1 byte of source and
//    8 bytes of sample index per position, built in O(N K));
//  - Grain-style random-access mixing: proportions scaled so the smallest is 100 and truncated to integers;
//    count_0(k) = k - floor(k (S - P_0) / S) and the rest peeled off the same way down the list; position k
//    goes to the source whose count grows from k to k + 1 (O(K) per index, no table).
// Weights are w_i proportional to 1 / (i + 1). Errors are measured over every prefix of N positions against
// the weights each method mixes by (Grain: its integer proportions, so its truncation's drift is left out).
//
// Usage: mixture_compare [N] [block]   (defaults 100000000 and 1024)
#include <distsampler/mixture/schedule.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Largest |count_i(k) - k w_i| over prefixes k <= n and largest |block count - G w_i| over whole blocks,
// from the source of each position in order. O(1) per position plus O(K) per block.
struct ErrorMeter {
  std::vector<double> w;
  std::uint64_t block;
  std::vector<std::uint64_t> count, in_block;
  double prefix = 0, per_block = 0;
  std::uint64_t k = 0;

  ErrorMeter(std::vector<double> weights, std::uint64_t g)
      : w(std::move(weights)), block(g), count(w.size(), 0), in_block(w.size(), 0) {}

  void add(std::size_t s) {
    // The error of source s is lowest just before its count grows and highest just after.
    prefix = std::max(prefix, std::fabs(static_cast<double>(count[s]) - static_cast<double>(k) * w[s]));
    ++count[s];
    ++in_block[s];
    ++k;
    prefix = std::max(prefix, std::fabs(static_cast<double>(count[s]) - static_cast<double>(k) * w[s]));
    if (k % block == 0) {
      for (std::size_t i = 0; i < w.size(); ++i) {
        per_block =
            std::max(per_block, std::fabs(static_cast<double>(in_block[i]) - static_cast<double>(block) * w[i]));
        in_block[i] = 0;
      }
    }
  }
  void finish() {
    for (std::size_t i = 0; i < w.size(); ++i) {
      prefix = std::max(prefix, std::fabs(static_cast<double>(count[i]) - static_cast<double>(k) * w[i]));
    }
  }
};

struct Row {
  std::string method;
  std::size_t k;
  double prefix, per_block, build_s, memory_mb, ns_per_index;
};

void print(const Row& r) {
  std::printf("| %-22s | %3zu | %8.3f | %8.3f | %12.3f | %12.1f | %9.1f |\n", r.method.c_str(), r.k, r.prefix,
              r.per_block, r.build_s * 1e3, r.memory_mb * 1e3, r.ns_per_index);
  std::fflush(stdout);
}

Row ours(const std::vector<double>& w, std::uint64_t n, std::uint64_t g) {
  namespace ds = distsampler;
  std::vector<std::uint64_t> sizes(w.size(), UINT64_MAX / 128);
  auto t = Clock::now();
  const ds::MixtureSchedule s(sizes, w, {}, g, "bench");
  const double build = seconds_since(t);
  const std::uint64_t key = 0x1234567;
  t = Clock::now();
  std::uint64_t sink = 0;
  const std::uint64_t timed = std::min<std::uint64_t>(n, 20000000);
  for (std::uint64_t p = 0; p < timed; ++p) sink += s.locate(p, key, false).source;
  const double ns = seconds_since(t) * 1e9 / static_cast<double>(timed);
  std::vector<double> norm(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) norm[i] = static_cast<double>(s.units(0, i)) / 4503599627370496.0;
  ErrorMeter m(norm, g);
  for (std::uint64_t p = 0; p < n; ++p) m.add(s.locate(p, key, false).source);
  m.finish();
  if (sink == 1) std::printf(" ");
  return {
      "distsampler mixture", w.size(), m.prefix, m.per_block, build, static_cast<double>(s.memory_bytes()) / 1e6, ns};
}

Row megatron(const std::vector<double>& w, std::uint64_t n, std::uint64_t g) {
  auto t = Clock::now();
  std::vector<std::uint8_t> source(n);
  std::vector<std::int64_t> sample(n);
  std::vector<std::int64_t> count(w.size(), 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    const double at = std::max(static_cast<double>(i), 1.0);
    std::size_t best = 0;
    double best_error = w[0] * at - static_cast<double>(count[0]);
    for (std::size_t d = 1; d < w.size(); ++d) {
      const double e = w[d] * at - static_cast<double>(count[d]);
      if (e > best_error) {
        best_error = e;
        best = d;
      }
    }
    source[i] = static_cast<std::uint8_t>(best);
    sample[i] = count[best]++;
  }
  const double build = seconds_since(t);
  t = Clock::now();
  std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < n; ++i) sink += source[i] + static_cast<std::uint64_t>(sample[i]);
  const double ns = seconds_since(t) * 1e9 / static_cast<double>(n);
  ErrorMeter m(w, g);
  for (std::uint64_t i = 0; i < n; ++i) m.add(source[i]);
  m.finish();
  if (sink == 1) std::printf(" ");
  return {"Megatron-style table", w.size(), m.prefix, m.per_block, build, static_cast<double>(n) * 9 / 1e6, ns};
}

// Grain-style: integer proportions, counts peeled off the list one source at a time.
struct Grain {
  std::vector<std::uint64_t> p;
  std::uint64_t total = 0;
  void counts(std::uint64_t k, std::vector<std::uint64_t>& out) const {
    std::uint64_t rest = total;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const std::uint64_t next =
          static_cast<std::uint64_t>(static_cast<distsampler::detail::u128>(k) * (rest - p[i]) / rest);
      out[i] = k - next;
      rest -= p[i];
      k = next;
    }
  }
  std::size_t source(std::uint64_t k, std::vector<std::uint64_t>& a, std::vector<std::uint64_t>& b) const {
    counts(k, a);
    counts(k + 1, b);
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (a[i] != b[i]) return i;
    }
    return 0;
  }
};

Row grain(const std::vector<double>& w, std::uint64_t n, std::uint64_t g) {
  auto t = Clock::now();
  Grain mix;
  const double lowest = *std::min_element(w.begin(), w.end());
  for (const double x : w) mix.p.push_back(static_cast<std::uint64_t>(x * (100.0 / lowest)));
  for (const std::uint64_t x : mix.p) mix.total += x;
  const double build = seconds_since(t);
  std::vector<std::uint64_t> a(w.size()), b(w.size());
  t = Clock::now();
  std::uint64_t sink = 0;
  const std::uint64_t timed = std::min<std::uint64_t>(n, 2000000);
  for (std::uint64_t k = 0; k < timed; ++k) sink += mix.source(k, a, b);
  const double ns = seconds_since(t) * 1e9 / static_cast<double>(timed);
  std::vector<double> norm;
  for (const std::uint64_t x : mix.p) norm.push_back(static_cast<double>(x) / static_cast<double>(mix.total));
  ErrorMeter m(norm, g);
  // Sequentially, count_i(k + 1) is count_i(k) plus one for the source of position k.
  for (std::uint64_t k = 0; k < n; ++k) {
    mix.counts(k + 1, b);
    std::size_t s = 0;
    while (b[s] == m.count[s]) ++s;
    m.add(s);
  }
  m.finish();
  if (sink == 1) std::printf(" ");
  return {"Grain-style mix", w.size(), m.prefix, m.per_block, build, static_cast<double>(w.size()) * 8 / 1e6, ns};
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000000;
  const std::uint64_t g = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024;
  std::printf("N = %llu positions, block G = %llu, weights w_i ~ 1/(i+1)\n\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(g));
  std::printf("| method                 |   K | prefix   | block    | build ms     | memory KB    | ns/index  |\n");
  std::printf("|------------------------|----:|---------:|---------:|-------------:|-------------:|----------:|\n");
  for (const std::size_t k : {std::size_t{2}, std::size_t{8}, std::size_t{64}}) {
    std::vector<double> w;
    double sum = 0;
    for (std::size_t i = 0; i < k; ++i) sum += 1.0 / static_cast<double>(i + 1);
    for (std::size_t i = 0; i < k; ++i) w.push_back(1.0 / static_cast<double>(i + 1) / sum);
    print(ours(w, n, g));
    print(megatron(w, n, g));
    print(grain(w, n, g));
  }
}
