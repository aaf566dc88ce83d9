// distsampler internal: 64x64->128 high multiply and unbiased bounded draws, identical on every platform.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_BOUNDED_HPP
#define DISTSAMPLER_DETAIL_BOUNDED_HPP

#include <cstdint>

#include "mix.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// High 64 bits of a * b from 32-bit halves: the reference for mulhi64.
[[nodiscard]] constexpr std::uint64_t mulhi64_portable(std::uint64_t a, std::uint64_t b) noexcept {
  const std::uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (cross >> 32);
}

/// High 64 bits of a * b: one multiply where the compiler has a 128-bit integer type,
/// else mulhi64_portable; the same value either way.
[[nodiscard]] constexpr std::uint64_t mulhi64(std::uint64_t a, std::uint64_t b) noexcept {
#if defined(__SIZEOF_INT128__)
  __extension__ using u128 = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<u128>(a) * b) >> 64);
#else
  return mulhi64_portable(a, b);
#endif
}

/// Unbiased draw in [0, bound) (bound >= 1) from a SplitMix64 stream: Lemire's
/// multiply-shift with rejection. Identical on every platform.
[[nodiscard]] inline std::uint64_t bounded_draw(SplitMix64& stream, std::uint64_t bound) noexcept {
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t x = stream();
    if (x * bound >= threshold) return mulhi64(x, bound);
  }
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_BOUNDED_HPP
