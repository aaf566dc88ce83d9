// distsampler internal: an unsigned 128-bit integer on every platform (native where the compiler has one).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_U128_HPP
#define DISTSAMPLER_DETAIL_U128_HPP

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "bounded.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// An unsigned 128-bit integer from two 64-bit limbs, with exactly the operations the
/// library's count math uses and the semantics of `unsigned __int128`: arithmetic modulo
/// 2^128, `/` and `%` exact (truncating; the divisor must not be 0), shifts by 0..127,
/// explicit narrowing to 64 bits keeps the low limb. Constructible from any unsigned
/// integer of at most 64 bits. A trivially copyable value type; every operation is
/// constexpr and noexcept; `*` is O(1), `/` and `%` are O(1) for a divisor that fits 64
/// bits and otherwise one shift-subtract step per bit of the quotient (at most 64).
/// Identical results on every platform and compiler.
class U128Portable {
 public:
  constexpr U128Portable() noexcept = default;
  /// Implicit, as the native type's conversion from a narrower unsigned integer.
  template <class T, std::enable_if_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool> && sizeof(T) <= 8, int> = 0>
  constexpr U128Portable(T lo) noexcept : lo_(lo) {}  // NOLINT(google-explicit-constructor)
  /// The value hi * 2^64 + lo.
  [[nodiscard]] static constexpr U128Portable from_limbs(std::uint64_t hi, std::uint64_t lo) noexcept {
    U128Portable x;
    x.hi_ = hi;
    x.lo_ = lo;
    return x;
  }
  [[nodiscard]] constexpr std::uint64_t high() const noexcept { return hi_; }
  [[nodiscard]] constexpr std::uint64_t low() const noexcept { return lo_; }
  /// The value modulo 2^64, as static_cast of the native type.
  constexpr explicit operator std::uint64_t() const noexcept { return lo_; }

  friend constexpr U128Portable operator+(U128Portable a, U128Portable b) noexcept {
    const std::uint64_t lo = a.lo_ + b.lo_;
    return from_limbs(a.hi_ + b.hi_ + std::uint64_t{lo < a.lo_}, lo);
  }
  friend constexpr U128Portable operator-(U128Portable a, U128Portable b) noexcept {
    return from_limbs(a.hi_ - b.hi_ - std::uint64_t{a.lo_ < b.lo_}, a.lo_ - b.lo_);
  }
  friend constexpr U128Portable operator*(U128Portable a, U128Portable b) noexcept {
    return from_limbs(mulhi64_portable(a.lo_, b.lo_) + a.lo_ * b.hi_ + a.hi_ * b.lo_, a.lo_ * b.lo_);
  }
  friend constexpr U128Portable operator/(U128Portable a, U128Portable b) noexcept { return divide(a, b, true); }
  friend constexpr U128Portable operator%(U128Portable a, U128Portable b) noexcept { return divide(a, b, false); }
  friend constexpr U128Portable operator<<(U128Portable a, int s) noexcept {
    if (s == 0) return a;
    if (s >= 64) return from_limbs(a.lo_ << (s - 64), 0);
    return from_limbs(a.hi_ << s | a.lo_ >> (64 - s), a.lo_ << s);
  }
  friend constexpr U128Portable operator>>(U128Portable a, int s) noexcept {
    if (s == 0) return a;
    if (s >= 64) return from_limbs(0, a.hi_ >> (s - 64));
    return from_limbs(a.hi_ >> s, a.lo_ >> s | a.hi_ << (64 - s));
  }
  constexpr U128Portable& operator+=(U128Portable b) noexcept { return *this = *this + b; }
  constexpr U128Portable& operator-=(U128Portable b) noexcept { return *this = *this - b; }

  friend constexpr bool operator==(U128Portable a, U128Portable b) noexcept { return a.hi_ == b.hi_ && a.lo_ == b.lo_; }
  friend constexpr bool operator!=(U128Portable a, U128Portable b) noexcept { return !(a == b); }
  friend constexpr bool operator<(U128Portable a, U128Portable b) noexcept {
    return a.hi_ != b.hi_ ? a.hi_ < b.hi_ : a.lo_ < b.lo_;
  }
  friend constexpr bool operator>(U128Portable a, U128Portable b) noexcept { return b < a; }
  friend constexpr bool operator<=(U128Portable a, U128Portable b) noexcept { return !(b < a); }
  friend constexpr bool operator>=(U128Portable a, U128Portable b) noexcept { return !(a < b); }

 private:
  // Leading zero bits of x (64 for 0), without compiler builtins.
  static constexpr int leading_zeros(std::uint64_t x) noexcept {
    if (x == 0) return 64;
    int n = 0;
    for (int step = 32; step > 0; step /= 2) {
      if (x >> (64 - step) == 0) {
        n += step;
        x <<= step;
      }
    }
    return n;
  }
  static constexpr int bit_width(U128Portable x) noexcept {
    return x.hi_ != 0 ? 128 - leading_zeros(x.hi_) : 64 - leading_zeros(x.lo_);
  }

  // (hi * 2^64 + lo) / d and its remainder, for hi < d (so the quotient fits 64 bits): long
  // division in base 2^32 after normalising d (Knuth's algorithm D with two digits, each
  // estimate corrected by at most two steps).
  static constexpr std::uint64_t divide_64(std::uint64_t hi, std::uint64_t lo, std::uint64_t d,
                                           std::uint64_t& rem) noexcept {
    constexpr std::uint64_t base = std::uint64_t{1} << 32, low_mask = base - 1;
    const int s = leading_zeros(d);
    d <<= s;
    const std::uint64_t top = s == 0 ? hi : hi << s | lo >> (64 - s), rest = lo << s;
    const std::uint64_t d1 = d >> 32, d0 = d & low_mask;
    const std::uint64_t digits[2] = {rest >> 32, rest & low_mask};
    std::uint64_t partial = top, q = 0;
    for (const std::uint64_t digit : digits) {
      std::uint64_t qhat = partial / d1, rhat = partial % d1;
      while (qhat >= base || qhat * d0 > (rhat << 32 | digit)) {
        --qhat;
        rhat += d1;
        if (rhat >= base) break;
      }
      partial = (partial << 32 | digit) - qhat * d;
      q = q << 32 | qhat;
    }
    rem = partial >> s;
    return q;
  }

  // Truncating a / b (quotient) or a % b: 64-bit division when both fit 64 bits, divide_64
  // for a divisor of one limb, shift-subtract over the quotient's bits for two limbs.
  static constexpr U128Portable divide(U128Portable a, U128Portable b, bool quotient) noexcept {
    if (a.hi_ == 0 && b.hi_ == 0) return quotient ? U128Portable(a.lo_ / b.lo_) : U128Portable(a.lo_ % b.lo_);
    if (b.hi_ == 0) {
      const std::uint64_t q_hi = a.hi_ / b.lo_;
      std::uint64_t rem = 0;
      const std::uint64_t q_lo = divide_64(a.hi_ % b.lo_, a.lo_, b.lo_, rem);
      return quotient ? from_limbs(q_hi, q_lo) : U128Portable(rem);
    }
    if (a < b) return quotient ? U128Portable() : a;
    const int shift = bit_width(a) - bit_width(b);
    U128Portable d = b << shift, q, r = a;
    for (int i = shift; i >= 0; --i) {
      q = q << 1;
      if (r >= d) {
        r -= d;
        q.lo_ |= 1;
      }
      d = d >> 1;
    }
    return quotient ? q : r;
  }

  std::uint64_t hi_ = 0;
  std::uint64_t lo_ = 0;
};

/// The nearest double to x (ties to even), as static_cast<double> of the native type.
[[nodiscard]] inline double to_double(U128Portable x) noexcept {
  if (x.high() == 0) return static_cast<double>(x.low());
  // Keep the top 64 bits and fold the dropped ones into a sticky lowest bit: rounding that
  // 64-bit value to 53 bits gives the same double as rounding x.
  int drop = 0;
  for (std::uint64_t h = x.high(); h != 0; h >>= 1) ++drop;
  const U128Portable top = x >> drop;
  const bool sticky = (top << drop) != x;
  return std::ldexp(static_cast<double>(top.low() | (sticky ? 1u : 0u)), drop);
}

#if defined(__SIZEOF_INT128__) && !defined(DISTSAMPLER_PORTABLE_U128)
/// The library's unsigned 128-bit integer: the compiler's `unsigned __int128` where it has
/// one, else U128Portable (also when DISTSAMPLER_PORTABLE_U128 is defined, which must then
/// be defined alike in every translation unit of a program). Same values either way.
__extension__ using u128 = unsigned __int128;
/// The nearest double to x (ties to even).
[[nodiscard]] inline double to_double(u128 x) noexcept { return static_cast<double>(x); }
#else
using u128 = U128Portable;
#endif

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_U128_HPP
