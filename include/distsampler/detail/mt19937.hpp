// distsampler internal: the 32-bit Mersenne Twister, written out so every platform draws the same numbers as torch's
// CPU generator. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_MT19937_HPP
#define DISTSAMPLER_DETAIL_MT19937_HPP

#include <array>
#include <cstdint>

#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// MT19937 (Matsumoto & Nishimura 1998) with the standard 32-bit seeding; the same
/// sequence as std::mt19937 and as torch's at::mt19937 seeded with the low 32 bits
/// of the manual seed. Refills its 624-word state a block at a time.
class Mt19937 {
 public:
  static constexpr std::size_t state_size = 624;

  explicit constexpr Mt19937(std::uint32_t seed) noexcept : state_{}, next_(state_size) {
    state_[0] = seed;
    for (std::size_t i = 1; i < state_size; ++i) {
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
    }
  }

  /// One 32-bit draw (torch's `random()`).
  constexpr std::uint32_t operator()() noexcept {
    if (next_ >= state_size) twist();
    std::uint32_t y = state_[next_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  /// Two draws as (first << 32) | second (torch's `random64()`).
  constexpr std::uint64_t next64() noexcept {
    const std::uint64_t hi = (*this)();
    const std::uint64_t lo = (*this)();
    return (hi << 32) | lo;
  }

 private:
  static constexpr std::uint32_t mix(std::uint32_t a, std::uint32_t b, std::uint32_t far) noexcept {
    const std::uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
    return far ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
  }

  // Three loops instead of one with `%`: the same recurrence, without a division per word.
  constexpr void twist() noexcept {
    constexpr std::size_t n = state_size, m = 397;
    std::size_t i = 0;
    for (; i < n - m; ++i) state_[i] = mix(state_[i], state_[i + 1], state_[i + m]);
    for (; i < n - 1; ++i) state_[i] = mix(state_[i], state_[i + 1], state_[i + m - n]);
    state_[n - 1] = mix(state_[n - 1], state_[0], state_[m - 1]);
    next_ = 0;
  }

  std::array<std::uint32_t, state_size> state_;
  std::size_t next_;
};

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_MT19937_HPP
