// Tests of FeistelPermutation: bijection for every size, inverse, batch fill, determinism (golden values) and the
// noexcept contract. SPDX-License-Identifier: MIT

#include <catch2/catch.hpp>

#include <algorithm>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include <distsampler/detail/mix.hpp>
#include <distsampler/feistel.hpp>

#include "sanitized.hpp"

namespace {

using distsampler::FeistelPermutation;

// Unoptimised and sanitizer builds sweep fewer sizes so that they finish in seconds;
// optimised builds run the full sweeps (about 2.4e9 evaluations: the sanitized dev build
// runs them in its unsanitized test program), and so does any build with
// DISTSAMPLER_TEST_THOROUGH defined.
#if defined(DISTSAMPLER_TEST_THOROUGH) || (defined(__OPTIMIZE__) && !defined(DISTSAMPLER_TEST_SANITIZED))
constexpr bool thorough = true;
#else
constexpr bool thorough = false;
#endif

// The contract the samplers rely on, checked at compile time.
static_assert(FeistelPermutation::random_access, "FeistelPermutation is random access");
static_assert(std::is_default_constructible<FeistelPermutation::options_type>::value,
              "options are default-constructible");
static_assert(std::is_nothrow_constructible<FeistelPermutation, std::uint64_t, std::uint64_t, std::uint64_t>::value,
              "construction never throws");
static_assert(std::is_nothrow_constructible<FeistelPermutation, std::uint64_t, std::uint64_t, std::uint64_t,
                                            const FeistelPermutation::options_type&>::value,
              "construction with options never throws");
static_assert(noexcept(std::declval<const FeistelPermutation&>()(std::uint64_t{0})), "operator() is noexcept");
static_assert(noexcept(std::declval<const FeistelPermutation&>().inverse(std::uint64_t{0})), "inverse is noexcept");
static_assert(noexcept(std::declval<const FeistelPermutation&>().size()), "size is noexcept");
static_assert(noexcept(std::declval<const FeistelPermutation&>().fill(0, 0, nullptr)), "fill is noexcept");
static_assert(std::is_same<decltype(std::declval<const FeistelPermutation&>()(std::uint64_t{0})), std::uint64_t>::value,
              "operator() returns std::uint64_t");
static_assert(std::is_nothrow_copy_constructible<FeistelPermutation>::value &&
                  std::is_trivially_copyable<FeistelPermutation>::value,
              "a plain value");

// Usable in constant expressions.
constexpr FeistelPermutation compile_time(1000, 7, 3);
static_assert(compile_time.size() == 1000, "constexpr construction");
static_assert(compile_time(999) < 1000 && compile_time.inverse(compile_time(999)) == 999, "constexpr evaluation");
static_assert(FeistelPermutation(10, 7, 3).inverse(FeistelPermutation(10, 7, 3)(4)) == 4, "constexpr table path");

// True when FeistelPermutation(n, seed, epoch) maps [0, n) onto [0, n): every image is
// below n, and the images set n distinct bits. Branch-free and chunked so that the
// sweeps over millions of sizes stay fast. `bits` is scratch space.
bool is_bijection(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch, std::vector<std::uint64_t>& bits) {
  const FeistelPermutation p(n, seed, epoch);
  bits.assign(static_cast<std::size_t>(n / 64 + 1), 0);
  constexpr std::uint64_t chunk = 2048;
  std::uint64_t images[chunk];
  for (std::uint64_t first = 0; first < n; first += chunk) {
    const std::uint64_t m = std::min(chunk, n - first);
    p.fill(first, m, images);
    std::uint64_t largest = 0;
    for (std::uint64_t i = 0; i < m; ++i) largest = std::max(largest, images[i]);
    if (largest >= n) return false;
    for (std::uint64_t i = 0; i < m; ++i)
      bits[static_cast<std::size_t>(images[i] / 64)] |= std::uint64_t{1} << (images[i] % 64);
  }
  std::uint64_t distinct = 0;
  for (const std::uint64_t word : bits) distinct += static_cast<std::uint64_t>(std::bitset<64>(word).count());
  return distinct == n;
}

std::vector<std::uint64_t> order_of(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch) {
  const FeistelPermutation p(n, seed, epoch);
  std::vector<std::uint64_t> order;
  for (std::uint64_t i = 0; i < n; ++i) order.push_back(p(i));
  return order;
}

}  // namespace

TEST_CASE("The empty permutation has size 0 and maps nothing", "[feistel]") {
  const FeistelPermutation p(0, 1, 2);
  CHECK(p.size() == 0);
  // Out-of-range positions come back unchanged (>= size()), never undefined behaviour.
  CHECK(p(0) == 0);
  CHECK(p.inverse(5) == 5);
  std::uint64_t out = 42;
  p.fill(0, 0, &out);
  CHECK(out == 42);
  CHECK(FeistelPermutation().size() == 0);
}

TEST_CASE("A permutation of one element maps 0 to 0 for every key", "[feistel]") {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const FeistelPermutation p(1, seed, seed * 3);
    CHECK(p.size() == 1);
    CHECK(p(0) == 0);
    CHECK(p.inverse(0) == 0);
  }
}

TEST_CASE("Positions past the end come back unchanged", "[feistel]") {
  for (const std::uint64_t n : {std::uint64_t{5}, std::uint64_t{1000}, std::uint64_t{1} << 40}) {
    const FeistelPermutation p(n, 3, 4);
    CHECK(p(n) == n);
    CHECK(p(n + 17) == n + 17);
    CHECK(p.inverse(n) == n);
    CHECK(p(~std::uint64_t{0}) == ~std::uint64_t{0});
  }
}

TEST_CASE("The domain and round count follow the size", "[feistel]") {
  CHECK(FeistelPermutation(0, 0, 0).rounds() == 0);
  CHECK(FeistelPermutation(16, 0, 0).rounds() == 0);   // exact table
  CHECK(FeistelPermutation(17, 0, 0).rounds() == 16);  // 5-bit domain
  CHECK(FeistelPermutation(256, 0, 0).rounds() == 16);
  CHECK(FeistelPermutation(257, 0, 0).rounds() == 8);  // 9-bit domain
  CHECK(FeistelPermutation(~std::uint64_t{0}, 0, 0).rounds() == 8);
}

namespace {

// Every size in [first, last] for one key (thin builds: up to 4096, then every `step`-th).
void check_every_size(std::uint64_t first, std::uint64_t last, std::uint64_t step, std::uint64_t seed,
                      std::uint64_t epoch) {
  std::vector<std::uint64_t> bits;
  const std::uint64_t dense_limit = thorough ? last : 4096;
  for (std::uint64_t n = first; n <= last; n += n < dense_limit ? 1 : step) {
    if (!is_bijection(n, seed, epoch, bits)) FAIL("not a bijection: n=" << n << " seed=" << seed << " epoch=" << epoch);
  }
  SUCCEED();
}

}  // namespace

// The sweep over every size up to 65536 is about 2.2e9 evaluations (10 to 15 s per half
// at -O2); it is split in two halves of about equal time so that `ctest -j` runs them in
// parallel. Thin builds check every size up to 4096 and every 251st above.
TEST_CASE("It is a bijection for every size from 1 to 43000", "[feistel][bijection]") {
  check_every_size(1, 43000, 251, 0, 0);
}

TEST_CASE("It is a bijection for every size from 43001 to 65536", "[feistel][bijection]") {
  check_every_size(43001, 65536, 251, 0, 0);
}

TEST_CASE("It is a bijection for every 61st size up to 65536 under other keys", "[feistel][bijection]") {
  for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{0xdeadbeef}, ~std::uint64_t{0}}) {
    std::vector<std::uint64_t> bits;
    for (std::uint64_t n = 1; n <= 65536; n += thorough ? 61 : 251) {
      if (!is_bijection(n, seed, 5, bits)) FAIL("not a bijection: n=" << n << " seed=" << seed << " epoch=5");
    }
  }
  SUCCEED();
}

TEST_CASE("It is a bijection around every power of two up to 2^24", "[feistel][bijection]") {
  std::vector<std::uint64_t> bits;
  const unsigned max_k = thorough ? 24 : 20;
  for (unsigned k = 1; k <= max_k; ++k) {
    const std::uint64_t power = std::uint64_t{1} << k;
    for (const std::uint64_t n : {power - 1, power, power + 1}) {
      for (const std::uint64_t seed : {std::uint64_t{42}, std::uint64_t{1} << 63}) {
        CAPTURE(k, n, seed);
        REQUIRE(is_bijection(n, seed, 1, bits));
      }
    }
  }
}

TEST_CASE("The inverse undoes the permutation on every position of small sizes", "[feistel]") {
  for (std::uint64_t n = 1; n <= 2100; n += 13) {
    const FeistelPermutation p(n, n * 7, 2);
    for (std::uint64_t i = 0; i < n; ++i) {
      if (p.inverse(p(i)) != i || p(p.inverse(i)) != i) FAIL("inverse mismatch: n=" << n << " i=" << i);
    }
  }
  SUCCEED();
}

TEST_CASE("Huge sizes stay in range and invert exactly", "[feistel]") {
  const std::uint64_t n = GENERATE(as<std::uint64_t>{}, (std::uint64_t{1} << 32) + 1, std::uint64_t{1} << 40,
                                   (std::uint64_t{1} << 63) + 12345, ~std::uint64_t{0} - 1, ~std::uint64_t{0});
  CAPTURE(n);
  const FeistelPermutation p(n, 0x0123456789abcdefu, 77);
  std::vector<std::uint64_t> sampled, images;
  // Both ends of the range, and positions spread over it by a multiplicative walk.
  for (std::uint64_t i = 0; i < 2000; ++i) {
    sampled.push_back(i);
    sampled.push_back(n - 1 - i);
  }
  std::uint64_t x = 1;
  for (int i = 0; i < 20000; ++i) {
    x = distsampler::detail::splitmix64(x);
    sampled.push_back(x % n);
  }
  for (const std::uint64_t i : sampled) {
    const std::uint64_t image = p(i);
    if (image >= n) FAIL("out of range: p(" << i << ") = " << image);
    if (p.inverse(image) != i) FAIL("p^-1(p(" << i << ")) != " << i);
    if (p(p.inverse(i)) != i) FAIL("p(p^-1(" << i << ")) != " << i);
    images.push_back(image);
  }
  // Distinct positions, distinct images.
  std::sort(sampled.begin(), sampled.end());
  std::sort(images.begin(), images.end());
  const auto distinct = [](std::vector<std::uint64_t> v) { return std::unique(v.begin(), v.end()) - v.begin(); };
  CHECK(distinct(sampled) == distinct(images));
}

TEST_CASE("fill gives the same values as operator()", "[feistel]") {
  struct Case {
    std::uint64_t n, first, count, stride;
  };
  const Case c = GENERATE(
      Case{0, 0, 0, 1}, Case{1, 0, 1, 1}, Case{7, 0, 7, 1}, Case{16, 3, 5, 2}, Case{17, 0, 17, 1},
      Case{1000, 0, 1000, 1}, Case{1000, 5, 199, 5}, Case{65537, 1, 65536, 1}, Case{1'000'000, 63, 15625, 64},
      Case{(std::uint64_t{1} << 20) + 1, 0, 1000, 1049}, Case{~std::uint64_t{0}, ~std::uint64_t{0} - 1000, 1000, 1},
      Case{~std::uint64_t{0}, 12345, 777, std::uint64_t{1} << 50},
      // stride 0 repeats a position
      Case{1000, 999, 10, 0},
      // positions past the end follow operator()'s rule
      Case{1000, 990, 30, 1}, Case{1000, 1000, 3, 1}, Case{~std::uint64_t{0} - 5, 7, 4, ~std::uint64_t{0} / 3});
  CAPTURE(c.n, c.first, c.count, c.stride);
  const FeistelPermutation p(c.n, 11, 12);
  std::vector<std::uint64_t> out(static_cast<std::size_t>(c.count) + 1, 0xabcdu);
  p.fill(c.first, c.count, out.data(), c.stride);
  for (std::uint64_t j = 0; j < c.count; ++j) {
    const std::uint64_t position = c.first + j * c.stride;  // wraps like fill's arithmetic
    if (out[static_cast<std::size_t>(j)] != p(position)) FAIL("fill differs at j=" << j);
  }
  CHECK(out.back() == 0xabcdu);  // nothing written past count
}

TEST_CASE("The order is a pure function of size, seed and epoch", "[feistel]") {
  CHECK(order_of(1000, 5, 6) == order_of(1000, 5, 6));
  const FeistelPermutation a(std::uint64_t{1} << 50, 5, 6), b(std::uint64_t{1} << 50, 5, 6);
  for (std::uint64_t i = 0; i < 1000; ++i) CHECK(a(i) == b(i));
}

TEST_CASE("Different epochs, seeds and sizes give different orders", "[feistel]") {
  std::vector<std::vector<std::uint64_t>> seen;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    for (std::uint64_t epoch = 0; epoch < 8; ++epoch) seen.push_back(order_of(1000, seed, epoch));
  }
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
  // Keyed through a mixer, not seed + epoch.
  CHECK(order_of(1000, 3, 5) != order_of(1000, 4, 4));
  CHECK(order_of(1000, 0, 1) != order_of(1000, 1, 0));
  // The size is part of the key: n and n + 1 are not the same order with one value added.
  const std::vector<std::uint64_t> shorter = order_of(1000, 3, 5), longer = order_of(1001, 3, 5);
  std::size_t same = 0;
  for (std::size_t i = 0; i < shorter.size(); ++i) same += shorter[i] == longer[i];
  CHECK(same < 20);
}

TEST_CASE("Golden values pin the order of format_version 2", "[feistel][golden]") {
  // These values ARE the shuffle every user of distsampler trains with. If this test
  // fails, every saved run resumes in a different order: a change here must be a
  // deliberate decision that bumps FeistelPermutation::format_version and is announced
  // in the release notes, never an accident of refactoring or of a compiler.
  // Format 2 was such a decision: the n <= 16 tables now come from the library's one
  // small-permutation routine (one stream word read as a fraction) instead of a second
  // Fisher-Yates with modulo-and-rejection draws, so those sizes changed order; every
  // n > 16 keeps its format 1 order (the values below are unchanged).
  // Values printed by tests/golden/feistel.py, an independent implementation of the
  // documented algorithm (not by this code).
  STATIC_REQUIRE(FeistelPermutation::format_version == 2);
  // Compile-time evaluation gives the same order as run time.
  STATIC_REQUIRE(FeistelPermutation(1000, 42, 1)(0) == 378);
  STATIC_REQUIRE(FeistelPermutation(10, 42, 0)(9) == 8);
  struct Golden {
    std::uint64_t n, seed, epoch;
    std::vector<std::uint64_t> first;  // p(0), p(1), ...
  };
  const std::vector<Golden> golden = {
      {1, 9, 9, {0}},
      {2, 0, 0, {1, 0}},
      {3, 5, 1, {1, 2, 0}},
      {10, 42, 0, {3, 9, 0, 4, 7, 1, 5, 6, 2, 8}},
      {16, 3, 4, {14, 10, 4, 6, 2, 3, 0, 7, 5, 1, 12, 8, 9, 13, 11, 15}},
      {17, 1, 2, {13, 16, 2, 10, 15, 4, 6, 14, 7, 3, 5, 9, 11, 8, 12, 0, 1}},
      {100, 0, 0, {57, 31, 84, 96, 89, 44, 91, 15, 75, 3, 25, 98, 17, 71, 1, 76}},
      {1000, 42, 1, {378, 195, 728, 413, 186, 862, 650, 827, 993, 935, 734, 349, 538, 290, 422, 780}},
      {1048577, 7, 3, {91230, 313513, 624298, 663070, 331715, 300502, 680578, 786258}},
      {1000000000, 42, 1, {208009317, 498836836, 573416409, 391602360, 794227510, 902391042, 644774656, 55320829}},
      {18446744073709551615u,
       0,
       0,
       {18416815350856000627u, 13737401066861419243u, 10262945844791032967u, 16912397619138323821u}},
  };
  for (const Golden& g : golden) {
    CAPTURE(g.n, g.seed, g.epoch);
    const FeistelPermutation p(g.n, g.seed, g.epoch);
    std::vector<std::uint64_t> actual;
    for (std::uint64_t i = 0; i < g.first.size(); ++i) actual.push_back(p(i));
    CHECK(actual == g.first);
  }
}
