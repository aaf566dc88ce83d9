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

/// The nibble table (entry i in bits 4i..4i+3) of a permutation of [0, n) (1 <= n <=
/// small_permutation_max) drawn by Fisher-Yates from `key`, read as a fraction x in [0, 1):
/// for slot s = n - 1 down to 1 the draw is j = floor(x * (s + 1)), then x becomes its
/// fractional part and entries s and j swap (16! < 2^45, so every permutation has
/// probability within 2^-19 of 1/n!). Entries of slots >= `final_from` are final; the
/// loop stops once they are, so final_from = 0 gives the whole table.
/// O(n - final_from) multiplications, no division, no branch on the data.
[[nodiscard]] constexpr std::uint64_t small_permutation_table(std::uint64_t key, std::uint64_t n,
                                                              std::uint64_t final_from = 0) noexcept {
  std::uint64_t table = 0xfedcba9876543210u;
  for (std::uint64_t s = n - 1; s > 0 && s >= final_from; --s) {
    const std::uint64_t j = mulhi64(key, s + 1);
    key *= s + 1;
    const std::uint64_t diff = ((table >> (4 * s)) ^ (table >> (4 * j))) & 0xf;
    table ^= (diff << (4 * s)) | (diff << (4 * j));
  }
  return table;
}

/// multipliers[n][s] = n! / (s + 1)! for s < n <= small_permutation_max: the factor the
/// key of small_permutation_table has been multiplied by when slot s is drawn (< 2^45).
struct SmallPermutationMultipliers {
  std::uint64_t at[small_permutation_max + 1][small_permutation_max + 1] = {};
  constexpr SmallPermutationMultipliers() noexcept {
    for (std::uint64_t n = 1; n <= small_permutation_max; ++n) {
      for (std::uint64_t s = 0; s < n; ++s) {
        std::uint64_t product = 1;
        for (std::uint64_t t = s + 1; t < n; ++t) product *= t + 1;
        at[n][s] = product;
      }
    }
  }
};
inline constexpr SmallPermutationMultipliers small_permutation_multipliers{};

/// Element `i` of small_permutation_table(key, n) (i < n), without building the table:
/// slot i ends with what slot j_i held before draw i, and slot y last received, before
/// draw i, the value of slot s at the first draw s > i that picked y (j_s == y), so the
/// value is traced upwards from y = j_i. Each draw j_s = floor(x_s * (s + 1)) comes
/// from the key times its multiplier, independently of the others. O(n - i)
/// multiplications, no branch on the data.
[[nodiscard]] constexpr std::uint64_t small_permutation_at(std::uint64_t key, std::uint64_t n,
                                                           std::uint64_t i) noexcept {
  const std::uint64_t* multiplier = small_permutation_multipliers.at[n];
  std::uint64_t y = mulhi64(key * multiplier[i], i + 1);
  for (std::uint64_t s = i + 1; s < n; ++s) {
    const std::uint64_t j = mulhi64(key * multiplier[s], s + 1);
    y = j == y ? s : y;
  }
  return y;
}
}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_SMALL_PERMUTATION_HPP
