// distsampler tests: the portable 128-bit integer against the compiler's unsigned __int128, operator by operator.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include <distsampler/detail/mix.hpp>
#include <distsampler/detail/u128.hpp>

namespace detail = distsampler::detail;
using detail::U128Portable;

#if defined(DISTSAMPLER_PORTABLE_U128)
static_assert(std::is_same_v<detail::u128, U128Portable>, "DISTSAMPLER_PORTABLE_U128 selects the portable type");
#elif defined(__SIZEOF_INT128__)
__extension__ static_assert(std::is_same_v<detail::u128, unsigned __int128>, "the native type where there is one");
#endif
static_assert(std::is_trivially_copyable_v<U128Portable>);
static_assert(!std::is_convertible_v<U128Portable, std::uint64_t>, "narrowing is explicit");
static_assert(!std::is_convertible_v<int, U128Portable>, "only unsigned integers convert");
static_assert(U128Portable::from_limbs(1, 0) - U128Portable(1u) == U128Portable(UINT64_MAX));
static_assert(U128Portable::from_limbs(3, 7) / U128Portable(2u) == U128Portable::from_limbs(1, 0x8000000000000003u));

#if defined(__SIZEOF_INT128__)
namespace {

__extension__ using native = unsigned __int128;

native to_native(U128Portable x) { return static_cast<native>(x.high()) << 64 | x.low(); }
U128Portable from_native(native x) {
  return U128Portable::from_limbs(static_cast<std::uint64_t>(x >> 64), static_cast<std::uint64_t>(x));
}

// Edge values and random ones of every bit width, one and two limbs.
std::vector<native> operands() {
  const native one = 1, max64 = UINT64_MAX;
  std::vector<native> out{0,
                          1,
                          2,
                          3,
                          0xffffffffu,
                          native{0xffffffffu} + 1,
                          max64 - 1,
                          max64,
                          max64 + 1,
                          max64 + 2,
                          max64 << 32,
                          one << 127,
                          (one << 127) - 1,
                          (one << 127) + 1,
                          ~native{0},
                          ~native{0} - 1,
                          native{1} << 96,
                          (native{1} << 52) * 1024,
                          native{4611686018427387904u} * 3,
                          // Divisors and dividends where a base-2^32 digit estimate is too large.
                          (one << 63) + 1,
                          native{0xffffffff00000001u},
                          native{0x80000000ffffffffu},
                          (one << 32) + 1,
                          native{0x8000000000000001u} << 64 | 0xffffffffu,
                          max64 * ((one << 32) + 1),
                          native{0x7fffffff80000000u} << 64 | 0xffffffff80000000u};
  detail::SplitMix64 g(20260101);
  for (int bits = 1; bits <= 128; ++bits) {
    for (int k = 0; k < 3; ++k) {
      const native r = static_cast<native>(g()) << 64 | g();
      out.push_back(bits == 128 ? r : r & ((one << bits) - 1));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("U128Portable: +, -, *, comparisons and narrowing match unsigned __int128 on edge and random operands",
          "[detail][u128]") {
  const std::vector<native> values = operands();
  std::uint64_t checked = 0;
  for (const native a : values) {
    const U128Portable pa = from_native(a);
    REQUIRE(to_native(pa) == a);
    CHECK(static_cast<std::uint64_t>(pa) == static_cast<std::uint64_t>(a));
    for (const native b : values) {
      const U128Portable pb = from_native(b);
      CHECK(to_native(pa + pb) == a + b);
      CHECK(to_native(pa - pb) == a - b);
      CHECK(to_native(pa * pb) == a * b);
      U128Portable acc = pa;
      acc += pb;
      CHECK(to_native(acc) == a + b);
      acc -= pb;
      acc -= pb;
      CHECK(to_native(acc) == a - b);
      CHECK((pa == pb) == (a == b));
      CHECK((pa != pb) == (a != b));
      CHECK((pa < pb) == (a < b));
      CHECK((pa <= pb) == (a <= b));
      CHECK((pa > pb) == (a > b));
      CHECK((pa >= pb) == (a >= b));
      ++checked;
    }
  }
  CHECK(checked == values.size() * values.size());
}

TEST_CASE("U128Portable: / and % match unsigned __int128 for divisors of one and two limbs", "[detail][u128]") {
  const std::vector<native> values = operands();
  for (const native a : values) {
    for (const native b : values) {
      if (b == 0) continue;
      const U128Portable q = from_native(a) / from_native(b), r = from_native(a) % from_native(b);
      CHECK(to_native(q) == a / b);
      CHECK(to_native(r) == a % b);
    }
  }
  // The mixture's shapes: products of 64-bit values over 64-bit divisors.
  const native big = native{UINT64_MAX} * UINT64_MAX;
  CHECK(to_native(from_native(big) / U128Portable(UINT64_MAX)) == native{UINT64_MAX});
  CHECK(to_native(from_native(big) % U128Portable(UINT64_MAX - 1)) == big % (UINT64_MAX - 1));
  CHECK(to_native(from_native(big) / U128Portable(3u)) == big / 3);
}

TEST_CASE("U128Portable: << and >> match unsigned __int128 for every shift 0..127", "[detail][u128]") {
  for (const native a : operands()) {
    for (int s = 0; s < 128; ++s) {
      CHECK(to_native(from_native(a) << s) == a << s);
      CHECK(to_native(from_native(a) >> s) == a >> s);
    }
  }
}

TEST_CASE("U128Portable: to_double rounds to nearest, ties to even, as the native conversion", "[detail][u128]") {
  std::vector<native> values = operands();
  // Halfway cases and their neighbours above 2^64, where the sticky bit decides.
  for (int top = 64; top < 128; top += 7) {
    const native base = native{1} << top, half = native{1} << (top - 53);
    for (const native v : {base + half, base + half - 1, base + half + 1, base + 3 * half, base + 2 * half}) {
      values.push_back(v);
    }
  }
  for (const native a : values) {
    CHECK(detail::to_double(from_native(a)) == static_cast<double>(a));
    CHECK(detail::to_double(static_cast<detail::u128>(from_native(a).low())) ==
          static_cast<double>(from_native(a).low()));
  }
}
#endif
