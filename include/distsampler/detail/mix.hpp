// distsampler internal: integer mixing (splitmix64) and bit_width, the building blocks of the keyed permutations.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_MIX_HPP
#define DISTSAMPLER_DETAIL_MIX_HPP

#include <cstdint>

#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// The golden-ratio increment of SplitMix64 (Steele, Lea & Flood 2014).
inline constexpr std::uint64_t splitmix64_gamma = 0x9e3779b97f4a7c15u;

/// The SplitMix64 output function (Stafford's "variant 13" finaliser): a bijection on
/// 64-bit words in which every input bit affects every output bit.
/// O(1), noexcept, identical on every platform.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/// The first output of a SplitMix64 generator whose state is `x`: `mix64(x + gamma)`.
/// A bijection, so distinct inputs never collide; neighbouring inputs give unrelated
/// outputs. O(1), noexcept, identical on every platform.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept { return mix64(x + splitmix64_gamma); }

/// The SplitMix64 stream: each call advances the state by gamma and returns its mix.
/// Small, copyable, constexpr; used to expand one 64-bit key into round keys.
class SplitMix64 {
 public:
  explicit constexpr SplitMix64(std::uint64_t state) noexcept : state_(state) {}
  constexpr std::uint64_t operator()() noexcept {
    state_ += splitmix64_gamma;
    return mix64(state_);
  }

 private:
  std::uint64_t state_;
};

/// The number of bits needed to represent `x` (0 for 0, 64 for values >= 2^63):
/// std::bit_width for C++17. O(log 64).
[[nodiscard]] constexpr unsigned bit_width(std::uint64_t x) noexcept {
  unsigned width = 0;
  for (unsigned step = 32; step != 0; step /= 2) {
    if ((x >> step) != 0) {
      x >>= step;
      width += step;
    }
  }
  return width + static_cast<unsigned>(x != 0);
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_MIX_HPP
