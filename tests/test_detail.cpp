// distsampler tests: internal building blocks (high multiply, bounded draws, small permutations, decimals, messages).
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <distsampler/detail/bounded.hpp>
#include <distsampler/detail/checked.hpp>
#include <distsampler/detail/decimal.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/shards/detail/position_ranges.hpp>
#include <distsampler/detail/small_permutation.hpp>
#include <distsampler/state/format.hpp>
#include <distsampler/error.hpp>

namespace detail = distsampler::detail;

namespace {

// Pearson's chi-square of `counts` against equal expected counts.
double chi_square(const std::vector<std::uint64_t>& counts) {
  std::uint64_t total = 0;
  for (const std::uint64_t c : counts) total += c;
  const double expected = static_cast<double>(total) / static_cast<double>(counts.size());
  double sum = 0;
  for (const std::uint64_t c : counts) {
    const double d = static_cast<double>(c) - expected;
    sum += d * d / expected;
  }
  return sum;
}

}  // namespace

TEST_CASE("mulhi64 is the high word of the 128-bit product, with or without a 128-bit type", "[detail][bounded]") {
  STATIC_REQUIRE(detail::mulhi64(0, UINT64_MAX) == 0);
  STATIC_REQUIRE(detail::mulhi64(UINT64_MAX, UINT64_MAX) == UINT64_MAX - 1);  // (2^64 - 1)^2 = 2^128 - 2^65 + 1
  STATIC_REQUIRE(detail::mulhi64(std::uint64_t{1} << 32, std::uint64_t{1} << 32) == 1);
  STATIC_REQUIRE(detail::mulhi64(std::uint64_t{1} << 63, 2) == 1);
  STATIC_REQUIRE(detail::mulhi64(UINT64_MAX, 7) == 6);
  STATIC_REQUIRE(detail::mulhi64_portable(UINT64_MAX, UINT64_MAX) == UINT64_MAX - 1);
  STATIC_REQUIRE(detail::mulhi64_portable(0xffffffffu, 0xffffffffu) == 0);
  // 0xffffffff00000001 * 0xffffffff00000001: the cross terms carry into the high word.
  STATIC_REQUIRE(detail::mulhi64_portable(0xffffffff00000001u, 0xffffffff00000001u) == 0xfffffffe00000002u);
  const std::uint64_t edges[] = {0,
                                 1,
                                 2,
                                 0xffffffffu,
                                 0x100000000u,
                                 0x100000001u,
                                 0x8000000000000000u,
                                 0xffffffff00000000u,
                                 UINT64_MAX - 1,
                                 UINT64_MAX};
  for (const std::uint64_t a : edges) {
    for (const std::uint64_t b : edges) {
      CAPTURE(a, b);
      CHECK(detail::mulhi64(a, b) == detail::mulhi64_portable(a, b));
    }
  }
  detail::SplitMix64 rng(11);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);
    REQUIRE(detail::mulhi64(a, b) == detail::mulhi64_portable(a, b));
  }
}

TEST_CASE("bounded_draw stays in range, is deterministic and uniform", "[detail][bounded]") {
  SECTION("range, for small, odd, large and extreme bounds") {
    for (const std::uint64_t bound : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{7},
                                      std::uint64_t{0x100000001u}, (std::uint64_t{1} << 63) + 1, UINT64_MAX}) {
      CAPTURE(bound);
      detail::SplitMix64 stream(bound);
      for (int i = 0; i < 20000; ++i) REQUIRE(detail::bounded_draw(stream, bound) < bound);
    }
  }
  SECTION("the first accepted word, scaled by a high multiply") {
    // 2^63 + 1 rejects almost half of all words: the draw is the first word x with
    // x * bound (mod 2^64) >= (2^64 - bound) mod bound, scaled to mulhi64(x, bound).
    const std::uint64_t bound = (std::uint64_t{1} << 63) + 1, threshold = (std::uint64_t{1} << 63) - 1;
    detail::SplitMix64 stream(5), words(5);
    int rejected = 0;
    for (int i = 0; i < 2000; ++i) {
      std::uint64_t x = words();
      while (x * bound < threshold) {
        x = words();
        ++rejected;
      }
      REQUIRE(detail::bounded_draw(stream, bound) == detail::mulhi64_portable(x, bound));
    }
    // Each draw rejects a geometric number of words, mean 1 and variance 2: 2000 +- 3 * 63.
    CHECK(rejected > 1800);
    CHECK(rejected < 2200);
  }
  SECTION("uniform counts for a bound that does not divide 2^64") {
    // Fixed seed; the 0.001 quantile of chi-square with 5 degrees of freedom is 20.5.
    detail::SplitMix64 stream(2024);
    std::vector<std::uint64_t> counts(6);
    for (int i = 0; i < 60000; ++i) ++counts[detail::bounded_draw(stream, 6)];
    CHECK(chi_square(counts) < 20.5);
  }
  SECTION("no multiply-shift bias for a bound of two thirds of 2^64") {
    // Without rejection, floor(x * bound / 2^64) hits every even value from two words x
    // and every odd value from one: 2/3 of the draws would be even. Rejection makes it 1/2.
    detail::SplitMix64 stream(77);
    const std::uint64_t bound = 0xaaaaaaaaaaaaaaaau;
    std::uint64_t even = 0;
    for (int i = 0; i < 30000; ++i) even += detail::bounded_draw(stream, bound) % 2 == 0 ? 1u : 0u;
    CHECK(even > 14740);  // 15000 +- 3 standard deviations (87); 20000 without rejection
    CHECK(even < 15260);
  }
}

TEST_CASE("small_permutation is a bijection for every n and key, and its element matches its table",
          "[detail][small_permutation]") {
  // Key 0 draws slot 0 every time: for n = 3, swap(2, 0) then swap(1, 0) gives [1, 2, 0].
  STATIC_REQUIRE(detail::small_permutation_table(0, 3) == 0xfedcba9876543021u);
  // Key 2^64 - 1 (a fraction just below 1) draws slot s itself every time: the identity.
  STATIC_REQUIRE(detail::small_permutation_table(UINT64_MAX, 16) == 0xfedcba9876543210u);
  STATIC_REQUIRE(detail::small_permutation_at(0, 3, 0) == 1);
  STATIC_REQUIRE(detail::small_permutation_at(0, 3, 2) == 0);
  STATIC_REQUIRE(detail::small_permutation_table(12345, 1) == 0xfedcba9876543210u);
  detail::SplitMix64 keys(3);
  for (std::uint64_t n = 1; n <= detail::small_permutation_max; ++n) {
    for (int k = 0; k < 2000; ++k) {
      const std::uint64_t key = k == 0 ? 0 : k == 1 ? UINT64_MAX : keys();
      const std::uint64_t table = detail::small_permutation_table(key, n);
      std::uint64_t seen = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t v = (table >> (4 * i)) & 0xf;
        REQUIRE(v < n);
        REQUIRE(detail::small_permutation_at(key, n, i) == v);
        seen |= std::uint64_t{1} << v;
      }
      REQUIRE(seen == (std::uint64_t{1} << n) - 1);
      // Entries past n are untouched (the identity's nibbles).
      for (std::uint64_t i = n; i < 16; ++i) REQUIRE(((table >> (4 * i)) & 0xf) == i);
    }
  }
}

TEST_CASE("small_permutation draws every order of 4 elements equally often", "[detail][small_permutation]") {
  // 24 orders, 48000 SplitMix64 keys; the 0.001 quantile of chi-square with 23 degrees of
  // freedom is 49.7.
  detail::SplitMix64 keys(9);
  std::vector<std::uint64_t> counts(24);
  for (int k = 0; k < 48000; ++k) {
    const std::uint64_t t = detail::small_permutation_table(keys(), 4);
    std::array<std::uint64_t, 4> p{};
    for (std::uint64_t i = 0; i < 4; ++i) p[i] = (t >> (4 * i)) & 0xf;
    // Lehmer code: the rank of the order among all 24.
    std::uint64_t rank = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      std::uint64_t smaller = 0;
      for (std::size_t j = i + 1; j < 4; ++j) smaller += p[j] < p[i] ? 1u : 0u;
      rank = rank * (4 - i) + smaller;
    }
    ++counts[rank];
  }
  for (const std::uint64_t c : counts) CHECK(c > 0);
  CHECK(chi_square(counts) < 49.7);
}

TEST_CASE("parse_decimal accepts exactly the unsigned 64-bit decimals and names every error", "[detail][decimal]") {
  using detail::DecimalError;
  auto parsed = [](const char* text) { return detail::parse_decimal(text); };
  STATIC_REQUIRE(detail::parse_decimal("42").value == 42);
  CHECK(parsed("0").error == DecimalError::ok);
  CHECK(parsed("0").value == 0);
  CHECK(parsed("007").value == 7);
  CHECK(parsed("18446744073709551615").error == DecimalError::ok);
  CHECK(parsed("18446744073709551615").value == UINT64_MAX);
  CHECK(parsed("18446744073709551616").error == DecimalError::overflow);
  CHECK(parsed("99999999999999999999").error == DecimalError::overflow);
  CHECK(parsed("184467440737095516150").error == DecimalError::overflow);
  CHECK(parsed("").error == DecimalError::empty);
  CHECK(parsed("-1").error == DecimalError::sign);
  CHECK(parsed("+1").error == DecimalError::sign);
  CHECK(parsed("1-").error == DecimalError::sign);
  CHECK(parsed(" 1").error == DecimalError::space);
  CHECK(parsed("1 ").error == DecimalError::space);
  CHECK(parsed("1\t").error == DecimalError::space);
  CHECK(parsed("4\n").error == DecimalError::space);
  CHECK(parsed("1a").error == DecimalError::not_digit);
  CHECK(parsed("0x10").error == DecimalError::not_digit);
  CHECK(parsed("1.0").error == DecimalError::not_digit);
  CHECK(detail::parse_decimal(std::string_view("1\0", 2)).error == DecimalError::not_digit);
  // A failed parse carries no value.
  CHECK(parsed("12x").value == 0);
  CHECK(std::string(detail::describe(DecimalError::ok)).empty());
  CHECK(std::string(detail::describe(DecimalError::empty)) == "is empty (expected a decimal integer)");
  CHECK(std::string(detail::describe(DecimalError::sign)) == "has a sign (expected an unsigned decimal integer)");
  CHECK(std::string(detail::describe(DecimalError::space)) == "contains white space (expected only digits 0-9)");
  CHECK(std::string(detail::describe(DecimalError::not_digit)) ==
        "is not a decimal integer (expected only digits 0-9)");
  CHECK(std::string(detail::describe(DecimalError::overflow)) ==
        "overflows 64 bits (expected at most 18446744073709551615)");
}

TEST_CASE("out_of_range_message is the one phrasing of a value outside 0..bound-1", "[detail][errors]") {
  CHECK(detail::out_of_range_message("World", "rank", 4, "world_size", 4) ==
        "World: rank 4 is out of range for world_size 4 (expected 0..3)");
  CHECK(detail::out_of_range_message("Checker", "worker", 0, "num_workers", 0) ==
        "Checker: worker 0 is out of range for num_workers 0 (expected none: num_workers is 0)");
  CHECK(detail::out_of_range_message("X", "i", UINT64_MAX, "n", UINT64_MAX) ==
        "X: i 18446744073709551615 is out of range for n 18446744073709551615 (expected 0..18446744073709551614)");
  CHECK_THROWS_AS(detail::throw_out_of_range("Partition", "rank", 9, "world_size", 2), distsampler::config_error);
  CHECK_THROWS_WITH(detail::throw_out_of_range("Partition", "rank", 9, "world_size", 2),
                    "Partition: rank 9 is out of range for world_size 2 (expected 0..1)");
}

TEST_CASE("State names are escaped to one spelling", "[detail][state]") {
  CHECK(detail::escape_name("torch-v2.7") == "torch-v2.7");
  CHECK(detail::escape_name("a_b+c") == "a_b+c");
  CHECK(detail::escape_name("shard-v2 shuffle streams=64") == "shard-v2%20shuffle%20streams%3D64");
  CHECK(detail::escape_name("a/b%") == "a%2Fb%25");
  CHECK(detail::escape_name(std::string("\xff\n", 2)) == "%FF%0A");
  CHECK(detail::hex64(0xabcu) == "0x0000000000000abc");
}

TEST_CASE("normalize_positions joins elements touching the prefix and keeps the set of positions",
          "[detail][position_ranges]") {
  using distsampler::PositionRange;
  using distsampler::PositionSet;
  using distsampler::StridedRange;
  // Two interleaved entries whose first elements continue the prefix [0, 4) one after the
  // other: [4, 6) joins, then [6, 8); the entry at 6 keeps one element, [16, 18): a range.
  PositionSet set;
  set.ranges = {{2, 4}, {0, 2}, {30, 31}};
  set.strided = {{6, 2, 10, 2}, {4, 2, 10, 3}};
  distsampler::detail::normalize_positions(set);
  CHECK(set.ranges == std::vector<PositionRange>{{0, 8}, {16, 18}, {30, 31}});
  CHECK(set.strided == std::vector<StridedRange>{{14, 2, 10, 2}});
  // An element straddling the prefix's end extends it; one inside it only leaves.
  PositionSet straddle;
  straddle.ranges = {{0, 5}};
  straddle.strided = {{4, 2, 5, 3}, {6, 3, 5, 2}};
  distsampler::detail::normalize_positions(straddle);
  // [4, 6) straddles 5 and [6, 9) follows (prefix [0, 9)); then [9, 11), whose entry's last
  // element [14, 16) becomes a range, and [11, 14): all of [0, 16).
  CHECK(straddle.ranges == std::vector<PositionRange>{{0, 16}});
  CHECK(straddle.strided.empty());
  // Nothing touches the prefix: only sorting.
  PositionSet apart;
  apart.strided = {{50, 1, 4, 2}, {20, 1, 4, 3}};
  distsampler::detail::normalize_positions(apart);
  CHECK(apart.ranges.empty());
  CHECK(apart.strided == std::vector<StridedRange>{{20, 1, 4, 3}, {50, 1, 4, 2}});
}

TEST_CASE("checked_product multiplies sizes and names every factor when the product overflows 64 bits",
          "[detail][checked]") {
  CHECK(detail::checked_mul("Who", "a", 6, "b", 7) == 42);
  CHECK(detail::checked_mul("Who", "a", UINT64_MAX, "b", 1) == UINT64_MAX);
  CHECK(detail::checked_mul("Who", "a", std::uint64_t{1} << 32, "b", (std::uint64_t{1} << 32) - 1) ==
        (std::uint64_t{1} << 32) * ((std::uint64_t{1} << 32) - 1));
  CHECK(detail::checked_product("Who", {}) == 1);
  // A zero factor makes the product 0 even after an overflowing pair.
  CHECK(detail::checked_product("Who", {{"a", UINT64_MAX}, {"b", 2}, {"c", 0}}) == 0);
  CHECK(detail::mul_fits(0, UINT64_MAX));
  CHECK_FALSE(detail::mul_fits(2, std::uint64_t{1} << 63));
  // The products the token sampler took unchecked: W x K wrapping to 0 and to 4.
  CHECK_THROWS_AS(detail::checked_mul("Who", "a", 2, "b", std::uint64_t{1} << 63), distsampler::config_error);
  CHECK_THROWS_WITH(detail::checked_mul("Who", "world_size", 2, "accumulation_steps", (std::uint64_t{1} << 63) + 2),
                    "Who: world_size 2 x accumulation_steps 9223372036854775810 overflows 64 bits");
  CHECK_THROWS_WITH(
      detail::checked_product("Who", {{"micro_batch_size", 1u << 31}, {"world_size", 1u << 31}, {"k", 1u << 3}}),
      "Who: micro_batch_size 2147483648 x world_size 2147483648 x k 8 overflows 64 bits");
}
