// distsampler internal: exact small permutations (n <= 16) kept in one 64-bit word of nibbles.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_SMALL_PERMUTATION_HPP
#define DISTSAMPLER_DETAIL_SMALL_PERMUTATION_HPP

#include <cstdint>

#include "bounded.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// Largest window drawn from one 64-bit key (a table of 16 nibbles).
inline constexpr std::uint64_t small_permutation_max = 16;

/// Element `i` of a permutation of [0, n) (1 <= n <= small_permutation_max, i < n) drawn
/// by Fisher-Yates from `key`, read as a fraction x in [0, 1): the draw for slot s is
/// floor(x * (s + 1)), then x becomes its fractional part (16! < 2^45, so every
/// permutation has probability within 2^-19 of 1/n!). The table lives in one 64-bit word
/// of nibbles; slot i is final once the draw for slot i is made, so the loop stops there.
/// O(n - i) multiplications, no division.
[[nodiscard]] constexpr std::uint64_t small_permutation_at(std::uint64_t key, std::uint64_t n,
                                                           std::uint64_t i) noexcept {
  std::uint64_t table = 0xfedcba9876543210u;
  for (std::uint64_t s = n - 1; s > 0 && s >= i; --s) {
    const std::uint64_t j = mulhi64(key, s + 1);
    key *= s + 1;
    const std::uint64_t diff = ((table >> (4 * s)) ^ (table >> (4 * j))) & 0xf;
    table ^= (diff << (4 * s)) | (diff << (4 * j));
  }
  return (table >> (4 * i)) & 0xf;
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_SMALL_PERMUTATION_HPP
